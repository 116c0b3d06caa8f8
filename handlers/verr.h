/* A validation or request error on its way to the error envelope (docs/api.md §2). */
#ifndef TERRARIUM_VERR_H
#define TERRARIUM_VERR_H

#include <stddef.h>

#include <jansson.h>

#define VERR_MSG_MAX 1024
#define VERR_CODE_MAX 64

struct verr {
	int status;		  /* HTTP status: 400, 404, 409, 422 ... */
	char code[VERR_CODE_MAX]; /* error_code for details, "" when none applies */
	char msg[VERR_MSG_MAX];	  /* names the field, never echoes unsafe input */
};

/* Set ERR (status, error_code or NULL, printf-style message); returns -1 so callers can
 * `return verr_set(...)`. */
int verr_set(struct verr *err, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Append "; " + message to ERR->msg (used to name every metadata problem at once). */
void verr_append(struct verr *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* User-supplied text (a key, a name) echoed in a message: at most VERR_ECHO_CHARS code points. */
#define VERR_ECHO_CHARS 64
#define VERR_ECHO_BUF (VERR_ECHO_CHARS * 4 + 8) /* a buffer for verr_echo */

/* Copy at most MAX_CHARS (<= VERR_ECHO_CHARS) code points of S into BUF (VERR_ECHO_BUF bytes),
 * control bytes as '?', "..." appended when cut; returns BUF. Keeps messages bounded and
 * printable. */
const char *verr_echo(char *buf, const char *s, size_t max_chars);

/* 1 when S is one of LIST (NULL-terminated), else 0 (also when S is NULL). */
int verr_in_list(const char *s, const char *const *list);

/* 0 when every key of OBJ is in ALLOWED (NULL-terminated); else -1 with ERR a 400 naming the
 * first other key as PATH.key (PATH "" at the top level). */
int verr_check_fields(json_t *obj, const char *path, const char *const *allowed, struct verr *err);

#endif
