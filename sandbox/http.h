/* A small HTTP client shared by the HTTP sandbox drivers (opensandbox, docker, e2b/cube,
 * daytona). One client per backend, holding one reused libcurl easy handle (connection reuse,
 * one DNS cache). Calls may run at once from several threads: a call takes the client's handle
 * when it is free and makes one of its own when it is not (freed after the call, or kept as the
 * client's when that slot is empty again).
 *
 * Every call: protocols limited to http and https (also across redirects, which are not
 * followed), a connect timeout and a total timeout (remote_conf.timeout_s unless the request
 * asks for more), an optional unix socket (remote_conf.socket: the Docker Engine), JSON request
 * bodies, the response body kept up to a byte cap (or streamed to a callback), response headers
 * kept (capped) on request, and retries with exponential backoff for transient outcomes only:
 * connection failures and timeouts, 408, 429 and 5xx.
 *
 * The credential is read from remote_conf.api_key_file (trailing newline stripped) and sent in
 * the header the driver names (http_set_auth). It never appears in an error string or a log line:
 * errors name the method and path, the status and the first bytes of the body, redacted
 * (common/redact.h) and with any occurrence of the credential masked.
 *
 * Only sandbox/ includes curl/curl.h; this header does not, so tests and other
 * modules can include it. */
#ifndef TERRARIUM_SANDBOX_HTTP_H
#define TERRARIUM_SANDBOX_HTTP_H

#include <jansson.h>
#include <stddef.h>

#include "../common/config.h"
#include "process.h"

#define HTTP_BODY_MAX (4u << 20)      /* response bytes kept when the request sets no cap */
#define HTTP_HEADERS_MAX 16384	      /* response header bytes kept (keep_headers) */
#define HTTP_ERROR_BODY_MAX 200	      /* body bytes quoted in an error string */
#define HTTP_RETRIES_MAX 3	      /* retries after the first try (transient outcomes only) */
#define HTTP_BACKOFF_MS 250	      /* first retry delay; doubles each retry */
#define HTTP_BACKOFF_CAP_MS 4000      /* retry delay cap (a Retry-After is honoured up to it) */
#define HTTP_CONNECT_TIMEOUT_MAX_S 10 /* connect timeout: min(timeout_s, this) */
#define HTTP_KEY_MAX 4096	      /* credential file size cap */
#define HTTP_AUTH_NAME_MAX 64
#define HTTP_URL_MAX 2048
#define HTTP_HEADERS_EXTRA_MAX 16 /* extra request headers per call */

/* Receives response body bytes as they arrive when a request sets on_data (the body is then
 * not kept in the response). Return 0 to continue, non-zero to abort the transfer (the call
 * then fails with "aborted by the driver"). Only called for a 2xx answer; the body of any other
 * status is kept as usual (capped) so the error string can quote it. */
typedef int (*http_data_fn)(void *arg, const char *data, size_t len);

struct http_client {
	void *easy;		 /* CURL *, owned: the reused handle, NULL while a call has it */
	int ready;		 /* http_init succeeded */
	char backend[32];	 /* for error strings and logs */
	char base[HTTP_URL_MAX]; /* base URL, no trailing '/' */
	char socket[CONFIG_STR_MAX];	    /* unix socket path, or "" */
	long timeout_s;			    /* total per call (>= 1) */
	char key[HTTP_KEY_MAX];		    /* credential, or "" (never logged) */
	char auth_name[HTTP_AUTH_NAME_MAX]; /* header carrying the credential */
	char auth_prefix[32];		    /* before the credential: "" or "Bearer " */
	unsigned retry_sleep_ms; /* total slept in backoff, added atomically (tests read it) */
};

/* The watch of the sandbox call running on this thread (sandbox/call.c enters it for the call):
 * asked while an http_do of that thread runs, about every interval_ms (during a transfer, before
 * each try and in the backoff between tries, across the call's requests); a non-zero answer
 * aborts the request at once (rs->stopped). A driver cleaning up after a stop enters NULL for
 * those requests. */
struct http_watch_ctx {
	const struct proc_watch *watch; /* NULL: none */
	long long due_ms;		/* monotonic time it is asked next; 0: not asked yet */
};

/* Make W this thread's watch (from now, its first ask an interval away); returns the one it
 * replaces, for http_watch_leave. */
struct http_watch_ctx http_watch_enter(const struct proc_watch *w);
/* Put back the watch PREV (http_watch_enter's answer). */
void http_watch_leave(struct http_watch_ctx prev);

struct http_request {
	const char *method;   /* "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD" */
	const char *path;     /* appended to the base URL ("/v1/sandboxes?x=y"), or an absolute
			       * http:// or https:// URL (an endpoint the service handed out) */
	json_t *body;	      /* JSON body (borrowed; sent compact with
			       * Content-Type: application/json), or NULL for none */
	const char *raw_body; /* instead of BODY: RAW_LEN bytes sent as they are (binary allowed,
			       * e.g. Connect's enveloped messages); borrowed */
	size_t raw_len;
	const char *content_type; /* Content-Type of RAW_BODY (default application/octet-stream) */
	const char *headers[HTTP_HEADERS_EXTRA_MAX + 1]; /* extra "Name: value" lines, NULL-ended
							  * (headers[0] NULL: none) */
	int no_auth;	      /* do not send the credential (a URL of another service) */
	int no_retry;	      /* never retry (a call with side effects that must not repeat,
			       * e.g. starting a command) */
	long timeout_s;	      /* total timeout of this call; 0 = the client's */
	size_t body_max;      /* bytes of response body kept; 0 = HTTP_BODY_MAX */
	int keep_headers;     /* keep the response header block (capped at HTTP_HEADERS_MAX) */
	http_data_fn on_data; /* stream a 2xx body here instead of keeping it; NULL = keep */
	void *on_data_arg;
};

