/* Unit tests of runner/tools.c: the agent toolset run through a struct tool_exec bound here to
 * plain processes in a temporary directory (fork/exec, a time limit, the process group killed,
 * stdin piped when the binding takes it), and toolset_load on the SDK's shapes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../runner/tools.h"
#include "unit.h"

#define ARG_LIMIT (128 * 1024) /* the kernel's MAX_ARG_STRLEN */
#define TEST_PATH_MAX 4096
#define TEST_WANT_MAX 512 /* an answer a check builds */

/* ---- a struct tool_exec over plain processes ---- */

struct proc_ctx {
	const char *path_env; /* PATH of the commands; NULL: this process's */
	long timeout_cap_ms;  /* > 0: a sandbox stopping commands sooner than asked */
	int stdin_ok;	      /* what the binding claims */
	size_t max_arg;	      /* the longest argument seen */
	size_t max_argv;      /* the most argument bytes of one command */
	int runs;	      /* commands run */
};

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int proc_run(void *vctx, char *const argv[], const char *in, size_t inlen, long timeout_ms,
		    size_t cap, struct tool_exec_out *out, char *err, size_t errsz)
{
	struct proc_ctx *ctx = vctx;
	int outp[2], inp[2] = { -1, -1 }, status;
	long deadline;
	size_t total = 0, written = 0, got = 0;
	char buf[65536], *all = NULL;
	pid_t pid;

	if (ctx->timeout_cap_ms > 0 && ctx->timeout_cap_ms < timeout_ms)
		timeout_ms = ctx->timeout_cap_ms;
	deadline = now_ms() + timeout_ms;

	for (size_t i = 0; argv[i]; i++) {
		size_t n = strlen(argv[i]) + 1;

		ctx->max_arg = n > ctx->max_arg ? n : ctx->max_arg;
		total += n;
	}
	ctx->max_argv = total > ctx->max_argv ? total : ctx->max_argv;
	ctx->runs++;
	if (in && !ctx->stdin_ok)
		fail_msg("standard input given to a binding without stdin_ok");
	memset(out, 0, sizeof(*out));
	if (pipe(outp) || (in && pipe(inp))) {
		snprintf(err, errsz, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		dup2(in ? inp[0] : null, 0);
		dup2(outp[1], 1);
		dup2(outp[1], 2);
		for (int fd = 3; fd < 256; fd++)
			close(fd);
		if (ctx->path_env)
			setenv("PATH", ctx->path_env, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	setpgid(pid, pid);
	close(outp[1]);
	if (in) {
		close(inp[0]);
		fcntl(inp[1], F_SETFL, O_NONBLOCK);
		if (!inlen) {
			close(inp[1]);
			inp[1] = -1;
		}
	}
	for (;;) {
		struct pollfd fds[2] = { { outp[0], POLLIN, 0 }, { inp[1], POLLOUT, 0 } };
		long left = deadline - now_ms();
		ssize_t n;

		if (left <= 0) {
			kill(-pid, SIGKILL);
			out->timed_out = 1;
			left = 1000;
		}
		if (poll(fds, inp[1] >= 0 ? 2 : 1, (int)left) < 0)
			continue;
		if (inp[1] >= 0 && (fds[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			n = write(inp[1], in + written, inlen - written);
			if (n > 0)
				written += (size_t)n;
			if (n < 0 || written == inlen) {
				close(inp[1]);
				inp[1] = -1;
			}
		}
		if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			n = read(outp[0], buf, sizeof(buf));
			if (n <= 0)
				break;
			all = realloc(all, got + (size_t)n);
			assert_non_null(all);
			memcpy(all + got, buf, (size_t)n);
			got += (size_t)n;
		}
		if (out->timed_out && now_ms() > deadline + 5000)
			break;
	}
	if (inp[1] >= 0)
		close(inp[1]);
	close(outp[0]);
	kill(-pid, SIGKILL);
	waitpid(pid, &status, 0);
	out->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	/* the last CAP bytes */
	out->truncated = got > cap;
	out->len = got > cap ? cap : got;
	out->output = malloc(out->len + 1);
	assert_non_null(out->output);
	if (out->len)
		memcpy(out->output, all + (got - out->len), out->len);
	out->output[out->len] = '\0';
	free(all);
	return 0;
}

/* ---- the temporary directory ---- */

static char base[64], work[128], outside[128], norg[128];
static struct proc_ctx pctx;
static struct tool_exec X = { proc_run, &pctx, work, 0 };

/* Run the shell command FMT... in the workdir; it must succeed. */
static void shf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void shf(const char *fmt, ...)
{
	char cmd[8192], full[8192 + 512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(full, sizeof(full), "cd '%s' && { %s\n}", work, cmd);
	if (system(full))
		fail_msg("shell command failed: %s", cmd);
}

static int setup_with(int stdin_ok)
{
	snprintf(base, sizeof(base), "/tmp/test_tools.XXXXXX");
	if (!mkdtemp(base))
		return -1;
	snprintf(work, sizeof(work), "%s/work", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	snprintf(norg, sizeof(norg), "%s/norg", base);
	mkdir(work, 0755);
	mkdir(outside, 0755);
	memset(&pctx, 0, sizeof(pctx));
	pctx.stdin_ok = stdin_ok;
	X.stdin_ok = stdin_ok;
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return setup_with(0);
}

static int setup_stdin(void **state)
{
	(void)state;
	return setup_with(1);
}

static int teardown(void **state)
{
	char cmd[TEST_PATH_MAX + 32];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd);
}

/* ---- calling the tools ---- */

static struct tool_result last;

/* Run tool NAME with the JSON INPUT; returns the result's text (until the next call). */
static const char *tool(const char *name, const char *input, int *is_error)
{
	json_error_t jerr;
	json_t *in = json_loads(input, JSON_ALLOW_NUL, &jerr);

	if (!in)
		fail_msg("bad test input %s: %s", input, jerr.text);
	tool_result_release(&last);
	assert_int_equal(tools_run(&X, name, in, &last), 0);
	json_decref(in);
	assert_non_null(last.text);
	assert_true(last.text[0] != '\0');
	if (is_error)
		*is_error = last.is_error;
	return last.text;
}

/* The tool must answer WANT, an error when IS_ERROR. */
static void expect(const char *name, const char *input, int is_error, const char *want)
{
	int e;
	const char *got = tool(name, input, &e);

	if (!e != !is_error || strcmp(got, want))
		fail_msg("%s %s: got %s'%s', want %s'%s'", name, input, e ? "error " : "", got,
			 is_error ? "error " : "", want);
}

/* The tool must succeed with WANT. */
static void ok(const char *name, const char *input, const char *want)
{
	expect(name, input, 0, want);
}

/* The tool must fail with WANT. */
static void bad(const char *name, const char *input, const char *want)
{
	expect(name, input, 1, want);
}

/* Tool NAME must answer each of the N CASES' input with its want, an error when IS_ERROR. */
static void expect_cases(const char *name, int is_error, const struct unit_text_case *cases,
			 size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect(name, cases[i].in, is_error, cases[i].want);
}

/* The file tools' refusal of a path (%s) that leads out of the workdir. */
#define OUTSIDE_FMT "path \"%s\" is outside the session's working directory"

/* The tool must refuse PATH, named by INPUT, as outside the workdir. */
static void out_of_workdir(const char *name, const char *input, const char *path)
{
	char want[TEST_PATH_MAX * 3];

	snprintf(want, sizeof(want), OUTSIDE_FMT, path);
	bad(name, input, want);
}

/* The tool must fail with "WHAT exceeds TOOLS_FILE_MAX-byte limit. THEN". */
static void bad_over(const char *name, const char *input, const char *what, const char *then)
{
	char want[TEST_WANT_MAX];

	snprintf(want, sizeof(want), "%s exceeds %d-byte limit. %s", what, TOOLS_FILE_MAX, then);
	bad(name, input, want);
}

/* Run NAME with the input object IN (stolen). */
static const char *tool_json(const char *name, json_t *in, int *is_error)
{
	assert_non_null(in);
	tool_result_release(&last);
	assert_int_equal(tools_run(&X, name, in, &last), 0);
	json_decref(in);
	*is_error = last.is_error;
	return last.text;
}

/* The contents of the file REL in the workdir (caller frees); *LEN its size. */
static char *slurp(const char *rel, size_t *len)
{
	char path[TEST_PATH_MAX * 2];
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", work, rel);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void spit(const char *rel, const char *data, size_t len)
{
	char path[TEST_PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", work, rel);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static mode_t mode_of(const char *rel)
{
	char path[TEST_PATH_MAX * 2];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", work, rel);
	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ---- bash ---- */

static void test_bash_output(void **state)
{
	char want[TEST_PATH_MAX + 16];
	(void)state;

	ok("bash", "{\"command\":\"echo hello\"}", "hello");
	/* stderr interleaved, ANSI escapes stripped, trailing newlines trimmed */
	ok("bash",
	   "{\"command\":\"echo a; echo b >&2; printf '\\\\033[31mred\\\\033[0m\\\\n\\\\n\\\\n'\"}",
	   "a\nb\nred");
	/* the command's stdin is /dev/null, no output says so */
	ok("bash", "{\"command\":\"cat\"}", "(no output)");
	/* the workdir is where the first command runs, the positional parameters are empty */
	snprintf(want, sizeof(want), "%s|0|", work);
	ok("bash", "{\"command\":\"echo \\\"$PWD|$#|$1\\\"\"}", want);
	ok("bash", "{\"command\":\"echo caf\\u00e9 \\u2603\"}", "caf\xc3\xa9 \xe2\x98\x83");
}

static void test_bash_state(void **state)
{
	char want[TEST_PATH_MAX + 16];
	(void)state;

	/* the working directory and exported variables persist; plain variables do not */
	ok("bash",
	   "{\"command\":\"mkdir -p 'sub dir' && cd 'sub dir' && export FOO='x y' && BAR=1\"}",
	   "(no output)");
	snprintf(want, sizeof(want), "%s/sub dir", work);
	ok("bash", "{\"command\":\"pwd\"}", want);
	ok("bash", "{\"command\":\"echo \\\"$FOO|$BAR\\\"\"}", "x y|");
	ok("bash", "{\"command\":\"unset FOO; cd ..; export Q='a\\\"$b'\"}", "(no output)");
	snprintf(want, sizeof(want), "unset|a\"$b\n%s", work);
	ok("bash", "{\"command\":\"echo \\\"${FOO-unset}|$Q\\\"; pwd\"}", want);
	/* restart: a fresh shell */
	ok("bash", "{\"command\":\"cd 'sub dir'; export FOO=1\"}", "(no output)");
	ok("bash", "{\"restart\":true}", "bash session restarted");
	snprintf(want, sizeof(want), "%s|", work);
	ok("bash", "{\"command\":\"echo \\\"$PWD|$FOO\\\"\"}", want);
	/* restart with a command runs it in the fresh shell */
	ok("bash", "{\"command\":\"cd 'sub dir'; export FOO=1\"}", "(no output)");
	ok("bash", "{\"restart\":true,\"command\":\"echo \\\"$PWD|$FOO\\\"\"}", want);
	/* the state is kept in the workdir's state directory */
	assert_true(exists(work) && mode_of(TOOLS_STATE_DIR) == 0700);
}

/* Commands that fail, and what bash answers. */
static const struct unit_text_case bash_failures[] = {
	{ "{\"command\":\"false\"}", "exit 1" },
	{ "{\"command\":\"(exit 7)\"}", "exit 7" },
	{ "{\"command\":\"echo oops; false\"}", "oops" },
	{ "{\"command\":\"ls /nonexistent-dir-of-the-test\"}",
	  "ls: cannot access '/nonexistent-dir-of-the-test': No such file or directory" },
	/* a syntax error is the command's failure, the shell lives on */
	{ "{\"command\":\"if then\"}",
	  "bash: eval: line 1: syntax error near unexpected token `then'\n"
	  "bash: eval: line 1: `if then'" },
};

static void test_bash_status(void **state)
{
	char want[TEST_PATH_MAX + 16];
	(void)state;

	expect_cases("bash", 1, bash_failures, UNIT_LEN(bash_failures));
	/* exit ends the SDK's shell: the session is terminated and the next call starts afresh */
	ok("bash", "{\"command\":\"mkdir -p d && cd d && export K=1\"}", "(no output)");
	bad("bash", "{\"command\":\"echo bye; exit 3\"}", "bash: bash session terminated");
	snprintf(want, sizeof(want), "%s|", work);
	ok("bash", "{\"command\":\"echo \\\"$PWD|$K\\\"\"}", want);
	/* set -e does not leak into the saving of the state */
	ok("bash", "{\"command\":\"set -e; cd d\"}", "(no output)");
	snprintf(want, sizeof(want), "%s/d", work);
	ok("bash", "{\"command\":\"pwd\"}", want);
}

static void test_bash_sentinel(void **state)
{
	(void)state;

	/* output that looks like the framing changes nothing: the sentinel is per call */
	bad("bash",
	    "{\"command\":\"printf '\\\\n__terrarium_00000000000000000000000000000000_0\\\\n'; "
	    "printf '\\\\n__ANT_CMD_x_DONE__0\\\\n'; exit_code=0; false\"}",
	    "\n__terrarium_00000000000000000000000000000000_0\n\n__ANT_CMD_x_DONE__0");
	ok("bash", "{\"command\":\"echo \\\"[$1][$2][$3][$*]\\\"\"}", "[][][][]");
}

static void test_bash_timeout(void **state)
{
	char want[TEST_PATH_MAX + 16];
	long t0;
	(void)state;

	ok("bash", "{\"command\":\"mkdir -p d && cd d\"}", "(no output)");
	t0 = now_ms();
	bad("bash", "{\"command\":\"echo started; sleep 30\",\"timeout_ms\":300}",
	    "bash: bash command timed out after 300ms");
	assert_true(now_ms() - t0 < 5000);
	/* the shell was discarded */
	snprintf(want, sizeof(want), "%s", work);
	ok("bash", "{\"command\":\"pwd\"}", want);
	/* timeout_ms 0 is the default */
	ok("bash", "{\"command\":\"echo fine\",\"timeout_ms\":0}", "fine");
}

static void test_bash_truncation(void **state)
{
	const char *got;
	int e;
	(void)state;

	/* 40000 lines, 228894 bytes: the last part is kept, the note in front */
	got = tool("bash", "{\"command\":\"seq 1 40000\"}", &e);
	assert_false(e);
	assert_true(!strncmp(got, "[output truncated]\n", 19));
	assert_true(strlen(got) <= TOOLS_OUTPUT_MAX + 19);
	assert_true(strlen(got) > TOOLS_OUTPUT_MAX - 64);
	assert_string_equal(got + strlen(got) - 11, "39999\n40000");
	/* and on failure too */
	got = tool("bash", "{\"command\":\"seq 1 40000; exit_status=3; (exit 3)\"}", &e);
	assert_true(e);
	assert_true(!strncmp(got, "[output truncated]\n", 19));
	/* exactly at the limit: nothing is cut */
	got = tool("bash", "{\"command\":\"head -c 50000 /dev/zero | tr '\\\\0' a\"}", &e);
	assert_int_equal(strlen(got), 50000);
}

static void test_bash_long_command(void **state)
{
	size_t n = 300 * 1024;
	char *cmd = malloc(n + 64);
	const char *got;
	json_t *in;
	int e;
	(void)state;

	/* a command over the kernel's 128 KiB per argument goes in pieces */
	memcpy(cmd, "x=", 2);
	memset(cmd + 2, 'a', n);
	strcpy(cmd + 2 + n, "; echo ${#x}");
	in = json_pack("{s:s}", "command", cmd);
	got = tool_json("bash", in, &e);
	assert_false(e);
	assert_int_equal(atol(got), (long)n);
	assert_true(pctx.max_arg < ARG_LIMIT);
	/* past the limit: refused */
	free(cmd);
	cmd = malloc(TOOLS_BASH_COMMAND_MAX + 2);
	memset(cmd, ' ', TOOLS_BASH_COMMAND_MAX + 1);
	cmd[TOOLS_BASH_COMMAND_MAX + 1] = '\0';
	got = tool_json("bash", json_pack("{s:s}", "command", cmd), &e);
	assert_true(e);
	assert_string_equal(got, "bash: command is 524289 bytes, over the 524288-byte limit");
	free(cmd);
}

/* Inputs bash refuses, and why. */
static const struct unit_text_case bash_refusals[] = {
	{ "{}", "bash: command is required" },
	{ "{\"command\":\"\"}", "bash: command is required" },
	{ "{\"command\":5}", "bash: command must be a string" },
	{ "{\"command\":\"a\\u0000b\"}", "bash: command must not contain a NUL character" },
	{ "{\"command\":\"true\",\"restart\":\"yes\"}", "bash: restart must be a boolean" },
	{ "{\"command\":\"true\",\"timeout_ms\":-1}",
	  "bash: timeout_ms must be an integer from 0 to 3600000 (0: the default, 120000)" },
	{ "{\"command\":\"true\",\"timeout_ms\":1.5}",
	  "bash: timeout_ms must be an integer from 0 to 3600000 (0: the default, 120000)" },
	{ "[]", "bash: input must be an object" },
};

static void test_bash_input(void **state)
{
	(void)state;

	expect_cases("bash", 1, bash_refusals, UNIT_LEN(bash_refusals));
	bad("frobnicate", "{}", "unknown tool frobnicate");
}

/* ---- read ---- */

/* Views of f.txt, the four lines one to four, and what read answers. */
static const struct unit_text_case read_views[] = {
	{ "{\"file_path\":\"f.txt\"}", "one\ntwo\nthree\nfour\n" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[2,3]}", "two\nthree" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[2,0]}", "two\nthree\nfour\n" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[3,-1]}", "three\nfour\n" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[0,1]}", "one" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[4,9]}", "four\n" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[3,2]}", "(no output)" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[]}", "one\ntwo\nthree\nfour\n" },
	{ "{\"file_path\":\"./sub/../f.txt\",\"view_range\":[1,1]}", "one" },
};

/* Inputs read refuses with f.txt there, and why. */
static const struct unit_text_case read_refusals[] = {
	{ "{\"file_path\":\"f.txt\",\"view_range\":[1]}",
	  "read: view_range must be [start_line, end_line]" },
	{ "{\"file_path\":\"f.txt\",\"view_range\":[1,\"2\"]}",
	  "read: view_range must be [start_line, end_line]" },
	{ "{}", "read: file_path is required" },
	{ "{\"file_path\":\"nope.txt\"}", "read: nope.txt: no such file or directory" },
};

static void test_read(void **state)
{
	(void)state;

	spit("f.txt", "one\ntwo\nthree\nfour\n", 19);
	expect_cases("read", 0, read_views, UNIT_LEN(read_views));
	expect_cases("read", 1, read_refusals, UNIT_LEN(read_refusals));
	shf("mkdir d && mkfifo fifo");
	bad("read", "{\"file_path\":\"d\"}", "read: d is not a regular file");
	bad("read", "{\"file_path\":\"fifo\"}", "read: fifo is not a regular file");
	/* bytes that are not UTF-8 become U+FFFD */
	spit("bin",
	     "a\xff"
	     "b\xe2\x98"
	     "c",
	     6);
	ok("read", "{\"file_path\":\"bin\"}",
	   "a\xef\xbf\xbd"
	   "b\xef\xbf\xbd"
	   "c");
}

static void test_read_big(void **state)
{
	static const char narrow[] = "Narrow the view_range to read a smaller portion.";
	(void)state;

	/* 300000 bytes of 6-byte lines "00001\n"... */
	shf("seq -w 1 50000 > big; wc -c < big | grep -qx 300000");
	bad_over("read", "{\"file_path\":\"big\"}", "read: big is 300000 bytes,",
		 "Use the view_range parameter to read specific line ranges, e.g. view_range: "
		 "[1, 500].");
	ok("read", "{\"file_path\":\"big\",\"view_range\":[2,3]}", "00002\n00003");
	ok("read", "{\"file_path\":\"big\",\"view_range\":[49999,0]}", "49999\n50000\n");
	ok("read", "{\"file_path\":\"big\",\"view_range\":[49999,60000]}", "49999\n50000\n");
	ok("read", "{\"file_path\":\"big\",\"view_range\":[5,4]}", "(no output)");
	/* 43690 lines are 262140 bytes less the last newline: within; one more is not */
	tool("read", "{\"file_path\":\"big\",\"view_range\":[1,43690]}", NULL);
	assert_false(last.is_error);
	assert_int_equal(strlen(last.text), 43690 * 6 - 1);
	bad_over("read", "{\"file_path\":\"big\",\"view_range\":[1,43700]}",
		 "read: view_range [1, 43700] of big", narrow);
	bad_over("read", "{\"file_path\":\"big\",\"view_range\":[10,0]}",
		 "read: view_range [10, 0] of big", narrow);
	/* one line over the limit */
	shf("head -c 300000 /dev/zero | tr '\\0' x > long; echo >> long; echo tail >> long");
	bad_over("read", "{\"file_path\":\"long\",\"view_range\":[1,1]}",
		 "read: line 1 of long alone",
		 "The read tool cannot return part of a line, so view_range cannot narrow this "
		 "further.");
	ok("read", "{\"file_path\":\"long\",\"view_range\":[2,2]}", "tail");
}

/* ---- write ---- */

/* Inputs write refuses with a/b/c.txt there, and why. */
static const struct unit_text_case write_refusals[] = {
	{ "{\"file_path\":\"a/b\",\"content\":\"x\"}", "write: a/b: is a directory" },
	{ "{\"file_path\":\"a/b/c.txt/d\",\"content\":\"x\"}",
	  "write: a/b/c.txt/d: not a directory" },
	{ "{\"content\":\"x\"}", "write: file_path is required" },
	{ "{\"file_path\":\"q\",\"content\":7}", "write: content must be a string" },
};

static void test_write(void **state)
{
	char tmpl[TEST_PATH_MAX + 32];
	size_t len;
	char *got;
	(void)state;

	ok("write", "{\"file_path\":\"a/b/c.txt\",\"content\":\"hi\\n\\u00e9\"}",
	   "wrote 5 bytes to a/b/c.txt");
	got = slurp("a/b/c.txt", &len);
	assert_int_equal(len, 5);
	assert_memory_equal(got, "hi\n\xc3\xa9", 5);
	free(got);
	/* new files and directories are the owner's only; an existing file keeps its mode */
	assert_int_equal(mode_of("a/b/c.txt"), 0600);
	assert_int_equal(mode_of("a/b"), 0700);
	shf("chmod 755 a/b/c.txt");
	ok("write", "{\"file_path\":\"a/b/c.txt\",\"content\":\"\"}", "wrote 0 bytes to a/b/c.txt");
	assert_int_equal(mode_of("a/b/c.txt"), 0755);
	got = slurp("a/b/c.txt", &len);
	assert_int_equal(len, 0);
	free(got);
	/* absolute inside the workdir is fine */
	snprintf(tmpl, sizeof(tmpl), "{\"file_path\":\"%s/abs.txt\",\"content\":\"x\"}", work);
	tool("write", tmpl, NULL);
	assert_false(last.is_error);
	expect_cases("write", 1, write_refusals, UNIT_LEN(write_refusals));
	/* no temporary file is left behind */
	shf("! ls -A a/b a | grep -q tmp-terrarium");
}

/* Contents of N bytes, every byte but NUL, not UTF-8. */
static char *arbitrary(size_t n)
{
	char *s = malloc(n);

	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)(1 + (i * 7 + i / 255) % 255);
	return s;
}

static void test_write_big(void **state)
{
	size_t sizes[] = { 1, 130 * 1024, 1300 * 1024 }, len;
	char want[128];
	const char *res;
	int e;
	(void)state;

	for (size_t k = 0; k < UNIT_LEN(sizes); k++) {
		char *data = arbitrary(sizes[k]), *got;
		json_t *in = json_pack("{s:s, s:o}", "file_path", "big/file.bin", "content",
				       json_stringn_nocheck(data, sizes[k]));
		int runs = pctx.runs;

		res = tool_json("write", in, &e);
		snprintf(want, sizeof(want), "wrote %zu bytes to big/file.bin", sizes[k]);
		assert_false(e);
		assert_string_equal(res, want);
		got = slurp("big/file.bin", &len);
		assert_int_equal(len, sizes[k]);
		assert_memory_equal(got, data, len);
		free(got);
		free(data);
		/* arguments stay under the kernel's limits; large contents take several commands
		 * without stdin */
		assert_true(pctx.max_arg < ARG_LIMIT);
		assert_true(pctx.max_argv <= TOOLS_ARGV_MAX + 4096);
		if (X.stdin_ok || sizes[k] < TOOLS_ARGV_MAX / 2)
			assert_int_equal(pctx.runs - runs, 1);
		else
			assert_true(pctx.runs - runs > 1);
	}
	shf("! ls -A big | grep -q tmp-terrarium");
}

/* ---- edit ---- */

static void test_edit(void **state)
{
	size_t len;
	char *got;
	(void)state;

	spit("e.txt", "alpha beta\nbeta gamma\n", 22);
	shf("chmod 640 e.txt");
	ok("edit", "{\"file_path\":\"e.txt\",\"old_string\":\"alpha\",\"new_string\":\"$& A\"}",
	   "edited e.txt (1 replacement(s))");
	got = slurp("e.txt", &len);
	assert_string_equal(got, "$& A beta\nbeta gamma\n");
	free(got);
	assert_int_equal(mode_of("e.txt"), 0640);
	bad("edit", "{\"file_path\":\"e.txt\",\"old_string\":\"beta\",\"new_string\":\"B\"}",
	    "edit: old_string appears 2 times in e.txt (must be unique)");
	bad("edit", "{\"file_path\":\"e.txt\",\"old_string\":\"zeta\",\"new_string\":\"B\"}",
	    "edit: old_string not found in e.txt");
	ok("edit",
	   "{\"file_path\":\"e.txt\",\"old_string\":\"beta\",\"new_string\":\"\","
	   "\"replace_all\":true}",
	   "edited e.txt (2 replacement(s))");
	got = slurp("e.txt", &len);
	assert_string_equal(got, "$& A \n gamma\n");
	free(got);
	/* occurrences do not overlap */
	spit("o.txt", "aaaa", 4);
	ok("edit",
	   "{\"file_path\":\"o.txt\",\"old_string\":\"aa\",\"new_string\":\"b\",\"replace_all\":"
	   "true}",
	   "edited o.txt (2 replacement(s))");
	got = slurp("o.txt", &len);
	assert_string_equal(got, "bb");
	free(got);
	bad("edit", "{\"file_path\":\"e.txt\",\"old_string\":\"\",\"new_string\":\"B\"}",
	    "edit: old_string is required");
	bad("edit", "{\"file_path\":\"e.txt\",\"old_string\":\"A\"}",
	    "edit: new_string is required");
	bad("edit", "{\"file_path\":\"no.txt\",\"old_string\":\"A\",\"new_string\":\"B\"}",
	    "edit: no.txt: no such file or directory");
	shf("mkdir dir");
	bad("edit", "{\"file_path\":\"dir\",\"old_string\":\"A\",\"new_string\":\"B\"}",
	    "edit: dir is not a regular file");
	shf("head -c 300000 /dev/zero | tr '\\0' x > big");
	bad_over("edit", "{\"file_path\":\"big\",\"old_string\":\"x\",\"new_string\":\"y\"}",
		 "edit: big is 300000 bytes,",
		 "The edit tool loads the whole file and cannot modify a file this large.");
	/* bytes that are not UTF-8 stay as they are */
	spit("bin",
	     "\xff"
	     "key\xfe",
	     5);
	ok("edit", "{\"file_path\":\"bin\",\"old_string\":\"key\",\"new_string\":\"k\\u00e9\"}",
	   "edited bin (1 replacement(s))");
	got = slurp("bin", &len);
	assert_int_equal(len, 5);
	assert_memory_equal(got,
			    "\xff"
			    "k\xc3\xa9\xfe",
			    5);
	free(got);
	/* a result past TOOLS_EDIT_MAX is refused */
	spit("many", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 64);
	{
		char *big = malloc(TOOLS_EDIT_MAX / 32);
		int e;

		memset(big, 'y', TOOLS_EDIT_MAX / 32 - 1);
		big[TOOLS_EDIT_MAX / 32 - 1] = '\0';
		tool_json("edit",
			  json_pack("{s:s, s:s, s:s, s:b}", "file_path", "many", "old_string", "x",
				    "new_string", big, "replace_all", 1),
			  &e);
		assert_true(e);
		assert_string_equal(last.text,
				    "edit: the edited many would be over the 4194304-byte limit");
		free(big);
	}
}

/* ---- glob ---- */

/* Patterns glob refuses, and why. */
static const struct unit_text_case glob_refusals[] = {
	{ "{\"pattern\":\"/etc/*\"}",
	  "glob: absolute pattern not permitted; pass a relative pattern (and optionally path)" },
	{ "{\"pattern\":\"../*\"}", "glob: \"..\" is not permitted in the pattern" },
	{ "{\"pattern\":\"src/{..,x}/*\"}", "glob: \"..\" is not permitted in the pattern" },
	{ "{}", "glob: pattern is required" },
};

static void test_glob(void **state)
{
	char want[8 * TEST_PATH_MAX], in[TEST_PATH_MAX];
	(void)state;

	shf("mkdir -p src/deep .hidden node_modules/m .git sub");
	shf("for f in a.c src/b.c src/deep/c.c src/.d.c .hidden/x.c node_modules/m/m.c .git/g.c "
	    "src/note.txt; do echo > \"$f\"; done");
	shf("touch -d @1700000300 a.c; touch -d @1700000100 src/b.c; touch -d @1700000200 "
	    "src/deep/c.c; touch -d @1700000000 src/.d.c src/note.txt");
	snprintf(want, sizeof(want), "%s/a.c\n%s/src/deep/c.c\n%s/src/b.c", work, work, work);
	ok("glob", "{\"pattern\":\"**/*.c\"}", want);
	snprintf(want, sizeof(want), "%s/a.c", work);
	ok("glob", "{\"pattern\":\"*.c\"}", want);
	snprintf(want, sizeof(want), "%s/src/deep/c.c\n%s/src/b.c\n%s/src/note.txt", work, work,
		 work);
	ok("glob", "{\"pattern\":\"src/**\"}", want);
	ok("glob", "{\"pattern\":\"./src/**/*\"}", want);
	snprintf(want, sizeof(want), "%s/a.c\n%s/src/b.c", work, work);
	ok("glob", "{\"pattern\":\"{a,src/b}.c\"}", want);
	snprintf(want, sizeof(want), "%s/src/deep/c.c\n%s/src/b.c", work, work);
	ok("glob", "{\"pattern\":\"src/{deep/,}[bc].c\"}", want);
	ok("glob", "{\"pattern\":\"src/**/+(b|c).c\"}", want);
	/* a dot name only when the pattern says so */
	snprintf(want, sizeof(want), "%s/.hidden/x.c", work);
	ok("glob", "{\"pattern\":\".hidden/*.c\"}", want);
	snprintf(want, sizeof(want), "%s/src/.d.c", work);
	ok("glob", "{\"pattern\":\"**/.d.c\"}", want);
	/* path: the search root */
	snprintf(want, sizeof(want), "%s/src/b.c", work);
	ok("glob", "{\"pattern\":\"*.c\",\"path\":\"src\"}", want);
	snprintf(in, sizeof(in), "{\"pattern\":\"*.c\",\"path\":\"%s/src\"}", work);
	ok("glob", in, want);
	ok("glob", "{\"pattern\":\"*.zip\"}", "no matches");
	ok("glob", "{\"pattern\":\"src/\"}", "no matches");
	ok("glob", "{\"pattern\":\"*\",\"path\":\"missing\"}", "no matches");
	expect_cases("glob", 1, glob_refusals, UNIT_LEN(glob_refusals));
	out_of_workdir("glob", "{\"pattern\":\"*\",\"path\":\"..\"}", "..");
	/* a..b is a name, not a way up */
	shf("echo > 'a..b'");
	snprintf(want, sizeof(want), "%s/a..b", work);
	ok("glob", "{\"pattern\":\"a..b\"}", want);
}

static void test_glob_many(void **state)
{
	const char *got, *p;
	char first[TEST_PATH_MAX];
	size_t lines = 1;
	int e;
	(void)state;

	/* 250 files, f250 the newest: 200 of them, newest first */
	shf("mkdir many");
	for (int k = 1; k <= 250; k++) {
		char name[32];
		struct timespec t[2] = { { 1700000000 + k, 0 }, { 1700000000 + k, 0 } };

		snprintf(name, sizeof(name), "many/f%d", k);
		spit(name, "", 0);
		snprintf(first, sizeof(first), "%s/%s", work, name);
		assert_int_equal(utimensat(AT_FDCWD, first, t, 0), 0);
	}
	got = tool("glob", "{\"pattern\":\"many/*\"}", &e);
	assert_false(e);
	for (p = got; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, TOOLS_GLOB_MAX);
	snprintf(first, sizeof(first), "%s/many/f250\n%s/many/f249\n", work, work);
	assert_true(!strncmp(got, first, strlen(first)));
	assert_non_null(strstr(got, "/many/f51"));
	assert_null(strstr(got, "/many/f50\n"));
}

/* ---- grep ---- */

static void grep_cases(int rg)
{
	char want[4 * TEST_PATH_MAX];
	const char *got;
	int e;

	shf("mkdir -p src node_modules/m; printf 'hello world\\nbye\\n' > a.txt; printf 'x\\nhello "
	    "there\\n' > src/b.txt; echo hello > node_modules/m/n.txt");
	got = tool("grep", "{\"pattern\":\"hel+o\"}", &e);
	assert_false(e);
	/* rg skips node_modules when ignored only; neither tool lists it here: .gitignore-free,
	 * so the check is on the two files */
	snprintf(want, sizeof(want), "%s/a.txt:1:hello world", work);
	assert_non_null(strstr(got, want));
	snprintf(want, sizeof(want), "%s/src/b.txt:2:hello there", work);
	assert_non_null(strstr(got, want));
	if (!rg) {
		/* the SDK's walker: no node_modules, lines joined without a trailing newline */
		assert_null(strstr(got, "node_modules"));
		assert_true(got[strlen(got) - 1] != '\n');
	}
	ok("grep", "{\"pattern\":\"nothing-like-this\"}", "no matches");
	snprintf(want, sizeof(want), rg ? "2:hello there\n" : "%s/src/b.txt:2:hello there", work);
	ok("grep", "{\"pattern\":\"there\",\"path\":\"src/b.txt\"}", want);
	out_of_workdir("grep", "{\"pattern\":\"x\",\"path\":\"../\"}", "../");
	bad("grep", "{}", "grep: pattern is required");
	got = tool("grep", "{\"pattern\":\"(\"}", &e);
	assert_true(e);
	want[0] = '\0';
	strcat(want, rg ? "grep: rg failed: " : "grep: invalid regex: ");
	assert_true(!strncmp(got, want, strlen(want)));
	/* a pattern that looks like an option is a pattern */
	ok("grep", "{\"pattern\":\"--version\"}", "no matches");
	/* more than the output limit */
	shf("seq -f 'match line %%06g' 1 20000 > many.txt");
	got = tool("grep", "{\"pattern\":\"match\",\"path\":\"many.txt\"}", &e);
	assert_false(e);
	snprintf(want, sizeof(want), "[output truncated at %d bytes]", TOOLS_OUTPUT_MAX);
	assert_string_equal(got + strlen(got) - strlen(want), want);
	assert_true(strlen(got) <= TOOLS_OUTPUT_MAX + strlen(want) + 1);
	assert_true(strlen(got) > TOOLS_OUTPUT_MAX - 64);
}

static void test_grep_rg(void **state)
{
	(void)state;
	if (system("command -v rg >/dev/null"))
		skip();
	grep_cases(1);
}

/* How many processes have S in their command line. */
static int procs_naming(const char *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char path[300], buf[8192];
		ssize_t len;
		int fd;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		len = read(fd, buf, sizeof(buf));
		close(fd);
		n += len > 0 && memmem(buf, (size_t)len, s, strlen(s));
	}
	closedir(d);
	return n;
}

static void test_grep_fallback(void **state)
{
	DIR *d = opendir("/usr/bin");
	struct dirent *e;
	char from[TEST_PATH_MAX], to[TEST_PATH_MAX * 2], want[TEST_PATH_MAX * 2];
	(void)state;

	/* a PATH with everything of /usr/bin but rg */
	assert_non_null(d);
	mkdir(norg, 0755);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "rg"))
			continue;
		snprintf(from, sizeof(from), "/usr/bin/%s", e->d_name);
		snprintf(to, sizeof(to), "%s/%s", norg, e->d_name);
		assert_int_equal(symlink(from, to), 0);
	}
	closedir(d);
	pctx.path_env = norg;
	grep_cases(0);
	/* a search the sandbox stops (a FIFO blocks it): the SDK's walker's timeout */
	shf("mkfifo fifo");
	pctx.timeout_cap_ms = 500;
	bad("grep", "{\"pattern\":\"x\",\"path\":\"fifo\"}", "grep: timed out after 60s");
	pctx.timeout_cap_ms = 0;
	/* and stopping the process group stopped the search: within 1 s nothing runs on it */
	snprintf(from, sizeof(from), "%s/fifo", work);
	{
		long until = now_ms() + 1000;

		while (procs_naming(from) && now_ms() < until)
			usleep(20000);
		if (procs_naming(from))
			fail_msg("a process still searches %s", from);
	}
	/* one timeout(1) stops: what it found, or an error when nothing */
	snprintf(to, sizeof(to), "%s/timeout", norg);
	assert_int_equal(unlink(to), 0);
	{
		static const char fake[] =
			"#!/bin/sh\nshift 2\n[ \"$FAKE_LINES\" -gt 0 ] && \"$@\" "
			"| head -n \"$FAKE_LINES\"\nexit 124\n";

		spit("fake-timeout", fake, strlen(fake));
	}
	snprintf(from, sizeof(from), "%s/fake-timeout", work);
	assert_int_equal(chmod(from, 0755), 0);
	assert_int_equal(symlink(from, to), 0);
	setenv("FAKE_LINES", "2", 1);
	snprintf(want, sizeof(want),
		 "%s/many.txt:1:match line 000001\n%s/many.txt:2:match line 000002\n[the search "
		 "was cut short after %d ms]",
		 work, work, TOOLS_GREP_TIMEOUT_MS);
	ok("grep", "{\"pattern\":\"match\",\"path\":\"many.txt\"}", want);
	setenv("FAKE_LINES", "0", 1);
	bad("grep", "{\"pattern\":\"match\",\"path\":\"many.txt\"}", "grep: timed out after 60s");
	unsetenv("FAKE_LINES");
	snprintf(to, sizeof(to), "%s/timeout", norg);
	assert_int_equal(unlink(to), 0);
	assert_int_equal(symlink("/usr/bin/timeout", to), 0);
	/* an rg inside the workdir is never run */
	shf("printf '#!/bin/sh\\necho planted\\n' > rg && chmod +x rg");
	{
		char path[TEST_PATH_MAX * 2];

		snprintf(path, sizeof(path), "%s:%s", work, norg);
		pctx.path_env = path;
		ok("grep", "{\"pattern\":\"planted\",\"path\":\"a.txt\"}", "no matches");
	}
}

/* ---- confinement ---- */

static void test_confinement(void **state)
{
	char in[TEST_PATH_MAX * 2], outfile[TEST_PATH_MAX];
	(void)state;

	snprintf(outfile, sizeof(outfile), "%s/secret", outside);
	shf("echo secret > '%s' && ln -s '%s' link && ln -s '%s' linkdir && ln -s '%s/new' "
	    "dangling "
	    "&& ln -s loop1 loop2 && ln -s loop2 loop1 && echo in > inside.txt && ln -s inside.txt "
	    "ok-link",
	    outfile, outfile, outside, outside);
	out_of_workdir("read", "{\"file_path\":\"../outside/secret\"}", "../outside/secret");
	out_of_workdir("read", "{\"file_path\":\"link\"}", "link");
	out_of_workdir("read", "{\"file_path\":\"linkdir/secret\"}", "linkdir/secret");
	snprintf(in, sizeof(in), "{\"file_path\":\"%s\"}", outfile);
	out_of_workdir("read", in, outfile);
	out_of_workdir("read", "{\"file_path\":\"/etc/passwd\"}", "/etc/passwd");
	bad("read", "{\"file_path\":\"loop1\"}",
	    "path \"loop1\": too many levels of symbolic links");
	ok("read", "{\"file_path\":\"ok-link\"}", "in\n");
	/* a dangling link out: refused, nothing made outside */
	out_of_workdir("write", "{\"file_path\":\"dangling\",\"content\":\"x\"}", "dangling");
	snprintf(in, sizeof(in), "%s/new", outside);
	assert_false(exists(in));
	out_of_workdir("write", "{\"file_path\":\"linkdir/x\",\"content\":\"x\"}", "linkdir/x");
	out_of_workdir("edit", "{\"file_path\":\"link\",\"old_string\":\"s\",\"new_string\":\"x\"}",
		       "link");
	out_of_workdir("grep", "{\"pattern\":\"secret\",\"path\":\"linkdir\"}", "linkdir");
	/* glob does not walk through a link out */
	ok("glob", "{\"pattern\":\"**/secret\"}", "no matches");
	ok("glob", "{\"pattern\":\"linkdir/*\"}", "no matches");
	/* the workdir's state directory is not a way out either: bash can go anywhere (it is
	 * the sandbox's), the file tools cannot */
	ok("bash", "{\"command\":\"cat ../outside/secret\"}", "secret");
}

/* ---- toolset_load ---- */

/* The SDK's definitions (betaAgentToolset20260401 through betaTool, @anthropic-ai/sdk 1.14). */
static const char *const sdk_definitions[] = {
	"{\"type\":\"custom\",\"name\":\"bash\",\"input_schema\":{\"type\":\"object\","
	"\"properties\":{\"command\":{\"type\":\"string\",\"description\":\"The command to "
	"run\"},\"restart\":{\"type\":\"boolean\",\"description\":\"Restart the persistent shell "
	"before running\"},\"timeout_ms\":{\"type\":\"integer\",\"description\":\"Per-call timeout "
	"in milliseconds\"}}},\"description\":\"Run a bash command in a persistent shell. State "
	"(cwd, env vars) persists across calls.\"}",
	"{\"type\":\"custom\",\"name\":\"read\",\"input_schema\":{\"type\":\"object\","
	"\"properties\":{\"file_path\":{\"type\":\"string\"},\"view_range\":{\"type\":\"array\","
	"\"items\":{\"type\":\"integer\"},\"description\":\"[start_line, end_line] 1-indexed "
	"inclusive\"}},\"required\":[\"file_path\"]},\"description\":\"Read a UTF-8 text file "
	"relative to the workdir.\"}",
	"{\"type\":\"custom\",\"name\":\"write\",\"input_schema\":{\"type\":\"object\","
	"\"properties\":{\"file_path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}},"
	"\"required\":[\"file_path\",\"content\"]},\"description\":\"Write a UTF-8 text file "
	"relative to the workdir, creating parent directories as needed.\"}",
	"{\"type\":\"custom\",\"name\":\"edit\",\"input_schema\":{\"type\":\"object\","
	"\"properties\":{\"file_path\":{\"type\":\"string\"},\"old_string\":{\"type\":\"string\"},"
	"\"new_string\":{\"type\":\"string\"},\"replace_all\":{\"type\":\"boolean\"}},\"required\":"
	"[\"file_path\",\"old_string\",\"new_string\"]},\"description\":\"Replace old_string with "
	"new_string in a file. old_string must be unique unless replace_all.\"}",
	"{\"type\":\"custom\",\"name\":\"glob\",\"input_schema\":{\"type\":\"object\","
	"\"properties\":{\"pattern\":{\"type\":\"string\"},\"path\":{\"type\":\"string\","
	"\"description\":\"Directory to search in. Defaults to the "
	"workdir.\"}},\"required\":[\"pattern\"]},\"description\":\"Match files under the workdir "
	"against a glob pattern. Results are mtime-sorted, newest first.\"}",
	"{\"type\":\"custom\",\"name\":\"grep\",\"input_schema\":{\"type\":\"object\","
	"\"properties\":{\"pattern\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"}},"
	"\"required\":[\"pattern\"]},\"description\":\"Search file contents for a regex. Uses "
	"ripgrep if available, otherwise a built-in walker.\"}",
};

