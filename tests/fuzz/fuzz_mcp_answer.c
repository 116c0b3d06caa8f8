/* libFuzzer target: what the runner's MCP client reads from a server (runner/mcp_answer.c) and
 * makes of it (runner/mcp_tools.c): an answer's header lines and body, then a tools/call result
 * as the Messages API's content blocks.
 *
 * Input: byte 0 says where the body is cut in two, byte 1 picks the request (bit 0: a
 * notification, no id) and the caps (bit 1: an answer cap of FUZZ_SMALL_CAP bytes; bit 2: a
 * text cap of FUZZ_SMALL_CAP); then header lines up to the first empty line, then the body.
 *
 * Checked: the outcome (the result, or the error's kind, status, code and message) is the same
 * whether the body comes whole, cut in two or byte by byte; an error's message is non-empty,
 * valid UTF-8 without control characters; a request's result is an object, a notification's
 * none; a result converts into a non-empty array of blocks: text blocks non-empty, their text
 * within the cap but for the one note of a cut, image blocks of the four media types the API
 * takes; and a tool named after any two strings of the body gets a name of the API's rule. */
#include "fuzz.h"

#include "../../runner/mcp.h"
#include "../../runner/mcp_answer.h"

#define FUZZ_ID 7
#define FUZZ_SMALL_CAP 256
#define FUZZ_OUTCOME_MAX 4096 /* bytes of a result's text compared (the rest: its length) */

/* Read the answer (HDRS, HDRLEN bytes; BODY, LEN bytes) with its body in chunks of at most STEP
 * bytes after the first FIRST; the outcome as text into OUT (caller frees), the result (new
 * reference, or NULL) into *RESULT. */
static char *outcome(const char *hdrs, size_t hdrlen, const char *body, size_t len, size_t first,
		     size_t step, long long id, size_t cap, json_t **result)
{
	struct mcp_answer a;
	struct mcp_error err;
	size_t from = 0, n;
	char *out = malloc(FUZZ_OUTCOME_MAX + MCP_ERROR_MAX + 128), *text;
	const char *h = hdrs;

	if (!out)
		abort();
	mcp_answer_init(&a, id, cap);
	while (h < hdrs + hdrlen) {
		const char *eol = memchr(h, '\n', (size_t)(hdrs + hdrlen - h));
		size_t k = eol ? (size_t)(eol - h) + 1 : (size_t)(hdrs + hdrlen - h);

		mcp_answer_header(&a, h, k);
		h += k;
	}
	mcp_answer_header(&a, "\r\n", 2);
	while (from < len) {
		n = from ? step : first;
		n = n && n < len - from ? n : len - from;
		if (mcp_answer_feed(&a, body + from, n))
			break;
		from += n;
	}
	if (mcp_answer_finish(&a, NULL, result, &err)) {
		FUZZ_CHECK(!*result, "an error with a result");
		FUZZ_CHECK(err.kind != MCP_ERR_NONE && err.message[0], "an error without a kind "
								       "or message");
		FUZZ_CHECK(memchr(err.message, '\0', sizeof(err.message)), "message not ended");
		FUZZ_CHECK(fuzz_utf8_valid(err.message, strlen(err.message)),
			   "message is not UTF-8: %s", err.message);
		for (const char *p = err.message; *p; p++)
			FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f,
				   "a control character in: %s", err.message);
		snprintf(out, FUZZ_OUTCOME_MAX + MCP_ERROR_MAX + 128, "err %d %ld %ld %s", err.kind,
			 err.http_status, err.rpc_code, err.message);
	} else {
		FUZZ_CHECK(id == MCP_ANSWER_NO_ID ? !*result : json_is_object(*result),
			   "a result that is not an object");
		text = *result ? json_dumps(*result, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		snprintf(out, FUZZ_OUTCOME_MAX + MCP_ERROR_MAX + 128, "ok %s %zu %.4096s",
			 a.session_id, text ? strlen(text) : 0, text ? text : "");
		free(text);
	}
	mcp_answer_release(&a);
	return out;
}

