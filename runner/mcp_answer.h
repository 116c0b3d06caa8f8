/* The reader of one answer of an MCP server to a POST (docs/runner.md "MCP servers"): its header
 * lines and its body's bytes as they arrive, whatever their chunking, into the response to the
 * request it was sent (or, for a notification, a yes or no).
 *
 * A 2xx answer is one JSON-RPC message or a batch of them when its content type is
 * application/json, else a stream of server-sent events (text/event-stream) whose unnamed and
 * `message` events hold one message each; the reader takes the response whose id is the
 * request's and passes over the rest (notifications, progress, requests from the server,
 * responses to other ids, events that are not JSON), as the official SDK's transport does. 401
 * and 403 are MCP_ERR_AUTH; another status is MCP_ERR_PROTOCOL with the server's message.
 *
 * mcp.c feeds it from libcurl; tests/unit/test_mcp.c feeds it recorded answers. */
#ifndef TERRARIUM_RUNNER_MCP_ANSWER_H
#define TERRARIUM_RUNNER_MCP_ANSWER_H

#include <jansson.h>
#include <stddef.h>

#include "../common/strbuf.h"
#include "mcp.h"
#include "sse.h"

#define MCP_ANSWER_NO_ID (-1LL)		     /* the id of a notification: no response wanted */
#define MCP_ANSWER_ERROR_BODY_MAX (4 * 1024) /* bytes of an error answer read */
#define MCP_ANSWER_QUOTE_MAX 200	     /* bytes of an error answer quoted in a message */
#define MCP_ANSWER_TYPE_MAX 128		     /* bytes of a content type kept */

enum mcp_answer_type { MCP_ANSWER_OTHER, MCP_ANSWER_JSON, MCP_ANSWER_SSE };

struct mcp_answer {
	long long id;				 /* the request's id, or MCP_ANSWER_NO_ID */
	size_t cap;				 /* bytes of the body held at most */
	long status;				 /* 0 before the status line */
	enum mcp_answer_type type;		 /* by the content type */
	char content_type[MCP_ANSWER_TYPE_MAX];	 /* as it came ("" when none) */
	char session_id[MCP_SESSION_ID_MAX + 1]; /* Mcp-Session-Id ("" when none) */
	int session_id_bad;			 /* it came, but longer or not visible ASCII */
	int headers_done;			 /* a 2xx answer's header block ended */
	struct strbuf body;			 /* a JSON or error answer, as far as kept */
	struct sse sse;				 /* an event stream's framing */
	json_t *response; /* the response to the request, once read (owned) */
	int failed;	  /* the answer is unusable: ERR says why */
	struct mcp_error err;
};

/* Start reading the answer to the request ID (MCP_ANSWER_NO_ID: a notification), holding at
 * most CAP bytes of its body. */
void mcp_answer_init(struct mcp_answer *a, long long id, size_t cap);

/* One header line as it came (with or without its CR LF). A status line starts a new header
 * block (an interim answer's headers are forgotten). Read: content-type, mcp-session-id. */
void mcp_answer_header(struct mcp_answer *a, const char *line, size_t n);

/* N bytes of the body. 0 to go on, -1 once the answer is unusable (the rest need not be read).
 * Bytes after the response are passed over. */
int mcp_answer_feed(struct mcp_answer *a, const char *data, size_t n);

/* What was asked for is there, whatever the rest of the answer does: the response to the
 * request, or a notification's 2xx status and headers. */
int mcp_answer_done(const struct mcp_answer *a);

/* The answer ended: cleanly when BROKEN is NULL, else the transfer broke and BROKEN says how.
 * 0 with *RESULT the response's result (new reference; NULL for a notification), or -1 with
 * ERR set (http_status the answer's) and *RESULT NULL. */
int mcp_answer_finish(struct mcp_answer *a, const char *broken, json_t **result,
		      struct mcp_error *err);

/* Free what A holds. */
void mcp_answer_release(struct mcp_answer *a);

#endif
