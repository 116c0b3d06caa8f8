/* Unit tests for handlers/agent_validate.c: every agent rule (docs/api.md §5 and the SDK's
 * AgentCreateParams / AgentUpdateParams) has an accepted and a refused case; refused cases
 * check the status, the error_code and that the message names the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "handlers/agent_validate.h"
#include "tests/unit/unit.h"
#include "tests/unit/unit_json.h"
#include "tests/unit/unit_verr.h"

#define MIN_BODY "\"name\":\"a\",\"model\":\"claude-opus-5-5\""

/* The definition create stores for MIN_BODY. */
static const char min_def[] = "{\"name\":\"a\",\"description\":null,\"system\":null,"
			      "\"model\":{\"id\":\"claude-opus-5-5\",\"effort\":{\"type\":\"high\"}"
			      ",\"speed\":\"standard\"},"
			      "\"mcp_servers\":[],\"tools\":[],\"skills\":[],"
			      "\"execution_identity\":{\"type\":\"service_account\"},"
			      "\"multiagent\":null,\"metadata\":{}}";

/* --- helpers ---------------------------------------------------------------------------- */

/* Create from BODY (stolen); fails unless accepted. New reference to the definition. */
static json_t *create_ok_(int line, json_t *body)
{
	struct verr err = { 0 };
	json_t *def = agent_validate_create(body, &err);

	unit_verr_ok(line, !def, &err);
	json_decref(body);
	return def;
}

static void create_err_(int line, json_t *body, int status, const char *code, const char *needle)
{
	struct verr err = { 0 };
	json_t *def = agent_validate_create(body, &err);

	unit_verr_refused(line, !def, &err, status, code, needle);
	json_decref(body);
}

/* Create { MIN_BODY, EXTRA } and compare the definition's field KEY with EXPECTED. */
static void field_is_(int line, const char *extra, const char *key, const char *expected)
{
	char text[4096];
	json_t *def;

	snprintf(text, sizeof(text), "{" MIN_BODY "%s%s}", *extra ? "," : "", extra);
	def = create_ok_(line, unit_parse(line, text));
	unit_assert_json(line, json_object_get(def, key), expected);
	json_decref(def);
}

/* Create { MIN_BODY, EXTRA }; it must be refused with 400 (CODE) naming NEEDLE. */
static void extra_bad_(int line, const char *extra, const char *code, const char *needle)
{
	char text[8192];

	if (snprintf(text, sizeof(text), "{" MIN_BODY ",%s}", extra) >= (int)sizeof(text))
		fail_msg("line %d: test body too long", line);
	create_err_(line, unit_parse(line, text), 400, code, needle);
}

#define CREATE_OK(text) create_ok_(__LINE__, unit_parse(__LINE__, text))
#define CREATE_BAD(text, needle) create_err_(__LINE__, unit_parse(__LINE__, text), 400, "", needle)
#define FIELD_IS(extra, key, expected) field_is_(__LINE__, extra, key, expected)
#define EXTRA_BAD(extra, needle) extra_bad_(__LINE__, extra, "", needle)

/* Create {"name":"a","model": MODEL} and compare the stored model with EXPECTED. */
static void model_is_(int line, const char *model, const char *expected)
{
	char text[1024];
	json_t *def;

	snprintf(text, sizeof(text), "{\"name\":\"a\",\"model\":%s}", model);
	def = create_ok_(line, unit_parse(line, text));
	unit_assert_json(line, json_object_get(def, "model"), expected);
	json_decref(def);
}
#define MODEL_IS(model, expected) model_is_(__LINE__, model, expected)

/* Update CUR with TEXT; fails unless accepted with CHANGED. New reference to the result. */
static json_t *update_ok_(int line, json_t *cur, const char *text, int expect_changed)
{
	json_t *body = unit_parse(line, text), *before = json_deep_copy(cur), *next;
	struct verr err = { 0 };
	int changed = -1;

	next = agent_validate_update(body, cur, &changed, &err);
	unit_verr_ok(line, !next, &err);
	if (changed != expect_changed)
		fail_msg("line %d: changed=%d, expected %d", line, changed, expect_changed);
	if (!json_equal(cur, before))
		fail_msg("line %d: CUR modified by update", line);
	json_decref(before);
	json_decref(body);
	return next;
}

static void update_err_(int line, json_t *cur, const char *text, int status, const char *code,
			const char *needle)
{
	json_t *body = unit_parse(line, text), *before = json_deep_copy(cur);
	struct verr err = { 0 };
	int changed = -1;

	unit_verr_refused(line, !agent_validate_update(body, cur, &changed, &err), &err, status,
			  code, needle);
	if (!json_equal(cur, before))
		fail_msg("line %d: CUR modified by a failed update", line);
	json_decref(before);
	json_decref(body);
}

