/* The model client of the runner (docs/runner.md): one streamed POST {base_url}/v1/messages per
 * call, over libcurl, with the Messages API's server-sent events parsed as they arrive. One
 * attempt per call: the runner decides on retries (it announces them as events). The key is
 * sent as x-api-key and never written anywhere else (no log, no event, no argv). */
#ifndef TERRARIUM_RUNNER_MODEL_H
#define TERRARIUM_RUNNER_MODEL_H

#include <jansson.h>
#include <stddef.h>

#define MODEL_API_VERSION "2023-06-01"	   /* anthropic-version sent */
#define MODEL_URL_MAX 512		   /* [model] base_url */
#define MODEL_KEY_MAX 512		   /* the API key, read from its file or the environment */
#define MODEL_ERROR_MAX 512		   /* an error's message kept */
#define MODEL_REPLY_MAX (16 * 1024 * 1024) /* bytes of one reply kept; past it: MODEL_FAILED */
#define MODEL_CANCEL_POLL_MS 100	   /* how often the cancel callback is asked */

struct model_conf {
	char base_url[MODEL_URL_MAX]; /* "https://api.anthropic.com"; no trailing slash needed */
	char api_key[MODEL_KEY_MAX];  /* "" when none is configured */
	long idle_timeout_s;	      /* a stream silent this long is aborted: MODEL_RETRY */
	long connect_timeout_s;
	long max_tokens; /* max_tokens of a request that does not set its own */
};

enum model_outcome {
	MODEL_OK,	 /* a complete reply (message_stop seen) */
	MODEL_RETRY,	 /* 429, 529, 5xx, a timeout, a broken connection or stream: worth again */
	MODEL_FAILED,	 /* any other 4xx, a reply that does not parse: not worth again */
	MODEL_CANCELLED, /* the cancel callback asked to stop */
};

struct model_usage {
	long long input, output, cache_creation, cache_read;
};

/* MB_REDACTED_THINKING: a thinking block the API sent encrypted; it goes back to the API
 * unchanged in the next request's history ({"type":"redacted_thinking","data": text}). */
enum model_block_type { MB_TEXT, MB_THINKING, MB_REDACTED_THINKING, MB_TOOL_USE };

/* One content block of the reply, complete. */
struct model_block {
	enum model_block_type type;
	char *text;	 /* MB_TEXT, MB_THINKING: the text; MB_REDACTED_THINKING: its data (owned,
			  * never NULL for these) */
	char *signature; /* MB_THINKING: its signature, or NULL (owned) */
	char *id;	 /* MB_TOOL_USE: the model's tool_use id (owned) */
	char *name;	 /* MB_TOOL_USE (owned) */
	json_t *input;	 /* MB_TOOL_USE: the input object (new reference) */
	int incomplete;	 /* MB_TOOL_USE: the reply reached max_tokens before its input was
			  * complete; input is {} */
};

struct model_reply {
	struct model_block *blocks; /* owned, n of them, in the reply's order */
	size_t n;
	char stop_reason[32]; /* end_turn, tool_use, max_tokens, stop_sequence, pause_turn... */
	json_t *stop_details; /* the reply's stop_details object (a refusal's category and
			       * explanation), or NULL (new reference) */
	struct model_usage usage;
	int http_status;     /* 0 when no answer came */
	char error_type[64]; /* the API's error.type, or "timeout", "connection"... */
	char error_message[MODEL_ERROR_MAX]; /* what went wrong, without the key */
	long retry_after_ms;		     /* the answer's retry-after, or -1 */
};

struct model_client;

/* A client for CONF (copied). NULL when out of memory. */
struct model_client *model_new(const struct model_conf *conf);
void model_free(struct model_client *m);

/* Call the model with BODY (the request: model, system, tools, messages, max_tokens...;
 * "stream": true is added, BODY is not changed). CANCEL, when not NULL, is asked every
 * MODEL_CANCEL_POLL_MS with ARG while the call waits: non-zero stops it (MODEL_CANCELLED). OUT
 * is filled (model_reply_release it whatever the outcome). */
enum model_outcome model_call(struct model_client *m, const json_t *body, int (*cancel)(void *),
			      void *arg, struct model_reply *out);

void model_reply_release(struct model_reply *r);

#endif
