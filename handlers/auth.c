/* Every kind of credential, one row each: a new kind is a row of `kinds` (its prefix, lookup,
 * whether it may be remembered, what it reaches) and the route flag that admits it. */
#include "auth.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/keys.h"
#include "../db/work.h"
#include "auth_guard.h"
#include "handlers.h"

#define AUTH_BEARER "bearer" /* RFC 7235: the scheme is case-insensitive */

/* ---- the kinds ---- */

static enum db_status lookup_workspace_key(struct db *db, const unsigned char hash[SHA256_LEN],
					   struct auth_principal *p, int *found)
{
	struct key_identity id = {
		p->key_id,	   p->workspace_id,	    p->account_id,
		sizeof(p->key_id), sizeof(p->workspace_id), sizeof(p->account_id),
	};

	return keys_lookup(db, hash, &id, found);
}

static enum db_status lookup_environment_key(struct db *db, const unsigned char hash[SHA256_LEN],
					     struct auth_principal *p, int *found)
{
	return envkeys_lookup(db, hash, p->environment_id, p->workspace_id, AUTH_ID_MAX,
			      p->account_id, sizeof(p->account_id), found);
}

static enum db_status lookup_sessions_token(struct db *db, const unsigned char hash[SHA256_LEN],
					    struct auth_principal *p, int *found)
{
	return worktoken_lookup(db, hash, p->work_id, p->environment_id, p->session_id,
				p->workspace_id, AUTH_ID_MAX, p->account_id, sizeof(p->account_id),
				found);
}

/* params[0] is P's environment: 0, or -1 with RESP the environment's 404. */
static int reach_environment(struct request *req, struct response *resp,
			     const struct auth_principal *p)
{
	if (!strcmp(req->params[0], p->environment_id))
		return 0;
	resp_error(resp, req, 404, "environment_not_found", "environment '%.64s' not found",
		   req->params[0]);
	return -1;
}

/* An environment key reaches its environment's work routes. */
static int reach_environment_key(struct request *req, struct response *resp, unsigned admits,
				 const struct auth_principal *p)
{
	(void)admits;
	return reach_environment(req, resp, p);
}

/* A sessions token reaches its item on the work routes (those that admit environment keys:
 * params[0] the environment, params[1] the item) and its session on the others (params[0]). */
static int reach_sessions_token(struct request *req, struct response *resp, unsigned admits,
				const struct auth_principal *p)
{
	if (!(admits & AUTH_ADMITS(AUTH_ENVIRONMENT_KEY))) {
		if (!strcmp(req->params[0], p->session_id))
			return 0;
		resp_error(resp, req, 404, NULL, "session '%.64s' not found", req->params[0]);
		return -1;
	}
	if (reach_environment(req, resp, p))
		return -1;
	if (req->nparams >= 2 && !strcmp(req->params[1], p->work_id))
		return 0;
	resp_error(resp, req, 404, NULL, "work '%.64s' not found",
		   req->nparams >= 2 ? req->params[1] : "");
	return -1;
}

static const struct auth_kind_row {
	const char *prefix; /* of the key; NULL: every key no other row's prefix starts */
	/* Found keys are remembered per worker for AUTH_CACHE_TTL_MS (one database round trip
	 * per request instead of two: README, Performance). The others are looked up on every
	 * request: a revoked environment key, and a sessions token whose item stopped or was
	 * delivered again, are refused at once. */
	int cached;
	/* The principal of the key whose SHA-256 is HASH into P and *FOUND. */
	enum db_status (*lookup)(struct db *db, const unsigned char hash[SHA256_LEN],
				 struct auth_principal *p, int *found);
	/* What P may reach on a route that admits ADMITS (this kind among them): 0, or -1 with
	 * RESP a 404 naming what the path asked for. NULL: its whole workspace. */
	int (*reach)(struct request *req, struct response *resp, unsigned admits,
		     const struct auth_principal *p);
} kinds[AUTH_KINDS] = {
	[AUTH_WORKSPACE_KEY] = { NULL, 1, lookup_workspace_key, NULL },
	[AUTH_ENVIRONMENT_KEY] = { ENVKEY_PREFIX, 0, lookup_environment_key,
				   reach_environment_key },
	[AUTH_SESSIONS_TOKEN] = { WORK_TOKEN_PREFIX, 0, lookup_sessions_token,
				  reach_sessions_token },
};

/* The kind of KEY: the row whose prefix it starts with, else a workspace key. */
static enum auth_kind kind_of(const char *key)
{
	for (int k = 0; k < AUTH_KINDS; k++)
		if (kinds[k].prefix && !strncmp(key, kinds[k].prefix, strlen(kinds[k].prefix)))
			return (enum auth_kind)k;
	return AUTH_WORKSPACE_KEY;
}

/* ---- the per-worker cache ---- */

/* The live cache entry for HASH, or NULL. */
static const struct auth_cache_entry *cache_get(const struct worker *w, const unsigned char *hash,
						long long now)
{
	for (int i = 0; i < AUTH_CACHE_SLOTS; i++) {
		const struct auth_cache_entry *e = &w->auth_cache[i];
		if (e->expires_ms > now && !memcmp(e->hash, hash, SHA256_LEN))
			return e;
	}
	return NULL;
}

