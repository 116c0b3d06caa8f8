/* One table of shapes: an object shape is a "type" value (NULL: an object without one) and its
 * fields; a field is a string, boolean, integer, object or array, whose objects are one of a
 * NULL-terminated list of shapes chosen by their "type". The walk names every refusal by its
 * path. */
#include "event_validate.h"

#include <stdio.h>
#include <string.h>

#include "env_validate.h"

enum fkind { FK_STR, FK_BOOL, FK_INT, FK_OBJ, FK_ARR };

#define FF_REQ 0x1  /* required */
#define FF_NULL 0x2 /* null allowed (an optional field's "absent") */
#define FF_TEXT 0x4 /* FK_STR: not empty (the model refuses an empty text block) */

struct shape;

struct field {
	const char *name;
	enum fkind kind;
	unsigned flags;
	const struct shape *const *shapes; /* FK_OBJ, FK_ARR: the shapes of the object(s) */
	long long min, max;		   /* FK_STR: characters (max 0: any); FK_INT: range;
					    * FK_ARR: items */
	const char *const *values;	   /* FK_STR: the values allowed, or NULL */
};

struct shape {
	const char *type;	    /* the "type" member's value; NULL: no "type" member */
	const struct field *fields; /* up to a NULL name */
};

#define END                                                                                        \
	{                                                                                          \
		NULL, FK_STR, 0, NULL, 0, 0, NULL                                                  \
	}
#define STR(name, flags)                                                                           \
	{                                                                                          \
		name, FK_STR, flags, NULL, 0, 0, NULL                                              \
	}
#define STR_MAX(name, flags, max)                                                                  \
	{                                                                                          \
		name, FK_STR, flags, NULL, 0, max, NULL                                            \
	}
#define ONE_OF(name, flags, values)                                                                \
	{                                                                                          \
		name, FK_STR, flags, NULL, 0, 0, values                                            \
	}
#define BOOL(name, flags)                                                                          \
	{                                                                                          \
		name, FK_BOOL, flags, NULL, 0, 0, NULL                                             \
	}
#define INT(name, flags, min, max)                                                                 \
	{                                                                                          \
		name, FK_INT, flags, NULL, min, max, NULL                                          \
	}
#define OBJ(name, flags, shapes)                                                                   \
	{                                                                                          \
		name, FK_OBJ, flags, shapes, 0, 0, NULL                                            \
	}
#define ARR(name, flags, shapes, min, max)                                                         \
	{                                                                                          \
		name, FK_ARR, flags, shapes, min, max, NULL                                        \
	}

static const char *const image_types[] = { "image/png", "image/jpeg", "image/gif", "image/webp",
					   NULL };
static const char *const plain_text[] = { "text/plain", NULL };
static const char *const verdicts[] = { "allow", "deny", NULL };

static const struct field f_base64_image[] = { STR("data", FF_REQ),
					       ONE_OF("media_type", FF_REQ, image_types), END };
static const struct field f_base64_doc[] = { STR("data", FF_REQ), STR("media_type", FF_REQ), END };
static const struct field f_text_doc[] = { STR("data", FF_REQ),
					   ONE_OF("media_type", FF_REQ, plain_text), END };
static const struct field f_url[] = { STR("url", FF_REQ), END };
static const struct field f_file[] = { STR("file_id", FF_REQ), END };

static const struct shape s_base64_image = { "base64", f_base64_image };
static const struct shape s_base64_doc = { "base64", f_base64_doc };
static const struct shape s_text_doc = { "text", f_text_doc };
static const struct shape s_url = { "url", f_url };
static const struct shape s_file = { "file", f_file };
static const struct shape *const image_sources[] = { &s_base64_image, &s_url, &s_file, NULL };
static const struct shape *const doc_sources[] = { &s_base64_doc, &s_text_doc, &s_url, &s_file,
						   NULL };

static const struct field f_text[] = { STR("text", FF_REQ | FF_TEXT), END };
static const struct field f_image[] = { OBJ("source", FF_REQ, image_sources), END };
static const struct field f_document[] = { OBJ("source", FF_REQ, doc_sources),
					   STR("context", FF_NULL), STR("title", FF_NULL), END };