#define UPDATE_OK(cur, text, changed) update_ok_(__LINE__, cur, text, changed)
#define UPDATE_BAD(cur, text, needle) update_err_(__LINE__, cur, text, 400, "", needle)

/* --- create ----------------------------------------------------------------------------- */

static void test_create_minimal(void **state)
{
	json_t *def;

	(void)state;
	def = CREATE_OK("{" MIN_BODY "}");
	assert_json(def, min_def);
	json_decref(def);
}

static void test_create_full(void **state)
{
	json_t *def;

	(void)state;
	def = CREATE_OK(
		"{\"name\":\"Research\",\"description\":\"d\",\"system\":\"be brief\","
		"\"model\":{\"id\":\"claude-sonnet-5\",\"effort\":\"low\",\"speed\":\"fast\","
		"\"inference_geo\":\"us\"},"
		"\"metadata\":{\"team\":\"data\"},"
		"\"mcp_servers\":[{\"url\":\"https://mcp.example.com/sse\",\"name\":\"docs\","
		"\"type\":\"url\"}],"
		"\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\","
		"\"enabled\":false,\"permission_policy\":{\"type\":\"always_ask\"}}],"
		"\"default_config\":{\"enabled\":true,\"permission_policy\":null}},"
		"{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"docs\"},"
		"{\"type\":\"custom\",\"name\":\"get_weather\",\"description\":\"w\","
		"\"input_schema\":{\"type\":\"object\",\"properties\":{}}}],"
		"\"skills\":[{\"type\":\"anthropic\",\"skill_id\":\"xlsx\"},"
		"{\"type\":\"custom\",\"skill_id\":\"skill_01\",\"version\":\"3\"}],"
		"\"execution_identity\":{\"type\":\"aws_role\",\"role_arn\":\"arn:aws:iam::1:role/"
		"r\"},"
		"\"multiagent\":{\"type\":\"coordinator\",\"agents\":[{\"type\":\"self\"}]}}");
	assert_json(json_object_get(def, "model"),
		    "{\"id\":\"claude-sonnet-5\",\"effort\":{\"type\":\"low\"},\"speed\":\"fast\","
		    "\"inference_geo\":\"us\"}");
	assert_json(
		json_object_get(def, "mcp_servers"),
		"[{\"type\":\"url\",\"name\":\"docs\",\"url\":\"https://mcp.example.com/sse\"}]");
	assert_int_equal(json_array_size(json_object_get(def, "tools")), 3);
	assert_int_equal(json_array_size(json_object_get(def, "skills")), 2);
	assert_json(json_object_get(def, "execution_identity"),
		    "{\"type\":\"aws_role\",\"role_arn\":\"arn:aws:iam::1:role/r\"}");
	assert_json(json_object_get(def, "metadata"), "{\"team\":\"data\"}");
	assert_string_equal(json_string_value(json_object_get(def, "system")), "be brief");
	json_decref(def);
}

static void test_create_body_and_unknown(void **state)
{
	(void)state;
	create_err_(__LINE__, unit_parse(__LINE__, "[]"), 400, "", "JSON object");
	CREATE_BAD("{" MIN_BODY ",\"bogus\":1}", "unknown field 'bogus'");
	CREATE_BAD("{" MIN_BODY ",\"version\":1}", "unknown field 'version'");
	CREATE_BAD("{" MIN_BODY ",\"bad\\u0001key\":1}", "unknown field 'bad?key'");
}

static void test_create_required(void **state)
{
	(void)state;
	CREATE_BAD("{\"model\":\"m\"}", "'name' is required");
	CREATE_BAD("{\"name\":\"a\"}", "'model' is required");
	CREATE_BAD("{}", "'name' is required");
}

static void test_name(void **state)
{
	char *n256 = unit_rep("\xc3\xa9", 256), *n257 = unit_rep("x", 257), text[1200];
	json_t *def;

	(void)state;
	snprintf(text, sizeof(text), "{\"name\":\"%s\",\"model\":\"m\"}", n256);
	def = CREATE_OK(text);
	json_decref(def);
	snprintf(text, sizeof(text), "{\"name\":\"%s\",\"model\":\"m\"}", n257);
	CREATE_BAD(text, "'name' must be a string of 1-256 characters");
	CREATE_BAD("{\"name\":\"\",\"model\":\"m\"}", "'name'");
	CREATE_BAD("{\"name\":null,\"model\":\"m\"}", "'name'");
	CREATE_BAD("{\"name\":7,\"model\":\"m\"}", "'name'");
	free(n256);
	free(n257);
}

