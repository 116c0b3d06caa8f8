#include "work.h"

#include "keys.h"

#include <stdio.h>
#include <stdlib.h>

#define DT(col) "DATE_FORMAT(" col ", '%Y-%m-%d %H:%i:%s.%f')"
/* clang-format off */
#define WORK_SELECT \
	"SELECT id, environment_id, session_id, state, metadata, " DT("created_at") ", " \
	DT("acknowledged_at") ", " DT("started_at") ", " DT("latest_heartbeat_at") ", " \
	DT("stop_requested_at") ", " DT("stopped_at") ", " DT("delivered_at") "," \
	" lease_ttl_seconds, " DT("lease_expires_at") " FROM work_items "
/* clang-format on */
#define WORK_LAST_TS "9999-12-31 23:59:59.999999"
#define WORK_LAST_ID "~" /* sorts after every id ([0-9A-Za-z_], binary collation) */
/* The text a blocked poll's statement carries, so that a wake-up can find it in the
 * processlist of every connection (every API host) and interrupt it. */
#define WORK_WAIT_TAG "trm-work-wait "
#define WORK_WAIT_SQL_MAX 1024
#define WORK_WAIT_MIN_S 0.002 /* a deliverable item another poll holds locked: look again soon */
#define WORK_KILL_SQL_MAX 64
#define WORK_WAKE_PATTERN_MAX 96

static void copy_ts(char *out, const char *cell)
{
	snprintf(out, WORK_TS_LEN, "%s", cell ? cell : "");
}

void work_row_load(struct work_row *row, const struct db_rows *rows, unsigned r)
{
	snprintf(row->state, sizeof(row->state), "%s", db_cell(rows, r, WORK_C_STATE));
	copy_ts(row->acknowledged_at, db_cell(rows, r, WORK_C_ACKNOWLEDGED));
	copy_ts(row->started_at, db_cell(rows, r, WORK_C_STARTED));
	copy_ts(row->heartbeat_at, db_cell(rows, r, WORK_C_HEARTBEAT));
	copy_ts(row->lease_expires_at, db_cell(rows, r, WORK_C_LEASE_EXPIRES));
	copy_ts(row->stop_requested_at, db_cell(rows, r, WORK_C_STOP_REQUESTED));
	copy_ts(row->stopped_at, db_cell(rows, r, WORK_C_STOPPED));
	copy_ts(row->delivered_at, db_cell(rows, r, WORK_C_DELIVERED));
	row->ttl_seconds = atoll(db_cell(rows, r, WORK_C_TTL));
	row->metadata = db_cell(rows, r, WORK_C_METADATA);
}

enum db_status workdb_enqueue(struct db *db, const char *id, const char *ws, const char *env_id,
			      const char *session_id, const char *now)
{
	static const char sql[] =
		"INSERT INTO work_items (id, workspace_id, environment_id, session_id, state, "
		"metadata,"
		" created_at, updated_at) VALUES (?, ?, ?, ?, 'queued', '{}', ?, ?)";
	struct db_val p[] = { DB_STR(id),	  DB_STR(ws),  DB_STR(env_id),
			      DB_STR(session_id), DB_STR(now), DB_STR(now) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status workdb_session_live(struct db *db, const char *session_id, int *live)
{
	static const char sql[] =
		"SELECT COUNT(*) FROM work_items WHERE session_id = ? AND state <> 'stopped'";
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), &rows, NULL);

	*live = !st && rows.nrows && atoi(db_cell(&rows, 0, 0)) > 0;
	db_rows_free(&rows);
	return st;
}

enum db_status workdb_requeue(struct db *db, const char *id, const char *ws, const char *env_id,
			      const char *session_id, const char *now, int *queued)
{
	int live = 0;
	enum db_status st = workdb_session_live(db, session_id, &live);

	*queued = 0;
	if (st || live)
		return st;
	st = workdb_enqueue(db, id, ws, env_id, session_id, now);
	*queued = !st;
	return st;
}