struct http_response {
	long status; /* HTTP status of the last try; 0 when none arrived */
	char *body;  /* NUL-terminated, at most body_max bytes; owned; never NULL after a
		      * call (empty string) */
	size_t len;
	int truncated; /* the body was longer than body_max: the rest was dropped */
	char *headers; /* raw header lines ("Name: value\r\n"...) when keep_headers, else
			* NULL; owned */
	size_t headers_len;
	int tries;     /* attempts made (1 + retries) */
	int timed_out; /* the last try failed at the total timeout (http_do returned -1) */
	int stopped;   /* the client's watch said stop: the call was aborted (http_do
			* returned -1) */
};

/* A request METHOD PATH with the JSON body BODY (borrowed; NULL: none), every other field zero. */
struct http_request http_req(const char *method, const char *path, json_t *body);

/* Bind C to backend BACKEND (its name, for messages) with settings RC: base URL (required unless
 * RC->socket is set, then default "http://localhost"), unix socket, timeout, and the credential
 * read from RC->api_key_file when set (error: "BACKEND: api_key_file PATH: <strerror>" or "is
 * empty"/"is too large": never the content). 0, or -1 with ERR set. On success call
 * http_release. */
int http_init(struct http_client *c, const char *backend, const struct remote_conf *rc, char *err,
	      size_t errsz);

/* Send the credential as "NAME: PREFIXkey" on every request (unless no_auth), e.g.
 * ("OPEN-SANDBOX-API-KEY", ""), ("X-API-Key", ""), ("Authorization", "Bearer "). Without this
 * call, or with an empty credential, nothing is sent. */
void http_set_auth(struct http_client *c, const char *name, const char *prefix);

/* Free the handle and wipe the credential. Safe on a zeroed or released client. */
void http_release(struct http_client *c);

/* Perform RQ, retrying transient outcomes (connection errors, timeouts, 408, 429, 5xx) up to
 * HTTP_RETRIES_MAX times with backoff unless rq->no_retry, or once on_data has received bytes;
 * asking this thread's watch on the way (a stop aborts the call: rs->stopped).
 * Returns 0 when a response arrived (whatever its status: check rs->status), -1 on a transport
 * failure after the retries ("METHOD PATH: <what failed>" in ERR). RS is filled either way;
 * release it with http_response_release. */
int http_do(struct http_client *c, const struct http_request *rq, struct http_response *rs,
	    char *err, size_t errsz);

/* Release what RS owns; RS may be reused. */
void http_response_release(struct http_response *rs);

/* http_do RQ into RS, then check the answer's status: 0 when it is one of OK (0-terminated), -1
 * with ERR set when the call failed or the status is another (http_error; rs->status says
 * which, 0 when no answer arrived). RS is filled either way: release it with
 * http_response_release. */
int http_expect(struct http_client *c, const struct http_request *rq, const long *ok,
		struct http_response *rs, char *err, size_t errsz);

/* The string member KEY of RS's JSON answer to RQ into OUT: 0, or -1 with ERR set ("BACKEND:
 * METHOD PATH: answer has no usable KEY") when the body is not a JSON object whose KEY is a
 * non-empty string that fits. */
int http_answer_str(const struct http_client *c, const struct http_request *rq,
		    const struct http_response *rs, const char *key, char *out, size_t outsz,
		    char *err, size_t errsz);

/* The string member KEY of OBJ into OUT: 0, or -1 when OBJ has none, it is empty or it does not
 * fit (OUT is then left as it was). */
int http_json_str(json_t *obj, const char *key, char *out, size_t outsz);

/* METHOD PATH without a body: the answer's status when it is one of OK (0-terminated), else 0
 * with ERR set (the service's message, or why the call failed). BODY_MAX: bytes of an answer's
 * body kept for that message (0: HTTP_BODY_MAX). */
long http_call(struct http_client *c, const char *method, const char *path, const long *ok,
	       size_t body_max, char *err, size_t errsz);

/* GET PATH, answered 200: its body as JSON (a new reference), or NULL with ERR set (the
 * service's message, why the call failed, or that the answer is not JSON). */
json_t *http_get_json(struct http_client *c, const char *path, char *err, size_t errsz);

/* ERR = "METHOD PATH: status N: <first HTTP_ERROR_BODY_MAX bytes of the body, redacted>", with
 * the query string dropped from PATH and the credential masked. */
void http_error(const struct http_client *c, const struct http_request *rq,
		const struct http_response *rs, char *err, size_t errsz);

/* The body of RS parsed as JSON: new reference, caller decrefs; NULL when it does not parse
 * (or was truncated). */
json_t *http_json(const struct http_response *rs);

/* The value of response header NAME (case-insensitive) from rs->headers into OUT (trimmed).
 * 0, or -1 when absent or too long. Needs keep_headers. */
int http_header(const struct http_response *rs, const char *name, char *out, size_t outsz);

/* Percent-encode IN (RFC 3986 unreserved characters kept) into OUT. 0, or -1 when it does not
 * fit. */
int http_escape(const char *in, char *out, size_t outsz);

/* Mask every occurrence of the client's credential in BUF (in place) with REDACT_MASK, for a
 * driver that composes its own message from service output. */
void http_scrub(const struct http_client *c, char *buf, size_t bufsz);

#endif