static void test_model(void **state)
{
	char *long_id = unit_rep("m", 257), text[600];

	(void)state;
	MODEL_IS("{\"id\":\"x\"}",
		 "{\"id\":\"x\",\"effort\":{\"type\":\"high\"},\"speed\":\"standard\"}");
	MODEL_IS("{\"id\":\"x\",\"effort\":{\"type\":\"max\"}}",
		 "{\"id\":\"x\",\"effort\":{\"type\":\"max\"},\"speed\":\"standard\"}");
	MODEL_IS("{\"id\":\"x\",\"effort\":null,\"speed\":null,\"inference_geo\":null}",
		 "{\"id\":\"x\",\"effort\":{\"type\":\"high\"},\"speed\":\"standard\"}");
	CREATE_BAD("{\"name\":\"a\",\"model\":null}", "'model'");
	CREATE_BAD("{\"name\":\"a\",\"model\":5}", "'model' must be a model id string");
	CREATE_BAD("{\"name\":\"a\",\"model\":\"\"}", "'model' must be a string of 1-256");
	CREATE_BAD("{\"name\":\"a\",\"model\":{}}", "'model.id'");
	CREATE_BAD("{\"name\":\"a\",\"model\":{\"id\":3}}", "'model.id'");
	CREATE_BAD("{\"name\":\"a\",\"model\":{\"id\":\"x\",\"temperature\":1}}",
		   "unknown field 'model.temperature'");
	CREATE_BAD("{\"name\":\"a\",\"model\":{\"id\":\"x\",\"effort\":\"extreme\"}}",
		   "'model.effort'");
	CREATE_BAD(
		"{\"name\":\"a\",\"model\":{\"id\":\"x\",\"effort\":{\"type\":\"low\",\"x\":1}}}",
		"unknown field 'model.effort.x'");
	CREATE_BAD("{\"name\":\"a\",\"model\":{\"id\":\"x\",\"speed\":\"warp\"}}", "'model.speed'");
	CREATE_BAD("{\"name\":\"a\",\"model\":{\"id\":\"x\",\"inference_geo\":\"\"}}",
		   "'model.inference_geo'");
	snprintf(text, sizeof(text), "{\"name\":\"a\",\"model\":\"%s\"}", long_id);
	CREATE_BAD(text, "'model'");
	free(long_id);
}

/* The whole definition within AGENT_DEFINITION_MAX bytes: a system prompt that fits alone
 * (AGENT_SYSTEM_MAX) but makes the agent larger is refused, on create and on update. */
static void test_total_size(void **state)
{
	size_t n = AGENT_DEFINITION_MAX + 100;
	char *big = unit_rep("s", n), *text = malloc(n + 64);
	struct verr err = { 0 };
	json_t *body, *cur, *def;
	int changed;

	(void)state;
	assert_non_null(text);
	snprintf(text, n + 64, "{" MIN_BODY ",\"system\":\"%s\"}", big);
	body = unit_parse(__LINE__, text);
	assert_null(agent_validate_create(body, &err));
	assert_non_null(strstr(err.msg, "at most 65536"));
	json_decref(body);
	body = unit_parse(__LINE__, "{" MIN_BODY "}");
	cur = agent_validate_create(body, &err);
	assert_non_null(cur);
	json_decref(body);
	snprintf(text, n + 64, "{\"system\":\"%s\"}", big);
	body = unit_parse(__LINE__, text);
	def = agent_validate_update(body, cur, &changed, &err);
	assert_null(def);
	assert_non_null(strstr(err.msg, "at most 65536"));
	json_decref(body);
	json_decref(cur);
	free(big);
	free(text);
}

static void test_description_and_system(void **state)
{
	char *d2048 = unit_rep("d", 2048), *d2049 = unit_rep("d", 2049), text[2200], expect[2200];

	(void)state;
	FIELD_IS("\"description\":\"hello\"", "description", "\"hello\"");
	FIELD_IS("\"description\":\"\"", "description", "null");
	FIELD_IS("\"description\":null", "description", "null");
	FIELD_IS("\"system\":\"\"", "system", "null");
	FIELD_IS("\"system\":\"you are\"", "system", "\"you are\"");
	snprintf(text, sizeof(text), "\"description\":\"%s\"", d2048);
	snprintf(expect, sizeof(expect), "\"%s\"", d2048);
	FIELD_IS(text, "description", expect);
	free(d2048);
	snprintf(text, sizeof(text), "\"description\":\"%s\"", d2049);
	EXTRA_BAD(text, "'description' must be a string of at most 2048 characters");
	EXTRA_BAD("\"description\":1", "'description'");
	EXTRA_BAD("\"system\":[]", "'system'");
	free(d2049);
}

