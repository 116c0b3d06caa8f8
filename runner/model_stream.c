/* The reader of one Messages API answer (contract in model_stream.h). */
#include "model_stream.h"
#include "http_header.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MODEL_STREAM_HEADER_MAX 256	      /* bytes of a header's value looked at */
#define MODEL_STREAM_RETRY_AFTER_MAX_S 86400L /* a longer retry-after is taken as this */

struct model_stream_part {
	struct strbuf text;	 /* text, thinking, or redacted thinking's data */
	struct strbuf signature; /* a thinking block's signature (signature_delta replaces it) */
	struct strbuf json;	 /* a tool_use's input as it came (input_json_delta) */
	int has_signature;
	int open; /* content_block_start read, content_block_stop not yet */
};

/* The API's error types and the status each comes with; the first entry of a status names the
 * type of an answer with that status whose body names none. */
static const struct {
	long status;
	const char *type;
} error_types[] = {
	{ 400, "invalid_request_error" }, { 401, "authentication_error" },
	{ 402, "billing_error" },	  { 403, "permission_error" },
	{ 404, "not_found_error" },	  { 413, "request_too_large" },
	{ 429, "rate_limit_error" },	  { 500, "api_error" },
	{ 504, "timeout_error" },	  { 529, "overloaded_error" },
};

enum model_outcome model_stream_classify(long status, int should_retry, const char **type)
{
	if (type) {
		*type = status >= 500 ? "api_error" : "http_error";
		for (size_t i = 0; i < sizeof(error_types) / sizeof(error_types[0]); i++)
			if (error_types[i].status == status) {
				*type = error_types[i].type;
				break;
			}
	}
	if (should_retry >= 0)
		return should_retry ? MODEL_RETRY : MODEL_FAILED;
	/* what the official SDK retries: request and lock timeouts, rate limits, server errors */
	if (status == 408 || status == 409 || status == 429 || status >= 500)
		return MODEL_RETRY;
	return MODEL_FAILED;
}

long model_stream_error_status(const char *type)
{
	for (size_t i = 0; type && i < sizeof(error_types) / sizeof(error_types[0]); i++)
		if (!strcmp(error_types[i].type, type))
			return error_types[i].status;
	return 400;
}

/* Copy N bytes of SRC into DST (DSTSZ bytes, NUL-terminated), control characters as spaces,
 * cut on a UTF-8 character boundary. */
