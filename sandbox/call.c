/* The sandbox calls (contracts in backend.h): each runs its backend's operation with the call's
 * inputs and, for the HTTP drivers, the call's watch on this thread (http_watch_enter), so that
 * two calls on one struct sbx never share an input. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "http.h"

/* ERR: the backend cannot do WHAT. -1. */
static int cannot(const struct sbx *s, const char *what, char *err, size_t errsz)
{
	snprintf(err, errsz, "backend '%s' cannot %s", s->ops->name, what);
	return -1;
}

int sbx_create(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
	       size_t errsz)
{
	struct http_watch_ctx prev = http_watch_enter(spec->watch);
	int rc = s->ops->create(s, spec, id, idsz, err, errsz);

	http_watch_leave(prev);
	return rc;
}

int sbx_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	struct sbx_exec full = *ex;
	struct http_watch_ctx prev;
	char msg[SBX_ERR_MAX];
	int rc;

	memset(res, 0, sizeof(*res));
	if (ex->stdin_data && (!s->ops->has_stdin || ex->stdin_len > SBX_STDIN_MAX)) {
		if (!s->ops->has_stdin)
			cannot(s, "pass stdin to a command", msg, sizeof(msg));
		else
			snprintf(msg, sizeof(msg), "stdin: %zu bytes is more than %u",
				 ex->stdin_len, SBX_STDIN_MAX);
		proc_result_fail(res, msg);
		errno = s->ops->has_stdin ? E2BIG : ENOTSUP;
		return -1;
	}
	if (!full.output_max)
		full.output_max = (size_t)s->cfg->output_max;
	prev = http_watch_enter(ex->watch);
	rc = s->ops->run(s, id, &full, res);
	http_watch_leave(prev);
	return rc;
}

/* The calls below share one shape: the operation OP, absent -> cannot(WHAT), run under WATCH. */
#define SBX_CALL(op, what, watch, ...)                                                             \
	do {                                                                                       \
		struct http_watch_ctx prev_;                                                       \
		int rc_;                                                                           \
		if (!s->ops->op)                                                                   \
			return cannot(s, what, err, errsz);                                        \
		prev_ = http_watch_enter(watch);                                                   \
		rc_ = s->ops->op(s, __VA_ARGS__);                                                  \
		http_watch_leave(prev_);                                                           \
		return rc_;                                                                        \
	} while (0)

int sbx_set_egress(struct sbx *s, const char *id, json_t *hosts, const struct proc_watch *watch,
		   char *err, size_t errsz)
{
	SBX_CALL(set_egress, "enforce limited networking", watch, id, hosts, err, errsz);
}

int sbx_destroy(struct sbx *s, const char *id, const struct proc_watch *watch, char *err,
		size_t errsz)
{
	SBX_CALL(destroy, "destroy sandboxes", watch, id, err, errsz);
}

int sbx_start(struct sbx *s, const char *id, const struct proc_watch *watch, char *err,
	      size_t errsz)
{
	if (!s->ops->start)
		return 0; /* created started */
	SBX_CALL(start, "start sandboxes", watch, id, err, errsz);
}

int sbx_exists(struct sbx *s, const char *id, const struct proc_watch *watch, char *err,
	       size_t errsz)
{
	SBX_CALL(exists, "tell whether a sandbox exists", watch, id, err, errsz);
}

int sbx_list(struct sbx *s, struct sbx_listed *out, int max, int *n, const struct proc_watch *watch,
	     char *err, size_t errsz)
{
	*n = 0;
	SBX_CALL(list, "list its sandboxes", watch, out, max, n, err, errsz);
}

int sbx_cache_lookup(struct sbx *s, const char *key, char *ref, size_t refsz,
		     const struct proc_watch *watch, char *err, size_t errsz)
{
	SBX_CALL(cache_lookup, "cache sandboxes", watch, key, ref, refsz, err, errsz);
}

int sbx_cache_store(struct sbx *s, const char *id, const char *key, const struct proc_watch *watch,
		    char *err, size_t errsz)
{
	SBX_CALL(cache_store, "cache sandboxes", watch, id, key, err, errsz);
}

int sbx_cache_remove(struct sbx *s, const char *key, const struct proc_watch *watch, char *err,
		     size_t errsz)
{
	SBX_CALL(cache_remove, "cache sandboxes", watch, key, err, errsz);
}

void sbx_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	s->ops->workdir(s, id, out, outsz);
}

int sbx_check(struct sbx *s, char *err, size_t errsz)
{
	return s->ops->check ? s->ops->check(s, err, errsz) : 0;
}
