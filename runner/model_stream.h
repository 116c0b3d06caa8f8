/* The reader of one Messages API answer (docs/runner.md): its header lines and the bytes of its
 * body as they arrive, whatever their chunking, into a struct model_reply and an outcome.
 *
 * A 2xx answer is the stream of server-sent events (message_start, content_block_start / _delta
 * / _stop, message_delta, message_stop, ping, error), read as the official SDK reads it (a frame
 * without `event:` is dropped, `event: error` ends the answer), or one JSON message when its
 * content type is application/json (some proxies answer a streamed request so). Any other status
 * is an error answer, classified by its status: model_stream_classify is the one rule. Only the
 * blocks' contents are kept, never the stream as text; at most MODEL_REPLY_MAX bytes of them.
 *
 * model.c feeds it from libcurl; tests/unit/test_model.c feeds it recorded answers. */
#ifndef TERRARIUM_RUNNER_MODEL_STREAM_H
#define TERRARIUM_RUNNER_MODEL_STREAM_H

#include <stddef.h>

#include "../common/strbuf.h"
#include "model.h"
#include "sse.h"

#define MODEL_STREAM_ERROR_BODY_MAX (64 * 1024) /* bytes of an error answer read */
#define MODEL_STREAM_QUOTE_MAX 200 /* bytes of a non-JSON error answer quoted in a message */

struct model_stream_part; /* a block being built (model_stream.c) */

struct model_stream {
	struct model_reply *out; /* filled as the answer is read (not owned) */
	long status;		 /* the answer's status, 0 before its status line */
	int json;		 /* content type application/json: one document, not events */
	int should_retry;	 /* x-should-retry: 1 true, 0 false, -1 absent */
	int retry_ms_seen;	 /* retry-after-ms was read: it wins over retry-after */
	int body_seen;		 /* model_stream_feed was called since the status line */
	struct strbuf body;	 /* a JSON or error answer, kept whole */
	struct sse sse;		 /* the stream's framing */
	int started;		 /* message_start seen */
	int stopped;		 /* message_stop seen: the reply is complete */
	struct model_stream_part *parts; /* one per block of out->blocks (owned) */
	size_t nparts;			 /* parts in use */
	size_t nalloc;			 /* parts and out->blocks allocated */
	size_t kept;			 /* bytes of block contents held */
	char *bad_input; /* why a tool_use's input did not parse (owned): an error unless the
			  * reply stops at max_tokens, which cuts the input short */
	int decided;	 /* the outcome is known; the rest need not be read */
	enum model_outcome outcome; /* when decided */
};

/* Start reading an answer into OUT (emptied: no blocks, retry_after_ms -1). */
void model_stream_init(struct model_stream *s, struct model_reply *out);

/* One header line of the answer as it came (with or without its CR LF). A status line
 * ("HTTP/1.1 529 ...", "HTTP/2 200") starts a new header block: an interim answer's headers
 * (100 Continue) are forgotten. Read: content-type, retry-after (seconds or an HTTP date),
 * retry-after-ms, x-should-retry. */
void model_stream_header(struct model_stream *s, const char *line, size_t n);

/* N bytes of the body. 0 to go on; -1 once the outcome is decided (an `event: error`, a
 * malformed stream, more than MODEL_REPLY_MAX bytes kept): the rest of the answer need not be
 * read. */
int model_stream_feed(struct model_stream *s, const char *data, size_t n);

/* The whole reply is there (message_stop was read), whatever the transfer does next. */
int model_stream_complete(const struct model_stream *s);

/* The answer ended: cleanly when BROKEN is NULL, else the transfer was cut and BROKEN says how.
 * Fills the rest of s->out (its blocks only on MODEL_OK) and returns the outcome. */
enum model_outcome model_stream_finish(struct model_stream *s, const char *broken);

/* Decide the outcome O, with error TYPE and a formatted message, from outside the answer (the
 * transport's failures: a timeout, a cancel, no connection). Always -1. */
int model_stream_fail(struct model_stream *s, enum model_outcome o, const char *type,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Free what S holds (not s->out). */
void model_stream_release(struct model_stream *s);

/* The outcome of an answer with STATUS (2xx excluded) and x-should-retry SHOULD_RETRY (1, 0, or
 * -1 when absent, which the SDK obeys too); *TYPE (when TYPE is not NULL) gets the API's error
 * type for that status, for an answer that names none. */
enum model_outcome model_stream_classify(long status, int should_retry, const char **type);

/* The status the API answers with an error of TYPE ("overloaded_error": 529), 400 when TYPE is
 * unknown: an `event: error` in a stream is classified as that status would be. */
long model_stream_error_status(const char *type);

#endif
