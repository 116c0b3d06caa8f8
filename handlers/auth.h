/* Who is calling: every kind of credential the API accepts (docs/api.md §6, Keys;
 * docs/work-queue.md), behind the one call the dispatcher makes for a route that takes a key
 * (auth_request). A kind is one row of handlers/auth.c's table: its key prefix, its lookup,
 * whether a worker may remember it, and what it may reach. A route states the kinds it admits
 * in its flags (handlers/dispatch.h: ROUTE_AUTH, ROUTE_ENV_KEY, ROUTE_WORK_TOKEN). */
#ifndef TERRARIUM_HANDLERS_AUTH_H
#define TERRARIUM_HANDLERS_AUTH_H

#include "../common/crypto.h"
#include "../http/http.h"

#define AUTH_ID_MAX 64 /* size of an id's buffer: workspace, key, environment, work, session */
#define AUTH_ACCOUNT_MAX 256

/* The kinds of credential, one row each in auth.c's table. */
enum auth_kind {
	AUTH_WORKSPACE_KEY,   /* the workspace's API, as the key's account */
	AUTH_ENVIRONMENT_KEY, /* one self_hosted environment's work routes */
	AUTH_SESSIONS_TOKEN,  /* one work item's routes and its session's (a poll's secret) */
	AUTH_KINDS,
};

/* The bit of a route's flags that admits KIND; every kind's bit. */
#define AUTH_ADMITS(kind) (1u << (kind))
#define AUTH_ADMITS_ANY (AUTH_ADMITS(AUTH_KINDS) - 1)

/* Who a request's credential is, as auth_request found it. */
struct auth_principal {
	enum auth_kind kind;
	char key_id[AUTH_ID_MAX]; /* workspace keys: apikey_... */
	char workspace_id[AUTH_ID_MAX];
	char account_id[AUTH_ACCOUNT_MAX];
	char environment_id[AUTH_ID_MAX]; /* environment keys, sessions tokens: what they open */
	char work_id[AUTH_ID_MAX];	  /* sessions tokens */
	char session_id[AUTH_ID_MAX];	  /* sessions tokens */
};

/* Principals a worker found recently, for the kinds its table lets a worker remember (workspace
 * keys). An entry is used for AUTH_CACHE_TTL_MS after its lookup and never extended, so a
 * revoked key is refused by every worker at most AUTH_CACHE_TTL_MS after `key revoke`. Unknown
 * keys are not remembered here (auth_guard.h keeps them from the database). */
#define AUTH_CACHE_SLOTS 16
#define AUTH_CACHE_TTL_MS 1000

struct auth_cache_entry {
	unsigned char hash[SHA256_LEN]; /* SHA-256 of the key, as stored */
	long long expires_ms;		/* CLOCK_MONOTONIC; 0: empty */
	struct auth_principal principal;
};

struct worker;

/* In the supervisor before the first fork: the unknown-key guard's state, which every worker
 * shares (auth_guard.h). Always 0: without shared memory each worker keeps its own (logged). */
int auth_init(void);

/* Authenticate REQ (x-api-key, or Authorization: Bearer) for a route that admits the kinds
 * ADMITS (AUTH_ADMITS bits) into P: the key's kind (its prefix), its principal (looked up, or
 * remembered in W for a kind that may be), the anthropic-workspace-id header, then what the kind
 * may reach on this route. 0, or -1 with RESP filled: 401 (no key, unknown or revoked), 403
 * (another workspace's header), 404 (a kind the route does not admit, or a path outside what
 * the credential opens), 429 (unknown-key budget), 503 (database). */
int auth_request(struct worker *w, struct request *req, struct response *resp, unsigned admits,
		 struct auth_principal *p);

#endif
