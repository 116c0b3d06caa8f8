/* Cross-cutting pieces every route uses: database error mapping, authentication, health. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/keys.h"
#include "agent_validate.h"
#include "auth_guard.h"
#include "cursor.h"
#include "handlers.h"

#define AUTH_BEARER "bearer" /* RFC 7235: the scheme is case-insensitive */

void handle_db_error(struct worker *w, struct request *req, struct response *resp,
		     enum db_status st)
{
	/* the log names the class: only DB_FATAL and DB_CONFLICT are the database's refusals */
	static const char *const what[] = {
		[DB_CONFLICT] = "database conflict", [DB_RETRY] = "database busy",
		[DB_GONE] = "database unavailable",  [DB_FATAL] = "database error",
		[DB_NOMEM] = "out of memory",	     [DB_CORRUPT] = "corrupt stored data",
	};
	const char *msg = db_last_status(w->db) == st ? db_error(w->db) : "";

	log_error("%s %s: %s: %s (%s)", req->method, req->path,
		  (unsigned)st < sizeof(what) / sizeof(what[0]) && what[st] ? what[st] : "?", msg,
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

/* The live cache entry for HASH, or NULL. */
static const struct auth_cache_entry *auth_cache_get(const struct worker *w,
						     const unsigned char *hash, long long now)
{
	for (int i = 0; i < AUTH_CACHE_SLOTS; i++) {
		const struct auth_cache_entry *e = &w->auth_cache[i];
		if (e->expires_ms > now && !memcmp(e->hash, hash, SHA256_LEN))
			return e;
	}
	return NULL;
}

/* Remember AUTH for HASH until NOW + AUTH_CACHE_TTL_MS, in the slot that expires first. */
static void auth_cache_put(struct worker *w, const unsigned char *hash, const struct auth *auth,
			   long long now)
{
	struct auth_cache_entry *victim = &w->auth_cache[0];

	for (int i = 1; i < AUTH_CACHE_SLOTS; i++)
		if (w->auth_cache[i].expires_ms < victim->expires_ms)
			victim = &w->auth_cache[i];
	memcpy(victim->hash, hash, SHA256_LEN);
	victim->auth = *auth;
	victim->expires_ms = now + AUTH_CACHE_TTL_MS;
}

/* The optional anthropic-workspace-id header must name the authenticated key's workspace.
 * 0, or -1 with RESP a 403. */
static int auth_workspace_header(struct request *req, struct response *resp)
{
	const char *ws_header = req_env(req, "HTTP_ANTHROPIC_WORKSPACE_ID");

	if (ws_header && *ws_header && strcmp(ws_header, req->auth.workspace_id)) {
		resp_error(resp, req, 403, NULL,
			   "the 'anthropic-workspace-id' header does not match the API key's "
			   "workspace");
		return -1;
	}
	return 0;
}

/* Authenticate REQ by its API key. Keys found are kept per worker for AUTH_CACHE_TTL_MS
 * (handlers.h), so a request costs one database round trip, not two (README, Performance), and
 * a revoked key is refused within that time. Unknown keys are kept out of the database by
 * auth_guard.h (a negative cache a new key is never in, and a per-address budget of
 * unknown-key lookups). */
int auth_request(struct worker *w, struct request *req, struct response *resp)
{
	const char *key = req_env(req, "HTTP_X_API_KEY");
	const char *authz = req_env(req, "HTTP_AUTHORIZATION");
	const char *addr = req_env(req, "REMOTE_ADDR");
	unsigned char hash[SHA256_LEN];
	const struct auth_cache_entry *hit;
	enum db_status st;
	long long now;
	int found = 0, took = 0;

	if ((!key || !*key) && authz && !strncasecmp(authz, AUTH_BEARER, strlen(AUTH_BEARER)) &&
	    authz[strlen(AUTH_BEARER)] == ' ') {
		key = authz + strlen(AUTH_BEARER);
		while (*key == ' ')
			key++;
	}
	if (!key || !*key) {
		resp_error(resp, req, 401, NULL,
			   "missing API key: send 'x-api-key' or 'Authorization: Bearer'");
		return -1;
	}
	if (strlen(key) <= KEY_MAX_LEN) {
		/* environment keys and sessions tokens (handlers/work.c) are never cached, so that
		 * revocation is immediate; the unknown-key guard covers every kind */
		int scoped = work_key_scoped(key);

		sha256(key, strlen(key), hash);
		now = clock_mono_ms();
		hit = scoped ? NULL : auth_cache_get(w, hash, now);
		if (hit) {
			req->auth = hit->auth;
			found = 1;
		} else if (auth_guard_known_bad(hash, now)) {
			found = 0;
		} else if (!auth_guard_may_lookup(hash, addr, now, &took)) {
			resp_error(
				resp, req, 429, NULL,
				"too many requests with unknown API keys from this address; retry"
				" after 1 second");
			return -1;
		} else if (scoped) {
			if (work_auth(w, req, resp, key, hash, &found))
				return -1;
			if (found)
				auth_guard_valid(hash, addr, took, now);
			else
				auth_guard_unknown(hash, addr, took, now);
		} else {
			struct key_identity id = {
				req->auth.key_id,
				req->auth.workspace_id,
				req->auth.account_id,
				sizeof(req->auth.key_id),
				sizeof(req->auth.workspace_id),
				sizeof(req->auth.account_id),
			};
			st = keys_lookup(w->db, hash, &id, &found);
			if (st) {
				handle_db_error(w, req, resp, st);
				return -1;
			}
			if (found) {
				auth_cache_put(w, hash, &req->auth, now);
				auth_guard_valid(hash, addr, took, now);
			} else
				auth_guard_unknown(hash, addr, took, now);
		}
	}
	if (!found) {
		resp_error(resp, req, 401, NULL, "invalid API key");
		return -1;
	}
	return auth_workspace_header(req, resp);
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
		log_warn("readyz: database %s: %s", db_status_name(st), db_error(w->db));
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
