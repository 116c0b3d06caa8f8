#include "vaults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TS(col) "DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%fZ')"
#define TS_DB(col) "DATE_FORMAT(" col ", '%Y-%m-%d %H:%i:%s.%f')"

/* clang-format off */
#define VAULT_SELECT                                                                 \
	"SELECT v.id, v.display_name, v.metadata, " TS("v.created_at") ","           \
	" " TS("v.updated_at") ", " TS("v.archived_at") ", " TS_DB("v.created_at")   \
	" FROM vaults v "

#define CRED_SELECT                                                                  \
	"SELECT c.id, c.vault_id, c.display_name, c.metadata, c.auth_type,"          \
	" c.mcp_server_url, " TS("c.created_at") ", " TS("c.updated_at") ","         \
	" " TS("c.archived_at") ", " TS_DB("c.created_at")                           \
	" FROM vault_credentials c "
/* clang-format on */

/* ---- vaults ---- */

enum db_status vaultdb_get(struct db *db, const struct db_key *k, int for_update,
			   struct db_rows *rows)
{
	return db_exec(
		db,
		DB_FOR_UPDATE_IF(for_update, VAULT_SELECT "WHERE v.id = ? AND v.workspace_id = ?"),
		DB_PARAMS(DB_STR(k->id), DB_STR(k->workspace_id)), rows, NULL);
}

enum db_status vaultdb_hold(struct db *db, const char *ws, const char *id, struct db_rows *rows)
{
	static const char sql[] =
		VAULT_SELECT "WHERE v.id = ? AND v.workspace_id = ? LOCK IN SHARE MODE";

	return db_exec(db, sql, DB_PARAMS(DB_STR(id), DB_STR(ws)), rows, NULL);
}

enum db_status vaultdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			    struct db_rows *rows)
{
#define VAULT_LIST_WHERE "WHERE v.workspace_id = ? AND (? OR v.archived_at IS NULL)"
#define VAULT_LIST_ORDER " ORDER BY v.created_at DESC, v.id DESC LIMIT ?"
	static const char first[] = VAULT_SELECT VAULT_LIST_WHERE VAULT_LIST_ORDER;
	static const char next[] = VAULT_SELECT VAULT_LIST_WHERE
		" AND (v.created_at < ? OR (v.created_at = ? AND v.id < ?))" VAULT_LIST_ORDER;
	struct db_val ws = DB_STR(k->workspace_id), archived = DB_INT(!!p->include_archived);
	struct db_val limit = DB_INT(db_page_rows(p));

	if (!p->after_created)
		return db_exec(db, first, DB_PARAMS(ws, archived, limit), rows, NULL);
	return db_exec(db, next,
		       DB_PARAMS(ws, archived, DB_STR(p->after_created), DB_STR(p->after_created),
				 DB_STR(p->after_id), limit),
		       rows, NULL);
}

enum db_status vaultdb_insert(struct db *db, const struct vault_row_in *in)
{
	static const char sql[] = "INSERT INTO vaults (id, workspace_id, display_name, metadata,"
				  " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)";

	return db_exec(db, sql,
		       DB_PARAMS(DB_STR(in->id), DB_STR(in->workspace_id), DB_STR(in->display_name),
				 DB_STR(in->metadata), DB_STR(in->now), DB_STR(in->now)),
		       NULL, NULL);
}

enum db_status vaultdb_update(struct db *db, const char *id, const char *ws,
			      const char *display_name, const char *metadata, const char *now)
{
	static const char sql[] = "UPDATE vaults SET display_name = ?, metadata = ?, updated_at = ?"
				  " WHERE id = ? AND workspace_id = ?";

	return db_exec(db, sql,
		       DB_PARAMS(DB_STR(display_name), DB_STR(metadata), DB_STR(now), DB_STR(id),
				 DB_STR(ws)),
		       NULL, NULL);
}

enum db_status vaultdb_archive(struct db *db, const struct db_key *k, const char *now)
{
	static const char vault[] = "UPDATE vaults SET archived_at = ?, updated_at = ?"
				    " WHERE id = ? AND workspace_id = ? AND archived_at IS NULL";
	static const char creds[] =
		"UPDATE vault_credentials SET archived_at = ?, updated_at = ?, secret = NULL"
		" WHERE vault_id = ? AND workspace_id = ? AND archived_at IS NULL";
	struct db_val p[] = { DB_STR(now), DB_STR(now), DB_STR(k->id), DB_STR(k->workspace_id) };
	enum db_status st = db_exec(db, vault, DB_ARRAY(p), NULL, NULL);

	return st ? st : db_exec(db, creds, DB_ARRAY(p), NULL, NULL);
}

