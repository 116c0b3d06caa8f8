#include "keys.h"

#include <stdio.h>
#include <string.h>

#include "../common/crypto.h"

/* Copy CELL into OUT (size SZ). 0, or -1 when it does not fit: a truncated id or account
 * would name another principal, so it is never used. */
static int copy_cell(char *out, size_t sz, const char *cell)
{
	int n = snprintf(out, sz, "%s", cell ? cell : "");

	return n < 0 || (size_t)n >= sz ? -1 : 0;
}

enum db_status keys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
			   struct key_identity *out, int *found)
{
	static const char sql[] = "SELECT id, workspace_id, account_id FROM api_keys "
				  "WHERE key_hash = ? AND revoked_at IS NULL";

	return keys_lookup_hash(
		db, sql, hash, (char *const[]){ out->key_id, out->workspace_id, out->account_id },
		(const size_t[]){ out->key_id_sz, out->workspace_id_sz, out->account_id_sz }, 3,
		found);
}

enum db_status workspace_lookup(struct db *db, const char *name, char *out, size_t sz, int *found)
{
	static const char sql[] = "SELECT id FROM workspaces WHERE name = ?";
	struct db_val p[] = { DB_STR(name) };
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_ARRAY(p), &rows, NULL);

	*found = 0;
	if (st)
		return st;
	if (rows.nrows) {
		if (copy_cell(out, sz, db_cell(&rows, 0, 0)))
			st = db_fail(db, DB_CORRUPT, "workspace id longer than its buffer");
		else
			*found = 1;
	}
	db_rows_free(&rows);
	return st;
}

struct create_ctx {
	const char *workspace, *account;
	char *key, *key_id;
	size_t keysz, key_id_sz;
};

static enum db_status create_tx(struct db *db, void *arg)
{
	static const char ins_ws[] = "INSERT IGNORE INTO workspaces (id, name) VALUES (?, ?)";
	static const char ins_key[] =
		"INSERT INTO api_keys (id, workspace_id, account_id, key_hash) "
		"SELECT ?, id, ?, ? FROM workspaces WHERE name = ?";
	struct create_ctx *c = arg;
	char ws_id[48];
	unsigned char hash[SHA256_LEN];
	enum db_status st;

	if (random_id(ws_id, sizeof(ws_id), "wrkspc_", ID_RANDOM_LEN) ||
	    random_id(c->key_id, c->key_id_sz, "apikey_", ID_RANDOM_LEN) ||
	    random_id(c->key, c->keysz, KEY_PREFIX, KEY_RANDOM_LEN))
		return DB_FATAL;
	st = db_exec(db, ins_ws, DB_PARAMS(DB_STR(ws_id), DB_STR(c->workspace)), NULL, NULL);
	if (st)
		return st;
	sha256(c->key, strlen(c->key), hash);
	return db_exec(db, ins_key,
		       DB_PARAMS(DB_STR(c->key_id), DB_STR(c->account),
				 DB_STRN((const char *)hash, SHA256_LEN), DB_STR(c->workspace)),
		       NULL, NULL);
}

enum db_status keys_create(struct db *db, const char *workspace, const char *account, char *key,
			   size_t keysz, char *key_id, size_t key_id_sz)
{
	struct create_ctx c = { workspace, account, key, key_id, keysz, key_id_sz };
	return db_tx(db, create_tx, &c);
}

/* Run SQL (an UPDATE setting revoked_at WHERE key_hash = ?) for KEY's hash. */
static enum db_status revoke_hash(struct db *db, const char *sql, const char *key, int *found)
{
	unsigned char hash[SHA256_LEN];
	unsigned long long n = 0;
	enum db_status st;

	sha256(key, strlen(key), hash);
	st = db_exec(db, sql, DB_PARAMS(DB_STRN((const char *)hash, SHA256_LEN)), NULL, &n);
	*found = n > 0;
	return st;
}

enum db_status keys_revoke_id(struct db *db, const char *key_id, int *found)
{
	static const char sql[] = "UPDATE api_keys SET revoked_at = UTC_TIMESTAMP(6) "
				  "WHERE id = ? AND revoked_at IS NULL";
	unsigned long long n = 0;
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(key_id)), NULL, &n);

	*found = n > 0;
	return st;
}

enum db_status keys_revoke(struct db *db, const char *key, int *found)
{
	static const char sql[] = "UPDATE api_keys SET revoked_at = UTC_TIMESTAMP(6) "
				  "WHERE key_hash = ? AND revoked_at IS NULL";