enum db_status workdb_get(struct db *db, const struct db_key *k, int for_update,
			  struct db_rows *rows)
{
	struct db_val p[] = { DB_STR(k->id), DB_STR(k->parent_id), DB_STR(k->workspace_id) };

	return db_exec(db,
		       DB_FOR_UPDATE_IF(for_update,
					WORK_SELECT "WHERE id = ? AND environment_id = ?"
						    " AND workspace_id = ?"),
		       DB_ARRAY(p), rows, NULL);
}

enum db_status workdb_write(struct db *db, const char *work_id, const struct work_row *row,
			    const char *now)
{
	static const char sql[] =
		"UPDATE work_items SET state = ?, acknowledged_at = ?, started_at = ?,"
		" latest_heartbeat_at = ?, lease_ttl_seconds = ?, lease_expires_at = ?,"
		" stop_requested_at = ?, stopped_at = ?, delivered_at = ?, metadata = ?,"
		" updated_at = ? WHERE id = ?";
	static const char revoke[] = "UPDATE work_tokens SET revoked_at = ?"
				     " WHERE work_id = ? AND revoked_at IS NULL";
	struct db_val p[] = { DB_STR(row->state),
			      db_opt_nonempty(row->acknowledged_at),
			      db_opt_nonempty(row->started_at),
			      db_opt_nonempty(row->heartbeat_at),
			      DB_INT(row->ttl_seconds),
			      db_opt_nonempty(row->lease_expires_at),
			      db_opt_nonempty(row->stop_requested_at),
			      db_opt_nonempty(row->stopped_at),
			      db_opt_nonempty(row->delivered_at),
			      DB_STR(row->metadata),
			      DB_STR(now),
			      DB_STR(work_id) };
	enum db_status st = db_exec(db, sql, DB_ARRAY(p), NULL, NULL);

	if (st || strcmp(row->state, "stopped"))
		return st;
	return db_exec(db, revoke, DB_PARAMS(DB_STR(now), DB_STR(work_id)), NULL, NULL);
}

/* MariaDB assigns SET columns left to right and later expressions see the new values: every
 * expression that reads `state` comes before `state` is assigned. */
enum db_status workdb_stop_session(struct db *db, const char *session_id, const char *ws,
				   const char *now)
{
	static const char sql[] =
		"UPDATE work_items SET"
		" stopped_at = IF(state IN ('queued', 'starting'), ?, NULL),"
		" lease_expires_at = IF(state IN ('queued', 'starting'), NULL, lease_expires_at),"
		" state = IF(state IN ('queued', 'starting'), 'stopped', 'stopping'),"
		" stop_requested_at = COALESCE(stop_requested_at, ?), updated_at = ?"
		" WHERE session_id = ? AND workspace_id = ? AND state IN ('queued', 'starting', "
		"'active')";
	static const char revoke[] =
		"UPDATE work_tokens t JOIN work_items w ON w.id = t.work_id SET t.revoked_at = ?"
		" WHERE w.session_id = ? AND w.state = 'stopped' AND t.revoked_at IS NULL";
	unsigned long long n = 0;
	enum db_status st = db_exec(
		db, sql,
		DB_PARAMS(DB_STR(now), DB_STR(now), DB_STR(now), DB_STR(session_id), DB_STR(ws)),
		NULL, &n);

	if (st || !n)
		return st;
	return db_exec(db, revoke, DB_PARAMS(DB_STR(now), DB_STR(session_id)), NULL, NULL);
}