/* toolset_load of the JSON TOOLS must succeed. */
static void load(const char *tools, struct toolset *ts)
{
	json_t *t = tools ? json_loads(tools, 0, NULL) : NULL;
	char err[256];

	assert_true(!tools || t);
	if (toolset_load(t, ts, err, sizeof(err)))
		fail_msg("toolset_load %s: %s", tools, err);
	json_decref(t);
}

/* The names of TS's definitions, space-separated. */
static const char *names(const struct toolset *ts)
{
	static char buf[512];
	const json_t *d;
	size_t i;

	buf[0] = '\0';
	json_array_foreach (ts->definitions, i, d) {
		if (i)
			strcat(buf, " ");
		strcat(buf, json_string_value(json_object_get(d, "name")));
	}
	return buf;
}

/* TS offers NAME as a tool of KIND under the policy POL. */
static void expect_kind(const struct toolset *ts, const char *name, enum tool_kind kind,
			enum tool_policy pol)
{
	enum tool_policy got = (enum tool_policy) - 1; /* -1: not set */
	enum tool_kind k = toolset_kind(ts, name, &got);

	if (k != kind || got != pol)
		fail_msg("%s: kind %d, policy %d; want %d, %d", name, k, got, kind, pol);
}

/* TS offers TOOL of the MCP server SERVER under the policy POL. */
static void expect_mcp_policy(const struct toolset *ts, const char *server, const char *tool,
			      enum tool_policy pol)
{
	enum tool_policy got = (enum tool_policy) - 1; /* -1: not set */
	int offered = toolset_mcp_policy(ts, server, tool, &got);

