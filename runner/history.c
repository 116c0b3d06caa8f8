/* The events a model request carries, in the session's order: user messages and system
 * messages (user turns), the agent's messages and tool uses (assistant turns), every result
 * (a user turn's tool_result blocks, first in it, as the Messages API wants them). Status,
 * span, usage, error and confirmation events are the service's, not the conversation's. */
#include "history.h"

#include <stdlib.h>
#include <string.h>

#include "../db/events.h"
#include "mcp.h"

#define HISTORY_NO_RESULT "no result was recorded for this tool use"

static const char *const use_types[] = { "agent.tool_use", "agent.custom_tool_use",
					 "agent.mcp_tool_use", NULL };
static const char *const result_types[] = { "agent.tool_result", "user.tool_result",
					    "user.custom_tool_result", "agent.mcp_tool_result",
					    NULL };

static int in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* Append BLOCK (stolen) to the last message when it has ROLE, else to a new one. */
static int add_block(json_t *messages, const char *role, json_t *block)
{
	size_t n = json_array_size(messages);
	json_t *last = n ? json_array_get(messages, n - 1) : NULL;

	if (!block)
		return -1;
	if (!last || strcmp(json_string_value(json_object_get(last, "role")), role)) {
		last = json_pack("{s:s, s:[]}", "role", role, "content");
		if (!last || json_array_append_new(messages, last)) {
			json_decref(block);
			return -1;
		}
	}
	return json_array_append_new(json_object_get(last, "content"), block);
}

/* The content blocks of an event as the model takes them (a redacted block has nothing to
 * show; the rest are the same shapes in both APIs). */
static int add_content(json_t *messages, const char *role, json_t *content, const char *prefix)
{
	size_t i;
	json_t *b;

	json_array_foreach (content, i, b) {
		const char *t = json_string_value(json_object_get(b, "type"));

		if (!t || !strcmp(t, "redacted"))
			continue;
		if (prefix && !strcmp(t, "text")) {
			const char *text = json_string_value(json_object_get(b, "text"));
			size_t n = strlen(prefix) + (text ? strlen(text) : 0) + 1;
			char *s = malloc(n);
			int rc;

			if (!s)
				return -1;
			snprintf(s, n, "%s%s", prefix, text ? text : "");
			rc = add_block(messages, role,
				       json_pack("{s:s, s:s}", "type", "text", "text", s));
			free(s);
			if (rc)
				return -1;
			continue;
		}
		if (add_block(messages, role, json_deep_copy(b)))
			return -1;
	}
	return 0;
}

static int add_use(struct history *h, const struct mcp_names *names, const char *id,
		   const char *type, json_t *ev)
{
	struct tool_use *u, *grown = realloc(h->uses, (size_t)(h->nuses + 1) * sizeof(*h->uses));
	const char *name = json_string_value(json_object_get(ev, "name"));
	json_t *input = json_object_get(ev, "input");

	if (!grown)
		return -1;
	h->uses = grown;
	u = &h->uses[h->nuses];
	memset(u, 0, sizeof(*u));
	snprintf(u->id, sizeof(u->id), "%s", id);
	snprintf(u->type, sizeof(u->type), "%s", type);
	u->name = strdup(name ? name : "");
	u->input = json_is_object(input) ? json_incref(input) : json_object();
	u->ask = json_is_string(json_object_get(ev, "evaluated_permission")) &&
		 !strcmp(json_string_value(json_object_get(ev, "evaluated_permission")), "ask");
	h->nuses++;
	if (!u->name || !u->input)
		return -1;
	if (!strcmp(type, "agent.mcp_tool_use")) {
		/* the model called it by the name it was offered (runner/mcp_tools.c): the turn's,
		 * which may be another than the plain one when that one was taken */
		const char *server = json_string_value(json_object_get(ev, "mcp_server_name"));
		const char *known;
		char offered[MCP_TOOL_NAME_MAX + 1];

		u->server = strdup(server ? server : "");
		if (!u->server)
			return -1;
		known = names ? mcp_names_name(names, u->server, u->name) : NULL;
		if (known)
			snprintf(offered, sizeof(offered), "%s", known);
		else
			mcp_tool_name(u->server, u->name, offered);
		return add_block(h->messages, "assistant",
				 json_pack("{s:s, s:s, s:s, s:O}", "type", "tool_use", "id", id,
					   "name", offered, "input", u->input));
	}
	return add_block(h->messages, "assistant",
			 json_pack("{s:s, s:s, s:s, s:O}", "type", "tool_use", "id", id, "name",
				   u->name, "input", u->input));
}

static int add_result(struct history *h, const char *ref, json_t *ev)
{
	struct tool_use *u = history_use(h, ref);
	json_t *content = json_object_get(ev, "content"), *err = json_object_get(ev, "is_error");
	json_t *copy = json_array();
	size_t i;
	json_t *b;

	if (u)
		u->answered = 1;
	if (!copy)
		return -1;
	json_array_foreach (content, i, b) {
		const char *t = json_string_value(json_object_get(b, "type"));
		if (t && strcmp(t, "redacted"))
			json_array_append(copy, b);
	}
	if (!json_array_size(copy))
		json_array_append_new(
			copy, json_pack("{s:s, s:s}", "type", "text", "text", "(no output)"));
	return add_block(h->messages, "user",
			 json_pack("{s:s, s:s, s:o, s:b}", "type", "tool_result", "tool_use_id",
				   ref, "content", copy, "is_error", json_is_true(err)));
}

