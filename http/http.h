/* The parsed request and the response under construction: what handlers see. Transport-neutral:
 * fcgi/serve.c fills a request from FastCGI or CGI and writes the response. */
#ifndef TERRARIUM_HTTP_HTTP_H
#define TERRARIUM_HTTP_HTTP_H

#include <jansson.h>
#include <stddef.h>

#define REQ_MAX_BODY_MIB 1 /* docs/api.md §1: larger bodies answer 413 */
#define REQ_MAX_BODY (REQ_MAX_BODY_MIB * 1024 * 1024)
#define REQ_MAX_PATH 2048
#define REQ_MAX_PARAMS 4 /* {id} captures in a route pattern */
#define REQ_MAX_QUERY 32 /* query parameters kept */
#define REQ_ID_LEN 28	 /* "req_" + 24 */
#define RESP_MAX_HEADERS 8
#define RESP_HEADER_MAX 256

struct query_param {
	char *name;  /* decoded, owned */
	char *value; /* decoded, owned */
};

/* Who the caller is: the application's own (the API's: handlers/auth.h), opaque here. */
struct auth_principal;

struct request {
	char method[16];
	char path[REQ_MAX_PATH]; /* decoded-free raw path, without query */
	char request_id[REQ_ID_LEN + 1];
	char **env; /* borrowed CGI/FastCGI parameters */
	char *body; /* owned, NUL-terminated, body_len bytes */
	size_t body_len;
	int has_content_length; /* CONTENT_LENGTH present and non-empty */
	struct query_param query[REQ_MAX_QUERY];
	int nquery;
	const char *params[REQ_MAX_PARAMS]; /* route captures, point into param_buf */
	char param_buf[REQ_MAX_PATH];
	int nparams;
	json_t *json; /* parsed body when the route takes one; owned */
	/* the caller, while the handler of a route that takes a key runs (borrowed); else NULL */
	const struct auth_principal *principal;
	int server_error;	/* REDIRECT_STATUS >= 400: the web server's own error */
	const void *route_data; /* the matched route's data for its handler (borrowed) */
};

/* How a response is written while it is produced (an event stream, docs/events.md): the
 * transport's writer, set by fcgi/serve.c where the connection can carry one. */
struct resp_stream {
	/* Write and flush N bytes of BUF to the client: 0, or -1 when the client is gone. */
	int (*write)(void *ctx, const char *buf, size_t n);
	void *ctx;
	/* the connection to the web server, which it shuts when the client leaves (nginx with
	 * fastcgi_keep_conn off); -1: unknown (only a failed write says the client left) */
	int fd;
};

struct response {
	const struct resp_stream *stream; /* NULL: the transport cannot stream */
	int streamed;			  /* the handler wrote the whole response itself */
	int status;
	char headers[RESP_MAX_HEADERS][RESP_HEADER_MAX]; /* "name: value" */
	int nheaders;
	char *body; /* owned */
	size_t body_len;
};

/* Value of the CGI parameter NAME (e.g. "HTTP_X_API_KEY"), or NULL. Borrowed from req->env. */
const char *req_env(const struct request *req, const char *name);

/* Join every occurrence of header parameter NAME with ", " into OUT. Returns the number found
 * (0: OUT is ""), or -1 when OUT is too small. */
int req_header_all(const struct request *req, const char *name, char *out, size_t outsz);

/* Decoded value of query parameter NAME, or NULL. Borrowed from req. */
const char *req_query(const struct request *req, const char *name);

/* Parse QUERY (a raw query string) into req->query. Returns 0, or -1 when it is malformed
 * (bad percent escape, too many parameters, a name repeated that does not end in "[]"). */
int req_parse_query(struct request *req, const char *query);

/* Reads up to N body bytes into BUF; returns fewer only at end of input. */
typedef size_t (*req_reader)(void *ctx, char *buf, size_t n);

/* Fill REQ from req->env (already set) and the body from READ: request id (REQUEST_ID when well
 * formed, else a new one), method, path, query, and exactly CONTENT_LENGTH body bytes (strict
 * digits; over REQ_MAX_BODY: 413 without reading; fewer bytes: 400). 0, or -1 with RESP
 * filled.
 * The path is REQUEST_URI's, less SCRIPT_NAME when the server split the URI into SCRIPT_NAME +
 * PATH_INFO (the binary mapped to a URL prefix: Apache's .htaccess setup, docs/hosting.md).
 * A REDIRECT_STATUS of 400-599 (Apache ErrorDocument, lighttpd server.error-handler) sets
 * req->server_error; the body, which belongs to the refused request, is not read. */
int req_read(struct request *req, struct response *resp, req_reader read, void *ctx);

/* Release what the request owns (body, json, query); the struct can then be reused. */
void req_release(struct request *req);

/* Response building. All of these replace any earlier body. */
void resp_header(struct response *resp, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The value of header NAME (matched exactly, as set by resp_header), or NULL. */
const char *resp_header_get(const struct response *resp, const char *name);
/* Serialise VALUE (steals the reference) as the body with STATUS. */
void resp_json(struct response *resp, int status, json_t *value);
/* The docs/api.md §2 error envelope for STATUS; CODE is the error_code or NULL/"" for none. Sets
 * x-should-retry per status (and retry-after for 429/503). */
void resp_error(struct response *resp, const struct request *req, int status, const char *code,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* resp_error with DETAILS (an object; stolen) as error.details, e.g. an error_code and the
 * state it refers to. */
void resp_error_details(struct response *resp, const struct request *req, int status,
			json_t *details, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* 413 for a body over REQ_MAX_BODY, in the words of nginx's own page (nginx/server.conf.in). */
void resp_too_large(struct response *resp, const struct request *req);
/* STATUS (e.g. 204) without a body. */
void resp_empty(struct response *resp, int status);
/* Replace the x-should-retry header resp_error chose (RETRY: 1 true, 0 false). */
void resp_set_retry(struct response *resp, int retry);
/* error.type for STATUS per docs/api.md §2. */
const char *resp_error_type(int status);
void resp_release(struct response *resp);

/* Start a streamed 200 answer of CONTENT_TYPE through resp->stream: its head (request-id,
 * no caching, and RESP's headers) is written now; the handler then writes the body with
 * resp_stream_write and returns. 0, or -1 when the client is gone or there is no stream. */
int resp_stream_start(struct response *resp, const struct request *req, const char *content_type);
/* Write N bytes of BUF to the started stream. 0, or -1 when the client is gone. */
int resp_stream_write(struct response *resp, const char *buf, size_t n);
/* 1 when the web server has closed the stream's connection (its client left), without waiting
 * for the next write to fail; 0 otherwise, or when the transport cannot tell (a TCP connection
 * closed by its peer is only known at the next write). */
int resp_stream_gone(const struct response *resp);

#endif
