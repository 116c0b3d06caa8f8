/* The MCP client (runner/mcp.c) against a real MCP server built on the official TypeScript SDK
 * (tests/mcp/server.mjs): initialize, tools/list over pages and tools/call with SSE and with JSON
 * answers, the session id and protocol version on every later request, a forgotten session, the
 * bearer (right, wrong, none), a refused connection, this machine's addresses refused by
 * default, a server that never answers, a tool that hangs (timeout, then
 * notifications/cancelled), a cancel, the size caps, JSON-RPC errors, an unknown protocol
 * version; then the names the model is offered for the server's tools.
 * tests/mcp/run.sh starts the server and sets MCP_TEST_URL (its base) and MCP_TEST_TOKEN. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../common/clock.h"
#include "../../runner/mcp.h"
#include "../unit/unit.h"
#include "../unit/unit_http.h"

#define SHORT_MS 500	      /* the time limits the timeout cases set */
#define SLACK_MS 1000	      /* how much later than its limit a timed-out call may return */
#define CANCEL_AFTER_MS 300   /* when the cancel case's callback starts saying stop */
#define CANCEL_LATENCY_MS 200 /* how long after that the call must have returned */
#define LOG_WAIT_MS 2000      /* how long a record is waited for in the server's log */
#define TEXT_CAP 10000	      /* the text cap the truncation case sets */
#define ANSWER_CAP 65536      /* the answer cap the answer-size case sets */
#define HUGE_BYTES 1000000    /* the text the huge tool returns */
#define URL_MAX 512	      /* a URL the tests make */
#define SERVER_TOOLS 8	      /* tools server.mjs offers (two a page) */
#define LONG_BEARER 400	      /* a bearer longer than the quote of an error answer */
#define BEARER_PIECE 12	      /* bytes of the bearer that must not be left anywhere */

/* Member KEY of element I of the array A, or NULL; and its string value. */
static json_t *at(const json_t *a, size_t i, const char *key)
{
	return json_object_get(json_array_get(a, i), key);
}

static const char *at_str(const json_t *a, size_t i, const char *key)
{
	return json_string_value(at(a, i, key));
}

static const char *base_url, *token;

/* The server runs on loopback: every client here may reach this machine's addresses but the
 * ones test_local_refused makes. */
#define LOCAL_OK .local_addresses = 1
static const struct mcp_limits here = { LOCAL_OK };

/* METHOD PATH on the server's control routes; its JSON answer (new reference). A test failure
 * unless it answers 200. */
static json_t *control(const char *method, const char *path)
{
	return unit_http_json(method, base_url, path, NULL);
}

static void reset_log(void)
{
	json_decref(control("POST", "/__reset"));
}

/* The server's log (an array, new reference). */
static json_t *server_log(void)
{
	json_t *doc = control("GET", "/__log"), *log = json_incref(json_object_get(doc, "log"));

	json_decref(doc);
	assert_true(json_is_array(log));
	return log;
}

/* The first record of the log whose member KEY is the string VALUE and, when ID >= 0, whose
 * "id" (or params.requestId) is ID; waited for up to LOG_WAIT_MS. New reference, or NULL. */
static json_t *wait_record(const char *key, const char *value, long long id)
{
	long long until = clock_mono_ms() + LOG_WAIT_MS;

	do {
		json_t *log = server_log(), *r, *found = NULL;
		size_t i;

		json_array_foreach (log, i, r) {
			const char *v = json_string_value(json_object_get(r, key));
			const json_t *rid = json_object_get(r, "id");

			if (json_is_null(rid) || !rid)
				rid = json_object_get(json_object_get(r, "params"), "requestId");
			if (v && !strcmp(v, value) && (id < 0 || json_integer_value(rid) == id)) {
				found = json_incref(r);
				break;
			}
		}
		json_decref(log);
		if (found)
			return found;
		clock_sleep_ms(20);
	} while (clock_mono_ms() < until);
	return NULL;
}

