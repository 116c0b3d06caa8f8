/* Vault secrets at rest (docs/vaults.md): a credential's secret is sealed with libsodium's
 * crypto_secretbox (XSalsa20-Poly1305, a random 24-byte nonce per value) under the deployment's
 * vault key, a 32-byte file named by [vault] key_file that never enters the database. A sealed
 * value is text, stored as it is:
 *
 *   v1.<key id: 16 hex>.<base64url(nonce || secretbox(SHA-256(binding) || secret))>
 *
 * The key id (the first 8 bytes of HMAC-SHA256(key, VAULT_KEY_ID_LABEL)) tells a value sealed
 * under another key from one that was altered. The binding (the credential's id and the URL it
 * is for) is sealed with the secret: a value copied onto another credential row, or a row whose
 * URL was changed in the database, does not open. Opened secrets are the caller's to wipe
 * (vault_secret_free). Nothing here logs. */
#ifndef TERRARIUM_VAULT_CRYPTO_H
#define TERRARIUM_VAULT_CRYPTO_H

#include <stddef.h>

#define VAULT_KEY_LEN 32    /* bytes of the key file, exactly */
#define VAULT_KEY_ID_LEN 16 /* hex characters of a key id */
#define VAULT_KEY_ID_LABEL "terrarium vault key id"
#define VAULT_PATH_MAX 512 /* the key file's path as kept for messages (CONFIG_STR_MAX) */
#define VAULT_ERROR_MAX 768
#define VAULT_SEALED_PREFIX "v1."

enum vault_status {
	VAULT_OK = 0,
	VAULT_NO_KEY,	   /* no key loaded: key_file unset, missing, unreadable, short... */
	VAULT_WRONG_KEY,   /* sealed under another key (key id), or it does not authenticate */
	VAULT_WRONG_OWNER, /* it authenticates, but it was sealed for another binding */
	VAULT_MALFORMED,   /* not a sealed value of a known format */
	VAULT_FAILED,	   /* out of memory, no randomness, libsodium did not start */
};

/* The deployment's key, loaded once (before a process gives up root) and read-only after. */
struct vault_key {
	unsigned char key[VAULT_KEY_LEN];
	char id[VAULT_KEY_ID_LEN + 1];
	char path[VAULT_PATH_MAX]; /* the file it was loaded from (or was to be) */
	int loaded;
	char error[VAULT_ERROR_MAX]; /* when not loaded: why, naming the file */
};

/* Load the key in PATH ("" or NULL: none configured) into K. The file must be a regular file
 * of exactly VAULT_KEY_LEN bytes, not all zero, neither readable nor writable by others. 0, or
 * -1 with K->error saying why (naming the file and [vault] key_file) and K not loaded. */
int vault_key_load(struct vault_key *k, const char *path);

/* Set K from the VAULT_KEY_LEN bytes of RAW (tests, and what vault_key_load does once read);
 * PATH names it in messages. 0, or -1 with K->error (all zero, libsodium did not start). */
int vault_key_set(struct vault_key *k, const unsigned char *raw, const char *path);

/* Wipe K (key bytes included); it is not loaded afterwards. */
void vault_key_wipe(struct vault_key *k);

/* Seal SECRET (LEN bytes) under K for BIND (a NULL-terminated list of strings: what the value
 * belongs to) into *SEALED (NUL-terminated text, caller frees; it holds nothing secret). ERR
 * (ERRSZ bytes) says why on failure, naming the key file. */
enum vault_status vault_seal(const struct vault_key *k, const char *const *bind, const char *secret,
			     size_t len, char **sealed, char *err, size_t errsz);

/* Open SEALED under K for BIND into *SECRET (NUL-terminated, *LEN bytes before the NUL; the
 * caller releases it with vault_secret_free). ERR says why on failure, naming the key file:
 * VAULT_NO_KEY, VAULT_WRONG_KEY ("wrong vault key"), VAULT_WRONG_OWNER, VAULT_MALFORMED,
 * VAULT_FAILED. *SECRET is NULL on failure. */
enum vault_status vault_open(const struct vault_key *k, const char *const *bind, const char *sealed,
			     char **secret, size_t *len, char *err, size_t errsz);

/* Wipe and free a secret vault_open returned (LEN: its length; NULL is fine). */
void vault_secret_free(char *secret, size_t len);

#endif
