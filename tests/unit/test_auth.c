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

/* The known keys: KEY's hash finds the principal written by FILL. */
static int known(const unsigned char hash[SHA256_LEN], const char *key)
{
	unsigned char h[SHA256_LEN];

	sha256(key, strlen(key), h);
	return !memcmp(h, hash, SHA256_LEN);
}

enum db_status __wrap_keys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				  struct key_identity *out, int *found);
enum db_status __wrap_keys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				  struct key_identity *out, int *found)
{
	(void)db;
	lookups++;
	*found = !fail_with && known(hash, WS_KEY);
	if (*found) {
		snprintf(out->key_id, out->key_id_sz, "apikey_1");
		snprintf(out->workspace_id, out->workspace_id_sz, "ws_1");
		snprintf(out->account_id, out->account_id_sz, "acct-a");
	}
	return fail_with;
}

enum db_status __wrap_envkeys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				     char *env_id, char *workspace_id, size_t sz, char *account,
				     size_t account_sz, int *found);
enum db_status __wrap_envkeys_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				     char *env_id, char *workspace_id, size_t sz, char *account,
				     size_t account_sz, int *found)
{
	(void)db;
	lookups++;
	*found = !fail_with && known(hash, ENV_KEY);
	if (*found) {
		snprintf(env_id, sz, "env_1");
		snprintf(workspace_id, sz, "ws_1");
		snprintf(account, account_sz, "acct-a");
	}
	return fail_with;
}

enum db_status __wrap_worktoken_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				       char *work_id, char *env_id, char *session_id, char *ws,
				       size_t sz, char *account, size_t account_sz, int *found);