/* The URL of ROUTE on the server (a static buffer). */
static const char *url_of(const char *route)
{
	static char url[URL_MAX];

	snprintf(url, sizeof(url), "%s%s", base_url, route);
	return url;
}

static struct mcp_client *connect_ok(const char *route, const char *bearer,
				     const struct mcp_limits *lim)
{
	struct mcp_error err;
	struct mcp_client *c =
		mcp_connect(url_of(route), bearer, lim ? lim : &here, NULL, NULL, &err);

	if (!c)
		fail_msg("connect %s: kind %d, HTTP %ld: %s", route, err.kind, err.http_status,
			 err.message);
	return c;
}

/* Call TOOL with ARGS (JSON text, or NULL); the result's content as compact JSON text (caller
 * frees). A test failure unless the server answers with a result. */
static char *call_ok(struct mcp_client *c, const char *tool, const char *args,
		     struct mcp_result *out)
{
	json_t *a = args ? json_loads(args, 0, NULL) : NULL;
	struct mcp_error err;
	char *text;

	if (mcp_call(c, tool, a, out, &err))
		fail_msg("call %s: kind %d: %s", tool, err.kind, err.message);
	json_decref(a);
	text = json_dumps(out->content, JSON_COMPACT);
	assert_non_null(text);
	return text;
}

static void assert_call_text(struct mcp_client *c, const char *tool, const char *args,
			     const char *want)
{
	struct mcp_result r;
	char *got = call_ok(c, tool, args, &r);

	assert_string_equal(got, want);
	free(got);
	mcp_result_release(&r);
}

/* ---- the two answer modes ---- */

/* cmocka's entry of the test F, named TEST, on ROUTE: the state it starts with. */
#define ON_ROUTE(test, f, route)                                                                   \
	{                                                                                          \
		.name = #test, .test_func = f, .initial_state = (void *)(route)                    \
	}

/* initialize, tools/list over four pages, tools/call, DELETE at the end, on the route in
 * *STATE; every request after initialize carries the session id and the protocol version,
 * every POST both media types in Accept. */
static void one_mode(void **state)
{
	static const char *const cursors[] = { NULL, "page-2", "page-4", "page-6" };
	const char *route = *state;
	struct mcp_error err;
	struct mcp_client *c;
	json_t *tools, *log, *r;
	char sid[MCP_SESSION_ID_MAX + 1];
	size_t i, lists = 0;

	reset_log();
	c = connect_ok(route, NULL, NULL);
	assert_string_equal(mcp_protocol(c), MCP_PROTOCOL_VERSION);
	assert_true(strlen(mcp_session_id(c)) > 0);
	snprintf(sid, sizeof(sid), "%s", mcp_session_id(c));
	assert_int_equal(mcp_list_tools(c, &tools, &err), 0);
	assert_int_equal(json_array_size(tools), SERVER_TOOLS);
	assert_string_equal(at_str(tools, 0, "name"), "add");
	assert_string_equal(at_str(tools, 7, "name"), "naming.test/é");
	assert_string_equal(at_str(tools, 0, "description"), "Adds two numbers");
	json_decref(tools);
	assert_call_text(c, "add", "{\"a\": 2, \"b\": 3.5}",
			 "[{\"type\":\"text\",\"text\":\"5.5\"}]");
	assert_call_text(c, "progress", NULL,
			 "[{\"type\":\"text\",\"text\":\"done after 3 notes\"}]");
	assert_string_equal(mcp_session_id(c), sid);
	mcp_close(c);

	r = wait_record("http", "DELETE", -1); /* the last record */
	assert_non_null(r);
	json_decref(r);
	log = server_log();
	json_array_foreach (log, i, r) {
		const char *rpc = json_string_value(json_object_get(r, "rpc"));
		const char *http = json_string_value(json_object_get(r, "http"));

		if (!json_object_get(r, "http")) {
			if (!strcmp(json_string_value(json_object_get(r, "event")), "tools/list")) {
				const char *cur = json_string_value(json_object_get(r, "cursor"));
				assert_true(lists < UNIT_LEN(cursors));
				if (cursors[lists])
					assert_string_equal(cur, cursors[lists]);
				else
					assert_null(cur);
				lists++;
			}
			continue; /* a tool's own record */
		}
		assert_string_equal(json_string_value(json_object_get(r, "route")), route);
		assert_string_equal(json_string_value(json_object_get(r, "auth")), "none");
		if (!strcmp(http, "POST")) {
			assert_string_equal(json_string_value(json_object_get(r, "accept")),
					    "application/json, text/event-stream");
			assert_string_equal(json_string_value(json_object_get(r, "contentType")),
					    "application/json");
		}
		if (i == 0) {
			assert_string_equal(rpc, "initialize");
			assert_true(json_is_null(json_object_get(r, "session")));
			assert_true(json_is_null(json_object_get(r, "protocol")));
			continue;
		}
		assert_string_equal(json_string_value(json_object_get(r, "session")), sid);
		assert_string_equal(json_string_value(json_object_get(r, "protocol")),
				    MCP_PROTOCOL_VERSION);
		/* a notification is accepted (202), a request or the DELETE answered (200) */
		assert_int_equal(json_integer_value(json_object_get(r, "status")),
				 rpc && !strncmp(rpc, "notifications/", 14) ? 202 : 200);
	}
	assert_int_equal(lists, UNIT_LEN(cursors));
	assert_string_equal(at_str(log, 1, "rpc"), "notifications/initialized");
	json_decref(log);
}

