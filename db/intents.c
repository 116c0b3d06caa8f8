#include "intents.h"

#include "events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FENCE " WHERE id = ? AND lease_owner = ? AND attempts = ? AND state = 'claimed'"
#define FENCE_PARAMS(f) DB_INT((f)->id), DB_STR((f)->owner), DB_INT((f)->attempt)

/* Run SQL, a statement ending in FENCE, with its N parameters P: *LOST = 1 when it matched no
 * row (the lease went to another run; DB_OK), else 0. */
static enum db_status fenced_exec(struct db *db, const char *sql, const struct db_val *p,
				  unsigned n, int *lost)
{
	unsigned long long rows = 0;
	enum db_status st = db_exec(db, sql, p, n, NULL, &rows);

	*lost = !st && rows == 0;
	return st;
}

void intent_release(struct intent *in)
{
	free(in->spec);
	free(in->steps_done);
	in->spec = in->steps_done = NULL;
}

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

struct claim_ctx {
	const char *owner, *now, *lease_until;
	int max, n;
	struct intent *out;
};

static void claim_reset(struct claim_ctx *c)
{
	for (int i = 0; i < c->n; i++)
		intent_release(&c->out[i]);
	c->n = 0;
}

/* Due intents of one state, in claim order. One statement per state, each reading its range of
 * the (state, next_attempt_at, id) index in order and stopping at LIMIT, so that a claim reads
 * and locks (FOR UPDATE, until it commits) only about the rows it takes: one statement with an
 * OR across the states would sort, read and lock every due row, and concurrent reconcilers,
 * skipping them all, would find nothing due (README, Performance). */
static const char *const claim_due[] = {
	"SELECT id, next_attempt_at FROM provisioning_intents"
	" WHERE state = 'pending' AND next_attempt_at <= ?"
	" ORDER BY next_attempt_at, id LIMIT ? FOR UPDATE SKIP LOCKED",
	"SELECT id, next_attempt_at FROM provisioning_intents"
	" WHERE state = 'failed' AND next_attempt_at <= ?"
	" ORDER BY next_attempt_at, id LIMIT ? FOR UPDATE SKIP LOCKED",
	"SELECT id, next_attempt_at FROM provisioning_intents"
	" WHERE state = 'claimed' AND lease_expires_at < ?"
	" ORDER BY next_attempt_at, id LIMIT ? FOR UPDATE SKIP LOCKED",
};
#define CLAIM_STATES (sizeof(claim_due) / sizeof(claim_due[0]))

struct claim_candidate {
	long long id;
	const char *next; /* next_attempt_at, "YYYY-MM-DD HH:MM:SS.ffffff": sorts as text */
};

static int candidate_cmp(const void *a, const void *b)
{
	const struct claim_candidate *x = a, *y = b;
	int c = strcmp(x->next, y->next);

	return c ? c : (x->id > y->id) - (x->id < y->id);
}

/* Claimed intents are taken and loaded CLAIM_CHUNK at a time, one UPDATE and one SELECT per
 * chunk instead of two statements per intent; a short chunk repeats its last id. CLAIM_CHUNK
 * is the number of placeholders in CLAIM_IDS: "(?" then ", ?" per further id, then ")" is 3
 * characters an id. */
#define CLAIM_IDS "(?, ?, ?, ?, ?, ?, ?, ?)"
#define CLAIM_CHUNK ((sizeof(CLAIM_IDS) - 1) / 3)
_Static_assert((sizeof(CLAIM_IDS) - 1) % 3 == 0, "CLAIM_IDS is (?, ?, ..., ?)");