	if (offered != 1 || got != pol)
		fail_msg("%s/%s: offered %d, policy %d; want 1, %d", server, tool, offered, got,
			 pol);
}

static void test_toolset_builtins(void **state)
{
	/* configurations of the toolset: the names offered, and some of them with their policy */
	static const struct {
		const char *tools, *names;
		struct {
			const char *name;
			enum tool_policy pol;
		} offered[2];
	} configured[] = {
		/* defaults off, some on; web_fetch is never offered */
		{ "[{\"type\":\"agent_toolset_20260401\",\"default_config\":{\"enabled\":false,"
		  "\"permission_policy\":{\"type\":\"always_ask\"}},"
		  "\"configs\":[{\"name\":\"read\",\"enabled\":true},{\"name\":\"bash\","
		  "\"type\":\"bash\",\"enabled\":true,"
		  "\"permission_policy\":{\"type\":\"always_allow\"}},{\"name\":\"web_fetch\","
		  "\"enabled\":true,\"allowed_domains\":[\"example.com\"]}]}]",
		  "bash read",
		  { { "bash", TOOL_ALLOW }, { "read", TOOL_ASK } } },
		/* the resolved shape of an agent as the API returns it; auto asks */
		{ "[{\"type\":\"agent_toolset_20260401\",\"default_config\":{\"enabled\":true,"
		  "\"permission_policy\":{\"type\":\"auto\"}},\"configs\":[{\"name\":\"grep\","
		  "\"enabled\":false,\"permission_policy\":{\"type\":\"always_allow\"}},"
		  "{\"name\":\"edit\",\"enabled\":null,\"permission_policy\":null}]}]",
		  "bash read write edit glob",
		  { { "edit", TOOL_ASK } } },
	};
	struct toolset ts;
	enum tool_policy pol;
	(void)state;

	load("[{\"type\":\"agent_toolset_20260401\"}]", &ts);
	assert_int_equal(json_array_size(ts.definitions), UNIT_LEN(sdk_definitions));
	for (size_t i = 0; i < UNIT_LEN(sdk_definitions); i++) {
		json_t *want = json_loads(sdk_definitions[i], 0, NULL);

		assert_true(json_equal(want, json_array_get(ts.definitions, i)));
		json_decref(want);
	}
	expect_kind(&ts, "bash", TOOL_BUILTIN, TOOL_ALLOW);
	assert_int_equal(toolset_kind(&ts, "web_fetch", &pol), TOOL_UNKNOWN);
	assert_int_equal(toolset_kind(&ts, "nope", &pol), TOOL_UNKNOWN);
	toolset_release(&ts);

	for (size_t i = 0; i < UNIT_LEN(configured); i++) {
		load(configured[i].tools, &ts);
		assert_string_equal(names(&ts), configured[i].names);
		for (size_t k = 0; k < UNIT_LEN(configured[i].offered); k++)
			if (configured[i].offered[k].name)
				expect_kind(&ts, configured[i].offered[k].name, TOOL_BUILTIN,
					    configured[i].offered[k].pol);
		toolset_release(&ts);
	}

	load(NULL, &ts);
	assert_int_equal(json_array_size(ts.definitions), 0);
	toolset_release(&ts);
	load("[]", &ts);
	assert_int_equal(json_array_size(ts.definitions), 0);
	toolset_release(&ts);
}