static void test_metadata(void **state)
{
	(void)state;
	FIELD_IS("\"metadata\":{\"k\":\"v\"}", "metadata", "{\"k\":\"v\"}");
	FIELD_IS("\"metadata\":null", "metadata", "{}");
	extra_bad_(__LINE__, "\"metadata\":{\"k\":1}", "invalid_metadata", "metadata.k");
	extra_bad_(__LINE__, "\"metadata\":[]", "invalid_metadata", "'metadata' must be an object");
	extra_bad_(__LINE__,
		   "\"metadata\":{\"1\":\"a\",\"2\":\"a\",\"3\":\"a\",\"4\":\"a\",\"5\":\"a\","
		   "\"6\":\"a\",\"7\":\"a\",\"8\":\"a\",\"9\":\"a\",\"10\":\"a\",\"11\":\"a\","
		   "\"12\":\"a\",\"13\":\"a\",\"14\":\"a\",\"15\":\"a\",\"16\":\"a\",\"17\":\"a\"}",
		   "invalid_metadata", "at most 16 keys");
}

static void test_mcp_servers_accepted(void **state)
{
	(void)state;
	FIELD_IS("\"mcp_servers\":[]", "mcp_servers", "[]");
	FIELD_IS("\"mcp_servers\":null", "mcp_servers", "[]");
	FIELD_IS("\"mcp_servers\":[{\"type\":\"url\",\"name\":\"a\",\"url\":\"http://10.0.0.1:8080/"
		 "x\"},"
		 "{\"type\":\"url\",\"name\":\"b\",\"url\":\"HTTPS://Mcp.Example.com?q=1#f\"}]",
		 "mcp_servers",
		 "[{\"type\":\"url\",\"name\":\"a\",\"url\":\"http://10.0.0.1:8080/x\"},"
		 "{\"type\":\"url\",\"name\":\"b\",\"url\":\"HTTPS://Mcp.Example.com?q=1#f\"}]");
}

/* MCP server URLs agent_url_host accepts and ones it refuses: test_url_host asks
 * agent_url_host (no output buffer), test_mcp_servers_refused gives each refused one to create
 * as mcp_servers[0].url. */
static const char *const mcp_urls_ok[] = {
	"https://a.io",
	"https://a.io:65535",
};
static const char *const mcp_urls_bad[] = {
	"https://a.io:99999",
	"https://a.io:123456",
	"mailto:x@a.io",
	"https://a.io\t",
	"https://caf\xc3\xa9.io",
	"ftp://example.com",
	"example.com",
	"https://",
	"https:///path",
	"https://user:pw@example.com",
	"https://a@example.com",
	"https://exa mple.com",
	"https://example.com/\x7f",
	"https://[::1]/",
	"https://example.com:0",
	"https://example.com:65536",
	"https://example.com:",
	"https://example.com:80a",
	"https://*.example.com",
	"https://-bad.com",
	"/relative",
	"",
	"https://ex_ample.com",
};

/* unit_pred_cases's predicate: agent_url_host accepts URL (0); a refusal must be -1. */
static int url_accepted(const char *url)
{
	int rc = agent_url_host(url, NULL, 0);

	if (rc != 0 && rc != -1)
		fail_msg("agent_url_host('%s') returned %d, want 0 or -1", url, rc);
	return rc == 0;
}

