/* libsodium behind the contracts of crypto.h. */
#include "crypto.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(SHA256_LEN == crypto_hash_sha256_BYTES, "SHA256_LEN is SHA-256's digest size");
_Static_assert(SHA256_LEN == crypto_auth_hmacsha256_BYTES, "and HMAC-SHA256's tag size");

#define B64URL sodium_base64_VARIANT_URLSAFE_NO_PADDING
#define B64STD sodium_base64_VARIANT_ORIGINAL_NO_PADDING

/* sodium_init once per process, before main: before the API's supervisor forks and before any
 * test calls in. It fails only when the library cannot set itself up (no CSPRNG): nothing of
 * this program can work then. */
__attribute__((constructor)) static void crypto_init(void)
{
	if (sodium_init() < 0) {
		fputs("libsodium could not be initialised\n", stderr);
		abort();
	}
}

void sha256_init(struct sha256 *s)
{
	crypto_hash_sha256_init(&s->state);
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	crypto_hash_sha256_update(&s->state, data, len);
}

void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN])
{
	crypto_hash_sha256_final(&s->state, out);
}

void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
	crypto_hash_sha256(out, data, len);
}

void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 unsigned char out[SHA256_LEN])
{
	crypto_auth_hmacsha256_state st;

	/* the init/update/final form takes a key of any length (longer than a block: hashed
	 * first, as RFC 2104 says); crypto_auth_hmacsha256() alone takes exactly 32 bytes */
	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, data, len);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

int random_bytes(void *buf, size_t len)
{
	randombytes_buf(buf, len);
	return 0;
}

int random_id(char *out, size_t outsz, const char *prefix, size_t n)
{
	static const char alphabet[] =
		"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	size_t plen = strlen(prefix), i = 0;
	unsigned char r[64];

	if (plen + n + 1 > outsz)
		return -1;
	memcpy(out, prefix, plen);
	while (i < n) {
		randombytes_buf(r, sizeof(r));
		/* rejection sampling: 248 = 4 * 62 keeps the distribution uniform */
		for (size_t j = 0; j < sizeof(r) && i < n; j++)
			if (r[j] < 248)
				out[plen + i++] = alphabet[r[j] % 62];
	}
	out[plen + n] = '\0';
	return 0;
}

void hex_encode(const unsigned char *in, size_t len, char *out)
{
	sodium_bin2hex(out, 2 * len + 1, in, len);
}

size_t b64url_encode(const unsigned char *in, size_t len, char *out)
{
	sodium_bin2base64(out, sodium_base64_ENCODED_LEN(len, B64URL), in, len, B64URL);
	return strlen(out);
}

size_t base64_encode(const unsigned char *in, size_t len, char *out)
{
	sodium_bin2base64(out, sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL), in,
			  len, sodium_base64_VARIANT_ORIGINAL);
	return strlen(out);
}

/* IN[0..LEN) in VARIANT (unpadded): the decoded length, or -1. libsodium refuses an invalid
 * character, a length no encoding has, non-zero unused bits and OUT too small. */
static long b64_decode(const char *in, size_t len, unsigned char *out, size_t outsz, int variant)
{
	size_t n;

	if (sodium_base642bin(out, outsz, in, len, NULL, &n, NULL, variant))
		return -1;
	return (long)n;
}

long b64url_decode(const char *in, size_t len, unsigned char *out, size_t outsz)
{
	return b64_decode(in, len, out, outsz, B64URL);
}

long base64_decode(const char *in, size_t len, unsigned char *out, size_t outsz)
{
	while (len && in[len - 1] == '=')
		len--;
	/* '+' or '/' make it the standard alphabet, where '-' and '_' are then invalid */
	return b64_decode(in, len, out, outsz,
			  memchr(in, '+', len) || memchr(in, '/', len) ? B64STD : B64URL);
}

int ct_memcmp(const void *a, const void *b, size_t len)
{
	return sodium_memcmp(a, b, len);
}