static void check_result(const json_t *result, size_t text_max)
{
	static const char *const images[] = { "image/jpeg", "image/png", "image/gif",
					      "image/webp" };
	struct mcp_result r;
	struct mcp_error err;
	size_t i, text = 0, notes = 0;
	const char *media;
	int known;
	json_t *b;

	if (mcp_result_convert(result, text_max, &r, &err)) {
		FUZZ_CHECK(!r.content, "an error with content");
		FUZZ_CHECK(err.kind == MCP_ERR_PROTOCOL || err.kind == MCP_ERR_NOMEM, "kind %d",
			   err.kind);
		return;
	}
	FUZZ_CHECK(json_array_size(r.content) > 0, "empty content");
	json_array_foreach (r.content, i, b) {
		const char *type = json_string_value(json_object_get(b, "type"));
		const json_t *src = json_object_get(b, "source");

		FUZZ_CHECK(type, "a block without a type");
		if (!strcmp(type, "text")) {
			size_t n = json_string_length(json_object_get(b, "text"));
			FUZZ_CHECK(n > 0, "an empty text block");
			if (r.truncated && i == json_array_size(r.content) - 1)
				notes++; /* the note of the cut */
			else
				text += n;
			continue;
		}
		FUZZ_CHECK(!strcmp(type, "image"), "a block of type %s", type);
		FUZZ_CHECK(!strcmp(json_string_value(json_object_get(src, "type")), "base64"),
			   "an image source that is not base64");
		media = json_string_value(json_object_get(src, "media_type"));
		known = 0;
		for (size_t k = 0; k < sizeof(images) / sizeof(images[0]); k++)
			known |= !strcmp(media, images[k]);
		FUZZ_CHECK(known, "an image of type %s", media);
	}
	FUZZ_CHECK(text <= text_max, "%zu bytes of text kept, the cap is %zu", text, text_max);
	FUZZ_CHECK(notes == (size_t)r.truncated, "truncated %d, %zu notes", r.truncated, notes);
	mcp_result_release(&r);
}

/* A tool named after the first two strings in BODY gets a name of the API's rule. */
static void check_names(const char *body, size_t len)
{
	char server[64], tool[64], name[MCP_TOOL_NAME_MAX + 1];
	size_t half = len / 2;

	snprintf(server, sizeof(server), "%.*s", (int)(half < 63 ? half : 63), body);
	snprintf(tool, sizeof(tool), "%.*s", (int)(len - half < 63 ? len - half : 63), body + half);
	mcp_tool_name(server, tool, name);
	FUZZ_CHECK(strlen(name) >= 1 && strlen(name) <= MCP_TOOL_NAME_MAX, "'%s'", name);
	FUZZ_CHECK(
		strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
			strlen(name),
		"'%s' for (%s, %s)", name, server, tool);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data + 2, *sep, *body;
	size_t inlen, hdrlen, len, cut;
	long long id;
	size_t cap, text_max;
	json_t *r1, *r2, *r3;
	char *o1, *o2, *o3;

	if (size < 2)
		return 0;
	inlen = size - 2;
	id = data[1] & 1 ? MCP_ANSWER_NO_ID : FUZZ_ID;
	cap = data[1] & 2 ? FUZZ_SMALL_CAP : MCP_ANSWER_MAX;
	text_max = data[1] & 4 ? FUZZ_SMALL_CAP : MCP_RESULT_TEXT_MAX;
	sep = memmem(in, inlen, "\n\n", 2);
	hdrlen = sep ? (size_t)(sep - in) + 1 : inlen;
	body = sep ? sep + 2 : in + inlen;
	len = (size_t)(in + inlen - body);
	cut = len ? (size_t)data[0] * len / 256 : 0;

	o1 = outcome(in, hdrlen, body, len, 0, 0, id, cap, &r1);
	o2 = outcome(in, hdrlen, body, len, cut, 0, id, cap, &r2);
	o3 = outcome(in, hdrlen, body, len, 1, 1, id, cap, &r3);
	FUZZ_CHECK(!strcmp(o1, o2), "whole and cut at %zu differ:\n  %s\n  %s", cut, o1, o2);
	FUZZ_CHECK(!strcmp(o1, o3), "whole and byte by byte differ:\n  %s\n  %s", o1, o3);
	if (r1)
		check_result(r1, text_max);
	check_names(body, len);
	json_decref(r1);
	json_decref(r2);
	json_decref(r3);
	free(o1);
	free(o2);
	free(o3);
	return 0;
}
