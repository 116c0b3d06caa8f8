/* The model client (runner/model.c) against the scripted fake of the Messages API
 * (tests/fake-model/fake-model.mjs): replies, tool use, errors and retry-after, a silent stream,
 * a cancel, a cut stream, a proxy's JSON answer; and the fake's own checks of a request, which the
 * runtime tests rely on to show a runner bug. tests/fake-model/run.sh starts the fake and sets
 * FAKE_MODEL_URL and FAKE_MODEL_KEY. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "../../common/clock.h"
#include "../../runner/model.h"
#include "../unit/unit.h"
#include "../unit/unit_http.h"

#define IDLE_S 1	      /* the idle timeout the silent-stream cases use */
#define CANCEL_AFTER_MS 400   /* when the cancel case's callback starts saying stop */
#define CANCEL_LATENCY_MS 200 /* how long after that the call must have returned */

static const char *base_url, *api_key;

/* METHOD PATH on the fake's control API with BODY (JSON text, or NULL); its JSON answer (new
 * reference). A test failure unless it answers 200. */
static json_t *control(const char *method, const char *path, const char *body)
{
	return unit_http_json(method, base_url, path, body);
}

/* Replace the fake's script with the steps STEPS (a JSON array's text). */
static void script(const char *steps)
{
	json_decref(control("POST", "/__fake/reset", NULL));
	json_decref(control("POST", "/__fake/script", steps));
}

/* The fake's record of the last request (new reference). */
static json_t *last_request(void)
{
	json_t *doc = control("GET", "/__fake/requests", NULL);
	json_t *all = json_object_get(doc, "requests");
	json_t *last = json_incref(json_array_get(all, json_array_size(all) - 1));

	json_decref(doc);
	assert_non_null(last);
	return last;
}

static struct model_client *client(long idle_s, const char *key)
{
	struct model_conf conf = { .idle_timeout_s = idle_s, .max_tokens = 1024 };
	struct model_client *m;

	snprintf(conf.base_url, sizeof(conf.base_url), "%s", base_url);
	snprintf(conf.api_key, sizeof(conf.api_key), "%s", key);
	m = model_new(&conf);
	assert_non_null(m);
	return m;
}

/* A request: model, one user message with TEXT, the bash tool; no max_tokens (the client's). */
static json_t *request(const char *text)
{
	json_t *body = json_pack("{s:s, s:[{s:s, s:[{s:s, s:s}]}], s:[{s:s, s:s, s:{s:s}}]}",
				 "model", "claude-test", "messages", "role", "user", "content",
				 "type", "text", "text", text, "tools", "name", "bash",
				 "description", "run a command", "input_schema", "type", "object");
	assert_non_null(body);
	return body;
}

static enum model_outcome call(long idle_s, const char *steps, const json_t *body,
			       struct model_reply *r)
{
	struct model_client *m = client(idle_s, api_key);
	enum model_outcome o;

	script(steps);
	o = model_call(m, body, NULL, NULL, r);
	model_free(m);
	return o;
}

/* What a test starts with: the request, its text the test's initial state ("x" when it has
 * none), a reply and, when the test makes one, a client; the teardown releases them. */
struct fixture {
	struct model_client *m;
	json_t *body;
	struct model_reply r;
};

static int fixture_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	f->body = request(*state ? *state : "x");
	*state = f;
	return 0;
}

static int fixture_teardown(void **state)
{
	struct fixture *f = *state;

	model_reply_release(&f->r);
	model_free(f->m);
	json_decref(f->body);
	free(f);
	return 0;
}

