/* libFuzzer target: environment create and update validation (handlers/env_validate.c, with
 * meta_patch) and the egress policy of what it accepts (common/egress.c).
 *
 * Input: a request body. It is loaded as the router loads bodies (json_loadb with
 * JSON_REJECT_DUPLICATES), then validated as a create under no admission and under each
 * backend's capabilities, and as an update of a few stored states under the same.
 *
 * Checked: results are normalised and within the limits of docs/api.md §3; normalising is a fixed
 * point (a result fed back as a body gives itself); a backend only ever adds a 422 to what no
 * admission gives; a refused update leaves the stored state as it was; an update's `changed`
 * is true exactly when the state differs, and applying the same body twice changes nothing the
 * second time; error messages have a status, a text, and never quote a value (only keys). */
#include "fuzz.h"

#include "../../common/backend.h"
#include "../../common/egress.h"
#include "../../handlers/env_validate.h"

static const char *const backends[] = { "local", "bwrap", "docker", "opensandbox",
					"e2b",	 "cube",  "daytona" };
#define BACKEND_COUNT (sizeof(backends) / sizeof(backends[0]))
static const char *const managers[] = { "apt", "cargo", "gem", "go", "npm", "pip" };

/* Stored states an update applies to: what creates of these bodies store. */
static const char *const stored_bodies[] = {
	"{\"name\":\"base\"}",
	"{\"name\":\"limited\",\"description\":\"d\",\"metadata\":{\"a\":\"1\",\"b\":\"2\"},"
	"\"config\":{\"type\":\"cloud\",\"networking\":{\"type\":\"limited\",\"allowed_hosts\":"
	"[\"example.com\",\"*.pypi.org\",\"10.0.0.1\"],\"allow_mcp_servers\":true},"
	"\"packages\":{\"pip\":[\"requests==2.0\"],\"apt\":[\"curl\"]}}}",
	"{\"name\":\"self\",\"config\":{\"type\":\"self_hosted\"},\"scope\":\"account\"}",
	"{\"name\":\"full\",\"metadata\":{\"k0\":\"v\",\"k1\":\"v\",\"k2\":\"v\",\"k3\":\"v\","
	"\"k4\":\"v\",\"k5\":\"v\",\"k6\":\"v\",\"k7\":\"v\",\"k8\":\"v\",\"k9\":\"v\",\"ka\":"
	"\"v\","
	"\"kb\":\"v\",\"kc\":\"v\",\"kd\":\"v\",\"ke\":\"v\",\"kf\":\"v\"}}",
};
#define STORED_COUNT (sizeof(stored_bodies) / sizeof(stored_bodies[0]))

/* Updates are judged with no admission, and as local, bwrap and opensandbox (indexes of caps). */
static const size_t update_caps[] = { 0, 1, 2, 4 };

static struct env_fields stored[STORED_COUNT + 1];	   /* the last: name only, the rest NULL */
static const struct backend_caps *caps[BACKEND_COUNT + 1]; /* [0]: NULL, no admission */

static int str_is(json_t *v, const char *s)
{
	return json_is_string(v) && !strcmp(json_string_value(v), s);
}

static int cstr_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Equal as stored: a NULL description is null, NULL metadata is {}. */
static int fields_equal(const struct env_fields *a, const struct env_fields *b)
{
	json_t *null = json_null(), *empty = json_object();
	int eq = cstr_eq(a->name, b->name) &&
		 json_equal(a->description ? a->description : null,
			    b->description ? b->description : null) &&
		 json_equal(a->metadata ? a->metadata : empty, b->metadata ? b->metadata : empty) &&
		 ((!a->config && !b->config) || json_equal(a->config, b->config)) &&
		 cstr_eq(a->scope, b->scope);

	json_decref(empty);
	return eq;
}

static void fields_copy(const struct env_fields *from, struct env_fields *to)
{
	to->name = from->name ? strdup(from->name) : NULL;
	to->description = from->description ? json_deep_copy(from->description) : NULL;
	to->metadata = from->metadata ? json_deep_copy(from->metadata) : NULL;
	to->config = from->config ? json_deep_copy(from->config) : NULL;
	to->scope = from->scope ? strdup(from->scope) : NULL;
}

/* The body that would create F again. New reference. */
static json_t *fields_body(const struct env_fields *f)
{
	json_t *b = json_pack("{s:s, s:O, s:O, s:O}", "name", f->name, "description",
			      f->description, "metadata", f->metadata, "config", f->config);

	if (!b)
		abort();
	if (f->scope)
		json_object_set_new(b, "scope", json_string(f->scope));
	return b;
}

static void check_string_list(json_t *list, const char *what)
{
	json_t *v;
	size_t i;

	FUZZ_CHECK(json_is_array(list), "%s is not an array", what);
	json_array_foreach (list, i, v)
		FUZZ_CHECK(json_is_string(v), "%s[%zu] is not a string", what, i);
}