enum db_status vaultdb_remove(struct db *db, const struct db_key *k, int *found)
{
	static const char creds[] =
		"DELETE FROM vault_credentials WHERE vault_id = ? AND workspace_id = ?";
	static const char vault[] = "DELETE FROM vaults WHERE id = ? AND workspace_id = ?";
	struct db_val p[] = { DB_STR(k->id), DB_STR(k->workspace_id) };
	unsigned long long n = 0;
	struct db_rows rows;
	enum db_status st;

	*found = 0;
	/* the vault first: a credential's creation, which locks it, waits for this, or this for
	 * it */
	st = vaultdb_get(db, k, 1, &rows);
	if (st || !rows.nrows)
		goto out;
	st = db_exec(db, creds, DB_ARRAY(p), NULL, NULL);
	if (!st)
		st = db_exec(db, vault, DB_ARRAY(p), NULL, &n);
	*found = n > 0;
out:
	db_rows_free(&rows);
	return st;
}

/* ---- credentials ---- */

enum db_status creddb_get(struct db *db, const struct db_key *k, int for_update,
			  struct db_rows *rows)
{
	return db_exec(db,
		       DB_FOR_UPDATE_IF(for_update, CRED_SELECT "WHERE c.id = ? AND c.vault_id = ?"
								" AND c.workspace_id = ?"),
		       DB_PARAMS(DB_STR(k->id), DB_STR(k->parent_id), DB_STR(k->workspace_id)),
		       rows, NULL);
}

enum db_status creddb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			   struct db_rows *rows)
{
#define CRED_LIST_WHERE                                                                            \
	"WHERE c.vault_id = ? AND c.workspace_id = ? AND (? OR c.archived_at IS NULL)"
#define CRED_LIST_ORDER " ORDER BY c.created_at DESC, c.id DESC LIMIT ?"
	static const char first[] = CRED_SELECT CRED_LIST_WHERE CRED_LIST_ORDER;
	static const char next[] = CRED_SELECT CRED_LIST_WHERE
		" AND (c.created_at < ? OR (c.created_at = ? AND c.id < ?))" CRED_LIST_ORDER;
	struct db_val vault = DB_STR(k->parent_id), ws = DB_STR(k->workspace_id);
	struct db_val archived = DB_INT(!!p->include_archived), limit = DB_INT(db_page_rows(p));

	if (!p->after_created)
		return db_exec(db, first, DB_PARAMS(vault, ws, archived, limit), rows, NULL);
	return db_exec(db, next,
		       DB_PARAMS(vault, ws, archived, DB_STR(p->after_created),
				 DB_STR(p->after_created), DB_STR(p->after_id), limit),
		       rows, NULL);
}

enum db_status creddb_live(struct db *db, const char *vault_id, const char *url, long long *count,
			   char *same_id)
{
	static const char sql[] =
		"SELECT COUNT(*), MIN(IF(mcp_server_url = ?, id, NULL)) FROM vault_credentials"
		" WHERE vault_id = ? AND archived_at IS NULL";
	struct db_rows rows;
	enum db_status st;
	const char *same;

	*count = 0;
	same_id[0] = '\0';
	st = db_exec(db, sql, DB_PARAMS(DB_STR(url), DB_STR(vault_id)), &rows, NULL);
	if (st)
		return st;
	*count = atoll(db_cell(&rows, 0, 0));
	same = db_cell(&rows, 0, 1);
	if (same)
		snprintf(same_id, VAULT_ID_MAX, "%s", same);
	db_rows_free(&rows);
	return DB_OK;
}

enum db_status creddb_insert(struct db *db, const struct cred_row_in *in)
{
	static const char sql[] =
		"INSERT INTO vault_credentials (id, vault_id, workspace_id, display_name, metadata,"
		" auth_type, mcp_server_url, secret, created_at, updated_at)"
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
	struct db_val p[] = { DB_STR(in->id),
			      DB_STR(in->vault_id),
			      DB_STR(in->workspace_id),
			      db_opt(in->display_name),
			      DB_STR(in->metadata),
			      DB_STR(in->auth_type),
			      DB_STR(in->mcp_server_url),
			      DB_STR(in->secret),
			      DB_STR(in->now),
			      DB_STR(in->now) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status creddb_update(struct db *db, const char *id, const char *ws,
			     const char *display_name, const char *metadata, const char *secret,
			     const char *now)
{
	static const char sql[] =
		"UPDATE vault_credentials SET display_name = ?, metadata = ?,"
		" secret = COALESCE(?, secret), updated_at = ? WHERE id = ? AND workspace_id = ?";

	return db_exec(db, sql,
		       DB_PARAMS(db_opt(display_name), DB_STR(metadata), db_opt(secret),
				 DB_STR(now), DB_STR(id), DB_STR(ws)),
		       NULL, NULL);
}

enum db_status creddb_archive(struct db *db, const struct db_key *k, const char *now)
{
	static const char sql[] =
		"UPDATE vault_credentials SET archived_at = ?, updated_at = ?, secret = NULL"
		" WHERE id = ? AND vault_id = ? AND workspace_id = ? AND archived_at IS NULL";