static const struct field f_none[] = { END };
static const struct field f_citations[] = { BOOL("enabled", FF_REQ), END };

static const struct shape s_text = { "text", f_text };
static const struct shape s_image = { "image", f_image };
static const struct shape s_document = { "document", f_document };
static const struct shape s_redacted = { "redacted", f_none };
static const struct shape s_citations = { NULL, f_citations };
static const struct shape *const texts[] = { &s_text, NULL };
static const struct shape *const citations[] = { &s_citations, NULL };

static const struct field f_search_result[] = { STR("source", FF_REQ), STR("title", FF_REQ),
						ARR("content", FF_REQ, texts, 0,
						    EVENTS_CONTENT_MAX),
						OBJ("citations", FF_REQ, citations), END };
static const struct shape s_search_result = { "search_result", f_search_result };

static const struct shape *const message_blocks[] = { &s_text, &s_image, &s_document, &s_redacted,
						      NULL };
static const struct shape *const result_blocks[] = { &s_text, &s_image, &s_document,
						     &s_search_result, NULL };

static const struct field f_text_rubric[] = { STR_MAX("content", FF_REQ, EVENTS_RUBRIC_MAX), END };
static const struct shape s_text_rubric = { "text", f_text_rubric };
static const struct shape *const rubrics[] = { &s_text_rubric, &s_file, NULL };

/* The client events (docs/api.md §7). */
static const struct field f_message[] = {
	ARR("content", FF_REQ, message_blocks, 1, EVENTS_CONTENT_MAX), END
};
static const struct field f_interrupt[] = { STR("session_thread_id", FF_NULL), END };
static const struct field f_confirmation[] = {
	STR("tool_use_id", FF_REQ), ONE_OF("result", FF_REQ, verdicts),
	STR_MAX("deny_message", FF_NULL, EVENTS_DENY_MESSAGE_MAX), END
};
static const struct field f_custom_result[] = {
	STR("custom_tool_use_id", FF_REQ), ARR("content", 0, result_blocks, 0, EVENTS_CONTENT_MAX),
	BOOL("is_error", FF_NULL), END
};
static const struct field f_tool_result[] = {
	STR("tool_use_id", FF_REQ), ARR("content", 0, result_blocks, 0, EVENTS_CONTENT_MAX),
	BOOL("is_error", FF_NULL), END
};
static const struct field f_outcome[] = {
	STR("description", FF_REQ), OBJ("rubric", FF_REQ, rubrics),
	INT("max_iterations", FF_NULL, 1, EVENTS_OUTCOME_ITER_MAX), END
};
static const struct field f_system[] = { ARR("content", FF_REQ, texts, 1, EVENTS_CONTENT_MAX),
					 END };

static const struct {
	struct shape shape;
	enum ev_kind kind;
	const char *ref; /* the field naming the tool use it answers */
} event_table[] = {
	{ { "user.message", f_message }, EVK_MESSAGE, NULL },
	{ { "user.interrupt", f_interrupt }, EVK_INTERRUPT, NULL },
	{ { "user.tool_confirmation", f_confirmation }, EVK_CONFIRMATION, "tool_use_id" },
	{ { "user.custom_tool_result", f_custom_result }, EVK_CUSTOM_RESULT, "custom_tool_use_id" },
	{ { "user.tool_result", f_tool_result }, EVK_TOOL_RESULT, "tool_use_id" },
	{ { "user.define_outcome", f_outcome }, EVK_OUTCOME, NULL },
	{ { "system.message", f_system }, EVK_SYSTEM, NULL },
};
#define EVENT_KINDS (sizeof(event_table) / sizeof(event_table[0]))

#define EVENTS_LIST_TEXT_MAX 160 /* "text, image, document, search_result" and room */

static int check_shape(json_t *obj, const struct shape *sh, const char *path, struct verr *err);