/* A server without sessions: no Mcp-Session-Id, none sent, no DELETE. */
static void test_stateless(void **state)
{
	struct mcp_client *c;
	json_t *log, *r;
	size_t i;

	(void)state;
	reset_log();
	c = connect_ok("/mcp-stateless", NULL, NULL);
	assert_string_equal(mcp_session_id(c), "");
	assert_call_text(c, "add", "{\"a\": 1, \"b\": 1}", "[{\"type\":\"text\",\"text\":\"2\"}]");
	mcp_close(c);
	log = server_log();
	json_array_foreach (log, i, r)
		if (json_object_get(r, "http")) {
			assert_true(json_is_null(json_object_get(r, "session")));
			assert_string_equal(json_string_value(json_object_get(r, "http")), "POST");
		}
	json_decref(log);
}

/* The server forgot the session (as after its restart): 404, a new session, the call again. */
static void test_session_forgotten(void **state)
{
	struct mcp_client *c;
	char sid[MCP_SESSION_ID_MAX + 1];
	json_t *r;

	(void)state;
	c = connect_ok("/mcp", NULL, NULL);
	snprintf(sid, sizeof(sid), "%s", mcp_session_id(c));
	reset_log();
	json_decref(control("POST", "/__drop"));
	assert_call_text(c, "add", "{\"a\": 40, \"b\": 2}",
			 "[{\"type\":\"text\",\"text\":\"42\"}]");
	assert_string_not_equal(mcp_session_id(c), sid);
	assert_true(strlen(mcp_session_id(c)) > 0);
	r = server_log();
	assert_int_equal(json_integer_value(at(r, 0, "status")), 404);
	assert_string_equal(at_str(r, 1, "rpc"), "initialize");
	json_decref(r);
	mcp_close(c);
}

/* ---- results ---- */

static void test_results(void **state)
{
	struct mcp_client *c = connect_ok("/mcp", NULL, NULL);
	struct mcp_result r;
	char *got;

	(void)state;
	got = call_ok(c, "fail", "{}", &r);
	assert_true(r.is_error);
	assert_string_equal(got, "[{\"type\":\"text\",\"text\":\"the tool failed on purpose\"}]");
	free(got);
	mcp_result_release(&r);
	got = call_ok(c, "image", NULL, &r);
	assert_false(r.is_error);
	assert_non_null(strstr(got, "{\"type\":\"image\",\"source\":{\"type\":\"base64\","
				    "\"media_type\":\"image/png\",\"data\":\"iVBOR"));
	assert_non_null(strstr(got, "{\"type\":\"text\",\"text\":\"a pixel\"}"));
	free(got);
	mcp_result_release(&r);
	/* structuredContent alone: its JSON text */
	assert_call_text(c, "naming.test/é", NULL,
			 "[{\"type\":\"text\",\"text\":\"{\\\"named\\\":true}\"}]");
	mcp_close(c);
}