static void test_mcp_servers_refused(void **state)
{
	char text[8192];
	char *long_path = unit_rep("p", 2048);

	(void)state;
	EXTRA_BAD("\"mcp_servers\":{}", "'mcp_servers' must be an array");
	EXTRA_BAD("\"mcp_servers\":[1]", "'mcp_servers[0]' must be an object");
	EXTRA_BAD("\"mcp_servers\":[{\"name\":\"a\",\"url\":\"https://a.com\"}]",
		  "'mcp_servers[0].type' must be 'url'");
	EXTRA_BAD("\"mcp_servers\":[{\"type\":\"sse\",\"name\":\"a\",\"url\":\"https://a.com\"}]",
		  "'mcp_servers[0].type'");
	EXTRA_BAD("\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://a.com\"}]",
		  "'mcp_servers[0].name'");
	EXTRA_BAD("\"mcp_servers\":[{\"type\":\"url\",\"name\":\"\",\"url\":\"https://a.com\"}]",
		  "'mcp_servers[0].name'");
	EXTRA_BAD("\"mcp_servers\":[{\"type\":\"url\",\"name\":\"a\"}]", "'mcp_servers[0].url'");
	EXTRA_BAD("\"mcp_servers\":[{\"type\":\"url\",\"name\":\"a\",\"url\":\"https://a.com\","
		  "\"headers\":{}}]",
		  "unknown field 'mcp_servers[0].headers'");
	EXTRA_BAD("\"mcp_servers\":[{\"type\":\"url\",\"name\":\"a\",\"url\":\"https://a.com\"},"
		  "{\"type\":\"url\",\"name\":\"b\",\"url\":\"https://b.com\"},"
		  "{\"type\":\"url\",\"name\":\"a\",\"url\":\"https://c.com\"}]",
		  "'mcp_servers[2].name' duplicates 'mcp_servers[0].name' ('a')");
	for (size_t i = 0; i < UNIT_LEN(mcp_urls_bad); i++) {
		json_t *body = unit_parse(__LINE__, "{" MIN_BODY "}");

		json_object_set_new(body, "mcp_servers",
				    json_pack("[{s:s, s:s, s:s}]", "type", "url", "name", "a",
					      "url", mcp_urls_bad[i]));
		create_err_(__LINE__, body, 400, "", "'mcp_servers[0].url'");
	}
	snprintf(text, sizeof(text),
		 "\"mcp_servers\":[{\"type\":\"url\",\"name\":\"a\",\"url\":\"https://a.com/%s\"}]",
		 long_path);
	EXTRA_BAD(text, "'mcp_servers[0].url'");
	free(long_path);

	/* AGENT_MCP_SERVERS_MAX entries pass, one more is refused */
	{
		json_t *body = unit_parse(__LINE__, "{" MIN_BODY "}"), *list = json_array(), *def;

		for (int i = 0; i < AGENT_MCP_SERVERS_MAX; i++) {
			char name[16];

			snprintf(name, sizeof(name), "s%d", i);
			json_array_append_new(list,
					      json_pack("{s:s, s:s, s:s}", "type", "url", "name",
							name, "url", "https://a.com"));
		}
		json_object_set(body, "mcp_servers", list);
		def = create_ok_(__LINE__, json_deep_copy(body));
		json_decref(def);
		json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "type", "url", "name",
						      "extra", "url", "https://a.com"));
		create_err_(__LINE__, body, 400, "", "'mcp_servers' must have at most 20 entries");
		json_decref(list);
	}
}

static void test_url_host(void **state)
{
	static const struct unit_out_case hosts[] = {
		{ "https://MCP.Example.COM:8443/x?y#z", 0, "mcp.example.com" },
		{ "http://192.168.1.2", 0, "192.168.1.2" },
	};
	char small[4];

	(void)state;
	unit_out_cases(agent_url_host, 300, hosts, UNIT_LEN(hosts));
	/* does not fit */
	assert_int_equal(agent_url_host("https://a.io", small, sizeof(small)), -1);
	unit_pred_cases("agent_url_host", url_accepted, mcp_urls_ok, UNIT_LEN(mcp_urls_ok),
			mcp_urls_bad, UNIT_LEN(mcp_urls_bad));
}