/* Append ITEM to the comma-separated LIST. */
static void list_add(char *list, size_t sz, const char *item)
{
	size_t n = strlen(list);

	snprintf(list + n, sz - n, "%s%s", n ? ", " : "", item);
}

/* Which of SHAPES OBJ (an object) is, by its "type". NULL with ERR set. */
static const struct shape *pick(json_t *obj, const struct shape *const *shapes, const char *path,
				struct verr *err)
{
	json_t *t = json_object_get(obj, "type");
	char echo[VERR_ECHO_BUF];

	if (!shapes[0]->type)
		return shapes[0];
	if (!t)
		return verr_set(err, 400, NULL, "'%s.type' is required", path), NULL;
	if (!json_is_string(t))
		return verr_set(err, 400, NULL, "'%s.type' must be a string", path), NULL;
	for (size_t i = 0; shapes[i]; i++)
		if (!strcmp(shapes[i]->type, json_string_value(t)))
			return shapes[i];
	{
		char list[EVENTS_LIST_TEXT_MAX] = "";
		for (size_t i = 0; shapes[i]; i++)
			list_add(list, sizeof(list), shapes[i]->type);
		verr_set(err, 400, NULL, "'%s.type' '%s' is not one of: %s", path,
			 verr_echo(echo, json_string_value(t), VERR_ECHO_CHARS), list);
	}
	return NULL;
}

static int check_object(json_t *v, const struct shape *const *shapes, const char *path,
			struct verr *err)
{
	const struct shape *sh;

	if (!json_is_object(v))
		return verr_set(err, 400, NULL, "'%s' must be an object", path);
	sh = pick(v, shapes, path, err);
	return sh ? check_shape(v, sh, path, err) : -1;
}

static int check_field(json_t *v, const struct field *f, const char *path, struct verr *err)
{
	char sub[EVENTS_PATH_MAX];

	switch (f->kind) {
	case FK_STR:
		if (!json_is_string(v))
			return verr_set(err, 400, NULL, "'%s' must be a string", path);
		if ((f->flags & FF_TEXT) && !json_string_length(v))
			return verr_set(err, 400, NULL,
					"'%s' must not be empty (the model refuses an empty text "
					"block)",
					path);
		if (f->max && (long long)utf8_chars(json_string_value(v)) > f->max)
			return verr_set(err, 400, NULL, "'%s' must be at most %lld characters",
					path, f->max);
		if (f->values && !verr_in_list(json_string_value(v), f->values)) {
			char list[EVENTS_LIST_TEXT_MAX] = "";
			for (size_t i = 0; f->values[i]; i++)
				list_add(list, sizeof(list), f->values[i]);
			return verr_set(err, 400, NULL, "'%s' must be one of: %s", path, list);
		}
		return 0;
	case FK_BOOL:
		return json_is_boolean(v)
			       ? 0
			       : verr_set(err, 400, NULL, "'%s' must be a boolean", path);
	case FK_INT:
		if (!json_is_integer(v) || json_integer_value(v) < f->min ||
		    json_integer_value(v) > f->max)
			return verr_set(err, 400, NULL, "'%s' must be an integer from %lld to %lld",
					path, f->min, f->max);
		return 0;
	case FK_OBJ:
		return check_object(v, f->shapes, path, err);
	case FK_ARR:
		if (!json_is_array(v))
			return verr_set(err, 400, NULL, "'%s' must be an array", path);
		if ((long long)json_array_size(v) < f->min ||
		    (long long)json_array_size(v) > f->max)
			return verr_set(err, 400, NULL, "'%s' must have %lld to %lld items", path,
					f->min, f->max);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if ((size_t)snprintf(sub, sizeof(sub), "%s[%zu]", path, i) >= sizeof(sub))
				return verr_set(err, 400, NULL, "'%s' is nested too deeply", path);
			if (check_object(json_array_get(v, i), f->shapes, sub, err))
				return -1;
		}
		return 0;
	}
	return -1;
}

