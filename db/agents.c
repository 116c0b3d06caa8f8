#include "agents.h"

#include <stdlib.h>

/* The version shown is v; updated_at is the agent's for its current version (archiving moves
 * it too) and the version's own creation for older versions. */
#define AGENT_SELECT                                                                               \
	"SELECT a.id, v.version, v.definition,"                                                    \
	" DATE_FORMAT(a.created_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"                                     \
	" DATE_FORMAT(IF(v.version = a.version, a.updated_at, v.created_at),"                      \
	" '%Y-%m-%dT%H:%i:%s.%fZ'),"                                                               \
	" DATE_FORMAT(a.archived_at, '%Y-%m-%dT%H:%i:%s.%fZ'), a.version,"                         \
	" DATE_FORMAT(a.created_at, '%Y-%m-%d %H:%i:%s.%f')"                                       \
	" FROM agents a JOIN agent_versions v ON v.agent_id = a.id "

enum db_status agentdb_get(struct db *db, const struct db_key *k, int for_update,
			   struct db_rows *rows)
{
	static const char at[] =
		AGENT_SELECT "WHERE a.workspace_id = ? AND a.id = ? AND v.version = ?";
	struct db_val ws = DB_STR(k->workspace_id), id = DB_STR(k->id);

	if (k->version > 0)
		return db_exec(db, at, DB_PARAMS(ws, id, DB_INT(k->version)), rows, NULL);
	return db_exec(db,
		       DB_FOR_UPDATE_IF(for_update,
					AGENT_SELECT "WHERE a.workspace_id = ? AND a.id = ?"
						     " AND v.version = a.version"),
		       DB_PARAMS(ws, id), rows, NULL);
}

enum db_status agentdb_insert(struct db *db, const struct agent_row_in *in)
{
	static const char agent[] =
		"INSERT INTO agents (id, workspace_id, account_id, version, created_at, updated_at)"
		" VALUES (?, ?, ?, 1, ?, ?)";
	static const char first[] = "INSERT INTO agent_versions (agent_id, version, definition,"
				    " created_at) VALUES (?, 1, ?, ?)";
	struct db_val pa[] = { DB_STR(in->id), DB_STR(in->workspace_id), DB_STR(in->account_id),
			       DB_STR(in->now), DB_STR(in->now) };
	struct db_val pv[] = { DB_STR(in->id), DB_STR(in->definition), DB_STR(in->now) };
	enum db_status st = db_exec(db, agent, DB_ARRAY(pa), NULL, NULL);

	return st ? st : db_exec(db, first, DB_ARRAY(pv), NULL, NULL);
}

enum db_status agentdb_add_version(struct db *db, const struct agent_row_in *in, long long version)
{
	static const char add[] = "INSERT INTO agent_versions (agent_id, version, definition,"
				  " created_at) VALUES (?, ?, ?, ?)";
	static const char bump[] = "UPDATE agents SET version = ?, updated_at = ?"
				   " WHERE id = ? AND workspace_id = ? AND version = ?";
	struct db_val pv[] = { DB_STR(in->id), DB_INT(version), DB_STR(in->definition),
			       DB_STR(in->now) };
	struct db_val pa[] = { DB_INT(version), DB_STR(in->now), DB_STR(in->id),
			       DB_STR(in->workspace_id), DB_INT(version - 1) };
	unsigned long long n = 0;
	enum db_status st = db_exec(db, add, DB_ARRAY(pv), NULL, NULL);

	if (!st)
		st = db_exec(db, bump, DB_ARRAY(pa), NULL, &n);
	/* the caller holds the row lock: a miss means the caller's version was not current */
	return st ? st : n == 1 ? DB_OK : DB_CONFLICT;
}

