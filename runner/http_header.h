/* A header line of an HTTP answer as libcurl hands it to a header callback, read once for the
 * runner's two readers of answers (model_stream.c, mcp_answer.c). */
#ifndef TERRARIUM_RUNNER_HTTP_HEADER_H
#define TERRARIUM_RUNNER_HTTP_HEADER_H

#include <stddef.h>

struct http_header {
	long status;	  /* a status line ("HTTP/1.1 529 ...", "HTTP/2 200"): its status, 0 when
			   * unreadable; -1 for a field */
	const char *name; /* a field: its name and value, pointing into the line: the value without
			   * its leading blanks, trailing blanks and line end */
	size_t name_len;
	const char *value;
	size_t value_len;
};

/* LINE (N bytes, with or without its CR LF) into H: 0, or -1 when it is neither a status line
 * nor a field (the blank line that ends the header block, a line without a colon). */
int http_header_parse(const char *line, size_t n, struct http_header *h);

/* Whether H is the field NAME (case-insensitive). */
int http_header_is(const struct http_header *h, const char *name);

/* Whether H's value is the media type TYPE (case-insensitive; parameters after it allowed:
 * "application/json; charset=utf-8"). */
int http_header_media_is(const struct http_header *h, const char *type);

#endif
