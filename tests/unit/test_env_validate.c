/* Unit tests for handlers/env_validate.c: every docs/api.md §3 rule has an accepted and a refused
 * case; refused cases check the status, the error_code and that the message names the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "handlers/env_validate.h"
#include "tests/unit/unit.h"
#include "tests/unit/unit_json.h"
#include "tests/unit/unit_verr.h"

#define SECRET "s3cr3t-t0ken"
#define PERMISSIVE "opensandbox" /* the backend that admits everything */

static const char *const all_backends[] = { "local",	   "bwrap", "srt",  "docker",
					    "opensandbox", "e2b",   "cube", "daytona" };
#define BACKEND_COUNT (sizeof(all_backends) / sizeof(all_backends[0]))

static const char default_config[] =
	"{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},"
	"\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],\"go\":[],"
	"\"npm\":[],\"pip\":[]}}";

/* --- helpers ---------------------------------------------------------------------------- */

static const struct backend_caps *caps_of(const char *backend)
{
	const struct backend_caps *caps = backend ? backend_lookup(backend) : NULL;

	if (backend && !caps)
		fail_msg("unknown backend %s", backend);
	return caps;
}

/* Runs create on BODY (stolen); fails the test unless it succeeds. Caller releases OUT. */
static void create_ok_(int line, json_t *body, const char *backend, struct env_fields *out)
{
	struct verr err = { 0 };

	memset(out, 0, sizeof(*out));
	unit_verr_ok(line, env_validate_create(body, caps_of(backend), out, &err), &err);
	json_decref(body);
}

/* Runs create on BODY (stolen); fails the test unless it is refused with STATUS, CODE and a
 * message containing NEEDLE. OUT must be left untouched. Returns the error. */
static struct verr create_err_(int line, json_t *body, const char *backend, int status,
			       const char *code, const char *needle)
{
	struct verr err = { 0 };
	struct env_fields out = { 0 };

	out.name = (char *)"untouched";
	unit_verr_refused(line, env_validate_create(body, caps_of(backend), &out, &err), &err,
			  status, code, needle);
	if (strcmp(out.name, "untouched") || out.description || out.metadata || out.config ||
	    out.scope)
		fail_msg("line %d: OUT modified on failure", line);
	json_decref(body);
	return err;
}

#define CREATE_OK(text, backend, out) create_ok_(__LINE__, unit_parse(__LINE__, text), backend, out)
#define CREATE_OK_J(json, backend, out) create_ok_(__LINE__, json, backend, out)
#define CREATE_ERR(text, backend, status, code, needle)                                            \
	create_err_(__LINE__, unit_parse(__LINE__, text), backend, status, code, needle)
#define CREATE_ERR_J(json, backend, status, code, needle)                                          \
	create_err_(__LINE__, json, backend, status, code, needle)
#define BAD(text, needle) CREATE_ERR(text, PERMISSIVE, 400, "", needle)
#define BAD_J(json, needle) CREATE_ERR_J(json, PERMISSIVE, 400, "", needle)

/* The config that create stores for TEXT (under the permissive backend). New reference. */
static json_t *config_of_(int line, const char *text)
{
	struct env_fields f;
	json_t *config;

	create_ok_(line, unit_parse(line, text), PERMISSIVE, &f);
	config = json_incref(f.config);
	env_fields_release(&f);
	return config;
}

#define ASSERT_CONFIG(body_text, expected_text)                                                    \
	do {                                                                                       \
		json_t *c_ = config_of_(__LINE__, body_text);                                      \
		unit_assert_json(__LINE__, c_, expected_text);                                     \
		json_decref(c_);                                                                   \
	} while (0)

static void fields_copy(const struct env_fields *src, struct env_fields *dst)
{
	dst->name = src->name ? strdup(src->name) : NULL;
	dst->description = json_deep_copy(src->description);
	dst->metadata = json_deep_copy(src->metadata);
	dst->config = json_deep_copy(src->config);
	dst->scope = src->scope ? strdup(src->scope) : NULL;
}

static int str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static int fields_equal(const struct env_fields *a, const struct env_fields *b)
{
	return str_eq(a->name, b->name) && json_equal(a->description, b->description) &&
	       json_equal(a->metadata, b->metadata) && json_equal(a->config, b->config) &&
	       str_eq(a->scope, b->scope);
}

/* Stored fields as created from TEXT under the permissive backend. Caller releases. */
static struct env_fields stored_(int line, const char *text)
{
	struct env_fields f;

	create_ok_(line, unit_parse(line, text), PERMISSIVE, &f);
	return f;
}
#define STORED(text) stored_(__LINE__, text)

static void update_ok_(int line, struct env_fields *cur, const char *text, const char *backend,
		       int expect_changed)
{
	json_t *body = unit_parse(line, text);
	struct verr err = { 0 };
	int changed = -1;

	unit_verr_ok(line, env_validate_update(body, caps_of(backend), cur, &changed, &err), &err);
	if (changed != expect_changed)
		fail_msg("line %d: changed=%d, expected %d", line, changed, expect_changed);
	json_decref(body);
}

/* Refused update: checks status, code, needle, and that CUR is exactly as before. */
static struct verr update_err_(int line, struct env_fields *cur, json_t *body, const char *backend,
			       int status, const char *code, const char *needle)
{
	struct env_fields before = { 0 };
	struct verr err = { 0 };
	int changed = -1;

	fields_copy(cur, &before);
	unit_verr_refused(line, env_validate_update(body, caps_of(backend), cur, &changed, &err),
			  &err, status, code, needle);
	if (!fields_equal(cur, &before))
		fail_msg("line %d: CUR modified by a failed update", line);
	env_fields_release(&before);
	json_decref(body);
	return err;
}

#define UPDATE_OK(cur, text, changed) update_ok_(__LINE__, cur, text, PERMISSIVE, changed)
#define UPDATE_OK_ON(cur, text, backend, changed) update_ok_(__LINE__, cur, text, backend, changed)
#define UPDATE_ERR(cur, text, backend, status, code, needle)                                       \
	update_err_(__LINE__, cur, unit_parse(__LINE__, text), backend, status, code, needle)
#define UPDATE_BAD(cur, text, needle) UPDATE_ERR(cur, text, PERMISSIVE, 400, "", needle)

/* --- utf8 / body ------------------------------------------------------------------------ */

static void test_utf8_chars(void **state)
{
	(void)state;
	assert_int_equal(utf8_chars(""), 0);
	assert_int_equal(utf8_chars("abc"), 3);
	assert_int_equal(utf8_chars("\xc3\xa9"), 1);		     /* é */
	assert_int_equal(utf8_chars("\xe6\x97\xa5\xe6\x9c\xac"), 2); /* 日本 */
	assert_int_equal(utf8_chars("a\xf0\x9f\x98\x80"), 2);	     /* a + emoji */
}

static void test_body_must_be_object(void **state)
{
	(void)state;
	BAD("[]", "body");
	BAD("\"x\"", "body");
}

