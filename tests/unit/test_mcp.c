/* The MCP client's parts that need no server: the reader of answers (runner/mcp_answer.c) on
 * recorded answers, each fed whole, cut in two at every byte, and one byte at a time (the
 * outcome must not depend on where the chunks end); the names the model is offered for MCP tools,
 * their definitions and a tools/call result as content blocks (runner/mcp_tools.c). The client
 * against a real server: tests/mcp/. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../common/strbuf.h"
#include "../../runner/mcp.h"
#include "../../runner/mcp_answer.h"
#include "unit.h"

#define ID 7		   /* the request id of the recorded answers */
#define SMALL_CAP 64	   /* the answer cap of the over-the-cap case */
#define RANDOM_NAMES 2000  /* random (server, tool) pairs the name rule is checked on */
#define RANDOM_NAME_MAX 40 /* bytes of one random name */

/* ---- the answer reader ---- */

/* A recorded answer: header lines ("\n"-separated), body, the request's id, what it reads as. */
struct answer_case {
	const char *name;
	const char *headers;
	const char *body;
	long long id;
	size_t cap; /* 0: MCP_ANSWER_MAX */
	const char *want;
};

#define SSE_200 "HTTP/1.1 200 OK\ncontent-type: text/event-stream\nmcp-session-id: s-1\n"
#define JSON_200 "HTTP/1.1 200 OK\ncontent-type: application/json\n"
#define RESULT "{\"content\":[{\"text\":\"5\",\"type\":\"text\"}]}"

static const struct answer_case answers[] = {
	{ "sse: notifications, a server request, another id, junk, then ours", SSE_200,
	  "\xef\xbb\xbf: a comment\r\n"
	  "event: message\r\n"
	  "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\r\n\r\n"
	  "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n\n"
	  "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n\n"
	  "event: message\ndata: not json\n\n"
	  "event: other\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"wrong\":1}}\n\n"
	  "event: message\ndata:\n\n"
	  "id: 12\rretry: 10\revent: message\rdata: "
	  "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":" RESULT "}\r\r"
	  "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"late\":1}}\n\n",
	  ID, 0, "ok session=s-1 " RESULT },
	{ "sse: the message on two data lines", SSE_200,
	  "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\ndata: \"result\":{\"a\":1}}\n\n",
	  ID, 0, "ok session=s-1 {\"a\":1}" },
	{ "sse: ends without the response", SSE_200,
	  "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n",
	  ID, 0,
	  "err 4 http=200 rpc=0 the server's event stream ended without the response to request "
	  "7" },
	{ "sse: the last event not ended", SSE_200,
	  "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n", ID, 0,
	  "err 4 http=200 rpc=0 the server's event stream ended without the response to request "
	  "7" },
	{ "sse: a JSON-RPC error", SSE_200,
	  "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":\"MCP error "
	  "-32602: Unknown tool: x\"}}\n\n",
	  ID, 0, "err 5 http=200 rpc=-32602 MCP error -32602: Unknown tool: x" },
	{ "sse: an event over the cap", SSE_200,
	  "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\"0123456789012345678901234567"
	  "890123456789\"}}\n\n",
	  ID, SMALL_CAP,
	  "err 4 http=200 rpc=0 an event of the server's stream is over 64 bytes (the limit of an "
	  "answer)" },
	{ "json: one message", JSON_200 "Mcp-Session-Id: abc\n",
	  "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":" RESULT "}", ID, 0, "ok session=abc " RESULT },
	{ "json: a batch", JSON_200,
	  "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"},{\"jsonrpc\":\"2.0\",\"id\":1,"
	  "\"result\":{}},{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"b\":2}}]",
	  ID, 0, "ok session= {\"b\":2}" },
	{ "json: an error without a code's mention", JSON_200,
	  "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601,\"message\":\"no such "
	  "method\"}}",
	  ID, 0, "err 5 http=200 rpc=-32601 JSON-RPC error -32601: no such method" },
	{ "json: no response to the request", JSON_200,
	  "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}", ID, 0,
	  "err 4 http=200 rpc=0 the server's answer holds no response to request 7" },
	{ "json: the response has neither result nor error", JSON_200,
	  "{\"jsonrpc\":\"2.0\",\"id\":7}", ID, 0,
	  "err 4 http=200 rpc=0 the response to request 7 has no result or error object" },
	{ "json: not JSON", JSON_200, "{\"jsonrpc\":", ID, 0, NULL /* jansson's words */ },
	{ "json: over the cap", JSON_200,
	  "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\"0123456789012345678901234567890123"
	  "456789\"}}",
	  ID, SMALL_CAP, "err 4 http=200 rpc=0 the server's answer is over 64 bytes (the limit)" },
	{ "401 with a JSON-RPC error",
	  "HTTP/1.1 401 Unauthorized\ncontent-type: application/json\nwww-authenticate: Bearer\n",
	  "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":\"invalid token\"},\"id\":"
	  "null}",
	  ID, 0, "err 3 http=401 rpc=0 the server answered HTTP 401: invalid token" },
	{ "403 without a body", "HTTP/2 403\n", "", ID, 0,
	  "err 3 http=403 rpc=0 the server answered HTTP 403" },
	{ "404 with text", "HTTP/1.1 404 Not Found\ncontent-type: text/plain\n",
	  "Session not found\n\tat line 1", ID, 0,
	  "err 4 http=404 rpc=0 the server answered HTTP 404: Session not found  at line 1" },
	{ "100 Continue, then the answer",
	  "HTTP/1.1 100 Continue\nmcp-session-id: early\n\nHTTP/1.1 200 OK\ncontent-type: "
	  "application/json; charset=utf-8\n",
	  "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", ID, 0, "ok session= {}" },
	{ "200 with another content type", "HTTP/1.1 200 OK\ncontent-type: text/html\n",
	  "<html></html>", ID, 0,
	  "err 4 http=200 rpc=0 the server answered with content type 'text/html', not "
	  "application/json or text/event-stream" },
	{ "a session id that is not visible ASCII", JSON_200 "mcp-session-id: two words\n",
	  "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", ID, 0,
	  "err 4 http=200 rpc=0 the server's Mcp-Session-Id is not visible ASCII of 1-256 bytes" },
	{ "a notification accepted", "HTTP/1.1 202 Accepted\nmcp-session-id: s-2\n", "",
	  MCP_ANSWER_NO_ID, 0, "ok session=s-2 null" },
	{ "a notification answered with a body", JSON_200, "{\"anything\": true}", MCP_ANSWER_NO_ID,
	  0, "ok session= null" },
	{ "no answer at all", "", "", ID, 0,
	  "err 1 http=0 rpc=0 no answer from the server: the connection closed" },
};

