#include "remote.h"

#include "quote.h"

#include <stdlib.h>
#include <string.h>

void out_tail_init(struct out_tail *t, size_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max;
}

void out_tail_put(struct out_tail *t, const char *data, size_t n)
{
	if (!n)
		return;
	if (!t->buf && !t->oom) {
		t->buf = malloc(t->max + 1);
		if (!t->buf) {
			t->oom = 1;
			return;
		}
	}
	if (!t->buf)
		return;
	if (n >= t->max) {
		/* the new data alone fills the cap: keep its end */
		t->truncated |= n > t->max || t->len > 0;
		memcpy(t->buf, data + (n - t->max), t->max);
		t->len = t->max;
		return;
	}
	if (t->len + n > t->max) {
		size_t drop = t->len + n - t->max;
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
		t->truncated = 1;
	}
	memcpy(t->buf + t->len, data, n);
	t->len += n;
}

void out_tail_finish(struct out_tail *t, struct proc_result *res)
{
	if (!t->buf)
		t->buf = malloc(1), t->len = 0;
	if (t->buf)
		t->buf[t->len] = '\0';
	free(res->output);
	res->output = t->buf;
	res->len = t->buf ? t->len : 0;
	res->truncated = t->truncated;
	t->buf = NULL;
	t->len = 0;
}

void out_tail_release(struct out_tail *t)
{
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

void proc_result_fail(struct proc_result *res, const char *msg)
{
	free(res->output);
	res->exit_code = -1;
	res->timed_out = 0;
	res->truncated = 0;
	res->output = strdup(msg ? msg : "");
	res->len = res->output ? strlen(res->output) : 0;
}

static int plain(const char *s)
{
	if (!*s)
		return 0;
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:@%+,-") ==
	       strlen(s);
}

char *sh_join(char *const argv[])
{
	size_t size = 1, len = 0;
	char *out;

	if (!argv || !argv[0])
		return NULL;
	/* worst case: every byte is a quote, 5 bytes each, plus the quotes and a space */
	for (int i = 0; argv[i]; i++)
		size += strlen(argv[i]) * 5 + 3;
	out = malloc(size);
	if (!out)
		return NULL;
	out[0] = '\0';
	for (int i = 0; argv[i]; i++) {
		size_t n = strlen(argv[i]);
		if (i)
			out[len++] = ' ';
		if (plain(argv[i])) {
			memcpy(out + len, argv[i], n);
			len += n;
		} else if (sbx_quote_arg(argv[i], out, size, &len)) {
			free(out);
			return NULL;
		}
	}
	out[len] = '\0';
	return out;
}