/* JSON-RPC errors: an unknown tool, arguments the tool refuses. */
static void test_rpc_errors(void **state)
{
	struct mcp_client *c = connect_ok("/mcp-json", NULL, NULL);
	json_t *args = json_pack("{s:s,s:i}", "a", "two", "b", 1);
	struct mcp_result r;
	struct mcp_error err;

	(void)state;
	assert_int_equal(mcp_call(c, "nope", NULL, &r, &err), -1);
	assert_int_equal(err.kind, MCP_ERR_RPC);
	assert_int_equal(err.rpc_code, -32602);
	assert_non_null(strstr(err.message, "Unknown tool: nope"));
	assert_null(r.content);
	assert_int_equal(mcp_call(c, "add", args, &r, &err), -1);
	assert_int_equal(err.kind, MCP_ERR_RPC);
	assert_non_null(strstr(err.message, "a and b must be numbers"));
	/* the client is still usable */
	assert_call_text(c, "add", "{\"a\": 1, \"b\": 2}", "[{\"type\":\"text\",\"text\":\"3\"}]");
	json_decref(args);
	mcp_close(c);
}

/* ---- the bearer ---- */

static void test_bearer(void **state)
{
	struct mcp_client *c;
	struct mcp_error err;
	char wrong[256];
	json_t *log, *r;
	size_t i;

	(void)state;
	reset_log();
	c = connect_ok("/mcp-auth", token, NULL);
	/* the server echoes what it got: the token is masked in the result */
	assert_call_text(c, "echo_auth", NULL,
			 "[{\"type\":\"text\",\"text\":\"you sent: Bearer ***\"}]");
	mcp_close(c);
	log = server_log();
	json_array_foreach (log, i, r)
		if (json_object_get(r, "http"))
			assert_string_equal(json_string_value(json_object_get(r, "auth")), "right");
	json_decref(log);

	snprintf(wrong, sizeof(wrong), "%s-wrong", token);
	assert_null(mcp_connect(url_of("/mcp-auth"), wrong, &here, NULL, NULL, &err));
	assert_int_equal(err.kind, MCP_ERR_AUTH);
	assert_int_equal(err.http_status, 401);
	assert_string_equal(mcp_error_type(&err), "mcp_authentication_failed_error");
	assert_null(strstr(err.message, token));
	assert_non_null(strstr(err.message, "invalid token"));

	assert_null(mcp_connect(url_of("/mcp-auth"), NULL, &here, NULL, NULL, &err));
	assert_int_equal(err.kind, MCP_ERR_AUTH);
	assert_int_equal(err.http_status, 401);
	assert_string_equal(mcp_error_type(&err), "mcp_authentication_failed_error");
}

/* A server that quotes the Authorization it got in its 401, or a result cut in the middle of
 * the bearer: no piece of the bearer is left in the message or the text, not even the part a
 * cut leaves at the end. */
