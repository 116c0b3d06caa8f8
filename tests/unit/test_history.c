/* runner/history.c: the Messages API history rebuilt from a session's events. The rows are the
 * test's own (db_cell reads them; nothing frees them). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../db/events.h"
#include "../../runner/history.h"
#include "../../runner/mcp.h"
#include "unit.h"

#define MAX_EVENTS 16
#define BODY_MAX 512

struct log {
	const char *cell[MAX_EVENTS * EV_C_COUNT];
	unsigned long len[MAX_EVENTS * EV_C_COUNT];
	char ord[MAX_EVENTS][16];
	char id[MAX_EVENTS][16];
	char body[MAX_EVENTS][BODY_MAX];
	unsigned n;
};

/* Append an event: TYPE, REF (or NULL), PROCESSED (0: queued), BODY. The Nth event's id is
 * sevt_N. */
static void add(struct log *l, const char *type, const char *ref, int processed, const char *body)
{
	const char **c = &l->cell[l->n * EV_C_COUNT];

	assert_true(l->n < MAX_EVENTS);
	snprintf(l->ord[l->n], sizeof(l->ord[l->n]), "%u", l->n + 1);
	snprintf(l->id[l->n], sizeof(l->id[l->n]), "sevt_%u", l->n + 1);
	c[EV_C_SEQ] = l->ord[l->n];
	c[EV_C_ID] = l->id[l->n];
	c[EV_C_SESSION] = "sesn_x";
	c[EV_C_ORD] = l->ord[l->n];
	c[EV_C_TYPE] = type;
	c[EV_C_REF] = ref;
	c[EV_C_PROCESSED] = processed ? "2026-12-03T00:00:00.000000Z" : NULL;
	c[EV_C_BODY] = body;
	l->n++;
}

/* Append an event whose body is built from FMT (the body's own buffer, BODY_MAX). */
static void __attribute__((format(printf, 5, 6)))
addf(struct log *l, const char *type, const char *ref, int processed, const char *fmt, ...)
{
	char *body = l->body[l->n];
	va_list ap;
	int n;

	assert_true(l->n < MAX_EVENTS);
	va_start(ap, fmt);
	n = vsnprintf(body, BODY_MAX, fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && n < BODY_MAX);
	add(l, type, ref, processed, body);
}

/* A message event (user.message, agent.message, system.message) of one text block. */
static void add_text(struct log *l, const char *type, int processed, const char *text)
{
	addf(l, type, NULL, processed,
	     "{\"type\":\"%s\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}", type, text);
}

/* An agent.tool_use of tool NAME with INPUT (JSON) and its evaluated PERMISSION. */
static void add_tool_use(struct log *l, const char *name, const char *input, const char *permission)
{
	addf(l, "agent.tool_use", NULL, 1,
	     "{\"type\":\"agent.tool_use\",\"name\":\"%s\",\"input\":%s,"
	     "\"evaluated_permission\":\"%s\"}",
	     name, input, permission);
}

/* L as the rows of the events query. */
static struct db_rows rows_of(struct log *l)
{
	struct db_rows rows = { 0 };

	rows.nrows = l->n;
	rows.ncols = EV_C_COUNT;
	rows.cell = (char **)l->cell;
	rows.len = l->len;
	return rows;
}

/* Build H from L, the MCP tools named as NAMES offers them (NULL: none). */
static void build_named(struct log *l, const struct mcp_names *names, struct history *h)
{
	struct db_rows rows = rows_of(l);

	assert_int_equal(history_build(&rows, names, h), 0);
}

static void build(struct log *l, struct history *h)
{
	build_named(l, NULL, h);
}

/* The history's messages as compact JSON. */
static char *dump(const struct history *h)
{
	return json_dumps(h->messages, JSON_COMPACT);
}

static void expect_messages(const struct history *h, const char *want)
{
	char *got = dump(h);

	if (strcmp(got, want))
		fail_msg("messages\n got: %s\nwant: %s", got, want);
	free(got);
}

/* Each test's event log and the history built from it, which the teardown releases. */
struct fixture {
	struct log l;
	struct history h;
};

static int setup(void **state)
{
	*state = calloc(1, sizeof(struct fixture));
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	history_release(&f->h);
	free(f);
	return 0;
}

static void test_text_turns(void **state)
{
	struct fixture *f = *state;

	add(&f->l, "user.message", NULL, 1,
	    "{\"type\":\"user.message\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
	    "{\"type\":\"redacted\"}]}");
	add(&f->l, "session.status_running", NULL, 1, "{\"type\":\"session.status_running\"}");
	add_text(&f->l, "agent.message", 1, "hello");
	add_text(&f->l, "user.message", 1, "again");
	add_text(&f->l, "system.message", 1, "be brief");
	add_text(&f->l, "user.message", 0, "later");
	build(&f->l, &f->h);
	expect_messages(&f->h,
			"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]},"
			"{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
			"\"hello\"}]},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
			"\"text\":\"again\"},{\"type\":\"text\",\"text\":\"[system] be "
			"brief\"}]}]");
	assert_int_equal(f->h.queued, 1);
	assert_int_equal(f->h.nuses, 0);
}

/* Results go first in their user turn, whatever the log's order; a use without a result in the
 * log gets an error result so that the request stays valid. */
