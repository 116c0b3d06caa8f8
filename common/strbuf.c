#include "strbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_init(struct strbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	strbuf_init(sb);
}

int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t want, alloc;
	char *p;

	if (sb->oom)
		return -1;
	if (extra > SIZE_MAX - sb->len - 1) {
		sb->oom = 1;
		return -1;
	}
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	alloc = sb->alloc ? sb->alloc : STRBUF_MIN_ALLOC;
	while (alloc < want)
		alloc = alloc > SIZE_MAX / 2 ? want : alloc * 2;
	p = realloc(sb->buf, alloc);
	if (!p) {
		sb->oom = 1;
		return -1;
	}
	if (!sb->buf)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = alloc;
	return 0;
}

int strbuf_add(struct strbuf *sb, const void *data, size_t n)
{
	if (strbuf_grow(sb, n))
		return -1;
	if (n)
		memcpy(sb->buf + sb->len, data, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, int c)
{
	char ch = (char)c;
	return strbuf_add(sb, &ch, 1);
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n < 0 || strbuf_grow(sb, (size_t)n)) {
		va_end(again);
		return -1;
	}
	vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, again);
	va_end(again);
	sb->len += (size_t)n;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return rc;
}

void strbuf_remove(struct strbuf *sb, size_t pos, size_t n)
{
	if (pos >= sb->len)
		return;
	if (n > sb->len - pos)
		n = sb->len - pos;
	memmove(sb->buf + pos, sb->buf + pos + n, sb->len - pos - n);
	sb->len -= n;
	sb->buf[sb->len] = '\0';
}

void strbuf_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

const char *strbuf_str(const struct strbuf *sb)
{
	return sb->buf ? sb->buf : "";
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *p = sb->buf;

	if (len)
		*len = sb->len;
	strbuf_init(sb);
	return p;
}
