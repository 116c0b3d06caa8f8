/* Unit tests of the request layer, router, error envelope, cursor, crypto and database
 * error classes. No database or web server is needed. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/crypto.h"
#include "../../db/db.h"
#include "../../handlers/cursor.h"
#include "stubs.h"
#include "unit.h"

/* CGI parameter arrays are written as string literals; the code under test never writes them. */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

/* ---- helpers ---- */

/* Run one request through req_read and the API policy over the fake table (stubs.c). ENV is
 * NULL-terminated. */
static void run(char **env, const char *body, struct request *req, struct response *resp)
{
	struct stub_src src = { body ? body : "", body ? strlen(body) : 0, 0 };
	struct worker w = { 0 };

	memset(req, 0, sizeof(*req));
	memset(resp, 0, sizeof(*resp));
	req->env = env;
	stub_last_handler = NULL;
	if (req_read(req, resp, stub_read, &src) == 0)
		stub_dispatch(&w, req, resp);
}

/* run() without a body for a caller whose key fails (the route then answers 401 unless it
 * needs no key). */
static void run_unauthenticated(char **env, struct request *req, struct response *resp)
{
	stub_auth_result = -1;
	run(env, NULL, req, resp);
	stub_auth_result = 0;
}

/* run(), then only the status (the request and response released). */
static int status_of(char **env, const char *body)
{
	struct request req;
	struct response resp;
	int status;

	run(env, body, &req, &resp);
	status = resp.status;
	req_release(&req);
	resp_release(&resp);
	return status;
}

static json_t *body_json(const struct response *resp)
{
	json_t *j = json_loadb(resp->body, resp->body_len, 0, NULL);
	assert_non_null(j);
	return j;
}

static void assert_error(const struct response *resp, int status, const char *type,
			 const char *msg_part)
{
	json_t *j = body_json(resp);
	assert_int_equal(resp->status, status);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "error"), "type")),
			    type);
	if (msg_part)
		assert_non_null(strstr(
			json_string_value(json_object_get(json_object_get(j, "error"), "message")),
			msg_part));
	json_decref(j);
}

/* run(), then assert_error() on the response (the request and response released). */
static void expect_error(char **env, const char *body, int status, const char *type,
			 const char *msg_part)
{
	struct request req;
	struct response resp;

	run(env, body, &req, &resp);
	assert_error(&resp, status, type, msg_part);
	req_release(&req);
	resp_release(&resp);
}

#define BETA "HTTP_ANTHROPIC_BETA=managed-agents-2026-04-01"

/* ---- router ---- */

static void test_unknown_route_404(void **state)
{
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/nope", BETA, NULL };
	struct request req;
	struct response resp;
	json_t *j;
	(void)state;
	run(env, NULL, &req, &resp);
	assert_error(&resp, 404, "not_found_error", "/v1/nope");
	j = body_json(&resp);
	assert_string_equal(json_string_value(json_object_get(j, "request_id")), req.request_id);
	assert_int_equal(strlen(req.request_id), REQ_ID_LEN);
	assert_string_equal(resp_header_get(&resp, "x-should-retry"), "false");
	json_decref(j);
	req_release(&req);
	resp_release(&resp);
}

/* Found by tests/fuzz (fuzz_request): a message quoting a path that is not UTF-8, or cut inside
 * a character, made the envelope fail to build (a 500 "out of memory" without request_id). */
static void test_error_message_not_utf8(void **state)
{
	static char long_path[2000];
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/\xff\xc3x/y", BETA, NULL };
	char *env2[] = { "REQUEST_METHOD=GET", long_path, BETA, NULL };
	size_t n = (size_t)snprintf(long_path, sizeof(long_path), "REQUEST_URI=/v1/nopex/");
	(void)state;
	expect_error(env, NULL, 404, "not_found_error", "/v1/??x/y");
	/* "no route for GET " + path: the message is cut at 1023 bytes, inside a 2-byte é */
	while (n + 2 < sizeof(long_path)) {
		memcpy(long_path + n, "\xc3\xa9", 2);
		n += 2;
	}
	expect_error(env2, NULL, 404, "not_found_error", "/v1/nopex/\xc3\xa9");
}

static void test_wrong_method_405_allow(void **state)
{
	char *env[] = { "REQUEST_METHOD=PUT", "REQUEST_URI=/v1/environments/env_1", BETA, NULL };
	struct request req;
	struct response resp;
	(void)state;
	run(env, NULL, &req, &resp);
	assert_error(&resp, 405, "invalid_request_error", "PUT");
	assert_string_equal(resp_header_get(&resp, "allow"), "GET, POST, DELETE");
	assert_null(stub_last_handler);
	req_release(&req);
	resp_release(&resp);
}