/* Read CASE's answer with its body in chunks ending at CUTS (N of them, ascending), then the
 * end; its summary into SB. */
static void read_answer(const struct answer_case *c, const size_t *cuts, size_t n,
			struct strbuf *sb)
{
	size_t len = strlen(c->body), from = 0;
	const char *h = c->headers;
	struct mcp_answer a;
	struct mcp_error err;
	json_t *result;
	char *text;

	mcp_answer_init(&a, c->id, c->cap ? c->cap : MCP_ANSWER_MAX);
	while (*h) {
		const char *eol = strchr(h, '\n');
		size_t k = eol ? (size_t)(eol - h) + 1 : strlen(h);
		mcp_answer_header(&a, h, k);
		h += k;
	}
	for (size_t i = 0; i <= n; i++) {
		size_t to = i < n ? cuts[i] : len;
		if (to > from && mcp_answer_feed(&a, c->body + from, to - from))
			break;
		from = to > from ? to : from;
	}
	strbuf_reset(sb);
	if (mcp_answer_finish(&a, NULL, &result, &err)) {
		assert_null(result);
		strbuf_addf(sb, "err %d http=%ld rpc=%ld %s", err.kind, err.http_status,
			    err.rpc_code, err.message);
	} else {
		text = json_dumps(result, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		strbuf_addf(sb, "ok session=%s %s", a.session_id, text ? text : "null");
		free(text);
		json_decref(result);
	}
	mcp_answer_release(&a);
}

static void test_answers(void **state)
{
	static const char not_json[] = "err 4 http=200 rpc=0 the server's answer is not JSON: ";
	struct strbuf whole = STRBUF_INIT, got = STRBUF_INIT;

	(void)state;
	for (size_t k = 0; k < UNIT_LEN(answers); k++) {
		const struct answer_case *c = &answers[k];
		size_t len = strlen(c->body), *every = calloc(len + 1, sizeof(size_t));

		assert_non_null(every);
		read_answer(c, NULL, 0, &whole);
		if (c->want && strcmp(strbuf_str(&whole), c->want))
			fail_msg("%s:\n got  %s\n want %s", c->name, strbuf_str(&whole), c->want);
		if (!c->want && strncmp(strbuf_str(&whole), not_json, strlen(not_json)))
			fail_msg("%s: %s", c->name, strbuf_str(&whole));
		for (size_t cut = 1; cut < len; cut++) {
			read_answer(c, &cut, 1, &got);
			if (strcmp(strbuf_str(&got), strbuf_str(&whole)))
				fail_msg("%s, cut at %zu:\n got  %s\n want %s", c->name, cut,
					 strbuf_str(&got), strbuf_str(&whole));
		}
		for (size_t i = 0; i < len; i++)
			every[i] = i + 1;
		read_answer(c, every, len, &got);
		if (strcmp(strbuf_str(&got), strbuf_str(&whole)))
			fail_msg("%s, byte by byte:\n got  %s\n want %s", c->name, strbuf_str(&got),
				 strbuf_str(&whole));
		free(every);
	}
	strbuf_release(&whole);
	strbuf_release(&got);
}

/* A transfer that broke: before the response, a connection error naming how; after it (the
 * stream's end lost), the response all the same. */
static void test_answer_broken(void **state)
{
	static const char ours[] = "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n";
	struct mcp_answer a;
	struct mcp_error err;
	json_t *result;

	(void)state;
	mcp_answer_init(&a, ID, MCP_ANSWER_MAX);
	mcp_answer_header(&a, "HTTP/1.1 200 OK\r\n", 17);
	mcp_answer_header(&a, "Content-Type: text/event-stream\r\n", 33);
	assert_int_equal(mcp_answer_feed(&a, ": hi\n", 5), 0);
	assert_false(mcp_answer_done(&a));
	assert_int_equal(mcp_answer_finish(&a, "connection reset", &result, &err), -1);
	assert_int_equal(err.kind, MCP_ERR_CONNECTION);
	assert_string_equal(err.message, "the server's event stream broke before the response to "
					 "request 7: connection reset");
	mcp_answer_release(&a);

	mcp_answer_init(&a, ID, MCP_ANSWER_MAX);
	mcp_answer_header(&a, "HTTP/1.1 200 OK\r\n", 17);
	mcp_answer_header(&a, "Content-Type: text/event-stream\r\n", 33);
	assert_int_equal(mcp_answer_feed(&a, ours, strlen(ours)), 0);
	assert_true(mcp_answer_done(&a));
	assert_int_equal(mcp_answer_finish(&a, "connection reset", &result, &err), 0);
	assert_true(json_is_object(result));
	json_decref(result);
	mcp_answer_release(&a);

	mcp_answer_init(&a, ID, MCP_ANSWER_MAX);
	mcp_answer_header(&a, "HTTP/1.1 200 OK\r\n", 17);
	mcp_answer_header(&a, "Content-Type: application/json\r\n", 32);
	assert_int_equal(mcp_answer_feed(&a, "{\"jsonrpc\"", 10), 0);
	assert_int_equal(mcp_answer_finish(&a, "timeout", &result, &err), -1);
	assert_int_equal(err.kind, MCP_ERR_CONNECTION);
	assert_string_equal(err.message, "the server's answer was cut: timeout");
	mcp_answer_release(&a);
}

/* A notification is done with its 2xx header block, even if the server opens a body it never
 * ends; an interim 100's block does not count. */
static void test_answer_notification_done(void **state)
{
	struct mcp_answer a;

	(void)state;
	mcp_answer_init(&a, MCP_ANSWER_NO_ID, MCP_ANSWER_MAX);
	mcp_answer_header(&a, "HTTP/1.1 100 Continue\r\n", 23);
	mcp_answer_header(&a, "\r\n", 2);
	assert_false(mcp_answer_done(&a));
	mcp_answer_header(&a, "HTTP/1.1 200 OK\r\n", 17);
	mcp_answer_header(&a, "Content-Type: text/event-stream\r\n", 33);
	assert_false(mcp_answer_done(&a));
	mcp_answer_header(&a, "\r\n", 2);
	assert_true(mcp_answer_done(&a));
	assert_int_equal(mcp_answer_feed(&a, "data: {}\n", 9), 0);
	mcp_answer_release(&a);

	mcp_answer_init(&a, ID, MCP_ANSWER_MAX); /* a request: only its response will do */
	mcp_answer_header(&a, "HTTP/1.1 200 OK\r\n", 17);
	mcp_answer_header(&a, "\r\n", 2);
	assert_false(mcp_answer_done(&a));
	mcp_answer_release(&a);
}

/* ---- names ---- */

static void check_name(const char *server, const char *tool, const char *want)
{
	char out[MCP_TOOL_NAME_MAX + 1];

	mcp_tool_name(server, tool, out);
	if (strcmp(out, want))
		fail_msg("(%s, %s):\n got  %s\n want %s", server, tool, out, want);
}

static int name_ok(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= MCP_TOOL_NAME_MAX &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
		       n;
}

static void test_tool_name(void **state)
{
	char server[256], tool[129], want[MCP_TOOL_NAME_MAX + 1];

	(void)state;
	check_name("github", "create_issue", "mcp__github__create_issue");
	check_name("my-server", "a-b", "mcp__my-server__a-b");
	check_name("_lead", "x", "mcp___lead__x"); /* a leading "_" splits one way only */
	check_name("a", "___b", "mcp__a_____b");
	/* characters outside the rule: one "_" each (é too), and a hash */
	check_name("srv", "naming.test/é", "mcp__srv__naming_test___1d9df345");
	check_name("my server", "look up", "mcp__my_server__look_up_f58066c3");
	/* a server with "__" or a final "_" would split two ways: hashed, so these two differ */
	check_name("a__b", "c", "mcp__a__b__c_a92700ce");
	check_name("a_", "_b", "mcp__a____b_0a2588ef");
	/* too long: shortened to exactly the limit, the tool keeps the most */
	memset(server, 'x', 255);
	server[255] = '\0';
	snprintf(want, sizeof(want), "mcp__%.108s__tool_4b04c0bd", server);
	check_name(server, "tool", want);
	memset(tool, 'y', 128);
	tool[128] = '\0';
	snprintf(want, sizeof(want), "mcp__s__%.111s_dda28e9f", tool);
	check_name("s", tool, want);
	assert_int_equal(strlen(want), MCP_TOOL_NAME_MAX);
}

/* Random names of any bytes: always a name of the API's rule, never the same for two tools. */
static void test_tool_name_random(void **state)
{
	json_t *seen = json_object();
	char server[RANDOM_NAME_MAX + 1], tool[RANDOM_NAME_MAX + 1];
	char name[MCP_TOOL_NAME_MAX + 1];
	unsigned seed = 20260401;

	(void)state;
	for (int i = 0; i < RANDOM_NAMES; i++) {
		size_t ls = 1 + (size_t)rand_r(&seed) % RANDOM_NAME_MAX;
		size_t lt = 1 + (size_t)rand_r(&seed) % RANDOM_NAME_MAX;
		char key[2 * RANDOM_NAME_MAX + 2];
		const char *alphabet = i % 2 ? "ab_-" : "a_.é/ ";

		for (size_t k = 0; k < ls; k++)
			server[k] = alphabet[rand_r(&seed) % strlen(alphabet)];
		for (size_t k = 0; k < lt; k++)
			tool[k] = alphabet[rand_r(&seed) % strlen(alphabet)];
		server[ls] = tool[lt] = '\0';
		mcp_tool_name(server, tool, name);
		if (!name_ok(name))
			fail_msg("(%s, %s) -> '%s'", server, tool, name);
		snprintf(key, sizeof(key), "%s%c%s", server, 1, tool);
		if (json_object_get(seen, name) &&
		    strcmp(json_string_value(json_object_get(seen, name)), key))
			fail_msg("'%s' for two tools", name);
		json_object_set_new(seen, name, json_string_nocheck(key));
	}
	json_decref(seen);
}

/* The table: names taken by other tools are passed over, the mapping goes back, the same tool
 * keeps its name, and a tool for which every salt is taken is refused. */
static void test_names(void **state)
{
	json_t *taken = json_pack("{s:{},s:{}}", "bash", "mcp__srv__add");
	char name[MCP_TOOL_NAME_MAX + 1], again[MCP_TOOL_NAME_MAX + 1];
	const char *server, *tool;
	struct mcp_names t;

	(void)state;
	assert_int_equal(mcp_names_init(&t), 0);
	assert_int_equal(mcp_names_add(&t, "srv", "sub", taken, name), 0);
	assert_string_equal(name, "mcp__srv__sub");
	assert_int_equal(mcp_names_add(&t, "srv", "add", taken, name), 0);
	assert_string_not_equal(name, "mcp__srv__add");
	assert_true(name_ok(name));
	assert_int_equal(strncmp(name, "mcp__srv__add_", 14), 0);
	assert_int_equal(mcp_names_find(&t, name, &server, &tool), 0);
	assert_string_equal(server, "srv");
	assert_string_equal(tool, "add");
	assert_int_equal(mcp_names_add(&t, "srv", "add", taken, again), 0);
	assert_string_equal(again, name);
	assert_int_equal(mcp_names_find(&t, "mcp__srv__nope", &server, &tool), -1);
	assert_int_equal(json_object_size(t.map), 2);
	mcp_names_release(&t);

	/* every candidate taken, one after the other: the plain name and MCP_NAME_TRIES salts */
	json_object_clear(taken);
	for (int i = 0; i <= MCP_NAME_TRIES; i++) {
		assert_int_equal(mcp_names_init(&t), 0);
		assert_int_equal(mcp_names_add(&t, "srv", "tool", taken, name), 0);
		assert_null(json_object_get(taken, name));
		json_object_set_new(taken, name, json_object());
		mcp_names_release(&t);
	}
	assert_int_equal(mcp_names_init(&t), 0);
	assert_int_equal(mcp_names_add(&t, "srv", "tool", taken, name), -1);
	mcp_names_release(&t);
	json_decref(taken);
}

static void test_definition(void **state)
{
	json_t *tool = json_pack("{s:s,s:s,s:{s:s}}", "name", "add", "description", "Adds",
				 "inputSchema", "type", "object");
	json_t *def = mcp_tool_definition(tool, "mcp__m__add");
	char *text = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS), *longer;

