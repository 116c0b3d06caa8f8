/* SHA-256 (FIPS 180-4), HMAC-SHA256 (RFC 2104), CSPRNG ids, hex and base64url. Small and
 * self-contained so the project needs no crypto library for hashing API keys and signing
 * list cursors. */
#ifndef TERRARIUM_CRYPTO_H
#define TERRARIUM_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define ID_RANDOM_LEN 24 /* characters of [0-9A-Za-z] after the prefix */

struct sha256 {
	uint32_t h[8];
	uint64_t len;
	unsigned char buf[64];
	size_t fill;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);
void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 unsigned char out[SHA256_LEN]);

/* Fill BUF with LEN bytes from the kernel CSPRNG. Returns 0 or -1. */
int random_bytes(void *buf, size_t len);

/* Write PREFIX + N random [0-9A-Za-z] into OUT (size >= strlen(prefix) + n + 1). 0 or -1. */
int random_id(char *out, size_t outsz, const char *prefix, size_t n);

/* Lower-case hex of LEN bytes into OUT (size >= 2 * len + 1). */
void hex_encode(const unsigned char *in, size_t len, char *out);

/* base64url without padding. encode: OUT size >= 4 * ceil(len / 3) + 1; returns length.
 * decode: returns decoded length or -1 on an invalid character or OUT too small. */
size_t b64url_encode(const unsigned char *in, size_t len, char *out);
long b64url_decode(const char *in, size_t len, unsigned char *out, size_t outsz);

/* Standard base64 ('+' '/'), '=' padded, as base64(1) decodes it. OUT size >=
 * 4 * ceil(len / 3) + 1; returns the length. */
size_t base64_encode(const unsigned char *in, size_t len, char *out);

/* Lenient base64 (protojson `bytes`): the standard or the URL-safe alphabet, '=' padding
 * optional. Returns the decoded length (at most len * 3 / 4), or -1 on an invalid character or
 * OUT too small. */
long base64_decode(const char *in, size_t len, unsigned char *out, size_t outsz);

/* Constant-time comparison: 0 when equal. */
int ct_memcmp(const void *a, const void *b, size_t len);

#endif