static void test_bearer_cut(void **state)
{
	struct mcp_limits lim = { LOCAL_OK };
	struct mcp_client *c;
	struct mcp_error err;
	struct mcp_result r;
	char bearer[LONG_BEARER + 1], head[BEARER_PIECE + 1];
	const char *text;

	(void)state;
	for (size_t i = 0; i < LONG_BEARER; i++)
		bearer[i] = "0123456789abcdef"[(i * 7 + 3) % 16];
	bearer[LONG_BEARER] = '\0';
	memcpy(head, bearer, BEARER_PIECE);
	head[BEARER_PIECE] = '\0';
	assert_null(mcp_connect(url_of("/mcp-auth-echo"), bearer, &here, NULL, NULL, &err));
	assert_int_equal(err.kind, MCP_ERR_AUTH);
	assert_non_null(strstr(err.message, "invalid token: Bearer "));
	if (strstr(err.message, head))
		fail_msg("the bearer's start is in the message: %s", err.message);

	/* the cap falls inside the token the server echoes */
	lim.result_text_max = strlen("you sent: Bearer ") + BEARER_PIECE;
	c = connect_ok("/mcp-auth", token, &lim);
	free(call_ok(c, "echo_auth", NULL, &r));
	assert_true(r.truncated);
	text = at_str(r.content, 0, "text");
	memcpy(head, token, BEARER_PIECE);
	if (strstr(text, head))
		fail_msg("the bearer's start is in the result: %s", text);
	mcp_result_release(&r);
	mcp_close(c);
}

/* Input the client refuses before any request: not an http(s) URL, a token with a line break
 * (a header injection), never echoed. */
static void test_invalid(void **state)
{
	struct mcp_error err;

	(void)state;
	assert_null(mcp_connect("ftp://127.0.0.1/mcp", NULL, NULL, NULL, NULL, &err));
	assert_int_equal(err.kind, MCP_ERR_INVALID);
	assert_null(mcp_connect(url_of("/mcp-auth"), "abc\r\nX-Evil: 1", &here, NULL, NULL, &err));
	assert_int_equal(err.kind, MCP_ERR_INVALID);
	assert_null(strstr(err.message, "abc"));
	assert_null(strstr(err.message, "Evil"));
}

/* ---- failures to connect ---- */

/* A port nothing listens on: refused at once. */
static void test_refused(void **state)
{
	struct sockaddr_in sa = { 0 };
	socklen_t len = sizeof(sa);
	struct mcp_error err;
	char url[64];
	long long t0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	assert_true(fd >= 0);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd); /* the port is free: nothing listens on it */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ntohs(sa.sin_port));
	t0 = clock_mono_ms();
	assert_null(mcp_connect(url, token, &here, NULL, NULL, &err));
	assert_true(clock_mono_ms() - t0 < SLACK_MS);
	assert_int_equal(err.kind, MCP_ERR_CONNECTION);
	assert_int_equal(err.http_status, 0);
	assert_string_equal(mcp_error_type(&err), "mcp_connection_failed_error");
	assert_null(strstr(err.message, token));
}

/* The client's default: no connection to an address of this machine (common/hostaddr.h),
 * written as one or as a name that resolves to one, and nothing reaches the server. */
static void test_local_refused(void **state)
{
	/* and other spellings of loopback: decimal, hex and octal IPv4, short forms, the
	 * unspecified address, IPv6 loopback and IPv4-mapped loopback (the server listens on
	 * 127.0.0.1, which these reach) */
	static const char *const hosts[] = { "127.0.0.1",  "localhost",	 "2130706433",
					     "0x7f000001", "0177.0.0.1", "127.1",
					     "0.0.0.0",	   "[::1]",	 "[::ffff:127.0.0.1]" };
	const char *port = strrchr(base_url, ':'); /* MCP_TEST_URL is http://127.0.0.1:PORT */
	struct mcp_error err;
	char url[URL_MAX];
	json_t *log;

	(void)state;
	assert_non_null(port);
	reset_log();
	for (size_t i = 0; i < UNIT_LEN(hosts); i++) {
		snprintf(url, sizeof(url), "http://%s%s/mcp", hosts[i], port);
		assert_null(mcp_connect(url, token, NULL, NULL, NULL, &err));
		assert_int_equal(err.kind, MCP_ERR_CONNECTION);
		assert_string_equal(mcp_error_type(&err), "mcp_connection_failed_error");
		if (!strstr(err.message, "127.0.0.1") && !strstr(err.message, "::1") &&
		    !strstr(err.message, "0.0.0.0"))
			fail_msg("%s: the refusal names no address: %s", hosts[i], err.message);
		assert_non_null(strstr(err.message, "[runner] mcp_local_addresses"));
	}
	log = server_log();
	assert_int_equal(json_array_size(log), 0);
	json_decref(log);
}