	(void)state;
	assert_string_equal(text,
			    "{\"description\":\"Adds\",\"input_schema\":{\"type\":\"object\"},"
			    "\"name\":\"mcp__m__add\"}");
	free(text);
	/* a copy: changing the tool leaves the definition as it was */
	json_object_set_new(json_object_get(tool, "inputSchema"), "type", json_string("x"));
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(def, "input_schema"), "type")),
		"object");
	json_decref(def);

	/* no description: the title; a long one: cut on a character boundary */
	json_object_del(tool, "description");
	json_object_set_new(tool, "title", json_string("Addition"));
	def = mcp_tool_definition(tool, "n");
	assert_string_equal(json_string_value(json_object_get(def, "description")), "Addition");
	json_decref(def);
	longer = malloc(MCP_DESCRIPTION_MAX + 2);
	assert_non_null(longer);
	memset(longer, 'a', MCP_DESCRIPTION_MAX + 1);
	memcpy(longer + MCP_DESCRIPTION_MAX - 1, "é", 2); /* across the limit */
	longer[MCP_DESCRIPTION_MAX + 1] = '\0';
	json_object_set_new(tool, "description", json_string(longer));
	def = mcp_tool_definition(tool, "n");
	assert_int_equal(strlen(json_string_value(json_object_get(def, "description"))),
			 MCP_DESCRIPTION_MAX - 1);
	json_decref(def);
	free(longer);
	json_object_clear(tool);
	def = mcp_tool_definition(tool, "n"); /* no inputSchema: list_entry never lets one by */
	assert_null(def);
	json_decref(tool);
}