static void copy_clean(char *dst, size_t dstsz, const char *src, size_t n)
{
	size_t k = 0;

	if (!dstsz)
		return;
	if (n > dstsz - 1) {
		n = dstsz - 1;
		while (n && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--; /* src[n], the first byte left out, must start a character */
	}
	for (; k < n; k++) {
		unsigned char ch = (unsigned char)src[k];
		dst[k] = ch < 0x20 || ch == 0x7f ? ' ' : (char)ch;
	}
	dst[k] = '\0';
}

int model_stream_fail(struct model_stream *s, enum model_outcome o, const char *type,
		      const char *fmt, ...)
{
	char msg[MODEL_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->decided = 1;
	s->outcome = o;
	copy_clean(s->out->error_type, sizeof(s->out->error_type), type, strlen(type));
	copy_clean(s->out->error_message, sizeof(s->out->error_message), msg, strlen(msg));
	return -1;
}

#define malformed(s, ...) model_stream_fail(s, MODEL_FAILED, "malformed_reply", __VA_ARGS__)

static int nomem(struct model_stream *s)
{
	return model_stream_fail(s, MODEL_RETRY, "out_of_memory",
				 "out of memory reading the model's reply");
}

static int too_large(struct model_stream *s)
{
	return model_stream_fail(s, MODEL_FAILED, "reply_too_large",
				 "the model's reply is over %d bytes", MODEL_REPLY_MAX);
}

static int is_2xx(long status)
{
	return status >= 200 && status < 300;
}

void model_stream_init(struct model_stream *s, struct model_reply *out)
{
	memset(s, 0, sizeof(*s));
	memset(out, 0, sizeof(*out));
	s->out = out;
	s->should_retry = -1;
	out->retry_after_ms = -1;
}

/* ---- header lines ---- */

/* Seconds (a number) or an HTTP date in VALUE -> milliseconds from now, or -1. */
static long retry_after_value(const char *value, double unit_ms)
{
	struct tm tm;
	char *end;
	double v;
	const char *rest;

	errno = 0;
	v = strtod(value, &end);
	if (end != value && !*end && !errno && v >= 0) {
		if (v * unit_ms > MODEL_STREAM_RETRY_AFTER_MAX_S * 1000.0)
			return MODEL_STREAM_RETRY_AFTER_MAX_S * 1000;
		return (long)(v * unit_ms);
	}
	if (unit_ms != 1000.0)
		return -1; /* retry-after-ms is a number only */
	memset(&tm, 0, sizeof(tm));
	rest = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!rest || *rest)
		return -1;
	v = difftime(timegm(&tm), time(NULL));
	if (v <= 0)
		return 0;
	return (long)(v < MODEL_STREAM_RETRY_AFTER_MAX_S ? v : MODEL_STREAM_RETRY_AFTER_MAX_S) *
	       1000;
}

void model_stream_header(struct model_stream *s, const char *line, size_t n)
{
	char value[MODEL_STREAM_HEADER_MAX];
	struct http_header h;
	size_t vlen;
	long ms;

	if (http_header_parse(line, n, &h))
		return;
	if (h.status >= 0) {
		s->status = h.status;
		s->json = 0;
		s->should_retry = -1;
		s->retry_ms_seen = 0;
		s->out->retry_after_ms = -1;
		return;
	}
	vlen = h.value_len < sizeof(value) ? h.value_len : sizeof(value) - 1;
	memcpy(value, h.value, vlen);
	value[vlen] = '\0';
	if (http_header_is(&h, "content-type")) {
		s->json = http_header_media_is(&h, "application/json");
	} else if (http_header_is(&h, "retry-after-ms")) {
		if ((ms = retry_after_value(value, 1.0)) >= 0) {
			s->out->retry_after_ms = ms;
			s->retry_ms_seen = 1; /* wins over retry-after, as in the SDK */
		}
	} else if (http_header_is(&h, "retry-after")) {
		if (!s->retry_ms_seen && (ms = retry_after_value(value, 1000.0)) >= 0)
			s->out->retry_after_ms = ms;
	} else if (http_header_is(&h, "x-should-retry")) {
		s->should_retry = !strcasecmp(value, "true")	? 1
				  : !strcasecmp(value, "false") ? 0
								: -1;
	}
}

/* ---- blocks ---- */

/* Append N bytes of DATA to SB, a part of the reply: counted against MODEL_REPLY_MAX. */
static int keep(struct model_stream *s, struct strbuf *sb, const char *data, size_t n)
{
	if (n > MODEL_REPLY_MAX - s->kept)
		return too_large(s);
	if (strbuf_add(sb, data, n))
		return nomem(s);
	s->kept += n;
	return 0;
}

/* The string member KEY of OBJ, or NULL. */
static const char *str_member(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* OBJ's stop_reason and stop_details (an object; anything else is taken as none), when
 * present. */
static int set_stop_reason(struct model_stream *s, const json_t *obj)
{
	const json_t *v = json_object_get(obj, "stop_reason"),
		     *details = json_object_get(obj, "stop_details");
	const char *r = json_string_value(v);

	if (json_is_object(details)) {
		json_decref(s->out->stop_details);
		if (!(s->out->stop_details = json_deep_copy(details)))
			return nomem(s);
	}
	if (!v || json_is_null(v))
		return 0;
	if (!r || strlen(r) >= sizeof(s->out->stop_reason))
		return malformed(s, "stop_reason is not a known value");
	strcpy(s->out->stop_reason, r);
	return 0;
}

/* The usage counters present in USAGE; the others are left as they are (a message_delta's
 * counters are the message's totals so far, as the SDK reads them). */
static void read_usage(struct model_usage *u, const json_t *usage)
{
	static const struct {
		const char *key;
		size_t off;
	} fields[] = {
		{ "input_tokens", offsetof(struct model_usage, input) },
		{ "output_tokens", offsetof(struct model_usage, output) },
		{ "cache_creation_input_tokens", offsetof(struct model_usage, cache_creation) },
		{ "cache_read_input_tokens", offsetof(struct model_usage, cache_read) },
	};

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const json_t *v = json_object_get(usage, fields[i].key);
		if (json_is_integer(v))
			*(long long *)((char *)u + fields[i].off) = json_integer_value(v);
	}
}

/* SB's contents as an owned string ("" when empty); SB is emptied. NULL when out of memory. */
static char *take(struct strbuf *sb)
{
	char *p = strbuf_detach(sb, NULL);
	return p ? p : strdup("");
}

/* Whether the reply's stop reason says that it was cut short: a tool_use's input may then be
 * incomplete JSON. */
static int stop_cuts_input(const struct model_stream *s)
{
	return !strcmp(s->out->stop_reason, "max_tokens") ||
	       !strcmp(s->out->stop_reason, "model_context_window_exceeded");
}

/* The first tool_use input that did not parse, now that the stop reason does not excuse it. */
static int bad_input(struct model_stream *s)
{
	return malformed(s, "%s", s->bad_input);
}

/* Block I is complete: its texts move to out->blocks[I], a tool_use's input is parsed (an empty
 * input means {}; one that does not parse is incomplete, which only a reply that stops at
 * max_tokens may have). */
static int close_part(struct model_stream *s, size_t i)
{
	struct model_block *b = &s->out->blocks[i];
	struct model_stream_part *p = &s->parts[i];
	json_error_t jerr;
	json_t *input;

	p->open = 0;
	if (b->type == MB_TOOL_USE) {
		if (!p->json.len) {
			if (!b->input && !(b->input = json_object()))
				return nomem(s);
			return 0;
		}
		input = json_loadb(p->json.buf, p->json.len, 0, &jerr);
		strbuf_release(&p->json);
		if (!input) {
			char why[MODEL_ERROR_MAX];

			snprintf(why, sizeof(why), "tool_use %s: input is not JSON: %s", b->id,
				 jerr.text);
			b->incomplete = 1;
			json_decref(b->input);
			if (!(b->input = json_object()))
				return nomem(s);
			if (!s->bad_input && !(s->bad_input = strdup(why)))
				return nomem(s);
			return 0;
		}
		json_decref(b->input);
		b->input = input;
		if (!json_is_object(input))
			return malformed(s, "tool_use %s: input is not a JSON object", b->id);
		return 0;
	}
	if (!(b->text = take(&p->text)))
		return nomem(s);
	if (p->has_signature && !(b->signature = take(&p->signature)))
		return nomem(s);
	return 0;
}

/* Block CB (a content_block_start's, or one of a message's content) as the next block; OPEN:
 * deltas follow until its content_block_stop. */
static int add_block(struct model_stream *s, const json_t *cb, int open)
{
	static const struct {
		const char *type;
		enum model_block_type mb;
		const char *text; /* the member holding its text */
	} kinds[] = {
		{ "text", MB_TEXT, "text" },
		{ "thinking", MB_THINKING, "thinking" },
		{ "redacted_thinking", MB_REDACTED_THINKING, "data" },
		{ "tool_use", MB_TOOL_USE, NULL },
	};
	struct model_reply *out = s->out;
	const char *type = str_member(cb, "type"), *text, *sig;
	struct model_stream_part *p;
	struct model_block *b;
	size_t k;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
		if (type && !strcmp(kinds[k].type, type))
			break;
	if (k == sizeof(kinds) / sizeof(kinds[0]))
		return malformed(s, "content block %zu: unsupported type '%.64s'", out->n,
				 type ? type : "(none)");
	if (out->n == s->nalloc) {
		size_t na = s->nalloc ? s->nalloc * 2 : 4;
		struct model_block *nb = realloc(out->blocks, na * sizeof(*nb));
		struct model_stream_part *np;

		if (!nb)
			return nomem(s);
		out->blocks = nb;
		if (!(np = realloc(s->parts, na * sizeof(*np))))
			return nomem(s);
		s->parts = np;
		s->nalloc = na;
	}
	/* a block's own size counts against the cap too: a stream of empty blocks is bounded */
	if (sizeof(*b) + sizeof(*p) > MODEL_REPLY_MAX - s->kept)
		return too_large(s);
	s->kept += sizeof(*b) + sizeof(*p);
	b = &out->blocks[out->n];
	p = &s->parts[out->n];
	memset(b, 0, sizeof(*b));
	memset(p, 0, sizeof(*p));
	out->n++;
	s->nparts++;
	b->type = kinds[k].mb;
	p->open = 1;
	if (b->type == MB_TOOL_USE) {
		const char *id = str_member(cb, "id"), *name = str_member(cb, "name");
		const json_t *input = json_object_get(cb, "input");

		if (!id || !*id || !name || !*name)
			return malformed(s, "content block %zu: tool_use without id or name",
					 out->n - 1);
		if (!(b->id = strdup(id)) || !(b->name = strdup(name)))
			return nomem(s);
		if (input && !json_is_object(input))
			return malformed(s, "tool_use %s: input is not a JSON object", id);
		b->input = json_incref((json_t *)input);
	} else {
		const json_t *t = json_object_get(cb, kinds[k].text);

		text = json_string_value(t);
		if (t && !text)
			return malformed(s, "content block %zu: %s is not a string", out->n - 1,
					 kinds[k].text);
		if (text && keep(s, &p->text, text, strlen(text)))
			return -1;
		if (b->type == MB_THINKING && (sig = str_member(cb, "signature")) && *sig) {
			p->has_signature = 1;
			if (keep(s, &p->signature, sig, strlen(sig)))
				return -1;
		}
	}
	return open ? 0 : close_part(s, out->n - 1);
}

/* ---- the stream's events ---- */

static int on_error(struct model_stream *s, const json_t *ev)
{
	const json_t *err = json_object_get(ev, "error");
	const char *type = str_member(err, "type"), *msg = str_member(err, "message");

	if (!type || !*type)
		type = "api_error";
	return model_stream_fail(
		s, model_stream_classify(model_stream_error_status(type), -1, NULL), type, "%s",
		msg && *msg ? msg : "the model's stream reported an error");
}

static int on_message_start(struct model_stream *s, const json_t *ev)
{
	const json_t *msg = json_object_get(ev, "message"), *content, *cb;
	size_t i;

	if (!json_is_object(msg))
		return malformed(s, "message_start without a message");
	if (s->started)
		return malformed(s, "a second message_start");
	s->started = 1;
	read_usage(&s->out->usage, json_object_get(msg, "usage"));
	if (set_stop_reason(s, msg))
		return -1;
	content = json_object_get(msg, "content");
	json_array_foreach (content, i, cb)
		if (add_block(s, cb, 0))
			return -1;
	return 0;
}

/* The index of EV, which must name an open block; -1 (decided) otherwise. */
static long open_index(struct model_stream *s, const json_t *ev, const char *what)
{
	const json_t *v = json_object_get(ev, "index");
	json_int_t i = json_is_integer(v) ? json_integer_value(v) : -1;

	if (i < 0 || (size_t)i >= s->out->n || !s->parts[i].open)
		return malformed(s, "%s for a block that is not open", what);
	return (long)i;
}

static int on_block_start(struct model_stream *s, const json_t *ev)
{
	const json_t *v = json_object_get(ev, "index"), *cb = json_object_get(ev, "content_block");

	if (!json_is_integer(v) || json_integer_value(v) != (json_int_t)s->out->n)
		return malformed(s, "content_block_start out of order (block %zu expected)",
				 s->out->n);
	if (!json_is_object(cb))
		return malformed(s, "content_block_start without a content_block");
	return add_block(s, cb, 1);
}

static int on_block_delta(struct model_stream *s, const json_t *ev)
{
	static const struct {
		const char *type;
		enum model_block_type mb;
		const char *member;
		size_t part; /* the strbuf of struct model_stream_part it goes to */
	} deltas[] = {
		{ "text_delta", MB_TEXT, "text", offsetof(struct model_stream_part, text) },
		{ "thinking_delta", MB_THINKING, "thinking",
		  offsetof(struct model_stream_part, text) },
		{ "signature_delta", MB_THINKING, "signature",
		  offsetof(struct model_stream_part, signature) },
		{ "input_json_delta", MB_TOOL_USE, "partial_json",
		  offsetof(struct model_stream_part, json) },
	};
	const json_t *delta = json_object_get(ev, "delta");
	const char *type = str_member(delta, "type"), *value;
	struct model_stream_part *p;
	struct strbuf *sb;
	long i = open_index(s, ev, "content_block_delta");
	size_t k;

	if (i < 0)
		return -1;
	for (k = 0; k < sizeof(deltas) / sizeof(deltas[0]); k++)
		if (type && !strcmp(deltas[k].type, type))
			break;
	if (k == sizeof(deltas) / sizeof(deltas[0]))
		return 0; /* citations_delta, and kinds this reader does not keep */
	if (s->out->blocks[i].type != deltas[k].mb)
		return malformed(s, "%s for block %ld of another type", type, i);
	if (!(value = str_member(delta, deltas[k].member)))
		return malformed(s, "%s without its %s", type, deltas[k].member);
	p = &s->parts[i];
	sb = (struct strbuf *)((char *)p + deltas[k].part);
	if (sb == &p->signature) { /* a signature comes whole */
		s->kept -= sb->len;
		strbuf_reset(sb);
		p->has_signature = 1;
	}
	return keep(s, sb, value, strlen(value));
}

static int on_block_stop(struct model_stream *s, const json_t *ev)
{
	long i = open_index(s, ev, "content_block_stop");

	return i < 0 ? -1 : close_part(s, (size_t)i);
}

static int on_message_delta(struct model_stream *s, const json_t *ev)
{
	read_usage(&s->out->usage, json_object_get(ev, "usage"));
	if (set_stop_reason(s, json_object_get(ev, "delta")))
		return -1;
	return s->bad_input && s->out->stop_reason[0] && !stop_cuts_input(s) ? bad_input(s) : 0;
}

static int on_message_stop(struct model_stream *s, const json_t *ev)
{
	(void)ev;
	for (size_t i = 0; i < s->out->n; i++)
		if (s->parts[i].open && close_part(s, i))
			return -1;
	s->stopped = 1;
	return 0;
}

/* One event's data, parsed; dispatched on its type as the SDK's accumulator does (types it
 * does not know are passed over). */
static int on_event(struct model_stream *s, const json_t *ev)
{
	static const struct {
		const char *type;
		int (*fn)(struct model_stream *s, const json_t *ev);
	} events[] = {
		{ "message_start", on_message_start },
		{ "content_block_start", on_block_start },
		{ "content_block_delta", on_block_delta },
		{ "content_block_stop", on_block_stop },
		{ "message_delta", on_message_delta },
		{ "message_stop", on_message_stop },
		{ "error", on_error },
	};
	const char *type = str_member(ev, "type");

	if (s->stopped || !type)
		return 0;
	for (size_t k = 0; k < sizeof(events) / sizeof(events[0]); k++) {
		if (strcmp(events[k].type, type))
			continue;
		if (!s->started && events[k].fn != on_message_start && events[k].fn != on_error)
			return malformed(s, "%s before message_start", type);
		return events[k].fn(s, ev);
	}
	return 0;
}

/* ---- server-sent events ---- */

/* One event of the stream (sse_event_fn): the SDK drops a frame without an event name; pings
 * are keep-alives; a long name matches no event. */
static int on_frame(void *arg, const char *name, int name_long, char *data, size_t len)
{
	struct model_stream *s = arg;
	json_error_t jerr;
	json_t *ev = NULL;
	int rc = 0;

	if ((!name[0] && !name_long) || !strcmp(name, "ping"))
		return 0;
	ev = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!ev && !strcmp(name, "error")) /* an error all the same, as the SDK takes it */
		rc = model_stream_fail(s, MODEL_RETRY, "api_error", "%s", data);
	else if (!ev)
		rc = malformed(s, "event %s: data is not JSON: %s",
			       name_long ? "(long name)" : name, jerr.text);
	else if (!strcmp(name, "error"))
		rc = on_error(s, ev);
	else
		rc = on_event(s, ev);
	json_decref(ev);
	return rc;
}