static int check_shape(json_t *obj, const struct shape *sh, const char *path, struct verr *err)
{
	const char *key;
	json_t *v;
	char sub[EVENTS_PATH_MAX], echo[VERR_ECHO_BUF];

	json_object_foreach (obj, key, v) {
		const struct field *f = sh->fields;

		if (sh->type && !strcmp(key, "type"))
			continue;
		while (f->name && strcmp(f->name, key))
			f++;
		if (!f->name)
			return verr_set(err, 400, NULL, "unknown field '%s.%s'", path,
					verr_echo(echo, key, VERR_ECHO_CHARS));
		if ((size_t)snprintf(sub, sizeof(sub), "%s.%s", path, key) >= sizeof(sub))
			return verr_set(err, 400, NULL, "'%s' is nested too deeply", path);
		if (json_is_null(v) && (f->flags & FF_NULL))
			continue;
		if (check_field(v, f, sub, err))
			return -1;
	}
	for (const struct field *f = sh->fields; f->name; f++)
		if ((f->flags & FF_REQ) && !json_object_get(obj, f->name))
			return verr_set(err, 400, NULL, "'%s.%s' is required", path, f->name);
	return 0;
}

/* The rules of one event past its shape. */
static int check_event(json_t *ev, unsigned k, const char *path, struct ev_checked *out,
		       struct verr *err)
{
	out->kind = event_table[k].kind;
	out->type = event_table[k].shape.type;
	out->ref = event_table[k].ref ? json_string_value(json_object_get(ev, event_table[k].ref))
				      : NULL;
	if (out->kind == EVK_CONFIRMATION) {
		json_t *deny = json_object_get(ev, "deny_message");

		out->allow = !strcmp(json_string_value(json_object_get(ev, "result")), "allow");
		if (out->allow && deny && !json_is_null(deny))
			return verr_set(err, 400, NULL,
					"'%s.deny_message' is allowed only with result 'deny'",
					path);
	}
	return 0;
}

int events_check(json_t *events, struct ev_checked *out, struct verr *err)
{
	size_t n;

	if (!events)
		return verr_set(err, 400, NULL, "'events' is required");
	if (!json_is_array(events))
		return verr_set(err, 400, NULL, "'events' must be an array");
	n = json_array_size(events);
	if (n < 1 || n > EVENTS_SEND_MAX)
		return verr_set(err, 400, NULL, "'events' must have 1 to %d events",
				EVENTS_SEND_MAX);
	for (size_t i = 0; i < n; i++) {
		json_t *ev = json_array_get(events, i), *t;
		char path[EVENTS_PATH_MAX], echo[VERR_ECHO_BUF];
		unsigned k;

		snprintf(path, sizeof(path), "events[%zu]", i);
		if (!json_is_object(ev))
			return verr_set(err, 400, NULL, "'%s' must be an object", path);
		t = json_object_get(ev, "type");
		if (!t)
			return verr_set(err, 400, NULL, "'%s.type' is required", path);
		if (!json_is_string(t))
			return verr_set(err, 400, NULL, "'%s.type' must be a string", path);
		for (k = 0; k < EVENT_KINDS; k++)
			if (!strcmp(event_table[k].shape.type, json_string_value(t)))
				break;
		if (k == EVENT_KINDS)
			return verr_set(err, 400, NULL,
					"'%s.type' '%s' is not an event a client may send", path,
					verr_echo(echo, json_string_value(t), VERR_ECHO_CHARS));
		if (check_shape(ev, &event_table[k].shape, path, err) ||
		    check_event(ev, k, path, &out[i], err))
			return -1;
		if (out[i].kind == EVK_SYSTEM) {
			enum ev_kind before = i ? out[i - 1].kind : EVK_SYSTEM;

			if (i + 1 != n)
				return verr_set(err, 400, NULL,
						"'%s': a system.message must be the last event of "
						"its request",
						path);
			if (before != EVK_MESSAGE && before != EVK_TOOL_RESULT &&
			    before != EVK_CUSTOM_RESULT)
				return verr_set(err, 400, NULL,
						"'%s': a system.message must directly follow a "
						"user.message, user.tool_result or "
						"user.custom_tool_result",
						path);
		}
	}
	return 0;
}
