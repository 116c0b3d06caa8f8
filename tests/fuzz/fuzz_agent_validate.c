/* libFuzzer target: agent create and update validation (handlers/agent_validate.c), the MCP
 * URL host rule against the egress policy's (common/egress.c), and RFC 3339 timestamps.
 *
 * Input: a request body, loaded as the router loads bodies (json_loadb with
 * JSON_REJECT_DUPLICATES), validated as a create and as an update of a few stored definitions.
 * Every string anywhere in the body is also tried as an MCP URL and as a timestamp.
 *
 * Checked: an accepted definition has exactly the documented fields within their limits,
 * and normalising it again gives itself; every mcp_toolset names a server; the host the
 * validator accepted for an MCP URL is the host the egress policy will allow; a refused update
 * leaves the stored definition as it was, `changed` is true exactly when the definition
 * differs, and the same update applied twice changes nothing the second time; errors have a
 * status and a text and quote only keys and names, never other values; an accepted timestamp
 * converts to a DATETIME(6) literal that converts back to itself. */
#include "fuzz.h"

#include "../../common/egress.h"
#include "../../handlers/agent_validate.h"
#include "../../handlers/env_validate.h"
#include "../../handlers/verr.h"

static const char *const def_fields[] = {
	"name",	  "description",	"system",     "model",	  "mcp_servers", "tools",
	"skills", "execution_identity", "multiagent", "metadata", NULL
};
static const char *const efforts[] = { "low", "medium", "high", "xhigh", "max", NULL };

static const char *const stored_bodies[] = {
	"{\"name\":\"min\",\"model\":\"claude-sonnet-4-5\"}",
	"{\"name\":\"full\",\"description\":\"d\",\"system\":\"s\",\"model\":{\"id\":\"m\","
	"\"effort\":\"low\",\"speed\":\"fast\",\"inference_geo\":\"us\"},\"mcp_servers\":["
	"{\"type\":\"url\",\"name\":\"gh\",\"url\":\"https://api.github.com/mcp\"},"
	"{\"type\":\"url\",\"name\":\"local\",\"url\":\"http://10.0.0.2:8080/x\"}],\"tools\":["
	"{\"type\":\"agent_toolset_20260401\",\"configs\":[{\"name\":\"bash\",\"enabled\":false}],"
	"\"default_config\":{\"enabled\":true,\"permission_policy\":{\"type\":\"always_ask\"}}},"
	"{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"gh\"},{\"type\":\"custom\",\"name\":"
	"\"lookup\",\"description\":\"x\",\"input_schema\":{\"type\":\"object\"}}],\"skills\":["
	"{\"type\":\"anthropic\",\"skill_id\":\"pdf\"}],\"execution_identity\":{\"type\":"
	"\"aws_role\",\"role_arn\":\"arn:aws:iam::1:role/x\"},\"multiagent\":{\"type\":"
	"\"coordinator\",\"agents\":[\"agent_1\"]},\"metadata\":{\"a\":\"1\"}}",
};
#define STORED_COUNT (sizeof(stored_bodies) / sizeof(stored_bodies[0]))

static json_t *stored[STORED_COUNT];
static const char *const no_registry[] = { NULL };

static int chars_within(json_t *v, size_t min, size_t max)
{
	return json_is_string(v) && utf8_chars(json_string_value(v)) >= min &&
	       utf8_chars(json_string_value(v)) <= max;
}

/* URL accepted as an MCP server URL: the egress policy extracts the same host. */
static void check_url_host(const char *url)
{
	char host[HOST_NAME_MAX_LEN + 1], egress[EGRESS_HOST_MAX + 1];
	size_t len;

	if (agent_url_host(url, host, sizeof(host)))
		return;
	len = strlen(host);
	FUZZ_CHECK(len && host[0] != '*' && host_pattern_valid(host), "host '%s' of '%s'", host,
		   url);
	for (const char *p = host; *p; p++)
		FUZZ_CHECK(!(*p >= 'A' && *p <= 'Z'), "host '%s' is not lower-cased", host);
	FUZZ_CHECK(agent_url_host(url, host, len) == -1, "host of %zu bytes fit in %zu", len, len);
	FUZZ_CHECK(!egress_url_host(url, egress, sizeof(egress)), "egress finds no host in '%s'",
		   url);
	FUZZ_CHECK(!strcmp(egress, host), "'%s': validated host '%s', egress host '%s'", url, host,
		   egress);
}

