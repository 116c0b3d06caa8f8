/* Helpers shared by the HTTP sandbox drivers: capturing command output with its tail kept (the
 * end is where an install says what went wrong), and joining argv into a POSIX shell command
 * line for services whose command API takes a string. */
#ifndef TERRARIUM_REMOTE_H
#define TERRARIUM_REMOTE_H

#include <stddef.h>

#include "process.h"

/* Output of one command: at most max bytes, the oldest dropped first. */
struct out_tail {
	char *buf;      /* owned; NUL-terminated once out_tail_finish ran */
	size_t len, max;
	int truncated;  /* bytes were dropped */
	int oom;
};

/* Start an empty capture keeping at most MAX bytes (MAX 0 keeps nothing). */
void out_tail_init(struct out_tail *t, size_t max);
/* Append N bytes of DATA, dropping the oldest bytes beyond the cap. */
void out_tail_put(struct out_tail *t, const char *data, size_t n);
/* Move the capture into RES (output, len, truncated); T is empty afterwards. */
void out_tail_finish(struct out_tail *t, struct proc_result *res);
void out_tail_release(struct out_tail *t);

/* Set RES to "could not run": exit_code -1, output = MSG (copied). */
void proc_result_fail(struct proc_result *res, const char *msg);

/* ARGV joined by spaces, each element quoted for a POSIX shell when it holds anything but
 * [A-Za-z0-9_./=:@%+,-] as sbx_quote_arg does it (quote.h); the empty string
 * becomes ''. A shell (sh -c, bash -c) parses the result back into exactly ARGV, with no
 * expansion of any kind. New string, caller frees; NULL when ARGV is empty or memory ran out. */
char *sh_join(char *const argv[]);

#endif