static void test_text(void **state)
{
	struct fixture *f = *state;
	json_t *rec;

	assert_int_equal(
		call(IDLE_S, "[{\"text\":\"Hello from the fake, w\\u00f6rld\"}]", f->body, &f->r),
		MODEL_OK);
	assert_int_equal(f->r.http_status, 200);
	assert_int_equal(f->r.n, 1);
	assert_int_equal(f->r.blocks[0].type, MB_TEXT);
	assert_string_equal(f->r.blocks[0].text, "Hello from the fake, w\xc3\xb6rld");
	assert_string_equal(f->r.stop_reason, "end_turn");
	assert_true(f->r.usage.input > 0 && f->r.usage.output > 0);
	assert_int_equal(f->r.retry_after_ms, -1);
	model_reply_release(&f->r);
	/* what went out: the headers, stream: true and the client's max_tokens added to a copy */
	rec = last_request();
	assert_true(json_is_true(json_object_get(rec, "has_api_key")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(rec, "headers"),
							      "anthropic-version")),
			    MODEL_API_VERSION);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(rec, "headers"), "accept")),
		"text/event-stream");
	assert_true(json_is_true(json_object_get(json_object_get(rec, "body"), "stream")));
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(rec, "body"), "max_tokens")),
		1024);
	assert_null(json_object_get(f->body, "stream"));
	assert_null(json_object_get(f->body, "max_tokens"));
	json_decref(rec);
}

/* Thinking, text and a tool_use; then the history with its result is accepted by the fake (the
 * signature came back intact) and the default rule answers with the result. */
static void test_tool_use(void **state)
{
	struct fixture *f = *state;
	json_t *assistant, *input, *rec;

	assert_int_equal(call(IDLE_S,
			      "[{\"thinking\":\"I should list the directory first.\",\"text\":"
			      "\"Listing.\",\"tool_use\":{\"name\":\"bash\",\"input\":{\"command\":"
			      "\"ls -la \\\"/tmp/a b\\\"\",\"timeout_ms\":5000}}}]",
			      f->body, &f->r),
			 MODEL_OK);
	assert_int_equal(f->r.n, 3);
	assert_string_equal(f->r.stop_reason, "tool_use");
	assert_int_equal(f->r.blocks[0].type, MB_THINKING);
	assert_string_equal(f->r.blocks[0].text, "I should list the directory first.");
	assert_non_null(f->r.blocks[0].signature);
	assert_int_equal(f->r.blocks[1].type, MB_TEXT);
	assert_int_equal(f->r.blocks[2].type, MB_TOOL_USE);
	assert_int_equal(strncmp(f->r.blocks[2].id, "toolu_", 6), 0);
	assert_string_equal(f->r.blocks[2].name, "bash");
	input = json_pack("{s:s, s:i}", "command", "ls -la \"/tmp/a b\"", "timeout_ms", 5000);
	assert_true(json_equal(f->r.blocks[2].input, input));
	json_decref(input);

	assistant = json_pack("{s:s, s:[{s:s, s:s, s:s}, {s:s, s:s}, {s:s, s:s, s:s, s:O}]}",
			      "role", "assistant", "content", "type", "thinking", "thinking",
			      f->r.blocks[0].text, "signature", f->r.blocks[0].signature, "type",
			      "text", "text", f->r.blocks[1].text, "type", "tool_use", "id",
			      f->r.blocks[2].id, "name", "bash", "input", f->r.blocks[2].input);
	json_array_append_new(json_object_get(f->body, "messages"), assistant);
	json_array_append_new(json_object_get(f->body, "messages"),
			      json_pack("{s:s, s:[{s:s, s:s, s:s}]}", "role", "user", "content",
					"type", "tool_result", "tool_use_id", f->r.blocks[2].id,
					"content", "total 0\n"));
	json_object_set_new(f->body, "thinking",
			    json_pack("{s:s, s:i}", "type", "enabled", "budget_tokens", 1024));
	json_object_set_new(f->body, "max_tokens", json_integer(2048));
	model_reply_release(&f->r);
	assert_int_equal(call(IDLE_S, "[]", f->body, &f->r), MODEL_OK);
	assert_int_equal(f->r.n, 1);
	assert_string_equal(f->r.blocks[0].text, "total 0\n");
	model_reply_release(&f->r);
	rec = last_request();
	assert_string_equal(json_string_value(json_object_get(rec, "source")), "rule:tool-result");
	json_decref(rec);
}