/* S accepted as a timestamp converts to a DATETIME(6) literal that converts to itself. */
static void check_timestamp(const char *s)
{
	char out[32], rfc[40], again[32];

	memset(out, 0x7f, sizeof(out));
	if (rfc3339_to_db(s, out, 27))
		return;
	FUZZ_CHECK(strlen(out) == 26 && out[4] == '-' && out[10] == ' ' && out[19] == '.',
		   "'%s' -> '%s'", s, out);
	FUZZ_CHECK(out[0] >= '1', "'%s' -> year before 1000: '%s'", s, out);
	snprintf(rfc, sizeof(rfc), "%.10sT%.15sZ", out, out + 11);
	FUZZ_CHECK(!rfc3339_to_db(rfc, again, sizeof(again)) && !strcmp(again, out),
		   "'%s' -> '%s' -> '%s' does not convert back", s, out, rfc);
}

static void walk_strings(json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_string(v)) {
		if (strlen(json_string_value(v)) == json_string_length(v)) {
			check_url_host(json_string_value(v));
			check_timestamp(json_string_value(v));
		}
	} else if (json_is_object(v)) {
		json_object_foreach (v, key, item)
			walk_strings(item);
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, item)
			walk_strings(item);
	}
}

/* DEF is a definition as agent_validate.h describes it. */
static void check_def(json_t *def)
{
	static const char *const identity_types[] = { "service_account", "aws_role", NULL };
	json_t *model, *servers, *tools, *v, *s, *t, *policy, *net, *want;
	const char *key;
	size_t i, j;

	FUZZ_CHECK(json_is_object(def), "definition is not an object");
	json_object_foreach (def, key, v)
		FUZZ_CHECK(verr_in_list(key, def_fields), "definition field '%s'", key);
	for (const char *const *f = def_fields; *f; f++)
		FUZZ_CHECK(json_object_get(def, *f), "definition lacks '%s'", *f);
	FUZZ_CHECK(chars_within(json_object_get(def, "name"), 1, AGENT_NAME_MAX), "name");
	v = json_object_get(def, "description");
	FUZZ_CHECK(json_is_null(v) || chars_within(v, 1, AGENT_DESCRIPTION_MAX), "description");
	v = json_object_get(def, "system");
	FUZZ_CHECK(json_is_null(v) || chars_within(v, 1, AGENT_SYSTEM_MAX), "system");

	model = json_object_get(def, "model");
	FUZZ_CHECK(json_is_object(model) &&
			   chars_within(json_object_get(model, "id"), 1, AGENT_MODEL_ID_MAX),
		   "model.id");
	FUZZ_CHECK(verr_in_list(json_string_value(
					json_object_get(json_object_get(model, "effort"), "type")),
				efforts) &&
			   json_object_size(json_object_get(model, "effort")) == 1,
		   "model.effort");
	FUZZ_CHECK(verr_in_list(json_string_value(json_object_get(model, "speed")),
				(const char *const[]){ "standard", "fast", NULL }),
		   "model.speed");
	v = json_object_get(model, "inference_geo");
	FUZZ_CHECK(json_object_size(model) == 3 + !!v, "model fields");
	FUZZ_CHECK(!v || chars_within(v, 1, AGENT_INFERENCE_GEO_MAX), "model.inference_geo");

	servers = json_object_get(def, "mcp_servers");
	FUZZ_CHECK(json_is_array(servers) && json_array_size(servers) <= AGENT_MCP_SERVERS_MAX,
		   "mcp_servers");
	want = json_object();
	json_array_foreach (servers, i, s) {
		const char *url = json_string_value(json_object_get(s, "url"));
		char host[HOST_NAME_MAX_LEN + 1];

		FUZZ_CHECK(json_object_size(s) == 3 &&
				   !strcmp(json_string_value(json_object_get(s, "type")), "url") &&
				   chars_within(json_object_get(s, "name"), 1, AGENT_MCP_NAME_MAX),
			   "mcp_servers[%zu]", i);
		FUZZ_CHECK(url && !agent_url_host(url, host, sizeof(host)), "mcp_servers[%zu].url",
			   i);
		json_object_set_new(want, host, json_true());
		check_url_host(url);
		for (j = 0; j < i; j++)
			FUZZ_CHECK(strcmp(json_string_value(json_object_get(s, "name")),
					  json_string_value(json_object_get(
						  json_array_get(servers, j), "name"))),
				   "mcp_servers[%zu] and [%zu] share a name", i, j);
	}
	/* a limited sandbox allowed MCP servers may reach exactly their hosts */
	net = json_pack("{s:s, s:[], s:b, s:b}", "type", "limited", "allowed_hosts",
			"allow_mcp_servers", 1, "allow_package_managers", 0);
	policy = egress_policy(net, servers, no_registry, 0);
	FUZZ_CHECK(json_is_array(policy) && json_array_size(policy) == json_object_size(want),
		   "egress policy has %zu hosts, the servers %zu", json_array_size(policy),
		   json_object_size(want));
	json_array_foreach (policy, i, v)
		FUZZ_CHECK(json_object_get(want, json_string_value(v)), "policy host '%s'",
			   json_string_value(v));
	json_decref(policy);
	json_decref(net);
	json_decref(want);

	tools = json_object_get(def, "tools");
	FUZZ_CHECK(json_is_array(tools) && json_array_size(tools) <= AGENT_TOOLS_MAX, "tools");
	json_array_foreach (tools, i, t) {
		const char *want_name = json_string_value(json_object_get(t, "mcp_server_name"));
		int found = 0;

		if (strcmp(json_string_value(json_object_get(t, "type")), "mcp_toolset"))
			continue;
		json_array_foreach (servers, j, s)
			found |= want_name &&
				 !strcmp(want_name, json_string_value(json_object_get(s, "name")));
		FUZZ_CHECK(found, "tools[%zu] names no server", i);
	}
	v = json_object_get(def, "skills");
	FUZZ_CHECK(json_is_array(v) && json_array_size(v) <= AGENT_SKILLS_MAX, "skills");
	v = json_object_get(def, "execution_identity");
	FUZZ_CHECK(json_is_object(v) && verr_in_list(json_string_value(json_object_get(v, "type")),
						     identity_types),
		   "execution_identity");
	v = json_object_get(def, "multiagent");
	FUZZ_CHECK(json_is_null(v) || json_is_object(v), "multiagent");
	v = json_object_get(def, "metadata");
	FUZZ_CHECK(json_is_object(v) && json_object_size(v) <= META_MAX_KEYS, "metadata");
}

