/* A header line of an HTTP answer (contract in http_header.h). */
#include "http_header.h"

#include <string.h>
#include <strings.h>

#define HTTP_STATUS_MAX 999

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int http_header_parse(const char *line, size_t n, struct http_header *h)
{
	const char *colon, *v;

	memset(h, 0, sizeof(*h));
	while (n && blank(line[n - 1]))
		n--;
	if (n >= 5 && !strncmp(line, "HTTP/", 5)) {
		const char *p = memchr(line, ' ', n);

		for (p = p ? p + 1 : line + n; p < line + n && *p >= '0' && *p <= '9'; p++)
			if ((h->status = h->status * 10 + (*p - '0')) > HTTP_STATUS_MAX) {
				h->status = 0;
				break;
			}
		return 0;
	}
	if (!(colon = memchr(line, ':', n)))
		return -1;
	for (v = colon + 1; v < line + n && (*v == ' ' || *v == '\t'); v++)
		;
	h->status = -1;
	h->name = line;
	h->name_len = (size_t)(colon - line);
	h->value = v;
	h->value_len = (size_t)(line + n - v);
	return 0;
}

int http_header_is(const struct http_header *h, const char *name)
{
	return h->name && h->name_len == strlen(name) && !strncasecmp(h->name, name, h->name_len);
}

int http_header_media_is(const struct http_header *h, const char *type)
{
	size_t n = strlen(type);

	return h->value && h->value_len >= n && !strncasecmp(h->value, type, n) &&
	       (h->value_len == n || h->value[n] == ';' || h->value[n] == ' ' ||
		h->value[n] == '\t');
}