static void test_toolset_custom_mcp(void **state)
{
	static const char custom[] =
		"{\"type\":\"custom\",\"name\":\"get_weather\",\"description\":\"Weather\","
		"\"input_schema\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
		"\"string\"}},\"required\":[\"city\"]}}";
	struct toolset ts;
	enum tool_policy pol;
	char tools[1024];
	json_t *want;
	(void)state;

	snprintf(tools, sizeof(tools),
		 "[%s,{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"gh\"},{\"type\":"
		 "\"mcp_toolset\",\"mcp_server_name\":\"docs\",\"default_config\":{\"permission_"
		 "policy\":{\"type\":\"always_allow\"}},\"configs\":[{\"name\":\"search\","
		 "\"permission_policy\":{\"type\":\"always_ask\"}},{\"name\":\"drop\",\"enabled\":"
		 "false}]},{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\","
		 "\"enabled\":false}]},{\"type\":\"custom\",\"name\":\"bash\",\"description\":"
		 "\"mine\","
		 "\"input_schema\":{\"type\":\"object\"}}]",
		 custom);
	load(tools, &ts);
	assert_string_equal(names(&ts), "get_weather read write edit glob grep bash");
	want = json_loads(custom, 0, NULL);
	assert_true(json_equal(want, json_array_get(ts.definitions, 0)));
	json_decref(want);
	expect_kind(&ts, "get_weather", TOOL_CUSTOM, TOOL_ALLOW);
	assert_int_equal(toolset_kind(&ts, "bash", &pol), TOOL_CUSTOM);
	/* MCP: always_ask by default, then each server's and tool's configuration */
	expect_mcp_policy(&ts, "gh", "anything", TOOL_ASK);
	expect_mcp_policy(&ts, "docs", "other", TOOL_ALLOW);
	expect_mcp_policy(&ts, "docs", "search", TOOL_ASK);
	assert_int_equal(toolset_mcp_policy(&ts, "docs", "drop", &pol), 0);
	assert_int_equal(toolset_mcp_policy(&ts, "nope", "x", &pol), -1);
	assert_int_equal(toolset_kind(&ts, "gh", &pol), TOOL_UNKNOWN);
	toolset_release(&ts);
}

