/* http/router.c on its own: a two-line table of its own entry type, no handlers, no policy. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "../../http/router.h"
#include "unit.h"

/* A table entry of the caller's own: the router reads only the leading route_pattern. */
struct fake_route {
	struct route_pattern route;
	int tag;
};

static const struct fake_route table[] = {
	{ { "GET", "/v1/things/{id}" }, 1 },
	{ { "POST", "/v1/things/{id}/parts/{part}" }, 2 },
};

/* route_find for METHOD PATH: the entry's tag, or the status it answered. */
static int find(const char *method, const char *path, struct request *req, struct response *resp)
{
	const struct fake_route *r;

	memset(req, 0, sizeof(*req));
	memset(resp, 0, sizeof(*resp));
	snprintf(req->method, sizeof(req->method), "%s", method);
	snprintf(req->path, sizeof(req->path), "%s", path);
	r = route_find(table, sizeof(table) / sizeof(table[0]), sizeof(table[0]), req, resp);
	return r ? r->tag : -resp->status;
}

static void test_match_captures(void **state)
{
	struct request req = { 0 };

	(void)state;
	assert_true(route_match("/v1/x/{id}/archive", "/v1/x/env_1/archive", &req));
	assert_int_equal(req.nparams, 1);
	assert_string_equal(req.params[0], "env_1");
	assert_false(route_match("/v1/x/{id}", "/v1/x/", &req));
	assert_false(route_match("/v1/x/{id}", "/v1/x/a/b", &req));
	assert_false(route_match("/v1/x", "/v1/xy", &req));
}

static void test_find(void **state)
{
	struct request req;
	struct response resp;

	(void)state;
	assert_int_equal(find("GET", "/v1/things/t_1", &req, &resp), 1);
	assert_int_equal(req.nparams, 1);
	assert_string_equal(req.params[0], "t_1");
	assert_null(resp.body);
	assert_int_equal(find("POST", "/v1/things/t_2/parts/p_3", &req, &resp), 2);
	assert_int_equal(req.nparams, 2);
	assert_string_equal(req.params[0], "t_2");
	assert_string_equal(req.params[1], "p_3");
	resp_release(&resp);

	/* no pattern matches: 404 naming the request */
	assert_int_equal(find("GET", "/v1/nothing", &req, &resp), -404);
	assert_non_null(strstr(resp.body, "no route for GET /v1/nothing"));
	resp_release(&resp);

	/* the path matches under another method: 405 with Allow */
	assert_int_equal(find("DELETE", "/v1/things/t_1", &req, &resp), -405);
	assert_string_equal(resp_header_get(&resp, "allow"), "GET");
	assert_non_null(strstr(resp.body, "method DELETE is not allowed"));
	resp_release(&resp);
	assert_int_equal(find("GET", "/v1/things/t_2/parts/p_3", &req, &resp), -405);
	assert_string_equal(resp_header_get(&resp, "allow"), "POST");
	resp_release(&resp);
}

static void test_header_list(void **state)
{
	(void)state;
	assert_true(header_list_has("a, b ,c", "b"));
	assert_true(header_list_has("b", "b"));
	assert_false(header_list_has("bb, a", "b"));
	assert_false(header_list_has("", "b"));
	assert_false(header_list_has(NULL, "b"));
}

static void test_server_error(void **state)
{
	struct request req = { 0 };
	struct response resp = { 0 };

	(void)state;
	assert_false(route_server_error(&req, &resp));
	assert_null(resp.body);
	req.server_error = 504;
	assert_true(route_server_error(&req, &resp));
	assert_int_equal(resp.status, 504);
	assert_string_equal(resp_header_get(&resp, "x-should-retry"), "true");
	resp_release(&resp);
	req.server_error = 499; /* not in the table: its status, retried as a 4xx is not */
	assert_true(route_server_error(&req, &resp));
	assert_int_equal(resp.status, 499);
	assert_string_equal(resp_header_get(&resp, "x-should-retry"), "false");
	resp_release(&resp);
}

UNIT_MAIN(cmocka_unit_test(test_match_captures), cmocka_unit_test(test_find),
	  cmocka_unit_test(test_header_list), cmocka_unit_test(test_server_error))
