#include "sessions.h"

#define TS(col) "DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%fZ')"
/* clang-format off */
#define SES_SELECT                                                                   \
	"SELECT s.id, s.agent_snapshot, s.mcp_servers, s.environment_id, s.status,"  \
	" s.title, s.metadata, " TS("s.created_at") ", " TS("s.updated_at") ","      \
	" " TS("s.archived_at") ", s.environment_revision, i.state, i.attempts,"     \
	" i.last_error, " TS("i.next_attempt_at") ","                                \
	" DATE_FORMAT(s.created_at, '%Y-%m-%d %H:%i:%s.%f'),"                        \
	" s.agent_id, i.id, i.sandbox_id, i.sandbox_may_exist,"                      \
	" DATE_FORMAT(i.lease_expires_at, '%Y-%m-%d %H:%i:%s.%f'), s.vault_ids"      \
	" FROM sessions s LEFT JOIN provisioning_intents i"                          \
	" ON i.session_id = s.id AND i.kind = '" INTENT_PROVISION "' "
/* clang-format on */

/* Sentinels that sort after / before every stored position: the first page of a list is the
 * page after (or before) them, so one statement serves every page. */
#define SES_LAST_TS "9999-12-31 23:59:59.999999"
#define SES_FIRST_TS "1000-01-01 00:00:00.000000"

/* scope: account reaches the sessions of an account-scoped environment: another account of the
 * workspace neither sees nor changes them (one parameter: the caller's account). */
#define SES_VISIBLE                                                                                \
	" AND NOT EXISTS (SELECT 1 FROM environments e WHERE e.id = s.environment_id"              \
	" AND e.scope = 'account' AND e.account_id <> ?) "

enum db_status sesdb_get(struct db *db, const struct db_key *k, int for_update,
			 struct db_rows *rows)
{
	struct db_val p[] = { DB_STR(k->id), DB_STR(k->workspace_id), DB_STR(k->account_id) };

	return db_exec(db,
		       DB_FOR_UPDATE_IF(for_update,
					SES_SELECT "WHERE s.id = ? AND s.workspace_id = ?"
						   " AND s.deleted_at IS NULL" SES_VISIBLE),
		       DB_ARRAY(p), rows, NULL);
}