static void test_unknown_top_level_field(void **state)
{
	struct env_fields f;
	struct verr err;

	(void)state;
	CREATE_OK("{\"name\":\"a\",\"description\":null,\"metadata\":{},\"config\":null,"
		  "\"scope\":null}",
		  PERMISSIVE, &f);
	env_fields_release(&f);
	err = BAD("{\"name\":\"a\",\"bogus\":1}", "'bogus'");
	assert_non_null(strstr(err.msg, "unknown field"));
	BAD("{\"name\":\"a\",\"type\":\"environment\"}", "'type'");
}

/* --- name / description ----------------------------------------------------------------- */

static void test_name(void **state)
{
	struct env_fields f;
	char *max = unit_rep("\xc3\xa9", ENV_NAME_MAX); /* 256 characters, 512 bytes */
	char *over = unit_rep("a", ENV_NAME_MAX + 1);

	(void)state;
	CREATE_OK("{\"name\":\"local\"}", PERMISSIVE, &f);
	assert_string_equal(f.name, "local");
	env_fields_release(&f);
	CREATE_OK_J(json_pack("{s:s}", "name", max), PERMISSIVE, &f);
	assert_string_equal(f.name, max);
	env_fields_release(&f);

	BAD("{}", "'name' is required");
	BAD("{\"description\":\"x\"}", "'name'");
	BAD("{\"name\":null}", "'name'");
	BAD("{\"name\":5}", "'name'");
	BAD("{\"name\":\"\"}", "'name' must be 1-256 characters");
	BAD_J(json_pack("{s:s}", "name", over), "'name' must be 1-256 characters");
	free(max);
	free(over);
}

static void test_description(void **state)
{
	struct env_fields f;
	char *max = unit_rep("\xe6\x97\xa5", ENV_DESCRIPTION_MAX);
	char *over = unit_rep("d", ENV_DESCRIPTION_MAX + 1);

	(void)state;
	CREATE_OK("{\"name\":\"a\"}", PERMISSIVE, &f);
	assert_true(json_is_null(f.description));
	env_fields_release(&f);
	CREATE_OK("{\"name\":\"a\",\"description\":null}", PERMISSIVE, &f);
	assert_true(json_is_null(f.description));
	env_fields_release(&f);
	CREATE_OK("{\"name\":\"a\",\"description\":\"\"}", PERMISSIVE, &f);
	assert_string_equal(json_string_value(f.description), "");
	env_fields_release(&f);
	CREATE_OK_J(json_pack("{s:s,s:s}", "name", "a", "description", max), PERMISSIVE, &f);
	assert_string_equal(json_string_value(f.description), max);
	env_fields_release(&f);

	BAD_J(json_pack("{s:s,s:s}", "name", "a", "description", over), "'description'");
	BAD("{\"name\":\"a\",\"description\":5}", "'description'");
	BAD("{\"name\":\"a\",\"description\":{}}", "'description'");
	free(max);
	free(over);
}

/* --- metadata --------------------------------------------------------------------------- */

/* New reference: an object with N keys k0..k(N-1). */
static json_t *meta_n(size_t n)
{
	json_t *m = json_object();
	char key[32];

	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		json_object_set_new(m, key, json_string("v"));
	}
	return m;
}

static void test_metadata_accepted(void **state)
{
	struct env_fields f;
	char *key = unit_rep("k", META_KEY_MAX);
	char *value = unit_rep("\xc3\xa9", META_VALUE_MAX);

	(void)state;
	CREATE_OK("{\"name\":\"a\"}", PERMISSIVE, &f);
	assert_json(f.metadata, "{}");
	env_fields_release(&f);
	CREATE_OK("{\"name\":\"a\",\"metadata\":null}", PERMISSIVE, &f);
	assert_json(f.metadata, "{}");
	env_fields_release(&f);
	CREATE_OK("{\"name\":\"a\",\"metadata\":{\"team\":\"data\",\"empty\":\"\"}}", PERMISSIVE,
		  &f);
	assert_json(f.metadata, "{\"team\":\"data\",\"empty\":\"\"}");
	env_fields_release(&f);
	CREATE_OK_J(json_pack("{s:s,s:o}", "name", "a", "metadata", meta_n(META_MAX_KEYS)),
		    PERMISSIVE, &f);
	assert_int_equal(json_object_size(f.metadata), META_MAX_KEYS);
	env_fields_release(&f);
	CREATE_OK_J(json_pack("{s:s,s:{s:s}}", "name", "a", "metadata", key, value), PERMISSIVE,
		    &f);
	assert_string_equal(json_string_value(json_object_get(f.metadata, key)), value);
	env_fields_release(&f);
	free(key);
	free(value);
}

static void test_metadata_too_many_keys(void **state)
{
	struct verr err;

	(void)state;
	err = CREATE_ERR_J(
		json_pack("{s:s,s:o}", "name", "a", "metadata", meta_n(META_MAX_KEYS + 1)),
		PERMISSIVE, 400, "invalid_metadata", "metadata");
	assert_non_null(strstr(err.msg, "at most 16 keys"));
}

static void test_metadata_key_length(void **state)
{
	char *key = unit_rep("x", META_KEY_MAX + 1);
	struct verr err;

	(void)state;
	err = CREATE_ERR_J(json_pack("{s:s,s:{s:s}}", "name", "a", "metadata", key, SECRET),
			   PERMISSIVE, 400, "invalid_metadata", "exceeds 64 characters");
	assert_string_equal(err.msg, "metadata: key 'xxxxxxxxxxxxxxxx...' exceeds 64 characters");
	CREATE_ERR("{\"name\":\"a\",\"metadata\":{\"\":\"v\"}}", PERMISSIVE, 400,
		   "invalid_metadata", "metadata: keys must be 1-64 characters");
	free(key);
}

static void test_metadata_value_rules(void **state)
{
	char *value = unit_rep(SECRET, 60); /* 720 characters */
	struct verr err;

	(void)state;
	err = CREATE_ERR_J(json_pack("{s:s,s:{s:s}}", "name", "a", "metadata", "foo", value),
			   PERMISSIVE, 400, "invalid_metadata",
			   "metadata.foo: value exceeds 512 characters");
	assert_null(strstr(err.msg, SECRET));
	CREATE_ERR("{\"name\":\"a\",\"metadata\":{\"n\":5}}", PERMISSIVE, 400, "invalid_metadata",
		   "metadata.n: value must be a string");
	CREATE_ERR("{\"name\":\"a\",\"metadata\":{\"n\":null}}", PERMISSIVE, 400,
		   "invalid_metadata", "metadata.n");
	CREATE_ERR("{\"name\":\"a\",\"metadata\":[]}", PERMISSIVE, 400, "invalid_metadata",
		   "'metadata' must be an object");
	CREATE_ERR("{\"name\":\"a\",\"metadata\":\"x\"}", PERMISSIVE, 400, "invalid_metadata",
		   "'metadata'");
	free(value);
}

static void test_metadata_names_each_problem(void **state)
{
	char *key = unit_rep("x", 70);
	char *value = unit_rep("v", META_VALUE_MAX + 1);
	json_t *meta = json_object();
	struct verr err;

	(void)state;
	json_object_set_new(meta, key, json_string("ok"));
	json_object_set_new(meta, "foo", json_string(value));
	json_object_set_new(meta, "bar", json_true());
	err = CREATE_ERR_J(json_pack("{s:s,s:o}", "name", "a", "metadata", meta), PERMISSIVE, 400,
			   "invalid_metadata", "metadata");
	assert_string_equal(err.msg, "metadata: key 'xxxxxxxxxxxxxxxx...' exceeds 64 characters; "
				     "metadata.foo: value exceeds 512 characters; "
				     "metadata.bar: value must be a string");
	free(key);
	free(value);
}

