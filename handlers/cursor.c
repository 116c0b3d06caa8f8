#include "cursor.h"

#include <stdio.h>
#include <string.h>

#include "../common/crypto.h"

#define CURSOR_PAYLOAD_MAX 320

int cursor_make(const unsigned char *key, size_t keylen, const char *kind, const char *filter,
		const char *created, const char *id, char *out)
{
	char payload[CURSOR_PAYLOAD_MAX];
	unsigned char tag[SHA256_LEN];
	int n = snprintf(payload, sizeof(payload), "%s|%s|%s|%s", kind, filter, created, id);
	size_t o;

	if (n < 0 || (size_t)n >= sizeof(payload) || (size_t)n * 4 / 3 + 32 >= CURSOR_MAX)
		return -1;
	hmac_sha256(key, keylen, payload, (size_t)n, tag);
	o = b64url_encode((const unsigned char *)payload, (size_t)n, out);
	out[o++] = '.';
	b64url_encode(tag, CURSOR_TAG_LEN, out + o);
	return 0;
}

enum cursor_status cursor_parse(const unsigned char *key, size_t keylen, const char *kind,
				const char *filter, const char *in, char *created, char *id)
{
	unsigned char payload[CURSOR_PAYLOAD_MAX], tag[CURSOR_TAG_LEN + 4], want[SHA256_LEN];
	const char *dot = strchr(in, '.');
	char *f[4];
	long n, t;
	int nf = 0;

	if (!dot || strlen(in) >= CURSOR_MAX)
		return CURSOR_FORGED;
	n = b64url_decode(in, (size_t)(dot - in), payload, sizeof(payload) - 1);
	t = b64url_decode(dot + 1, strlen(dot + 1), tag, sizeof(tag));
	if (n <= 0 || t != CURSOR_TAG_LEN)
		return CURSOR_FORGED;
	hmac_sha256(key, keylen, payload, (size_t)n, want);
	if (ct_memcmp(want, tag, CURSOR_TAG_LEN))
		return CURSOR_FORGED;
	payload[n] = '\0';
	if (memchr(payload, '\0', (size_t)n))
		return CURSOR_FORGED;
	f[nf++] = (char *)payload;
	for (char *p = (char *)payload; *p && nf < 4; p++)
		if (*p == '|') {
			*p = '\0';
			f[nf++] = p + 1;
		}
	if (nf != 4 || strcmp(f[0], kind))
		return CURSOR_FORGED;
	if (strcmp(f[1], filter))
		return CURSOR_OTHER_FILTER;
	if (strlen(f[2]) >= CURSOR_FIELD_MAX || strlen(f[3]) >= CURSOR_FIELD_MAX)
		return CURSOR_FORGED;
	strcpy(created, f[2]);
	strcpy(id, f[3]);
	return CURSOR_OK;
}
