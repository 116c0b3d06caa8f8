/* The framing of server-sent events as the runner reads them (the WHATWG EventSource rules, as
 * the official SDKs' parsers apply them): lines ended by LF, CR or CR LF whatever the chunking,
 * a byte order mark before the first line, comments (":..."), the `event` and `data` fields; a
 * blank line ends an event. `id` and `retry` are of no use to the runner and are passed over.
 * The one reader of both streams the runner takes: the model's answers (model_stream.c) and MCP
 * servers' (mcp.c). */
#ifndef TERRARIUM_RUNNER_SSE_H
#define TERRARIUM_RUNNER_SSE_H

#include <stddef.h>

#include "../common/strbuf.h"

#define SSE_EVENT_MAX 64 /* bytes of an `event` name kept, with its NUL (longer: name_long) */

struct sse {
	struct strbuf line;	   /* the line not yet ended */
	struct strbuf data;	   /* the event's data lines, each with its LF */
	char event[SSE_EVENT_MAX]; /* the event's name, "" when none */
	int event_long;		   /* that name was too long to keep (event is "") */
	int after_cr;		   /* the last byte ended a line with CR: skip one LF */
	int lines;		   /* lines read (a byte order mark is looked for in the first) */
};

/* One complete event: NAME its `event` ("" when none, or when NAME_LONG: it was too long to
 * keep), DATA its data lines joined by LF (LEN bytes, NUL-terminated; the callee may change
 * them). Only events with at least one data line are passed. 0 to go on, non-zero to stop. */
typedef int (*sse_event_fn)(void *arg, const char *name, int name_long, char *data, size_t len);

enum sse_rc {
	SSE_OK = 0,
	SSE_STOPPED = -1,   /* the callback said stop */
	SSE_NOMEM = -2,	    /* out of memory */
	SSE_TOO_LARGE = -3, /* the line and the event's data held are over the cap */
};

void sse_init(struct sse *r);

/* Read the N bytes at P, a chunk of the stream cut anywhere: FN(ARG, ...) for each event they
 * complete. CAP bounds the bytes held between events (the line not yet ended and the data not
 * yet passed). SSE_OK, or why it stopped (the rest of the chunk is not read). */
enum sse_rc sse_feed(struct sse *r, const char *p, size_t n, size_t cap, sse_event_fn fn,
		     void *arg);

/* Free what R holds; R is empty again. */
void sse_release(struct sse *r);

#endif