static void test_metadata_key_echo_sanitised(void **state)
{
	struct verr err;

	(void)state;
	err = CREATE_ERR("{\"name\":\"a\",\"metadata\":{\"a\\nb\":7}}", PERMISSIVE, 400,
			 "invalid_metadata", "metadata.a?b: value must be a string");
	assert_null(strchr(err.msg, '\n'));
}

static void test_meta_functions(void **state)
{
	struct verr err = { 0 };
	json_t *stored = unit_parse(__LINE__, "{\"a\":\"1\",\"b\":\"2\"}");
	json_t *patch = unit_parse(__LINE__, "{\"a\":null,\"b\":\"\",\"c\":\"3\"}");
	json_t *bad = unit_parse(__LINE__, "{\"x\":[]}");
	json_t *m;

	(void)state;
	m = meta_validate(NULL, "metadata", &err);
	assert_json(m, "{}");
	json_decref(m);
	m = meta_validate(json_null(), "metadata", &err);
	assert_json(m, "{}");
	json_decref(m);

	m = meta_patch(stored, patch, "metadata", &err);
	assert_json(m, "{\"c\":\"3\"}");
	assert_json(stored, "{\"a\":\"1\",\"b\":\"2\"}"); /* not modified */
	json_decref(m);
	m = meta_patch(stored, NULL, "metadata", &err);
	assert_json(m, "{\"a\":\"1\",\"b\":\"2\"}");
	json_decref(m);
	m = meta_patch(NULL, patch, "metadata", &err);
	assert_json(m, "{\"c\":\"3\"}");
	json_decref(m);

	assert_null(meta_patch(stored, bad, "metadata", &err));
	assert_int_equal(err.status, 400);
	assert_string_equal(err.code, "invalid_metadata");
	assert_non_null(strstr(err.msg, "metadata.x"));
	json_decref(bad);
	bad = json_string("x");
	assert_null(meta_patch(stored, bad, "metadata", &err));
	assert_string_equal(err.code, "invalid_metadata");
	assert_json(stored, "{\"a\":\"1\",\"b\":\"2\"}");

	json_decref(stored);
	json_decref(patch);
	json_decref(bad);
}

/* --- config ------------------------------------------------------------------------------ */

static void test_config_defaults(void **state)
{
	(void)state;
	ASSERT_CONFIG("{\"name\":\"a\"}", default_config);
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":null}", default_config);
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{}}", default_config);
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"type\":\"cloud\"}}", default_config);
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"networking\":null,"
		      "\"packages\":null}}",
		      default_config);
}

static void test_config_type(void **state)
{
	(void)state;
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"packages\":{\"pip\":[\"x\"]}}}",
		      "{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},"
		      "\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],"
		      "\"go\":[],\"npm\":[],\"pip\":[\"x\"]}}");
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"kubernetes\"}}", "'config.type'");
	BAD("{\"name\":\"a\",\"config\":{\"type\":5}}", "'config.type'");
	BAD("{\"name\":\"a\",\"config\":{\"type\":null}}", "'config.type'");
	BAD("{\"name\":\"a\",\"config\":\"cloud\"}", "'config'");
	BAD("{\"name\":\"a\",\"config\":[]}", "'config'");
}

static void test_self_hosted(void **state)
{
	(void)state;
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\"}}",
		      "{\"type\":\"self_hosted\"}");
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\",\"networking\":"
	    "{\"type\":\"unrestricted\"}}}",
	    "'config.networking'");
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\",\"packages\":null}}",
	    "'config.packages'");
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\",\"foo\":1}}", "'config.foo'");
}

static void test_cloud_unknown_field(void **state)
{
	(void)state;
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"foo\":1}}",
	    "unknown field 'config.foo'");
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"scope\":\"account\"}}",
	    "unknown field 'config.scope'");
}

static void test_networking_unrestricted(void **state)
{
	(void)state;
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"unrestricted\"}}}",
		      default_config);
	BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"unrestricted\",\"foo\":1}}}",
	    "unknown field 'config.networking.foo'");
	BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"unrestricted\","
	    "\"allowed_hosts\":[]}}}",
	    "'config.networking.allowed_hosts'");
	BAD("{\"name\":\"a\",\"config\":{\"networking\":{}}}", "'config.networking.type'");
	BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"open\"}}}",
	    "'config.networking.type'");
	BAD("{\"name\":\"a\",\"config\":{\"networking\":\"unrestricted\"}}",
	    "'config.networking' must be an object");
}

static void test_networking_limited(void **state)
{
	(void)state;
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\"}}}",
		      "{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		      "\"allowed_hosts\":[],"
		      "\"allow_mcp_servers\":false,\"allow_package_managers\":false},"
		      "\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],"
		      "\"go\":[],\"npm\":[],\"pip\":[]}}");
	/* null means "not given" (the SDK's params are nullable) */
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
		      "\"allowed_hosts\":null,\"allow_mcp_servers\":null,"
		      "\"allow_package_managers\":null}}}",
		      "{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		      "\"allowed_hosts\":[],"
		      "\"allow_mcp_servers\":false,\"allow_package_managers\":false},"
		      "\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],"
		      "\"go\":[],\"npm\":[],\"pip\":[]}}");
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"networking\":"
		      "{\"type\":\"limited\",\"allowed_hosts\":[\"API.Example.COM\","
		      "\"*.Assets.example.com\",\"10.0.0.1\"],\"allow_mcp_servers\":true,"
		      "\"allow_package_managers\":false}}}",
		      "{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\",\"allowed_hosts\":"
		      "[\"api.example.com\",\"*.assets.example.com\",\"10.0.0.1\"],"
		      "\"allow_mcp_servers\":true,\"allow_package_managers\":false},"
		      "\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],"
		      "\"go\":[],\"npm\":[],\"pip\":[]}}");
	BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\",\"foo\":true}}}",
	    "unknown field 'config.networking.foo'");
}

static void test_networking_flags_must_be_boolean(void **state)
{
	static const char *const flags[] = { "allow_mcp_servers", "allow_package_managers" };
	static const char *const values[] = { "1", "0", "\"true\"", "[]", "{}" };
	char body[256], needle[64];

	(void)state;
	for (size_t f = 0; f < 2; f++) {
		snprintf(needle, sizeof(needle), "'config.networking.%s' must be a boolean",
			 flags[f]);
		for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
			snprintf(body, sizeof(body),
				 "{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
				 "\"%s\":%s}}}",
				 flags[f], values[v]);
			BAD(body, needle);
		}
	}
}

