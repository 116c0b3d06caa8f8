#include "sandboxes.h"

#include <string.h>

enum db_status scache_touch(struct db *db, const char *backend, const char *key,
			    const char *environment_id, const char *now)
{
	static const char sql[] =
		"INSERT INTO sandbox_cache (backend, cache_key, environment_id, created_at,"
		" last_used_at) VALUES (?, ?, ?, ?, ?)"
		" ON DUPLICATE KEY UPDATE last_used_at = GREATEST(last_used_at, "
		"VALUES(last_used_at))";

	return db_exec(db, sql,
		       DB_PARAMS(DB_STR(backend), DB_STR(key), DB_STR(environment_id), DB_STR(now),
				 DB_STR(now)),
		       NULL, NULL);
}

enum db_status scache_stale(struct db *db, const char *backend, const char *before, int max,
			    struct db_rows *rows)
{
	static const char sql[] = "SELECT c.cache_key FROM sandbox_cache c"
				  " LEFT JOIN environments e ON e.id = c.environment_id"
				  " WHERE c.backend = ? AND (c.last_used_at < ? OR e.id IS NULL)"
				  " ORDER BY c.last_used_at LIMIT ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(backend), DB_STR(before), DB_INT(max)), rows,
		       NULL);
}

enum db_status scache_forget(struct db *db, const char *backend, const char *key,
			     const char *before)
{
	static const char sql[] =
		"DELETE c FROM sandbox_cache c LEFT JOIN environments e ON e.id = c.environment_id"
		" WHERE c.backend = ? AND c.cache_key = ? AND (c.last_used_at < ? OR e.id IS NULL)";

	return db_exec(db, sql, DB_PARAMS(DB_STR(backend), DB_STR(key), DB_STR(before)), NULL,
		       NULL);
}

enum db_status drift_candidates(struct db *db, const char *backend, int max, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT b.session_id, b.sandbox_id FROM session_sandboxes b"
		" JOIN sessions s ON s.id = b.session_id AND s.deleted_at IS NULL"
		" WHERE b.backend = ? ORDER BY b.checked_at IS NOT NULL, b.checked_at LIMIT ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(backend), DB_INT(max)), rows, NULL);
}

enum db_status drift_checked(struct db *db, const char *session_id, const char *now)
{
	static const char sql[] =
		"UPDATE session_sandboxes SET checked_at = ? WHERE session_id = ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(now), DB_STR(session_id)), NULL, NULL);
}

struct drift_ctx {
	const char *session_id, *sandbox_id, *last_error, *now;
	int reset;
};

static enum db_status drift_tx(struct db *db, void *arg)
{
	static const char unbind[] =
		"DELETE FROM session_sandboxes WHERE session_id = ? AND sandbox_id = ?";
	static const char intent[] =
		"UPDATE provisioning_intents SET state = 'pending', steps_done = '[]',"
		" sandbox_id = NULL, attempts = 0, next_attempt_at = ?, last_error = ?,"
		" lease_owner = NULL, lease_expires_at = NULL, updated_at = ?"
		" WHERE session_id = ? AND kind = 'provision' AND state = 'done'";
	static const char session[] = "UPDATE sessions SET status = 'rescheduling', updated_at = ?"
				      " WHERE id = ? AND deleted_at IS NULL";
	struct drift_ctx *c = arg;
	unsigned long long n = 0;
	enum db_status st;

	c->reset = 0;
	st = db_exec(db, unbind, DB_PARAMS(DB_STR(c->session_id), DB_STR(c->sandbox_id)), NULL, &n);
	if (st || !n)
		return st;
	st = db_exec(db, intent,
		     DB_PARAMS(DB_STR(c->now), DB_STR(c->last_error), DB_STR(c->now),
			       DB_STR(c->session_id)),
		     NULL, &n);
	if (st)
		return st;
	c->reset = n > 0;
	return db_exec(db, session, DB_PARAMS(DB_STR(c->now), DB_STR(c->session_id)), NULL, NULL);
}

enum db_status drift_reprovision(struct db *db, const char *session_id, const char *sandbox_id,
				 const char *last_error, const char *now, int *reset)
{
	struct drift_ctx c = { session_id, sandbox_id, last_error, now, 0 };
	enum db_status st = db_tx(db, drift_tx, &c);

	*reset = st ? 0 : c.reset;
	return st;
}