static void test_tools(void **state)
{
	json_t *body, *list;

	(void)state;
	FIELD_IS("\"tools\":null", "tools", "[]");
	FIELD_IS("\"tools\":[{\"type\":\"agent_toolset_20260401\"}]", "tools",
		 "[{\"type\":\"agent_toolset_20260401\"}]");
	FIELD_IS("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":"
		 "\"web_fetch\",\"type\":\"web_fetch\",\"allowed_domains\":[\"a.com\"],"
		 "\"url_sources\":null,\"max_content_tokens\":5}]}]",
		 "tools",
		 "[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"web_fetch\","
		 "\"type\":\"web_fetch\",\"allowed_domains\":[\"a.com\"],\"url_sources\":null,"
		 "\"max_content_tokens\":5}]}]");
	EXTRA_BAD("\"tools\":{}", "'tools' must be an array");
	EXTRA_BAD("\"tools\":[\"bash\"]", "'tools[0]' must be an object");
	EXTRA_BAD("\"tools\":[{}]", "'tools[0].type'");
	EXTRA_BAD("\"tools\":[{\"type\":\"bash_20250124\"}]", "'tools[0].type'");
	EXTRA_BAD("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"extra\":1}]",
		  "unknown field 'tools[0].extra'");
	EXTRA_BAD("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":{}}]",
		  "'tools[0].configs' must be an array");
	EXTRA_BAD(
		"\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"rm\"}]}]",
		"'tools[0].configs[0].name'");
	EXTRA_BAD("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\","
		  "\"type\":\"edit\"}]}]",
		  "'tools[0].configs[0].type'");
	EXTRA_BAD("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\","
		  "\"allowed_domains\":[]}]}]",
		  "unknown field 'tools[0].configs[0].allowed_domains'");
	EXTRA_BAD("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\","
		  "\"enabled\":\"yes\"}]}]",
		  "'tools[0].configs[0].enabled'");
	EXTRA_BAD("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"default_config\":"
		  "{\"permission_policy\":{\"type\":\"never\"}}}]",
		  "'tools[0].default_config.permission_policy.type'");
	EXTRA_BAD("\"tools\":[{\"type\":\"agent_toolset_20260401\",\"default_config\":[]}]",
		  "'tools[0].default_config'");
	EXTRA_BAD("\"tools\":[{\"type\":\"mcp_toolset\"}]", "'tools[0].mcp_server_name'");
	EXTRA_BAD("\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"nope\"}]",
		  "'tools[0].mcp_server_name' must name a server in 'mcp_servers' (none is named "
		  "'nope')");
	EXTRA_BAD("\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"a\",\"configs\":"
		  "[{\"name\":\"\"}]}]",
		  "'tools[0].configs[0].name'");
	EXTRA_BAD("\"tools\":[{\"type\":\"custom\",\"name\":\"bad name\",\"description\":\"d\","
		  "\"input_schema\":{\"type\":\"object\"}}]",
		  "'tools[0].name'");
	EXTRA_BAD("\"tools\":[{\"type\":\"custom\",\"name\":\"t\",\"input_schema\":"
		  "{\"type\":\"object\"}}]",
		  "'tools[0].description'");
	EXTRA_BAD("\"tools\":[{\"type\":\"custom\",\"name\":\"t\",\"description\":\"d\"}]",
		  "'tools[0].input_schema'");
	EXTRA_BAD("\"tools\":[{\"type\":\"custom\",\"name\":\"t\",\"description\":\"d\","
		  "\"input_schema\":{\"type\":\"string\"}}]",
		  "'tools[0].input_schema'");
	EXTRA_BAD("\"tools\":[{\"type\":\"custom\",\"name\":\"t\",\"description\":\"d\","
		  "\"input_schema\":{\"type\":\"object\"}},{\"type\":\"custom\",\"name\":\"t\","
		  "\"description\":\"e\",\"input_schema\":{\"type\":\"object\"}}]",
		  "'tools[1].name' duplicates 'tools[0].name'");

	body = unit_parse(__LINE__, "{" MIN_BODY "}");
	list = json_array();
	for (int i = 0; i <= AGENT_TOOLS_MAX; i++)
		json_array_append_new(list, json_pack("{s:s}", "type", "agent_toolset_20260401"));
	json_object_set_new(body, "tools", list);
	create_err_(__LINE__, body, 400, "", "'tools' must have at most 256 entries");
}

static void test_skills(void **state)
{
	(void)state;
	FIELD_IS("\"skills\":[{\"type\":\"anthropic\",\"skill_id\":\"xlsx\",\"version\":null}]",
		 "skills", "[{\"type\":\"anthropic\",\"skill_id\":\"xlsx\",\"version\":null}]");
	FIELD_IS("\"skills\":null", "skills", "[]");
	EXTRA_BAD("\"skills\":\"xlsx\"", "'skills' must be an array");
	EXTRA_BAD("\"skills\":[[]]", "'skills[0]' must be an object");
	EXTRA_BAD("\"skills\":[{\"type\":\"builtin\",\"skill_id\":\"x\"}]", "'skills[0].type'");
	EXTRA_BAD("\"skills\":[{\"type\":\"custom\"}]", "'skills[0].skill_id'");
	EXTRA_BAD("\"skills\":[{\"type\":\"custom\",\"skill_id\":\"s\",\"version\":3}]",
		  "'skills[0].version'");
	EXTRA_BAD("\"skills\":[{\"type\":\"custom\",\"skill_id\":\"s\",\"pin\":true}]",
		  "unknown field 'skills[0].pin'");
}

static void test_execution_identity(void **state)
{
	(void)state;
	FIELD_IS("\"execution_identity\":null", "execution_identity",
		 "{\"type\":\"service_account\"}");
	FIELD_IS("\"execution_identity\":{\"type\":\"service_account\"}", "execution_identity",
		 "{\"type\":\"service_account\"}");
	EXTRA_BAD("\"execution_identity\":\"service_account\"", "'execution_identity'");
	EXTRA_BAD("\"execution_identity\":{\"type\":\"user\"}", "'execution_identity.type'");
	EXTRA_BAD("\"execution_identity\":{\"type\":\"aws_role\"}",
		  "'execution_identity.role_arn'");
	EXTRA_BAD("\"execution_identity\":{\"type\":\"service_account\",\"role_arn\":\"x\"}",
		  "unknown field 'execution_identity.role_arn'");
}