static void test_allowed_hosts_shape(void **state)
{
	json_t *hosts = json_array();
	struct env_fields f;
	struct verr err;

	(void)state;
	BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
	    "\"allowed_hosts\":\"a.com\"}}}",
	    "'config.networking.allowed_hosts' must be an array");
	err = BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
		  "\"allowed_hosts\":[\"a.com\",\"b.com\",5]}}}",
		  "'config.networking.allowed_hosts[2]'");
	assert_string_equal(err.msg, "'config.networking.allowed_hosts[2]' must be a string");

	for (size_t i = 0; i < ALLOWED_HOSTS_MAX; i++) {
		char host[32];

		snprintf(host, sizeof(host), "h%zu.example.com", i);
		json_array_append_new(hosts, json_string(host));
	}
	CREATE_OK_J(json_pack("{s:s,s:{s:{s:s,s:O}}}", "name", "a", "config", "networking", "type",
			      "limited", "allowed_hosts", hosts),
		    PERMISSIVE, &f);
	env_fields_release(&f);
	json_array_append_new(hosts, json_string("one-too-many.example.com"));
	BAD_J(json_pack("{s:s,s:{s:{s:s,s:o}}}", "name", "a", "config", "networking", "type",
			"limited", "allowed_hosts", hosts),
	      "'config.networking.allowed_hosts' must have at most 256 entries");
}

static void test_allowed_hosts_entry_refused(void **state)
{
	struct verr err;

	(void)state;
	err = BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
		  "\"allowed_hosts\":[\"ok.example.com\",\"https://" SECRET ".example.com\"]}}}",
		  "'config.networking.allowed_hosts[1]'");
	assert_null(strstr(err.msg, SECRET));
	BAD("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
	    "\"allowed_hosts\":[\"a.*.com\"]}}}",
	    "'config.networking.allowed_hosts[0]'");
	BAD_J(json_pack("{s:s,s:{s:{s:s,s:[s#]}}}", "name", "a", "config", "networking", "type",
			"limited", "allowed_hosts", "a.com\0evil", (size_t)10),
	      "'config.networking.allowed_hosts[0]'");
}

static void test_host_pattern_valid(void **state)
{
	static const char *const good[] = {
		"example.com",
		"api.example.com",
		"*.assets.example.com",
		"localhost",
		"EXAMPLE.COM",
		"a-b.c-d.io",
		"x1.y2",
		"10.0.0.1",
		"255.255.255.255",
		"0.0.0.0",
		"*.com",
		"xn--bcher-kva.example",
		/* 63-character label */
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
	};
	static const char *const bad[] = {
		"",
		" example.com",
		"example.com ",
		"\texample.com",
		"https://example.com",
		"example.com:443",
		"example.com/path",
		"example.com?q=1",
		"example.com#f",
		"user@example.com",
		"user:pw@example.com",
		"[::1]",
		"::1",
		"2001:db8::1",
		"[2001:db8::1]:80",
		"a.*.com",
		"*example.com",
		"*",
		"*.",
		"example.*",
		"*.*.com",
		"**.example.com",
		".example.com",
		"example.com.",
		"example..com",
		"-a.com",
		"a-.com",
		"a_b.com",
		"exa mple.com",
		"256.1.1.1",
		"1.2.3",
		"1.2.3.4.5",
		"01.2.3.4",
		"1.2.3.4:80",
		"*.10.0.0.1",
		"123",
		"foo.123",
		"caf\xc3\xa9.com",
		/* 64-character label */
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.com",
	};
	char *long_ok = unit_rep("abcdefghi.", 25); /* 250 characters ending in '.' */
	char *long_bad;

	(void)state;
	unit_pred_cases("host_pattern_valid", host_pattern_valid, good, UNIT_LEN(good), bad,
			UNIT_LEN(bad));
	assert_false(host_pattern_valid(NULL));

	long_ok[249] = 'x'; /* 250 characters, last label "abcdefghix" */
	long_bad = malloc(260);
	assert_non_null(long_bad);
	snprintf(long_bad, 260, "%sabc", long_ok); /* 253 characters */
	assert_true(host_pattern_valid(long_bad));
	snprintf(long_bad, 260, "%sabcd", long_ok); /* 254 characters */
	assert_false(host_pattern_valid(long_bad));
	free(long_ok);
	free(long_bad);
}

/* --- packages --------------------------------------------------------------------------- */

static void test_packages_normalised(void **state)
{
	(void)state;
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"type\":\"cloud\",\"packages\":{"
		      "\"type\":\"packages\",\"apt\":[\"curl\"],\"cargo\":[\"ripgrep@14.1.0\"],"
		      "\"gem\":[\"rails:7.1\"],\"go\":[\"golang.org/x/tools/gopls@v0.15.0\"],"
		      "\"npm\":[\"@types/node@^20\"],\"pip\":[\"numpy==1.26.*\","
		      "\"requests[socks]>=2\"]}}}",
		      "{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"},"
		      "\"packages\":{\"type\":\"packages\",\"apt\":[\"curl\"],"
		      "\"cargo\":[\"ripgrep@14.1.0\"],\"gem\":[\"rails:7.1\"],"
		      "\"go\":[\"golang.org/x/tools/gopls@v0.15.0\"],\"npm\":[\"@types/node@^20\"],"
		      "\"pip\":[\"numpy==1.26.*\",\"requests[socks]>=2\"]}}");
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"packages\":{\"apt\":null,\"cargo\":null,"
		      "\"gem\":null,\"go\":null,\"npm\":null,\"pip\":null}}}",
		      default_config);
	ASSERT_CONFIG("{\"name\":\"a\",\"config\":{\"packages\":{}}}", default_config);
}

static void test_packages_shape(void **state)
{
	(void)state;
	BAD("{\"name\":\"a\",\"config\":{\"packages\":{\"type\":\"pkgs\"}}}",
	    "'config.packages.type' must be 'packages'");
	BAD("{\"name\":\"a\",\"config\":{\"packages\":{\"type\":null}}}", "'config.packages.type'");
	BAD("{\"name\":\"a\",\"config\":{\"packages\":{\"brew\":[\"wget\"]}}}",
	    "unknown field 'config.packages.brew'");
	BAD("{\"name\":\"a\",\"config\":{\"packages\":[\"numpy\"]}}",
	    "'config.packages' must be an object");
	BAD("{\"name\":\"a\",\"config\":{\"packages\":{\"pip\":\"numpy\"}}}",
	    "'config.packages.pip' must be an array");
	BAD("{\"name\":\"a\",\"config\":{\"packages\":{\"npm\":[\"a\",{}]}}}",
	    "'config.packages.npm[1]' must be a string");
	BAD("{\"name\":\"a\",\"config\":{\"packages\":{\"go\":[null]}}}",
	    "'config.packages.go[0]' must be a string");
}

/* In test_package_entries: create keeps the entry as given (as pip[0]); else a case names why
 * the entry is refused (as pip[3], after "a", "b", "c"), and the refusal must not echo SECRET. */
#define ACCEPTED NULL

