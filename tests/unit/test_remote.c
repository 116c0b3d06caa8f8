/* Unit tests of the HTTP drivers' helpers: sandbox/remote.c (shell quoting checked
 * against a real POSIX shell, the output tail) and sandbox/http.c (credential file
 * handling, error strings without secrets, escaping, retries of connection failures, the
 * caller's watch stopping a call, calls at once from two threads on one client). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../sandbox/http.h"
#include "../../sandbox/remote.h"
#include "unit.h"

#define OUT_MAX 65536

/* Run /bin/sh -c 'eval "set -- $1"; printf "%s\0" "$@"' with LINE as $1 and split what it
 * prints: the words the shell read from LINE. Returns their count. */
static int shell_words(const char *line, char words[][256], int max)
{
	static const char script[] = "eval \"set -- $1\"; for a; do printf '%s\\0' \"$a\"; done";
	char buf[OUT_MAX];
	size_t len = unit_sh(script, line, buf, sizeof(buf));
	int count = 0;

	for (size_t i = 0; i < len && count < max; count++) {
		size_t w = strlen(buf + i);
		assert_true(w < 256);
		memcpy(words[count], buf + i, w + 1);
		i += w + 1;
	}
	return count;
}

static void assert_round_trip(const char *const argv[])
{
	char words[32][256];
	char *line = sh_join((char *const *)argv);
	int n, argc = 0;

	assert_non_null(line);
	while (argv[argc])
		argc++;
	n = shell_words(line, words, 32);
	if (n != argc)
		fail_msg("'%s' read back as %d words, expected %d", line, n, argc);
	for (int i = 0; i < argc; i++)
		if (strcmp(words[i], argv[i]))
			fail_msg("'%s': word %d is '%s', expected '%s'", line, i, words[i],
				 argv[i]);
	free(line);
}

/* sh_join(ARGV) is EXPECTED, which the shell reads back as ARGV. */
static void assert_joins(const char *const argv[], const char *expected)
{
	char *line = sh_join((char *const *)argv);

	assert_string_equal(line, expected);
	free(line);
	assert_round_trip(argv);
}

static void test_sh_join_plain(void **state)
{
	const char *const argv[] = {
		"pip", "install", "--target", "/workspace/.pip", "requests==2.31", NULL
	};
	(void)state;
	assert_joins(argv, "pip install --target /workspace/.pip requests==2.31");
}

static void test_sh_join_quotes(void **state)
{
	const char *const argv[] = { "sh", "-c", "exit 3", "it's", "'", "''", "a'b'c", NULL };
	(void)state;
	assert_joins(argv,
		     "sh -c 'exit 3' 'it'\"'\"'s' ''\"'\"'' ''\"'\"''\"'\"'' 'a'\"'\"'b'\"'\"'c'");
}

static void test_sh_join_no_expansion(void **state)
{
	const char *const argv[] = { "echo",   "$HOME",	      "`id`", "$(id)", "*",	"a;b",
				     "a&&b",   "a|b",	      "x>y",  "~",     "\\",	"\"q\"",
				     "a b\tc", "line\nbreak", "!",    "#c",    "{a,b}", NULL };
	(void)state;
	assert_round_trip(argv);
}

static void test_sh_join_empty_and_utf8(void **state)
{
	const char *const argv[] = { "printf", "", "é ü", "-", "--", "=", NULL };
	char *line = sh_join((char *const *)argv);
	char *none[] = { NULL };
	(void)state;
	assert_non_null(strstr(line, " '' "));
	free(line);
	assert_round_trip(argv);
	assert_null(sh_join(none));
	assert_null(sh_join(NULL));
}

static void test_out_tail_keeps_end(void **state)
{
	struct out_tail t;
	struct proc_result res;
	(void)state;

	memset(&res, 0, sizeof(res));
	out_tail_init(&t, 8);
	out_tail_put(&t, "abc", 3);
	out_tail_put(&t, "defgh", 5);
	out_tail_finish(&t, &res);
	assert_string_equal(res.output, "abcdefgh");
	assert_false(res.truncated);

	out_tail_init(&t, 8);
	out_tail_put(&t, "abcdef", 6);
	out_tail_put(&t, "ghij", 4);
	out_tail_finish(&t, &res);
	assert_string_equal(res.output, "cdefghij");
	assert_int_equal(res.len, 8);
	assert_true(res.truncated);

	out_tail_init(&t, 4);
	out_tail_put(&t, "0123456789", 10);
	out_tail_finish(&t, &res);
	assert_string_equal(res.output, "6789");
	assert_true(res.truncated);

	out_tail_init(&t, 4);
	out_tail_finish(&t, &res);
	assert_string_equal(res.output, "");
	proc_result_release(&res);
}

static void write_file(const char *path, const char *content, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	close(fd);
}