static void test_toolset_refusals(void **state)
{
	static const struct {
		const char *tools, *err;
	} cases[] = {
		{ "{}", "'tools' must be an array" },
		{ "[1]", "'tools[0]' must be an object" },
		{ "[{\"type\":\"agent_toolset_20250101\"}]",
		  "'tools[0].type' must be 'agent_toolset_20260401', 'mcp_toolset' or 'custom'" },
		{ "[{\"name\":\"x\"}]",
		  "'tools[0].type' must be 'agent_toolset_20260401', 'mcp_toolset' or 'custom'" },
		{ "[{\"type\":\"agent_toolset_20260401\"},{\"type\":\"agent_toolset_20260401\"}]",
		  "'tools[1]': a tool named 'bash' is offered twice" },
		{ "[{\"type\":\"agent_toolset_20260401\"},{\"type\":\"custom\",\"name\":\"read\","
		  "\"description\":\"\",\"input_schema\":{\"type\":\"object\"}}]",
		  "'tools[1].name': a tool named 'read' is offered twice" },
		{ "[{\"type\":\"custom\",\"description\":\"d\",\"input_schema\":{\"type\":"
		  "\"object\"}}]",
		  "'tools[0].name' must be a non-empty string" },
		{ "[{\"type\":\"custom\",\"name\":\"x\",\"input_schema\":{\"type\":\"object\"}}]",
		  "'tools[0].description' must be a string" },
		{ "[{\"type\":\"custom\",\"name\":\"x\",\"description\":\"d\",\"input_schema\":{"
		  "\"type\":\"array\"}}]",
		  "'tools[0].input_schema' must be a JSON Schema object with \"type\": "
		  "\"object\"" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"rm\"}]}]",
		  "'tools[0].configs[0].name' must be one of 'bash', 'read', 'write', 'edit', "
		  "'glob', 'grep', 'web_fetch', 'web_search'" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\",\"type\":"
		  "\"read\"}]}]",
		  "'tools[0].configs[0].type' must equal its name ('bash')" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\"},"
		  "{\"name\":\"bash\",\"enabled\":false}]}]",
		  "'tools[0].configs[1].name' ('bash') is configured twice (also in "
		  "'tools[0].configs[0]')" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"configs\":{}}]",
		  "'tools[0].configs' must be an array" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"configs\":[\"bash\"]}]",
		  "'tools[0].configs[0]' must be an object" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"default_config\":[]}]",
		  "'tools[0].default_config' must be an object or null" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"default_config\":{\"enabled\":1}}]",
		  "'tools[0].default_config.enabled' must be a boolean or null" },
		{ "[{\"type\":\"agent_toolset_20260401\",\"default_config\":{\"permission_policy\":"
		  "{\"type\":\"never\"}}}]",
		  "'tools[0].default_config.permission_policy' must be {\"type\": "
		  "\"always_allow\"}, "
		  "{\"type\": \"always_ask\"} or {\"type\": \"auto\"}" },
		{ "[{\"type\":\"mcp_toolset\"}]",
		  "'tools[0].mcp_server_name' must be a non-empty string" },
		{ "[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"a\"},{\"type\":\"mcp_toolset\","
		  "\"mcp_server_name\":\"a\"}]",
		  "'tools[1].mcp_server_name' ('a') is named by two mcp_toolset entries" },
		{ "[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"a\",\"configs\":[{\"name\":"
		  "\"t\",\"permission_policy\":\"always_ask\"}]}]",
		  "'tools[0].configs[0].permission_policy' must be {\"type\": \"always_allow\"}, "
		  "{\"type\": \"always_ask\"} or {\"type\": \"auto\"}" },
	};
	(void)state;

	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		json_t *t = json_loads(cases[i].tools, 0, NULL);
		struct toolset ts = { 0 };
		char err[256] = "";

		assert_non_null(t);
		if (toolset_load(t, &ts, err, sizeof(err)) != -1 || strcmp(err, cases[i].err))
			fail_msg("%s: got '%s', want '%s'", cases[i].tools, err, cases[i].err);
		assert_null(ts.definitions);
		assert_null(ts.kinds);
		json_decref(t);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define T_STDIN(f) cmocka_unit_test_setup_teardown(f, setup_stdin, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_bash_output),
		T(test_bash_state),
		T(test_bash_status),
		T(test_bash_sentinel),
		T(test_bash_timeout),
		T(test_bash_truncation),
		T(test_bash_long_command),
		T(test_bash_input),
		T(test_read),
		T(test_read_big),
		T(test_write),
		T_STDIN(test_write),
		T(test_write_big),
		T_STDIN(test_write_big),
		T(test_edit),
		T_STDIN(test_edit),
		T(test_glob),
		T(test_glob_many),
		T(test_grep_rg),
		T(test_grep_fallback),
		T(test_confinement),
		T(test_toolset_builtins),
		T(test_toolset_custom_mcp),
		T(test_toolset_refusals),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	tool_result_release(&last);
	return rc;
}
