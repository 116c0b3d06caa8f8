/* Unit tests of handlers/auth.c: each kind of credential found by its prefix and looked up by its
 * own lookup, which kinds a worker remembers, the workspace header, and what each kind reaches
 * on the routes that admit it. The three lookups are wrapped (-Wl,--wrap) by a table of known
 * keys; no database is contacted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "../../common/config.h"
#include "../../db/keys.h"
#include "../../db/work.h"
#include "../../handlers/dispatch.h"
#include "unit.h"

/* CGI parameter arrays are written as string literals; the code under test never writes them. */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

#define WS_KEY "trm_workspacekey0000000000000000000000000000"
#define ENV_KEY "trmenv_environmentkey000000000000000000000000"
#define TOKEN "trmst_sessionstoken00000000000000000000000000"

static int lookups;		 /* calls of the three lookups */
static enum db_status fail_with; /* what the next lookup returns (DB_OK: it answers) */

/* A lookup of HASH, counted: *FOUND (and the return) is 1 when HASH is KEY's (the one key each
 * lookup knows) and no failure is set. */
static int lookup(struct db *db, const unsigned char hash[SHA256_LEN], const char *key, int *found)
{
	unsigned char h[SHA256_LEN];

	(void)db;
	lookups++;
	sha256(key, strlen(key), h);
	*found = !fail_with && !memcmp(h, hash, SHA256_LEN);
	return *found;
}

enum db_status __wrap_keys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				  struct key_identity *out, int *found)
{
	if (lookup(db, hash, WS_KEY, found)) {
		snprintf(out->key_id, out->key_id_sz, "apikey_1");
		snprintf(out->workspace_id, out->workspace_id_sz, "ws_1");
		snprintf(out->account_id, out->account_id_sz, "acct-a");
	}
	return fail_with;
}

enum db_status __wrap_envkeys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				     char *env_id, char *workspace_id, size_t sz, char *account,
				     size_t account_sz, int *found)
{
	if (lookup(db, hash, ENV_KEY, found)) {
		snprintf(env_id, sz, "env_1");
		snprintf(workspace_id, sz, "ws_1");
		snprintf(account, account_sz, "acct-a");
	}
	return fail_with;
}

enum db_status __wrap_worktoken_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				       char *work_id, char *env_id, char *session_id, char *ws,
				       size_t sz, char *account, size_t account_sz, int *found)
{
	if (lookup(db, hash, TOKEN, found)) {
		snprintf(work_id, sz, "work_1");
		snprintf(env_id, sz, "env_1");
		snprintf(session_id, sz, "sesn_1");
		snprintf(ws, sz, "ws_1");
		snprintf(account, account_sz, "acct-a");
	}
	return fail_with;
}

static struct config cfg;
static struct worker w;
static struct auth_principal who; /* what the last authenticate() found */

static int setup(void **state)
{
	(void)state;
	memset(&w, 0, sizeof(w));
	w.cfg = &cfg;
	w.db = db_new(&cfg); /* never connected: the wrapped lookups are the database */
	memset(&who, 0, sizeof(who));
	lookups = 0;
	fail_with = DB_OK;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	db_free(w.db);
	return 0;
}

/* The routes of the real table the cases use, by what they admit. */
#define WORKSPACE_ROUTE ROUTE_AUTH
#define SESSION_ROUTE (ROUTE_AUTH | ROUTE_WORK_TOKEN)		   /* GET /v1/sessions/{id} */
#define QUEUE_ROUTE (ROUTE_AUTH | ROUTE_ENV_KEY)		   /* GET .../work/poll */
#define ITEM_ROUTE (ROUTE_AUTH | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN) /* POST .../{work_id}/ack */

/* The CGI parameters of the requests: each credential as a client sends it. */
static char *ws_key[] = { "HTTP_X_API_KEY=" WS_KEY, "REMOTE_ADDR=10.0.0.2", NULL };
static char *ws_bearer[] = { "HTTP_AUTHORIZATION=BEARER  " WS_KEY, NULL };
static char *ws_other_header[] = { "HTTP_X_API_KEY=" WS_KEY, "HTTP_ANTHROPIC_WORKSPACE_ID=ws_2",
				   NULL };
static char *env_key[] = { "HTTP_X_API_KEY=" ENV_KEY, "REMOTE_ADDR=10.0.0.4", NULL };
static char *token[] = { "HTTP_AUTHORIZATION=Bearer " TOKEN, "REMOTE_ADDR=10.0.0.5", NULL };

/* auth_request for ENV (NULL-terminated) on a route admitting ADMITS with captures P0 and P1
 * (NULL: fewer) into WHO; the status (0 when it passed). The response is checked to carry
 * ERROR_CODE (NULL: none) and MSG_PART in its message when it failed. */
static int authenticate(char **env, unsigned admits, const char *p0, const char *p1,
			const char *error_code, const char *msg_part)
{
	struct request req = { .method = "GET", .path = "/v1/test", .env = env };
	struct response resp = { 0 };
	json_t *j, *e;
	int status;

	req.params[0] = p0;
	req.params[1] = p1;
	req.nparams = p1 ? 2 : p0 ? 1 : 0;
	if (auth_request(&w, &req, &resp, admits, &who) == 0) {
		assert_null(resp.body);
		return 0;
	}
	status = resp.status;
	j = json_loadb(resp.body, resp.body_len, 0, NULL);
	e = json_object_get(j, "error");
	if (error_code)
		assert_string_equal(json_string_value(json_object_get(json_object_get(e, "details"),
								      "error_code")),
				    error_code);
	else
		assert_null(json_object_get(e, "details"));
	if (msg_part)
		assert_non_null(strstr(json_string_value(json_object_get(e, "message")), msg_part));
	json_decref(j);
	resp_release(&resp);
	return status;
}