static void test_key_file(void **state)
{
	char dir[] = "/tmp/terrarium-test-remote.XXXXXX", path[256], err[512];
	struct remote_conf rc;
	struct http_client c;
	char big[HTTP_KEY_MAX + 10];
	(void)state;

	assert_non_null(mkdtemp(dir));
	memset(&rc, 0, sizeof(rc));
	snprintf(rc.url, sizeof(rc.url), "http://127.0.0.1:1/");
	rc.timeout_s = 2;
	snprintf(path, sizeof(path), "%s/key", dir);
	snprintf(rc.api_key_file, sizeof(rc.api_key_file), "%s", path);

	/* missing file: the path and the reason, nothing else */
	assert_int_equal(http_init(&c, "opensandbox", &rc, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));

	/* trailing newline stripped; base URL loses its trailing slash */
	write_file(path, "s3cr3t-KEY-value\r\n", 18);
	assert_int_equal(http_init(&c, "opensandbox", &rc, err, sizeof(err)), 0);
	assert_string_equal(c.key, "s3cr3t-KEY-value");
	assert_string_equal(c.base, "http://127.0.0.1:1");
	http_release(&c);
	assert_string_equal(c.key, "");

	/* empty, control characters inside, too large: refused without quoting the content */
	write_file(path, "\n", 1);
	assert_int_equal(http_init(&c, "opensandbox", &rc, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is empty"));
	write_file(path, "first-line-secret\nsecond-line-secret\n", 37);
	assert_int_equal(http_init(&c, "opensandbox", &rc, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "control characters"));
	assert_null(strstr(err, "secret"));
	memset(big, 'k', sizeof(big));
	write_file(path, big, sizeof(big));
	assert_int_equal(http_init(&c, "opensandbox", &rc, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "too large"));
	assert_null(strstr(err, "kkkk"));

	unlink(path);
	rmdir(dir);
}

static void test_error_string(void **state)
{
	struct http_client c;
	struct http_request rq;
	struct http_response rs;
	char err[512], body[] = "{\"message\":\"bad key s3cr3t-KEY-value\",\"token\":\"abcdefgh\"}";
	(void)state;

	memset(&c, 0, sizeof(c));
	snprintf(c.key, sizeof(c.key), "s3cr3t-KEY-value");
	memset(&rq, 0, sizeof(rq));
	rq.method = "GET";
	rq.path = "/v1/sandboxes?metadata=terrarium.name%3Dx";
	memset(&rs, 0, sizeof(rs));
	rs.status = 401;
	rs.body = body;
	rs.len = strlen(body);
	http_error(&c, &rq, &rs, err, sizeof(err));
	assert_true(!strncmp(err, "GET /v1/sandboxes: status 401: ", 31));
	assert_null(strstr(err, "s3cr3t"));
	assert_null(strstr(err, "abcdefgh"));
	assert_null(strstr(err, "metadata"));
}

static void test_escape(void **state)
{
	char out[64];
	(void)state;
	assert_int_equal(http_escape("terrarium.name=sesn_01 x/y", out, sizeof(out)), 0);
	assert_string_equal(out, "terrarium.name%3Dsesn_01%20x%2Fy");
	assert_int_equal(http_escape("abcdef", out, 6), -1);
	assert_int_equal(http_escape("abcde", out, 6), 0);
}

static void test_connection_refused_retries(void **state)
{
	struct remote_conf rc;
	struct http_client c;
	struct http_request rq;
	struct http_response rs;
	char err[512];
	(void)state;

	memset(&rc, 0, sizeof(rc));
	snprintf(rc.url, sizeof(rc.url), "http://127.0.0.1:1");
	rc.timeout_s = 2;
	assert_int_equal(http_init(&c, "docker", &rc, err, sizeof(err)), 0);
	memset(&rq, 0, sizeof(rq));
	rq.method = "GET";
	rq.path = "/containers/x/json";
	assert_int_equal(http_do(&c, &rq, &rs, err, sizeof(err)), -1);
	assert_int_equal(rs.tries, 1 + HTTP_RETRIES_MAX);
	assert_true(c.retry_sleep_ms > 0);
	assert_non_null(strstr(err, "GET /containers/x/json: "));
	http_response_release(&rs);

	/* no_retry: one try */
	c.retry_sleep_ms = 0;
	rq.no_retry = 1;
	assert_int_equal(http_do(&c, &rq, &rs, err, sizeof(err)), -1);
	assert_int_equal(rs.tries, 1);
	assert_int_equal(c.retry_sleep_ms, 0);
	http_response_release(&rs);
	http_release(&c);
}

struct ticks {
	int n, stop_at;
};

static int count_tick(void *arg)
{
	struct ticks *t = arg;
	return ++t->n >= t->stop_at;
}

/* A server that takes connections (the kernel's backlog) and never answers: its socket (the
 * caller closes it), and RC pointing at it with a total timeout of TIMEOUT_S. */
static int never_answering(struct remote_conf *rc, long timeout_s)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	memset(rc, 0, sizeof(*rc));
	snprintf(rc->url, sizeof(rc->url), "http://127.0.0.1:%d", ntohs(a.sin_port));
	rc->timeout_s = timeout_s;
	return fd;
}

/* This thread's watch (http.h): asked while a call waits for its answer, its stop aborts the
 * call at once (without it the call would end at its 10 s timeout: timed_out); asked in the
 * retry backoff too; not asked once a cleanup call enters none. */
static void test_watch_stops_a_call(void **state)
{
	struct ticks t = { 0, 2 };
	struct proc_watch w = { count_tick, &t, 50 };
	struct http_watch_ctx outer, inner;
	struct remote_conf rc;
	struct http_client c;
	struct http_request rq;
	struct http_response rs;
	char err[512];
	int fd = never_answering(&rc, 10);
	(void)state;

	assert_int_equal(http_init(&c, "docker", &rc, err, sizeof(err)), 0);
	outer = http_watch_enter(&w);
	memset(&rq, 0, sizeof(rq));
	rq.method = "GET";
	rq.path = "/never";
	assert_int_equal(http_do(&c, &rq, &rs, err, sizeof(err)), -1);
	assert_true(rs.stopped);
	assert_false(rs.timed_out);
	assert_int_equal(t.n, 2);
	assert_non_null(strstr(err, "GET /never: stopped by the caller's watch"));
	http_response_release(&rs);
	http_release(&c);
	close(fd);

	/* a refused connection is retried after a backoff, which asks the watch: one try */
	snprintf(rc.url, sizeof(rc.url), "http://127.0.0.1:1");
	assert_int_equal(http_init(&c, "docker", &rc, err, sizeof(err)), 0);
	/* a new call under the same watch */
	http_watch_leave(outer);
	outer = http_watch_enter(&w);
	t = (struct ticks){ 0, 1 };
	assert_int_equal(http_do(&c, &rq, &rs, err, sizeof(err)), -1);
	assert_true(rs.stopped);
	assert_int_equal(rs.tries, 1);
	assert_int_equal(t.n, 1);
	http_response_release(&rs);

	/* a call cleaning up after a stop enters none: never asked */
	inner = http_watch_enter(NULL);
	t = (struct ticks){ 0, 1 };
	rq.no_retry = 1;
	assert_int_equal(http_do(&c, &rq, &rs, err, sizeof(err)), -1);
	assert_false(rs.stopped);
	assert_int_equal(t.n, 0);
	http_response_release(&rs);
	http_watch_leave(inner);
	http_watch_leave(outer);
	/* left: no watch on this thread */
	t = (struct ticks){ 0, 1 };
	assert_int_equal(http_do(&c, &rq, &rs, err, sizeof(err)), -1);
	assert_int_equal(t.n, 0);
	http_response_release(&rs);
	http_release(&c);
}

/* One thread's call for test_calls_at_once. */
struct call_at_once {
	struct http_client *c;
	const struct proc_watch *watch; /* this thread's, or NULL */
	struct http_response rs;
	int rc;
	char err[512];
};

static void *call_thread(void *arg)
{
	struct call_at_once *k = arg;
	struct http_request rq = http_req("GET", "/never", NULL);
	struct http_watch_ctx prev = http_watch_enter(k->watch);

	rq.no_retry = 1;
	k->rc = http_do(k->c, &rq, &k->rs, k->err, sizeof(k->err));
	http_watch_leave(prev);
	return NULL;
}

/* Two calls at once on one client (the runner's turns on one struct sbx): each has a libcurl
 * handle of its own, and a watch is its own thread's. A's watch stops A's call; B's call, with
 * no watch, runs to its time limit, never stopped by A's; the client keeps a handle after. */
static void test_calls_at_once(void **state)
{
	struct ticks t = { 0, 2 };
	struct proc_watch w = { count_tick, &t, 50 };
	struct remote_conf rc;
	struct http_client c;
	struct call_at_once ka = { .c = &c, .watch = &w }, kb = { .c = &c };
	pthread_t ta, tb;
	char err[512];
	int fd = never_answering(&rc, 2);
	(void)state;

	assert_int_equal(http_init(&c, "docker", &rc, err, sizeof(err)), 0);
	assert_int_equal(pthread_create(&tb, NULL, call_thread, &kb), 0);
	assert_int_equal(pthread_create(&ta, NULL, call_thread, &ka), 0);
	assert_int_equal(pthread_join(ta, NULL), 0);
	assert_int_equal(pthread_join(tb, NULL), 0);
	assert_int_equal(ka.rc, -1);
	assert_true(ka.rs.stopped);
	assert_false(ka.rs.timed_out);
	assert_int_equal(t.n, 2);
	assert_int_equal(kb.rc, -1);
	assert_false(kb.rs.stopped);
	assert_true(kb.rs.timed_out);
	assert_non_null(c.easy);
	http_response_release(&ka.rs);
	http_response_release(&kb.rs);
	http_release(&c);
	close(fd);
}

UNIT_MAIN(cmocka_unit_test(test_sh_join_plain), cmocka_unit_test(test_sh_join_quotes),
	  cmocka_unit_test(test_sh_join_no_expansion),
	  cmocka_unit_test(test_sh_join_empty_and_utf8), cmocka_unit_test(test_out_tail_keeps_end),
	  cmocka_unit_test(test_key_file), cmocka_unit_test(test_error_string),
	  cmocka_unit_test(test_escape), cmocka_unit_test(test_connection_refused_retries),
	  cmocka_unit_test(test_watch_stops_a_call), cmocka_unit_test(test_calls_at_once))
