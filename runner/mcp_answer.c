/* The reader of one answer of an MCP server (contract in mcp_answer.h). */
#include "mcp_answer.h"
#include "http_header.h"

#include <stdio.h>
#include <string.h>

static int is_2xx(long status)
{
	return status >= 200 && status < 300;
}

void mcp_answer_init(struct mcp_answer *a, long long id, size_t cap)
{
	memset(a, 0, sizeof(*a));
	a->id = id;
	a->cap = cap;
}

/* ---- header lines ---- */

/* An Mcp-Session-Id: visible ASCII (0x21-0x7e), at most MCP_SESSION_ID_MAX bytes. */
static void read_session_id(struct mcp_answer *a, const char *v, size_t n)
{
	a->session_id_bad = !n || n > MCP_SESSION_ID_MAX;
	for (size_t i = 0; !a->session_id_bad && i < n; i++)
		a->session_id_bad = v[i] < 0x21 || v[i] > 0x7e;
	if (a->session_id_bad) {
		a->session_id[0] = '\0';
		return;
	}
	memcpy(a->session_id, v, n);
	a->session_id[n] = '\0';
}

void mcp_answer_header(struct mcp_answer *a, const char *line, size_t n)
{
	struct http_header h;
	size_t vlen;

	if (http_header_parse(line, n, &h)) {
		while (n && (line[n - 1] == '\r' || line[n - 1] == '\n'))
			n--;
		if (!n && is_2xx(a->status))
			a->headers_done = 1; /* the blank line after the final header block */
		return;
	}
	if (h.status >= 0) {
		a->status = h.status;
		a->type = MCP_ANSWER_OTHER;
		a->content_type[0] = a->session_id[0] = '\0';
		a->session_id_bad = a->headers_done = 0;
	} else if (http_header_is(&h, "content-type")) {
		vlen = h.value_len < sizeof(a->content_type) ? h.value_len
							     : sizeof(a->content_type) - 1;
		memcpy(a->content_type, h.value, vlen);
		a->content_type[vlen] = '\0';
		a->type = http_header_media_is(&h, "application/json")	  ? MCP_ANSWER_JSON
			  : http_header_media_is(&h, "text/event-stream") ? MCP_ANSWER_SSE
									  : MCP_ANSWER_OTHER;
	} else if (http_header_is(&h, "mcp-session-id")) {
		read_session_id(a, h.value, h.value_len);
	}
}

/* ---- the body ---- */

static int fail(struct mcp_answer *a, enum mcp_error_kind kind, const char *what)
{
	a->failed = 1;
	return mcp_fail(&a->err, kind, "%s", what);
}

/* MSG, one JSON-RPC message of the answer: taken when it is the response to the request. 1
 * when taken, 0 when passed over, -1 when it is that response but malformed (A failed). */
static int take(struct mcp_answer *a, json_t *msg)
{
	const json_t *id = json_object_get(msg, "id");

	if (!json_is_object(msg) || json_object_get(msg, "method") || !json_is_integer(id) ||
	    json_integer_value(id) != a->id)
		return 0; /* a notification, a request from the server, another response */
	if (!json_is_object(json_object_get(msg, "result")) &&
	    !json_is_object(json_object_get(msg, "error"))) {
		a->failed = 1;
		return mcp_fail(&a->err, MCP_ERR_PROTOCOL,
				"the response to request %lld has no result or error object",
				a->id);
	}
	a->response = json_incref(msg);
	return 1;
}

/* An event of the stream (sse_event_fn): non-zero once the response is taken. */
static int on_event(void *arg, const char *name, int name_long, char *data, size_t len)
{
	struct mcp_answer *a = arg;
	json_t *msg;
	int rc;

	if (name_long || (name[0] && strcmp(name, "message")) || !len)
		return 0;
	if (!(msg = json_loadb(data, len, 0, NULL)))
		return 0; /* the SDK reports it and reads on */
	rc = take(a, msg);
	json_decref(msg);
	return rc;
}

int mcp_answer_feed(struct mcp_answer *a, const char *data, size_t n)
{
	size_t room;

	if (a->failed)
		return -1;
	if (a->response || (is_2xx(a->status) && a->id == MCP_ANSWER_NO_ID))
		return 0;
	if (is_2xx(a->status) && a->type == MCP_ANSWER_SSE) {
		switch (sse_feed(&a->sse, data, n, a->cap, on_event, a)) {
		case SSE_NOMEM:
			return fail(a, MCP_ERR_NOMEM, "out of memory reading the server's answer");
		case SSE_TOO_LARGE:
			a->failed = 1;
			return mcp_fail(&a->err, MCP_ERR_PROTOCOL,
					"an event of the server's stream is over %zu bytes (the "
					"limit of an answer)",
					a->cap);
		default:
			return a->failed ? -1 : 0;
		}
	}
	if (is_2xx(a->status) && a->type == MCP_ANSWER_JSON) {
		if (n > a->cap - a->body.len) {
			a->failed = 1;
			return mcp_fail(&a->err, MCP_ERR_PROTOCOL,
					"the server's answer is over %zu bytes (the limit)",
					a->cap);
		}
	} else { /* an error answer or an unknown type: its start is quoted */
		room = MCP_ANSWER_ERROR_BODY_MAX - a->body.len;
		n = n < room ? n : room;
	}
	if (strbuf_add(&a->body, data, n))
		return fail(a, MCP_ERR_NOMEM, "out of memory reading the server's answer");
	return 0;
}

