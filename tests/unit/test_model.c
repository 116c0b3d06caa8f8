/* The model client's reader of Messages API answers (runner/model_stream.c) on recorded answers,
 * each fed whole, cut in two at every byte, and one byte at a time: the reply must not depend on
 * where the chunks end. Then what runner/model.c decides before any byte is sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "../../common/strbuf.h"
#include "../../runner/model.h"
#include "../../runner/model_stream.h"
#include "unit.h"

#define SUMMARY_MAX 4096

static const char *const outcome_names[] = { "OK", "RETRY", "FAILED", "CANCELLED" };

/* The reply as one line of text, to compare: outcome, status, stop reason, usage, error, retry
 * after, its stop_details when it has them, then each block. */
static void summary(enum model_outcome o, const struct model_reply *r, struct strbuf *sb)
{
	static const char *const types[] = { "text", "thinking", "redacted", "tool_use" };

	strbuf_reset(sb);
	strbuf_addf(sb, "%s %d %s in=%lld out=%lld cc=%lld cr=%lld err=%s:%s ra=%ld",
		    outcome_names[o], r->http_status, r->stop_reason, r->usage.input,
		    r->usage.output, r->usage.cache_creation, r->usage.cache_read, r->error_type,
		    r->error_message, r->retry_after_ms);
	if (r->stop_details) {
		char *d = json_dumps(r->stop_details, JSON_COMPACT | JSON_SORT_KEYS);
		strbuf_addf(sb, " sd=%s", d);
		free(d);
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct model_block *b = &r->blocks[i];
		strbuf_addf(sb, " | %s", types[b->type]);
		if (b->type == MB_TOOL_USE) {
			char *in = json_dumps(b->input, JSON_COMPACT | JSON_SORT_KEYS);
			strbuf_addf(sb, " %s %s %s%s", b->id, b->name, in,
				    b->incomplete ? " incomplete" : "");
			free(in);
		} else {
			assert_non_null(b->text);
			strbuf_addf(sb, " [%s]", b->text);
		}
		if (b->signature)
			strbuf_addf(sb, " sig=%s", b->signature);
	}
}

/* Read an answer: the header lines HDRS ("\n"-separated), then BODY in chunks that end at the
 * offsets CUTS (ascending, N of them; (size_t)-1 ends the list early), then the end of the
 * answer (BROKEN as model_stream_finish takes it). Its summary goes to SB. */
static void read_answer(const char *hdrs, const char *body, size_t len, const size_t *cuts,
			size_t n, const char *broken, struct strbuf *sb)
{
	struct model_stream s;
	struct model_reply r;
	enum model_outcome o;
	size_t from = 0;

	model_stream_init(&s, &r);
	for (const char *h = hdrs; *h;) {
		size_t k = strcspn(h, "\n");
		model_stream_header(&s, h, k);
		h += k + (h[k] == '\n');
	}
	for (size_t i = 0; i <= n; i++) {
		size_t to = i < n ? cuts[i] : len;
		if (to == (size_t)-1)
			to = len;
		if (to > from && model_stream_feed(&s, body + from, to - from))
			break;
		from = to;
	}
	o = model_stream_finish(&s, broken);
	summary(o, &r, sb);
	model_stream_release(&s);
	model_reply_release(&r);
}

#define SSE_HEADERS "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\r\n"

/* BODY read whole must give WANT; then cut in two at every byte, then byte by byte, the same. */
static void check_stream(const char *hdrs, const char *body, const char *want)
{
	struct strbuf got = STRBUF_INIT;
	size_t len = strlen(body), *each = malloc((len + 1) * sizeof(size_t));

	assert_non_null(each);
	read_answer(hdrs, body, len, NULL, 0, NULL, &got);
	assert_string_equal(strbuf_str(&got), want);
	for (size_t k = 0; k <= len; k++) {
		read_answer(hdrs, body, len, &k, 1, NULL, &got);
		if (strcmp(strbuf_str(&got), want))
			fail_msg("cut at byte %zu: %s", k, strbuf_str(&got));
	}
	for (size_t k = 0; k < len; k++)
		each[k] = k + 1;
	read_answer(hdrs, body, len, each, len, NULL, &got);
	assert_string_equal(strbuf_str(&got), want);
	free(each);
	strbuf_release(&got);
}