static void check_hosts(json_t *hosts)
{
	json_t *h;
	size_t i;

	check_string_list(hosts, "allowed_hosts");
	FUZZ_CHECK(json_array_size(hosts) <= ALLOWED_HOSTS_MAX, "%zu hosts",
		   json_array_size(hosts));
	json_array_foreach (hosts, i, h) {
		const char *s = json_string_value(h);

		FUZZ_CHECK(host_pattern_valid(s), "stored host '%s' is invalid", s);
		for (const char *p = s; *p; p++)
			FUZZ_CHECK(!(*p >= 'A' && *p <= 'Z'), "host '%s' not lower-cased", s);
	}
}

/* The egress policy of an accepted networking object is well formed. */
static void check_egress(json_t *networking)
{
	for (int install = 0; install < 2; install++) {
		json_t *p = egress_policy(networking, NULL, NULL, install), *h;
		const char *prev = NULL;
		size_t i;

		FUZZ_CHECK(p, "no egress policy for accepted networking");
		if (str_is(json_object_get(networking, "type"), "unrestricted")) {
			FUZZ_CHECK(json_is_null(p), "unrestricted networking has a host list");
		} else {
			check_string_list(p, "egress policy");
			json_array_foreach (p, i, h) {
				FUZZ_CHECK(!prev || strcmp(prev, json_string_value(h)) < 0,
					   "policy not sorted and unique at '%s'",
					   json_string_value(h));
				prev = json_string_value(h);
			}
		}
		json_decref(p);
	}
}

/* F is a normalised, admissible (under C, NULL: no admission) environment. */
static void check_fields(const struct env_fields *f, const struct backend_caps *c)
{
	json_t *cfg = f->config, *net, *pkgs, *v;
	const char *key, *type;
	int any = 0;

	FUZZ_CHECK(f->name && utf8_chars(f->name) >= 1 && utf8_chars(f->name) <= ENV_NAME_MAX,
		   "name");
	FUZZ_CHECK(json_is_null(f->description) ||
			   (json_is_string(f->description) &&
			    utf8_chars(json_string_value(f->description)) <= ENV_DESCRIPTION_MAX),
		   "description");
	FUZZ_CHECK(json_is_object(f->metadata) && json_object_size(f->metadata) <= META_MAX_KEYS,
		   "metadata");
	json_object_foreach (f->metadata, key, v) {
		FUZZ_CHECK(utf8_chars(key) >= 1 && utf8_chars(key) <= META_KEY_MAX, "metadata key");
		FUZZ_CHECK(json_is_string(v) && utf8_chars(json_string_value(v)) <= META_VALUE_MAX,
			   "metadata value");
	}
	FUZZ_CHECK(json_is_object(cfg), "config");
	type = json_string_value(json_object_get(cfg, "type"));
	FUZZ_CHECK(type, "config.type");
	FUZZ_CHECK(!f->scope ||
			   (!strcmp(type, "self_hosted") &&
			    (!strcmp(f->scope, "account") || !strcmp(f->scope, "organization"))),
		   "scope '%s' with config type '%s'", f->scope, type);
	if (!strcmp(type, "self_hosted")) {
		FUZZ_CHECK(json_object_size(cfg) == 1, "self_hosted config carries more than type");
		return;
	}
	FUZZ_CHECK(!strcmp(type, "cloud") && json_object_size(cfg) == 3, "config type '%s'", type);
	net = json_object_get(cfg, "networking");
	pkgs = json_object_get(cfg, "packages");
	if (str_is(json_object_get(net, "type"), "limited")) {
		FUZZ_CHECK(json_object_size(net) == 4 &&
				   json_is_boolean(json_object_get(net, "allow_mcp_servers")) &&
				   json_is_boolean(json_object_get(net, "allow_package_managers")),
			   "limited networking fields");
		check_hosts(json_object_get(net, "allowed_hosts"));
	} else {
		FUZZ_CHECK(str_is(json_object_get(net, "type"), "unrestricted") &&
				   json_object_size(net) == 1,
			   "networking");
	}
	check_egress(net);
	FUZZ_CHECK(json_is_object(pkgs) && json_object_size(pkgs) == 7 &&
			   str_is(json_object_get(pkgs, "type"), "packages"),
		   "packages");
	for (size_t m = 0; m < sizeof(managers) / sizeof(managers[0]); m++) {
		json_t *list = json_object_get(pkgs, managers[m]), *e;
		size_t i;

		check_string_list(list, managers[m]);
		FUZZ_CHECK(json_array_size(list) <= PKG_MAX_ENTRIES, "%s entries", managers[m]);
		json_array_foreach (list, i, e) {
			const char *s = json_string_value(e);

			FUZZ_CHECK(json_string_length(e) <= PKG_ENTRY_MAX && s[0] != '-' &&
					   strlen(s) == json_string_length(e),
				   "%s[%zu]", managers[m], i);
			for (const char *p = s; *p; p++)
				FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f,
					   "control byte in %s[%zu]", managers[m], i);
		}
		any |= json_array_size(list) > 0;
	}
	if (c) {
		FUZZ_CHECK(!any || c->packages, "packages admitted on %s", c->name);
		FUZZ_CHECK(!json_array_size(json_object_get(pkgs, "apt")) || c->apt,
			   "apt admitted on %s", c->name);
		FUZZ_CHECK(!str_is(json_object_get(net, "type"), "limited") || c->limited_egress,
			   "limited networking admitted on %s", c->name);
	}
}