/* WHO is a principal of KIND in workspace ws_1, account acct-a, whose own id (the key's; the
 * environment an environment key opens; the item a token opens) is ID. */
static void assert_who(enum auth_kind kind, const char *id)
{
	const char *own[AUTH_KINDS] = { who.key_id, who.environment_id, who.work_id };

	assert_int_equal(who.kind, kind);
	assert_string_equal(own[kind], id);
	assert_string_equal(who.workspace_id, "ws_1");
	assert_string_equal(who.account_id, "acct-a");
}

static void test_no_key(void **state)
{
	char *none[] = { "REMOTE_ADDR=10.0.0.1", NULL };
	char *other_scheme[] = { "HTTP_AUTHORIZATION=Basic " WS_KEY, NULL };
	char *too_long[] = {
		"HTTP_X_API_KEY=trm_"
		"0123456789012345678901234567890123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789012345678901234567890123456789"
		"01234567890123456789012345678901234567890123456789",
		NULL
	};
	(void)state;

	assert_int_equal(authenticate(none, WORKSPACE_ROUTE, NULL, NULL, NULL, "missing"), 401);
	assert_int_equal(authenticate(other_scheme, WORKSPACE_ROUTE, NULL, NULL, NULL, "missing"),
			 401);
	assert_true(strlen(too_long[0]) - strlen("HTTP_X_API_KEY=") > KEY_MAX_LEN);
	assert_int_equal(authenticate(too_long, WORKSPACE_ROUTE, NULL, NULL, NULL, "invalid"), 401);
	assert_int_equal(lookups, 0);
}

static void test_workspace_key(void **state)
{
	(void)state;
	assert_int_equal(authenticate(ws_key, WORKSPACE_ROUTE, "env_9", NULL, NULL, NULL), 0);
	assert_who(AUTH_WORKSPACE_KEY, "apikey_1");
	assert_int_equal(lookups, 1);
	/* remembered by the worker: no second lookup, however it is presented */
	memset(&who, 0, sizeof(who));
	assert_int_equal(authenticate(ws_bearer, SESSION_ROUTE, "sesn_9", NULL, NULL, NULL), 0);
	assert_who(AUTH_WORKSPACE_KEY, "apikey_1");
	assert_int_equal(lookups, 1);
	assert_int_equal(
		authenticate(ws_other_header, WORKSPACE_ROUTE, NULL, NULL, NULL, "workspace"), 403);
}

static void test_unknown_and_database_failure(void **state)
{
	char *unknown[] = { "HTTP_X_API_KEY=trm_unknown", "REMOTE_ADDR=10.0.0.3", NULL };
	(void)state;

	assert_int_equal(authenticate(unknown, WORKSPACE_ROUTE, NULL, NULL, NULL, "invalid"), 401);
	/* the guard remembers it unknown: refused again without a lookup */
	assert_int_equal(authenticate(unknown, WORKSPACE_ROUTE, NULL, NULL, NULL, "invalid"), 401);
	assert_int_equal(lookups, 1);
	fail_with = DB_GONE;
	assert_int_equal(authenticate(env_key, QUEUE_ROUTE, "env_1", NULL, NULL, NULL), 503);
}

static void test_environment_key(void **state)
{
	(void)state;
	assert_int_equal(authenticate(env_key, QUEUE_ROUTE, "env_1", NULL, NULL, NULL), 0);
	assert_who(AUTH_ENVIRONMENT_KEY, "env_1");
	assert_int_equal(authenticate(env_key, ITEM_ROUTE, "env_1", "work_7", NULL, NULL), 0);
	/* never remembered: each request looked it up (revocation is immediate) */
	assert_int_equal(lookups, 2);
	assert_int_equal(authenticate(env_key, QUEUE_ROUTE, "env_2", NULL, "environment_not_found",
				      "environment 'env_2' not found"),
			 404);
	assert_int_equal(authenticate(env_key, WORKSPACE_ROUTE, "env_1", NULL, NULL, "this key"),
			 404);
	assert_int_equal(authenticate(env_key, SESSION_ROUTE, "sesn_1", NULL, NULL, "this key"),
			 404);
}

static void test_sessions_token(void **state)
{
	(void)state;
	/* its item on the work routes */
	assert_int_equal(authenticate(token, ITEM_ROUTE, "env_1", "work_1", NULL, NULL), 0);
	assert_who(AUTH_SESSIONS_TOKEN, "work_1");
	assert_string_equal(who.environment_id, "env_1");
	assert_string_equal(who.session_id, "sesn_1");
	assert_int_equal(
		authenticate(token, ITEM_ROUTE, "env_1", "work_2", NULL, "work 'work_2' not found"),
		404);
	assert_int_equal(
		authenticate(token, ITEM_ROUTE, "env_2", "work_1", "environment_not_found", NULL),
		404);
	/* its session on the session routes */
	assert_int_equal(authenticate(token, SESSION_ROUTE, "sesn_1", NULL, NULL, NULL), 0);
	assert_int_equal(authenticate(token, SESSION_ROUTE, "sesn_2", NULL, NULL,
				      "session 'sesn_2' not found"),
			 404);
	/* nothing else: the queue's routes, the workspace's */
	assert_int_equal(authenticate(token, QUEUE_ROUTE, "env_1", NULL, NULL, "this key"), 404);
	assert_int_equal(authenticate(token, WORKSPACE_ROUTE, NULL, NULL, NULL, "this key"), 404);
	assert_int_equal(lookups, 7);
}

UNIT_MAIN(cmocka_unit_test_setup_teardown(test_no_key, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_workspace_key, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_unknown_and_database_failure, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_environment_key, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_sessions_token, setup, teardown))