static void test_dispatch_reaches_handler(void **state)
{
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments/env_1?beta=true",
			"QUERY_STRING=beta=true", BETA, NULL };
	struct request req;
	struct response resp;
	(void)state;
	stub_auth_result = 0;
	run(env, NULL, &req, &resp);
	assert_int_equal(resp.status, 200);
	assert_string_equal(stub_last_handler, "env_retrieve");
	assert_string_equal(req.params[0], "env_1");
	req_release(&req);
	resp_release(&resp);
}

static void test_auth_failure_stops_dispatch(void **state)
{
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments", BETA, NULL };
	struct request req;
	struct response resp;
	(void)state;
	run_unauthenticated(env, &req, &resp);
	assert_error(&resp, 401, "authentication_error", NULL);
	assert_null(stub_last_handler);
	req_release(&req);
	resp_release(&resp);
}

static void test_beta_header_required(void **state)
{
	char *missing[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments", NULL };
	char *other[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments",
			  "HTTP_ANTHROPIC_BETA=foo, managed-agents-2026-04-01x", NULL };
	char *listed[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments",
			   "HTTP_ANTHROPIC_BETA=foo,  managed-agents-2026-04-01 ,bar", NULL };
	char *repeated[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments",
			     "HTTP_ANTHROPIC_BETA=foo", BETA, NULL };
	(void)state;
	expect_error(missing, NULL, 400, "invalid_request_error", "anthropic-beta");
	expect_error(other, NULL, 400, "invalid_request_error", "anthropic-beta");
	assert_int_equal(status_of(listed, NULL), 200);
	assert_int_equal(status_of(repeated, NULL), 200);
}

static void test_version_header(void **state)
{
	char *old[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments", BETA,
			"HTTP_ANTHROPIC_VERSION=2023-06-01", NULL };
	char *new[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments", BETA,
			"HTTP_ANTHROPIC_VERSION=2026-10-21", NULL };
	char *bad[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments", BETA,
			"HTTP_ANTHROPIC_VERSION=2020-01-01", NULL };
	(void)state;
	assert_int_equal(status_of(old, NULL), 200);
	assert_int_equal(status_of(new, NULL), 200);
	expect_error(bad, NULL, 400, "invalid_request_error", "anthropic-version");
}

static void test_health_needs_no_key_or_beta(void **state)
{
	char *env[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/healthz", NULL };
	struct request req;
	struct response resp;
	(void)state;
	run_unauthenticated(env, &req, &resp);
	assert_int_equal(resp.status, 200);
	assert_string_equal(stub_last_handler, "health_live");
	req_release(&req);
	resp_release(&resp);
}

/* Apache/lighttpd error redirects (hosting/): REDIRECT_STATUS 4xx/5xx is answered with the
 * server error's envelope without routing, auth, or reading the refused request's body. */
static void test_server_error_redirect(void **state)
{
	char *env413[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments",
			   "REDIRECT_STATUS=413", "CONTENT_LENGTH=2000000", NULL };
	char *env504[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/x", "REDIRECT_STATUS=504", NULL };
	char *env200[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/healthz", "REDIRECT_STATUS=200",
			   NULL };
	char *envbad[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/healthz", "REDIRECT_STATUS=4x3",
			   NULL };
	struct request req;
	struct response resp;
	(void)state;
	stub_auth_result = -1;
	run(env413, NULL, &req, &resp);
	assert_error(&resp, 413, "request_too_large",
		     "request body exceeds the 1 MiB (1048576 bytes) limit");
	assert_null(stub_last_handler);
	assert_string_equal(resp_header_get(&resp, "x-should-retry"), "false");
	req_release(&req);
	resp_release(&resp);
	run(env504, NULL, &req, &resp);
	assert_error(&resp, 504, "api_error", "in time");
	assert_string_equal(resp_header_get(&resp, "x-should-retry"), "true");
	req_release(&req);
	resp_release(&resp);
	/* not an error redirect (mod_rewrite's internal redirects say 200), or malformed: routed */
	assert_int_equal(status_of(env200, NULL), 200);
	run(envbad, NULL, &req, &resp);
	assert_int_equal(resp.status, 200);
	stub_auth_result = 0;
	req_release(&req);
	resp_release(&resp);
}

/* run() without a body; the request's path must be PATH. */
static void expect_path(char **env, const char *path)
{
	struct request req;
	struct response resp;

	run(env, NULL, &req, &resp);
	assert_string_equal(req.path, path);
	req_release(&req);
	resp_release(&resp);
}

/* The binary mapped to a URL (Apache .htaccess: /~alice/t/api.fcgi/v1/...): the path is
 * REQUEST_URI less SCRIPT_NAME, only when PATH_INFO says the server split it. */
static void test_script_name_prefix(void **state)
{
	char *split[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/~alice/t/api.fcgi/v1/x%2Fy?limit=1",
			  "SCRIPT_NAME=/~alice/t/api.fcgi", "PATH_INFO=/v1/x/y", NULL };
	char *whole[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments",
			  "SCRIPT_NAME=", "PATH_INFO=/v1/environments", NULL };
	char *nginx[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments",
			  "SCRIPT_NAME=/v1/environments", NULL };
	char *notprefix[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/v1/environments",
			      "SCRIPT_NAME=/v1", "PATH_INFO=/other", NULL };
	/* %00 decodes to no byte PATH_INFO can hold: the comparison stops there rather than
	 * match PATH_INFO's terminator and read on (into the second NUL here, which made the old
	 * comparison succeed) */
	char nul_info[] = "PATH_INFO=/v1/environments\0\0";
	char *nul[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/s/v1/environments%00", "SCRIPT_NAME=/s",
			nul_info, NULL };
	struct request req;
	struct response resp;
	(void)state;
	run(split, NULL, &req, &resp);
	assert_string_equal(req.path, "/v1/x%2Fy");
	assert_string_equal(req_query(&req, "limit"), "1");
	req_release(&req);
	resp_release(&resp);
	expect_path(whole, "/v1/environments");
	expect_path(nginx, "/v1/environments");
	/* SCRIPT_NAME not followed by '/' in the URI: untouched */
	expect_path(notprefix, "/v1/environments");
	expect_path(nul, "/s/v1/environments%00");
}

/* ---- body reading ---- */

/* Fill ENV with the CGI variables of POST /v1/environments with the beta header and the line
 * CONTENT_LENGTH ("CONTENT_LENGTH=N"); returns ENV. */
#define POST_ENV_LEN 5
static char **post_env(char *env[POST_ENV_LEN], const char *content_length)
{
	env[0] = "REQUEST_METHOD=POST";
	env[1] = "REQUEST_URI=/v1/environments";
	env[2] = BETA;
	env[3] = (char *)content_length;
	env[4] = NULL;
	return env;
}

/* expect_error() on BODY posted as post_env() says. */
static void expect_post_error(const char *content_length, const char *body, int status,
			      const char *type, const char *msg_part)
{
	char *env[POST_ENV_LEN];

	expect_error(post_env(env, content_length), body, status, type, msg_part);
}

static void test_body_json_rules(void **state)
{
	char *archive[] = { "REQUEST_METHOD=POST", "REQUEST_URI=/v1/environments/env_1/archive",
			    BETA, "CONTENT_LENGTH=", NULL };
	struct request req;
	struct response resp;
	(void)state;
	expect_post_error("CONTENT_LENGTH=16", "{\"a\":1,\"a\":2}   ", 400, "invalid_request_error",
			  "JSON");
	expect_post_error("CONTENT_LENGTH=2", "[]", 400, "invalid_request_error", "object");
	expect_post_error("CONTENT_LENGTH=", NULL, 400, "invalid_request_error",
			  "body is required");
	run(archive, NULL, &req, &resp);
	assert_int_equal(resp.status, 200);
	assert_string_equal(stub_last_handler, "env_archive");
	req_release(&req);
	resp_release(&resp);
}

static void test_content_length_strict(void **state)
{
	char *big[POST_ENV_LEN];
	struct request req;
	struct response resp;
	(void)state;
	expect_post_error("CONTENT_LENGTH=12a", "{}", 400, "invalid_request_error",
			  "Content-Length");
	expect_post_error("CONTENT_LENGTH=-1", "{}", 400, "invalid_request_error",
			  "Content-Length");
	expect_post_error("CONTENT_LENGTH=10", "{}", 400, "invalid_request_error", "shorter");
	run(post_env(big, "CONTENT_LENGTH=1048577"), "{}", &req, &resp);
	/* the words of nginx's page and of the web server's 413 (route_server_error) */
	assert_error(&resp, 413, "request_too_large",
		     "request body exceeds the 1 MiB (1048576 bytes) limit");
	assert_null(req.body);
	req_release(&req);
	resp_release(&resp);
	expect_post_error("CONTENT_LENGTH=99999999999999999999999", "{}", 413, "request_too_large",
			  NULL);
}

static void test_request_id_from_nginx_or_new(void **state)
{
	char *given[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/healthz",
			  "REQUEST_ID=req_abcdefghijklmnopqrstuvwx", NULL };
	char *bogus[] = { "REQUEST_METHOD=GET", "REQUEST_URI=/healthz", "REQUEST_ID=req_x", NULL };
	struct request req;
	struct response resp;
	(void)state;
	run(given, NULL, &req, &resp);
	assert_string_equal(req.request_id, "req_abcdefghijklmnopqrstuvwx");
	req_release(&req);
	resp_release(&resp);
	run(bogus, NULL, &req, &resp);
	assert_int_equal(strlen(req.request_id), REQ_ID_LEN);
	assert_string_not_equal(req.request_id, "req_x");
	req_release(&req);
	resp_release(&resp);
}

/* ---- headers and query ---- */

static void test_header_parsing(void **state)
{
	char *env[] = { "HTTP_ANTHROPIC_BETA=a", "HTTP_X=1", "HTTP_ANTHROPIC_BETA=b", NULL };
	struct request req = { .env = env };
	char out[8], small[3];
	(void)state;
	assert_int_equal(req_header_all(&req, "HTTP_ANTHROPIC_BETA", out, sizeof(out)), 2);
	assert_string_equal(out, "a, b");
	assert_int_equal(req_header_all(&req, "HTTP_ANTHROPIC_BETA", small, sizeof(small)), -1);
	assert_int_equal(req_header_all(&req, "HTTP_NONE", out, sizeof(out)), 0);
	assert_string_equal(req_env(&req, "HTTP_X"), "1");
	assert_null(req_env(&req, "HTTP"));
	assert_true(header_list_has(" x ,y", "x"));
	assert_false(header_list_has("xy", "x"));
}

static void test_query_parsing(void **state)
{
	struct request req = { 0 };
	(void)state;
	assert_int_equal(req_parse_query(&req, "limit=10&page=a%2Bb&x=1+2&flag"), 0);
	assert_string_equal(req_query(&req, "limit"), "10");
	assert_string_equal(req_query(&req, "page"), "a+b");
	assert_string_equal(req_query(&req, "x"), "1 2");
	assert_string_equal(req_query(&req, "flag"), "");
	req_release(&req);
	assert_int_equal(req_parse_query(&req, "a=%zz"), -1);
	req_release(&req);
	assert_int_equal(req_parse_query(&req, "a=%4"), -1);
	req_release(&req);
	assert_int_equal(req_parse_query(&req, "a=%00"), -1);
	req_release(&req);
	assert_int_equal(req_parse_query(&req, "a=1&a=2"), -1);
	req_release(&req);
}

/* ---- error mapping ---- */

static void test_error_mapping(void **state)
{
	static const struct {
		int status;
		const char *type, *retry, *retry_after;
	} cases[] = {
		{ 400, "invalid_request_error", "false", NULL },
		{ 401, "authentication_error", "false", NULL },
		{ 403, "permission_error", "false", NULL },
		{ 404, "not_found_error", "false", NULL },
		{ 405, "invalid_request_error", "false", NULL },
		{ 409, "conflict_error", "false", NULL },
		{ 413, "request_too_large", "false", NULL },
		{ 422, "invalid_request_error", "false", NULL },
		{ 429, "rate_limit_error", "true", "1" },
		{ 500, "api_error", "false", NULL },
		{ 503, "overloaded_error", "true", "1" },
	};
	struct request req = { .request_id = "req_abcdefghijklmnopqrstuvwx" };
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct response resp = { 0 };
		json_t *j;
		resp_error(&resp, &req, cases[i].status, i == 0 ? "environment_archived" : NULL,
			   "m");
		assert_error(&resp, cases[i].status, cases[i].type, "m");
		assert_string_equal(resp_header_get(&resp, "x-should-retry"), cases[i].retry);
		if (cases[i].retry_after)
			assert_string_equal(resp_header_get(&resp, "retry-after"),
					    cases[i].retry_after);
		else
			assert_null(resp_header_get(&resp, "retry-after"));
		j = body_json(&resp);
		if (i == 0)
			assert_string_equal(
				json_string_value(json_object_get(
					json_object_get(json_object_get(j, "error"), "details"),
					"error_code")),
				"environment_archived");
		else
			assert_null(json_object_get(json_object_get(j, "error"), "details"));
		json_decref(j);
		resp_release(&resp);
	}
}

/* ---- crypto and cursor ---- */

static void test_sha256_vectors(void **state)
{
	unsigned char out[SHA256_LEN];
	char hex[65];
	(void)state;
	sha256("abc", 3, out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256("", 0, out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* RFC 4231 test case 2 */
	hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, out);
	hex_encode(out, SHA256_LEN, hex);
	assert_string_equal(hex,
			    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_ids(void **state)
{
	char id[32], other[32];
	(void)state;
	assert_int_equal(random_id(id, sizeof(id), "env_", ID_RANDOM_LEN), 0);
	assert_int_equal(strlen(id), 28);
	assert_int_equal(
		strspn(id + 4, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
		24);
	assert_int_equal(random_id(other, sizeof(other), "env_", ID_RANDOM_LEN), 0);
	assert_string_not_equal(id, other);
	assert_int_equal(random_id(id, 10, "env_", ID_RANDOM_LEN), -1);
}

static void test_cursor(void **state)
{
	const unsigned char key[] = "0123456789abcdef0123456789abcdef";
	char cur[CURSOR_MAX], created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX];
	(void)state;
	assert_int_equal(
		cursor_make(key, 32, "env", "a0", "2026-01-01 00:00:00.000001", "env_x", cur), 0);
	assert_int_equal(cursor_parse(key, 32, "env", "a0", cur, created, id), CURSOR_OK);
	assert_string_equal(created, "2026-01-01 00:00:00.000001");
	assert_string_equal(id, "env_x");
	assert_int_equal(cursor_parse(key, 32, "env", "a1", cur, created, id), CURSOR_OTHER_FILTER);
	assert_int_equal(cursor_parse(key, 32, "sesn", "a0", cur, created, id), CURSOR_FORGED);
	assert_int_equal(cursor_parse((const unsigned char *)"another key.....................", 32,
				      "env", "a0", cur, created, id),
			 CURSOR_FORGED);
	cur[3] = cur[3] == 'A' ? 'B' : 'A';
	assert_int_equal(cursor_parse(key, 32, "env", "a0", cur, created, id), CURSOR_FORGED);
	assert_int_equal(cursor_parse(key, 32, "env", "a0", "garbage", created, id), CURSOR_FORGED);
	assert_int_equal(cursor_parse(key, 32, "env", "a0", "", created, id), CURSOR_FORGED);
	assert_int_equal(cursor_parse(key, 32, "env", "a0", ".", created, id), CURSOR_FORGED);
}

/* A cursor handed out before libsodium computed the MAC (the hand-written HMAC-SHA256 and
 * base64url, checked against Python's hmac and base64) is still made the same and still
 * parses: clients hold cursors across an upgrade. */
static void test_cursor_stored(void **state)
{
	static const char made[] = "c2Vzc2lvbnxhc2MsYWdlbnRfMDF8MjAyNi0wMS0wMiAwMzowNDowNS42Nzg5MDF"
				   "8c2Vzbl8wMTIzNDU2Nzg5"
				   "QUJDREVGYWJjZGVmZ2g.7OpiGQcQtvqv5PdocfaO_Q";
	unsigned char key[SHA256_LEN];
	char cur[CURSOR_MAX], created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX];
	(void)state;

	for (int i = 0; i < SHA256_LEN; i++)
		key[i] = (unsigned char)(i * 7 + 3);
	assert_int_equal(cursor_make(key, sizeof(key), "session", "asc,agent_01",
				     "2026-01-02 03:04:05.678901", "sesn_0123456789ABCDEFabcdefgh",
				     cur),
			 0);
	assert_string_equal(cur, made);
	assert_int_equal(
		cursor_parse(key, sizeof(key), "session", "asc,agent_01", made, created, id),
		CURSOR_OK);
	assert_string_equal(created, "2026-01-02 03:04:05.678901");
	assert_string_equal(id, "sesn_0123456789ABCDEFabcdefgh");
}

UNIT_MAIN(UNIT_TESTS(test_unknown_route_404, test_error_message_not_utf8,
		     test_wrong_method_405_allow, test_dispatch_reaches_handler,
		     test_auth_failure_stops_dispatch, test_beta_header_required,
		     test_version_header, test_health_needs_no_key_or_beta,
		     test_server_error_redirect, test_script_name_prefix, test_body_json_rules,
		     test_content_length_strict, test_request_id_from_nginx_or_new,
		     test_header_parsing, test_query_parsing, test_error_mapping,
		     test_sha256_vectors, test_ids, test_cursor, test_cursor_stored))
