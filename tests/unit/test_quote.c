/* Unit tests of sandbox/quote.c: argv quoting, checked against a real POSIX shell
 * and against a port of Daytona's daemon tokenizer. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sandbox/quote.h"
#include "unit.h"

#define ARGS_MAX 16
#define LINE_MAX_ 4096

/* Port of parseCommand from daytonaio/daytona apps/daemon/pkg/toolbox/process/execute/execute.go
 * (POST /process/execute splits the command string with it and execs the parts, no shell):
 * ' and " toggle quoting (the other quote is literal inside), only ' ' separates outside quotes,
 * no escapes, empty tokens are dropped. Returns the number of tokens. */
static int daytona_parse(const char *cmd, char tok[ARGS_MAX][LINE_MAX_])
{
	int n = 0, in = 0;
	size_t len = 0;
	char q = 0;

	for (const char *p = cmd; *p; p++) {
		if (*p == '"' || *p == '\'') {
			if (!in) {
				in = 1;
				q = *p;
				continue;
			}
			if (q == *p) {
				in = 0;
				q = 0;
				continue;
			}
			tok[n][len++] = *p;
		} else if (*p == ' ' && !in) {
			if (len) {
				tok[n][len] = '\0';
				n++;
				len = 0;
			}
		} else {
			tok[n][len++] = *p;
		}
		assert_true(len < LINE_MAX_ - 1 && n < ARGS_MAX);
	}
	if (len) {
		tok[n][len] = '\0';
		n++;
	}
	return n;
}

/* Run LINE with /bin/sh -c "printf '%s\0' LINE" and split the NUL-separated words it prints. */
static int shell_parse(const char *line, char tok[ARGS_MAX][LINE_MAX_])
{
	char script[LINE_MAX_ * 2], buf[LINE_MAX_ * 2];
	size_t got;
	int n = 0;

	snprintf(script, sizeof(script), "printf '%%s\\0' %s", line);
	got = unit_sh(script, NULL, buf, sizeof(buf));
	for (size_t i = 0; i < got; n++) {
		size_t l = strlen(buf + i);
		assert_true(n < ARGS_MAX && l < LINE_MAX_);
		memcpy(tok[n], buf + i, l + 1);
		i += l + 1;
	}
	return n;
}

static void assert_roundtrip(const char *const argv[], int daytona)
{
	static char tok[ARGS_MAX][LINE_MAX_];
	char line[LINE_MAX_];
	int argc = 0, n;

	while (argv[argc])
		argc++;
	assert_int_equal(sbx_quote_argv((char *const *)argv, line, sizeof(line)), 0);
	n = shell_parse(line, tok);
	assert_int_equal(n, argc);
	for (int i = 0; i < argc; i++)
		assert_string_equal(tok[i], argv[i]);
	if (!daytona)
		return;
	n = daytona_parse(line, tok);
	assert_int_equal(n, argc);
	for (int i = 0; i < argc; i++)
		assert_string_equal(tok[i], argv[i]);
}

static void test_quote_exact(void **state)
{
	char out[256];
	size_t len = 0;
	const char *const simple[] = { "pip", "install", "requests==2.31", NULL };
	const char *const quotes[] = { "echo", "it's", "'", "a\"b", NULL };
	(void)state;

	assert_int_equal(sbx_quote_argv((char *const *)simple, out, sizeof(out)), 0);
	assert_string_equal(out, "'pip' 'install' 'requests==2.31'");
	assert_int_equal(sbx_quote_argv((char *const *)quotes, out, sizeof(out)), 0);
	assert_string_equal(out, "'echo' 'it'\"'\"'s' ''\"'\"'' 'a\"b'");
	assert_int_equal(sbx_quote_arg("", out, sizeof(out), &len), 0);
	assert_string_equal(out, "''");
}

static void test_quote_roundtrip_shell_and_daytona(void **state)
{
	const char *const a[] = { "printf", "%s\\n", "$HOME", "`id`", "a b  c", "x;y|z&", NULL };
	const char *const b[] = { "it's", "''", "\"'\"", "back\\slash", "*?[a]", "~user", NULL };
	const char *const c[] = { "new\nline", "tab\there", "ümlaut", "#comment", "a=b", NULL };
	const char *const d[] = { "", "empty before", NULL };
	(void)state;

	assert_roundtrip(a, 1);
	assert_roundtrip(b, 1);
	assert_roundtrip(c, 1);
	/* an empty element survives a shell, not Daytona's tokenizer (the driver refuses it) */
	assert_roundtrip(d, 0);
}

static void test_quote_limits(void **state)
{
	char out[16];
	size_t len = 0;
	const char *const fits[] = { "abcdefghijklm", NULL };  /* 15 quoted + NUL */
	const char *const over[] = { "abcdefghijklmn", NULL }; /* 16 + NUL */
	const char *const none[] = { NULL };
	(void)state;

	assert_int_equal(sbx_quote_argv((char *const *)fits, out, sizeof(out)), 0);
	assert_int_equal(strlen(out), 15);
	assert_int_equal(sbx_quote_argv((char *const *)over, out, sizeof(out)), -1);
	assert_int_equal(sbx_quote_argv((char *const *)none, out, sizeof(out)), -1);
	/* a failed append leaves what was there */
	strcpy(out, "'a' ");
	len = 4;
	assert_int_equal(sbx_quote_arg("0123456789abc", out, sizeof(out), &len), -1);
	assert_int_equal(len, 4);
	assert_string_equal(out, "'a' ");
}

UNIT_MAIN(cmocka_unit_test(test_quote_exact),
	  cmocka_unit_test(test_quote_roundtrip_shell_and_daytona),
	  cmocka_unit_test(test_quote_limits))