/* A server that takes the request and never answers: initialize times out at its limit. */
static void test_stall(void **state)
{
	struct mcp_limits lim = { .request_timeout_ms = SHORT_MS, LOCAL_OK };
	struct mcp_error err;
	long long t0 = clock_mono_ms(), took;

	(void)state;
	assert_null(mcp_connect(url_of("/mcp-stall"), NULL, &lim, NULL, NULL, &err));
	took = clock_mono_ms() - t0;
	assert_int_equal(err.kind, MCP_ERR_TIMEOUT);
	assert_string_equal(mcp_error_type(&err), "mcp_connection_failed_error");
	assert_non_null(strstr(err.message, "within 500 ms"));
	assert_true(took >= SHORT_MS - 10);
	assert_true(took < SHORT_MS + SLACK_MS);
}

/* A server that answers initialize with a protocol version no one speaks. */
static void test_version(void **state)
{
	struct mcp_error err;

	(void)state;
	assert_null(mcp_connect(url_of("/mcp-old"), NULL, &here, NULL, NULL, &err));
	assert_int_equal(err.kind, MCP_ERR_PROTOCOL);
	assert_non_null(strstr(err.message, "1999-01-01"));
}

/* ---- a tool that hangs ---- */

/* The server was told (notifications/cancelled with REASON) that the first tools/call it saw is
 * cancelled; that call's id. */
static long long told_cancelled(const char *reason)
{
	json_t *rec = wait_record("event", "tools/call", -1);
	long long id;

	assert_non_null(rec);
	id = json_integer_value(json_object_get(rec, "id"));
	json_decref(rec);
	rec = wait_record("rpc", "notifications/cancelled", id);
	assert_non_null(rec);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(rec, "params"), "reason")),
		reason);
	json_decref(rec);
	return id;
}

/* The hang tool of the route in *STATE with a call limit of SHORT_MS: a timeout within it, the
 * server told (notifications/cancelled with the call's id: its handler is aborted), the client
 * usable. */
static void hang_on(void **state)
{
	struct mcp_limits lim = { .call_timeout_ms = SHORT_MS, LOCAL_OK };
	struct mcp_client *c = connect_ok(*state, NULL, &lim);
	struct mcp_result r;
	struct mcp_error err;
	long long t0, took, id;
	json_t *rec;

	reset_log();
	t0 = clock_mono_ms();
	assert_int_equal(mcp_call(c, "hang", NULL, &r, &err), -1);
	took = clock_mono_ms() - t0;
	assert_int_equal(err.kind, MCP_ERR_TIMEOUT);
	assert_non_null(strstr(err.message, "within 500 ms"));
	assert_true(took >= SHORT_MS - 10);
	assert_true(took < SHORT_MS + SLACK_MS);
	id = told_cancelled("timeout");
	rec = wait_record("event", "aborted", id);
	assert_non_null(rec);
	json_decref(rec);
	assert_call_text(c, "add", "{\"a\": 1, \"b\": 2}", "[{\"type\":\"text\",\"text\":\"3\"}]");
	mcp_close(c);
}

/* The cancel callback: says stop from *(long long *)ARG (a clock_mono_ms time) on. */
static int stop_after(void *arg)
{
	return clock_mono_ms() >= *(long long *)arg;
}

/* An interrupt while the tool hangs: the call returns within CANCEL_LATENCY_MS of the cancel
 * callback's first yes; a cancel before connecting stops at once, and is not reported. */