static int feed_sse(struct model_stream *s, const char *p, size_t n)
{
	switch (sse_feed(&s->sse, p, n, MODEL_REPLY_MAX - s->kept, on_frame, s)) {
	case SSE_OK:
		return 0;
	case SSE_NOMEM:
		return nomem(s);
	case SSE_TOO_LARGE:
		return too_large(s);
	default:
		return -1; /* on_frame decided */
	}
}

/* ---- the body ---- */

int model_stream_feed(struct model_stream *s, const char *data, size_t n)
{
	size_t cap = is_2xx(s->status) ? MODEL_REPLY_MAX : MODEL_STREAM_ERROR_BODY_MAX;

	if (s->decided)
		return -1;
	s->body_seen = 1;
	if (is_2xx(s->status) && !s->json)
		return feed_sse(s, data, n);
	if (n > cap - s->body.len) {
		if (is_2xx(s->status))
			return too_large(s);
		n = cap - s->body.len; /* the start of an error answer says enough */
	}
	return strbuf_add(&s->body, data, n) ? nomem(s) : 0;
}

int model_stream_complete(const struct model_stream *s)
{
	return !s->decided && is_2xx(s->status) && s->stopped;
}

/* A 2xx JSON answer: one message (or an error document). */
static void finish_json(struct model_stream *s)
{
	json_error_t jerr;
	json_t *root = json_loadb(s->body.buf ? s->body.buf : "", s->body.len,
				  JSON_REJECT_DUPLICATES, &jerr);
	const json_t *cb;
	const char *type = str_member(root, "type");
	size_t i;

	if (!root) {
		malformed(s, "the answer is not JSON: %s", jerr.text);
	} else if (type && !strcmp(type, "error")) {
		on_error(s, root);
	} else if (!type || strcmp(type, "message") ||
		   !json_is_array(json_object_get(root, "content"))) {
		malformed(s, "the answer is not a message");
	} else {
		s->started = 1;
		json_array_foreach (json_object_get(root, "content"), i, cb)
			if (add_block(s, cb, 0))
				break;
		read_usage(&s->out->usage, json_object_get(root, "usage"));
		if (!s->decided && !set_stop_reason(s, root))
			s->stopped = 1;
	}
	json_decref(root);
}

