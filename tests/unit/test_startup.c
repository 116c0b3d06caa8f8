/* Unit tests of what a program does at start (common/startup.c): its lease owner's name, the
 * signals it stops on, the configuration it loads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/log.h"
#include "../../common/startup.h"
#include "unit.h"

#define OWNER_MAX 128

/* "PREFIXhost:pid:random": the host name cut at 60 bytes, then the pid, then 8 characters of
 * [0-9A-Za-z] that differ from one call to the next. */
static void test_owner(void **state)
{
	char host[64] = "host", want[OWNER_MAX], a[OWNER_MAX], b[OWNER_MAX];
	size_t n;
	(void)state;

	gethostname(host, sizeof(host) - 1);
	n = (size_t)snprintf(want, sizeof(want), "runner:%.60s:%d:", host, (int)getpid());
	startup_owner(a, sizeof(a), "runner:");
	startup_owner(b, sizeof(b), "runner:");
	assert_int_equal(strlen(a), n + 8);
	assert_memory_equal(a, want, n);
	assert_int_equal(
		strspn(a + n, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"), 8);
	assert_string_not_equal(a, b);
	startup_owner(a, sizeof(a), "");
	assert_memory_equal(a, want + strlen("runner:"), n - strlen("runner:"));
	startup_owner(a, 10, "runner:"); /* cut, still a string */
	assert_int_equal(strlen(a), 9);
}

static volatile sig_atomic_t stops;

static void on_stop(int sig)
{
	(void)sig;
	stops++;
}

/* SIGTERM and SIGINT reach the handler; SIGPIPE does not end the program. */
static void test_signals(void **state)
{
	struct sigaction sa;
	(void)state;

	startup_signals(on_stop);
	raise(SIGTERM);
	raise(SIGINT);
	raise(SIGPIPE);
	assert_int_equal(stops, 2);
	sigaction(SIGTERM, NULL, &sa);
	assert_false(sa.sa_flags & SA_RESTART);
}

/* A file that cannot be read is -1 (the reason is printed); a readable one is 0, its values
 * loaded. */
static void test_config(void **state)
{
	struct config cfg;
	char path[] = "/tmp/test_startup_XXXXXX";
	int fd = mkstemp(path);
	static const char ini[] = "[log]\nlevel = error\n";
	(void)state;

	assert_int_equal(startup_config(&cfg, "/nonexistent/terrarium.ini"), -1);
	assert_non_null(strstr(cfg.error, "/nonexistent/terrarium.ini"));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, ini, sizeof(ini) - 1), (ssize_t)(sizeof(ini) - 1));
	close(fd);
	assert_int_equal(startup_config(&cfg, path), 0);
	assert_int_equal(cfg.log_level, LOG_ERROR);
	unlink(path);
}

UNIT_MAIN(cmocka_unit_test(test_owner), cmocka_unit_test(test_signals),
	  cmocka_unit_test(test_config))