/* Remember P for HASH until NOW + AUTH_CACHE_TTL_MS, in the slot that expires first. */
static void cache_put(struct worker *w, const unsigned char *hash, const struct auth_principal *p,
		      long long now)
{
	struct auth_cache_entry *victim = &w->auth_cache[0];

	for (int i = 1; i < AUTH_CACHE_SLOTS; i++)
		if (w->auth_cache[i].expires_ms < victim->expires_ms)
			victim = &w->auth_cache[i];
	memcpy(victim->hash, hash, SHA256_LEN);
	victim->principal = *p;
	victim->expires_ms = now + AUTH_CACHE_TTL_MS;
}

/* ---- the request ---- */

int auth_init(void)
{
	/* every worker shares the unknown-key cache and per-address budgets; without shared
	 * memory each worker keeps its own (the guard still holds, per worker) */
	if (auth_guard_init())
		log_warn("supervisor: no shared memory for the unknown-key guard: %s",
			 strerror(errno));
	return 0;
}

/* The key REQ presents: x-api-key, else the credentials of Authorization: Bearer. NULL: none. */
static const char *presented_key(const struct request *req)
{
	const char *key = req_env(req, "HTTP_X_API_KEY");
	const char *authz = req_env(req, "HTTP_AUTHORIZATION");

	if ((!key || !*key) && authz && !strncasecmp(authz, AUTH_BEARER, strlen(AUTH_BEARER)) &&
	    authz[strlen(AUTH_BEARER)] == ' ') {
		key = authz + strlen(AUTH_BEARER);
		while (*key == ' ')
			key++;
	}
	return key && *key ? key : NULL;
}

/* Find KEY's principal into P and *FOUND: remembered (a kind that may be), or looked up unless
 * auth_guard.h keeps it from the database (known unknown: not found; over the address's
 * budget: 429). 0, or -1 with RESP filled (429, 503). */
static int principal_find(struct worker *w, struct request *req, struct response *resp,
			  const char *key, struct auth_principal *p, int *found)
{
	const struct auth_kind_row *row;
	const char *addr = req_env(req, "REMOTE_ADDR");
	unsigned char hash[SHA256_LEN];
	const struct auth_cache_entry *hit;
	long long now = clock_mono_ms();
	enum db_status st;
	int took = 0;

	memset(p, 0, sizeof(*p));
	p->kind = kind_of(key);
	row = &kinds[p->kind];
	sha256(key, strlen(key), hash);
	hit = row->cached ? cache_get(w, hash, now) : NULL;
	if (hit) {
		*p = hit->principal;
		*found = 1;
		return 0;
	}
	*found = 0;
	if (auth_guard_known_bad(hash, now))
		return 0;
	if (!auth_guard_may_lookup(hash, addr, now, &took)) {
		resp_error(resp, req, 429, NULL,
			   "too many requests with unknown API keys from this address; retry"
			   " after 1 second");
		return -1;
	}
	st = row->lookup(w->db, hash, p, found);
	if (st) {
		handle_db_error(w, req, resp, st);
		return -1;
	}
	if (!*found) {
		auth_guard_unknown(hash, addr, took, now);
		return 0;
	}
	if (row->cached)
		cache_put(w, hash, p, now);
	auth_guard_valid(hash, addr, took, now);
	return 0;
}

/* Keys found are remembered per worker for AUTH_CACHE_TTL_MS where their kind allows, and a
 * revoked key is refused within that time. Unknown keys of every kind are kept out of the
 * database by auth_guard.h (a negative cache a new key is never in, and a per-address budget of
 * unknown-key lookups). */
int auth_request(struct worker *w, struct request *req, struct response *resp, unsigned admits,
		 struct auth_principal *p)
{
	const char *key = presented_key(req);
	const char *ws_header = req_env(req, "HTTP_ANTHROPIC_WORKSPACE_ID");
	int found = 0;

	if (!key) {
		resp_error(resp, req, 401, NULL,
			   "missing API key: send 'x-api-key' or 'Authorization: Bearer'");
		return -1;
	}
	/* a key longer than any made is refused without a lookup */
	if (strlen(key) <= KEY_MAX_LEN && principal_find(w, req, resp, key, p, &found))
		return -1;
	if (!found) {
		resp_error(resp, req, 401, NULL, "invalid API key");
		return -1;
	}
	if (ws_header && *ws_header && strcmp(ws_header, p->workspace_id)) {
		resp_error(resp, req, 403, NULL,
			   "the 'anthropic-workspace-id' header does not match the API key's "
			   "workspace");
		return -1;
	}
	if (!(admits & AUTH_ADMITS(p->kind))) {
		resp_error(resp, req, 404, NULL, "no route for %s %s with this key", req->method,
			   req->path);
		return -1;
	}
	return kinds[p->kind].reach ? kinds[p->kind].reach(req, resp, admits, p) : 0;
}