enum db_status __wrap_worktoken_lookup(struct db *db, const unsigned char hash[SHA256_LEN],
				       char *work_id, char *env_id, char *session_id, char *ws,
				       size_t sz, char *account, size_t account_sz, int *found)
{
	(void)db;
	lookups++;
	*found = !fail_with && known(hash, TOKEN);
	if (*found) {
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

static int setup(void **state)
{
	(void)state;
	memset(&w, 0, sizeof(w));
	w.cfg = &cfg;
	w.db = db_new(&cfg); /* never connected: the wrapped lookups are the database */
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

/* auth_request for ENV (NULL-terminated) on a route admitting ADMITS with captures P0 and P1
 * (NULL: fewer); the status (0 when it passed) and *P. The response is checked to carry
 * ERROR_CODE (NULL: none) and MSG_PART in its message when it failed. */
static int authenticate(char **env, unsigned admits, const char *p0, const char *p1,
			struct auth_principal *p, const char *error_code, const char *msg_part)
{
	struct request req;
	struct response resp;
	int status;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	snprintf(req.method, sizeof(req.method), "GET");
	snprintf(req.path, sizeof(req.path), "/v1/test");
	req.env = env;
	req.params[0] = p0;
	req.params[1] = p1;
	req.nparams = p1 ? 2 : p0 ? 1 : 0;
	if (auth_request(&w, &req, &resp, admits, p) == 0) {
		assert_null(resp.body);
		return 0;
	}
	status = resp.status;
	{
		json_t *j = json_loadb(resp.body, resp.body_len, 0, NULL), *e;
		const char *code;

		e = json_object_get(j, "error");
		code = json_string_value(
			json_object_get(json_object_get(e, "details"), "error_code"));
		if (error_code)
			assert_string_equal(code, error_code);
		else
			assert_null(code);
		if (msg_part)
			assert_non_null(
				strstr(json_string_value(json_object_get(e, "message")), msg_part));
		json_decref(j);
	}
	resp_release(&resp);
	return status;
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
	struct auth_principal p;
	(void)state;

	assert_int_equal(authenticate(none, WORKSPACE_ROUTE, NULL, NULL, &p, NULL, "missing"), 401);
	assert_int_equal(
		authenticate(other_scheme, WORKSPACE_ROUTE, NULL, NULL, &p, NULL, "missing"), 401);
	assert_true(strlen(too_long[0]) - strlen("HTTP_X_API_KEY=") > KEY_MAX_LEN);
	assert_int_equal(authenticate(too_long, WORKSPACE_ROUTE, NULL, NULL, &p, NULL, "invalid"),
			 401);
	assert_int_equal(lookups, 0);
}

static void test_workspace_key(void **state)
{
	char *key[] = { "HTTP_X_API_KEY=" WS_KEY, "REMOTE_ADDR=10.0.0.2", NULL };
	char *bearer[] = { "HTTP_AUTHORIZATION=BEARER  " WS_KEY, NULL };
	char *header[] = { "HTTP_X_API_KEY=" WS_KEY, "HTTP_ANTHROPIC_WORKSPACE_ID=ws_2", NULL };
	struct auth_principal p;
	(void)state;

	assert_int_equal(authenticate(key, WORKSPACE_ROUTE, "env_9", NULL, &p, NULL, NULL), 0);
	assert_int_equal(p.kind, AUTH_WORKSPACE_KEY);
	assert_string_equal(p.key_id, "apikey_1");
	assert_string_equal(p.workspace_id, "ws_1");
	assert_string_equal(p.account_id, "acct-a");
	assert_int_equal(lookups, 1);
	/* remembered by the worker: no second lookup, however it is presented */
	memset(&p, 0, sizeof(p));
	assert_int_equal(authenticate(bearer, SESSION_ROUTE, "sesn_9", NULL, &p, NULL, NULL), 0);
	assert_string_equal(p.workspace_id, "ws_1");
	assert_int_equal(lookups, 1);
	assert_int_equal(authenticate(header, WORKSPACE_ROUTE, NULL, NULL, &p, NULL, "workspace"),
			 403);
}

static void test_unknown_and_database_failure(void **state)
{
	char *unknown[] = { "HTTP_X_API_KEY=trm_unknown", "REMOTE_ADDR=10.0.0.3", NULL };
	char *env_key[] = { "HTTP_X_API_KEY=" ENV_KEY, "REMOTE_ADDR=10.0.0.3", NULL };
	struct auth_principal p;
	(void)state;

	assert_int_equal(authenticate(unknown, WORKSPACE_ROUTE, NULL, NULL, &p, NULL, "invalid"),
			 401);
	/* the guard remembers it unknown: refused again without a lookup */
	assert_int_equal(authenticate(unknown, WORKSPACE_ROUTE, NULL, NULL, &p, NULL, "invalid"),
			 401);
	assert_int_equal(lookups, 1);
	fail_with = DB_GONE;
	assert_int_equal(authenticate(env_key, QUEUE_ROUTE, "env_1", NULL, &p, NULL, NULL), 503);
}

static void test_environment_key(void **state)
{
	char *key[] = { "HTTP_X_API_KEY=" ENV_KEY, "REMOTE_ADDR=10.0.0.4", NULL };
	struct auth_principal p;
	(void)state;

	assert_int_equal(authenticate(key, QUEUE_ROUTE, "env_1", NULL, &p, NULL, NULL), 0);
	assert_int_equal(p.kind, AUTH_ENVIRONMENT_KEY);
	assert_string_equal(p.environment_id, "env_1");
	assert_string_equal(p.workspace_id, "ws_1");
	assert_int_equal(authenticate(key, ITEM_ROUTE, "env_1", "work_7", &p, NULL, NULL), 0);
	/* never remembered: each request looked it up (revocation is immediate) */
	assert_int_equal(lookups, 2);
	assert_int_equal(authenticate(key, QUEUE_ROUTE, "env_2", NULL, &p, "environment_not_found",
				      "environment 'env_2' not found"),
			 404);
	assert_int_equal(
		authenticate(key, WORKSPACE_ROUTE, "env_1", NULL, &p, NULL, "with this key"), 404);
	assert_int_equal(
		authenticate(key, SESSION_ROUTE, "sesn_1", NULL, &p, NULL, "with this key"), 404);
}

static void test_sessions_token(void **state)
{
	char *token[] = { "HTTP_AUTHORIZATION=Bearer " TOKEN, "REMOTE_ADDR=10.0.0.5", NULL };
	struct auth_principal p;
	(void)state;

	/* its item on the work routes */
	assert_int_equal(authenticate(token, ITEM_ROUTE, "env_1", "work_1", &p, NULL, NULL), 0);
	assert_int_equal(p.kind, AUTH_SESSIONS_TOKEN);
	assert_string_equal(p.work_id, "work_1");
	assert_string_equal(p.session_id, "sesn_1");
	assert_int_equal(authenticate(token, ITEM_ROUTE, "env_1", "work_2", &p, NULL,
				      "work 'work_2' not found"),
			 404);
	assert_int_equal(authenticate(token, ITEM_ROUTE, "env_2", "work_1", &p,
				      "environment_not_found", NULL),
			 404);
	/* its session on the session routes */
	assert_int_equal(authenticate(token, SESSION_ROUTE, "sesn_1", NULL, &p, NULL, NULL), 0);
	assert_int_equal(authenticate(token, SESSION_ROUTE, "sesn_2", NULL, &p, NULL,
				      "session 'sesn_2' not found"),
			 404);
	/* nothing else: the queue's routes, the workspace's */
	assert_int_equal(authenticate(token, QUEUE_ROUTE, "env_1", NULL, &p, NULL, "with this key"),
			 404);
	assert_int_equal(
		authenticate(token, WORKSPACE_ROUTE, NULL, NULL, &p, NULL, "with this key"), 404);
	assert_int_equal(lookups, 7);
}

UNIT_MAIN(cmocka_unit_test_setup_teardown(test_no_key, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_workspace_key, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_unknown_and_database_failure, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_environment_key, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_sessions_token, setup, teardown))