static void check_once(const char *hdrs, const char *body, const char *broken, const char *want)
{
	struct strbuf got = STRBUF_INIT;

	read_answer(hdrs, body, strlen(body), NULL, 0, broken, &got);
	assert_string_equal(strbuf_str(&got), want);
	strbuf_release(&got);
}

/* A text reply as the API streams it (LF line ends, a ping, multi-byte UTF-8 in a delta). */
static const char text_stream[] =
	"event: message_start\n"
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\","
	"\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,"
	"\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"cache_creation_input_tokens\":3,"
	"\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n"
	"event: content_block_start\n"
	"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
	"\"text\":\"\"}}\n\n"
	"event: ping\n"
	"data: {\"type\": \"ping\"}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
	"\"text\":\"Hello\"}}\n\n"
	"event: content_block_delta\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\","
	"\"text\":\", w\xc3\xb6rld \xe2\x9c\x93\"}}\n\n"
	"event: content_block_stop\n"
	"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
	"event: message_delta\n"
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
	"\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n"
	"event: message_stop\n"
	"data: {\"type\":\"message_stop\"}\n\n";

#define TEXT_WANT                                                                                  \
	"OK 200 end_turn in=25 out=15 cc=3 cr=7 err=: ra=-1 | text [Hello, w\xc3\xb6rld "          \
	"\xe2\x9c\x93]"

static void test_text(void **state)
{
	(void)state;
	check_stream(SSE_HEADERS, text_stream, TEXT_WANT);
}

/* Thinking (with its signature), text, two tool_use blocks: one whose input comes in pieces cut
 * inside strings and escapes, one with no input at all ({}); CR LF line ends, comments, a BOM,
 * an event of a kind the reader does not know, and an event whose data takes two lines. */
static const char tool_stream[] =
	"\xef\xbb\xbf: a comment first\r\n"
	"event: message_start\r\n"
	"data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_02\",\"type\":\"message\","
	"\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,"
	"\"usage\":{\"input_tokens\":100,\"output_tokens\":2}}}\r\n\r\n"
	"event: content_block_start\r\n"
	"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
	"\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
	"\"thinking_delta\",\"thinking\":\"Let me \"}}\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
	"\"thinking_delta\",\"thinking\":\"look.\"}}\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
	"\"signature_delta\",\"signature\":\"EqQBCgIYAh==\"}}\r\n\r\n"
	"event: content_block_stop\r\n"
	"data: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n"
	": keep-alive\r\n\r\n"
	"event: content_block_start\r\n"
	"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\","
	"\"text\":\"Listing.\"}}\r\n\r\n"
	"event: content_block_stop\r\n"
	"data: {\"type\":\"content_block_stop\",\"index\":1}\r\n\r\n"
	"event: content_block_start\r\n"
	"data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":"
	"\"tool_use\",\"id\":\"toolu_01A\",\"name\":\"bash\",\"input\":{}}}\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
	"\"input_json_delta\",\"partial_json\":\"\"}}\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
	"\"input_json_delta\",\"partial_json\":\"{\\\"comm\"}}\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
	"\"input_json_delta\",\"partial_json\":\"and\\\": \\\"ls -l \\\\\"}}\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
	"\"input_json_delta\",\"partial_json\":\"\\\"a b\\\\\\\"\\\", \\\"timeout_ms\\\": 5\"}}"
	"\r\n\r\n"
	"event: content_block_delta\r\n"
	"data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
	"\"input_json_delta\",\"partial_json\":\"000}\"}}\r\n\r\n"
	"event: content_block_stop\r\n"
	"data: {\"type\":\"content_block_stop\",\"index\":2}\r\n\r\n"
	"event: something_new\r\n"
	"data: {\"type\":\"something_new\",\"index\":9}\r\n\r\n"
	"event: content_block_start\r\n"
	"data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":"
	"\"tool_use\",\"id\":\"toolu_01B\",\"name\":\"glob\",\"input\":{}}}\r\n\r\n"
	"event: content_block_stop\r\n"
	"data: {\"type\":\"content_block_stop\",\"index\":3}\r\n\r\n"
	"event: message_delta\r\n"
	"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},"
	"\"usage\":{\"output_tokens\":89,\"input_tokens\":101}}\r\n\r\n"
	"event: message_stop\r\n" /* data on two lines: joined by a LF */
	"data: {\"type\":\r\n"
	"data: \"message_stop\"}\r\n\r\n";

