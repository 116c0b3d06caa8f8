/* Response building and the error envelope of docs/api.md §2. */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define RESP_RETRY_AFTER_SECONDS 1

void resp_header(struct response *resp, const char *name, const char *fmt, ...)
{
	char *line;
	size_t n;
	va_list ap;

	if (resp->nheaders >= RESP_MAX_HEADERS)
		return;
	line = resp->headers[resp->nheaders++];
	n = (size_t)snprintf(line, RESP_HEADER_MAX, "%s: ", name);
	if (n >= RESP_HEADER_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, RESP_HEADER_MAX - n, fmt, ap);
	va_end(ap);
}

void resp_json(struct response *resp, int status, json_t *value)
{
	free(resp->body);
	resp->status = status;
	resp->body = json_dumps(value, JSON_COMPACT);
	resp->body_len = resp->body ? strlen(resp->body) : 0;
	json_decref(value);
	if (!resp->body) {
		/* out of memory: the smallest valid envelope */
		static const char oom[] = "{\"type\":\"error\",\"error\":{\"type\":\"api_error\","
					  "\"message\":\"out of memory\"}}";
		resp->status = 500;
		resp->body = strdup(oom);
		resp->body_len = resp->body ? strlen(oom) : 0;
	}
}

const char *resp_error_type(int status)
{
	switch (status) {
	case 400:
	case 405:
	case 422:
		return "invalid_request_error";
	case 401:
		return "authentication_error";
	case 403:
		return "permission_error";
	case 404:
		return "not_found_error";
	case 409:
		return "conflict_error";
	case 413:
		return "request_too_large";
	case 429:
		return "rate_limit_error";
	case 503:
		return "overloaded_error";
	default:
		return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
	}
}

/* Length of the well-formed UTF-8 sequence at P (1-4), or 0 when P does not start one
 * (overlong forms, surrogates and code points past U+10FFFF are not well formed). */
static size_t utf8_seq(const unsigned char *p)
{
	size_t n;
	unsigned cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		n = 2, cp = p[0] & 0x1Fu;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		n = 3, cp = p[0] & 0x0Fu;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		n = 4, cp = p[0] & 0x07u;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80) /* also stops at the NUL */
			return 0;
		cp = cp << 6 | (p[i] & 0x3Fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

/* Messages quote request data (a path may hold any byte) and may be cut mid-character, but
 * JSON strings must be UTF-8: every byte that does not start a well-formed sequence becomes
 * '?'. */
static void utf8_repair(char *s)
{
	unsigned char *p = (unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq(p);

		if (n)
			p += n;
		else
			*p++ = '?';
	}
}

/* The envelope for STATUS with message FMT/AP and DETAILS (stolen; NULL: none). */
static void resp_verror(struct response *resp, const struct request *req, int status,
			json_t *details, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));
static void resp_verror(struct response *resp, const struct request *req, int status,
			json_t *details, const char *fmt, va_list ap)
{
	char msg[1024];
	json_t *err, *body;
	int retry;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	utf8_repair(msg);

	err = json_pack("{s:s, s:s}", "type", resp_error_type(status), "message", msg);
	if (details)
		json_object_set_new(err, "details", details);
	body = json_pack("{s:s, s:o, s:s}", "type", "error", "error", err, "request_id",
			 req ? req->request_id : "");

	retry = status == 408 || status == 429 || status >= 500;
	if (status == 500)
		retry = 0; /* our 500s come from bugs or bad state, not from load */
	resp_header(resp, "x-should-retry", "%s", retry ? "true" : "false");
	if (status == 429 || status == 503)
		resp_header(resp, "retry-after", "%d", RESP_RETRY_AFTER_SECONDS);
	resp_json(resp, status, body);
}

void resp_error(struct response *resp, const struct request *req, int status, const char *code,
		const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	resp_verror(resp, req, status,
		    code && *code ? json_pack("{s:s}", "error_code", code) : NULL, fmt, ap);
	va_end(ap);
}

void resp_error_details(struct response *resp, const struct request *req, int status,
			json_t *details, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	resp_verror(resp, req, status, details, fmt, ap);
	va_end(ap);
}

void resp_too_large(struct response *resp, const struct request *req)
{
	resp_error(resp, req, 413, NULL, "request body exceeds the %d MiB (%d bytes) limit",
		   REQ_MAX_BODY_MIB, REQ_MAX_BODY);
}

void resp_empty(struct response *resp, int status)
{
	free(resp->body);
	resp->status = status;
	resp->body = strdup("");
	resp->body_len = 0;
}

/* The index of header NAME in RESP, or -1. */
static int header_index(const struct response *resp, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < resp->nheaders; i++)
		if (!strncmp(resp->headers[i], name, n) && resp->headers[i][n] == ':')
			return i;
	return -1;
}

const char *resp_header_get(const struct response *resp, const char *name)
{
	int i = header_index(resp, name);

	return i < 0 ? NULL : resp->headers[i] + strlen(name) + 2;
}

void resp_set_retry(struct response *resp, int retry)
{
	int i = header_index(resp, "x-should-retry");

	if (i >= 0)
		snprintf(resp->headers[i], RESP_HEADER_MAX, "x-should-retry: %s",
			 retry ? "true" : "false");
}

void resp_release(struct response *resp)
{
	free(resp->body);
	memset(resp, 0, sizeof(*resp));
}

int resp_stream_start(struct response *resp, const struct request *req, const char *content_type)
{
	char head[RESP_MAX_HEADERS * RESP_HEADER_MAX + 256];
	int n;

	if (!resp->stream)
		return -1;
	n = snprintf(head, sizeof(head),
		     "Status: 200 OK\r\ncontent-type: %s\r\ncache-control: no-cache\r\n"
		     "x-accel-buffering: no\r\nrequest-id: %s\r\n",
		     content_type, req->request_id);
	for (int i = 0; i < resp->nheaders && n > 0 && (size_t)n < sizeof(head); i++)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "%s\r\n", resp->headers[i]);
	if (n <= 0 || (size_t)n + 3 > sizeof(head))
		return -1;
	n += snprintf(head + n, sizeof(head) - (size_t)n, "\r\n");
	resp_empty(resp, 200);
	resp->streamed = 1;
	return resp->stream->write(resp->stream->ctx, head, (size_t)n);
}

int resp_stream_write(struct response *resp, const char *buf, size_t n)
{
	if (!resp->stream || !resp->streamed)
		return -1;
	return resp->stream->write(resp->stream->ctx, buf, n);
}

int resp_stream_gone(const struct response *resp)
{
	struct pollfd p;

	if (!resp->stream || resp->stream->fd < 0)
		return 0;
	/* hung up, not half-closed: Apache and lighttpd shut their writing side once the request
	 * is sent (POLLRDHUP), and stay to read the answer */
	p = (struct pollfd){ .fd = resp->stream->fd, .events = 0 };
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}