/* An answer with an error status: its outcome by status, its type and message from its body
 * ({"type":"error","error":{"type","message"}}) when it has them. */
static void finish_error(struct model_stream *s)
{
	const char *type, *etype, *emsg;
	enum model_outcome o = model_stream_classify(s->status, s->should_retry, &type);
	json_t *root = json_loadb(s->body.buf ? s->body.buf : "", s->body.len, 0, NULL);
	const json_t *err = json_object_get(root, "error");
	char quote[MODEL_STREAM_QUOTE_MAX + 1];

	if ((etype = str_member(err, "type")) && *etype)
		type = etype;
	if ((emsg = str_member(err, "message")) && *emsg) {
		model_stream_fail(s, o, type, "%s", emsg);
	} else {
		copy_clean(quote, sizeof(quote), s->body.buf ? s->body.buf : "", s->body.len);
		model_stream_fail(s, o, type, "status %ld%s%s", s->status, quote[0] ? ": " : "",
				  quote);
	}
	json_decref(root);
}

static void drop_blocks(struct model_reply *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->blocks[i].text);
		free(r->blocks[i].signature);
		free(r->blocks[i].id);
		free(r->blocks[i].name);
		json_decref(r->blocks[i].input);
	}
	free(r->blocks);
	r->blocks = NULL;
	r->n = 0;
}