/* Take and load CAND[0..n) (n <= CLAIM_CHUNK), appending them to c->out in CAND's order. */
static enum db_status claim_chunk(struct db *db, struct claim_ctx *c,
				  const struct claim_candidate *cand, unsigned n)
{
	static const char take[] =
		"UPDATE provisioning_intents SET state = 'claimed', lease_owner = ?,"
		" lease_expires_at = ?, attempts = attempts + 1, updated_at = ? WHERE id "
		"IN " CLAIM_IDS;
	static const char load[] =
		"SELECT id, session_id, workspace_id, kind, spec, steps_done, attempts, sandbox_id"
		" FROM provisioning_intents WHERE id IN " CLAIM_IDS;
	struct db_val p[3 + CLAIM_CHUNK] = { DB_STR(c->owner), DB_STR(c->lease_until),
					     DB_STR(c->now) };
	struct db_rows rows = { 0 };
	enum db_status st;

	for (unsigned k = 0; k < CLAIM_CHUNK; k++)
		p[3 + k] = DB_INT(cand[k < n ? k : n - 1].id);
	st = db_exec(db, take, DB_ARRAY(p), NULL, NULL);
	if (!st)
		st = db_exec(db, load, p + 3, CLAIM_CHUNK, &rows, NULL);
	for (unsigned i = 0; !st && i < n; i++) {
		struct intent *in = &c->out[c->n];
		unsigned r = 0;

		while (r < rows.nrows && strtoll(db_cell(&rows, r, 0), NULL, 10) != cand[i].id)
			r++;
		if (r == rows.nrows) {
			st = DB_FATAL; /* a row locked by this transaction cannot vanish */
			break;
		}
		memset(in, 0, sizeof(*in));
		in->id = cand[i].id;
		copy(in->session_id, sizeof(in->session_id), db_cell(&rows, r, 1));
		copy(in->workspace_id, sizeof(in->workspace_id), db_cell(&rows, r, 2));
		copy(in->kind, sizeof(in->kind), db_cell(&rows, r, 3));
		in->spec = strdup(db_cell(&rows, r, 4));
		in->steps_done = strdup(db_cell(&rows, r, 5));
		in->attempts = strtoll(db_cell(&rows, r, 6), NULL, 10);
		copy(in->sandbox_id, sizeof(in->sandbox_id), db_cell(&rows, r, 7));
		c->n++;
		if (!in->spec || !in->steps_done)
			st = DB_FATAL;
	}
	db_rows_free(&rows);
	return st;
}

static enum db_status claim_tx(struct db *db, void *arg)
{
	struct claim_ctx *c = arg;
	struct db_rows due[CLAIM_STATES] = { 0 };
	struct claim_candidate cand[CLAIM_STATES * INTENT_CLAIM_MAX];
	unsigned ncand = 0;
	enum db_status st = DB_OK;

	claim_reset(c);
	/* the first MAX of the states' candidates by (next_attempt_at, id), as one query over all
	 * states would order them; the rest stay locked (skipped by others) until this commits */
	for (unsigned s = 0; !st && s < CLAIM_STATES; s++) {
		st = db_exec(db, claim_due[s], DB_PARAMS(DB_STR(c->now), DB_INT(c->max)), &due[s],
			     NULL);
		for (unsigned i = 0;
		     !st && i < due[s].nrows && ncand < sizeof(cand) / sizeof(cand[0]); i++)
			cand[ncand++] = (struct claim_candidate){
				strtoll(db_cell(&due[s], i, 0), NULL, 10),
				db_cell(&due[s], i, 1) ? db_cell(&due[s], i, 1) : ""
			};
	}
	if (!st) {
		qsort(cand, ncand, sizeof(cand[0]), candidate_cmp);
		if (ncand > (unsigned)c->max)
			ncand = (unsigned)c->max;
	}
	for (unsigned i = 0; !st && i < ncand; i += CLAIM_CHUNK)
		st = claim_chunk(db, c, cand + i,
				 ncand - i < CLAIM_CHUNK ? ncand - i : CLAIM_CHUNK);
	for (unsigned s = 0; s < CLAIM_STATES; s++)
		db_rows_free(&due[s]);
	if (st)
		claim_reset(c);
	return st;
}

struct take_ctx {
	const char *session_id, *owner, *now, *lease_until;
	struct intent *out;
	enum intent_take *take;
};

static enum db_status take_tx(struct db *db, void *arg)
{
	static const char sel[] =
		"SELECT id, state, lease_expires_at IS NOT NULL AND lease_expires_at >= ?"
		" FROM provisioning_intents WHERE session_id = ? AND kind = '" INTENT_PROVISION "'"
		" FOR UPDATE";
	struct take_ctx *t = arg;
	struct db_rows rows = { 0 };
	struct claim_ctx c = { t->owner, t->now, t->lease_until, 1, 0, t->out };
	struct claim_candidate cand;
	enum intent_state state;
	enum db_status st =
		db_exec(db, sel, DB_PARAMS(DB_STR(t->now), DB_STR(t->session_id)), &rows, NULL);

	*t->take = INTENT_STOPPED;
	if (st || !rows.nrows)
		goto out;
	state = intent_state_of(db_cell(&rows, 0, 1));
	if (state == INTENT_DONE) {
		*t->take = INTENT_READY;
	} else if (state == INTENT_CLAIMED && atoi(db_cell(&rows, 0, 2))) {
		*t->take = INTENT_BUSY;
	} else if (state == INTENT_PENDING || state == INTENT_FAILED || state == INTENT_CLAIMED) {
		cand.id = strtoll(db_cell(&rows, 0, 0), NULL, 10);
		cand.next = "";
		st = claim_chunk(db, &c, &cand, 1);
		if (!st)
			*t->take = INTENT_TAKEN;
	}
out:
	db_rows_free(&rows);
	return st;
}

