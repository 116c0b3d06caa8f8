#include "environments.h"

#include <stdlib.h>

#define ENV_SELECT                                                                                 \
	"SELECT id, name, description, metadata, config, scope,"                                   \
	" DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"                                       \
	" DATE_FORMAT(updated_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"                                       \
	" DATE_FORMAT(archived_at, '%Y-%m-%dT%H:%i:%s.%fZ'), revision,"                            \
	" DATE_FORMAT(created_at, '%Y-%m-%d %H:%i:%s.%f') FROM environments "

#define ENV_VISIBLE " workspace_id = ? AND (scope IS NULL OR scope <> 'account' OR account_id = ?) "

enum db_status envdb_get(struct db *db, const char *id, const char *ws, const char *account,
			 enum envdb_lock lock, struct db_rows *rows)
{
	static const char sql[] = ENV_SELECT "WHERE id = ? AND" ENV_VISIBLE;
	static const char sql_update[] = ENV_SELECT "WHERE id = ? AND" ENV_VISIBLE "FOR UPDATE";
	static const char sql_share[] =
		ENV_SELECT "WHERE id = ? AND" ENV_VISIBLE "LOCK IN SHARE MODE";
	struct db_val p[] = { DB_STR(id), DB_STR(ws), DB_STR(account) };

	return db_exec(db,
		       lock == ENVDB_LOCK_UPDATE  ? sql_update
		       : lock == ENVDB_LOCK_SHARE ? sql_share
						  : sql,
		       DB_ARRAY(p), rows, NULL);
}

/* The user-settable columns, as envdb_insert and envdb_update write them, and their values from
 * a struct env_row_in, in the same order. */
#define ENV_FIELDS_SET "name = ?, description = ?, metadata = ?, type = ?, scope = ?, config = ?"
#define ENV_FIELDS_VALUES(in)                                                                      \
	DB_STR((in)->name), db_opt((in)->description), DB_STR((in)->metadata), DB_STR((in)->type), \
		db_opt((in)->scope), DB_STR((in)->config)

enum db_status envdb_insert(struct db *db, const struct env_row_in *in)
{
	static const char sql[] =
		"INSERT INTO environments SET id = ?, workspace_id = ?, account_id = "
		"?, " ENV_FIELDS_SET ", revision = 1, created_at = ?, updated_at = ?";
	struct db_val p[] = { DB_STR(in->id),	      DB_STR(in->workspace_id),
			      DB_STR(in->account_id), ENV_FIELDS_VALUES(in),
			      DB_STR(in->now),	      DB_STR(in->now) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status envdb_update(struct db *db, const struct env_row_in *in, long long revision,
			    unsigned long long *affected)
{
	static const char sql[] =
		"UPDATE environments SET " ENV_FIELDS_SET
		", revision = revision + 1, updated_at = ?"
		" WHERE id = ? AND workspace_id = ? AND revision = ? AND archived_at IS NULL";
	struct db_val p[] = { ENV_FIELDS_VALUES(in), DB_STR(in->now), DB_STR(in->id),
			      DB_STR(in->workspace_id), DB_INT(revision) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, affected);
}

enum db_status envdb_hold_for_session(struct db *db, const char *id, const char *ws,
				      const char *account)
{
	static const char sql[] = "UPDATE environments SET session_writes = session_writes + 1"
				  " WHERE id = ? AND" ENV_VISIBLE;
	struct db_val p[] = { DB_STR(id), DB_STR(ws), DB_STR(account) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status envdb_archive(struct db *db, const struct db_key *k, const char *now)
{
	static const char sql[] = "UPDATE environments SET archived_at = ?, updated_at = ?"
				  " WHERE id = ? AND archived_at IS NULL AND" ENV_VISIBLE;
	struct db_val p[] = { DB_STR(now), DB_STR(now), DB_STR(k->id), DB_STR(k->workspace_id),
			      DB_STR(k->account_id) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status envdb_delete(struct db *db, const char *id, const char *ws, const char *account,
			    unsigned long long *affected)
{
	static const char sql[] = "DELETE FROM environments WHERE id = ? AND" ENV_VISIBLE
				  "AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.environment_id "
				  "= environments.id)";
	struct db_val p[] = { DB_STR(id), DB_STR(ws), DB_STR(account) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, affected);
}

enum db_status envdb_references(struct db *db, const char *id, const char *ws, const char *account,
				int *exists, long long *count)
{
	static const char sql[] =
		"SELECT (SELECT COUNT(*) FROM sessions s WHERE s.environment_id = e.id)"
		" FROM environments e WHERE id = ? AND"
		" e.workspace_id = ? AND (e.scope IS NULL OR e.scope <> 'account' OR e.account_id "
		"= ?)";
	struct db_val p[] = { DB_STR(id), DB_STR(ws), DB_STR(account) };
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_ARRAY(p), &rows, NULL);

	if (st)
		return st;
	*exists = rows.nrows > 0;
	*count = rows.nrows ? atoll(db_cell(&rows, 0, 0)) : 0;
	db_rows_free(&rows);
	return DB_OK;
}

enum db_status envdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			  struct db_rows *rows)
{
#define ENV_LIST_ORDER " ORDER BY created_at DESC, id DESC LIMIT ?"
#define ENV_LIST_AFTER " AND (created_at < ? OR (created_at = ? AND id < ?))"
	static const char all_first[] = ENV_SELECT "WHERE" ENV_VISIBLE ENV_LIST_ORDER;
	static const char live_first[] =
		ENV_SELECT "WHERE" ENV_VISIBLE "AND archived_at IS NULL" ENV_LIST_ORDER;
	static const char all_next[] = ENV_SELECT "WHERE" ENV_VISIBLE ENV_LIST_AFTER ENV_LIST_ORDER;
	static const char live_next[] = ENV_SELECT
		"WHERE" ENV_VISIBLE "AND archived_at IS NULL" ENV_LIST_AFTER ENV_LIST_ORDER;
	struct db_val ws = DB_STR(k->workspace_id), account = DB_STR(k->account_id);
	struct db_val limit = DB_INT(db_page_rows(p));

	if (!p->after_created)
		return db_exec(db, p->include_archived ? all_first : live_first,
			       DB_PARAMS(ws, account, limit), rows, NULL);
	return db_exec(db, p->include_archived ? all_next : live_next,
		       DB_PARAMS(ws, account, DB_STR(p->after_created), DB_STR(p->after_created),
				 DB_STR(p->after_id), limit),
		       rows, NULL);
}