static void test_package_entries(void **state)
{
	static const struct {
		const char *entry;
		const char *why;
	} cases[] = {
		{ "", "must not be empty or blank" },
		{ "   ", "must not be empty or blank" },
		{ " \t ", "must not be empty or blank" },
		{ "-e" SECRET, "must not start with '-'" },
		{ "--index-url=https://" SECRET, "must not start with '-'" },
		{ SECRET "\nnumpy", "must not contain control characters" },
		{ SECRET "\r", "must not contain control characters" },
		{ "a\tb" SECRET, "must not contain control characters" },
		{ SECRET "\x01", "must not contain control characters" },
		{ SECRET "\x7f", "must not contain control characters" },
		{ "https://user:" SECRET "@pypi.example.com/simple/x.whl",
		  "must not contain a URL with credentials" },
		{ "git+https://" SECRET "@github.com/o/r.git",
		  "must not contain a URL with credentials" },
		{ "pkg @ https://u:" SECRET "@files.example.com/pkg.whl",
		  "must not contain a URL with credentials" },
		{ "numpy", ACCEPTED },
		{ "numpy==1.26.*", ACCEPTED },
		{ "git+https://github.com/o/r.git", ACCEPTED },
		{ "a-b", ACCEPTED },
		{ "pkg @ https://files.example.com/x@y.whl", ACCEPTED },
		{ "github.com/x/y@v1.2.3", ACCEPTED },
		{ "@scope/pkg", ACCEPTED },
		{ "lodash@^4", ACCEPTED },
		{ "name with-inner-dash", ACCEPTED },
		{ "\xc3\xbc-paket", ACCEPTED },
		{ " numpy", ACCEPTED },
		{ "https://example.com/path?user=a@b", ACCEPTED },
	};
	char *max = unit_rep("p", PKG_ENTRY_MAX);
	struct env_fields f;
	char needle[128];

	(void)state;
	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		struct verr err;
		json_t *pip;

		if (cases[i].why == ACCEPTED) {
			CREATE_OK_J(json_pack("{s:s,s:{s:{s:[s]}}}", "name", "a", "config",
					      "packages", "pip", cases[i].entry),
				    PERMISSIVE, &f);
			pip = json_object_get(json_object_get(f.config, "packages"), "pip");
			assert_string_equal(json_string_value(json_array_get(pip, 0)),
					    cases[i].entry);
			env_fields_release(&f);
			continue;
		}
		snprintf(needle, sizeof(needle), "'config.packages.pip[3]' %s", cases[i].why);
		err = BAD_J(json_pack("{s:s,s:{s:{s:[s,s,s,s]}}}", "name", "a", "config",
				      "packages", "pip", "a", "b", "c", cases[i].entry),
			    needle);
		if (strstr(err.msg, SECRET))
			fail_msg("case %zu echoed the entry: %s", i, err.msg);
	}
	/* An embedded NUL is a control character too. */
	BAD_J(json_pack("{s:s,s:{s:{s:[s#]}}}", "name", "a", "config", "packages", "apt",
			"curl\0-rf", (size_t)8),
	      "'config.packages.apt[0]' must not contain control characters");
	CREATE_OK_J(
		json_pack("{s:s,s:{s:{s:[s]}}}", "name", "a", "config", "packages", "cargo", max),
		PERMISSIVE, &f);
	env_fields_release(&f);
	free(max);
}

static void test_package_limits(void **state)
{
	json_t *list = json_array();
	char *over = unit_rep("p", PKG_ENTRY_MAX + 1);
	struct env_fields f;

	(void)state;
	for (size_t i = 0; i < PKG_MAX_ENTRIES; i++) {
		char name[32];

		snprintf(name, sizeof(name), "p%zu", i);
		json_array_append_new(list, json_string(name));
	}
	CREATE_OK_J(json_pack("{s:s,s:{s:{s:O}}}", "name", "a", "config", "packages", "npm", list),
		    PERMISSIVE, &f);
	env_fields_release(&f);
	json_array_append_new(list, json_string("extra"));
	BAD_J(json_pack("{s:s,s:{s:{s:o}}}", "name", "a", "config", "packages", "npm", list),
	      "'config.packages.npm' must have at most 256 entries");
	BAD_J(json_pack("{s:s,s:{s:{s:[s]}}}", "name", "a", "config", "packages", "gem", over),
	      "'config.packages.gem[0]' must be at most 512 bytes");
	free(over);
}

/* --- scope ------------------------------------------------------------------------------ */

static void test_scope_create(void **state)
{
	struct env_fields f;

	(void)state;
	CREATE_OK("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\"},\"scope\":\"account\"}",
		  PERMISSIVE, &f);
	assert_string_equal(f.scope, "account");
	env_fields_release(&f);
	CREATE_OK("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\"},"
		  "\"scope\":\"organization\"}",
		  PERMISSIVE, &f);
	assert_string_equal(f.scope, "organization");
	env_fields_release(&f);
	CREATE_OK("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\"}}", PERMISSIVE, &f);
	assert_null(f.scope);
	env_fields_release(&f);
	CREATE_OK("{\"name\":\"a\",\"scope\":null}", PERMISSIVE, &f);
	assert_null(f.scope);
	env_fields_release(&f);

	BAD("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\"},\"scope\":\"team\"}",
	    "'scope' must be 'account' or 'organization'");
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\"},\"scope\":1}", "'scope'");
	BAD("{\"name\":\"a\",\"config\":{\"type\":\"cloud\"},\"scope\":\"account\"}",
	    "'scope' is only allowed when 'config.type' is 'self_hosted'");
	BAD("{\"name\":\"a\",\"scope\":\"organization\"}", "'scope'");
}

/* --- admission -------------------------------------------------------------------------- */

#define ADMIT NULL /* in test_admission_table: the backend accepts the body */

static void test_backend_table_known(void **state)
{
	(void)state;
	for (size_t b = 0; b < BACKEND_COUNT; b++)
		assert_non_null(backend_lookup(all_backends[b]));
	assert_null(backend_lookup("vmware"));
}

static void test_admission_table(void **state)
{
#define PKGS "config.packages must be empty"
#define APT "config.packages.apt"
#define NET "config.networking"
	/* each body with, per backend in all_backends' order (local, bwrap, srt, docker,
	 * opensandbox, e2b, cube, daytona), the field its 422 must name, or ADMIT */
	static const struct {
		const char *body;
		const char *expect[BACKEND_COUNT];
	} cases[] = {
		{ "{\"name\":\"a\"}", { ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT } },
		{ "{\"name\":\"a\",\"config\":{\"packages\":{\"pip\":[\"numpy\"]}}}",
		  { PKGS, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT } },
		{ "{\"name\":\"a\",\"config\":{\"packages\":{\"apt\":[\"curl\"]}}}",
		  { PKGS, APT, APT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT } },
		{ "{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\"}}}",
		  { NET, NET, ADMIT, NET, ADMIT, NET, NET, NET } },
		{ "{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
		  "\"allowed_hosts\":[\"pypi.org\"],\"allow_package_managers\":false},"
		  "\"packages\":{\"pip\":[\"numpy\"]}}}",
		  { PKGS, NET, ADMIT, NET, ADMIT, NET, NET, NET } },
		{ "{\"name\":\"a\",\"config\":{\"type\":\"self_hosted\"},"
		  "\"scope\":\"account\"}",
		  { ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT } },
		{ "{\"name\":\"a\",\"config\":{\"packages\":{\"pip\":[],\"apt\":null}}}",
		  { ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT, ADMIT } },
	};
#undef PKGS
#undef APT
#undef NET
	char needle[128];

	(void)state;
	for (size_t b = 0; b < BACKEND_COUNT; b++) {
		for (size_t i = 0; i < UNIT_LEN(cases); i++) {
			struct env_fields f;
			struct verr err;

			if (!cases[i].expect[b]) {
				create_ok_((int)(b * 100 + i), unit_parse(__LINE__, cases[i].body),
					   all_backends[b], &f);
				env_fields_release(&f);
				continue;
			}
			err = create_err_((int)(b * 100 + i), unit_parse(__LINE__, cases[i].body),
					  all_backends[b], 422, "", cases[i].expect[b]);
			snprintf(needle, sizeof(needle), "backend '%s'", all_backends[b]);
			assert_non_null(strstr(err.msg, needle));
		}
	}
}