static void test_cancel(void **state)
{
	struct mcp_limits lim = { .call_timeout_ms = 10 * CANCEL_AFTER_MS,
				  LOCAL_OK }; /* a cancel not seen */
	struct mcp_client *c;
	struct mcp_result r;
	struct mcp_error err;
	long long at = clock_mono_ms() + 3600 * 1000L, late;

	(void)state;
	c = mcp_connect(url_of("/mcp"), NULL, &lim, stop_after, &at, &err);
	assert_non_null(c);
	reset_log();
	at = clock_mono_ms() + CANCEL_AFTER_MS;
	assert_int_equal(mcp_call(c, "hang", NULL, &r, &err), -1);
	late = clock_mono_ms() - at;
	assert_int_equal(err.kind, MCP_ERR_CANCELLED);
	assert_null(mcp_error_type(&err));
	assert_true(late >= 0);
	if (late >= CANCEL_LATENCY_MS)
		fail_msg("the cancelled call returned %lld ms after the cancel", late);
	told_cancelled("cancelled");
	mcp_close(c);

	at = clock_mono_ms();
	assert_null(mcp_connect(url_of("/mcp"), NULL, &here, stop_after, &at, &err));
	assert_int_equal(err.kind, MCP_ERR_CANCELLED);
}

/* ---- sizes ---- */

/* A result over the text cap: cut on a character boundary, a note saying so. */
static void test_text_cap(void **state)
{
	struct mcp_limits lim = { .result_text_max = TEXT_CAP, LOCAL_OK };
	struct mcp_client *c = connect_ok("/mcp-json", NULL, &lim);
	struct mcp_result r;
	char args[64], *got;
	const char *text, *note;

	(void)state;
	snprintf(args, sizeof(args), "{\"bytes\": %d}", HUGE_BYTES);
	got = call_ok(c, "huge", args, &r);
	free(got);
	assert_true(r.truncated);
	assert_int_equal(json_array_size(r.content), 2);
	text = at_str(r.content, 0, "text");
	/* two-byte characters: the cut falls before the one that would cross the cap */
	assert_int_equal(strlen(text), TEXT_CAP);
	note = at_str(r.content, 1, "text");
	assert_non_null(strstr(note, "truncated"));
	assert_non_null(strstr(note, "1000000 bytes"));
	mcp_result_release(&r);
	mcp_close(c);

	/* the default cap */
	c = connect_ok("/mcp", NULL, NULL);
	free(call_ok(c, "huge", args, &r));
	assert_true(r.truncated);
	assert_int_equal(strlen(at_str(r.content, 0, "text")), MCP_RESULT_TEXT_MAX);
	mcp_result_release(&r);
	mcp_close(c);
}

/* An answer over the answer cap, JSON or SSE: an error naming the limit. */
static void test_answer_cap(void **state)
{
	static const char *const routes[] = { "/mcp", "/mcp-json" };
	struct mcp_limits lim = { .answer_max = ANSWER_CAP, LOCAL_OK };
	struct mcp_result r;
	struct mcp_error err;
	json_t *args = json_pack("{s:i}", "bytes", HUGE_BYTES);

	(void)state;
	for (size_t i = 0; i < UNIT_LEN(routes); i++) {
		struct mcp_client *c = connect_ok(routes[i], NULL, &lim);

		assert_int_equal(mcp_call(c, "huge", args, &r, &err), -1);
		assert_int_equal(err.kind, MCP_ERR_PROTOCOL);
		assert_non_null(strstr(err.message, "65536 bytes"));
		assert_call_text(c, "add", "{\"a\": 1, \"b\": 2}",
				 "[{\"type\":\"text\",\"text\":\"3\"}]");
		mcp_close(c);
	}
	json_decref(args);
}

/* More tools than the client takes. */
static void test_tools_cap(void **state)
{
	struct mcp_limits lim = { .tools_max = 3, LOCAL_OK };
	struct mcp_client *c = connect_ok("/mcp", NULL, &lim);
	struct mcp_error err;
	json_t *tools;

	(void)state;
	assert_int_equal(mcp_list_tools(c, &tools, &err), -1);
	assert_null(tools);
	assert_int_equal(err.kind, MCP_ERR_PROTOCOL);
	assert_non_null(strstr(err.message, "more than 3 tools"));
	mcp_close(c);
}

