/* Turning argv into one command line for sandbox services whose command API takes a string
 * and splits it themselves (Daytona's toolbox execute), in a form a POSIX shell reads back the
 * same way; remote.h's sh_join uses it for command lines run by a shell (OpenSandbox's execd). No
 * libcurl here: unit tests link this file alone. */
#ifndef TERRARIUM_QUOTE_H
#define TERRARIUM_QUOTE_H

#include <stddef.h>

/* Quote ARG for a command line and append it to OUT (NUL-terminated, *LEN bytes used so far,
 * updated). The element is wrapped in single quotes and every single quote inside it becomes
 * '"'"' (close, a double-quoted quote, reopen). That is exact POSIX shell quoting, and it is
 * also what Daytona's daemon tokenizer understands: it splits on spaces and toggles on ' and ",
 * with no backslash escapes, so the classic '\'' would leave a literal backslash there. An empty
 * ARG becomes '' (a POSIX shell keeps it; Daytona's tokenizer drops empty tokens, so that driver
 * refuses empty elements before quoting). 0, or -1 when it does not fit (OUT is then
 * unchanged past *LEN). */
int sbx_quote_arg(const char *arg, char *out, size_t outsz, size_t *len);

/* Quote every element of the NULL-terminated ARGV with sbx_quote_arg, joined by single spaces,
 * into OUT. 0, or -1 when it does not fit or ARGV is empty. */
int sbx_quote_argv(char *const argv[], char *out, size_t outsz);

#endif