	return db_exec(db, sql,
		       DB_PARAMS(DB_STR(now), DB_STR(now), DB_STR(k->id), DB_STR(k->parent_id),
				 DB_STR(k->workspace_id)),
		       NULL, NULL);
}

enum db_status creddb_remove(struct db *db, const struct db_key *k, int *found)
{
	static const char sql[] =
		"DELETE FROM vault_credentials WHERE id = ? AND vault_id = ? AND workspace_id = ?";
	unsigned long long n = 0;
	enum db_status st = db_exec(
		db, sql, DB_PARAMS(DB_STR(k->id), DB_STR(k->parent_id), DB_STR(k->workspace_id)),
		NULL, &n);

	*found = n > 0;
	return st;
}

/* ---- the runner ---- */

/* The session's vault ids as rows (JSON_TABLE), joined to the live vaults of the session's
 * workspace and their live credentials of the kinds the runner presents. */
enum { SECRET_C_ID, SECRET_C_VAULT_ID, SECRET_C_URL, SECRET_C_SEALED };

enum db_status vaultdb_session_secrets(struct db *db, const struct vault_key *key,
				       const char *session_id, struct vault_secrets *out)
{
	static const char sql[] =
		"SELECT c.id, c.vault_id, c.mcp_server_url, c.secret FROM sessions s"
		" CROSS JOIN JSON_TABLE(s.vault_ids, '$[*]' COLUMNS (pos FOR ORDINALITY,"
		" vault_id VARCHAR(40) PATH '$')) j"
		" JOIN vaults v ON v.id = j.vault_id AND v.workspace_id = s.workspace_id"
		" AND v.archived_at IS NULL"
		" JOIN vault_credentials c ON c.vault_id = v.id AND c.workspace_id = s.workspace_id"
		" AND c.archived_at IS NULL AND c.secret IS NOT NULL"
		" AND c.auth_type = '" VAULT_AUTH_STATIC_BEARER "'"
		" WHERE s.id = ? AND s.deleted_at IS NULL ORDER BY j.pos, c.created_at, c.id";
	struct db_rows rows;
	enum db_status st;
	char err[VAULT_ERROR_MAX];

	memset(out, 0, sizeof(*out));
	st = db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), &rows, NULL);
	if (st)
		return st;
	if (rows.nrows) {
		out->v = calloc(rows.nrows, sizeof(*out->v));
		if (!out->v) {
			st = db_fail(db, DB_NOMEM, "session %s: out of memory reading credentials",
				     session_id);
			goto out;
		}
	}
	for (unsigned r = 0; r < rows.nrows; r++) {
		struct vault_secret *s = &out->v[out->n++];
		const char *id = db_cell(&rows, r, SECRET_C_ID);
		const char *url = db_cell(&rows, r, SECRET_C_URL);

		snprintf(s->credential_id, sizeof(s->credential_id), "%s", id);
		snprintf(s->vault_id, sizeof(s->vault_id), "%s",
			 db_cell(&rows, r, SECRET_C_VAULT_ID));
		s->mcp_server_url = strdup(url);
		if (!s->mcp_server_url) {
			st = db_fail(db, DB_NOMEM, "session %s: out of memory reading credentials",
				     session_id);
			goto out;
		}
		if (vault_open(key, VAULT_CRED_BIND(id, url), db_cell(&rows, r, SECRET_C_SEALED),
			       &s->token, &s->token_len, err, sizeof(err)) &&
		    asprintf(&s->error, "credential %s of vault %s: %s", id, s->vault_id, err) <
			    0) {
			s->error = NULL;
			st = db_fail(db, DB_NOMEM, "session %s: out of memory reading credentials",
				     session_id);
			goto out;
		}
	}
out:
	db_rows_free(&rows);
	if (st)
		vault_secrets_free(out);
	return st;
}

const struct vault_secret *vault_secrets_find(const struct vault_secrets *s, const char *url)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].mcp_server_url, url))
			return &s->v[i];
	return NULL;
}

void vault_secrets_free(struct vault_secrets *s)
{
	for (size_t i = 0; i < s->n; i++) {
		vault_secret_free(s->v[i].token, s->v[i].token_len);
		free(s->v[i].mcp_server_url);
		free(s->v[i].error);
	}
	free(s->v);
	memset(s, 0, sizeof(*s));
}
