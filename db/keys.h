/* Workspaces and API keys. Keys are stored as SHA-256 only; the key itself is shown once. */
#ifndef TERRARIUM_DB_KEYS_H
#define TERRARIUM_DB_KEYS_H

#include "../common/crypto.h"
#include "db.h"

#define KEY_PREFIX "trm_"
#define KEY_RANDOM_LEN 40
#define KEY_MAX_LEN 256 /* longer presented keys are rejected without a lookup */
#define WORKSPACE_NAME_MAX 255
#define ACCOUNT_NAME_MAX 255

/* Where keys_lookup writes a key's principal: each buffer with its own size. */
struct key_identity {
	char *key_id, *workspace_id, *account_id;
	size_t key_id_sz, workspace_id_sz, account_id_sz;
};

/* Find the active key whose hash is HASH. DB_OK with *FOUND set; on a hit fills OUT's key id,
 * workspace id and account. A stored value longer than its buffer is DB_CORRUPT (never
 * truncated: two accounts sharing a prefix must not become one). */
enum db_status keys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
			   struct key_identity *out, int *found);

/* Create workspace NAME if missing and a new key for ACCOUNT in it; the key (shown once) goes
 * to KEY (size >= sizeof KEY_PREFIX + KEY_RANDOM_LEN), its id (apikey_..., what `key revoke`
 * takes) to KEY_ID. */
enum db_status keys_create(struct db *db, const char *workspace, const char *account, char *key,
			   size_t keysz, char *key_id, size_t key_id_sz);

/* Revoke the key KEY (the key itself). *FOUND = 0 when no active key matched. */
enum db_status keys_revoke(struct db *db, const char *key, int *found);

/* Revoke the key whose id is KEY_ID. *FOUND = 0 when no active key has it. */
enum db_status keys_revoke_id(struct db *db, const char *key_id, int *found);
/* Environment keys (docs/work-queue.md): open only one self_hosted environment's work routes.
 * Stored as SHA-256 in environment_keys; `key revoke` revokes them too. */
#define ENVKEY_PREFIX "trmenv_"

enum envkey_status { ENVKEY_OK, ENVKEY_NO_ENVIRONMENT, ENVKEY_NOT_SELF_HOSTED };

/* A new key for environment ENV_ID, shown once, into KEY (size >= sizeof ENVKEY_PREFIX +
 * KEY_RANDOM_LEN). *OUTCOME says when there was no such environment or it is not
 * self_hosted (then nothing is written). */
enum db_status envkeys_create(struct db *db, const char *env_id, char *key, size_t keysz,
			      enum envkey_status *outcome);

/* Revoke the environment key KEY. *FOUND = 0 when no active environment key matched. */
enum db_status envkeys_revoke(struct db *db, const char *key, int *found);

/* The active environment key whose hash is HASH: *FOUND, its environment, that environment's
 * workspace (buffers of size SZ) and account (ACCOUNT_SZ); keys_lookup_hash's DB_CORRUPT. */
enum db_status envkeys_lookup(struct db *db, const unsigned char hash[SHA256_LEN], char *env_id,
			      char *workspace_id, size_t sz, char *account, size_t account_sz,
			      int *found);

/* Run SQL (one `?`: a key's SHA-256) with HASH; when it returns a row, copy its first N
 * cells into OUT[i] (size SZ[i]) and set *FOUND. A cell longer than its buffer is DB_CORRUPT
 * with *FOUND 0 (never truncated: two principals sharing a prefix must not become one). For
 * every credential stored by hash (API keys, environment keys, sessions tokens). */
enum db_status keys_lookup_hash(struct db *db, const char *sql,
				const unsigned char hash[SHA256_LEN], char *const *out,
				const size_t *sz, unsigned n, int *found);

/* Workspace id of NAME into OUT. *FOUND = 0 when there is none. */
enum db_status workspace_lookup(struct db *db, const char *name, char *out, size_t sz, int *found);

/* The deployment's secret NAME (created by migrations) into OUT (LEN bytes); DB_CORRUPT when
 * it is missing or shorter. */
/* Not a secret but made the same way (sql/009_deployment.sql): this database's identity, which
 * the reconciler labels sandboxes with (sandbox/backend.h, sbx.deployment). */
#define KEYS_DEPLOYMENT "deployment"
#define KEYS_DEPLOYMENT_LEN 16 /* bytes */
enum db_status secret_get(struct db *db, const char *name, unsigned char *out, size_t len);

/* Apply every migration in DIR not yet in schema_migrations, in name order, each recorded.
 * Prints what it applies to stderr. DB_OK or the failure (with the file named in the log). */
enum db_status migrate_dir(struct db *db, const char *dir);

#endif
