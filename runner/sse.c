/* The framing of server-sent events (contract in sse.h). */
#include "sse.h"

#include <string.h>

void sse_init(struct sse *r)
{
	memset(r, 0, sizeof(*r));
}

/* A blank line: the event read so far is complete. */
static enum sse_rc dispatch(struct sse *r, sse_event_fn fn, void *arg)
{
	int stop = 0;

	if (r->data.len) {
		r->data.buf[--r->data.len] = '\0'; /* the last data line's LF */
		stop = fn(arg, r->event, r->event_long, r->data.buf, r->data.len);
	}
	r->event[0] = '\0';
	r->event_long = 0;
	strbuf_reset(&r->data);
	return stop ? SSE_STOPPED : SSE_OK;
}

/* One complete line of the stream (r->line, without its end). */
static enum sse_rc line(struct sse *r, sse_event_fn fn, void *arg)
{
	const char *p = r->line.buf ? r->line.buf : "", *colon, *value;
	size_t n = r->line.len, flen, vlen;

	if (!r->lines++ && n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3)) {
		p += 3; /* a byte order mark */
		n -= 3;
	}
	if (!n)
		return dispatch(r, fn, arg);
	if (p[0] == ':')
		return SSE_OK; /* a comment */
	colon = memchr(p, ':', n);
	flen = colon ? (size_t)(colon - p) : n;
	value = colon ? colon + 1 : p + n;
	if (value < p + n && *value == ' ')
		value++;
	vlen = (size_t)(p + n - value);
	if (flen == 5 && !memcmp(p, "event", 5)) {
		r->event_long = vlen >= sizeof(r->event);
		vlen = r->event_long ? 0 : vlen;
		memcpy(r->event, value, vlen);
		r->event[vlen] = '\0';
	} else if (flen == 4 && !memcmp(p, "data", 4)) {
		if (strbuf_add(&r->data, value, vlen) || strbuf_addch(&r->data, '\n'))
			return SSE_NOMEM;
	}
	return SSE_OK; /* id, retry and unknown fields */
}

enum sse_rc sse_feed(struct sse *r, const char *p, size_t n, size_t cap, sse_event_fn fn, void *arg)
{
	enum sse_rc rc;
	size_t i = 0, j;

	while (i < n) {
		if (r->after_cr) {
			r->after_cr = 0;
			if (p[i] == '\n') {
				i++;
				continue;
			}
		}
		for (j = i; j < n && p[j] != '\n' && p[j] != '\r'; j++)
			;
		if (j > i && strbuf_add(&r->line, p + i, j - i))
			return SSE_NOMEM;
		if (r->line.len + r->data.len > cap)
			return SSE_TOO_LARGE;
		if (j == n)
			break;
		r->after_cr = p[j] == '\r';
		i = j + 1;
		if ((rc = line(r, fn, arg)))
			return rc;
		strbuf_reset(&r->line);
	}
	return SSE_OK;
}

void sse_release(struct sse *r)
{
	strbuf_release(&r->line);
	strbuf_release(&r->data);
	sse_init(r);
}
