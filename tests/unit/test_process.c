/* Unit tests of running a command (sandbox/process.c), the local, bwrap and srt backends' way:
 * a command is done when it exits, even when a job it left behind holds its output open. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/clock.h"
#include "../../sandbox/process.h"

#define TEST_TIMEOUT_S 30	  /* the commands' time limit */
#define TEST_PROMPT_MS 10000	  /* how soon they must be answered instead */
#define TEST_OUT_MAX (256 * 1024) /* output kept: more than a pipe holds */
#define TEST_SMALL_OUT_MAX 4096	  /* output kept for the chatty job */
#define TEST_SEQ_N 30000	  /* `seq 1 30000` prints 168894 bytes */
#define TEST_SEQ_BYTES 168894
#define TEST_GONE_MS 5000 /* how soon a killed job is gone */

static const char *const test_envp[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };

/* Run `sh -c SCRIPT` keeping OUT_MAX bytes; RES filled (release it). Milliseconds it took. */
static long run_sh(const char *script, size_t out_max, struct proc_result *res)
{
	const char *const argv[] = { "sh", "-c", script, NULL };
	long t0 = clock_mono_ms();

	assert_int_equal(proc_run((char *const *)argv, NULL, (char *const *)test_envp, -1,
				  TEST_TIMEOUT_S, out_max, NULL, res),
			 0);
	return clock_mono_ms() - t0;
}

/* Whether PID is gone within TEST_GONE_MS. */
static int gone(pid_t pid)
{
	for (long until = clock_mono_ms() + TEST_GONE_MS; clock_mono_ms() < until;) {
		if (kill(pid, 0) && errno == ESRCH)
			return 1;
		clock_sleep_ms(20);
	}
	return 0;
}

/* `sleep 300 &` holds the output: the command is answered when it exits, with its status and
 * its output, and the job (in its process group) is killed. */
static void test_background_job(void **state)
{
	struct proc_result res;
	long took;
	pid_t job;
	(void)state;

	took = run_sh("sleep 300 & echo $!; exit 4", TEST_OUT_MAX, &res);
	assert_true(took < TEST_PROMPT_MS);
	assert_false(res.timed_out);
	assert_int_equal(res.exit_code, 4);
	job = (pid_t)atol(res.output);
	assert_true(job > 0);
	assert_true(gone(job));
	proc_result_release(&res);
}

/* All the output written before the exit is kept, more than a pipe holds included. */
static void test_background_output_whole(void **state)
{
	struct proc_result res;
	char last[32];
	int n;
	(void)state;

	assert_true(run_sh("sleep 300 & seq 1 30000", TEST_OUT_MAX, &res) < TEST_PROMPT_MS);
	assert_int_equal(res.exit_code, 0);
	assert_int_equal(res.len, TEST_SEQ_BYTES);
	assert_false(res.truncated);
	n = snprintf(last, sizeof(last), "\n%d\n", TEST_SEQ_N);
	assert_memory_equal(res.output + res.len - (size_t)n, last, (size_t)n);
	assert_memory_equal(res.output, "1\n2\n", 4);
	proc_result_release(&res);
}

/* A job that writes on and on (`yes &`) ends the command no later and keeps nothing past the
 * cap (what it wrote after the command's last line may have pushed that line out). */
static void test_chatty_job(void **state)
{
	struct proc_result res;
	(void)state;

	assert_true(run_sh("yes & sleep 0.2; echo done >&2", TEST_SMALL_OUT_MAX, &res) <
		    TEST_PROMPT_MS);
	assert_false(res.timed_out);
	assert_int_equal(res.exit_code, 0);
	assert_true(res.len <= TEST_SMALL_OUT_MAX);
	assert_true(res.truncated);
	proc_result_release(&res);
}

/* A job in a group of its own (setsid) is out of the group kill's reach: the command is still
 * answered when it exits, and what it writes later is not read. */
static void test_job_elsewhere(void **state)
{
	struct proc_result res;
	pid_t job;
	(void)state;

	assert_true(run_sh("setsid sh -c 'while :; do echo more; sleep 0.01; done' & echo $!",
			   TEST_OUT_MAX, &res) < TEST_PROMPT_MS);
	assert_false(res.timed_out);
	assert_int_equal(res.exit_code, 0);
	job = (pid_t)atol(res.output);
	assert_true(job > 0);
	kill(job, SIGKILL);
	assert_true(gone(job));
	proc_result_release(&res);
}

/* A command that closes its output and runs on is still waited for. */
static void test_closed_output(void **state)
{
	struct proc_result res;
	(void)state;

	assert_true(run_sh("exec >&- 2>&-; sleep 1; exit 5", TEST_OUT_MAX, &res) >= 1000);
	assert_int_equal(res.exit_code, 5);
	assert_false(res.timed_out);
	proc_result_release(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_background_job),
		cmocka_unit_test(test_background_output_whole),
		cmocka_unit_test(test_chatty_job),
		cmocka_unit_test(test_job_elsewhere),
		cmocka_unit_test(test_closed_output),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
