/* Shared by the libFuzzer targets (tests/fuzz/README.md). An invariant that does not hold is a
 * finding like a sanitizer report: FUZZ_CHECK prints what failed and aborts, and libFuzzer
 * saves the input as a crash artifact. */
#ifndef TERRARIUM_FUZZ_H
#define TERRARIUM_FUZZ_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../handlers/verr.h"

/* A credential that must never come out of redaction or an error message. */
#define FUZZ_MARKER "SECRETMARK"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline __attribute__((noreturn, format(printf, 4, 5))) void
fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\n%s:%d: invariant failed: %s\n  ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

#define FUZZ_CHECK(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                         \
	} while (0)

/* NUL-terminated copy of DATA[0..size) (malloc'd; embedded NULs stay, so strlen may be less). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* 1 when S[0..len) is well-formed UTF-8 (no overlongs, surrogates or code points > U+10FFFF). */
static inline int fuzz_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		unsigned c = *p, n, cp;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			n = 1, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			n = 2, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		if ((size_t)(end - p) <= n)
			return 0;
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xC0) != 0x80)
				return 0;
			cp = cp << 6 | (p[i] & 0x3F);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return 0;
		p += n + 1;
	}
	return 1;
}

/* 1 when MARKER occurs in an object key anywhere in V, or in a string value held under one
 * of the keys in ECHOED (NULL-terminated, may be NULL): the places an error message may quote. */
static inline int fuzz_marker_echoable(json_t *v, const char *marker, const char *const *echoed)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach (v, key, item) {
			if (strstr(key, marker))
				return 1;
			for (const char *const *e = echoed; e && *e; e++)
				if (!strcmp(*e, key) && json_is_string(item) &&
				    strstr(json_string_value(item), marker))
					return 1;
			if (fuzz_marker_echoable(item, marker, echoed))
				return 1;
		}
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, item)
			if (fuzz_marker_echoable(item, marker, echoed))
				return 1;
	}
	return 0;
}

/* The input as a JSON document the way the request layer parses bodies (duplicate keys
 * refused): a new reference, or NULL when it is not JSON. INIT runs once, before the first. */
static inline json_t *fuzz_json_input(const uint8_t *data, size_t size, void (*init)(void))
{
	static int ready;
	json_error_t jerr;

	if (!ready) {
		init();
		ready = 1;
	}
	return json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
}

/* The checks every validation error passes: status 400, or 422 when ALLOW_422; error_code
 * absent or invalid_metadata; a NUL-terminated UTF-8 message; the fuzzer's marker quoted only
 * where BODY has it under one of the ECHOED keys (user-supplied names), never as a value. */
static inline void fuzz_check_verr(const struct verr *err, json_t *body, const char *const *echoed,
				   int allow_422)
{
	FUZZ_CHECK(err->status == 400 || (err->status == 422 && allow_422), "status %d: %s",
		   err->status, err->msg);
	FUZZ_CHECK(!*err->code || !strcmp(err->code, "invalid_metadata"), "error_code '%s'",
		   err->code);
	FUZZ_CHECK(*err->msg && memchr(err->msg, '\0', sizeof(err->msg)), "message");
	FUZZ_CHECK(fuzz_utf8_valid(err->msg, strlen(err->msg)), "message is not UTF-8: %s",
		   err->msg);
	if (strstr(err->msg, FUZZ_MARKER))
		FUZZ_CHECK(fuzz_marker_echoable(body, FUZZ_MARKER, echoed),
			   "a value was quoted: %s", err->msg);
}

#endif