#define TOOL_WANT                                                                                  \
	"OK 200 tool_use in=101 out=89 cc=0 cr=0 err=: ra=-1 | thinking [Let me look.] "           \
	"sig=EqQBCgIYAh== | text [Listing.] | tool_use toolu_01A bash {\"command\":\"ls -l "       \
	"\\\"a b\\\"\",\"timeout_ms\":5000} | tool_use toolu_01B glob {}"

static void test_tool_use(void **state)
{
	(void)state;
	check_stream(SSE_HEADERS, tool_stream, TOOL_WANT);
}

/* CR alone ends a line too; a frame without `event:` is dropped (as the SDK drops it). */
static void test_cr_and_nameless(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	const char *p;

	(void)state;
	for (p = text_stream; *p; p++)
		strbuf_addch(&sb, *p == '\n' ? '\r' : *p);
	check_stream(SSE_HEADERS, strbuf_str(&sb), TEXT_WANT);
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "data: {\"type\":\"message_start\",\"message\":{}}\n\n");
	strbuf_addstr(&sb, text_stream);
	check_stream(SSE_HEADERS, strbuf_str(&sb), TEXT_WANT);
	strbuf_release(&sb);
}

/* The same reply as one JSON message (a proxy answering a streamed request so). */
static void test_json_message(void **state)
{
	static const char msg[] =
		"{\"id\":\"msg_02\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\","
		"\"content\":[{\"type\":\"thinking\",\"thinking\":\"Let me look.\",\"signature\":"
		"\"EqQBCgIYAh==\"},{\"type\":\"text\",\"text\":\"Listing.\"},{\"type\":\"tool_"
		"use\","
		"\"id\":\"toolu_01A\",\"name\":\"bash\",\"input\":{\"command\":\"ls -l \\\"a "
		"b\\\"\","
		"\"timeout_ms\":5000}},{\"type\":\"tool_use\",\"id\":\"toolu_01B\",\"name\":"
		"\"glob\","
		"\"input\":{}}],\"stop_reason\":\"tool_use\",\"stop_sequence\":null,\"usage\":"
		"{\"input_tokens\":101,\"output_tokens\":89}}";

	(void)state;
	check_stream("HTTP/2 200\r\ncontent-type: application/json\r\n", msg, TOOL_WANT);
	check_once(
		"HTTP/2 200\r\ncontent-type: application/json\r\n", msg, "recv failure",
		"RETRY 200  in=0 out=0 cc=0 cr=0 err=connection:the answer was cut: recv failure "
		"ra=-1");
	check_once("HTTP/2 200\r\ncontent-type: application/json\r\n", "{\"type\":\"message\"",
		   NULL,
		   "FAILED 200  in=0 out=0 cc=0 cr=0 err=malformed_reply:the answer is not JSON: "
		   "'}' expected near end of file ra=-1");
	check_once("HTTP/2 200\r\ncontent-type: application/json\r\n",
		   "{\"type\":\"message\",\"content\":[{\"type\":\"image\"}]}", NULL,
		   "FAILED 200  in=0 out=0 cc=0 cr=0 err=malformed_reply:content block 0: "
		   "unsupported type 'image' ra=-1");
}

/* A redacted thinking block keeps its data; an empty text block is "" (never NULL). */
static void test_redacted_and_empty(void **state)
{
	static const char s[] =
		"event: message_start\n"
		"data: {\"type\":\"message_start\",\"message\":{\"usage\":{}}}\n\n"
		"event: content_block_start\n"
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
		"\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va\"}}\n\n"
		"event: content_block_stop\n"
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		"event: content_block_start\n"
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
		"\"text\",\"text\":\"\"}}\n\n"
		"event: message_delta\n"
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},"
		"\"usage\":{\"output_tokens\":1}}\n\n"
		"event: message_stop\n"
		"data: {\"type\":\"message_stop\"}\n\n";

	(void)state;
	check_stream(
		SSE_HEADERS, s,
		"OK 200 max_tokens in=0 out=1 cc=0 cr=0 err=: ra=-1 | redacted [EmwKAhgBEgy3va] "
		"| text []");
}

