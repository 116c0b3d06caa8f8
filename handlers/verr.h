/* A validation or request error on its way to the error envelope (docs/api.md §2). */
#ifndef TERRARIUM_VERR_H
#define TERRARIUM_VERR_H

#define VERR_MSG_MAX 1024
#define VERR_CODE_MAX 64

struct verr {
	int status;                     /* HTTP status: 400, 404, 409, 422 ... */
	char code[VERR_CODE_MAX];       /* error_code for details, "" when none applies */
	char msg[VERR_MSG_MAX];         /* names the field, never echoes unsafe input */
};

/* Set ERR (status, error_code or NULL, printf-style message); returns -1 so callers can
 * `return verr_set(...)`. */
int verr_set(struct verr *err, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Append "; " + message to ERR->msg (used to name every metadata problem at once). */
void verr_append(struct verr *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