static void test_tool_results(void **state)
{
	struct fixture *f = *state;

	add_text(&f->l, "user.message", 1, "go");
	add_tool_use(&f->l, "bash", "{\"command\":\"ls\"}", "allow");
	add(&f->l, "agent.custom_tool_use", NULL, 1,
	    "{\"type\":\"agent.custom_tool_use\",\"name\":\"lookup\",\"input\":{}}");
	add_text(&f->l, "user.message", 1, "and");
	add(&f->l, "agent.tool_result", "sevt_2", 1,
	    "{\"type\":\"agent.tool_result\",\"tool_use_id\":\"sevt_2\",\"content\":[{\"type\":"
	    "\"text\",\"text\":\"a b\"}],\"is_error\":false}");
	build(&f->l, &f->h);
	expect_messages(
		&f->h,
		"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"go\"}]},"
		"{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"sevt_2\","
		"\"name\":\"bash\",\"input\":{\"command\":\"ls\"}},{\"type\":\"tool_use\",\"id\":"
		"\"sevt_3\",\"name\":\"lookup\",\"input\":{}}]},{\"role\":\"user\",\"content\":["
		"{\"type\":\"tool_result\",\"tool_use_id\":\"sevt_2\",\"content\":[{\"type\":"
		"\"text\",\"text\":\"a b\"}],\"is_error\":false},{\"type\":\"tool_result\","
		"\"tool_use_id\":\"sevt_3\",\"content\":\"no result was recorded for this tool "
		"use\","
		"\"is_error\":true},{\"type\":\"text\",\"text\":\"and\"}]}]");
	assert_int_equal(f->h.nuses, 2);
	assert_true(f->h.uses[0].answered);
	assert_false(f->h.uses[1].answered);
	assert_string_equal(f->h.uses[1].type, "agent.custom_tool_use");
}

/* Confirmations: what the turn needs to settle a use (ask, allowed, denied with a message). */
static void test_confirmations(void **state)
{
	struct fixture *f = *state;

	add_text(&f->l, "user.message", 1, "go");
	add_tool_use(&f->l, "bash", "{}", "ask");
	add_tool_use(&f->l, "write", "{}", "ask");
	add_tool_use(&f->l, "read", "{}", "ask");
	add(&f->l, "user.tool_confirmation", "sevt_2", 1,
	    "{\"type\":\"user.tool_confirmation\",\"tool_use_id\":\"sevt_2\",\"result\":"
	    "\"allow\"}");
	add(&f->l, "user.tool_confirmation", "sevt_3", 1,
	    "{\"type\":\"user.tool_confirmation\",\"tool_use_id\":\"sevt_3\",\"result\":\"deny\","
	    "\"deny_message\":\"not that file\"}");
	build(&f->l, &f->h);
	assert_int_equal(f->h.nuses, 3);
	assert_true(f->h.uses[0].ask && f->h.uses[0].confirmed && !f->h.uses[0].denied);
	assert_true(f->h.uses[1].confirmed && f->h.uses[1].denied);
	assert_string_equal(f->h.uses[1].deny_message, "not that file");
	assert_true(f->h.uses[2].ask && !f->h.uses[2].confirmed);
	assert_non_null(history_use(&f->h, "sevt_4"));
	assert_null(history_use(&f->h, "sevt_9"));
}

/* A stored event that does not parse is an error, not a history without it. */
static void test_corrupt(void **state)
{
	struct db_rows rows;
	struct fixture *f = *state;

	add(&f->l, "user.message", NULL, 1, "{\"type\":");
	rows = rows_of(&f->l);
	assert_int_equal(history_build(&rows, NULL, &f->h), -1);
}

/* An MCP tool use is the model's call of the name its tool is offered under this turn: another
 * than the plain mcp__server__tool when a custom tool took that one; the plain one when the
 * turn does not offer the tool. */
static void test_mcp_names(void **state)
{
	static const char use[] = "{\"type\":\"agent.mcp_tool_use\",\"name\":\"add\","
				  "\"mcp_server_name\":\"calc\",\"input\":{\"a\":1},"
				  "\"evaluated_permission\":\"allow\"}";
	struct mcp_names names;
	json_t *taken = json_pack("{s:{}}", "mcp__calc__add");
	char offered[MCP_TOOL_NAME_MAX + 1];
	struct fixture *f = *state;

	add_text(&f->l, "user.message", 1, "go");
	add(&f->l, "agent.mcp_tool_use", NULL, 1, use);
	add(&f->l, "agent.mcp_tool_result", "sevt_2", 1,
	    "{\"type\":\"agent.mcp_tool_result\",\"mcp_tool_use_id\":\"sevt_2\",\"content\":"
	    "[{\"type\":\"text\",\"text\":\"2\"}],\"is_error\":false}");
	assert_int_equal(mcp_names_init(&names), 0);
	assert_int_equal(mcp_names_add(&names, "calc", "add", taken, offered), 0);
	assert_string_not_equal(offered, "mcp__calc__add");
	assert_string_equal(mcp_names_name(&names, "calc", "add"), offered);
	assert_null(mcp_names_name(&names, "calc", "sub"));

	build_named(&f->l, &names, &f->h);
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(json_object_get(json_array_get(f->h.messages, 1), "content"),
				       0),
			"name")),
		offered);
	assert_string_equal(f->h.uses[0].server, "calc");
	assert_string_equal(f->h.uses[0].name, "add");
	history_release(&f->h);

	build(&f->l, &f->h); /* not offered this turn: the plain name */
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(json_object_get(json_array_get(f->h.messages, 1), "content"),
				       0),
			"name")),
		"mcp__calc__add");
	mcp_names_release(&names);
	json_decref(taken);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

UNIT_MAIN(T(test_text_turns), T(test_mcp_names), T(test_tool_results), T(test_confirmations),
	  T(test_corrupt))