static void test_admission_messages(void **state)
{
	struct verr err;

	(void)state;
	err = CREATE_ERR("{\"name\":\"a\",\"config\":{\"packages\":{\"npm\":[\"x\"]}}}", "local",
			 422, "", "config.packages");
	assert_string_equal(err.msg, "backend 'local' cannot install packages; "
				     "config.packages must be empty");
	err = CREATE_ERR("{\"name\":\"a\",\"config\":{\"packages\":{\"apt\":[\"x\"]}}}", "bwrap",
			 422, "", "config.packages.apt");
	assert_string_equal(err.msg, "backend 'bwrap' cannot install apt packages; "
				     "config.packages.apt must be empty");
	err = CREATE_ERR("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
			 "\"allowed_hosts\":[\"pypi.org\"]},\"packages\":{\"apt\":[\"x\"]}}}",
			 "srt", 422, "", "config.packages.apt");
	assert_string_equal(err.msg, "backend 'srt' cannot install apt packages; "
				     "config.packages.apt must be empty");
	err = CREATE_ERR("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\"}}}",
			 "docker", 422, "", "config.networking");
	assert_string_equal(err.msg, "backend 'docker' cannot enforce limited networking; "
				     "config.networking must be unrestricted");
}

static void test_admission_after_validation(void **state)
{
	struct env_fields f;

	(void)state;
	/* a 400 wins over a 422 */
	CREATE_ERR("{\"name\":\"a\",\"config\":{\"packages\":{\"pip\":[\"-e\"]}}}", "local", 400,
		   "", "'config.packages.pip[0]'");
	CREATE_ERR("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\","
		   "\"allowed_hosts\":[\"*\"]}}}",
		   "docker", 400, "", "'config.networking.allowed_hosts[0]'");
	CREATE_ERR("{\"name\":\"\",\"config\":{\"networking\":{\"type\":\"limited\"}}}", "local",
		   400, "", "'name'");
	/* NULL caps: admission skipped */
	CREATE_OK("{\"name\":\"a\",\"config\":{\"networking\":{\"type\":\"limited\"},"
		  "\"packages\":{\"apt\":[\"x\"]}}}",
		  NULL, &f);
	env_fields_release(&f);
}

/* --- update ----------------------------------------------------------------------------- */

static const char full_env[] =
	"{\"name\":\"env\",\"description\":\"desc\",\"metadata\":{\"a\":\"1\",\"b\":\"2\"},"
	"\"config\":{\"networking\":{\"type\":\"limited\",\"allowed_hosts\":[\"a.example.com\"],"
	"\"allow_mcp_servers\":true,\"allow_package_managers\":true},"
	"\"packages\":{\"pip\":[\"numpy\"],\"npm\":[\"left-pad\"]}}}";

static const char full_config[] =
	"{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\",\"allowed_hosts\":"
	"[\"a.example.com\"],\"allow_mcp_servers\":true,\"allow_package_managers\":true},"
	"\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],\"go\":[],"
	"\"npm\":[\"left-pad\"],\"pip\":[\"numpy\"]}}";

/* The fixture of the update tests: *STATE is the environment created from full_env. */
static int full_env_setup(void **state)
{
	struct env_fields *cur = malloc(sizeof(*cur));

	if (!cur)
		return -1;
	*cur = STORED(full_env);
	*state = cur;
	return 0;
}

static int full_env_teardown(void **state)
{
	env_fields_release(*state);
	free(*state);
	return 0;
}

/* A test run with the full_env fixture */
#define FULL_ENV_TEST(f) cmocka_unit_test_setup_teardown(f, full_env_setup, full_env_teardown)

static void test_update_empty(void **state)
{
	struct env_fields *cur = *state;
	struct env_fields before = { 0 };

	fields_copy(cur, &before);
	UPDATE_OK(cur, "{}", 0);
	assert_true(fields_equal(cur, &before));
	/* re-sending identical values is not a change either */
	UPDATE_OK(cur,
		  "{\"name\":\"env\",\"description\":\"desc\",\"metadata\":{\"a\":\"1\","
		  "\"zz\":null},\"config\":{\"type\":\"cloud\"}}",
		  0);
	assert_true(fields_equal(cur, &before));
	env_fields_release(&before);
}

static void test_update_body(void **state)
{
	struct env_fields *cur = *state;

	UPDATE_BAD(cur, "[]", "body");
	UPDATE_BAD(cur, "{\"bogus\":1}", "unknown field 'bogus'");
}

static void test_update_name(void **state)
{
	struct env_fields *cur = *state;
	char *over = unit_rep("n", ENV_NAME_MAX + 1);

	UPDATE_BAD(cur, "{\"name\":null}", "'name'");
	UPDATE_BAD(cur, "{\"name\":\"\"}", "'name' must be 1-256 characters");
	UPDATE_BAD(cur, "{\"name\":7}", "'name'");
	update_err_(__LINE__, cur, json_pack("{s:s}", "name", over), PERMISSIVE, 400, "", "'name'");
	UPDATE_OK(cur, "{\"name\":\"renamed\"}", 1);
	assert_string_equal(cur->name, "renamed");
	UPDATE_OK(cur, "{\"name\":\"renamed\"}", 0);
	UPDATE_OK(cur, "{\"description\":\"desc\"}", 0);
	assert_string_equal(cur->name, "renamed");
	free(over);
}

static void test_update_description(void **state)
{
	struct env_fields *cur = *state;
	char *over = unit_rep("d", ENV_DESCRIPTION_MAX + 1);

	UPDATE_OK(cur, "{\"name\":\"x\"}", 1);
	assert_string_equal(json_string_value(cur->description), "desc");
	UPDATE_OK(cur, "{\"description\":\"\"}", 1);
	assert_true(json_is_string(cur->description));
	assert_string_equal(json_string_value(cur->description), "");
	UPDATE_OK(cur, "{\"description\":null}", 1);
	assert_true(json_is_null(cur->description));
	UPDATE_OK(cur, "{\"description\":null}", 0);
	UPDATE_BAD(cur, "{\"description\":[]}", "'description'");
	update_err_(__LINE__, cur, json_pack("{s:s}", "description", over), PERMISSIVE, 400, "",
		    "'description'");
	free(over);
}