/* ERR describes a refusal of BODY properly. */
static void check_error(const struct verr *err, json_t *body, int admission_possible)
{
	static const char *const echoed[] = { NULL };

	fuzz_check_verr(err, body, echoed, admission_possible);
}

static void fuzz_create(json_t *body)
{
	struct env_fields base = { 0 };
	struct verr base_err = { 0 };
	int base_rc = env_validate_create(body, NULL, &base, &base_err);

	if (base_rc) {
		check_error(&base_err, body, 0);
	} else {
		struct env_fields again = { 0 };
		struct verr err = { 0 };
		json_t *b = fields_body(&base);

		check_fields(&base, NULL);
		FUZZ_CHECK(!env_validate_create(b, NULL, &again, &err),
			   "the normalised body is refused: %s", err.msg);
		FUZZ_CHECK(fields_equal(&base, &again), "normalising twice differs");
		env_fields_release(&again);
		json_decref(b);
	}
	for (size_t i = 1; i <= BACKEND_COUNT; i++) {
		struct env_fields f = { 0 };
		struct verr err = { 0 };

		if (env_validate_create(body, caps[i], &f, &err)) {
			check_error(&err, body, 1);
			FUZZ_CHECK(base_rc ? err.status == base_err.status &&
						     !strcmp(err.msg, base_err.msg)
					   : err.status == 422,
				   "%s: %d %s (without admission: %d %s)", backends[i - 1],
				   err.status, err.msg, base_rc ? base_err.status : 0,
				   base_err.msg);
		} else {
			FUZZ_CHECK(!base_rc && fields_equal(&f, &base),
				   "%s accepts what no admission refuses or changes it",
				   backends[i - 1]);
			check_fields(&f, caps[i]);
		}
		env_fields_release(&f);
	}
	env_fields_release(&base);
}

static void fuzz_update(json_t *body, const struct env_fields *state, const struct backend_caps *c)
{
	struct env_fields cur = { 0 }, before = { 0 };
	struct verr err = { 0 };
	int changed = -1, again_changed = -1;
	int has_config = json_is_object(body) && json_object_get(body, "config");

	fields_copy(state, &cur);
	fields_copy(state, &before);
	if (env_validate_update(body, c, &cur, &changed, &err)) {
		check_error(&err, body, has_config);
		FUZZ_CHECK(fields_equal(&cur, &before), "a refused update changed the state");
		goto out;
	}
	check_fields(&cur, has_config ? c : NULL);
	FUZZ_CHECK(changed == !fields_equal(&cur, &before), "changed %d, but the state %s", changed,
		   fields_equal(&cur, &before) ? "is the same" : "differs");
	env_fields_release(&before);
	fields_copy(&cur, &before);
	FUZZ_CHECK(!env_validate_update(body, c, &cur, &again_changed, &err),
		   "the same update refused the second time: %s", err.msg);
	FUZZ_CHECK(!again_changed && fields_equal(&cur, &before),
		   "the same update changed the state again");
out:
	env_fields_release(&cur);
	env_fields_release(&before);
}

static void init(void)
{
	caps[0] = NULL;
	for (size_t i = 0; i < BACKEND_COUNT; i++)
		if (!(caps[i + 1] = backend_lookup(backends[i])))
			abort();
	for (size_t i = 0; i < STORED_COUNT; i++) {
		json_t *b = json_loads(stored_bodies[i], JSON_REJECT_DUPLICATES, NULL);
		struct verr err;

		if (!b || env_validate_create(b, NULL, &stored[i], &err)) {
			fprintf(stderr, "stored state %zu: %s\n", i, b ? err.msg : "bad JSON");
			abort();
		}
		json_decref(b);
	}
	stored[STORED_COUNT].name = strdup("legacy");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = fuzz_json_input(data, size, init);

	if (!body)
		return 0;
	fuzz_create(body);
	for (size_t s = 0; s <= STORED_COUNT; s++)
		for (size_t i = 0; i < sizeof(update_caps) / sizeof(update_caps[0]); i++)
			fuzz_update(body, &stored[s], caps[update_caps[i]]);
	json_decref(body);
	return 0;
}