enum db_status workdb_expire(struct db *db, const char *env_id)
{
	/* order matters (see workdb_stop_session): `stops` is computed from the old state */
	static const char sql[] =
		"UPDATE work_items SET"
		" stopped_at = IF(state = 'stopping' OR stop_requested_at IS NOT NULL,"
		"                 UTC_TIMESTAMP(6), NULL),"
		" state = IF(stopped_at IS NOT NULL, 'stopped', 'queued'),"
		" delivered_at = IF(state = 'queued', NULL, delivered_at),"
		" acknowledged_at = IF(state = 'queued', NULL, acknowledged_at),"
		" started_at = IF(state = 'queued', NULL, started_at),"
		" latest_heartbeat_at = IF(state = 'queued', NULL, latest_heartbeat_at),"
		" lease_expires_at = NULL, updated_at = UTC_TIMESTAMP(6)"
		" WHERE environment_id = ? AND state IN ('starting', 'active', 'stopping')"
		" AND lease_expires_at < UTC_TIMESTAMP(6)";
	static const char revoke[] =
		"UPDATE work_tokens t JOIN work_items w ON w.id = t.work_id"
		" SET t.revoked_at = UTC_TIMESTAMP(6)"
		" WHERE w.environment_id = ? AND w.state = 'stopped' AND t.revoked_at IS NULL";
	unsigned long long n = 0;
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(env_id)), NULL, &n);

	if (st || !n)
		return st;
	return db_exec(db, revoke, DB_PARAMS(DB_STR(env_id)), NULL, NULL);
}

struct claim_ctx {
	const char *env_id, *worker_id;
	long long reclaim_ms;
	const unsigned char *token_hash;
	struct db_rows *rows;
};

static enum db_status claim_tx(struct db *db, void *arg)
{
	static const char pick[] =
		"SELECT id, deliveries FROM work_items WHERE environment_id = ? AND state = "
		"'queued'"
		" AND (delivered_at IS NULL"
		"      OR delivered_at <= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND)"
		" ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED";
	static const char deliver[] = "UPDATE work_items SET delivered_at = UTC_TIMESTAMP(6), "
				      "deliveries = deliveries + 1,"
				      " worker_id = ?, updated_at = UTC_TIMESTAMP(6) WHERE id = ?";
	static const char revoke[] = "UPDATE work_tokens SET revoked_at = UTC_TIMESTAMP(6)"
				     " WHERE work_id = ? AND revoked_at IS NULL";
	static const char token[] = "INSERT INTO work_tokens (token_hash, work_id, created_at)"
				    " VALUES (?, ?, UTC_TIMESTAMP(6))";
	static const char get[] = WORK_SELECT "WHERE id = ?";
	struct claim_ctx *c = arg;
	struct db_rows picked;
	char id[64];
	enum db_status st;
	int redelivery;

	db_rows_free(c->rows);
	memset(c->rows, 0, sizeof(*c->rows));
	st = db_exec(db, pick, DB_PARAMS(DB_STR(c->env_id), DB_INT(c->reclaim_ms * 1000)), &picked,
		     NULL);
	if (st)
		return st;
	if (!picked.nrows) {
		db_rows_free(&picked);
		return DB_OK;
	}
	snprintf(id, sizeof(id), "%s", db_cell(&picked, 0, 0));
	redelivery = strcmp(db_cell(&picked, 0, 1), "0");
	db_rows_free(&picked);
	st = db_exec(db, deliver, DB_PARAMS(db_opt(c->worker_id), DB_STR(id)), NULL, NULL);
	if (!st && redelivery) /* a first delivery has no earlier token */
		st = db_exec(db, revoke, DB_PARAMS(DB_STR(id)), NULL, NULL);
	if (!st)
		st = db_exec(
			db, token,
			DB_PARAMS(DB_STRN((const char *)c->token_hash, SHA256_LEN), DB_STR(id)),
			NULL, NULL);
	if (!st)
		st = db_exec(db, get, DB_PARAMS(DB_STR(id)), c->rows, NULL);
	return st;
}

enum db_status workdb_claim(struct db *db, const char *env_id, long long reclaim_ms,
			    const char *worker_id, const unsigned char *token_hash,
			    struct db_rows *rows)
{
	struct claim_ctx c = { env_id, worker_id, reclaim_ms, token_hash, rows };

	memset(rows, 0, sizeof(*rows));
	return db_tx_read_committed(db, claim_tx, &c);
}

