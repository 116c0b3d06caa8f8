/* Unit tests of the vault's sealing (common/vault_crypto.c): a round trip, values that must not
 * open (altered, under another key, for another binding, not a sealed value), and key files
 * (exactly 32 bytes, not all zero, not readable by others), each refusal saying why. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/vault_crypto.h"
#include "unit.h"

#define SECRET "ghp_s3cr3t-token.value/+="
#define BIND(id, url) ((const char *const[]){ (id), (url), NULL })

static void key_of(struct vault_key *k, unsigned char fill)
{
	unsigned char raw[VAULT_KEY_LEN];

	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (unsigned char)(fill + i);
	assert_int_equal(vault_key_set(k, raw, "/etc/test/vault.key"), 0);
}

/* Open SEALED under K for BIND: the status, the message in ERR. */
static enum vault_status try_open(const struct vault_key *k, const char *const *bind,
				  const char *sealed, char *err, size_t errsz)
{
	char *secret = (char *)"untouched";
	size_t len = 99;
	enum vault_status st = vault_open(k, bind, sealed, &secret, &len, err, errsz);

	if (st) {
		assert_null(secret);
		assert_int_equal(len, 0);
	} else {
		vault_secret_free(secret, len);
	}
	return st;
}

static void test_round_trip(void **state)
{
	struct vault_key k;
	char *a, *b, *secret, err[VAULT_ERROR_MAX], head[64];
	size_t len;
	(void)state;

	key_of(&k, 1);
	assert_int_equal(strlen(k.id), VAULT_KEY_ID_LEN);
	assert_int_equal(vault_seal(&k, BIND("vcrd_1", "https://mcp.example.com/mcp"), SECRET,
				    strlen(SECRET), &a, err, sizeof(err)),
			 VAULT_OK);
	/* the format: v1.<key id>.<base64url>, nothing of the secret in it */
	snprintf(head, sizeof(head), "v1.%s.", k.id);
	assert_memory_equal(a, head, strlen(head));
	assert_null(strstr(a, SECRET));
	assert_null(strstr(a, "s3cr3t"));
	assert_int_equal(vault_open(&k, BIND("vcrd_1", "https://mcp.example.com/mcp"), a, &secret,
				    &len, err, sizeof(err)),
			 VAULT_OK);
	assert_int_equal(len, strlen(SECRET));
	assert_string_equal(secret, SECRET);
	vault_secret_free(secret, len);
	/* a random nonce per value: the same secret seals differently */
	assert_int_equal(vault_seal(&k, BIND("vcrd_1", "https://mcp.example.com/mcp"), SECRET,
				    strlen(SECRET), &b, err, sizeof(err)),
			 VAULT_OK);
	assert_string_not_equal(a, b);
	free(a);
	free(b);
	/* an empty secret and one with a NUL inside round-trip too */
	assert_int_equal(vault_seal(&k, BIND("x", "y"), "a\0b", 3, &a, err, sizeof(err)), VAULT_OK);
	assert_int_equal(vault_open(&k, BIND("x", "y"), a, &secret, &len, err, sizeof(err)),
			 VAULT_OK);
	assert_int_equal(len, 3);
	assert_memory_equal(secret, "a\0b", 3);
	vault_secret_free(secret, len);
	free(a);
	vault_key_wipe(&k);
	assert_false(k.loaded);
}

static void test_tampered(void **state)
{
	struct vault_key k;
	char *sealed, err[VAULT_ERROR_MAX];
	size_t n, body;
	(void)state;

	key_of(&k, 7);
	assert_int_equal(vault_seal(&k, BIND("vcrd_1", "https://a/"), SECRET, strlen(SECRET),
				    &sealed, err, sizeof(err)),
			 VAULT_OK);
	n = strlen(sealed);
	body = strlen(VAULT_SEALED_PREFIX) + VAULT_KEY_ID_LEN + 1;
	/* every character of the nonce, the box and the tag matters */
	for (size_t i = body; i < n; i++) {
		char *t = strdup(sealed);

		assert_non_null(t);
		t[i] = t[i] == 'A' ? 'B' : 'A';
		assert_int_not_equal(
			try_open(&k, BIND("vcrd_1", "https://a/"), t, err, sizeof(err)), VAULT_OK);
		free(t);
	}
	/* a flipped byte of the box: it does not authenticate */
	sealed[n - 5] = sealed[n - 5] == 'A' ? 'B' : 'A';
	assert_int_equal(try_open(&k, BIND("vcrd_1", "https://a/"), sealed, err, sizeof(err)),
			 VAULT_WRONG_KEY);
	assert_non_null(strstr(err, "altered"));
	assert_non_null(strstr(err, "/etc/test/vault.key"));
	/* cut short, another format, nothing at all */
	sealed[body + 10] = '\0';
	assert_int_equal(try_open(&k, BIND("vcrd_1", "https://a/"), sealed, err, sizeof(err)),
			 VAULT_MALFORMED);
	assert_int_equal(try_open(&k, BIND("vcrd_1", "https://a/"), "v2.abc", err, sizeof(err)),
			 VAULT_MALFORMED);
	assert_int_equal(try_open(&k, BIND("vcrd_1", "https://a/"), NULL, err, sizeof(err)),
			 VAULT_MALFORMED);
	free(sealed);
}