/* ---- results ---- */

/* RESULT (JSON text) converted with TEXT_MAX: "is_error truncated content" or "err message". */
static void check_result(const char *result, size_t text_max, const char *want)
{
	json_t *r = json_loads(result, JSON_DECODE_ANY, NULL);
	struct strbuf sb = STRBUF_INIT;
	struct mcp_result out;
	struct mcp_error err;
	char *text;

	assert_non_null(r);
	if (mcp_result_convert(r, text_max, &out, &err)) {
		assert_null(out.content);
		strbuf_addf(&sb, "err %s", err.message);
	} else {
		text = json_dumps(out.content, JSON_COMPACT | JSON_SORT_KEYS);
		strbuf_addf(&sb, "%d %d %s", out.is_error, out.truncated, text);
		free(text);
		mcp_result_release(&out);
	}
	if (strcmp(strbuf_str(&sb), want))
		fail_msg("%s:\n got  %s\n want %s", result, strbuf_str(&sb), want);
	strbuf_release(&sb);
	json_decref(r);
}

#define T(s) "{\"text\":\"" s "\",\"type\":\"text\"}"
#define PNG64 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"		      /* a PNG's start */
#define X63 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" /* 63 bytes */

static void test_results(void **state)
{
	(void)state;
	check_result("{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\","
		     "\"text\":\"\"},{\"type\":\"text\",\"text\":\"b\"}],\"isError\":true}",
		     100, "1 0 [" T("a") "," T("b") "]");
	check_result("{\"content\":[],\"isError\":\"yes\"}", 100, "0 0 [" T("(no output)") "]");
	check_result("{}", 100, "0 0 [" T("(no output)") "]");
	check_result("{\"content\":[],\"structuredContent\":{\"n\":1}}", 100,
		     "0 0 [" T("{\\\"n\\\":1}") "]");
	check_result("{\"content\":[{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":"
		     "\"iVBORw0KGgo=\"}]}",
		     100,
		     "0 0 [{\"source\":{\"data\":\"iVBORw0KGgo=\",\"media_type\":\"image/png\","
		     "\"type\":\"base64\"},\"type\":\"image\"}]");
	check_result("{\"content\":[{\"type\":\"image\",\"mimeType\":\"image/bmp\",\"data\":"
		     "\"Qk0=\"}]}",
		     200,
		     "0 0 [" T("[an image of type image/bmp is not shown: the model takes jpeg, "
			       "png, gif and webp]") "]");
	check_result("{\"content\":[{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":"
		     "\"not base64!\"}]}",
		     200,
		     "0 0 [" T("[an image (image/png) is not shown: its data is not base64]") "]");
	check_result(
		"{\"content\":[{\"type\":\"audio\",\"mimeType\":\"audio/wav\",\"data\":\"\"},"
		"{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///a\",\"text\":\"t\"}},"
		"{\"type\":\"resource\",\"resource\":{\"uri\":\"file:///b\",\"blob\":\"AA==\","
		"\"mimeType\":\"application/zip\"}},"
		"{\"type\":\"resource_link\",\"uri\":\"file:///c\",\"name\":\"c\"},"
		"{\"type\":\"video\"},{\"text\":\"no type\"}]}",
		1000,
		"0 0 [" T("[audio (audio/wav) is not shown: the model takes no audio]") "," T("t") "," T(
			"[resource file:///b (application/zip) is not shown: "
			"binary content]") "," T("[resource link: c <file:///c>]") "," T("[content "
											 "of type "
											 "video is "
											 "not "
											 "shown]") "," T("[a content block without a type is not shown]") "]");
	/* the cap: cut before a character that would cross it, the rest dropped, a note */
	check_result("{\"content\":[{\"type\":\"text\",\"text\":\"abcd\"},{\"type\":\"text\","
		     "\"text\":\"eé\"},{\"type\":\"text\",\"text\":\"fgh\"}]}",
		     6,
		     "0 1 [" T("abcd") "," T("e") "," T("[truncated: the tool returned 10 bytes of "
							"text; 5 bytes of the result are shown "
							"(the limit)]") "]");
	/* the media type the data has, not the one it is labelled with (the Messages API refuses
	 * an image whose bytes are not of its media_type, and the result stays in the history):
	 * a PNG sent as jpeg, a GIF and a WebP as png; data that is none of the four, a note */
	check_result("{\"content\":[{\"type\":\"image\",\"mimeType\":\"image/jpeg\",\"data\":"
		     "\"" PNG64 "\"}]}",
		     100,
		     "0 0 [{\"source\":{\"data\":\"" PNG64 "\",\"media_type\":\"image/png\","
		     "\"type\":\"base64\"},\"type\":\"image\"}]");
	check_result(
		"{\"content\":[{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":"
		"\"R0lGODlhAQABAAAAACw=\"},{\"type\":\"image\",\"mimeType\":\"image/png\","
		"\"data\":\"UklGRhoAAABXRUJQVlA4TA0AAAAv\"}]}",
		100,
		"0 0 [{\"source\":{\"data\":\"R0lGODlhAQABAAAAACw=\",\"media_type\":\"image/gif\","
		"\"type\":\"base64\"},\"type\":\"image\"},{\"source\":{\"data\":"
		"\"UklGRhoAAABXRUJQVlA4TA0AAAAv\",\"media_type\":\"image/webp\",\"type\":"
		"\"base64\"},\"type\":\"image\"}]");
	check_result(
		"{\"content\":[{\"type\":\"image\",\"mimeType\":\"image/png\",\"data\":"
		"\"aGVsbG8gd29ybGQsIG5vdCBhbiBpbWFnZQ==\"}]}",
		200,
		"0 0 [" T("[an image (image/png) is not shown: its data is not a jpeg, png, gif "
			  "or webp image]") "]");
	/* a type shown cut at MCP_TYPE_SHOWN bytes: before the character that would cross it */
	check_result("{\"content\":[{\"type\":\"" X63 "\u00e9\"}]}", 200,
		     "0 0 [" T("[content of type " X63 " is not shown]") "]");
	check_result("[]", 100, "err the tools/call result is not an object");
	check_result("{\"content\":{}}", 100,
		     "err the tools/call result's content is not an array");
}