/* ids are [0-9A-Za-z_]: checked again here because workdb_wait puts one in SQL text */
static int id_plain(const char *s)
{
	return *s &&
	       strspn(s, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_") ==
		       strlen(s) &&
	       strlen(s) < 64;
}

/* One statement: sleep until the first moment something of ENV_ID may be deliverable (now, if
 * an item is queued and undelivered; a delivery's reclaim time; a lease's expiry), at most
 * MAX_MS. The state is read when the statement starts, so an item committed before it is seen;
 * one committed after it finds the statement in the processlist (workdb_wake). */
enum db_status workdb_wait(struct db *db, const char *env_id, long long reclaim_ms,
			   long long max_ms, int *woken)
{
	char sql[WORK_WAIT_SQL_MAX];
	double max_s = (double)max_ms / 1000.0;

	if (!id_plain(env_id) || reclaim_ms < 0 || max_ms <= 0)
		return DB_FATAL;
	snprintf(sql, sizeof(sql),
		 "SELECT SLEEP(GREATEST(%.3f, LEAST(%.3f, COALESCE(("
		 "SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(IF(state = 'queued',"
		 " IF(delivered_at IS NULL, UTC_TIMESTAMP(6),"
		 "    delivered_at + INTERVAL %lld MICROSECOND), lease_expires_at)))"
		 " FROM work_items WHERE environment_id = '%s'"
		 " AND state IN ('queued', 'starting', 'active', 'stopping')) / 1000000, %.3f)))),"
		 " '" WORK_WAIT_TAG "%s'",
		 WORK_WAIT_MIN_S, max_s, reclaim_ms * 1000, env_id, max_s, env_id);
	return db_query_interruptible(db, sql, woken);
}

enum db_status workdb_wake(struct db *db, const char *env_id)
{
	static const char sql[] =
		"SELECT QUERY_ID FROM information_schema.PROCESSLIST"
		" WHERE ID <> CONNECTION_ID() AND COMMAND = 'Query' AND INFO LIKE ?";
	char pattern[WORK_WAKE_PATTERN_MAX], kill[WORK_KILL_SQL_MAX];
	struct db_rows rows;
	enum db_status st;

	if (!id_plain(env_id))
		return DB_FATAL;
	snprintf(pattern, sizeof(pattern), "%%'" WORK_WAIT_TAG "%s'", env_id);
	st = db_exec(db, sql, DB_PARAMS(DB_STR(pattern)), &rows, NULL);
	if (st)
		return st;
	for (unsigned r = 0; r < rows.nrows; r++) {
		/* the statement may have ended meanwhile: "unknown query id" is fine */
		snprintf(kill, sizeof(kill), "KILL QUERY ID %llu",
			 strtoull(db_cell(&rows, r, 0), NULL, 10));
		if (db_query(db, kill) == DB_GONE) {
			st = DB_GONE;
			break;
		}
	}
	db_rows_free(&rows);
	return st;
}

enum db_status workdb_seen(struct db *db, const char *env_id, const char *worker_id)
{
	static const char upsert[] =
		"INSERT INTO work_pollers (environment_id, worker_id, last_seen_at)"
		" VALUES (?, ?, UTC_TIMESTAMP(6))"
		" ON DUPLICATE KEY UPDATE last_seen_at = IF(last_seen_at < VALUES(last_seen_at)"
		"  - INTERVAL ? SECOND, VALUES(last_seen_at), last_seen_at)";
	static const char prune[] = "DELETE FROM work_pollers WHERE environment_id = ? AND"
				    " last_seen_at < UTC_TIMESTAMP(6) - INTERVAL ? SECOND";
	/* a row changes at most every WORK_POLLERS_REFRESH_S: an unchanged row is not written */
	enum db_status st = db_exec(
		db, upsert,
		DB_PARAMS(DB_STR(env_id), DB_STR(worker_id), DB_INT(WORK_POLLERS_REFRESH_S)), NULL,
		NULL);

	if (st)
		return st;
	return db_exec(db, prune, DB_PARAMS(DB_STR(env_id), DB_INT(WORK_POLLERS_WINDOW_S)), NULL,
		       NULL);
}

enum db_status workdb_stats(struct db *db, const char *env_id, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT COALESCE(SUM(delivered_at IS NULL), 0),"
		" COALESCE(SUM(delivered_at IS NOT NULL), 0), " DT(
			"MIN(created_at)") ","
					   " (SELECT COUNT(*) FROM work_pollers WHERE "
					   "environment_id = ?"
					   "  AND last_seen_at >= UTC_TIMESTAMP(6) - INTERVAL ? "
					   "SECOND)"
					   " FROM work_items WHERE environment_id = ? AND state = "
					   "'queued'";

	return db_exec(db, sql,
		       DB_PARAMS(DB_STR(env_id), DB_INT(WORK_POLLERS_WINDOW_S), DB_STR(env_id)),
		       rows, NULL);
}

enum db_status workdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			   struct db_rows *rows)
{
	static const char sql[] = WORK_SELECT "WHERE environment_id = ? AND workspace_id = ?"
					      " AND (created_at < ? OR (created_at = ? AND id < ?))"
					      " ORDER BY created_at DESC, id DESC LIMIT ?";
	const char *c = p->after_created ? p->after_created : WORK_LAST_TS;
	const char *i = p->after_id ? p->after_id : WORK_LAST_ID;

