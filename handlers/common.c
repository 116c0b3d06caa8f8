/* Cross-cutting pieces every route uses: database error mapping, health, query parameters,
 * list pages. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/keys.h"
#include "agent_validate.h"
#include "cursor.h"
#include "handlers.h"

void handle_db_error(struct worker *w, struct request *req, struct response *resp,
		     enum db_status st)
{
	const char *msg = db_last_status(w->db) == st ? db_error(w->db) : "";

	/* the log names the class (db_status_name) and the failure's own message */
	log_error("%s %s: %s: %s (%s)", req->method, req->path, db_status_name(st), msg,
		  req->request_id);
	if (st == DB_GONE || st == DB_RETRY)
		resp_error(resp, req, 503, NULL, "the database is unavailable; retry later");
	else
		resp_error(resp, req, 500, NULL, "internal error");
}

void respond_internal(const struct request *req, struct response *resp, const char *what)
{
	log_error("%s %s: %s (%s)", req->method, req->path, what, req->request_id);
	resp_error(resp, req, 500, NULL, "internal error");
}

void health_live(struct worker *w, struct request *req, struct response *resp)
{
	(void)w;
	(void)req;
	resp_json(resp, 200, json_pack("{s:s}", "status", "ok"));
}

void health_ready(struct worker *w, struct request *req, struct response *resp)
{
	static const char sql[] = "SELECT 1";
	struct db_rows rows;
	enum db_status st = db_exec(w->db, sql, DB_NONE, &rows, NULL);

	if (st) {
		log_warn("readyz: %s: %s", db_status_name(st), db_error(w->db));
		resp_error(resp, req, 503, NULL, "the database is unavailable");
		return;
	}
	db_rows_free(&rows);
	resp_json(resp, 200, json_pack("{s:s}", "status", "ready"));
}

int worker_cursor_key(struct worker *w, struct request *req, struct response *resp)
{
	enum db_status st;

	if (w->cursor_key_loaded)
		return 0;
	st = secret_get(w->db, "cursor", w->cursor_key, sizeof(w->cursor_key));
	if (st) {
		handle_db_error(w, req, resp, st);
		return -1;
	}
	w->cursor_key_loaded = 1;
	return 0;
}

int resource_id_valid(const char *s, const char *prefix)
{
	size_t n = strlen(s), p = strlen(prefix);

	return n > p && n < RESOURCE_ID_MAX && !strncmp(s, prefix, p) &&
	       strspn(s + p, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") ==
		       n - p;
}

int resource_new_id(const struct request *req, struct response *resp, const char *prefix,
		    char id[RESOURCE_ID_MAX])
{
	if (!random_id(id, RESOURCE_ID_MAX, prefix, ID_RANDOM_LEN))
		return 0;
	respond_internal(req, resp, "no room for a new id");
	return -1;
}

/* Longest digit string query_count reads: 18 digits never overflow a long long. */
#define QUERY_COUNT_DIGITS_MAX 18

int query_count(struct request *req, struct response *resp, const char *name, long long min,
		long long max, long long def, long long *out)
{
	const char *s = req_query(req, name);
	size_t n;

	*out = def;
	if (!s)
		return 0;
	n = strspn(s, "0123456789");
	if (n && !s[n] && n <= QUERY_COUNT_DIGITS_MAX) {
		*out = strtoll(s, NULL, 10);
		if (*out >= min && *out <= max)
			return 0;
	}
	resp_error(resp, req, 400, NULL, "'%s' must be an integer from %lld to %lld (digits only)",
		   name, min, max);
	return -1;
}

int query_limit(struct request *req, struct response *resp, long long max, long long def,
		long long *out)
{
	const char *heavy = req_env(req, "TERRARIUM_HEAVY");

	if (query_count(req, resp, "limit", 1, max, def, out))
		return -1;
	/* behind nginx (docs/limits.md), a page over LIST_LIGHT_LIMIT spends the heavy budget
	 * only when nginx read the same limit: spelt another way it is refused, not free */
	if (*out > LIST_LIGHT_LIMIT && heavy && strcmp(heavy, "1")) {
		resp_error(resp, req, 400, NULL,
			   "'limit' above %d must be sent as a plain 'limit=N' query parameter",
			   LIST_LIGHT_LIMIT);
		return -1;
	}
	return 0;
}

unsigned list_page_rows(const struct db_rows *rows, long long limit)
{
	unsigned long long bytes = 0;
	unsigned n = 0;

	while (n < rows->nrows && n < (unsigned long long)limit) {
		unsigned long long row = 0;

		for (unsigned c = 0; c < rows->ncols; c++)
			row += rows->len[n * rows->ncols + c];
		if (n && bytes + row > LIST_PAGE_BYTES_MAX)
			break;
		bytes += row;
		n++;
	}
	return n;
}

void respond_verr(struct request *req, struct response *resp, const struct verr *err)
{
	resp_error(resp, req, err->status, err->code, "%s", err->msg);
}

int respond_refusal(struct worker *w, struct request *req, struct response *resp, enum db_status st,
		    const struct verr *err)
{
	if (st)
		handle_db_error(w, req, resp, st);
	else if (err->status)
		respond_verr(req, resp, err);
	else
		return 0;
	return 1;
}

int page_parse(struct worker *w, struct request *req, struct response *resp, const char *kind,
	       const char *filter, const char *filters_text, char *created, char *id, int *paged)
{
	const char *page = req_query(req, "page");
	enum cursor_status cs;

	*paged = 0;
	if (worker_cursor_key(w, req, resp))
		return -1;
	if (!page || !*page)
		return 0;
	cs = cursor_parse(w->cursor_key, sizeof(w->cursor_key), kind, filter, page, created, id);

	if (cs == CURSOR_OTHER_FILTER) {
		resp_error(resp, req, 400, NULL,
			   "'page' cursor belongs to a list with other filters%s%s%s",
			   filters_text ? " (" : "", filters_text ? filters_text : "",
			   filters_text ? ")" : "");
		return -1;
	}
	if (cs) {
		resp_error(resp, req, 400, NULL, "'page' is not a valid cursor");
		return -1;
	}
	*paged = 1;
	return 0;
}

int query_time(struct request *req, struct response *resp, const char *name, char *out)
{
	const char *s = req_query(req, name);

	out[0] = '\0';
	if (!s)
		return 0;
	if (rfc3339_to_db(s, out, CLOCK_DB_LEN)) {
		resp_error(resp, req, 400, NULL,
			   "'%s' must be an RFC 3339 timestamp such as 2026-07-27T00:00:00Z", name);
		return -1;
	}
	return 0;
}
