#include "vault_crypto.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crypto.h"

#define BIND_LEN SHA256_LEN /* the binding's hash, sealed before the secret */
#define BOX_OVERHEAD (crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + BIND_LEN)
/* "v1." + key id + "." */
#define SEALED_HEAD_LEN (sizeof(VAULT_SEALED_PREFIX) - 1 + VAULT_KEY_ID_LEN + 1)

static const char *key_path(const struct vault_key *k)
{
	return k->path[0] ? k->path : "(none)";
}

/* SHA-256 of the strings of BIND, each followed by its NUL (no string holds one, so two lists
 * hash alike only when they are equal). */
static void bind_hash(const char *const *bind, unsigned char out[BIND_LEN])
{
	struct sha256 s;

	sha256_init(&s);
	for (; bind && *bind; bind++)
		sha256_update(&s, *bind, strlen(*bind) + 1);
	sha256_final(&s, out);
}

int vault_key_set(struct vault_key *k, const unsigned char *raw, const char *path)
{
	unsigned char mac[SHA256_LEN];

	memset(k, 0, sizeof(*k));
	snprintf(k->path, sizeof(k->path), "%s", path ? path : "");
	if (sodium_init() < 0) {
		snprintf(k->error, sizeof(k->error), "vault key %s: libsodium did not start",
			 key_path(k));
		return -1;
	}
	if (sodium_is_zero(raw, VAULT_KEY_LEN)) {
		snprintf(k->error, sizeof(k->error),
			 "vault key %s ([vault] key_file): all %d bytes are zero; make a key with "
			 "head -c %d /dev/urandom",
			 key_path(k), VAULT_KEY_LEN, VAULT_KEY_LEN);
		return -1;
	}
	memcpy(k->key, raw, VAULT_KEY_LEN);
	hmac_sha256(k->key, VAULT_KEY_LEN, VAULT_KEY_ID_LABEL, strlen(VAULT_KEY_ID_LABEL), mac);
	hex_encode(mac, VAULT_KEY_ID_LEN / 2, k->id);
	k->loaded = 1;
	return 0;
}