	return db_exec(db, sql,
		       DB_PARAMS(DB_STR(k->parent_id), DB_STR(k->workspace_id), DB_STR(c),
				 DB_STR(c), DB_STR(i), DB_INT(db_page_rows(p))),
		       rows, NULL);
}

enum db_status workdb_set_metadata(struct db *db, const char *work_id, const char *metadata,
				   const char *now)
{
	static const char sql[] = "UPDATE work_items SET metadata = ?, updated_at = ? WHERE id = ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(metadata), DB_STR(now), DB_STR(work_id)), NULL,
		       NULL);
}

enum db_status worktoken_lookup(struct db *db, const unsigned char hash[SHA256_LEN], char *work_id,
				char *env_id, char *session_id, char *ws, size_t sz, char *account,
				size_t account_sz, int *found)
{
	static const char sql[] =
		"SELECT w.id, w.environment_id, w.session_id, w.workspace_id, e.account_id"
		" FROM work_tokens t JOIN work_items w ON w.id = t.work_id"
		" JOIN environments e ON e.id = w.environment_id"
		" WHERE t.token_hash = ? AND t.revoked_at IS NULL AND w.state <> 'stopped'";

	return keys_lookup_hash(db, sql, hash,
				(char *const[]){ work_id, env_id, session_id, ws, account },
				(const size_t[]){ sz, sz, sz, sz, account_sz }, 5, found);
}

enum db_status workdb_queues(struct db *db, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT e.id, ws.name,"
		" COALESCE(SUM(w.state = 'queued' AND w.delivered_at IS NULL), 0),"
		" COALESCE(SUM(w.state = 'queued' AND w.delivered_at IS NOT NULL), 0),"
		" DATE_FORMAT(MIN(IF(w.state = 'queued', w.created_at, NULL)),"
		"             '%Y-%m-%dT%H:%i:%s.%fZ'),"
		" COALESCE(SUM(w.state IN ('starting', 'active', 'stopping')), 0),"
		" (SELECT COUNT(*) FROM work_pollers p WHERE p.environment_id = e.id"
		"  AND p.last_seen_at >= UTC_TIMESTAMP(6) - INTERVAL ? SECOND)"
		" FROM environments e JOIN workspaces ws ON ws.id = e.workspace_id"
		" LEFT JOIN work_items w ON w.environment_id = e.id AND w.state <> 'stopped'"
		" WHERE e.type = 'self_hosted' GROUP BY e.id, ws.name ORDER BY ws.name, e.id";

	return db_exec(db, sql, DB_PARAMS(DB_INT(WORK_POLLERS_WINDOW_S)), rows, NULL);
}
