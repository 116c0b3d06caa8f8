/* Removing credentials from text that is stored or logged (install output in last_error). */
#ifndef TERRARIUM_REDACT_H
#define TERRARIUM_REDACT_H

#include <stddef.h>

#define REDACT_MASK "***"

/* Copy IN to OUT (size OUTSZ, always NUL-terminated, cut at OUTSZ - 1 on a UTF-8 boundary)
 * with credentials masked: URL userinfo ("https://user:pass@host" becomes "https://" REDACT_MASK "@host"),
 * values of secret-looking keys (token=, password:, _authToken=, api_key=, secret=, ...) and
 * bearer/basic authorization values. Returns the length written. */
size_t redact(const char *in, char *out, size_t outsz);

#endif