enum model_outcome model_stream_finish(struct model_stream *s, const char *broken)
{
	struct model_reply *out = s->out;

	out->http_status = (int)s->status;
	if (s->decided)
		goto out;
	if (s->bad_input && !(s->stopped && stop_cuts_input(s)))
		bad_input(s);
	else if (!s->status)
		model_stream_fail(s, MODEL_RETRY, "connection", "%s",
				  broken ? broken : "no answer");
	else if (!is_2xx(s->status))
		finish_error(s);
	else if (s->json && broken)
		model_stream_fail(s, MODEL_RETRY, "connection", "the answer was cut: %s", broken);
	else if (s->json)
		finish_json(s);
	else if (!s->stopped && broken)
		model_stream_fail(s, MODEL_RETRY, "connection",
				  "the stream was cut before message_stop: %s", broken);
	else if (!s->stopped)
		model_stream_fail(s, MODEL_RETRY, "connection",
				  "the stream ended before message_stop");
out:
	if (s->decided) {
		drop_blocks(out);
		s->nalloc = 0;
		return s->outcome;
	}
	out->error_type[0] = out->error_message[0] = '\0';
	return MODEL_OK;
}

void model_stream_release(struct model_stream *s)
{
	for (size_t i = 0; i < s->nparts; i++) {
		strbuf_release(&s->parts[i].text);
		strbuf_release(&s->parts[i].signature);
		strbuf_release(&s->parts[i].json);
	}
	free(s->parts);
	s->parts = NULL;
	free(s->bad_input);
	s->bad_input = NULL;
	strbuf_release(&s->body);
	sse_release(&s->sse);
}

void model_reply_release(struct model_reply *r)
{
	drop_blocks(r);
	json_decref(r->stop_details);
	memset(r, 0, sizeof(*r));
	r->retry_after_ms = -1;
}
