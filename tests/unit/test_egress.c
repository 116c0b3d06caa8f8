/* Unit tests of the egress policy function (common/egress.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/egress.h"
#include "../../common/packages.h"
#include "unit.h"

static const char *const registry[] = { "registry.npmjs.org", "pypi.org", NULL };

static json_t *limited(const char *hosts_json, int mcp, int pkg)
{
	json_t *n = json_pack("{s:s, s:o, s:b, s:b}", "type", "limited", "allowed_hosts",
			      json_loads(hosts_json, 0, NULL), "allow_mcp_servers", mcp,
			      "allow_package_managers", pkg);
	assert_non_null(n);
	return n;
}

static void assert_policy(json_t *policy, const char *expect_json)
{
	json_t *expect = json_loads(expect_json, 0, NULL);
	char *got = json_dumps(policy, JSON_COMPACT);
	assert_non_null(expect);
	if (!json_equal(policy, expect))
		fail_msg("policy %s, expected %s", got, expect_json);
	free(got);
	json_decref(expect);
	json_decref(policy);
}

/* The policy of a limited network (ALLOWED_HOSTS, allow_mcp_servers ALLOW_MCP,
 * allow_package_managers ALLOW_PKG) with the agent's MCP servers MCP, at install time or not
 * (INSTALL), must be EXPECT_JSON. */
static void policy_is(const char *allowed_hosts, int allow_mcp, int allow_pkg, json_t *mcp,
		      int install, const char *expect_json)
{
	json_t *n = limited(allowed_hosts, allow_mcp, allow_pkg);

	assert_policy(egress_policy(n, mcp, registry, install), expect_json);
	json_decref(n);
}

static void test_url_host(void **state)
{
	static const struct unit_out_case hosts[] = {
		{ "https://MCP.Example.com:8443/sse?x=1", 0, "mcp.example.com" },
		{ "https://user:p%40ss@tools.example.org/x", 0, "tools.example.org" },
		{ "http://a@b@10.0.0.7:80", 0, "10.0.0.7" },
		{ "http://[::1]:8080/", 0, "::1" },
		{ "https://example.com./", 0, "example.com" },
		{ "example.com", -1, NULL },
		{ "https://", -1, NULL },
		{ "https://:80/", -1, NULL },
		{ "https://[::1/", -1, NULL },
	};
	(void)state;
	unit_out_cases(egress_url_host, EGRESS_HOST_MAX + 1, hosts, UNIT_LEN(hosts));
}

static void test_unrestricted_is_null(void **state)
{
	json_t *n = json_pack("{s:s}", "type", "unrestricted");
	json_t *p = egress_policy(n, NULL, registry, 0);
	(void)state;
	assert_true(json_is_null(p));
	json_decref(p);
	p = egress_policy(n, NULL, registry, 1);
	assert_true(json_is_null(p));
	json_decref(p);
	json_decref(n);
}

static void test_explicit_hosts_sorted_deduplicated_lowercase(void **state)
{
	(void)state;
	policy_is("[\"B.example.com\", \"a.example.com\", \"b.example.com\", \"*.X.org\"]", 0, 0,
		  NULL, 0, "[\"*.x.org\", \"a.example.com\", \"b.example.com\"]");
}

static void test_mcp_hosts_only_when_allowed(void **state)
{
	json_t *mcp = json_loads("[{\"url\":\"https://u:p@MCP.example.com:8443/sse\"},"
				 "{\"url\":\"http://10.1.2.3:9000\"},"
				 "{\"url\":\"https://mcp.example.com/other\"},"
				 "{\"url\":\"not a url\"}]",
				 0, NULL);
	(void)state;
	policy_is("[\"api.example.com\"]", 0, 0, mcp, 0, "[\"api.example.com\"]");
	policy_is("[\"api.example.com\"]", 1, 0, mcp, 0,
		  "[\"10.1.2.3\", \"api.example.com\", \"mcp.example.com\"]");
	json_decref(mcp);
}

static void test_registry_hosts(void **state)
{
	(void)state;
	/* final without allow_package_managers: only what was listed */
	policy_is("[\"pypi.org\", \"api.example.com\"]", 0, 0, NULL, 0,
		  "[\"api.example.com\", \"pypi.org\"]");
	/* install time always adds the registries */
	policy_is("[\"pypi.org\", \"api.example.com\"]", 0, 0, NULL, 1,
		  "[\"api.example.com\", \"pypi.org\", \"registry.npmjs.org\"]");
	policy_is("[\"api.example.com\"]", 0, 1, NULL, 0,
		  "[\"api.example.com\", \"pypi.org\", \"registry.npmjs.org\"]");
}

static void test_default_registry_list(void **state)
{
	json_t *n = limited("[]", 0, 1);
	json_t *p = egress_policy(n, NULL, NULL, 0);
	size_t count = 0;
	(void)state;
	/* the package managers' registries (common/packages.c; their order: test_packages.c) */
	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++)
		for (const char *const *h = pkg_managers[m].registry; *h; h++)
			count++;
	assert_int_equal(count, 18);
	assert_int_equal(json_array_size(p), 18);
	assert_string_equal(json_string_value(json_array_get(p, 0)), "api.rubygems.org");
	json_decref(p);
	json_decref(n);
}

static void test_malformed(void **state)
{
	json_t *n = json_pack("{s:s}", "type", "open");
	(void)state;
	assert_null(egress_policy(n, NULL, registry, 0));
	assert_null(egress_policy(NULL, NULL, registry, 0));
	json_decref(n);
}

UNIT_MAIN(cmocka_unit_test(test_url_host), cmocka_unit_test(test_unrestricted_is_null),
	  cmocka_unit_test(test_explicit_hosts_sorted_deduplicated_lowercase),
	  cmocka_unit_test(test_mcp_hosts_only_when_allowed), cmocka_unit_test(test_registry_hosts),
	  cmocka_unit_test(test_default_registry_list), cmocka_unit_test(test_malformed))