/* A refusal keeps its stop_details (category, explanation), streamed or in one message. */
static void test_refusal(void **state)
{
	static const char s[] =
		"event: message_start\n"
		"data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5},"
		"\"stop_reason\":null,\"stop_details\":null}}\n\n"
		"event: content_block_start\n"
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
		"\"text\",\"text\":\"I can\"}}\n\n"
		"event: content_block_stop\n"
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		"event: message_delta\n"
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\","
		"\"stop_sequence\":null,\"stop_details\":{\"type\":\"refusal\",\"category\":"
		"\"cyber\",\"explanation\":\"not this\"}},\"usage\":{\"output_tokens\":3}}\n\n"
		"event: message_stop\n"
		"data: {\"type\":\"message_stop\"}\n\n";
	static const char msg[] =
		"{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"I can\"}],"
		"\"stop_reason\":\"refusal\",\"stop_details\":{\"type\":\"refusal\","
		"\"category\":null,\"explanation\":null},\"usage\":{\"output_tokens\":3}}";

	(void)state;
	check_stream(SSE_HEADERS, s,
		     "OK 200 refusal in=5 out=3 cc=0 cr=0 err=: ra=-1 sd={\"category\":\"cyber\","
		     "\"explanation\":\"not this\",\"type\":\"refusal\"} | text [I can]");
	check_stream("HTTP/2 200\r\ncontent-type: application/json\r\n", msg,
		     "OK 200 refusal in=0 out=3 cc=0 cr=0 err=: ra=-1 sd={\"category\":null,"
		     "\"explanation\":null,\"type\":\"refusal\"} | text [I can]");
}

/* A reply that reaches max_tokens inside a tool_use's input keeps its blocks, the cut call
 * marked incomplete; the same input with another stop reason is malformed. */
static void test_cut_input(void **state)
{
	static const char head[] =
		"event: message_start\n"
		"data: "
		"{\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9}}}\n\n"
		"event: content_block_start\n"
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":"
		"\"text\",\"text\":\"Writing.\"}}\n\n"
		"event: content_block_stop\n"
		"data: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
		"event: content_block_start\n"
		"data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":"
		"\"tool_use\",\"id\":\"toolu_9\",\"name\":\"write\",\"input\":{}}}\n\n"
		"event: content_block_delta\n"
		"data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
		"\"input_json_delta\",\"partial_json\":\"{\\\"file_path\\\": \\\"a.txt\\\", "
		"\\\"content\\\": \\\"abc\"}}\n\n"
		"event: content_block_stop\n"
		"data: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
		"event: message_delta\n"
		"data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"";
	static const char tail[] = "\"},\"usage\":{\"output_tokens\":8192}}\n\n"
				   "event: message_stop\n"
				   "data: {\"type\":\"message_stop\"}\n\n";
	static const char *const stops[] = { "max_tokens", "end_turn", "tool_use" };
	struct strbuf sb = STRBUF_INIT;
	char want[SUMMARY_MAX];

	(void)state;
	for (size_t i = 0; i < UNIT_LEN(stops); i++) {
		strbuf_reset(&sb);
		strbuf_addf(&sb, "%s%s%s", head, stops[i], tail);
		if (!i)
			check_stream(SSE_HEADERS, sb.buf,
				     "OK 200 max_tokens in=9 out=8192 cc=0 cr=0 err=: ra=-1 | text "
				     "[Writing.] | tool_use toolu_9 write {} incomplete");
		else {
			snprintf(want, sizeof(want),
				 "FAILED 200 %s in=9 out=8192 cc=0 cr=0 "
				 "err=malformed_reply:tool_use "
				 "toolu_9: input is not JSON: premature end of input near '\"abc' "
				 "ra=-1",
				 stops[i]);
			check_once(SSE_HEADERS, sb.buf, NULL, want);
		}
	}
	strbuf_release(&sb);
}