int mcp_answer_done(const struct mcp_answer *a)
{
	return a->response || (a->id == MCP_ANSWER_NO_ID && a->headers_done);
}

/* ---- the end ---- */

/* What an error answer says: a JSON-RPC error's message (or a plain "error" string), else its
 * start, quoted; into OUT. */
static void error_text(const struct mcp_answer *a, char *out, size_t outsz)
{
	json_t *doc = json_loadb(a->body.buf ? a->body.buf : "", a->body.len, 0, NULL);
	const json_t *e = json_object_get(doc, "error");
	const char *msg = json_string_value(json_is_object(e) ? json_object_get(e, "message") : e);
	const char *src = msg ? msg : strbuf_str(&a->body);
	size_t len = msg ? strlen(msg) : a->body.len, n = len, k;

	if (n > MCP_ANSWER_QUOTE_MAX)
		n = MCP_ANSWER_QUOTE_MAX;
	if (n > outsz - 1)
		n = outsz - 1;
	while (n && n < len && ((unsigned char)src[n] & 0xc0) == 0x80)
		n--; /* src[n], the first byte left out, must start a character */
	for (k = 0; k < n; k++)
		out[k] = (unsigned char)src[k] < 0x20 || src[k] == 0x7f ? ' ' : src[k];
	out[k] = '\0';
	json_decref(doc);
}

/* The response of a JSON answer (one message or a batch): into a->response, or A failed. */
static void finish_json(struct mcp_answer *a)
{
	json_error_t jerr;
	json_t *doc = json_loadb(a->body.buf ? a->body.buf : "", a->body.len, 0, &jerr), *m;
	size_t i;

	if (!doc) {
		a->failed = 1;
		mcp_fail(&a->err, MCP_ERR_PROTOCOL, "the server's answer is not JSON: %s",
			 jerr.text);
	} else if (json_is_array(doc)) {
		json_array_foreach (doc, i, m)
			if (take(a, m))
				break;
	} else {
		take(a, doc);
	}
	json_decref(doc);
	if (!a->failed && !a->response) {
		a->failed = 1;
		mcp_fail(&a->err, MCP_ERR_PROTOCOL,
			 "the server's answer holds no response to request %lld", a->id);
	}
}

int mcp_answer_finish(struct mcp_answer *a, const char *broken, json_t **result,
		      struct mcp_error *err)
{
	char says[MCP_ANSWER_QUOTE_MAX + 1], num[24];
	const json_t *e;

	*result = NULL;
	memset(err, 0, sizeof(*err));
	err->http_status = a->status;
	if (a->failed)
		goto failed;
	if (!a->status)
		return mcp_fail(err, MCP_ERR_CONNECTION, "no answer from the server: %s",
				broken ? broken : "the connection closed");
	if (a->status == 401 || a->status == 403 || !is_2xx(a->status)) {
		error_text(a, says, sizeof(says));
		return mcp_fail(
			err, a->status == 401 || a->status == 403 ? MCP_ERR_AUTH : MCP_ERR_PROTOCOL,
			"the server answered HTTP %ld%s%s", a->status, says[0] ? ": " : "", says);
	}
	if (a->session_id_bad)
		return mcp_fail(err, MCP_ERR_PROTOCOL,
				"the server's Mcp-Session-Id is not visible ASCII of 1-%d bytes",
				MCP_SESSION_ID_MAX);
	if (a->id == MCP_ANSWER_NO_ID)
		return 0;
	if (a->type == MCP_ANSWER_SSE && !a->response) {
		if (broken)
			return mcp_fail(err, MCP_ERR_CONNECTION,
					"the server's event stream broke before the response to "
					"request %lld: %s",
					a->id, broken);
		return mcp_fail(err, MCP_ERR_PROTOCOL,
				"the server's event stream ended without the response to "
				"request %lld",
				a->id);
	}
	if (a->type == MCP_ANSWER_JSON) {
		if (broken)
			return mcp_fail(err, MCP_ERR_CONNECTION, "the server's answer was cut: %s",
					broken);
		finish_json(a);
		if (a->failed)
			goto failed;
	} else if (a->type != MCP_ANSWER_SSE) {
		return mcp_fail(err, MCP_ERR_PROTOCOL,
				"the server answered with content type '%s', not application/json "
				"or text/event-stream",
				a->content_type);
	}
	if ((e = json_object_get(a->response, "error"))) {
		const char *msg = json_string_value(json_object_get(e, "message"));
		json_int_t code = json_integer_value(json_object_get(e, "code"));

		err->rpc_code = (long)code;
		snprintf(num, sizeof(num), "%lld", (long long)code);
		if (msg && *msg && strstr(msg, num)) /* the official SDK's messages name it */
			return mcp_fail(err, MCP_ERR_RPC, "%s", msg);
		return mcp_fail(err, MCP_ERR_RPC, "JSON-RPC error %s: %s", num,
				msg && *msg ? msg : "(no message)");
	}
	*result = json_incref(json_object_get(a->response, "result"));
	return 0;
failed:
	*err = a->err;
	err->http_status = a->status;
	return -1;
}

void mcp_answer_release(struct mcp_answer *a)
{
	strbuf_release(&a->body);
	sse_release(&a->sse);
	json_decref(a->response);
	a->response = NULL;
}