enum db_status sesdb_insert(struct db *db, const struct session_row_in *in)
{
	static const char sql[] =
		"INSERT INTO sessions (id, workspace_id, environment_id, environment_revision,"
		" environment_config, agent_id, agent_version, agent_snapshot, title, metadata,"
		" created_at, updated_at, vault_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
		"?)";
	struct db_val p[] = { DB_STR(in->id),
			      DB_STR(in->workspace_id),
			      DB_STR(in->environment_id),
			      DB_INT(in->environment_revision),
			      DB_STR(in->environment_config),
			      DB_STR(in->agent_id),
			      DB_INT(in->agent_version),
			      DB_STR(in->agent_snapshot),
			      db_opt(in->title),
			      DB_STR(in->metadata),
			      DB_STR(in->now),
			      DB_STR(in->now),
			      DB_STR(in->vault_ids) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status sesdb_insert_intent(struct db *db, const char *session_id, const char *ws,
				   const char *kind, const char *spec, const char *sandbox_id,
				   const char *now)
{
	static const char sql[] =
		"INSERT INTO provisioning_intents (session_id, workspace_id, kind, state, spec,"
		" steps_done, attempts, next_attempt_at, sandbox_id, created_at, updated_at)"
		" VALUES (?, ?, ?, 'pending', ?, '[]', 0, ?, ?, ?, ?)";
	struct db_val p[] = { DB_STR(session_id), DB_STR(ws),	      DB_STR(kind), DB_STR(spec),
			      DB_STR(now),	  db_opt(sandbox_id), DB_STR(now),  DB_STR(now) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status sesdb_update(struct db *db, const char *id, const char *ws, const char *title,
			    const char *metadata, const char *mcp_servers, const char *now)
{
	static const char sql[] = "UPDATE sessions SET title = ?, metadata = ?, mcp_servers = ?,"
				  " updated_at = ? WHERE id = ? AND workspace_id = ?";
	struct db_val p[] = { db_opt(title), DB_STR(metadata), db_opt(mcp_servers),
			      DB_STR(now),   DB_STR(id),       DB_STR(ws) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status sesdb_archive(struct db *db, const struct db_key *k, const char *now,
			     unsigned long long *affected)
{
	static const char sql[] = "UPDATE sessions s SET archived_at = ?, updated_at = ? WHERE id "
				  "= ? AND workspace_id = ?"
				  " AND archived_at IS NULL AND deleted_at IS NULL" SES_VISIBLE;
	struct db_val p[] = { DB_STR(now), DB_STR(now), DB_STR(k->id), DB_STR(k->workspace_id),
			      DB_STR(k->account_id) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, affected);
}

enum db_status sesdb_remove(struct db *db, const char *id, const char *ws)
{
	static const char del_intents[] =
		"DELETE FROM provisioning_intents WHERE session_id = ? AND workspace_id = ?";
	static const char del_session[] = "DELETE FROM sessions WHERE id = ? AND workspace_id = ?";
	struct db_val p[] = { DB_STR(id), DB_STR(ws) };
	enum db_status st = db_exec(db, del_intents, DB_ARRAY(p), NULL, NULL);

	return st ? st : db_exec(db, del_session, DB_ARRAY(p), NULL, NULL);
}

enum db_status sesdb_retire(struct db *db, const char *id, const char *ws, const char *sandbox_id,
			    const char *now, const char *not_before)
{
	static const char hide[] = "UPDATE sessions SET deleted_at = ?, updated_at = ?,"
				   " environment_id = NULL WHERE id = ? AND workspace_id = ?";
	static const char cancel[] =
		"UPDATE provisioning_intents SET state = 'cancelled', lease_owner = NULL,"
		" lease_expires_at = NULL, updated_at = ? WHERE session_id = ? AND kind = "
		"'" INTENT_PROVISION "'";
	enum db_status st;

	st = db_exec(db, hide, DB_PARAMS(DB_STR(now), DB_STR(now), DB_STR(id), DB_STR(ws)), NULL,
		     NULL);
	if (!st)
		st = db_exec(db, cancel, DB_PARAMS(DB_STR(now), DB_STR(id)), NULL, NULL);
	if (!st)
		st = sesdb_insert_intent(db, id, ws, INTENT_TEARDOWN, "{}", sandbox_id,
					 not_before && strcmp(not_before, now) > 0 ? not_before
										   : now);
	return st;
}

enum db_status sesdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			  struct db_rows *rows)
{
#define SES_LIST_WHERE                                                                             \
	"WHERE s.workspace_id = ? AND s.deleted_at IS NULL"                                        \
	" AND (? IS NULL OR s.agent_id = ?) AND (? = 1 OR s.archived_at IS NULL)" SES_VISIBLE
	static const char desc[] = SES_SELECT SES_LIST_WHERE
		"AND (s.created_at < ? OR (s.created_at = ? AND s.id < ?))"
		" ORDER BY s.created_at DESC, s.id DESC LIMIT ?";
	static const char asc_sql[] = SES_SELECT SES_LIST_WHERE
		"AND (s.created_at > ? OR (s.created_at = ? AND s.id > ?))"
		" ORDER BY s.created_at ASC, s.id ASC LIMIT ?";
	const char *ts = p->after_created ? p->after_created : p->asc ? SES_FIRST_TS : SES_LAST_TS;
	const char *id = p->after_id ? p->after_id : p->asc ? "" : "~";
	struct db_val v[] = { DB_STR(k->workspace_id),
			      db_opt(p->agent_id),
			      db_opt(p->agent_id),
			      DB_INT(p->include_archived),
			      DB_STR(k->account_id),
			      DB_STR(ts),
			      DB_STR(ts),
			      DB_STR(id),
			      DB_INT(db_page_rows(p)) };

	return db_exec(db, p->asc ? asc_sql : desc, DB_ARRAY(v), rows, NULL);
}
