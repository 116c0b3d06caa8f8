/* Unit tests of the reconciler's pure parts: secret redaction (common/redact.c), retry backoff
 (reconciler/provision.c), running a child process (backends/process.c) and
 * sandbox directories (backends/dir.c). No database is contacted. Temporary files live under
 * /tmp/terrarium-ut-* and are removed by each test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../common/clock.h"
#include "../../common/redact.h"
#include "../../sandbox/backend.h"
#include "../../sandbox/process.h"
#include "../../reconciler/recon.h"
#include "unit.h"

#define UT_TMP_TEMPLATE "/tmp/terrarium-ut-XXXXXX"
#define UT_REDACT_BUF 1024
#define UT_OUT_MAX 65536

/* snprintf that must fit */
#define FMT(buf, ...) assert_true(snprintf((buf), sizeof(buf), __VA_ARGS__) < (int)sizeof(buf))

/* ---------------------------------------------------------------- helpers */

static char *make_tmpdir(void)
{
	char *dir = strdup(UT_TMP_TEMPLATE);
	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR) {
		chmod(path, 0700);
		return rmdir(path) && errno != ENOENT ? -1 : 0;
	}
	return unlink(path) && errno != ENOENT ? -1 : 0;
}

/* Remove DIR (never following symlinks) and free it. */
static void remove_tmpdir(char *dir)
{
	assert_int_equal(strncmp(dir, "/tmp/terrarium-ut-", 18), 0);
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* A temporary directory for one test, removed even when the test fails. */
static int tmp_setup(void **state)
{
	*state = make_tmpdir();
	return 0;
}

static int tmp_teardown(void **state)
{
	remove_tmpdir(*state);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int exists(const char *path)
{
	struct stat st;
	return !lstat(path, &st);
}

/* ---------------------------------------------------------------- redact */

/* Largest char boundary of S at or below N. */
static size_t utf8_boundary(const char *s, size_t n)
{
	size_t len = strlen(s);
	if (n >= len)
		return len;
	while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* redact(IN) is EXPECT; and with every smaller buffer it is EXPECT's prefix cut on a
 * char boundary, NUL-terminated, with the right length. */
static void check_redact(const char *in, const char *expect)
{
	char out[UT_REDACT_BUF];
	size_t n = redact(in, out, sizeof(out)), full = strlen(expect);

	if (strcmp(out, expect))
		fail_msg("redact(\"%s\") = \"%s\", expected \"%s\"", in, out, expect);
	assert_int_equal(n, full);
	for (size_t sz = 1; sz <= full + 1; sz++) {
		char *small = malloc(sz + 1);
		size_t want = utf8_boundary(expect, sz - 1);
		assert_non_null(small);
		small[sz] = 'Z'; /* canary just past the buffer */
		n = redact(in, small, sz);
		assert_int_equal(small[sz], 'Z');
		if (n != want || strlen(small) != want || memcmp(small, expect, want))
			fail_msg("redact(\"%s\", outsz %zu) = \"%s\" (%zu), expected %zu bytes of "
				 "\"%s\"",
				 in, sz, small, n, want, expect);
		free(small);
	}
}

static void test_redact_url_userinfo(void **state)
{
	(void)state;
	check_redact("https://user:pass@host/x", "https://***@host/x");
	check_redact("git+https://tok@github.com/a/b", "git+https://***@github.com/a/b");
	check_redact("fetching https://u:p%40ss@example.org/simple/ failed",
		     "fetching https://***@example.org/simple/ failed");
	/* the last '@' ends the userinfo */
	check_redact("http://a:b@c@host:8080/p", "http://***@host:8080/p");
	check_redact("\"https://x:y@h\"", "\"https://***@h\"");
	check_redact("url 'https://k@h/a' and https://h2/b@c",
		     "url 'https://***@h/a' and https://h2/b@c");
	/* no userinfo: unchanged */
	check_redact("https://registry.npmjs.org/left-pad", "https://registry.npmjs.org/left-pad");
	check_redact("https://", "https://");
	check_redact("x://@h", "x://***@h");
}

static void test_redact_secret_keys(void **state)
{
	(void)state;
	check_redact("token=abc", "token=***");
	check_redact("TOKEN=abc def", "TOKEN=*** def");
	check_redact("{\"password\": \"x\"}", "{\"password\": \"***\"}");
	check_redact("{\"password\":\"x\",\"user\":\"u\"}",
		     "{\"password\":\"***\",\"user\":\"u\"}");
	check_redact("//registry.npmjs.org/:_authToken=npm_xyz",
		     "//registry.npmjs.org/:_authToken=***");
	check_redact("_authToken=npm_xyz", "_authToken=***");
	check_redact("NPM_TOKEN=npm_abc123 npm install", "NPM_TOKEN=*** npm install");
	check_redact("GITHUB_TOKEN=ghp_1\nnext", "GITHUB_TOKEN=***\nnext");
	check_redact("api_key: k", "api_key: ***");
	check_redact("x-api-key: k1", "x-api-key: ***");
	check_redact("apikey='k'", "apikey='***'");
	check_redact("secret=", "secret=");
	check_redact("secret=s3cr3t", "secret=***");
	check_redact("client_secret=a&next=1", "client_secret=***&next=1");
	check_redact("?access_token=abc;x", "?access_token=***;x");
	check_redact("passwd:p", "passwd:***");
	check_redact("aws_access_key=AKIA", "aws_access_key=***");
	check_redact("private_key=-----BEGIN", "private_key=***");
	check_redact("credential=c}", "credential=***}");
	check_redact("password=a token=b", "password=*** token=***");
	/* a URL as the value of a secret key is masked whole */
	check_redact("token=https://u:p@h/x", "token=***");
}

static void test_redact_authorization(void **state)
{
	(void)state;
	check_redact("Authorization: Bearer xyz", "Authorization: Bearer ***");
	check_redact("authorization: bearer xyz.abc-def\r\n", "authorization: bearer ***\r\n");
	check_redact("Authorization: Basic xyz", "Authorization: Basic ***");
	/* outside an Authorization header only token-like values (8+ characters) are masked */
	check_redact("Basic eHl6OnBhc3M=", "Basic ***");
	check_redact("Bearer xyz12345", "Bearer ***");
	check_redact("a basic test of bearer names", "a basic test of bearer names");
	check_redact("Authorization: token ghp_abc", "Authorization: token ***");
	check_redact("-H 'Authorization: Bearer sk-ant-1' -d", "-H 'Authorization: Bearer ***' -d");
	check_redact("Bearer ", "Bearer ");
	/* inside a word it is not a scheme */
	check_redact("xbearer abc", "xbearer abc");
	check_redact("Bearerx abc", "Bearerx abc");
	/* found by tests/fuzz (fuzz_redact): any *authorization header is one; only a known scheme
	 * is shown; an unquoted header runs to the end of the line; a value that is itself a
	 * secret key ("token= password: x") does not hide the value after it */
	check_redact("Proxy-Authorization: Bearer abc123", "Proxy-Authorization: Bearer ***");
	check_redact("authorization: sk-ant-1 and more", "authorization: ***");
	check_redact("curl -H 'Authorization: s3cr3t' -d x", "curl -H 'Authorization: ***' -d x");
	check_redact("Authorization: x private_key: 'k'", "Authorization: ***");
	check_redact("api_key: Bearer abc123", "api_key: ***");
	check_redact("token= password: hunter2", "token= ***: ***");
	check_redact("Basic password: hunter2", "Basic ***: ***");
}

static void test_redact_plain_text_unchanged(void **state)
{
	static const char *const texts[] = {
		"Collecting requests==2.31.0\n"
		"  Downloading https://files.pythonhosted.org/packages/70/8e/"
		"requests-2.31.0-py3-none-any.whl (62 kB)\n",
		"npm ERR! code E404\nnpm ERR! 404 Not Found - GET "
		"https://registry.npmjs.org/nope\n",
		"error[E0425]: cannot find value `x` in this scope\n  --> src/main.rs:3:5\n",
		"key=value a:b time: 12ms max_tokens=5 tokens: 3 tokenizer=x author: me\n",
		"E: Unable to locate package nosuch\t(exit 100)",
		"ünïcödé ✓ 😀 — κόσμε 日本語",
		"a:b=c::d==e ://",
		"x=\"\" y='' z=, :",
	};
	static const char binary[] = "\x01\x7f\xff\xfe\x80 not UTF-8";
	char out[64];
	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		check_redact(texts[i], texts[i]);
	/* invalid UTF-8 passes through when it fits (only cuts are checked for sequences) */
	assert_int_equal(redact(binary, out, sizeof(out)), strlen(binary));
	assert_string_equal(out, binary);
}

static void test_redact_truncation_utf8(void **state)
{
	char out[16];
	(void)state;
	/* the cut falls inside a 2-, 3- and 4-byte sequence: the whole sequence goes */
	assert_int_equal(redact("abcé", out, 5), 3); /* room for "abc" + 0xC3 */
	assert_string_equal(out, "abc");
	assert_int_equal(redact("abc€", out, 5), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(redact("abc€", out, 6), 3); /* "abc" + 0xE2 0x82 */
	assert_string_equal(out, "abc");
	assert_int_equal(redact("abc€", out, 7), 6);
	assert_string_equal(out, "abc€");
	assert_int_equal(redact("ab😀x", out, 6), 2); /* "ab" + 3 of 4 bytes */
	assert_string_equal(out, "ab");
	assert_int_equal(redact("ab😀x", out, 7), 6);
	assert_string_equal(out, "ab😀");
	/* every cut of mixed text (check_redact tries all buffer sizes) */
	check_redact("é€😀aé😀€b", "é€😀aé😀€b");
	check_redact("password=é€ ü https://ü:€@h/😀", "password=*** ü https://***@h/😀");
	/* a cut inside the mask still shows no secret */
	assert_int_equal(redact("token=abcdef", out, 9), 8);
	assert_string_equal(out, "token=**");
}

static void test_redact_tiny_buffers(void **state)
{
	char out[4] = "zzz";
	(void)state;
	assert_int_equal(redact("abc", out, 0), 0);
	assert_string_equal(out, "zzz"); /* outsz 0 writes nothing */
	assert_int_equal(redact("abc", out, 1), 0);
	assert_string_equal(out, "");
	assert_int_equal(redact("abc", out, 2), 1);
	assert_string_equal(out, "a");
	assert_int_equal(redact("é", out, 2), 0);
	assert_string_equal(out, "");
	assert_int_equal(redact("é", out, 3), 2);
	assert_string_equal(out, "é");
	assert_int_equal(redact("https://u@h", out, 2), 1);
	assert_string_equal(out, "h");
}

static void test_redact_empty(void **state)
{
	char out[8] = "zzz";
	(void)state;
	assert_int_equal(redact("", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	assert_int_equal(redact("", out, 1), 0);
	assert_string_equal(out, "");
}

/* ---------------------------------------------------------------- backoff */

static struct config backoff_cfg(long base, long cap)
{
	struct config c;
	memset(&c, 0, sizeof(c));
	c.backoff_base_s = base;
	c.backoff_cap_s = cap;
	return c;
}

static void test_backoff_growth_and_cap(void **state)
{
	struct config c = backoff_cfg(10, 900);
	static const long expect[] = { 10, 10, 20, 40, 80, 160, 320, 640, 900, 900, 900 };
	(void)state;
	for (long long n = 0; n < (long long)(sizeof(expect) / sizeof(expect[0])); n++)
		assert_int_equal(recon_backoff(&c, n, 0.5), expect[n]);
	assert_int_equal(recon_backoff(&c, 1000, 0.5), 900);
	assert_int_equal(recon_backoff(&c, LLONG_MAX, 0.5), 900);
	/* defaults */
	c = backoff_cfg(CONFIG_DEFAULT_BACKOFF_BASE_S, CONFIG_DEFAULT_BACKOFF_CAP_S);
	assert_int_equal(recon_backoff(&c, 3, 0.5), CONFIG_DEFAULT_BACKOFF_BASE_S * 4);
	/* cap below base: the cap */
	c = backoff_cfg(100, 30);
	assert_int_equal(recon_backoff(&c, 1, 0.5), 30);
	/* cap 0: no wait */
	c = backoff_cfg(10, 0);
	assert_int_equal(recon_backoff(&c, 5, 1.0), 0);
	/* the largest configurable values */
	c = backoff_cfg(86400, 7 * 86400);
	assert_int_equal(recon_backoff(&c, 1000, 0.5), 7 * 86400);
	assert_int_equal(recon_backoff(&c, 1000, 1.0), (long)(7 * 86400 * 1.2 + 0.5));
}

static void test_backoff_attempts_zero_and_one(void **state)
{
	struct config c = backoff_cfg(7, 900);
	(void)state;
	assert_int_equal(recon_backoff(&c, 0, 0.5), 7);
	assert_int_equal(recon_backoff(&c, 1, 0.5), 7);
	assert_int_equal(recon_backoff(&c, -3, 0.5), 7);
	assert_int_equal(recon_backoff(&c, 2, 0.5), 14);
}

static void test_backoff_jitter_bounds(void **state)
{
	struct config c = backoff_cfg(10, 900);
	(void)state;
	/* jitter 0 is -20 %, 1 is +20 % */
	assert_int_equal(recon_backoff(&c, 1, 0.0), 8);
	assert_int_equal(recon_backoff(&c, 1, 1.0), 12);
	assert_int_equal(recon_backoff(&c, 4, 0.0), 64);
	assert_int_equal(recon_backoff(&c, 4, 1.0), 96);
	assert_int_equal(recon_backoff(&c, 20, 0.0), 720);
	assert_int_equal(recon_backoff(&c, 20, 1.0), 1080);
	/* in between: inside the bounds, non-decreasing in the draw */
	for (long long n = 1; n <= 12; n++) {
		long mid = recon_backoff(&c, n, 0.5), prev = 0;
		for (int i = 0; i <= 100; i++) {
			long d = recon_backoff(&c, n, i / 100.0);
			assert_in_range(d, (long)(mid * 0.8 + 0.5) - 1,
					(long)(mid * 1.2 + 0.5) + 1);
			assert_true(d >= prev);
			prev = d;
		}
	}
}

static void test_backoff_base_zero(void **state)
{
	struct config c = backoff_cfg(0, 900);
	(void)state;
	for (long long n = 0; n <= 1000; n++) {
		assert_int_equal(recon_backoff(&c, n, 0.0), 0);
		assert_int_equal(recon_backoff(&c, n, 1.0), 0);
	}
}

/* ---------------------------------------------------------------- proc_run */

static struct proc_result run_sh(const char *script, const char *cwd, long timeout_s,
				 size_t out_max)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)script, NULL };
	char *envp[] = { (char *)"PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	struct proc_result res;
	assert_int_equal(proc_run(argv, cwd, envp, -1, timeout_s, out_max, NULL, &res), 0);
	assert_non_null(res.output);
	assert_int_equal(strlen(res.output), res.len);
	return res;
}

static void test_proc_exit_code(void **state)
{
	struct proc_result res;
	(void)state;
	res = run_sh("exit 0", NULL, 10, UT_OUT_MAX);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.timed_out, 0);
	assert_int_equal(res.truncated, 0);
	assert_int_equal(res.len, 0);
	proc_result_release(&res);
	res = run_sh("exit 3", NULL, 10, UT_OUT_MAX);
	assert_int_equal(res.exit_code, 3);
	proc_result_release(&res);
	res = run_sh("exit 255", NULL, 10, UT_OUT_MAX);
	assert_int_equal(res.exit_code, 255);
	proc_result_release(&res);
	/* killed by a signal: 128 + signal */
	res = run_sh("kill -9 $$", NULL, 10, UT_OUT_MAX);
	assert_int_equal(res.exit_code, 128 + SIGKILL);
	assert_int_equal(res.timed_out, 0);
	proc_result_release(&res);
	/* stdin is /dev/null: cat ends at once */
	res = run_sh("cat; echo done", NULL, 10, UT_OUT_MAX);
	assert_string_equal(res.output, "done\n");
	proc_result_release(&res);
}

static void test_proc_output_captured(void **state)
{
	struct proc_result res;
	(void)state;
	res = run_sh("echo out; echo err >&2; printf 'no newline'", NULL, 10, UT_OUT_MAX);
	assert_string_equal(res.output, "out\nerr\nno newline");
	assert_int_equal(res.len, 18);
	assert_int_equal(res.truncated, 0);
	assert_int_equal(res.exit_code, 0);
	proc_result_release(&res);
	/* exactly the cap, in small writes: kept whole */
	res = run_sh("printf ab; printf cd >&2", NULL, 10, 4);
	assert_string_equal(res.output, "abcd");
	proc_result_release(&res);
}

static void test_proc_output_tail(void **state)
{
	struct proc_result res;
	char expect[128] = "";
	(void)state;
	/* many small writes: 1000 lines of 5 bytes, the last 100 bytes kept */
	res = run_sh("i=0; while [ $i -lt 1000 ]; do printf '%04d\\n' $i; i=$((i+1)); done; exit 4",
		     NULL, 10, 100);
	for (int i = 980; i < 1000; i++)
		snprintf(expect + strlen(expect), sizeof(expect) - strlen(expect), "%04d\n", i);
	assert_string_equal(res.output, expect);
	assert_int_equal(res.len, 100);
	assert_int_equal(res.truncated, 1);
	assert_int_equal(res.exit_code, 4);
	proc_result_release(&res);
	/* big writes (each read larger than the cap) */
	res = run_sh("head -c 50000 /dev/zero | tr '\\0' x; printf TAIL", NULL, 10, 64);
	assert_int_equal(res.len, 64);
	assert_int_equal(res.truncated, 1);
	assert_int_equal(strncmp(res.output + 60, "TAIL", 4), 0);
	assert_int_equal(strspn(res.output, "x"), 60);
	proc_result_release(&res);
	/* both streams count toward the tail */
	res = run_sh("head -c 10000 /dev/zero | tr '\\0' o; echo ERR-LAST >&2", NULL, 10, 32);
	assert_int_equal(res.len, 32);
	assert_string_equal(res.output + 23, "ERR-LAST\n");
	proc_result_release(&res);
}

/* Is PID gone (no such process, or a zombie nobody reaped), within WAIT_MS? */
static int pid_gone(pid_t pid, int wait_ms)
{
	char path[64], buf[512];
	for (int waited = 0;; waited += 20) {
		FILE *f;
		char *rp;
		if (kill(pid, 0) && errno == ESRCH)
			return 1;
		FMT(path, "/proc/%d/stat", (int)pid);
		f = fopen(path, "r");
		if (!f)
			return 1;
		rp = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
		fclose(f);
		if (rp && (rp[2] == 'Z' || rp[2] == 'X'))
			return 1;
		if (waited >= wait_ms)
			return 0;
		usleep(20000);
	}
}

static pid_t read_pid(const char *path)
{
	FILE *f = fopen(path, "r");
	int pid = 0;
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	assert_true(pid > 1);
	return (pid_t)pid;
}

/* The process whose pid PIDFILE holds is gone within a second; if not, it is killed and the
 * test fails naming it as WHAT. */
static void assert_pid_gone(const char *pidfile, const char *what)
{
	pid_t pid = read_pid(pidfile);

	if (!pid_gone(pid, 1000)) {
		kill(pid, SIGKILL);
		fail_msg("%s %d survived", what, (int)pid);
	}
}

#define UT_ANY_EXIT (-1000) /* expect_child_run: the exit status is not checked */

/* run_sh of "BEFORE & echo $! > PIDFILE; AFTER" (a command leaving a background child, CHILD,
 * whose pid PIDFILE then holds) with the time limit TIMEOUT_S: it must take under MAX_S seconds
 * (and at least MIN_S unless 0), be timed out or not (TIMED_OUT), exit with EXIT_CODE (unless
 * UT_ANY_EXIT), print OUTPUT (unless NULL), and leave the child gone. */
static void expect_child_run(const char *pidfile, const char *before, const char *after,
			     long timeout_s, double min_s, double max_s, int timed_out,
			     int exit_code, const char *output, const char *child)
{
	char script[512];
	struct proc_result res;
	double t0, took;

	FMT(script, "%s & echo $! > %s; %s", before, pidfile, after);
	t0 = clock_mono_s();
	res = run_sh(script, NULL, timeout_s, UT_OUT_MAX);
	took = clock_mono_s() - t0;
	assert_true(took < max_s);
	if (min_s > 0)
		assert_true(took >= min_s);
	assert_int_equal(res.timed_out, timed_out);
	if (output)
		assert_string_equal(res.output, output);
	if (exit_code != UT_ANY_EXIT)
		assert_int_equal(res.exit_code, exit_code);
	assert_pid_gone(pidfile, child);
	proc_result_release(&res);
}

/* A command that runs past its limit with a background grandchild: the call returns near the
 * limit and the whole process group is gone. */
static void test_proc_timeout_kills_group(void **state)
{
	char *dir = *state, pidfile[256];
	FMT(pidfile, "%s/pid", dir);
	expect_child_run(pidfile, "sleep 30", "echo started; wait", 1, 0.9, 2.5, 1, 128 + SIGTERM,
			 "started\n", "grandchild");
}

/* SIGTERM ignored by the whole group: SIGKILL after the grace period (2 s). */
static void test_proc_timeout_term_ignored(void **state)
{
	char *dir = *state, pidfile[256];
	FMT(pidfile, "%s/pid", dir);
	expect_child_run(pidfile, "trap '' TERM; sleep 30", "wait", 1, 2.9, 4.5, 1, 128 + SIGKILL,
			 NULL, "grandchild");
}

/* The command exits but leaves a child in its group: that child goes too, and does not delay
 * the call, whether or not it holds the output pipe (the command is done when it exits). */
static void test_proc_leftover_children_killed(void **state)
{
	char *dir = *state, pidfile[256];
	FMT(pidfile, "%s/pid", dir);
	expect_child_run(pidfile, "sleep 30 >/dev/null 2>&1", "exit 0", 5, 0, 1.0, 0, 0, NULL,
			 "leftover child");
	expect_child_run(pidfile, "sleep 30", "echo done; exit 3", 5, 0, 1.0, 0, 3, "done\n",
			 "leftover child");
}

/* A command that closes its output and runs on past its limit is still killed at the limit (the
 * end of its output is not its end); one that closes it and exits in time is waited for and
 * keeps its exit status. */
static void test_proc_timeout_after_output_closed(void **state)
{
	struct proc_result res;
	double t0 = clock_mono_s(), took;
	(void)state;
	res = run_sh("echo closing; exec >&- 2>&-; sleep 8", NULL, 1, UT_OUT_MAX);
	took = clock_mono_s() - t0;
	assert_true(took < 2.5);
	assert_int_equal(res.timed_out, 1);
	assert_int_equal(res.exit_code, 128 + SIGTERM);
	assert_string_equal(res.output, "closing\n");
	proc_result_release(&res);
	res = run_sh("exec >&- 2>&-; sleep 0.3; exit 7", NULL, 10, UT_OUT_MAX);
	assert_int_equal(res.timed_out, 0);
	assert_int_equal(res.exit_code, 7);
	proc_result_release(&res);
}

static void test_proc_command_not_found(void **state)
{
	char *argv[] = { (char *)"terrarium-no-such-command", (char *)"x", NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	char *abs[] = { (char *)"/nonexistent/terrarium-tool", NULL };
	struct proc_result res;
	(void)state;
	assert_int_equal(proc_run(argv, NULL, envp, -1, 10, UT_OUT_MAX, NULL, &res), 0);
	assert_int_equal(res.exit_code, 127);
	assert_int_equal(res.timed_out, 0);
	assert_non_null(strstr(res.output, "cannot run terrarium-no-such-command"));
	proc_result_release(&res);
	assert_int_equal(proc_run(abs, NULL, envp, -1, 10, UT_OUT_MAX, NULL, &res), 0);
	assert_int_equal(res.exit_code, 127);
	assert_non_null(strstr(res.output, "/nonexistent/terrarium-tool"));
	proc_result_release(&res);
}

static void test_proc_cwd(void **state)
{
	char *dir = *state, expect[PATH_MAX + 2], missing[PATH_MAX];
	struct proc_result res;
	FMT(expect, "%s\n", dir);
	res = run_sh("pwd -P", dir, 10, UT_OUT_MAX);
	assert_string_equal(res.output, expect);
	assert_int_equal(res.exit_code, 0);
	proc_result_release(&res);
	/* a working directory that is not there: 126 and why */
	FMT(missing, "%s/missing", dir);
	res = run_sh("pwd", missing, 10, UT_OUT_MAX);
	assert_int_equal(res.exit_code, 126);
	assert_non_null(strstr(res.output, "cannot enter"));
	proc_result_release(&res);
}

static void test_proc_environment_is_envp(void **state)
{
	char *argv[] = { (char *)"/usr/bin/env", NULL };
	char *envp[] = { (char *)"A=1", (char *)"B=two words", (char *)"EMPTY=", NULL };
	char *none[] = { NULL };
	struct proc_result res;
	(void)state;
	setenv("TERRARIUM_UT_LEAK", "must-not-pass", 1);
	assert_int_equal(proc_run(argv, NULL, envp, -1, 10, UT_OUT_MAX, NULL, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.output, "A=1\nB=two words\nEMPTY=\n");
	proc_result_release(&res);
	assert_int_equal(proc_run(argv, NULL, none, -1, 10, UT_OUT_MAX, NULL, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.output, "");
	proc_result_release(&res);
	unsetenv("TERRARIUM_UT_LEAK");
}

/* Bytes given as stdin reach the command whole, larger than a pipe holds and with a NUL; the
 * command sees end of file after them; without them it reads /dev/null, never our stdin. */
static void test_proc_stdin(void **state)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"wc -c; cat >/dev/null", NULL };
	char *cat[] = { (char *)"cat", NULL };
	char *envp[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	size_t big = 300000;
	char *data = malloc(big);
	struct proc_result res;
	int in;
	(void)state;
	assert_non_null(data);
	memset(data, 'x', big);
	data[1000] = '\0';
	in = proc_stdin(data, big);
	assert_true(in >= 0);
	assert_int_equal(proc_run(argv, NULL, envp, in, 10, UT_OUT_MAX, NULL, &res), 0);
	close(in);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(atol(res.output), (long)big);
	proc_result_release(&res);
	in = proc_stdin("a\0b", 3);
	assert_int_equal(proc_run(cat, NULL, envp, in, 10, UT_OUT_MAX, NULL, &res), 0);
	close(in);
	assert_int_equal(res.len, 3);
	assert_memory_equal(res.output, "a\0b", 3);
	proc_result_release(&res);
	assert_int_equal(proc_run(cat, NULL, envp, -1, 10, UT_OUT_MAX, NULL, &res), 0);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.len, 0);
	proc_result_release(&res);
	free(data);
}

/* ---------------------------------------------------------------- sandbox directories */

struct dir_fixture {
	char *tmp; /* holds root/ and outside/ */
	struct sbx s;
	char outside[PATH_MAX];
};

static int dir_setup(void **state)
{
	struct dir_fixture *f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	f->tmp = make_tmpdir();
	FMT(f->s.root, "%s/root", f->tmp);
	FMT(f->outside, "%s/outside", f->tmp);
	if (mkdir(f->s.root, 0700) || mkdir(f->outside, 0700))
		return -1;
	*state = f;
	return 0;
}

static int dir_teardown(void **state)
{
	struct dir_fixture *f = *state;
	remove_tmpdir(f->tmp);
	free(f);
	return 0;
}

static void test_dir_create_idempotent(void **state)
{
	struct dir_fixture *f = *state;
	char id[SBX_ID_MAX], err[SBX_ERR_MAX], path[PATH_MAX], file[PATH_MAX + 16];
	struct stat st;

	assert_int_equal(sbx_dir_create(&f->s, "sesn_01ABC-x", id, sizeof(id), err, sizeof(err)),
			 0);
	assert_string_equal(id, "sesn_01ABC-x");
	assert_int_equal(sbx_dir_path(&f->s, id, path, sizeof(path)), 0);
	assert_int_equal(strncmp(path, f->s.root, strlen(f->s.root)), 0);
	assert_string_equal(path + strlen(f->s.root), "/sesn_01ABC-x");
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	/* a second create attaches: same id, content kept */
	FMT(file, "%s/kept", path);
	write_file(file, "x");
	memset(id, 0, sizeof(id));
	assert_int_equal(sbx_dir_create(&f->s, "sesn_01ABC-x", id, sizeof(id), err, sizeof(err)),
			 0);
	assert_string_equal(id, "sesn_01ABC-x");
	assert_true(exists(file));
	/* an id buffer too small is refused, not cut */
	assert_int_equal(sbx_dir_create(&f->s, "sesn_01ABC-x", id, 12, err, sizeof(err)), -1);
	/* a path buffer too small is refused */
	assert_int_equal(sbx_dir_path(&f->s, "sesn_01ABC-x", path, strlen(f->s.root) + 2), -1);
}

static void test_dir_create_bad_names(void **state)
{
	static const char *const bad[] = { "",	  "/",	 "a/b", "..",  ".",    "../x", "../../etc",
					   "a b", "x\n", "é",	"a.b", "/abs", NULL };
	struct dir_fixture *f = *state;
	char id[SBX_ID_MAX], err[SBX_ERR_MAX], path[PATH_MAX];
	for (int i = 0; bad[i]; i++) {
		err[0] = '\0';
		if (sbx_dir_create(&f->s, bad[i], id, sizeof(id), err, sizeof(err)) != -1)
			fail_msg("name \"%s\" accepted", bad[i]);
		assert_string_equal(err, "invalid sandbox name");
		assert_int_equal(sbx_dir_path(&f->s, bad[i], path, sizeof(path)), -1);
		err[0] = '\0';
		assert_int_equal(sbx_dir_destroy(&f->s, bad[i], err, sizeof(err)), -1);
		assert_string_equal(err, "invalid sandbox id");
	}
	/* nothing was made next to the root or outside it */
	FMT(path, "%s/x", f->tmp);
	assert_false(exists(path));
	assert_true(exists(f->outside));
}

static void test_dir_create_missing_root(void **state)
{
	struct dir_fixture *f = *state;
	struct sbx s = f->s;
	char id[SBX_ID_MAX], err[SBX_ERR_MAX];
	FMT(s.root, "%s/no/such/root", f->tmp);
	assert_int_equal(sbx_dir_create(&s, "sesn_1", id, sizeof(id), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "mkdir"));
}

static void test_dir_destroy_missing(void **state)
{
	struct dir_fixture *f = *state;
	char err[SBX_ERR_MAX];
	assert_int_equal(sbx_dir_destroy(&f->s, "sesn_never_created", err, sizeof(err)), 0);
}

static void mkpath(const char *base, const char *rel)
{
	char p[PATH_MAX];
	FMT(p, "%s/%s", base, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void mkfile(const char *base, const char *rel)
{
	char p[PATH_MAX];
	FMT(p, "%s/%s", base, rel);
	write_file(p, rel);
}

static void test_dir_destroy_nested_not_following_symlinks(void **state)
{
	struct dir_fixture *f = *state;
	char id[SBX_ID_MAX], err[SBX_ERR_MAX], path[PATH_MAX], link[PATH_MAX + 32];
	char keep[PATH_MAX + 32];

	mkfile(f->outside, "precious");
	mkpath(f->outside, "sub");
	mkfile(f->outside, "sub/also");
	assert_int_equal(sbx_dir_create(&f->s, "sesn_nested", id, sizeof(id), err, sizeof(err)), 0);
	assert_int_equal(sbx_dir_path(&f->s, id, path, sizeof(path)), 0);
	mkpath(path, "a");
	mkpath(path, "a/b");
	mkpath(path, "a/b/c");
	mkpath(path, ".hidden");
	mkfile(path, "a/b/c/deep");
	mkfile(path, "a/file");
	mkfile(path, ".hidden/.dot");
	mkpath(path, "emptydir");
	/* links out of the sandbox: to a directory, to a file, dangling, and a loop */
	FMT(link, "%s/a/out", path);
	assert_int_equal(symlink(f->outside, link), 0);
	FMT(link, "%s/a/b/outfile", path);
	FMT(keep, "%s/precious", f->outside);
	assert_int_equal(symlink(keep, link), 0);
	FMT(link, "%s/dangling", path);
	assert_int_equal(symlink("/nonexistent/terrarium", link), 0);
	FMT(link, "%s/a/loop", path);
	assert_int_equal(symlink("..", link), 0);
	/* a read-only directory */
	mkpath(path, "ro");
	mkfile(path, "ro/f");
	FMT(link, "%s/ro", path);
	assert_int_equal(chmod(link, 0555), 0);

	assert_int_equal(sbx_dir_destroy(&f->s, id, err, sizeof(err)), 0);
	assert_false(exists(path));
	assert_true(exists(keep));
	FMT(keep, "%s/sub/also", f->outside);
	assert_true(exists(keep));
	/* again: already gone */
	assert_int_equal(sbx_dir_destroy(&f->s, id, err, sizeof(err)), 0);
}

/* The sandbox entry itself is a symlink out of the root: the link goes, its target stays. */
static void test_dir_destroy_symlinked_sandbox(void **state)
{
	struct dir_fixture *f = *state;
	char err[SBX_ERR_MAX], path[PATH_MAX], keep[PATH_MAX + 32];

	mkfile(f->outside, "precious");
	assert_int_equal(sbx_dir_path(&f->s, "sesn_link", path, sizeof(path)), 0);
	assert_int_equal(symlink(f->outside, path), 0);
	assert_int_equal(sbx_dir_destroy(&f->s, "sesn_link", err, sizeof(err)), 0);
	assert_false(exists(path));
	FMT(keep, "%s/precious", f->outside);
	assert_true(exists(keep));
}

/* Regression tests of reported bugs, now fixed. */

/* A quoted value is masked up to its closing quote, spaces included. */
static void test_regression_redact_quoted_value_with_spaces(void **state)
{
	(void)state;
	check_redact("{\"password\": \"correct horse battery\"}", "{\"password\": \"***\"}");
}

/* Spaces around '=' or ':' (INI files, .pypirc, pip.conf). */
static void test_regression_redact_spaced_separator(void **state)
{
	(void)state;
	check_redact("password = hunter2", "password = ***");
	check_redact("\"token\" : \"abc\"", "\"token\" : \"***\"");
}

/* Issue 13: every *_PASS*, *SECRET*, *TOKEN* assignment is masked; "pass" inside a word is not. */
static void test_redact_pass_secret_token_keys(void **state)
{
	(void)state;
	check_redact("DB_PASS=hunter2", "DB_PASS=***");
	check_redact("export MYSQL_PASSWD=hunter2 x", "export MYSQL_PASSWD=*** x");
	check_redact("PASS: hunter2", "PASS: ***");
	check_redact("MY_SECRET_X=abc", "MY_SECRET_X=***");
	check_redact("GITHUB_TOKEN_2=zzz", "GITHUB_TOKEN_2=***");
	check_redact("npm_config__authToken=abc", "npm_config__authToken=***");
	check_redact("tokenizer=bpe max_tokens=5", "tokenizer=bpe max_tokens=5");
	check_redact("bypass=1 compass: north", "bypass=1 compass: north");
}

/* Issue 13: last_error shows no host paths, whatever their length; only whole paths. */
static void test_scrub_host_paths(void **state)
{
	char text[] = "mkdir /srv/t/var/sandboxes/sesn_1: Permission denied (/srv/t/var/sandboxes)";
	char short_root[128] = "mkdir /srv/sb/sesn_1: EACCES; /srv/sbx /x/srv/sb /srv/sb.";
	char cut[16] = "at /a/b now";
	(void)state;
	recon_scrub(text, sizeof(text), "/srv/t/var/sandboxes", "<sandboxes>");
	assert_string_equal(text, "mkdir <sandboxes>/sesn_1: Permission denied (<sandboxes>)");
	/* a root shorter than what replaces it; "/srv/sbx" and "/x/srv/sb" are other paths */
	recon_scrub(short_root, sizeof(short_root), "/srv/sb/", "<sandboxes>");
	assert_string_equal(short_root,
			    "mkdir <sandboxes>/sesn_1: EACCES; /srv/sbx /x/srv/sb <sandboxes>.");
	/* what no longer fits is cut, never written past the buffer */
	recon_scrub(cut, sizeof(cut), "/a/b", "<a-long-name>");
	assert_string_equal(cut, "at <a-long-name");
}

/* Every host path the reconciler knows of, the longest first. */
static void test_hide_host_paths(void **state)
{
	struct config cfg;
	struct remote_conf rc = { .socket = "/run/docker.sock", .api_key_file = "/etc/t/e2b.key" };
	struct recon r = { .cfg = &cfg };
	char text[512] = "mkdir /etc/t/sb/sesn_1 (config /etc/t/recon.ini, run /var/run/t/x,"
			 " key /etc/t/e2b.key, /run/docker.sock, /root/.npm, /usr/bin/npm)";
	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	strcpy(cfg.sandbox_root, "/etc/t/sb");
	strcpy(cfg.db_socket, "/var/run/t/mysql.sock");
	strcpy(r.sbx.root, "/etc/t/sb");
	strcpy(r.sbx.masks[0], "/etc/t/sb");
	strcpy(r.sbx.masks[1], "/etc/t");
	strcpy(r.sbx.masks[2], "/root");
	r.sbx.nmasks = 3;
	r.sbx.remote = &rc;
	recon_hide_host_paths(&r, text, sizeof(text));
	assert_string_equal(text, "mkdir <sandboxes>/sesn_1 (config <host>/recon.ini, run <host>/x,"
				  " key <host>, <host>, <host>/.npm, /usr/bin/npm)");
}

/* A watch that asks to stop kills the command at once (the lease was lost). */
static int stop_now(void *arg)
{
	(*(int *)arg)++;
	return 1;
}

static void test_proc_watch_stops_command(void **state)
{
	char *argv[] = { (char *)"sleep", (char *)"30", NULL };
	char path[] = "PATH=/usr/bin:/bin";
	char *envp[] = { path, NULL };
	int calls = 0;
	struct proc_watch w = { stop_now, &calls, 100 };
	struct proc_result res;
	time_t t0 = time(NULL);
	(void)state;
	assert_int_equal(proc_run(argv, NULL, envp, -1, 60, UT_OUT_MAX, &w, &res), 0);
	assert_int_equal(res.stopped, 1);
	assert_int_equal(calls, 1);
	assert_int_equal(res.exit_code, 128 + 9);
	assert_true(time(NULL) - t0 < 5);
	proc_result_release(&res);
}

/* The watch is asked after the command closed its output too: a lost lease still stops it. */
static void test_proc_watch_after_output_closed(void **state)
{
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)"exec >&- 2>&-; sleep 8", NULL };
	char path[] = "PATH=/usr/bin:/bin";
	char *envp[] = { path, NULL };
	int calls = 0;
	struct proc_watch w = { stop_now, &calls, 300 };
	struct proc_result res;
	double t0 = clock_mono_s();
	(void)state;
	assert_int_equal(proc_run(argv, NULL, envp, -1, 60, UT_OUT_MAX, &w, &res), 0);
	assert_true(clock_mono_s() - t0 < 2);
	assert_int_equal(res.stopped, 1);
	assert_int_equal(calls, 1);
	assert_int_equal(res.exit_code, 128 + SIGKILL);
	proc_result_release(&res);
}

/* process.h: "argv[0] looked up in ENVP's PATH". */
static void test_regression_proc_path_from_envp(void **state)
{
	char *dir = *state, tool[PATH_MAX], pathvar[PATH_MAX + 8];
	char *argv[] = { (char *)"terrarium-ut-tool", NULL };
	char *envp[] = { pathvar, NULL };
	struct proc_result res;
	FMT(tool, "%s/terrarium-ut-tool", dir);
	write_file(tool, "#!/bin/sh\necho found\n");
	assert_int_equal(chmod(tool, 0755), 0);
	FMT(pathvar, "PATH=%s", dir);
	assert_int_equal(proc_run(argv, NULL, envp, -1, 10, UT_OUT_MAX, NULL, &res), 0);
	assert_string_equal(res.output, "found\n");
	assert_int_equal(res.exit_code, 0);
	proc_result_release(&res);
}

/* Output of exactly OUT_MAX bytes in one read dropped nothing. */
static void test_regression_proc_exact_cap_not_truncated(void **state)
{
	struct proc_result res;
	(void)state;
	res = run_sh("printf abcd", NULL, 10, 4);
	assert_string_equal(res.output, "abcd");
	assert_int_equal(res.truncated, 0);
	proc_result_release(&res);
}

/* Every backend of the table (common/backend.c) has a driver in open.c's table: opening it may
 * fail for want of settings, never for want of a driver. */
static void test_every_backend_has_a_driver(void **state)
{
	char *dir = make_tmpdir(), err[SBX_ERR_MAX];
	struct config cfg;
	(void)state;

	memset(&cfg, 0, sizeof(cfg));
	for (size_t b = 0; b < BACKEND_TABLE_LEN; b++) {
		struct sbx s;
		const char *name = backend_at(b)->name;

		FMT(cfg.backend, "%s", name);
		FMT(cfg.sandbox_root, "%s/%s", dir, name);
		err[0] = '\0';
		if (!sbx_open(&s, &cfg, "/nonexistent/terrarium.ini", err, sizeof(err))) {
			assert_string_equal(s.ops->name, name);
			assert_ptr_equal(s.caps, backend_at(b));
			sbx_close(&s);
		} else if (strstr(err, "has no driver")) {
			fail_msg("backend %s: %s", name, err);
		}
	}
	FMT(cfg.backend, "%s", "vmware");
	assert_int_equal(sbx_open(&(struct sbx){ 0 }, &cfg, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "has no driver"));
	remove_tmpdir(dir);
}

UNIT_MAIN(UNIT_TESTS(test_redact_url_userinfo, test_redact_secret_keys, test_redact_authorization,
		     test_redact_plain_text_unchanged, test_redact_truncation_utf8,
		     test_redact_tiny_buffers, test_redact_empty, test_backoff_growth_and_cap,
		     test_backoff_attempts_zero_and_one, test_backoff_jitter_bounds,
		     test_backoff_base_zero, test_proc_exit_code, test_proc_output_captured,
		     test_proc_output_tail),
	  cmocka_unit_test_setup_teardown(test_proc_timeout_kills_group, tmp_setup, tmp_teardown),
	  cmocka_unit_test_setup_teardown(test_proc_timeout_term_ignored, tmp_setup, tmp_teardown),
	  cmocka_unit_test_setup_teardown(test_proc_leftover_children_killed, tmp_setup,
					  tmp_teardown),
	  UNIT_TESTS(test_proc_timeout_after_output_closed, test_proc_command_not_found),
	  cmocka_unit_test_setup_teardown(test_proc_cwd, tmp_setup, tmp_teardown),
	  UNIT_TESTS(test_proc_environment_is_envp, test_proc_stdin),
	  cmocka_unit_test_setup_teardown(test_dir_create_idempotent, dir_setup, dir_teardown),
	  cmocka_unit_test_setup_teardown(test_dir_create_bad_names, dir_setup, dir_teardown),
	  cmocka_unit_test_setup_teardown(test_dir_create_missing_root, dir_setup, dir_teardown),
	  cmocka_unit_test_setup_teardown(test_dir_destroy_missing, dir_setup, dir_teardown),
	  cmocka_unit_test_setup_teardown(test_dir_destroy_nested_not_following_symlinks, dir_setup,
					  dir_teardown),
	  cmocka_unit_test_setup_teardown(test_dir_destroy_symlinked_sandbox, dir_setup,
					  dir_teardown),
	  UNIT_TESTS(test_regression_redact_quoted_value_with_spaces,
		     test_regression_redact_spaced_separator),
	  cmocka_unit_test_setup_teardown(test_regression_proc_path_from_envp, tmp_setup,
					  tmp_teardown),
	  UNIT_TESTS(test_regression_proc_exact_cap_not_truncated,
		     test_redact_pass_secret_token_keys, test_scrub_host_paths,
		     test_hide_host_paths, test_proc_watch_stops_command,
		     test_proc_watch_after_output_closed, test_every_backend_has_a_driver))