static void test_update_metadata_patch(void **state)
{
	struct env_fields *cur = *state;

	UPDATE_OK(cur, "{\"metadata\":{\"c\":\"3\",\"a\":\"one\"}}", 1);
	assert_json(cur->metadata, "{\"a\":\"one\",\"b\":\"2\",\"c\":\"3\"}");
	UPDATE_OK(cur, "{\"metadata\":{\"a\":null,\"b\":\"\"}}", 1);
	assert_json(cur->metadata, "{\"c\":\"3\"}");
	UPDATE_OK(cur, "{\"metadata\":{\"missing\":null,\"gone\":\"\"}}", 0);
	UPDATE_OK(cur, "{\"metadata\":{}}", 0);
	UPDATE_OK(cur, "{\"metadata\":null}", 0);
	assert_json(cur->metadata, "{\"c\":\"3\"}");
	UPDATE_ERR(cur, "{\"metadata\":{\"n\":5}}", PERMISSIVE, 400, "invalid_metadata",
		   "metadata.n");
	UPDATE_ERR(cur, "{\"metadata\":[]}", PERMISSIVE, 400, "invalid_metadata", "'metadata'");
}

static void test_update_metadata_limits_on_merge(void **state)
{
	struct env_fields cur;
	json_t *body = json_pack("{s:s,s:o}", "name", "a", "metadata", meta_n(META_MAX_KEYS));
	char *value = unit_rep("v", META_VALUE_MAX + 1);
	struct verr err;

	(void)state;
	create_ok_(__LINE__, body, PERMISSIVE, &cur);
	err = UPDATE_ERR(&cur, "{\"metadata\":{\"k99\":\"new\"}}", PERMISSIVE, 400,
			 "invalid_metadata", "at most 16 keys");
	assert_null(strstr(err.msg, "new"));
	/* deleting one makes room for another in the same patch */
	UPDATE_OK(&cur, "{\"metadata\":{\"k0\":null,\"k99\":\"new\"}}", 1);
	assert_int_equal(json_object_size(cur.metadata), META_MAX_KEYS);
	update_err_(__LINE__, &cur, json_pack("{s:{s:s}}", "metadata", "k1", value), PERMISSIVE,
		    400, "invalid_metadata", "metadata.k1: value exceeds 512 characters");
	free(value);
	env_fields_release(&cur);
}

static void test_update_config_type_required(void **state)
{
	struct env_fields *cur = *state;

	UPDATE_BAD(cur, "{\"config\":{}}", "'config.type'");
	UPDATE_BAD(cur, "{\"config\":{\"packages\":{\"pip\":[]}}}", "'config.type'");
	UPDATE_BAD(cur, "{\"config\":null}", "'config'");
	UPDATE_BAD(cur, "{\"config\":\"cloud\"}", "'config'");
	UPDATE_BAD(cur, "{\"config\":{\"type\":\"vm\"}}", "'config.type'");
}

static void test_update_cloud_keeps_omitted(void **state)
{
	struct env_fields *cur = *state;

	UPDATE_OK(cur, "{\"config\":{\"type\":\"cloud\"}}", 0);
	assert_json(cur->config, full_config);
	UPDATE_OK(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{\"apt\":[\"curl\"]}}}", 1);
	assert_json(json_object_get(cur->config, "networking"),
		    "{\"type\":\"limited\",\"allowed_hosts\":[\"a.example.com\"],"
		    "\"allow_mcp_servers\":true,\"allow_package_managers\":true}");
	/* a given packages object replaces all six lists */
	assert_json(json_object_get(cur->config, "packages"),
		    "{\"type\":\"packages\",\"apt\":[\"curl\"],\"cargo\":[],\"gem\":[],\"go\":[],"
		    "\"npm\":[],\"pip\":[]}");
	UPDATE_OK(cur,
		  "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"}}}",
		  1);
	assert_json(json_object_get(cur->config, "networking"), "{\"type\":\"unrestricted\"}");
	assert_json(json_object_get(cur->config, "packages"),
		    "{\"type\":\"packages\",\"apt\":[\"curl\"],\"cargo\":[],\"gem\":[],\"go\":[],"
		    "\"npm\":[],\"pip\":[]}");
	UPDATE_OK(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{}}}", 1);
	assert_json(cur->config, default_config);
}

static void test_update_limited_merge(void **state)
{
	struct env_fields *cur = *state;

	UPDATE_OK(cur,
		  "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		  "\"allowed_hosts\":[\"B.example.com\"]}}}",
		  1);
	assert_json(json_object_get(cur->config, "networking"),
		    "{\"type\":\"limited\",\"allowed_hosts\":[\"b.example.com\"],"
		    "\"allow_mcp_servers\":true,\"allow_package_managers\":true}");
	UPDATE_OK(cur,
		  "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		  "\"allow_mcp_servers\":false,\"allowed_hosts\":null}}}",
		  1);
	assert_json(json_object_get(cur->config, "networking"),
		    "{\"type\":\"limited\",\"allowed_hosts\":[\"b.example.com\"],"
		    "\"allow_mcp_servers\":false,\"allow_package_managers\":true}");
	UPDATE_OK(cur, "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\"}}}",
		  0);
	/* packages untouched throughout */
	assert_json(json_object_get(cur->config, "packages"),
		    "{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],\"go\":[],"
		    "\"npm\":[\"left-pad\"],\"pip\":[\"numpy\"]}");
	UPDATE_BAD(cur,
		   "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		   "\"allowed_hosts\":[\"http://x\"]}}}",
		   "'config.networking.allowed_hosts[0]'");
	UPDATE_BAD(cur,
		   "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		   "\"allow_package_managers\":\"yes\"}}}",
		   "'config.networking.allow_package_managers' must be a boolean");
}

static void test_update_unrestricted_to_limited(void **state)
{
	struct env_fields cur = STORED("{\"name\":\"a\"}");

	(void)state;
	UPDATE_OK(&cur,
		  "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		  "\"allow_mcp_servers\":true}}}",
		  1);
	assert_json(json_object_get(cur.config, "networking"),
		    "{\"type\":\"limited\",\"allowed_hosts\":[],\"allow_mcp_servers\":true,"
		    "\"allow_package_managers\":false}");
	/* limited -> unrestricted -> limited starts from defaults again */
	UPDATE_OK(&cur,
		  "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"}}}",
		  1);
	UPDATE_OK(&cur, "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\"}}}",
		  1);
	assert_json(json_object_get(cur.config, "networking"),
		    "{\"type\":\"limited\",\"allowed_hosts\":[],\"allow_mcp_servers\":false,"
		    "\"allow_package_managers\":false}");
	env_fields_release(&cur);
}

