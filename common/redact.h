/* Removing credentials from text that is stored or logged (install output in last_error). */
#ifndef TERRARIUM_REDACT_H
#define TERRARIUM_REDACT_H

#include <stddef.h>

#define REDACT_MASK "***"

/* Copy IN to OUT (size OUTSZ, always NUL-terminated, cut at OUTSZ - 1 on a UTF-8 boundary)
 * with credentials masked: URL userinfo ("https://user:pass@host" becomes "https://" REDACT_MASK
 * "@host"), values of secret-looking keys (any key containing "secret" or "token", or "pass" at the
 * start of one of its words: DB_PASS=, PASSWORD:, _authToken=, MY_SECRET_X=; api_key=, ...) and
 * bearer/basic authorization values. Returns the length written. */
size_t redact(const char *in, char *out, size_t outsz);

#endif
