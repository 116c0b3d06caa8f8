#include "crypto.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(struct sha256 *s, const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, h, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3];
	e = s->h[4], f = s->h[5], g = s->h[6], h = s->h[7];
	for (i = 0; i < 64; i++) {
		t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		h = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d;
	s->h[4] += e, s->h[5] += f, s->h[6] += g, s->h[7] += h;
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(s->h, iv, sizeof(iv));
	s->len = 0;
	s->fill = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->len += len;
	while (len) {
		size_t take = 64 - s->fill < len ? 64 - s->fill : len;
		memcpy(s->buf + s->fill, p, take);
		s->fill += take, p += take, len -= take;
		if (s->fill == 64) {
			sha256_block(s, s->buf);
			s->fill = 0;
		}
	}
}

void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN])
{
	uint64_t bits = s->len * 8;
	unsigned char pad = 0x80, zero = 0, lenbuf[8];
	int i;

	sha256_update(s, &pad, 1);
	while (s->fill != 56)
		sha256_update(s, &zero, 1);
	for (i = 0; i < 8; i++)
		lenbuf[i] = (unsigned char)(bits >> (56 - 8 * i));
	sha256_update(s, lenbuf, 8);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
}

void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

#define HMAC_BLOCK 64 /* SHA-256's block size (RFC 2104's B) */
#define HMAC_IPAD 0x36
#define HMAC_OPAD 0x5c

/* One of HMAC's two hashes: SHA-256 of (K xor PAD repeated) followed by DATA. */
static void hmac_pass(const unsigned char k[HMAC_BLOCK], unsigned char pad, const void *data,
		      size_t len, unsigned char out[SHA256_LEN])
{
	unsigned char block[HMAC_BLOCK];
	struct sha256 s;

	for (int i = 0; i < HMAC_BLOCK; i++)
		block[i] = k[i] ^ pad;
	sha256_init(&s);
	sha256_update(&s, block, HMAC_BLOCK);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 unsigned char out[SHA256_LEN])
{
	unsigned char k[HMAC_BLOCK] = { 0 }, inner[SHA256_LEN];

	if (keylen > HMAC_BLOCK)
		sha256(key, keylen, k);
	else
		memcpy(k, key, keylen);
	hmac_pass(k, HMAC_IPAD, data, len, inner);
	hmac_pass(k, HMAC_OPAD, inner, SHA256_LEN, out);
}

int random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n, len -= (size_t)n;
	}
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
		if (random_bytes(r, sizeof(r)))
			return -1;
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
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static const char b64std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The one encoder: the digits of ALPHABET, '=' padding to a multiple of 4 when PAD. */
static size_t b64_encode(const unsigned char *in, size_t len, char *out, const char *alphabet,
			 int pad)
{
	size_t o = 0, i;

	for (i = 0; i + 2 < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
		out[o++] = alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = alphabet[v >> 6 & 63];
	}
	while (pad && o % 4)
		out[o++] = '=';
	out[o] = '\0';
	return o;
}

size_t b64url_encode(const unsigned char *in, size_t len, char *out)
{
	return b64_encode(in, len, out, b64, 0);
}

size_t base64_encode(const unsigned char *in, size_t len, char *out)
{
	return b64_encode(in, len, out, b64std, 1);
}

static int b64val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

/* The one decoder. STRICT: base64url, unpadded, canonical. Otherwise standard base64 too
 * ('+' '/') and '=' padding at the end. */
static long b64_decode(const char *in, size_t len, unsigned char *out, size_t outsz, int strict)
{
	uint32_t acc = 0;
	size_t o = 0;
	int bits = 0;

	if (!strict)
		while (len && in[len - 1] == '=')
			len--;
	if (len % 4 == 1)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int v = b64val(in[i]);
		if (v < 0 && !strict)
			v = in[i] == '+' ? 62 : in[i] == '/' ? 63 : -1;
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o >= outsz)
				return -1;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	/* leftover bits must be zero so that each byte string has exactly one encoding */
	if (strict && (acc & ((1u << bits) - 1)))
		return -1;
	return (long)o;
}

long b64url_decode(const char *in, size_t len, unsigned char *out, size_t outsz)
{
	return b64_decode(in, len, out, outsz, 1);
}

long base64_decode(const char *in, size_t len, unsigned char *out, size_t outsz)
{
	return b64_decode(in, len, out, outsz, 0);
}

int ct_memcmp(const void *a, const void *b, size_t len)
{
	const unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d;
}