/* ---- what the model is offered ---- */

/* Every tool of the server gets a name of the API's rule that does not collide with the
 * agent's other tools and leads back to it; its definition is the API's. */
static void test_offered(void **state)
{
	struct mcp_client *c = connect_ok("/mcp", NULL, NULL);
	json_t *tools, *taken = json_pack("{s:{},s:{}}", "bash", "mcp__srv__add", "x"), *t;
	struct mcp_names names;
	struct mcp_error err;
	char name[MCP_TOOL_NAME_MAX + 1];
	const char *server, *tool;
	size_t i;

	(void)state;
	assert_int_equal(mcp_list_tools(c, &tools, &err), 0);
	assert_int_equal(mcp_names_init(&names), 0);
	json_array_foreach (tools, i, t) {
		const char *remote = json_string_value(json_object_get(t, "name"));
		json_t *def;

		assert_int_equal(mcp_names_add(&names, "srv", remote, taken, name), 0);
		assert_true(strlen(name) >= 1 && strlen(name) <= MCP_TOOL_NAME_MAX);
		assert_int_equal(strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					      "0123456789_-"),
				 strlen(name));
		assert_null(json_object_get(taken, name));
		assert_int_equal(mcp_names_find(&names, name, &server, &tool), 0);
		assert_string_equal(server, "srv");
		assert_string_equal(tool, remote);
		def = mcp_tool_definition(t, name);
		assert_non_null(def);
		assert_string_equal(json_string_value(json_object_get(def, "name")), name);
		assert_true(json_is_object(json_object_get(def, "input_schema")));
		if (!strcmp(remote, "naming.test/é"))
			assert_string_equal(json_string_value(json_object_get(def, "description")),
					    "A tool whose name the model cannot take");
		json_decref(def);
	}
	assert_int_equal(json_object_size(names.map), SERVER_TOOLS);
	mcp_names_release(&names);
	json_decref(tools);
	json_decref(taken);
	mcp_close(c);
}

/* A server that lists a tool twice: the model is offered each name once (the Messages API
 * refuses a request whose tools repeat a name), the first listing kept. */
static void test_tools_repeated(void **state)
{
	struct mcp_client *c = connect_ok("/mcp-dup", NULL, NULL);
	struct mcp_error err;
	json_t *tools;

	(void)state;
	assert_int_equal(mcp_list_tools(c, &tools, &err), 0);
	assert_int_equal(json_array_size(tools), SERVER_TOOLS);
	for (size_t i = 0; i < SERVER_TOOLS; i++)
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(at_str(tools, i, "name"), at_str(tools, j, "name"));
	assert_string_equal(at_str(tools, 0, "name"), "add");
	assert_non_null(json_object_get(at(tools, 0, "inputSchema"), "required"));
	json_decref(tools);
	mcp_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ON_ROUTE(test_sse, one_mode, "/mcp"),
		ON_ROUTE(test_json, one_mode, "/mcp-json"),
		UNIT_TESTS(test_stateless, test_session_forgotten, test_results, test_rpc_errors,
			   test_bearer, test_bearer_cut, test_invalid, test_refused,
			   test_local_refused, test_stall, test_version),
		ON_ROUTE(test_hang_sse, hang_on, "/mcp"),
		ON_ROUTE(test_hang_json, hang_on, "/mcp-json"),
		UNIT_TESTS(test_cancel, test_text_cap, test_answer_cap, test_tools_cap,
			   test_offered, test_tools_repeated),
	};

	base_url = getenv("MCP_TEST_URL");
	token = getenv("MCP_TEST_TOKEN");
	if (!base_url || !token) {
		fprintf(stderr, "MCP_TEST_URL and MCP_TEST_TOKEN must be set (tests/mcp/run.sh)\n");
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