	return revoke_hash(db, sql, key, found);
}

enum db_status secret_get(struct db *db, const char *name, unsigned char *out, size_t len)
{
	static const char sql[] = "SELECT secret FROM server_secrets WHERE name = ?";
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(name)), &rows, NULL);

	if (st)
		return st;
	if (rows.nrows != 1 || !db_cell(&rows, 0, 0) || rows.len[0] < len)
		st = db_fail(db, DB_CORRUPT, "server secret '%s' is missing or short (run migrate)",
			     name);
	else
		memcpy(out, db_cell(&rows, 0, 0), len);
	db_rows_free(&rows);
	return st;
}

struct envkey_ctx {
	const char *env_id;
	char *key;
	size_t keysz;
	enum envkey_status *outcome;
};

static enum db_status envkey_create_tx(struct db *db, void *arg)
{
	static const char get[] = "SELECT type FROM environments WHERE id = ? FOR UPDATE";
	static const char ins[] = "INSERT INTO environment_keys (id, environment_id, key_hash)"
				  " VALUES (?, ?, ?)";
	struct envkey_ctx *c = arg;
	unsigned char hash[SHA256_LEN];
	char key_id[48];
	struct db_rows rows;
	enum db_status st = db_exec(db, get, DB_PARAMS(DB_STR(c->env_id)), &rows, NULL);

	if (st)
		return st;
	*c->outcome = !rows.nrows				    ? ENVKEY_NO_ENVIRONMENT
		      : strcmp(db_cell(&rows, 0, 0), "self_hosted") ? ENVKEY_NOT_SELF_HOSTED
								    : ENVKEY_OK;
	db_rows_free(&rows);
	if (*c->outcome != ENVKEY_OK)
		return DB_OK;
	if (random_id(key_id, sizeof(key_id), "envkey_", ID_RANDOM_LEN) ||
	    random_id(c->key, c->keysz, ENVKEY_PREFIX, KEY_RANDOM_LEN))
		return DB_FATAL;
	sha256(c->key, strlen(c->key), hash);
	return db_exec(db, ins,
		       DB_PARAMS(DB_STR(key_id), DB_STR(c->env_id),
				 DB_STRN((const char *)hash, SHA256_LEN)),
		       NULL, NULL);
}

enum db_status envkeys_create(struct db *db, const char *env_id, char *key, size_t keysz,
			      enum envkey_status *outcome)
{
	struct envkey_ctx c = { env_id, key, keysz, outcome };
	return db_tx(db, envkey_create_tx, &c);
}

enum db_status envkeys_revoke(struct db *db, const char *key, int *found)
{
	static const char sql[] = "UPDATE environment_keys SET revoked_at = UTC_TIMESTAMP(6) "
				  "WHERE key_hash = ? AND revoked_at IS NULL";

	return revoke_hash(db, sql, key, found);
}

enum db_status keys_lookup_hash(struct db *db, const char *sql,
				const unsigned char hash[SHA256_LEN], char *const *out,
				const size_t *sz, unsigned n, int *found)
{
	struct db_rows rows;
	enum db_status st =
		db_exec(db, sql, DB_PARAMS(DB_STRN((const char *)hash, SHA256_LEN)), &rows, NULL);

	*found = 0;
	if (st)
		return st;
	if (rows.nrows && rows.ncols >= n) {
		for (unsigned i = 0; i < n && !st; i++)
			if (copy_cell(out[i], sz[i], db_cell(&rows, 0, i)))
				st = db_fail(db, DB_CORRUPT,
					     "credential for %.64s: column %u of the stored row is "
					     "longer than its buffer",
					     db_cell(&rows, 0, 0), i + 1);
		*found = !st;
	}
	db_rows_free(&rows);
	return st;
}

enum db_status envkeys_lookup(struct db *db, const unsigned char hash[SHA256_LEN], char *env_id,
			      char *workspace_id, size_t sz, char *account, size_t account_sz,
			      int *found)
{
	static const char sql[] =
		"SELECT k.environment_id, e.workspace_id, e.account_id FROM environment_keys k"
		" JOIN environments e ON e.id = k.environment_id"
		" WHERE k.key_hash = ? AND k.revoked_at IS NULL";

	return keys_lookup_hash(db, sql, hash, (char *const[]){ env_id, workspace_id, account },
				(const size_t[]){ sz, sz, account_sz }, 3, found);
}