enum db_status intents_claim_session(struct db *db, const char *session_id, const char *owner,
				     const char *now, const char *lease_until, struct intent *out,
				     enum intent_take *take)
{
	struct take_ctx t = { session_id, owner, now, lease_until, out, take };

	memset(out, 0, sizeof(*out));
	return db_tx(db, take_tx, &t);
}

enum db_status intents_claim(struct db *db, const char *owner, const char *now,
			     const char *lease_until, int max, struct intent *out, int *n)
{
	struct claim_ctx c = { owner,	    now,
			       lease_until, max > INTENT_CLAIM_MAX ? INTENT_CLAIM_MAX : max,
			       0,	    out };
	enum db_status st = db_tx_read_committed(db, claim_tx, &c);

	*n = st ? 0 : c.n;
	if (st)
		claim_reset(&c);
	return st;
}

/* Due: what intents_claim takes (claim_due, one statement per state), as one predicate for
 * the read-only views (--dry-run, --status, the metrics gauges). Two NOW parameters. */
#define DUE_WHERE                                                                                  \
	" WHERE (state IN ('pending', 'failed') AND next_attempt_at <= ?)"                         \
	" OR (state = 'claimed' AND lease_expires_at < ?)"
/* since when an intent is due: an expired claim since its lease ran out */
#define DUE_SINCE "CASE WHEN state = 'claimed' THEN lease_expires_at ELSE next_attempt_at END"

enum db_status intents_due(struct db *db, const char *now, int max, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT id, session_id, kind, state, attempts, steps_done FROM "
		"provisioning_intents" DUE_WHERE " ORDER BY next_attempt_at, id LIMIT ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(now), DB_STR(now), DB_INT(max)), rows, NULL);
}

enum db_status intents_renew(struct db *db, const struct intent_fence *f, int mark_sandbox,
			     const char *lease_until, const char *now, int *lost)
{
	static const char renew[] =
		"UPDATE provisioning_intents SET lease_expires_at = ?, updated_at = ?" FENCE;
	static const char mark[] = "UPDATE provisioning_intents SET lease_expires_at = ?,"
				   " updated_at = ?, sandbox_may_exist = 1" FENCE;
	unsigned long long n = 0;
	enum db_status st =
		db_exec(db, mark_sandbox ? mark : renew,
			DB_PARAMS(DB_STR(lease_until), DB_STR(now), FENCE_PARAMS(f)), NULL, &n);

	/* the lease may be renewed within the same microsecond: a match changes no row then,
	 * which is not a loss; only a fence that matches nothing is */
	if (!st && n == 0) {
		static const char check[] = "SELECT id FROM provisioning_intents" FENCE;
		struct db_rows rows;
		st = db_exec(db, check, DB_PARAMS(FENCE_PARAMS(f)), &rows, NULL);
		if (!st) {
			n = rows.nrows;
			db_rows_free(&rows);
		}
	}
	*lost = !st && n == 0;
	return st;
}

enum db_status intents_session_gone(struct db *db, const char *session_id, int *gone)
{
	static const char sql[] = "SELECT id FROM sessions WHERE id = ? AND deleted_at IS NULL";
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), &rows, NULL);

	*gone = !st && rows.nrows == 0;
	if (!st)
		db_rows_free(&rows);
	return st;
}

/* IDS_MAX placeholders; a short list repeats its last id */
#define OWNED_IDS "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

enum db_status intents_sessions_exist(struct db *db, const char *const *ids, int n, int *exists)
{
	static const char sql[] = "SELECT id FROM sessions WHERE id IN " OWNED_IDS;
	struct db_val p[INTENT_OWNED_IDS];
	struct db_rows rows;
	enum db_status st;

	if (n <= 0 || n > INTENT_OWNED_IDS)
		return DB_FATAL;
	for (int i = 0; i < INTENT_OWNED_IDS; i++)
		p[i] = DB_STR(ids[i < n ? i : n - 1]);
	st = db_exec(db, sql, DB_ARRAY(p), &rows, NULL);
	if (st)
		return st;
	for (int i = 0; i < n; i++) {
		exists[i] = 0;
		for (unsigned r = 0; r < rows.nrows; r++)
			if (!strcmp(db_cell(&rows, r, 0), ids[i]))
				exists[i] = 1;
	}
	db_rows_free(&rows);
	return DB_OK;
}

