/* Hashing, MACs, random ids and the text encodings of binary values, over libsodium: SHA-256
 * (API key hashes, request hashes), HMAC-SHA256 (list cursors), the kernel CSPRNG (ids, keys,
 * jitter), hex, base64url. Only common/crypto.c includes sodium.h; this header takes only the
 * SHA-256 state type from libsodium, so that a streamed hash lives on the caller's stack.
 * libsodium is initialised once per process before main (sodium_init, from crypto.c), so every
 * program linking crypto.c may call these at any point, forked workers included. */
#ifndef TERRARIUM_CRYPTO_H
#define TERRARIUM_CRYPTO_H

#include <sodium/crypto_hash_sha256.h>
#include <stddef.h>

#define SHA256_LEN 32	 /* bytes of a SHA-256 digest and of an HMAC-SHA256 tag */
#define ID_RANDOM_LEN 24 /* characters of [0-9A-Za-z] after the prefix */

/* A SHA-256 computed in pieces: sha256_init, sha256_update..., sha256_final. */
struct sha256 {
	crypto_hash_sha256_state state;
};

void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);
void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);
/* HMAC-SHA256 (RFC 2104) with a key of any length. */
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 unsigned char out[SHA256_LEN]);

/* Fill BUF with LEN bytes from the kernel CSPRNG. Returns 0 (the int is kept for callers that
 * check; libsodium's generator cannot return short). */
int random_bytes(void *buf, size_t len);

/* Write PREFIX + N random [0-9A-Za-z] into OUT (size >= strlen(prefix) + n + 1). 0, or -1 when
 * OUT is too small. */
int random_id(char *out, size_t outsz, const char *prefix, size_t n);

/* Lower-case hex of LEN bytes into OUT (size >= 2 * len + 1). */
void hex_encode(const unsigned char *in, size_t len, char *out);

/* base64url without padding (RFC 4648 §5). encode: OUT size >= 4 * ceil(len / 3) + 1; returns
 * the length written. decode: canonical text only (the unused bits of the last character are
 * zero, so each byte string has one encoding); returns the decoded length, or -1 on an invalid
 * character or length, or OUT too small. */
size_t b64url_encode(const unsigned char *in, size_t len, char *out);
long b64url_decode(const char *in, size_t len, unsigned char *out, size_t outsz);

/* Standard base64 ('+' '/'), '=' padded, as base64(1) decodes it. OUT size >=
 * 4 * ceil(len / 3) + 1; returns the length. */
size_t base64_encode(const unsigned char *in, size_t len, char *out);

/* Lenient base64 (protojson `bytes`): the standard or the URL-safe alphabet (one of them per
 * text, as protojson reads it), '=' padding optional. Returns the decoded length (at most
 * len * 3 / 4), or -1 on an invalid character, a mix of the two alphabets, non-zero unused
 * bits, or OUT too small. */
long base64_decode(const char *in, size_t len, unsigned char *out, size_t outsz);

/* Constant-time comparison: 0 when equal. */
int ct_memcmp(const void *a, const void *b, size_t len);

#endif