static void test_multiagent(void **state)
{
	(void)state;
	FIELD_IS("\"multiagent\":null", "multiagent", "null");
	FIELD_IS("\"multiagent\":{\"type\":\"multiagent_20261001\",\"advisor\":{\"type\":"
		 "\"disabled\"},\"workflows\":null}",
		 "multiagent",
		 "{\"type\":\"multiagent_20261001\",\"advisor\":{\"type\":\"disabled\"},"
		 "\"workflows\":null}");
	EXTRA_BAD("\"multiagent\":[]", "'multiagent' must be an object");
	EXTRA_BAD("\"multiagent\":{\"type\":\"swarm\"}", "'multiagent.type'");
	EXTRA_BAD("\"multiagent\":{\"type\":\"coordinator\",\"agents\":[]}", "'multiagent.agents'");
	EXTRA_BAD("\"multiagent\":{\"type\":\"coordinator\",\"agents\":[1]}",
		  "'multiagent.agents[0]'");
	EXTRA_BAD("\"multiagent\":{\"type\":\"multiagent_20261001\",\"advisor\":true}",
		  "'multiagent.advisor'");
	EXTRA_BAD("\"multiagent\":{\"type\":\"coordinator\",\"agents\":[\"agent_x\"],\"x\":1}",
		  "unknown field 'multiagent.x'");
}

/* --- update ----------------------------------------------------------------------------- */

static json_t *stored(int line)
{
	return create_ok_(
		line, unit_parse(line, "{\"name\":\"a\",\"model\":{\"id\":\"m1\",\"effort\":"
				       "\"max\",\"inference_geo\":\"eu\"},\"description\":\"d\","
				       "\"system\":\"s\",\"metadata\":{\"k\":\"v\",\"x\":\"y\"},"
				       "\"mcp_servers\":[{\"type\":\"url\",\"name\":\"docs\","
				       "\"url\":\"https://d.example.com\"}],"
				       "\"tools\":[{\"type\":\"mcp_toolset\","
				       "\"mcp_server_name\":\"docs\"}]}"));
}

static void test_update_noop(void **state)
{
	json_t *cur = stored(__LINE__), *next;

	(void)state;
	next = UPDATE_OK(cur, "{}", 0);
	assert_true(json_equal(next, cur));
	json_decref(next);
	json_decref(UPDATE_OK(cur, "{\"version\":3}", 0));
	json_decref(UPDATE_OK(cur,
			      "{\"name\":\"a\",\"description\":\"d\",\"metadata\":{\"k\":\"v\"},"
			      "\"model\":{\"id\":\"m1\",\"inference_geo\":\"eu\"}}",
			      0));
	json_decref(UPDATE_OK(cur, "{\"metadata\":null}", 0));
	json_decref(UPDATE_OK(cur, "{\"metadata\":{\"gone\":null}}", 0));
	json_decref(cur);
}

static void test_update_fields(void **state)
{
	json_t *cur = stored(__LINE__), *next;

	(void)state;
	next = UPDATE_OK(cur, "{\"name\":\"b\"}", 1);
	assert_string_equal(json_string_value(json_object_get(next, "name")), "b");
	json_decref(next);

	next = UPDATE_OK(cur, "{\"description\":\"\",\"system\":null}", 1);
	assert_json(json_object_get(next, "description"), "null");
	assert_json(json_object_get(next, "system"), "null");
	json_decref(next);

	/* model: whole replacement, except that an omitted effort keeps the stored one */
	next = UPDATE_OK(cur, "{\"model\":\"m2\"}", 1);
	assert_json(json_object_get(next, "model"),
		    "{\"id\":\"m2\",\"effort\":{\"type\":\"max\"},\"speed\":\"standard\"}");
	json_decref(next);
	next = UPDATE_OK(cur, "{\"model\":{\"id\":\"m1\",\"effort\":null}}", 1);
	assert_json(json_object_get(next, "model"),
		    "{\"id\":\"m1\",\"effort\":{\"type\":\"high\"},\"speed\":\"standard\"}");
	json_decref(next);

	next = UPDATE_OK(cur, "{\"metadata\":{\"k\":\"\",\"n\":\"1\"}}", 1);
	assert_json(json_object_get(next, "metadata"), "{\"x\":\"y\",\"n\":\"1\"}");
	json_decref(next);

	next = UPDATE_OK(cur, "{\"mcp_servers\":null,\"tools\":[]}", 1);
	assert_json(json_object_get(next, "mcp_servers"), "[]");
	assert_json(json_object_get(next, "tools"), "[]");
	json_decref(next);

	next = UPDATE_OK(cur, "{\"execution_identity\":{\"type\":\"aws_role\",\"role_arn\":\"r\"}}",
			 1);
	json_decref(UPDATE_OK(next, "{\"execution_identity\":null}", 1));
	json_decref(next);
	json_decref(cur);
}