/* An error event in the middle of a stream ends the answer with the API's error. */
static void test_error_event(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	size_t head = strstr(text_stream, "event: content_block_stop") - text_stream;

	(void)state;
	strbuf_add(&sb, text_stream, head);
	strbuf_addstr(&sb, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
			   "\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n");
	strbuf_addstr(&sb, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
	check_stream(SSE_HEADERS, strbuf_str(&sb),
		     "RETRY 200  in=25 out=1 cc=3 cr=7 err=overloaded_error:Overloaded ra=-1");
	strbuf_reset(&sb);
	strbuf_addstr(&sb, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
			   "\"invalid_request_error\",\"message\":\"prompt is too long\"}}\n\n");
	check_stream(
		SSE_HEADERS, strbuf_str(&sb),
		"FAILED 200  in=0 out=0 cc=0 cr=0 err=invalid_request_error:prompt is too long "
		"ra=-1");
	check_stream(SSE_HEADERS, "event: error\ndata: upstream gone\n\n",
		     "RETRY 200  in=0 out=0 cc=0 cr=0 err=api_error:upstream gone ra=-1");
	strbuf_release(&sb);
}

/* A stream that ends (or is cut) before message_stop is worth again; blocks read until then are
 * not handed out. */
static void test_cut(void **state)
{
	struct strbuf got = STRBUF_INIT;
	size_t len = strlen(text_stream);

	(void)state;
	for (size_t k = 0; k < len - 1; k++) {
		strbuf_reset(&got);
		read_answer(SSE_HEADERS, text_stream, k, NULL, 0, "transfer closed", &got);
		/* usage read before the cut is kept: those tokens were spent */
		if (strncmp(strbuf_str(&got), "RETRY 200 ", 10) ||
		    !strstr(strbuf_str(&got), " err=connection:the stream was cut before "
					      "message_stop: transfer closed ra=-1") ||
		    strchr(strbuf_str(&got), '|'))
			fail_msg("cut at %zu: %s", k, strbuf_str(&got));
	}
	check_once(SSE_HEADERS, "", NULL,
		   "RETRY 200  in=0 out=0 cc=0 cr=0 err=connection:the stream ended before "
		   "message_stop ra=-1");
	strbuf_release(&got);
}

/* Streams the reader refuses: not worth again. */
static void test_malformed(void **state)
{
	static const struct unit_text_case cases[] = {
		{ "event: message_start\ndata: {\"type\":\"message_start\",\n\n",
		  "event message_start: data is not JSON" },
		{ "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		  "\"content_block\":{\"type\":\"text\"}}\n\n",
		  "content_block_start before message_start" },
		{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
		  "\"content_block\":{\"type\":\"text\"}}\n\n",
		  "content_block_start out of order (block 0 expected)" },
		{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		  "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\"}}"
		  "\n\n"
		  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
		  "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\": \"}}\n\n"
		  "event: content_block_stop\ndata: "
		  "{\"type\":\"content_block_stop\",\"index\":0}\n\n",
		  "tool_use toolu_1: input is not JSON" },
		{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		  "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\"}}"
		  "\n\n"
		  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
		  "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"[1]\"}}\n\n"
		  "event: content_block_stop\ndata: "
		  "{\"type\":\"content_block_stop\",\"index\":0}\n\n",
		  "tool_use toolu_1: input is not a JSON object" },
		{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		  "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		  "event: content_block_stop\ndata: "
		  "{\"type\":\"content_block_stop\",\"index\":0}\n\n"
		  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
		  "\"delta\":{\"type\":\"text_delta\",\"text\":\"late\"}}\n\n",
		  "content_block_delta for a block that is not open" },
		{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		  "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
		  "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
		  "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n",
		  "input_json_delta for block 0 of another type" },
		{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		  "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		  "\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\"}}\n\n",
		  "content block 0: unsupported type 'server_tool_use'" },
		{ "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		  "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
		  "a second message_start" },
	};
	struct strbuf got = STRBUF_INIT;

	(void)state;
	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		read_answer(SSE_HEADERS, cases[i].in, strlen(cases[i].in), NULL, 0, NULL, &got);
		if (strncmp(strbuf_str(&got), "FAILED 200 ", 11) ||
		    !strstr(strbuf_str(&got), "err=malformed_reply:") ||
		    !strstr(strbuf_str(&got), cases[i].want))
			fail_msg("case %zu: %s", i, strbuf_str(&got));
	}
	strbuf_release(&got);
}

