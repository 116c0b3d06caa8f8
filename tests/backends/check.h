/* What the backend driver programs share (tests/backends/conformance.c, remote_extra.c): one
 * "ok"/"FAIL" line a check, the closing "N passed, N failed", and a protocol fake's JSON hooks
 * (tests/backends/fake-*.mjs). */
#ifndef TERRARIUM_TESTS_BACKENDS_CHECK_H
#define TERRARIUM_TESTS_BACKENDS_CHECK_H

#include <jansson.h>

struct config;

/* The command line "-c CONFIG [-OPT VALUE]": CONFIG into *CONFIG_FILE and loaded into CFG,
 * VALUE into *VALUE (left as it is when the option is not given, unless VALUE_REQUIRED).
 * 0, or 2 (the exit status) with the usage line or the configuration's error printed. */
int check_args(int argc, char **argv, int opt, const char *usage, int value_required,
	       const char **value, const char **config_file, struct config *cfg);

/* Print "ok   MESSAGE" or "FAIL MESSAGE" (FMT and its arguments) and count the check. */
void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "N passed, N failed"; the program's exit status (1 when any check failed). */
int check_summary(void);

/* METHOD PATH (a path, or a whole URL) on the fake at URL (http://HOST:PORT/...): its answer
 * parsed (new reference), or NULL (the failure printed) when it was not a 200 with JSON. */
json_t *fake_json(const char *url, const char *method, const char *path);

#endif
