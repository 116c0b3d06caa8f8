/* Vaults and their credentials (docs/vaults.md): the vaults and vault_credentials tables, and
 * what the runner reads of a session's credentials. Every query filters on the workspace: another
 * workspace's vault or credential is indistinguishable from a missing one. A credential's secret
 * is stored sealed (common/vault_crypto.h) and never read by the API's SELECTs: only
 * vaultdb_session_secrets reads it, for the runner. */
#ifndef TERRARIUM_DB_VAULTS_H
#define TERRARIUM_DB_VAULTS_H

#include <stddef.h>

#include "../common/vault_crypto.h"
#include "db.h"
#include "table.h"

#define VAULT_ID_PREFIX "vlt_"
#define VAULT_CRED_ID_PREFIX "vcrd_"
#define VAULT_AUTH_STATIC_BEARER "static_bearer"
#define VAULT_ID_MAX 48 /* bytes of an id buffer (RESOURCE_ID_MAX) */

/* Columns of every vault SELECT (vaultdb_get, vaultdb_list), in this order. */
enum vault_col {
	VAULT_C_ID,
	VAULT_C_NAME,	  /* display_name */
	VAULT_C_METADATA, /* JSON */
	VAULT_C_CREATED,  /* RFC 3339 */
	VAULT_C_UPDATED,
	VAULT_C_ARCHIVED,   /* RFC 3339 or NULL */
	VAULT_C_CREATED_DB, /* "YYYY-MM-DD HH:MM:SS.ffffff": the list cursor's key */
};

/* Columns of every credential SELECT (creddb_get, creddb_list), in this order: never the
 * secret. */
enum cred_col {
	CRED_C_ID,
	CRED_C_VAULT_ID,
	CRED_C_NAME,	  /* display_name or NULL */
	CRED_C_METADATA,  /* JSON */
	CRED_C_AUTH_TYPE, /* VAULT_AUTH_STATIC_BEARER */
	CRED_C_URL,	  /* mcp_server_url */
	CRED_C_CREATED,
	CRED_C_UPDATED,
	CRED_C_ARCHIVED,
	CRED_C_CREATED_DB,
};

struct vault_row_in {
	const char *id, *workspace_id, *display_name;
	const char *metadata; /* JSON text */
	const char *now;      /* "YYYY-MM-DD HH:MM:SS.ffffff" */
};

struct cred_row_in {
	const char *id, *vault_id, *workspace_id;
	const char *display_name; /* NULL: null */
	const char *metadata;	  /* JSON text */
	const char *auth_type, *mcp_server_url;
	const char *secret; /* sealed (vault_seal) */
	const char *now;
};

/* ---- vaults (the resource table's operations, handlers/resource.h) ---- */

/* Vault K->id of K->workspace_id into ROWS (0 or 1 row; caller db_rows_free); FOR_UPDATE locks
 * it (inside a transaction). */
enum db_status vaultdb_get(struct db *db, const struct db_key *k, int for_update,
			   struct db_rows *rows);
/* Vault ID of WS, read under a shared lock (a session's creation: an archive or delete of the
 * vault waits for it), into ROWS. Inside a transaction. */
enum db_status vaultdb_hold(struct db *db, const char *ws, const char *id, struct db_rows *rows);
/* Vaults of K->workspace_id newest first, as page P says (include_archived, after the
 * cursor), at most db_page_rows(P) rows into ROWS. */
enum db_status vaultdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			    struct db_rows *rows);
enum db_status vaultdb_insert(struct db *db, const struct vault_row_in *in);
/* Write the display name and metadata (JSON text) of vault ID of WS at NOW. */
enum db_status vaultdb_update(struct db *db, const char *id, const char *ws,
			      const char *display_name, const char *metadata, const char *now);
/* Archive vault K (read locked, not archived) at NOW with its live credentials, whose secrets
 * are erased. */
enum db_status vaultdb_archive(struct db *db, const struct db_key *k, const char *now);
/* Delete vault K and its credentials (two statements: run inside db_tx): *FOUND = 0 when it
 * is not visible. Sessions keep the id in their vault_ids; the runner finds nothing under it. */
enum db_status vaultdb_remove(struct db *db, const struct db_key *k, int *found);

/* ---- credentials (K->parent_id: the vault in the path) ---- */

enum db_status creddb_get(struct db *db, const struct db_key *k, int for_update,
			  struct db_rows *rows);
/* Credentials of vault K->parent_id newest first, as page P says. */
enum db_status creddb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			   struct db_rows *rows);
/* Of vault VAULT_ID's live credentials: how many there are (*COUNT), and the id of the one for
 * URL (SAME_ID, VAULT_ID_MAX bytes; "" when none). Inside the creation's transaction, with
 * the vault row locked. */
enum db_status creddb_live(struct db *db, const char *vault_id, const char *url, long long *count,
			   char *same_id);
enum db_status creddb_insert(struct db *db, const struct cred_row_in *in);
/* Write display name (NULL: null), metadata (JSON text) and, when SECRET is not NULL, the new
 * sealed secret of credential ID of WS at NOW. */
enum db_status creddb_update(struct db *db, const char *id, const char *ws,
			     const char *display_name, const char *metadata, const char *secret,
			     const char *now);
/* Archive credential K at NOW and erase its secret. */
enum db_status creddb_archive(struct db *db, const struct db_key *k, const char *now);
/* Delete credential K: *FOUND = 0 when it is not visible. */
enum db_status creddb_remove(struct db *db, const struct db_key *k, int *found);

/* The words a credential's secret is sealed for: its id and its mcp_server_url (both
 * borrowed), NULL-terminated, as vault_seal and vault_open take them. */
#define VAULT_CRED_BIND(id, url) ((const char *const[]){ (id), (url), NULL })

/* ---- the runner ---- */

/* One credential of a session, opened. */
struct vault_secret {
	char credential_id[VAULT_ID_MAX], vault_id[VAULT_ID_MAX];
	char *mcp_server_url; /* owned */
	char *token;	      /* owned, wiped on free; NULL when it could not be opened */
	size_t token_len;
	char *error; /* owned; when token is NULL: why (names the key file; holds no secret) */
};

struct vault_secrets {
	struct vault_secret *v; /* owned */
	size_t n;
};

/* The live static_bearer credentials of session SESSION_ID's vaults (those of its vault_ids
 * that still exist in its workspace and are not archived), in the order of its vault_ids, then
 * of the credentials' creation, each opened with KEY into OUT (caller vault_secrets_free, also
 * after a failure). A credential that does not open (no key, wrong key, altered) is an entry
 * with a NULL token and its error: the others are still usable. A plain SELECT: no lock. DB_OK
 * with OUT empty when the session has no vaults or does not exist; DB_NOMEM when memory runs
 * out. The tokens go to the MCP servers they were stored for and nowhere else: never to a
 * log, an event or a sandbox. */
enum db_status vaultdb_session_secrets(struct db *db, const struct vault_key *key,
				       const char *session_id, struct vault_secrets *out);

/* The first entry of S for MCP server URL URL (exact match), or NULL when there is none; an
 * entry that did not open (token NULL) is returned with its error, not passed over. Borrowed. */
const struct vault_secret *vault_secrets_find(const struct vault_secrets *s, const char *url);

/* Wipe the tokens and free everything S owns; S is empty afterwards. */
void vault_secrets_free(struct vault_secrets *s);

#endif
