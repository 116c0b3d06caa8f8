/* A growable byte buffer (git's strbuf is the model): BUF holds LEN bytes and a NUL after them
 * once anything was added. Allocation failures never exit (a worker must not): they set the
 * sticky OOM flag, the add that failed and every later one return -1 and change nothing.
 *
 *   struct strbuf sb = STRBUF_INIT;
 *   strbuf_addf(&sb, "%d", n); ... strbuf_release(&sb);
 */
#ifndef TERRARIUM_STRBUF_H
#define TERRARIUM_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#define STRBUF_MIN_ALLOC 64 /* the first allocation's size */

struct strbuf {
	char *buf;    /* owned; NULL until the first growth (strbuf_str never is) */
	size_t len;   /* bytes held, not counting the NUL */
	size_t alloc; /* bytes allocated */
	int oom;      /* an allocation failed */
};

#define STRBUF_INIT                                                                                \
	{                                                                                          \
		NULL, 0, 0, 0                                                                      \
	}

void strbuf_init(struct strbuf *sb);

/* Free the buffer; SB is empty (and usable) again. */
void strbuf_release(struct strbuf *sb);

/* Make room for EXTRA more bytes and the NUL. 0, or -1 (and sb->oom) when out of memory or
 * the size would overflow. */
int strbuf_grow(struct strbuf *sb, size_t extra);

/* Append N bytes of DATA / the string S / one byte C / a printf-formatted text. 0 or -1. */
int strbuf_add(struct strbuf *sb, const void *data, size_t n);
int strbuf_addstr(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, int c);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Drop the bytes [POS, POS + N) (clamped to what is held), moving the rest down. */
void strbuf_remove(struct strbuf *sb, size_t pos, size_t n);

/* Empty SB, keeping its memory (and its oom flag). */
void strbuf_reset(struct strbuf *sb);

/* The contents as a C string: "" when nothing was added. Borrowed from SB. */
const char *strbuf_str(const struct strbuf *sb);

/* Hand the buffer to the caller (caller frees; NULL when nothing was added); SB is empty and
 * usable again. *LEN (when not NULL) gets its length. */
char *strbuf_detach(struct strbuf *sb, size_t *len);

#endif