static void test_update_refused(void **state)
{
	json_t *cur = stored(__LINE__);

	(void)state;
	UPDATE_BAD(cur, "{\"name\":null}", "'name' cannot be null");
	UPDATE_BAD(cur, "{\"name\":\"\"}", "'name'");
	UPDATE_BAD(cur, "{\"model\":null}", "'model' cannot be null");
	UPDATE_BAD(cur, "{\"bogus\":1}", "unknown field 'bogus'");
	UPDATE_BAD(cur, "{\"version\":0}", "'version' must be an integer of at least 1");
	UPDATE_BAD(cur, "{\"version\":\"1\"}", "'version'");
	UPDATE_BAD(cur, "{\"version\":1.0}", "'version'");
	/* removing the server a tool references is judged on the merged result */
	UPDATE_BAD(cur, "{\"mcp_servers\":[]}", "'tools[0].mcp_server_name'");
	update_err_(__LINE__, cur, "{\"metadata\":{\"k\":5}}", 400, "invalid_metadata",
		    "metadata.k");
	UPDATE_BAD(cur, "[]", "JSON object");
	json_decref(cur);
}

static void test_update_version(void **state)
{
	struct verr err = { 0 };
	long long v = -1;
	json_t *b;

	(void)state;
	b = unit_parse(__LINE__, "{}");
	assert_int_equal(agent_update_version(b, &v, &err), 0);
	assert_int_equal(v, 0);
	json_decref(b);
	b = unit_parse(__LINE__, "{\"version\":5000000000}");
	assert_int_equal(agent_update_version(b, &v, &err), 0);
	assert_true(v == 5000000000LL);
	json_decref(b);
	b = unit_parse(__LINE__, "{\"version\":-1}");
	assert_int_equal(agent_update_version(b, &v, &err), -1);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.msg, "'version'"));
	json_decref(b);
}

/* --- RFC 3339 --------------------------------------------------------------------------- */

static void test_rfc3339(void **state)
{
	static const char *const bad[] = {
		"",
		"2026-07-27",
		"2026-07-27T00:00:00",
		"2026-07-27 00:00:00Z",
		"2026-13-01T00:00:00Z",
		"2026-02-30T00:00:00Z",
		"2026-07-27T24:00:00Z",
		"2026-07-27T00:60:00Z",
		"2026-07-27T00:00:60Z",
		"2026-07-27T00:00:00.Z",
		"2026-07-27T00:00:00.1234567890Z",
		"2026-07-27T00:00:00+0100",
		"2026-07-27T00:00:00+24:00",
		"2026-07-27T00:00:00Zjunk",
		"0999-01-01T00:00:00Z",
		"26-07-27T00:00:00Z",
	};
	static const struct unit_out_case good[] = {
		{ "2026-07-27T10:20:30Z", 0, "2026-07-27 10:20:30.000000" },
		{ "2026-07-27t10:20:30.5z", 0, "2026-07-27 10:20:30.500000" },
		{ "2026-07-27T10:20:30.123456789+02:00", 0, "2026-07-27 08:20:30.123456" },
		{ "2026-01-01T00:30:00-01:00", 0, "2026-01-01 01:30:00.000000" },
		{ "2028-02-29T00:00:00Z", 0, NULL },
	};
	char out[32];

	(void)state;
	unit_out_cases(rfc3339_to_db, sizeof(out), good, UNIT_LEN(good));
	assert_int_equal(rfc3339_to_db("2026-07-27T10:20:30Z", out, 10), -1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!rfc3339_to_db(bad[i], out, sizeof(out)))
			fail_msg("accepted '%s' as %s", bad[i], out);
}

UNIT_MAIN(UNIT_TESTS(test_create_minimal, test_create_full, test_create_body_and_unknown,
		     test_create_required, test_name, test_model, test_description_and_system,
		     test_metadata, test_mcp_servers_accepted, test_mcp_servers_refused,
		     test_url_host, test_tools, test_skills, test_execution_identity,
		     test_multiagent, test_update_noop, test_update_fields, test_update_refused,
		     test_update_version, test_rfc3339, test_total_size))
