#include "turns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* clang-format off */
#define TURNS_DUE \
	"SELECT id, runner_attempt FROM sessions WHERE turn_pending = 1 AND deleted_at IS NULL" \
	" AND (turn_due_at IS NULL OR turn_due_at <= ?)" \
	" AND (runner_lease_expires_at IS NULL OR runner_lease_expires_at < ?)" \
	" ORDER BY turn_due_at LIMIT ? FOR UPDATE SKIP LOCKED"
/* a self_hosted session waiting for its client's results since before ? (docs/runner.md) */
#define TURNS_OVERDUE \
	"SELECT id, runner_attempt FROM sessions WHERE turn_pending = 0 AND deleted_at IS NULL" \
	" AND blocked_at IS NOT NULL AND blocked_at < ?" \
	" AND JSON_VALUE(environment_config, '$.type') = 'self_hosted'" \
	" AND (runner_lease_expires_at IS NULL OR runner_lease_expires_at < ?)" \
	" ORDER BY blocked_at LIMIT ? FOR UPDATE SKIP LOCKED"
/* clang-format on */

struct claim_ctx {
	const char *sql, *owner, *now, *until, *since;
	int max, *n;
	struct turn_claim *out;
};

static enum db_status claim_tx(struct db *db, void *arg)
{
	static const char take[] = "UPDATE sessions SET runner_owner = ?, runner_attempt = ?,"
				   " runner_lease_expires_at = ? WHERE id = ?";
	struct claim_ctx *c = arg;
	struct db_rows rows;
	enum db_status st =
		db_exec(db, c->sql, DB_PARAMS(DB_STR(c->since), DB_STR(c->now), DB_INT(c->max)),
			&rows, NULL);

	*c->n = 0;
	for (unsigned r = 0; !st && r < rows.nrows; r++) {
		struct turn_claim *t = &c->out[*c->n];

		snprintf(t->session_id, sizeof(t->session_id), "%s", db_cell(&rows, r, 0));
		t->attempt = strtoull(db_cell(&rows, r, 1), NULL, 10) + 1;
		st = db_exec(db, take,
			     DB_PARAMS(DB_STR(c->owner), DB_INT((long long)t->attempt),
				       DB_STR(c->until), DB_STR(t->session_id)),
			     NULL, NULL);
		if (!st)
			(*c->n)++;
	}
	db_rows_free(&rows);
	return st;
}

static enum db_status claim(struct db *db, const char *sql, const char *owner, long lease_s,
			    const char *since, const char *now, int max, struct turn_claim *out,
			    int *n)
{
	static const char until_sql[] = "SELECT DATE_FORMAT(? + INTERVAL ? SECOND,"
					" '%Y-%m-%d %H:%i:%s.%f')";
	struct db_rows rows;
	char until[32];
	enum db_status st =
		db_exec(db, until_sql, DB_PARAMS(DB_STR(now), DB_INT(lease_s)), &rows, NULL);
	struct claim_ctx c = { sql,   owner, now,
			       until, since, max > TURNS_CLAIM_MAX ? TURNS_CLAIM_MAX : max,
			       n,     out };

	*n = 0;
	if (!st)
		snprintf(until, sizeof(until), "%s", db_cell(&rows, 0, 0));
	db_rows_free(&rows);
	if (st)
		return st;
	/* read committed: SKIP LOCKED rows another runner is claiming, take the rest */
	return db_tx_read_committed(db, claim_tx, &c);
}

enum db_status turns_claim(struct db *db, const char *owner, long lease_s, long blocked_s,
			   const char *now, int max, struct turn_claim *out, int *n)
{
	static const char since_sql[] = "SELECT DATE_FORMAT(? - INTERVAL ? SECOND,"
					" '%Y-%m-%d %H:%i:%s.%f')";
	struct db_rows rows;
	char since[32];
	enum db_status st = claim(db, TURNS_DUE, owner, lease_s, now, now, max, out, n);
	int more = 0;

	if (st || *n >= max || blocked_s <= 0)
		return st;
	st = db_exec(db, since_sql, DB_PARAMS(DB_STR(now), DB_INT(blocked_s)), &rows, NULL);
	if (!st)
		snprintf(since, sizeof(since), "%s", db_cell(&rows, 0, 0));
	db_rows_free(&rows);
	if (!st)
		st = claim(db, TURNS_OVERDUE, owner, lease_s, since, now, max - *n, out + *n,
			   &more);
	*n += more;
	return st;
}

enum db_status turns_renew(struct db *db, const struct turn_claim *t, const char *owner,
			   long lease_s, const char *now, int *lost)
{
	static const char sql[] =
		"UPDATE sessions SET runner_lease_expires_at = ? + INTERVAL ? SECOND"
		" WHERE id = ? AND runner_owner = ? AND runner_attempt = ? AND deleted_at IS NULL";
	unsigned long long n = 0;
	enum db_status st = db_exec(db, sql,
				    DB_PARAMS(DB_STR(now), DB_INT(lease_s), DB_STR(t->session_id),
					      DB_STR(owner), DB_INT((long long)t->attempt)),
				    NULL, &n);

	/* MariaDB counts a row whose values did not change as not affected: two renewals within
	 * one microsecond would read as lost, which they are not */
	*lost = !st && n == 0;
	if (*lost) {
		int stop = 0;
		st = turns_should_stop(db, t, owner, &stop);
		*lost = !st && stop;
	}
	return st;
}

enum db_status turns_lock(struct db *db, const struct turn_claim *t, const char *owner,
			  const char *now, struct ev_session *s, int *lost)
{
	int found = 0;
	enum db_status st = evdb_lock_id(db, t->session_id, now, s, &found);

	*lost = !st &&
		(!found || strcmp(s->runner_owner, owner) || s->runner_attempt != t->attempt);
	return st;
}

enum db_status turns_release(struct db *db, const struct ev_session *s)
{
	static const char sql[] = "UPDATE sessions SET runner_owner = NULL,"
				  " runner_lease_expires_at = NULL WHERE id = ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(s->id)), NULL, NULL);
}

enum db_status turns_tool_start(struct db *db, const struct ev_session *s, const char *tool_use_id,
				int *already)
{
	static const char sql[] = "INSERT IGNORE INTO session_tool_runs (session_id, tool_use_id,"
				  " runner_attempt, started_at) VALUES (?, ?, ?, ?)";
	unsigned long long n = 0;
	enum db_status st = db_exec(db, sql,
				    DB_PARAMS(DB_STR(s->id), DB_STR(tool_use_id),
					      DB_INT((long long)s->runner_attempt), DB_STR(s->now)),
				    NULL, &n);

	*already = !st && n == 0;
	return st;
}

enum db_status turns_tool_starts(struct db *db, const char *session_id, struct db_rows *rows)
{
	static const char sql[] = "SELECT tool_use_id FROM session_tool_runs WHERE session_id = ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), rows, NULL);
}

enum db_status turns_should_stop(struct db *db, const struct turn_claim *t, const char *owner,
				 int *yes)
{
	static const char sql[] =
		"SELECT interrupt_at IS NOT NULL OR deleted_at IS NOT NULL"
		" OR runner_owner IS NULL OR runner_owner <> ? OR runner_attempt <> ?"
		" FROM sessions WHERE id = ?";
	struct db_rows rows;
	enum db_status st = db_exec(
		db, sql,
		DB_PARAMS(DB_STR(owner), DB_INT((long long)t->attempt), DB_STR(t->session_id)),
		&rows, NULL);

	*yes = !st && (!rows.nrows || atoi(db_cell(&rows, 0, 0)));
	db_rows_free(&rows);
	return st;
}