/* Requests the real API refuses get its 400; the client does not retry them. */
static void test_refused(void **state)
{
	static const struct unit_text_case cases[] = {
		{ "[{\"role\":\"assistant\",\"content\":\"hi\"}]",
		  "first message must use the \"user\"" },
		{ "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":\"b\"}]",
		  "roles must alternate" },
		{ "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":[{"
		  "\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\",\"input\":{}}]},{"
		  "\"role\":"
		  "\"user\",\"content\":\"and?\"}]",
		  "`tool_use` ids were found without `tool_result` blocks immediately after: "
		  "toolu_1" },
		{ "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":[{"
		  "\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\",\"input\":{}}]},{"
		  "\"role\":"
		  "\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\"},{"
		  "\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\"}]}]",
		  "Found multiple `tool_result` blocks with id: toolu_1" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
		  "\"toolu_9\"}]}]",
		  "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9" },
		{ "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\"}]}]",
		  "text content blocks must be non-empty" },
		{ "[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"assistant\",\"content\":[{"
		  "\"type\":\"thinking\",\"thinking\":\"x\",\"signature\":\"forged\"}]},{\"role\":"
		  "\"user\",\"content\":\"b\"}]",
		  "Invalid `signature` in `thinking` block" },
	};
	struct fixture *f = *state;
	json_t *tools;

	f->m = client(IDLE_S, api_key);
	json_decref(control("POST", "/__fake/reset", NULL));
	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		json_object_set_new(f->body, "messages", json_loads(cases[i].in, 0, NULL));
		if (model_call(f->m, f->body, NULL, NULL, &f->r) != MODEL_FAILED ||
		    f->r.http_status != 400 || strcmp(f->r.error_type, "invalid_request_error") ||
		    !strstr(f->r.error_message, cases[i].want))
			fail_msg("case %zu: %d %s: %s", i, f->r.http_status, f->r.error_type,
				 f->r.error_message);
		model_reply_release(&f->r);
	}
	/* tools named twice */
	json_object_set_new(f->body, "messages",
			    json_loads("[{\"role\":\"user\",\"content\":\"a\"}]", 0, NULL));
	tools = json_object_get(f->body, "tools");
	json_array_append_new(tools, json_deep_copy(json_array_get(tools, 0)));
	assert_int_equal(model_call(f->m, f->body, NULL, NULL, &f->r), MODEL_FAILED);
	assert_string_equal(f->r.error_message, "tools: Tool names must be unique.");
}

/* Error statuses: worth again or not, the API's type and message, retry-after. */
static void test_errors(void **state)
{
	static const struct {
		const char *steps;
		enum model_outcome o;
		int status;
		const char *type, *message;
		long retry_after_ms;
	} cases[] = {
		{ "[{\"status\":529,\"retry_after\":3}]", MODEL_RETRY, 529, "overloaded_error",
		  "Overloaded", 3000 },
		{ "[{\"status\":429,\"headers\":{\"retry-after-ms\":\"1500\"}}]", MODEL_RETRY, 429,
		  "rate_limit_error", NULL, 1500 },
		{ "[{\"status\":500}]", MODEL_RETRY, 500, "api_error", "Internal server error",
		  -1 },
		{ "[{\"status\":503,\"headers\":{\"x-should-retry\":\"false\"}}]", MODEL_FAILED,
		  503, "api_error", NULL, -1 },
		{ "[{\"status\":413,\"error\":{\"message\":\"Request exceeds the maximum size\"}}]",
		  MODEL_FAILED, 413, "request_too_large", "Request exceeds the maximum size", -1 },
		{ "[{\"text\":\"partial\",\"stream_error\":{\"type\":\"overloaded_error\"}}]",
		  MODEL_RETRY, 200, "overloaded_error", "Overloaded", -1 },
	};
	struct fixture *f = *state;

	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		enum model_outcome o = call(IDLE_S, cases[i].steps, f->body, &f->r);
		if (o != cases[i].o || f->r.http_status != cases[i].status ||
		    strcmp(f->r.error_type, cases[i].type) ||
		    (cases[i].message && strcmp(f->r.error_message, cases[i].message)) ||
		    f->r.retry_after_ms != cases[i].retry_after_ms || f->r.n)
			fail_msg("case %zu: %d %d %s: %s, retry after %ld, %zu blocks", i, o,
				 f->r.http_status, f->r.error_type, f->r.error_message,
				 f->r.retry_after_ms, f->r.n);
		model_reply_release(&f->r);
	}
}

/* A wrong key: 401, not worth again, and the key is in no message. */
static void test_wrong_key(void **state)
{
	struct fixture *f = *state;

	f->m = client(IDLE_S, "sk-wrong-key-1234");
	json_decref(control("POST", "/__fake/reset", NULL));
	assert_int_equal(model_call(f->m, f->body, NULL, NULL, &f->r), MODEL_FAILED);
	assert_int_equal(f->r.http_status, 401);
	assert_string_equal(f->r.error_type, "authentication_error");
	assert_null(strstr(f->r.error_message, "sk-wrong"));
}

/* A stream silent for longer than the idle timeout is left after it; one that keeps pinging
 * is not, however long it takes; a delay before the answer shorter than it is waited for; a
 * complete reply whose answer does not end is taken at the idle timeout. */
static void test_idle(void **state)
{
	struct fixture *f = *state;
	long long t0 = clock_mono_ms(), ms;

	assert_int_equal(call(IDLE_S, "[{\"text\":\"late\",\"hang_ms\":5000}]", f->body, &f->r),
			 MODEL_RETRY);
	ms = clock_mono_ms() - t0;
	assert_string_equal(f->r.error_type, "timeout");
	assert_int_equal(f->r.n, 0);
	if (ms < IDLE_S * 1000 || ms > IDLE_S * 1000 + 300)
		fail_msg("idle timeout after %lld ms", ms);
	model_reply_release(&f->r);

	t0 = clock_mono_ms();
	assert_int_equal(call(IDLE_S,
			      "[{\"text\":\"slow\",\"stall_ms\":2500,\"ping_every_ms\":300}]",
			      f->body, &f->r),
			 MODEL_OK);
	assert_true(clock_mono_ms() - t0 >= 2500);
	assert_string_equal(f->r.blocks[0].text, "slow");
	model_reply_release(&f->r);

	t0 = clock_mono_ms();
	assert_int_equal(call(IDLE_S, "[{\"text\":\"waited\",\"delay_ms\":600}]", f->body, &f->r),
			 MODEL_OK);
	assert_true(clock_mono_ms() - t0 >= 600);
	model_reply_release(&f->r);

	/* message_stop read, the answer left open: the reply is complete at the idle timeout */
	t0 = clock_mono_ms();
	assert_int_equal(
		call(IDLE_S, "[{\"text\":\"lingers\",\"linger_ms\":4000}]", f->body, &f->r),
		MODEL_OK);
	ms = clock_mono_ms() - t0;
	if (ms > IDLE_S * 1000 + 300)
		fail_msg("a complete reply returned after %lld ms", ms);
	assert_string_equal(f->r.blocks[0].text, "lingers");
}

struct cancel_state {
	long long start, stop_ms; /* when the call began; when the callback first said stop */
	int asked;
};

static int cancel_later(void *arg)
{
	struct cancel_state *c = arg;
	long long now = clock_mono_ms();

	c->asked++;
	if (now - c->start < CANCEL_AFTER_MS)
		return 0;
	if (!c->stop_ms)
		c->stop_ms = now;
	return 1;
}

/* A cancel during a silent stream ends the call promptly. */
static void test_cancel(void **state)
{
	struct fixture *f = *state;
	struct cancel_state c = { 0 };
	long long end;

	f->m = client(30, api_key);
	script("[{\"text\":\"never\",\"hang_ms\":10000}]");
	c.start = clock_mono_ms();
	assert_int_equal(model_call(f->m, f->body, cancel_later, &c, &f->r), MODEL_CANCELLED);
	end = clock_mono_ms();
	assert_string_equal(f->r.error_type, "cancelled");
	assert_int_equal(f->r.n, 0);
	assert_true(c.stop_ms > 0);
	/* asked every MODEL_CANCEL_POLL_MS: about CANCEL_AFTER_MS / that times, not on every loop
	 */
	assert_true(c.asked >= CANCEL_AFTER_MS / MODEL_CANCEL_POLL_MS &&
		    c.asked <= CANCEL_AFTER_MS / MODEL_CANCEL_POLL_MS + 3);
	if (end - c.start > CANCEL_AFTER_MS + CANCEL_LATENCY_MS)
		fail_msg("cancelled %lld ms after the start (the callback said stop at %lld ms)",
			 end - c.start, c.stop_ms - c.start);
	model_reply_release(&f->r);
	/* the client works again after a cancelled call */
	script("[{\"text\":\"again\"}]");
	assert_int_equal(model_call(f->m, f->body, NULL, NULL, &f->r), MODEL_OK);
	assert_string_equal(f->r.blocks[0].text, "again");
}

/* A stream cut in the middle (no message_stop) is worth again, and none of it is handed out. */
static void test_cut(void **state)
{
	struct fixture *f = *state;

	for (int events = 0; events <= 5; events++) {
		char steps[128];

		snprintf(steps, sizeof(steps),
			 "[{\"text\":\"a reply long enough for several deltas\",\"cut_after\":%d}]",
			 events);
		assert_int_equal(call(IDLE_S, steps, f->body, &f->r), MODEL_RETRY);
		assert_string_equal(f->r.error_type, "connection");
		assert_int_equal(f->r.n, 0);
		model_reply_release(&f->r);
	}
}

/* A proxy's JSON answer to a streamed request reads as the stream would. */
static void test_json_answer(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(call(IDLE_S,
			      "[{\"text\":\"proxied\",\"tool_use\":{\"name\":\"bash\",\"input\":{"
			      "\"command\":\"true\"}},\"json\":true}]",
			      f->body, &f->r),
			 MODEL_OK);
	assert_int_equal(f->r.n, 2);
	assert_string_equal(f->r.blocks[0].text, "proxied");
	assert_string_equal(json_string_value(json_object_get(f->r.blocks[1].input, "command")),
			    "true");
	assert_string_equal(f->r.stop_reason, "tool_use");
}

/* One client keeps its connection: calls after the first open none. */
static void test_reuse(void **state)
{
	struct fixture *f = *state;
	json_t *rec;
	json_int_t conn = 0;

	f->m = client(IDLE_S, api_key);
	json_decref(control("POST", "/__fake/reset", NULL));
	for (int i = 0; i < 3; i++) {
		assert_int_equal(model_call(f->m, f->body, NULL, NULL, &f->r), MODEL_OK);
		model_reply_release(&f->r);
		rec = last_request();
		if (i == 0)
			conn = json_integer_value(json_object_get(rec, "conn"));
		assert_int_equal(json_integer_value(json_object_get(rec, "conn")), conn);
		json_decref(rec);
	}
}

/* The demo's default rules: "run: CMD" calls bash with CMD. */
static void test_default_rules(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(call(IDLE_S, "[]", f->body, &f->r), MODEL_OK);
	assert_int_equal(f->r.n, 1);
	assert_int_equal(f->r.blocks[0].type, MB_TOOL_USE);
	assert_string_equal(json_string_value(json_object_get(f->r.blocks[0].input, "command")),
			    "echo hi there");
}

static int setup(void **state)
{
	(void)state;
	base_url = getenv("FAKE_MODEL_URL");
	api_key = getenv("FAKE_MODEL_KEY");
	if (!base_url || !api_key) {
		fprintf(stderr,
			"FAKE_MODEL_URL and FAKE_MODEL_KEY must be set (run.sh sets them)\n");
		return -1;
	}
	return curl_global_init(CURL_GLOBAL_DEFAULT) ? -1 : 0;
}

/* cmocka's entry of the test F with the fixture: the request "x", or TEXT. */
#define T(f) cmocka_unit_test_setup_teardown(f, fixture_setup, fixture_teardown)
#define ASKING(f, text)                                                                            \
	{                                                                                          \
		.name = #f, .test_func = f, .setup_func = fixture_setup,                           \
		.teardown_func = fixture_teardown, .initial_state = (void *)(text)                 \
	}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ASKING(test_text, "hello"),
		ASKING(test_tool_use, "list it"),
		T(test_refused),
		T(test_errors),
		T(test_wrong_key),
		T(test_idle),
		T(test_cancel),
		T(test_cut),
		T(test_json_answer),
		T(test_reuse),
		ASKING(test_default_rules, "please run: echo hi there"),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