enum db_status intents_progress(struct db *db, const struct intent_fence *f, const char *steps,
				const char *sandbox_id, const char *lease_until, const char *now,
				int *lost)
{
	static const char sql[] = "UPDATE provisioning_intents SET steps_done = ?, sandbox_id = ?,"
				  " lease_expires_at = ?, updated_at = ?" FENCE;

	return fenced_exec(db, sql,
			   DB_PARAMS(DB_STR(steps), db_opt_nonempty(sandbox_id),
				     DB_STR(lease_until), DB_STR(now), FENCE_PARAMS(f)),
			   lost);
}

struct fail_ctx {
	const struct intent_fence *f;
	const char *session_id, *last_error, *next, *now;
	int terminal, *lost;
};

static enum db_status fail_tx(struct db *db, void *arg)
{
	static const char intent[] =
		"UPDATE provisioning_intents SET state = ?, last_error = ?, next_attempt_at = ?,"
		" lease_owner = NULL, lease_expires_at = NULL, updated_at = ?" FENCE;
	struct fail_ctx *c = arg;
	enum db_status st;

	st = fenced_exec(
		db, intent,
		DB_PARAMS(
			DB_STR(intent_state_name(c->terminal ? INTENT_TERMINATED : INTENT_FAILED)),
			DB_STR(c->last_error), DB_STR(c->next), DB_STR(c->now), FENCE_PARAMS(c->f)),
		c->lost);
	if (st || *c->lost)
		return st;
	return evdb_provisioning(db, c->session_id, c->terminal ? SES_TERMINATED : SES_RESCHEDULING,
				 c->now);
}

enum db_status intents_fail(struct db *db, const struct intent_fence *f, const char *session_id,
			    int terminal, const char *last_error, const char *next_attempt,
			    const char *now, int *lost)
{
	struct fail_ctx c = { f, session_id, last_error, next_attempt, now, terminal, lost };

	return db_tx(db, fail_tx, &c);
}

struct bind_ctx {
	const struct intent_fence *f;
	const char *session_id, *backend, *sandbox_id, *egress, *now;
	int *lost;
};

static enum db_status bind_tx(struct db *db, void *arg)
{
	static const char done[] =
		"UPDATE provisioning_intents SET state = 'done', last_error = NULL,"
		" lease_owner = NULL, lease_expires_at = NULL, updated_at = ?" FENCE;
	static const char binding[] =
		"INSERT INTO session_sandboxes (session_id, backend, sandbox_id, egress_policy,"
		" created_at) VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE backend = "
		"VALUES(backend),"
		" sandbox_id = VALUES(sandbox_id), egress_policy = VALUES(egress_policy)";
	struct bind_ctx *c = arg;
	enum db_status st;

	st = fenced_exec(db, done, DB_PARAMS(DB_STR(c->now), FENCE_PARAMS(c->f)), c->lost);
	if (st || *c->lost)
		return st;
	st = db_exec(db, binding,
		     DB_PARAMS(DB_STR(c->session_id), DB_STR(c->backend), DB_STR(c->sandbox_id),
			       db_opt(c->egress), DB_STR(c->now)),
		     NULL, NULL);
	if (!st)
		st = evdb_provisioning(db, c->session_id, SES_IDLE, c->now);
	return st;
}

enum db_status intents_bind(struct db *db, const struct intent_fence *f, const char *session_id,
			    const char *backend, const char *sandbox_id, const char *egress,
			    const char *now, int *lost)
{
	struct bind_ctx c = { f, session_id, backend, sandbox_id, egress, now, lost };

	return db_tx(db, bind_tx, &c);
}

struct teardown_ctx {
	const struct intent_fence *f;
	const char *session_id;
	int *lost;
};

static enum db_status teardown_tx(struct db *db, void *arg)
{
	static const char lock[] = "SELECT id FROM provisioning_intents" FENCE " FOR UPDATE";
	static const char intents[] = "DELETE FROM provisioning_intents WHERE session_id = ?";
	static const char binding[] = "DELETE FROM session_sandboxes WHERE session_id = ?";
	static const char session[] =
		"DELETE FROM sessions WHERE id = ? AND deleted_at IS NOT NULL";
	struct teardown_ctx *c = arg;
	struct db_val sid[] = { DB_STR(c->session_id) };
	struct db_rows rows;
	enum db_status st;

	st = db_exec(db, lock, DB_PARAMS(FENCE_PARAMS(c->f)), &rows, NULL);
	if (st)
		return st;
	*c->lost = rows.nrows == 0;
	db_rows_free(&rows);
	if (*c->lost)
		return DB_OK;
	st = db_exec(db, intents, DB_ARRAY(sid), NULL, NULL);
	if (!st)
		st = db_exec(db, binding, DB_ARRAY(sid), NULL, NULL);
	if (!st)
		st = db_exec(db, session, DB_ARRAY(sid), NULL, NULL);
	return st;
}

