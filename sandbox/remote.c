#include "remote.h"

#include "quote.h"

#include <stdio.h>
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

void proc_result_killed(struct proc_result *res, int timed_out, int stopped)
{
	res->exit_code = REMOTE_EXIT_KILLED;
	res->timed_out = timed_out;
	res->stopped = stopped;
}

static int plain(const char *s)
{
	if (!*s)
		return 0;
	return strspn(s,
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./=:@%+,-") ==
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

int remote_valid_id(const char *id, size_t max)
{
	size_t n = strlen(id);
	return n && n < max && n < REMOTE_ID_MAX && id[0] != '.' && id[0] != '-' &&
	       strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == n;
}

int remote_create(struct http_client *c, const struct http_request *rq, const long *ok,
		  const char *key, char *id, size_t idsz, char *err, size_t errsz)
{
	struct http_response rs;
	int ret = -1;

	if (!http_expect(c, rq, ok, &rs, err, errsz) &&
	    !http_answer_str(c, rq, &rs, key, id, idsz, err, errsz)) {
		if (remote_valid_id(id, idsz))
			ret = 0;
		else
			snprintf(err, errsz, "%s: %s %.*s: answer has no usable %s", c->backend,
				 rq->method, (int)strcspn(rq->path, "?"), rq->path, key);
	}
	http_response_release(&rs);
	return ret;
}

int remote_find_in(struct sbx *s, json_t *list, const struct remote_tags *t, const char *name,
		   char *id, size_t idsz, char *err, size_t errsz)
{
	json_t *it;
	size_t i;
	int ret = 0;

	if (!list)
		return -1;
	json_array_foreach (list, i, it) {
		json_t *tags = json_object_get(it, t->tags);
		const char *tag = json_string_value(json_object_get(tags, t->name_tag));

		if (!tag || strcmp(tag, name) || (t->gone && t->gone(it)))
			continue;
		ret = 1;
		if (http_json_str(it, t->id_key, id, idsz) || !remote_valid_id(id, idsz)) {
			snprintf(err, errsz, "%s: listed sandbox %s has no usable %s", s->ops->name,
				 name, t->id_key);
			ret = -1;
		}
		break;
	}
	json_decref(list);
	return ret;
}

static int remote_delete(struct http_client *c, const char *prefix, const char *id, size_t body_max,
			 char *err, size_t errsz)
{
	static const long ok[] = { 200, 204, 404, 0 };
	char path[HTTP_URL_MAX];

	snprintf(path, sizeof(path), "%s%s", prefix, id);
	return http_call(c, "DELETE", path, ok, body_max, err, errsz) ? 0 : -1;
}

int remote_destroy(struct sbx *s, const char *x, remote_find_fn *find, const char *delete_prefix,
		   size_t body_max, char *err, size_t errsz)
{
	struct http_client *c = s->priv; /* the state's first member */
	char id[SBX_ID_MAX];
	int found = 0, rc;

	if (!remote_valid_id(x, SBX_ID_MAX)) {
		snprintf(err, errsz, "%s: invalid sandbox id", s->ops->name);
		return -1;
	}
	for (int i = 0; i < REMOTE_DESTROY_MAX; i++) {
		rc = find(s, x, id, sizeof(id), err, errsz);
		if (rc < 0)
			return -1;
		if (!rc)
			break;
		found = 1;
		if (remote_delete(c, delete_prefix, id, body_max, err, errsz))
			return -1;
	}
	return found ? 0 : remote_delete(c, delete_prefix, x, body_max, err, errsz);
}