static void test_update_null_networking_packages(void **state)
{
	struct env_fields *cur = *state;

	UPDATE_BAD(cur, "{\"config\":{\"type\":\"cloud\",\"networking\":null}}",
		   "'config.networking'");
	UPDATE_BAD(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":null}}", "'config.packages'");
	UPDATE_BAD(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{\"pip\":[\"\"]}}}",
		   "'config.packages.pip[0]'");
	UPDATE_BAD(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{\"brew\":[]}}}",
		   "'config.packages.brew'");
	UPDATE_BAD(cur,
		   "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		   "\"foo\":1}}}",
		   "'config.networking.foo'");
}

static void test_update_type_change(void **state)
{
	struct env_fields *cur = *state;

	UPDATE_BAD(cur, "{\"config\":{\"type\":\"self_hosted\",\"packages\":{}}}",
		   "'config.packages'");
	UPDATE_OK(cur, "{\"config\":{\"type\":\"self_hosted\"},\"scope\":\"account\"}", 1);
	assert_json(cur->config, "{\"type\":\"self_hosted\"}");
	assert_string_equal(cur->scope, "account");
	UPDATE_OK(cur, "{\"config\":{\"type\":\"self_hosted\"}}", 0);
	assert_string_equal(cur->scope, "account");
	/* back to cloud: defaults, scope cleared, stored cloud values are not resurrected */
	UPDATE_OK(cur, "{\"config\":{\"type\":\"cloud\"}}", 1);
	assert_json(cur->config, default_config);
	assert_null(cur->scope);
	UPDATE_OK(cur, "{\"config\":{\"type\":\"self_hosted\"}}", 1);
	assert_null(cur->scope);
	UPDATE_OK(cur,
		  "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\","
		  "\"allow_package_managers\":true},\"packages\":{\"pip\":[\"x\"]}}}",
		  1);
	assert_json(cur->config,
		    "{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\",\"allowed_hosts\":[],"
		    "\"allow_mcp_servers\":false,\"allow_package_managers\":true},"
		    "\"packages\":{\"type\":\"packages\",\"apt\":[],\"cargo\":[],\"gem\":[],"
		    "\"go\":[],\"npm\":[],\"pip\":[\"x\"]}}");
}

static void test_update_scope(void **state)
{
	struct env_fields cloud = STORED("{\"name\":\"c\"}");
	struct env_fields sh = STORED("{\"name\":\"s\",\"config\":{\"type\":\"self_hosted\"},"
				      "\"scope\":\"account\"}");

	(void)state;
	UPDATE_BAD(&cloud, "{\"scope\":\"account\"}",
		   "'scope' is only allowed when 'config.type' is 'self_hosted'");
	UPDATE_BAD(&cloud, "{\"scope\":\"account\",\"config\":{\"type\":\"cloud\"}}", "'scope'");
	UPDATE_OK(&cloud, "{\"scope\":null}", 0);
	assert_null(cloud.scope);

	UPDATE_OK(&sh, "{\"name\":\"t\"}", 1);
	assert_string_equal(sh.scope, "account");
	UPDATE_OK(&sh, "{\"scope\":\"organization\"}", 1);
	assert_string_equal(sh.scope, "organization");
	UPDATE_OK(&sh, "{\"scope\":\"organization\"}", 0);
	UPDATE_BAD(&sh, "{\"scope\":\"everyone\"}", "'scope' must be 'account' or 'organization'");
	UPDATE_BAD(&sh, "{\"scope\":\"account\",\"config\":{\"type\":\"cloud\"}}", "'scope'");
	UPDATE_OK(&sh, "{\"scope\":null}", 1);
	assert_null(sh.scope);
	UPDATE_OK(&sh, "{\"scope\":null}", 0);
	env_fields_release(&cloud);
	env_fields_release(&sh);
}

static void test_update_admission_on_merged(void **state)
{
	struct env_fields *cur = *state; /* limited + pip/npm, made on opensandbox */
	struct env_fields plain = STORED("{\"name\":\"p\",\"config\":{\"packages\":"
					 "{\"pip\":[\"numpy\"]}}}");

	/* touching only packages still judges the kept limited networking */
	UPDATE_ERR(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{\"pip\":[\"x\"]}}}",
		   "docker", 422, "", "config.networking");
	/* srt enforces the kept limited networking, and refuses apt like bwrap */
	UPDATE_ERR(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{\"apt\":[\"curl\"]}}}",
		   "srt", 422, "", "config.packages.apt");
	UPDATE_OK_ON(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{\"pip\":[\"x\"]}}}", "srt",
		     1);
	/* an update that does not touch config is not re-admitted */
	UPDATE_OK_ON(cur, "{\"name\":\"renamed\"}", "docker", 1);
	UPDATE_OK_ON(cur,
		     "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"}}}",
		     "docker", 1);
	UPDATE_ERR(cur, "{\"config\":{\"type\":\"cloud\",\"packages\":{\"apt\":[\"curl\"]}}}",
		   "bwrap", 422, "", "config.packages.apt");
	/* kept pip list under local */
	UPDATE_ERR(&plain,
		   "{\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"unrestricted\"}}}",
		   "local", 422, "", "config.packages");
	UPDATE_OK_ON(&plain, "{\"config\":{\"type\":\"cloud\",\"packages\":{}}}", "local", 1);
	UPDATE_OK_ON(&plain, "{\"config\":{\"type\":\"self_hosted\"}}", "local", 1);
	env_fields_release(&plain);
}

static void test_update_failure_leaves_cur(void **state)
{
	struct env_fields cur = STORED("{\"name\":\"s\",\"description\":\"d\","
				       "\"metadata\":{\"a\":\"1\"},"
				       "\"config\":{\"type\":\"self_hosted\"},"
				       "\"scope\":\"account\"}");

	(void)state;
	/* each body changes several fields before the one that fails */
	UPDATE_BAD(&cur,
		   "{\"name\":\"new\",\"description\":null,\"metadata\":{\"a\":null},"
		   "\"config\":{\"type\":\"cloud\"},\"scope\":\"organization\"}",
		   "'scope'");
	UPDATE_ERR(&cur,
		   "{\"name\":\"new\",\"config\":{\"type\":\"cloud\",\"networking\":"
		   "{\"type\":\"limited\"}}}",
		   "local", 422, "", "config.networking");
	UPDATE_BAD(&cur, "{\"name\":\"new\",\"metadata\":{\"b\":\"2\"},\"bogus\":true}", "bogus");
	env_fields_release(&cur);
}

UNIT_MAIN(
	UNIT_TESTS(test_utf8_chars, test_body_must_be_object, test_unknown_top_level_field,
		   test_name, test_description, test_metadata_accepted, test_metadata_too_many_keys,
		   test_metadata_key_length, test_metadata_value_rules,
		   test_metadata_names_each_problem, test_metadata_key_echo_sanitised,
		   test_meta_functions, test_config_defaults, test_config_type, test_self_hosted,
		   test_cloud_unknown_field, test_networking_unrestricted, test_networking_limited,
		   test_networking_flags_must_be_boolean, test_allowed_hosts_shape,
		   test_allowed_hosts_entry_refused, test_host_pattern_valid,
		   test_packages_normalised, test_packages_shape, test_package_entries,
		   test_package_limits, test_scope_create, test_backend_table_known,
		   test_admission_table, test_admission_messages, test_admission_after_validation),
	FULL_ENV_TEST(test_update_empty), FULL_ENV_TEST(test_update_body),
	FULL_ENV_TEST(test_update_name), FULL_ENV_TEST(test_update_description),
	FULL_ENV_TEST(test_update_metadata_patch), UNIT_TESTS(test_update_metadata_limits_on_merge),
	FULL_ENV_TEST(test_update_config_type_required),
	FULL_ENV_TEST(test_update_cloud_keeps_omitted), FULL_ENV_TEST(test_update_limited_merge),
	UNIT_TESTS(test_update_unrestricted_to_limited),
	FULL_ENV_TEST(test_update_null_networking_packages), FULL_ENV_TEST(test_update_type_change),
	UNIT_TESTS(test_update_scope), FULL_ENV_TEST(test_update_admission_on_merged),
	UNIT_TESTS(test_update_failure_leaves_cur))