enum db_status intents_teardown_done(struct db *db, const struct intent_fence *f,
				     const char *session_id, int *lost)
{
	struct teardown_ctx c = { f, session_id, lost };

	return db_tx(db, teardown_tx, &c);
}

enum db_status intents_session_mcp(struct db *db, const char *session_id, char **mcp_json)
{
	static const char sql[] =
		"SELECT COALESCE(mcp_servers, JSON_EXTRACT(agent_snapshot, '$.mcp_servers'))"
		" FROM sessions WHERE id = ?";
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), &rows, NULL);

	*mcp_json = NULL;
	if (st)
		return st;
	if (rows.nrows && db_cell(&rows, 0, 0)) {
		*mcp_json = strdup(db_cell(&rows, 0, 0));
		if (!*mcp_json)
			st = DB_FATAL;
	}
	db_rows_free(&rows);
	return st;
}

enum db_status intents_retry(struct db *db, const char *session_id, const char *now, int *found)
{
	static const char intent[] =
		"UPDATE provisioning_intents SET state = 'pending', attempts = 0, next_attempt_at "
		"= ?,"
		" lease_owner = NULL, lease_expires_at = NULL, last_error = NULL, updated_at = ?"
		" WHERE session_id = ? AND kind IN ('provision', 'teardown')"
		" AND state IN ('failed', 'terminated')";
	unsigned long long n = 0;
	enum db_status st = db_exec(
		db, intent, DB_PARAMS(DB_STR(now), DB_STR(now), DB_STR(session_id)), NULL, &n);

	*found = n > 0;
	if (!st && n)
		st = evdb_provisioning(db, session_id, SES_IDLE, now);
	return st;
}

enum db_status intents_counts(struct db *db, struct db_rows *rows)
{
	static const char sql[] = "SELECT kind, state, COUNT(*) FROM provisioning_intents"
				  " GROUP BY kind, state ORDER BY kind, state";
	return db_exec(db, sql, DB_NONE, rows, NULL);
}

enum db_status intents_oldest_due(struct db *db, const char *now, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT DATE_FORMAT(MIN(" DUE_SINCE "), '%Y-%m-%dT%H:%i:%s.%fZ'), COUNT(*),"
		" COALESCE(TIMESTAMPDIFF(MICROSECOND, MIN(" DUE_SINCE "), ?) / 1000000, 0)"
		" FROM provisioning_intents" DUE_WHERE;
	return db_exec(db, sql, DB_PARAMS(DB_STR(now), DB_STR(now), DB_STR(now)), rows, NULL);
}

enum db_status intents_failures(struct db *db, int max, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT session_id, state, attempts, DATE_FORMAT(updated_at, '%Y-%m-%dT%H:%i:%sZ'),"
		" DATE_FORMAT(next_attempt_at, '%Y-%m-%dT%H:%i:%sZ'), last_error"
		" FROM provisioning_intents WHERE state IN ('failed', 'terminated')"
		" ORDER BY updated_at DESC LIMIT ?";
	return db_exec(db, sql, DB_PARAMS(DB_INT(max)), rows, NULL);
}

enum db_status intents_binding(struct db *db, const char *session_id, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT b.backend, b.sandbox_id, b.egress_policy FROM session_sandboxes b"
		" JOIN sessions s ON s.id = b.session_id AND s.deleted_at IS NULL"
		" WHERE b.session_id = ?";
	return db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), rows, NULL);
}

enum db_status intents_any_due(struct db *db, const char *now, int *any)
{
	/* one statement, no transaction: three index probes that stop at the first row */
	static const char sql[] =
		"SELECT EXISTS(SELECT 1 FROM provisioning_intents WHERE state = 'pending'"
		" AND next_attempt_at <= ?) OR EXISTS(SELECT 1 FROM provisioning_intents"
		" WHERE state = 'failed' AND next_attempt_at <= ?) OR EXISTS(SELECT 1"
		" FROM provisioning_intents WHERE state = 'claimed' AND lease_expires_at < ?)";
	struct db_rows rows;
	enum db_status st =
		db_exec(db, sql, DB_PARAMS(DB_STR(now), DB_STR(now), DB_STR(now)), &rows, NULL);

	*any = !st && rows.nrows && db_cell(&rows, 0, 0) && strcmp(db_cell(&rows, 0, 0), "0");
	if (!st)
		db_rows_free(&rows);
	return st;
}