/* Error answers: the outcome by status, type and message from the body, retry-after. */
static void test_error_answers(void **state)
{
	(void)state;
	check_stream("HTTP/1.1 529 \r\ncontent-type: application/json\r\nretry-after: 7\r\n",
		     "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":"
		     "\"Overloaded\"},\"request_id\":\"req_1\"}",
		     "RETRY 529  in=0 out=0 cc=0 cr=0 err=overloaded_error:Overloaded ra=7000");
	check_stream(
		"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 9\r\nretry-after-ms: 1500\r\n",
		"{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow"
		" down\"}}",
		"RETRY 429  in=0 out=0 cc=0 cr=0 err=rate_limit_error:slow down ra=1500");
	check_stream("HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\n",
		     "<html>\r\n<b>bad gateway</b></html>",
		     "RETRY 502  in=0 out=0 cc=0 cr=0 err=api_error:status 502: <html>  <b>bad "
		     "gateway</b></html> ra=-1");
	check_stream(
		"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n",
		"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
		"\"messages: roles must alternate\"}}",
		"FAILED 400  in=0 out=0 cc=0 cr=0 err=invalid_request_error:messages: roles "
		"must alternate ra=-1");
	check_stream("HTTP/1.1 401 Unauthorized\r\n", "",
		     "FAILED 401  in=0 out=0 cc=0 cr=0 err=authentication_error:status 401 ra=-1");
	check_stream("HTTP/1.1 503 \r\nx-should-retry: false\r\n", "",
		     "FAILED 503  in=0 out=0 cc=0 cr=0 err=api_error:status 503 ra=-1");
	check_stream("HTTP/1.1 409 \r\nretry-after: soon\r\n", "",
		     "RETRY 409  in=0 out=0 cc=0 cr=0 err=http_error:status 409 ra=-1");
	/* an interim answer's headers are forgotten */
	check_stream("HTTP/1.1 100 Continue\r\nretry-after: 3\r\n\r\n" SSE_HEADERS, text_stream,
		     TEXT_WANT);
}

/* retry-after as an HTTP date: the time left until then. */
static void test_retry_after_date(void **state)
{
	char hdrs[256], date[64];
	time_t when = time(NULL) + 30;
	struct strbuf got = STRBUF_INIT;
	long ms;

	(void)state;
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", gmtime(&when));
	snprintf(hdrs, sizeof(hdrs), "HTTP/1.1 529 \r\nretry-after: %s\r\n", date);
	read_answer(hdrs, "", 0, NULL, 0, NULL, &got);
	assert_non_null(strstr(strbuf_str(&got), " ra="));
	ms = atol(strstr(strbuf_str(&got), " ra=") + 4);
	assert_true(ms >= 28000 && ms <= 30000);
	strbuf_release(&got);
}

/* The outcome of each status (the SDK's rule) and the type an answer without a body gets. */
static void test_classify(void **state)
{
	static const struct {
		long status;
		int should_retry;
		enum model_outcome o;
		const char *type;
	} cases[] = {
		{ 400, -1, MODEL_FAILED, "invalid_request_error" },
		{ 401, -1, MODEL_FAILED, "authentication_error" },
		{ 403, -1, MODEL_FAILED, "permission_error" },
		{ 404, -1, MODEL_FAILED, "not_found_error" },
		{ 408, -1, MODEL_RETRY, "http_error" },
		{ 409, -1, MODEL_RETRY, "http_error" },
		{ 413, -1, MODEL_FAILED, "request_too_large" },
		{ 422, -1, MODEL_FAILED, "http_error" },
		{ 429, -1, MODEL_RETRY, "rate_limit_error" },
		{ 500, -1, MODEL_RETRY, "api_error" },
		{ 502, -1, MODEL_RETRY, "api_error" },
		{ 503, -1, MODEL_RETRY, "api_error" },
		{ 504, -1, MODEL_RETRY, "timeout_error" },
		{ 529, -1, MODEL_RETRY, "overloaded_error" },
		{ 302, -1, MODEL_FAILED, "http_error" },
		{ 400, 1, MODEL_RETRY, "invalid_request_error" },
		{ 529, 0, MODEL_FAILED, "overloaded_error" },
	};
	const char *type;

	(void)state;
	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		enum model_outcome o =
			model_stream_classify(cases[i].status, cases[i].should_retry, &type);
		if (o != cases[i].o || strcmp(type, cases[i].type))
			fail_msg("status %ld: %s %s", cases[i].status, outcome_names[o], type);
	}
	assert_int_equal(model_stream_error_status("overloaded_error"), 529);
	assert_int_equal(model_stream_error_status("rate_limit_error"), 429);
	assert_int_equal(model_stream_error_status("api_error"), 500);
	assert_int_equal(model_stream_error_status("no_such_error"), 400);
}