static void add_confirmation(struct history *h, const char *ref, json_t *ev)
{
	struct tool_use *u = history_use(h, ref);
	const char *result = json_string_value(json_object_get(ev, "result"));
	const char *msg = json_string_value(json_object_get(ev, "deny_message"));

	if (!u || !result)
		return;
	u->confirmed = 1;
	u->denied = !strcmp(result, "deny");
	if (u->denied && msg && !u->deny_message)
		u->deny_message = strdup(msg);
}

/* The Messages API's rules on the finished list: a user turn's tool_result blocks first, and
 * every tool_use of an assistant turn answered in the next user turn (a result the log lacks
 * is given as an error, so that the request stays valid). */
static int settle(struct history *h)
{
	size_t n = json_array_size(h->messages);

	for (size_t m = 0; m < n; m++) {
		json_t *msg = json_array_get(h->messages, m),
		       *content = json_object_get(msg, "content");
		json_t *next, *results, *rest;
		size_t i;
		json_t *b;

		if (strcmp(json_string_value(json_object_get(msg, "role")), "assistant"))
			continue;
		next = m + 1 < n ? json_array_get(h->messages, m + 1) : NULL;
		if (!next) { /* the log ends with tool uses: their results are not in yet */
			json_array_foreach (content, i, b)
				if (!strcmp(json_string_value(json_object_get(b, "type")),
					    "tool_use")) {
					json_t *r = json_pack(
						"{s:s, s:s, s:s, s:b}", "type", "tool_result",
						"tool_use_id",
						json_string_value(json_object_get(b, "id")),
						"content", HISTORY_NO_RESULT, "is_error", 1);
					if (add_block(h->messages, "user", r))
						return -1;
				}
			n = json_array_size(h->messages);
			next = m + 1 < n ? json_array_get(h->messages, m + 1) : NULL;
			if (!next)
				continue;
		}
		results = json_array();
		rest = json_array();
		if (!results || !rest) {
			json_decref(results);
			json_decref(rest);
			return -1;
		}
		json_array_foreach (json_object_get(next, "content"), i, b) {
			if (!strcmp(json_string_value(json_object_get(b, "type")), "tool_result"))
				json_array_append(results, b);
			else
				json_array_append(rest, b);
		}
		json_array_foreach (content, i, b) {
			const char *id = json_string_value(json_object_get(b, "id"));
			int found = 0;
			size_t k;
			json_t *r;

			if (strcmp(json_string_value(json_object_get(b, "type")), "tool_use"))
				continue;
			json_array_foreach (results, k, r)
				found |= !strcmp(
					json_string_value(json_object_get(r, "tool_use_id")), id);
			if (!found)
				json_array_append_new(results,
						      json_pack("{s:s, s:s, s:s, s:b}", "type",
								"tool_result", "tool_use_id", id,
								"content", HISTORY_NO_RESULT,
								"is_error", 1));
		}
		json_array_extend(results, rest);
		json_decref(rest);
		json_object_set_new(next, "content", results);
	}
	return 0;
}

int history_build(const struct db_rows *rows, const struct mcp_names *names, struct history *h)
{
	memset(h, 0, sizeof(*h));
	h->messages = json_array();
	if (!h->messages)
		return -1;
	for (unsigned r = 0; r < rows->nrows; r++) {
		const char *type = db_cell(rows, r, EV_C_TYPE), *id = db_cell(rows, r, EV_C_ID);
		const char *ref = db_cell(rows, r, EV_C_REF);
		json_t *ev;
		int rc = 0;

		if (!db_cell(rows, r, EV_C_PROCESSED)) {
			h->queued += !strcmp(type, "user.message");
			continue;
		}
		if (!strcmp(type, "session.status_idle")) {
			h->answered_since_idle = 0;
			continue;
		}
		if (strcmp(type, "user.message") && strcmp(type, "system.message") &&
		    strcmp(type, "agent.message") && strcmp(type, "user.tool_confirmation") &&
		    !in_list(type, use_types) && !in_list(type, result_types))
			continue;
		ev = json_loads(db_cell(rows, r, EV_C_BODY), 0, NULL);
		if (!ev)
			return -1;
		if (!strcmp(type, "user.message"))
			rc = add_content(h->messages, "user", json_object_get(ev, "content"), NULL);
		else if (!strcmp(type, "system.message"))
			rc = add_content(h->messages, "user", json_object_get(ev, "content"),
					 "[system] ");
		else if (!strcmp(type, "agent.message"))
			rc = add_content(h->messages, "assistant", json_object_get(ev, "content"),
					 NULL);
		else if (in_list(type, use_types))
			rc = add_use(h, names, id, type, ev);
		else if (!strcmp(type, "user.tool_confirmation")) {
			add_confirmation(h, ref ? ref : "", ev);
			h->answered_since_idle++;
		} else {
			rc = add_result(h, ref ? ref : "", ev);
			h->answered_since_idle++;
		}
		json_decref(ev);
		if (rc)
			return -1;
	}
	return settle(h);
}

void history_release(struct history *h)
{
	for (int i = 0; i < h->nuses; i++) {
		free(h->uses[i].name);
		free(h->uses[i].server);
		free(h->uses[i].deny_message);
		json_decref(h->uses[i].input);
	}
	free(h->uses);
	json_decref(h->messages);
	memset(h, 0, sizeof(*h));
}

struct tool_use *history_use(struct history *h, const char *id)
{
	for (int i = 0; i < h->nuses; i++)
		if (!strcmp(h->uses[i].id, id))
			return &h->uses[i];
	return NULL;
}