/* An image past MCP_IMAGE_MAX bytes of base64 is a note, not a block. */
static void test_result_image_cap(void **state)
{
	size_t n = MCP_IMAGE_MAX + 4;
	char *data = malloc(n + 1);
	json_t *r;
	struct mcp_result out;
	struct mcp_error err;
	const char *text;

	(void)state;
	assert_non_null(data);
	memset(data, 'A', n);
	data[n] = '\0';
	r = json_pack("{s:[{s:s,s:s,s:s}]}", "content", "type", "image", "mimeType", "image/gif",
		      "data", data);
	assert_int_equal(mcp_result_convert(r, MCP_RESULT_TEXT_MAX, &out, &err), 0);
	text = json_string_value(json_object_get(json_array_get(out.content, 0), "text"));
	assert_non_null(text);
	assert_non_null(strstr(text, "over 5242880"));
	mcp_result_release(&out);
	json_decref(r);
	free(data);
}

static void test_error_type(void **state)
{
	struct mcp_error e = { 0 };

	(void)state;
	for (int k = MCP_ERR_NONE; k <= MCP_ERR_NOMEM; k++) {
		e.kind = (enum mcp_error_kind)k;
		if (k == MCP_ERR_AUTH)
			assert_string_equal(mcp_error_type(&e), "mcp_authentication_failed_error");
		else if (k == MCP_ERR_CANCELLED)
			assert_null(mcp_error_type(&e));
		else
			assert_string_equal(mcp_error_type(&e), "mcp_connection_failed_error");
	}
	assert_int_equal(mcp_fail(&e, MCP_ERR_PROTOCOL, "a\nb\t%d", 1), -1);
	assert_string_equal(e.message, "a b 1");
	/* what a server sent may not be UTF-8: a message always is */
	mcp_fail(&e, MCP_ERR_PROTOCOL, "%s", "é\xff\xc3(\xed\xa0\x80\xf0\x9f\x98\x80\xe2\x82");
	assert_string_equal(e.message, "é?\?(???\xf0\x9f\x98\x80??");
}

UNIT_MAIN(cmocka_unit_test(test_answers), cmocka_unit_test(test_answer_broken),
	  cmocka_unit_test(test_answer_notification_done), cmocka_unit_test(test_tool_name),
	  cmocka_unit_test(test_tool_name_random), cmocka_unit_test(test_names),
	  cmocka_unit_test(test_definition), cmocka_unit_test(test_results),
	  cmocka_unit_test(test_result_image_cap), cmocka_unit_test(test_error_type))
