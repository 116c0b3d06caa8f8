/* Opaque list cursors: "<base64url payload>.<base64url HMAC-SHA256 tag>". The payload binds the
 * resource kind and the list's filter to the keyset position (created_at, id), so a forged,
 * altered or cross-filter cursor is detected. */
#ifndef TERRARIUM_CURSOR_H
#define TERRARIUM_CURSOR_H

#include <stddef.h>

#define CURSOR_MAX 512	  /* longest cursor accepted or produced */
#define CURSOR_TAG_LEN 16 /* bytes of the HMAC kept */
#define CURSOR_FIELD_MAX 128

enum cursor_status { CURSOR_OK = 0, CURSOR_FORGED = -1, CURSOR_OTHER_FILTER = -2 };

/* Encode into OUT (size >= CURSOR_MAX). 0, or -1 when the fields do not fit. */
int cursor_make(const unsigned char *key, size_t keylen, const char *kind, const char *filter,
		const char *created, const char *id, char *out);

/* Verify and decode IN; CREATED and ID receive the position (size CURSOR_FIELD_MAX each). */
enum cursor_status cursor_parse(const unsigned char *key, size_t keylen, const char *kind,
				const char *filter, const char *in, char *created, char *id);

#endif