/* More than MODEL_REPLY_MAX bytes of text: refused, and what was read is not kept further. */
static void test_cap(void **state)
{
	static const char head[] =
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
		"\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n";
	static const char pre[] = "event: content_block_delta\ndata: {\"type\":"
				  "\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
				  "\"text_delta\",\"text\":\"";
	static const char post[] = "\"}}\n\n";
	size_t piece = 1024 * 1024;
	struct model_stream s;
	struct model_reply r;
	struct strbuf got = STRBUF_INIT;
	char *delta = malloc(sizeof(pre) + piece + sizeof(post));
	int rc = 0, i;

	(void)state;
	assert_non_null(delta);
	memcpy(delta, pre, sizeof(pre) - 1);
	memset(delta + sizeof(pre) - 1, 'x', piece);
	memcpy(delta + sizeof(pre) - 1 + piece, post, sizeof(post));
	model_stream_init(&s, &r);
	model_stream_header(&s, "HTTP/1.1 200 OK", 15);
	assert_int_equal(model_stream_feed(&s, head, sizeof(head) - 1), 0);
	for (i = 0; i < 64 && !rc; i++)
		rc = model_stream_feed(&s, delta, strlen(delta));
	assert_int_equal(rc, -1);
	assert_true(i > 15 && i <= 17);
	summary(model_stream_finish(&s, NULL), &r, &got);
	assert_string_equal(strbuf_str(&got), "FAILED 200  in=0 out=0 cc=0 cr=0 "
					      "err=reply_too_large:the model's reply is over "
					      "16777216 bytes ra=-1");
	model_stream_release(&s);
	model_reply_release(&r);
	free(delta);
	strbuf_release(&got);
}

static int cancel_now(void *arg)
{
	(*(int *)arg)++;
	return 1;
}

/* What model_call decides before sending anything, and a refused connection. */
static void test_call_local(void **state)
{
	struct model_conf conf = { .base_url = "ftp://example.com", .api_key = "sk-secret" };
	struct model_reply r;
	struct model_client *m;
	json_t *body = json_pack("{s:s, s:[]}", "model", "m", "messages"), *str = json_string("x");
	int asked = 0;

	(void)state;
	m = model_new(&conf);
	assert_non_null(m);
	assert_int_equal(model_call(m, body, NULL, NULL, &r), MODEL_FAILED);
	assert_string_equal(r.error_type, "configuration");
	assert_string_equal(r.error_message,
			    "[model] base_url must start with http:// or https://");
	model_reply_release(&r);
	model_free(m);

	/* port 1 on loopback: nothing listens there */
	snprintf(conf.base_url, sizeof(conf.base_url), "http://127.0.0.1:1/");
	m = model_new(&conf);
	assert_non_null(m);
	assert_int_equal(model_call(m, str, NULL, NULL, &r), MODEL_FAILED);
	assert_string_equal(r.error_type, "invalid_request");
	model_reply_release(&r);
	assert_int_equal(model_call(m, body, cancel_now, &asked, &r), MODEL_CANCELLED);
	assert_int_equal(asked, 1);
	model_reply_release(&r);
	assert_int_equal(model_call(m, body, NULL, NULL, &r), MODEL_RETRY);
	assert_string_equal(r.error_type, "connection");
	assert_int_equal(r.http_status, 0);
	assert_null(strstr(r.error_message, "sk-secret"));
	model_reply_release(&r);
	/* the caller's body is not changed */
	assert_null(json_object_get(body, "stream"));
	assert_null(json_object_get(body, "max_tokens"));
	model_free(m);
	json_decref(body);
	json_decref(str);
}

UNIT_MAIN(UNIT_TESTS(test_text, test_tool_use, test_cr_and_nameless, test_json_message,
		     test_redacted_and_empty, test_refusal, test_cut_input, test_error_event,
		     test_cut, test_malformed, test_error_answers, test_retry_after_date,
		     test_classify, test_cap, test_call_local))