enum db_status agentdb_archive(struct db *db, const struct db_key *k, const char *now)
{
	static const char sql[] = "UPDATE agents SET archived_at = ?, updated_at = ?"
				  " WHERE id = ? AND workspace_id = ? AND archived_at IS NULL";
	struct db_val p[] = { DB_STR(now), DB_STR(now), DB_STR(k->id), DB_STR(k->workspace_id) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status agentdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			    struct db_rows *rows)
{
#define AGENT_LIST_WHERE                                                                           \
	"WHERE a.workspace_id = ? AND v.version = a.version AND (? OR a.archived_at IS NULL)"      \
	" AND (? IS NULL OR a.created_at >= ?) AND (? IS NULL OR a.created_at <= ?)"
#define AGENT_LIST_ORDER " ORDER BY a.created_at DESC, a.id DESC LIMIT ?"
	static const char first[] = AGENT_SELECT AGENT_LIST_WHERE AGENT_LIST_ORDER;
	static const char next[] = AGENT_SELECT AGENT_LIST_WHERE
		" AND (a.created_at < ? OR (a.created_at = ? AND a.id < ?))" AGENT_LIST_ORDER;
	struct db_val ws = DB_STR(k->workspace_id), archived = DB_INT(!!p->include_archived);
	struct db_val g = db_opt_nonempty(p->gte), l = db_opt_nonempty(p->lte);
	struct db_val limit = DB_INT(db_page_rows(p));

	if (!p->after_created)
		return db_exec(db, first, DB_PARAMS(ws, archived, g, g, l, l, limit), rows, NULL);
	return db_exec(db, next,
		       DB_PARAMS(ws, archived, g, g, l, l, DB_STR(p->after_created),
				 DB_STR(p->after_created), DB_STR(p->after_id), limit),
		       rows, NULL);
}

enum db_status agentdb_versions(struct db *db, const char *ws, const char *id,
				long long before_version, long long limit, struct db_rows *rows)
{
	static const char sql[] =
		"SELECT a.id, v.version, v.definition,"
		" DATE_FORMAT(a.created_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"
		" DATE_FORMAT(IF(v.version = a.version, a.updated_at, v.created_at),"
		" '%Y-%m-%dT%H:%i:%s.%fZ'),"
		" DATE_FORMAT(a.archived_at, '%Y-%m-%dT%H:%i:%s.%fZ'), a.version,"
		" DATE_FORMAT(v.created_at, '%Y-%m-%d %H:%i:%s.%f')"
		" FROM agents a JOIN agent_versions v ON v.agent_id = a.id"
		" WHERE a.workspace_id = ? AND a.id = ? AND (? = 0 OR v.version < ?)"
		" ORDER BY v.version DESC LIMIT ?";
	struct db_val p[] = { DB_STR(ws), DB_STR(id), DB_INT(before_version),
			      DB_INT(before_version), DB_INT(limit) };

	return db_exec(db, sql, DB_ARRAY(p), rows, NULL);
}

/* The snapshot of definition DEF (borrowed) as agent ID at VERSION. New reference or NULL. */
static json_t *snapshot_make(const char *id, long long version, json_t *def)
{
	static const char *const keys[] = { "name",   "description",	    "model",
					    "system", "mcp_servers",	    "tools",
					    "skills", "execution_identity", "multiagent" };
	json_t *snap = json_pack("{s:s, s:s, s:I}", "id", id, "type", "agent", "version",
				 (json_int_t)version);

	for (size_t i = 0; snap && i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(def, keys[i]);

		if (!v || json_object_set(snap, keys[i], v)) {
			json_decref(snap);
			snap = NULL;
		}
	}
	return snap;
}

enum db_status agentdb_snapshot(struct db *db, const char *ws, const char *agent_id,
				long long version, json_t **snapshot, int *archived)
{
	struct db_rows rows;
	enum db_status st;
	json_t *def;

	*snapshot = NULL;
	*archived = 0;
	st = agentdb_get(db,
			 &(struct db_key){ .workspace_id = ws,
					   .id = agent_id,
					   .version = version > 0 ? version : 0 },
			 0, &rows);
	if (st)
		return st;
	if (!rows.nrows)
		goto out;
	*archived = db_cell(&rows, 0, AGENT_C_ARCHIVED) != NULL;
	st = db_json_load(db, db_cell(&rows, 0, AGENT_C_DEFINITION), "agent", agent_id,
			  "definition", &def);
	if (st)
		goto out;
	*snapshot = snapshot_make(db_cell(&rows, 0, AGENT_C_ID),
				  atoll(db_cell(&rows, 0, AGENT_C_VERSION)), def);
	if (!*snapshot)
		st = db_fail(db, DB_NOMEM, "agent %s: out of memory", agent_id);
	json_decref(def);
out:
	db_rows_free(&rows);
	return st;
}