int vault_key_load(struct vault_key *k, const char *path)
{
	unsigned char raw[VAULT_KEY_LEN + 1];
	struct stat st;
	ssize_t n = 0, got;
	int fd, ret = -1;

	memset(k, 0, sizeof(*k));
	snprintf(k->path, sizeof(k->path), "%s", path ? path : "");
	if (!path || !*path) {
		snprintf(k->error, sizeof(k->error),
			 "no vault key: [vault] key_file is not set (docs/vaults.md)");
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(k->error, sizeof(k->error), "vault key %s ([vault] key_file): %s", path,
			 strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(k->error, sizeof(k->error),
			 "vault key %s ([vault] key_file): not a regular file", path);
		goto out;
	}
	if (st.st_mode & (S_IROTH | S_IWOTH)) {
		snprintf(k->error, sizeof(k->error),
			 "vault key %s ([vault] key_file): mode %04o lets every user read or write "
			 "it; chmod 0600 (or 0640 for the service's group)",
			 path, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	while (n < (ssize_t)sizeof(raw) &&
	       (got = read(fd, raw + n, sizeof(raw) - (size_t)n)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			snprintf(k->error, sizeof(k->error), "vault key %s ([vault] key_file): %s",
				 path, strerror(errno));
			goto out;
		}
		n += got;
	}
	if (n != VAULT_KEY_LEN) {
		snprintf(k->error, sizeof(k->error),
			 "vault key %s ([vault] key_file): holds %s%zd bytes, a vault key is "
			 "exactly "
			 "%d random bytes (head -c %d /dev/urandom)",
			 path, n > VAULT_KEY_LEN ? "more than " : "", n > VAULT_KEY_LEN ? n - 1 : n,
			 VAULT_KEY_LEN, VAULT_KEY_LEN);
		goto out;
	}
	ret = vault_key_set(k, raw, path);
out:
	sodium_memzero(raw, sizeof(raw));
	close(fd);
	return ret;
}

void vault_key_wipe(struct vault_key *k)
{
	sodium_memzero(k, sizeof(*k));
}

enum vault_status vault_seal(const struct vault_key *k, const char *const *bind, const char *secret,
			     size_t len, char **sealed, char *err, size_t errsz)
{
	size_t plain_len = BIND_LEN + len,
	       box_len = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES + plain_len;
	unsigned char *plain = NULL, *box = NULL;
	enum vault_status st = VAULT_FAILED;
	char *text = NULL;

	*sealed = NULL;
	if (!k->loaded) {
		snprintf(err, errsz, "%s", k->error[0] ? k->error : "no vault key loaded");
		return VAULT_NO_KEY;
	}
	plain = malloc(plain_len);
	box = malloc(box_len);
	text = malloc(SEALED_HEAD_LEN + 4 * ((box_len + 2) / 3) + 1);
	if (!plain || !box || !text) {
		snprintf(err, errsz, "out of memory sealing a secret");
		goto out;
	}
	bind_hash(bind, plain);
	memcpy(plain + BIND_LEN, secret, len);
	randombytes_buf(box, crypto_secretbox_NONCEBYTES);
	if (crypto_secretbox_easy(box + crypto_secretbox_NONCEBYTES, plain, plain_len, box,
				  k->key)) {
		snprintf(err, errsz, "crypto_secretbox_easy failed");
		goto out;
	}
	memcpy(text, VAULT_SEALED_PREFIX, sizeof(VAULT_SEALED_PREFIX) - 1);
	memcpy(text + sizeof(VAULT_SEALED_PREFIX) - 1, k->id, VAULT_KEY_ID_LEN);
	text[SEALED_HEAD_LEN - 1] = '.';
	b64url_encode(box, box_len, text + SEALED_HEAD_LEN);
	*sealed = text;
	text = NULL;
	st = VAULT_OK;
out:
	if (plain)
		sodium_memzero(plain, plain_len);
	free(plain);
	free(box);
	free(text);
	return st;
}

enum vault_status vault_open(const struct vault_key *k, const char *const *bind, const char *sealed,
			     char **secret, size_t *len, char *err, size_t errsz)
{
	size_t text_len = sealed ? strlen(sealed) : 0, cap;
	unsigned char want[BIND_LEN], *box = NULL, *plain = NULL;
	enum vault_status st = VAULT_FAILED;
	long box_len;
	char *clear;

	*secret = NULL;
	*len = 0;
	if (!k->loaded) {
		snprintf(err, errsz, "%s", k->error[0] ? k->error : "no vault key loaded");
		return VAULT_NO_KEY;
	}
	if (text_len < SEALED_HEAD_LEN ||
	    memcmp(sealed, VAULT_SEALED_PREFIX, sizeof(VAULT_SEALED_PREFIX) - 1) ||
	    sealed[SEALED_HEAD_LEN - 1] != '.') {
		snprintf(err, errsz, "the stored secret is not a sealed value (%s...)",
			 VAULT_SEALED_PREFIX);
		return VAULT_MALFORMED;
	}
	if (memcmp(sealed + sizeof(VAULT_SEALED_PREFIX) - 1, k->id, VAULT_KEY_ID_LEN)) {
		snprintf(err, errsz,
			 "wrong vault key: the secret was sealed under key id %.*s, the key in %s "
			 "([vault] key_file) has id %s",
			 VAULT_KEY_ID_LEN, sealed + sizeof(VAULT_SEALED_PREFIX) - 1, key_path(k),
			 k->id);
		return VAULT_WRONG_KEY;
	}
	cap = (text_len - SEALED_HEAD_LEN) * 3 / 4 + 3;
	box = malloc(cap);
	if (!box) {
		snprintf(err, errsz, "out of memory opening a secret");
		return VAULT_FAILED;
	}
	box_len = b64url_decode(sealed + SEALED_HEAD_LEN, text_len - SEALED_HEAD_LEN, box, cap);
	if (box_len < (long)BOX_OVERHEAD) {
		snprintf(err, errsz, "the stored secret is not a sealed value (%s...)",
			 VAULT_SEALED_PREFIX);
		st = VAULT_MALFORMED;
		goto out;
	}
	plain = malloc((size_t)box_len - crypto_secretbox_NONCEBYTES - crypto_secretbox_MACBYTES);
	if (!plain) {
		snprintf(err, errsz, "out of memory opening a secret");
		goto out;
	}
	if (crypto_secretbox_open_easy(plain, box + crypto_secretbox_NONCEBYTES,
				       (unsigned long long)box_len - crypto_secretbox_NONCEBYTES,
				       box, k->key)) {
		snprintf(err, errsz,
			 "wrong vault key, or the stored value was altered: the secret does not "
			 "authenticate under the key in %s ([vault] key_file, id %s)",
			 key_path(k), k->id);
		st = VAULT_WRONG_KEY;
		goto out;
	}
	*len = (size_t)box_len - BOX_OVERHEAD;
	bind_hash(bind, want);
	if (ct_memcmp(plain, want, BIND_LEN)) {
		snprintf(err, errsz,
			 "the stored secret was sealed for another credential (its row was changed "
			 "in the database)");
		st = VAULT_WRONG_OWNER;
		goto out;
	}
	clear = malloc(*len + 1);
	if (!clear) {
		snprintf(err, errsz, "out of memory opening a secret");
		goto out;
	}
	memcpy(clear, plain + BIND_LEN, *len);
	clear[*len] = '\0';
	*secret = clear;
	st = VAULT_OK;
out:
	if (plain)
		sodium_memzero(plain, (size_t)box_len - crypto_secretbox_NONCEBYTES -
					      crypto_secretbox_MACBYTES);
	free(plain);
	free(box);
	if (st)
		*len = 0;
	return st;
}

void vault_secret_free(char *secret, size_t len)
{
	if (!secret)
		return;
	sodium_memzero(secret, len);
	free(secret);
}