static void check_error(const struct verr *err, json_t *body)
{
	static const char *const echoed[] = { "name", "mcp_server_name", NULL };

	fuzz_check_verr(err, body, echoed, 0);
}

static void fuzz_create(json_t *body)
{
	struct verr err = { 0 };
	json_t *def = agent_validate_create(body, &err), *again;

	if (!def) {
		check_error(&err, body);
		return;
	}
	check_def(def);
	again = agent_validate_create(def, &err);
	FUZZ_CHECK(again, "the definition is refused as a body: %s", err.msg);
	FUZZ_CHECK(json_equal(again, def), "normalising twice differs");
	json_decref(again);
	json_decref(def);
}

static void fuzz_update(json_t *body, json_t *cur)
{
	json_t *before = json_deep_copy(cur), *next, *again;
	struct verr err = { 0 };
	long long version;
	int changed = -1;

	if (!agent_update_version(body, &version, &err))
		FUZZ_CHECK(version >= 0, "version %lld", version);
	next = agent_validate_update(body, cur, &changed, &err);
	FUZZ_CHECK(json_equal(cur, before), "the stored definition was modified");
	if (!next) {
		check_error(&err, body);
		FUZZ_CHECK(!changed, "refused, yet changed");
		goto out;
	}
	check_def(next);
	FUZZ_CHECK(changed == !json_equal(next, cur), "changed %d, but the definition %s", changed,
		   json_equal(next, cur) ? "is the same" : "differs");
	again = agent_validate_update(body, next, &changed, &err);
	FUZZ_CHECK(again, "the same update refused the second time: %s", err.msg);
	FUZZ_CHECK(!changed && json_equal(again, next), "the same update changed it again");
	json_decref(again);
	json_decref(next);
out:
	json_decref(before);
}

static void init(void)
{
	for (size_t i = 0; i < STORED_COUNT; i++) {
		json_t *b = json_loads(stored_bodies[i], JSON_REJECT_DUPLICATES, NULL);
		struct verr err;

		if (!b || !(stored[i] = agent_validate_create(b, &err))) {
			fprintf(stderr, "stored definition %zu: %s\n", i, b ? err.msg : "bad JSON");
			abort();
		}
		json_decref(b);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = fuzz_json_input(data, size, init);

	if (!body)
		return 0;
	walk_strings(body);
	fuzz_create(body);
	for (size_t s = 0; s < STORED_COUNT; s++)
		fuzz_update(body, stored[s]);
	json_decref(body);
	return 0;
}