static void test_wrong_key_and_owner(void **state)
{
	struct vault_key k1, k2, none;
	char *sealed, *forged, err[VAULT_ERROR_MAX];
	(void)state;

	key_of(&k1, 1);
	key_of(&k2, 2);
	assert_string_not_equal(k1.id, k2.id);
	assert_int_equal(vault_seal(&k1, BIND("vcrd_1", "https://a/"), SECRET, strlen(SECRET),
				    &sealed, err, sizeof(err)),
			 VAULT_OK);
	/* another key: told by the key id, both ids and the file named */
	assert_int_equal(try_open(&k2, BIND("vcrd_1", "https://a/"), sealed, err, sizeof(err)),
			 VAULT_WRONG_KEY);
	assert_non_null(strstr(err, "wrong vault key"));
	assert_non_null(strstr(err, k1.id));
	assert_non_null(strstr(err, k2.id));
	assert_non_null(strstr(err, "/etc/test/vault.key"));
	/* another key behind the first key's id: the MAC says so */
	forged = strdup(sealed);
	assert_non_null(forged);
	memcpy(forged + strlen(VAULT_SEALED_PREFIX), k2.id, VAULT_KEY_ID_LEN);
	assert_int_equal(try_open(&k2, BIND("vcrd_1", "https://a/"), forged, err, sizeof(err)),
			 VAULT_WRONG_KEY);
	assert_non_null(strstr(err, "wrong vault key"));
	free(forged);
	/* the right key, another credential or URL: sealed for someone else */
	assert_int_equal(try_open(&k1, BIND("vcrd_2", "https://a/"), sealed, err, sizeof(err)),
			 VAULT_WRONG_OWNER);
	assert_int_equal(try_open(&k1, BIND("vcrd_1", "https://evil/"), sealed, err, sizeof(err)),
			 VAULT_WRONG_OWNER);
	assert_int_equal(try_open(&k1, BIND("vcrd_1https://a/", ""), sealed, err, sizeof(err)),
			 VAULT_WRONG_OWNER);
	/* no key: neither seals nor opens, and says why */
	assert_int_not_equal(vault_key_load(&none, ""), 0);
	assert_int_equal(try_open(&none, BIND("vcrd_1", "https://a/"), sealed, err, sizeof(err)),
			 VAULT_NO_KEY);
	assert_non_null(strstr(err, "[vault] key_file is not set"));
	free(sealed);
	assert_int_equal(vault_seal(&none, BIND("a", "b"), "x", 1, &sealed, err, sizeof(err)),
			 VAULT_NO_KEY);
	assert_null(sealed);
}

/* Write LEN bytes (byte I: FILL + I) to DIR/NAME with MODE; its path into PATH. */
static void key_file(const char *dir, const char *name, size_t len, unsigned char fill, mode_t mode,
		     char *path, size_t pathsz)
{
	unsigned char buf[64] = { 0 };
	int fd;

	snprintf(path, pathsz, "%s/%s", dir, name);
	for (size_t i = 0; fill && i < len; i++)
		buf[i] = (unsigned char)(fill + i);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void test_key_files(void **state)
{
	char dir[] = "/tmp/test_vault_crypto.XXXXXX", path[256];
	struct vault_key k, set;
	(void)state;

	assert_non_null(mkdtemp(dir));
	/* 32 bytes, mode 0600 or 0640: the same key as the bytes give */
	key_file(dir, "good", VAULT_KEY_LEN, 1, 0600, path, sizeof(path));
	assert_int_equal(vault_key_load(&k, path), 0);
	assert_true(k.loaded);
	key_of(&set, 1);
	assert_string_equal(k.id, set.id);
	assert_string_equal(k.path, path);
	key_file(dir, "group", VAULT_KEY_LEN, 1, 0640, path, sizeof(path));
	assert_int_equal(vault_key_load(&k, path), 0);
	/* short, long, all zero, readable by everyone, missing, a directory, not set */
	key_file(dir, "short", VAULT_KEY_LEN - 1, 1, 0600, path, sizeof(path));
	assert_int_equal(vault_key_load(&k, path), -1);
	assert_false(k.loaded);
	assert_non_null(strstr(k.error, path));
	assert_non_null(strstr(k.error, "holds 31 bytes"));
	key_file(dir, "long", VAULT_KEY_LEN + 10, 1, 0600, path, sizeof(path));
	assert_int_equal(vault_key_load(&k, path), -1);
	assert_non_null(strstr(k.error, "more than 32 bytes"));
	key_file(dir, "zero", VAULT_KEY_LEN, 0, 0600, path, sizeof(path));
	assert_int_equal(vault_key_load(&k, path), -1);
	assert_non_null(strstr(k.error, "zero"));
	key_file(dir, "open", VAULT_KEY_LEN, 1, 0644, path, sizeof(path));
	assert_int_equal(vault_key_load(&k, path), -1);
	assert_non_null(strstr(k.error, "mode 0644"));
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(vault_key_load(&k, path), -1);
	assert_non_null(strstr(k.error, path));
	assert_non_null(strstr(k.error, "No such file"));
	assert_int_equal(vault_key_load(&k, dir), -1);
	assert_non_null(strstr(k.error, "not a regular file"));
	assert_int_equal(vault_key_load(&k, NULL), -1);
	assert_non_null(strstr(k.error, "not set"));
	unit_sh("rm -rf \"$1\"", dir, NULL, 0);
}

UNIT_MAIN(cmocka_unit_test(test_round_trip), cmocka_unit_test(test_tampered),
	  cmocka_unit_test(test_wrong_key_and_owner), cmocka_unit_test(test_key_files))
