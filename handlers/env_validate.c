/* Environment body validation (docs/api.md §3). Everything here works on Jansson values already
 * loaded with JSON_REJECT_DUPLICATES, so every string is valid UTF-8. Results are built in
 * temporaries and handed over only when the whole body is valid, so a failed request never
 * leaves a half-applied state behind. */
#include "env_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EV_BAD_REQUEST 400
#define EV_UNPROCESSABLE 422
#define EV_INTERNAL 500
#define EV_INVALID_METADATA "invalid_metadata"

/* A user-supplied key is echoed (sanitised) so the caller can find it; values never are. */
#define EV_ECHO_LONG_KEY_CHARS 16 /* code points shown of a key that is itself too long */

#define EV_TYPE_CLOUD "cloud"
#define EV_TYPE_SELF_HOSTED "self_hosted"
#define EV_NET_UNRESTRICTED "unrestricted"
#define EV_NET_LIMITED "limited"
#define EV_PACKAGES_TYPE "packages"

static const char *const env_fields_allowed[] = { "name",   "description", "metadata",
						  "config", "scope",	   NULL };
static const char *const cloud_fields_allowed[] = { "type", "networking", "packages", NULL };
static const char *const unrestricted_fields_allowed[] = { "type", NULL };
static const char *const limited_fields_allowed[] = { "type", "allowed_hosts", "allow_mcp_servers",
						      "allow_package_managers", NULL };

size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

void env_fields_release(struct env_fields *f)
{
	free(f->name);
	json_decref(f->description);
	json_decref(f->metadata);
	json_decref(f->config);
	free(f->scope);
	memset(f, 0, sizeof(*f));
}

static int oom(struct verr *err)
{
	return verr_set(err, EV_INTERNAL, NULL, "out of memory");
}

static int str_is(json_t *v, const char *s)
{
	return json_is_string(v) && !strcmp(json_string_value(v), s);
}

/* --- metadata ------------------------------------------------------------------------- */

/* Append to E every limit problem of the string->string object META (count, key length,
 * value length, value type). Returns the number of problems found. */
static int meta_problems(json_t *meta, const char *field, struct verr *e)
{
	const char *key;
	json_t *v;
	int n = 0;
	char echo[VERR_ECHO_BUF];

	if (json_object_size(meta) > META_MAX_KEYS) {
		verr_append(e, "%s: at most %d keys are allowed (got %zu)", field, META_MAX_KEYS,
			    json_object_size(meta));
		n++;
	}
	json_object_foreach (meta, key, v) {
		size_t klen = utf8_chars(key);

		if (klen == 0) {
			verr_append(e, "%s: keys must be 1-%d characters (got an empty key)", field,
				    META_KEY_MAX);
			n++;
		} else if (klen > META_KEY_MAX) {
			verr_append(e, "%s: key '%s' exceeds %d characters", field,
				    verr_echo(echo, key, EV_ECHO_LONG_KEY_CHARS), META_KEY_MAX);
			n++;
			continue; /* value problems would repeat the same (cut) key */
		}
		if (!json_is_string(v)) {
			verr_append(e, "%s.%s: value must be a string", field,
				    verr_echo(echo, key, VERR_ECHO_CHARS));
			n++;
		} else if (utf8_chars(json_string_value(v)) > META_VALUE_MAX) {
			verr_append(e, "%s.%s: value exceeds %d characters", field,
				    verr_echo(echo, key, VERR_ECHO_CHARS), META_VALUE_MAX);
			n++;
		}
	}
	return n;
}

/* Copy of the string->string object META, or NULL on allocation failure. New reference. */
static json_t *meta_copy(json_t *meta)
{
	return json_is_object(meta) ? json_deep_copy(meta) : json_object();
}

json_t *meta_validate(json_t *value, const char *field, struct verr *err)
{
	struct verr e = { EV_BAD_REQUEST, EV_INVALID_METADATA, "" };
	json_t *copy;

	if (!value || json_is_null(value)) {
		copy = json_object();
		if (!copy)
			oom(err);
		return copy;
	}
	if (!json_is_object(value)) {
		verr_set(err, EV_BAD_REQUEST, EV_INVALID_METADATA, "'%s' must be an object", field);
		return NULL;
	}
	if (meta_problems(value, field, &e)) {
		*err = e;
		return NULL;
	}
	copy = json_deep_copy(value);
	if (!copy)
		oom(err);
	return copy;
}

json_t *meta_patch(json_t *stored, json_t *patch, const char *field, struct verr *err)
{
	struct verr e = { EV_BAD_REQUEST, EV_INVALID_METADATA, "" };
	json_t *merged = NULL, *ret = NULL, *v;
	const char *key;
	char echo[VERR_ECHO_BUF];
	int problems = 0;

	merged = meta_copy(stored);
	if (!merged) {
		oom(err);
		goto out;
	}
	/* A null patch is an empty patch: the SDK's update params never send one, and treating
	 * it as "no change" cannot lose data. */
	if (!patch || json_is_null(patch)) {
		ret = merged;
		merged = NULL;
		goto out;
	}
	if (!json_is_object(patch)) {
		verr_set(err, EV_BAD_REQUEST, EV_INVALID_METADATA, "'%s' must be an object", field);
		goto out;
	}
	json_object_foreach (patch, key, v) {
		if (json_is_null(v) || (json_is_string(v) && !*json_string_value(v))) {
			json_object_del(merged, key);
		} else if (json_is_string(v)) {
			if (json_object_set(merged, key, v)) {
				oom(err);
				goto out;
			}
		} else {
			verr_append(&e, "%s.%s: value must be a string or null", field,
				    verr_echo(echo, key, VERR_ECHO_CHARS));
			problems++;
		}
	}
	problems += meta_problems(merged, field, &e);
	if (problems) {
		*err = e;
		goto out;
	}
	ret = merged;
	merged = NULL;
out:
	json_decref(merged);
	return ret;
}

/* --- allowed_hosts ---------------------------------------------------------------------- */

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int is_alnum(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Four dotted decimal octets 0-255. Leading zeros are refused: some resolvers read "010" as
 * octal, so the literal would not mean what the caller wrote. */
static int ipv4_valid(const char *s)
{
	for (int octet = 0; octet < 4; octet++) {
		int value = 0, digits = 0;

		if (octet && *s++ != '.')
			return 0;
		if (s[0] == '0' && is_digit(s[1]))
			return 0;
		for (; is_digit(*s); s++) {
			if (++digits > 3)
				return 0;
			value = value * 10 + (*s - '0');
		}
		if (!digits || value > 255)
			return 0;
	}
	return *s == '\0';
}

/* Labels of 1-HOST_LABEL_MAX [A-Za-z0-9-], no '-' at either end, whole <= HOST_NAME_MAX_LEN,
 * and an all-numeric last label is refused (it is a malformed IPv4 literal, never a TLD). */
static int hostname_valid(const char *s)
{
	size_t len = strlen(s), label = 0;
	int numeric = 1;

	if (len == 0 || len > HOST_NAME_MAX_LEN)
		return 0;
	for (size_t i = 0; i <= len; i++) {
		char c = s[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || label > HOST_LABEL_MAX || s[i - 1] == '-')
				return 0;
			if (c == '\0')
				break;
			label = 0;
			numeric = 1;
			continue;
		}
		if (!is_alnum((unsigned char)c) && c != '-')
			return 0;
		if (label == 0 && c == '-')
			return 0;
		if (!is_digit((unsigned char)c))
			numeric = 0;
		label++;
	}
	return !numeric;
}

int host_pattern_valid(const char *s)
{
	if (!s)
		return 0;
	if (s[0] == '*' && s[1] == '.')
		/* A wildcard over an address literal matches nothing real: refuse it. */
		return hostname_valid(s + 2);
	return ipv4_valid(s) || hostname_valid(s);
}

/* New JSON string: S with ASCII letters lower-cased, or NULL on allocation failure. */
static json_t *host_lower(const char *s)
{
	char *copy = strdup(s);
	json_t *ret;

	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	ret = json_string(copy);
	free(copy);
	return ret;
}

/* --- config ----------------------------------------------------------------------------- */

/* New reference: {"type":"unrestricted"}. */
static json_t *networking_default(void)
{
	return json_pack("{s:s}", "type", EV_NET_UNRESTRICTED);
}

/* New reference: the packages object with every manager's list empty. */
static json_t *packages_default(void)
{
	json_t *p = json_pack("{s:s}", "type", EV_PACKAGES_TYPE);

	for (size_t i = 0; p && i < PKG_MANAGER_COUNT; i++)
		if (json_object_set_new(p, pkg_managers[i].name, json_array())) {
			json_decref(p);
			return NULL;
		}
	return p;
}

/* New reference: {"type":"cloud", networking: N, packages: P}, stealing N and P (both freed
 * on failure; either may be NULL, which fails). */
static json_t *cloud_config(json_t *networking, json_t *packages)
{
	json_t *c = json_pack("{s:s}", "type", EV_TYPE_CLOUD);

	if (!c || json_object_set_new(c, "networking", networking)) {
		json_decref(c);
		json_decref(packages);
		return NULL;
	}
	if (json_object_set_new(c, "packages", packages)) {
		json_decref(c);
		return NULL;
	}
	return c;
}

/* The optional boolean at KEY of OBJ: absent or null keeps *OUT (the SDK's params mark these
 * fields nullable, null meaning "not given"); true/false replace it; anything else is a 400. */
static int flag_parse(json_t *obj, const char *key, int *out, struct verr *err)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return verr_set(err, EV_BAD_REQUEST, NULL,
				"'config.networking.%s' must be a boolean", key);
	*out = json_is_true(v);
	return 0;
}

/* Validate and lower-case the allowed_hosts array V. New reference or NULL with ERR set. */
static json_t *hosts_parse(json_t *v, struct verr *err)
{
	json_t *hosts = NULL, *ret = NULL, *h;
	size_t i;

	if (!json_is_array(v)) {
		verr_set(err, EV_BAD_REQUEST, NULL,
			 "'config.networking.allowed_hosts' must be an array of strings");
		goto out;
	}
	if (json_array_size(v) > ALLOWED_HOSTS_MAX) {
		verr_set(err, EV_BAD_REQUEST, NULL,
			 "'config.networking.allowed_hosts' must have at most %d entries",
			 ALLOWED_HOSTS_MAX);
		goto out;
	}
	hosts = json_array();
	if (!hosts) {
		oom(err);
		goto out;
	}
	json_array_foreach (v, i, h) {
		if (!json_is_string(h)) {
			verr_set(err, EV_BAD_REQUEST, NULL,
				 "'config.networking.allowed_hosts[%zu]' must be a string", i);
			goto out;
		}
		/* An embedded NUL would make the C string disagree with the JSON one. */
		if (strlen(json_string_value(h)) != json_string_length(h) ||
		    !host_pattern_valid(json_string_value(h))) {
			verr_set(err, EV_BAD_REQUEST, NULL,
				 "'config.networking.allowed_hosts[%zu]' must be a bare "
				 "hostname or IPv4 address, optionally prefixed by '*.' (no "
				 "scheme, port, path, userinfo or embedded wildcard)",
				 i);
			goto out;
		}
		if (json_array_append_new(hosts, host_lower(json_string_value(h)))) {
			oom(err);
			goto out;
		}
	}
	ret = hosts;
	hosts = NULL;
out:
	json_decref(hosts);
	return ret;
}

/* Normalise the networking object GIVEN. BASE (borrowed, may be NULL) is the stored policy:
 * limited->limited starts from its values, anything else from the defaults. New reference or
 * NULL with ERR set. */
static json_t *networking_parse(json_t *given, json_t *base, struct verr *err)
{
	json_t *type, *hosts = NULL, *ret = NULL, *v;
	int mcp = 0, pkg = 0;

	if (!json_is_object(given)) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config.networking' must be an object");
		goto out;
	}
	type = json_object_get(given, "type");
	if (!type) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config.networking.type' is required");
		goto out;
	}
	if (str_is(type, EV_NET_UNRESTRICTED)) {
		if (verr_check_fields(given, "config.networking", unrestricted_fields_allowed, err))
			goto out;
		ret = networking_default();
		if (!ret)
			oom(err);
		goto out;
	}
	if (!str_is(type, EV_NET_LIMITED)) {
		verr_set(err, EV_BAD_REQUEST, NULL,
			 "'config.networking.type' must be 'unrestricted' or 'limited'");
		goto out;
	}
	if (verr_check_fields(given, "config.networking", limited_fields_allowed, err))
		goto out;

	if (base && str_is(json_object_get(base, "type"), EV_NET_LIMITED)) {
		json_t *stored = json_object_get(base, "allowed_hosts");

		hosts = json_is_array(stored) ? json_deep_copy(stored) : json_array();
		mcp = json_is_true(json_object_get(base, "allow_mcp_servers"));
		pkg = json_is_true(json_object_get(base, "allow_package_managers"));
	} else {
		hosts = json_array();
	}
	if (!hosts) {
		oom(err);
		goto out;
	}
	v = json_object_get(given, "allowed_hosts");
	if (v && !json_is_null(v)) {
		json_decref(hosts);
		hosts = hosts_parse(v, err);
		if (!hosts)
			goto out;
	}
	if (flag_parse(given, "allow_mcp_servers", &mcp, err) ||
	    flag_parse(given, "allow_package_managers", &pkg, err))
		goto out;

	ret = json_pack("{s:s, s:O, s:b, s:b}", "type", EV_NET_LIMITED, "allowed_hosts", hosts,
			"allow_mcp_servers", mcp, "allow_package_managers", pkg);
	if (!ret)
		oom(err);
out:
	json_decref(hosts);
	return ret;
}

/* Normalise the packages object GIVEN: every list present (omitted or null -> []). A given
 * packages object is a full replacement, so no stored value is consulted. New reference or
 * NULL with ERR set. */
static json_t *packages_parse(json_t *given, struct verr *err)
{
	/* "type" and one list a manager */
	const char *allowed[PKG_MANAGER_COUNT + 2] = { "type" };
	json_t *pkgs = NULL, *ret = NULL, *type;

	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++)
		allowed[m + 1] = pkg_managers[m].name;
	if (!json_is_object(given)) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config.packages' must be an object");
		goto out;
	}
	if (verr_check_fields(given, "config.packages", allowed, err))
		goto out;
	type = json_object_get(given, "type");
	if (type && !str_is(type, EV_PACKAGES_TYPE)) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config.packages.type' must be 'packages'");
		goto out;
	}
	pkgs = json_pack("{s:s}", "type", EV_PACKAGES_TYPE);
	if (!pkgs) {
		oom(err);
		goto out;
	}
	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++) {
		const char *mgr = pkg_managers[m].name;
		json_t *list = json_object_get(given, mgr), *out_list, *entry;
		size_t i;

		if (list && !json_is_null(list) && !json_is_array(list)) {
			verr_set(err, EV_BAD_REQUEST, NULL,
				 "'config.packages.%s' must be an array of strings or null", mgr);
			goto out;
		}
		if (json_array_size(list) > PKG_MAX_ENTRIES) {
			verr_set(err, EV_BAD_REQUEST, NULL,
				 "'config.packages.%s' must have at most %d entries", mgr,
				 PKG_MAX_ENTRIES);
			goto out;
		}
		out_list = json_array();
		if (json_object_set_new(pkgs, mgr, out_list)) {
			oom(err);
			goto out;
		}
		json_array_foreach (list, i, entry) {
			const char *problem;

			if (!json_is_string(entry)) {
				verr_set(err, EV_BAD_REQUEST, NULL,
					 "'config.packages.%s[%zu]' must be a string", mgr, i);
				goto out;
			}
			if (json_string_length(entry) > PKG_ENTRY_MAX) {
				verr_set(err, EV_BAD_REQUEST, NULL,
					 "'config.packages.%s[%zu]' must be at most %d bytes", mgr,
					 i, PKG_ENTRY_MAX);
				goto out;
			}
			problem = pkg_spec_problem(json_string_value(entry),
						   json_string_length(entry));
			if (problem) {
				verr_set(err, EV_BAD_REQUEST, NULL, "'config.packages.%s[%zu]' %s",
					 mgr, i, problem);
				goto out;
			}
			if (json_array_append_new(out_list,
						  json_stringn(json_string_value(entry),
							       json_string_length(entry)))) {
				oom(err);
				goto out;
			}
		}
	}
	ret = pkgs;
	pkgs = NULL;
out:
	json_decref(pkgs);
	return ret;
}

/* Stored sub-object KEY of the stored config STORED when it is a cloud config, deep-copied;
 * otherwise DEFAULT_FN(). New reference or NULL on allocation failure. */
static json_t *stored_or_default(json_t *stored_cloud, const char *key, json_t *(*default_fn)(void))
{
	json_t *v = json_object_get(stored_cloud, key);

	return json_is_object(v) ? json_deep_copy(v) : default_fn();
}

/* Normalise the config object GIVEN. STORED (borrowed, NULL on create) is the stored config;
 * UPDATE requires `type` and refuses null networking/packages. New reference or NULL with
 * ERR set. */
static json_t *config_parse(json_t *given, json_t *stored, int update, struct verr *err)
{
	json_t *type = json_object_get(given, "type");
	json_t *stored_cloud = NULL, *networking = NULL, *packages = NULL, *v;
	const char *key;

	if (!type && update) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config.type' is required on update");
		return NULL;
	}
	if (str_is(type, EV_TYPE_SELF_HOSTED)) {
		char echo[VERR_ECHO_BUF];
		json_t *c;

		json_object_foreach (given, key, v)
			if (strcmp(key, "type")) {
				verr_set(err, EV_BAD_REQUEST, NULL,
					 "unknown field 'config.%s' (a self_hosted config carries "
					 "only 'type')",
					 verr_echo(echo, key, VERR_ECHO_CHARS));
				return NULL;
			}
		c = json_pack("{s:s}", "type", EV_TYPE_SELF_HOSTED);
		if (!c)
			oom(err);
		return c;
	}
	if (type && !str_is(type, EV_TYPE_CLOUD)) {
		verr_set(err, EV_BAD_REQUEST, NULL,
			 "'config.type' must be 'cloud' or 'self_hosted'");
		return NULL;
	}
	if (verr_check_fields(given, "config", cloud_fields_allowed, err))
		return NULL;

	/* A type change starts from the new type's defaults; cloud->cloud keeps what is omitted. */
	if (stored && str_is(json_object_get(stored, "type"), EV_TYPE_CLOUD))
		stored_cloud = stored;

	v = json_object_get(given, "networking");
	if (v && json_is_null(v) && update) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config.networking' must be an object");
		goto fail;
	}
	if (v && !json_is_null(v))
		networking = networking_parse(v, json_object_get(stored_cloud, "networking"), err);
	else if (!(networking = stored_or_default(stored_cloud, "networking", networking_default)))
		oom(err);
	if (!networking)
		goto fail;

	v = json_object_get(given, "packages");
	if (v && json_is_null(v) && update) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config.packages' must be an object");
		goto fail;
	}
	if (v && !json_is_null(v))
		packages = packages_parse(v, err);
	else if (!(packages = stored_or_default(stored_cloud, "packages", packages_default)))
		oom(err);
	if (!packages)
		goto fail;

	v = cloud_config(networking, packages);
	if (!v)
		oom(err);
	return v;
fail:
	json_decref(networking);
	return NULL;
}

/* 0 when the backend CAPS can enforce CONFIG, else -1 with a 422 naming the field and the
 * backend. NULL CAPS skips admission. */
static int admission_check(json_t *config, const struct backend_caps *caps, struct verr *err)
{
	json_t *packages, *networking;
	const struct pkg_manager *as_root = NULL;
	int any = 0;

	if (!caps || !str_is(json_object_get(config, "type"), EV_TYPE_CLOUD))
		return 0;
	packages = json_object_get(config, "packages");
	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++)
		if (json_array_size(json_object_get(packages, pkg_managers[m].name))) {
			any = 1;
			if (pkg_managers[m].as_root && !as_root)
				as_root = &pkg_managers[m];
		}
	if (any && !caps->packages)
		return verr_set(err, EV_UNPROCESSABLE, NULL,
				"backend '%s' cannot install packages; config.packages must "
				"be empty",
				caps->name);
	if (as_root && !caps->apt)
		return verr_set(err, EV_UNPROCESSABLE, NULL,
				"backend '%s' cannot install %s packages; "
				"config.packages.%s must be empty",
				caps->name, as_root->name, as_root->name);
	networking = json_object_get(config, "networking");
	if (str_is(json_object_get(networking, "type"), EV_NET_LIMITED) && !caps->limited_egress)
		return verr_set(err, EV_UNPROCESSABLE, NULL,
				"backend '%s' cannot enforce limited networking; config.networking "
				"must be unrestricted",
				caps->name);
	return 0;
}

/* --- scalar fields ---------------------------------------------------------------------- */

/* Validate the name V (present). Caller frees *OUT. */
static int name_parse(json_t *v, char **out, struct verr *err)
{
	size_t n;

	if (!json_is_string(v))
		return verr_set(err, EV_BAD_REQUEST, NULL, "'name' must be a string");
	n = utf8_chars(json_string_value(v));
	if (n < 1 || n > ENV_NAME_MAX)
		return verr_set(err, EV_BAD_REQUEST, NULL, "'name' must be 1-%d characters",
				ENV_NAME_MAX);
	*out = strdup(json_string_value(v));
	return *out ? 0 : oom(err);
}

/* Validate the description V (present): a new JSON string or JSON null in *OUT. */
static int description_parse(json_t *v, json_t **out, struct verr *err)
{
	if (json_is_null(v)) {
		*out = json_null();
		return 0;
	}
	if (!json_is_string(v))
		return verr_set(err, EV_BAD_REQUEST, NULL,
				"'description' must be a string or null");
	if (utf8_chars(json_string_value(v)) > ENV_DESCRIPTION_MAX)
		return verr_set(err, EV_BAD_REQUEST, NULL,
				"'description' must be at most %d characters", ENV_DESCRIPTION_MAX);
	*out = json_string(json_string_value(v));
	return *out ? 0 : oom(err);
}

/* Validate the scope V (present or NULL): null/absent -> *OUT = NULL. Caller frees *OUT. */
static int scope_parse(json_t *v, char **out, struct verr *err)
{
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!str_is(v, "account") && !str_is(v, "organization"))
		return verr_set(err, EV_BAD_REQUEST, NULL,
				"'scope' must be 'account' or 'organization'");
	*out = strdup(json_string_value(v));
	return *out ? 0 : oom(err);
}

static int scope_misplaced(struct verr *err)
{
	return verr_set(err, EV_BAD_REQUEST, NULL,
			"'scope' is only allowed when 'config.type' is 'self_hosted'");
}

static int body_check(json_t *body, struct verr *err)
{
	if (!json_is_object(body))
		return verr_set(err, EV_BAD_REQUEST, NULL, "request body must be a JSON object");
	return verr_check_fields(body, "", env_fields_allowed, err);
}

/* --- create / update -------------------------------------------------------------------- */

int env_validate_create(json_t *body, const struct backend_caps *caps, struct env_fields *out,
			struct verr *err)
{
	struct env_fields f = { 0 };
	json_t *v;
	int ret = -1;

	if (body_check(body, err))
		goto out;

	v = json_object_get(body, "name");
	if (!v) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'name' is required");
		goto out;
	}
	if (name_parse(v, &f.name, err))
		goto out;

	v = json_object_get(body, "description");
	if (description_parse(v ? v : json_null(), &f.description, err))
		goto out;

	f.metadata = meta_validate(json_object_get(body, "metadata"), "metadata", err);
	if (!f.metadata)
		goto out;

	v = json_object_get(body, "config");
	if (!v || json_is_null(v)) {
		f.config = cloud_config(networking_default(), packages_default());
		if (!f.config) {
			oom(err);
			goto out;
		}
	} else if (!json_is_object(v)) {
		verr_set(err, EV_BAD_REQUEST, NULL, "'config' must be an object or null");
		goto out;
	} else if (!(f.config = config_parse(v, NULL, 0, err))) {
		goto out;
	}

	if (scope_parse(json_object_get(body, "scope"), &f.scope, err))
		goto out;
	if (f.scope && !str_is(json_object_get(f.config, "type"), EV_TYPE_SELF_HOSTED)) {
		scope_misplaced(err);
		goto out;
	}

	if (admission_check(f.config, caps, err))
		goto out;

	*out = f;
	memset(&f, 0, sizeof(f));
	ret = 0;
out:
	env_fields_release(&f);
	return ret;
}

static int str_equal(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* New reference to V, or to a fresh JSON value from FALLBACK_FN when V is NULL. */
static json_t *keep(json_t *v, json_t *(*fallback_fn)(void))
{
	return v ? json_incref(v) : fallback_fn();
}

static json_t *default_config(void)
{
	return cloud_config(networking_default(), packages_default());
}

int env_validate_update(json_t *body, const struct backend_caps *caps, struct env_fields *cur,
			int *changed, struct verr *err)
{
	struct env_fields next = { 0 };
	json_t *v, *config;
	int self_hosted, ret = -1;

	if (body_check(body, err))
		goto out;

	v = json_object_get(body, "name");
	if (v) {
		if (name_parse(v, &next.name, err))
			goto out;
	} else if (cur->name && !(next.name = strdup(cur->name))) {
		oom(err);
		goto out;
	}

	v = json_object_get(body, "description");
	if (v) {
		if (description_parse(v, &next.description, err))
			goto out;
	} else {
		next.description = keep(cur->description, json_null);
	}

	v = json_object_get(body, "metadata");
	next.metadata = v ? meta_patch(cur->metadata, v, "metadata", err)
			  : keep(cur->metadata, json_object);
	if (!next.metadata) {
		if (!v)
			oom(err);
		goto out;
	}

	config = json_object_get(body, "config");
	if (config) {
		if (!json_is_object(config)) {
			verr_set(err, EV_BAD_REQUEST, NULL, "'config' must be an object");
			goto out;
		}
		next.config = config_parse(config, cur->config, 1, err);
		if (!next.config)
			goto out;
	} else if (!(next.config = keep(cur->config, default_config))) {
		oom(err);
		goto out;
	}
	self_hosted = str_is(json_object_get(next.config, "type"), EV_TYPE_SELF_HOSTED);

	/* scope null clears it, whatever the type: "no scope" is valid for cloud too. A result
	 * that is not self_hosted never keeps a scope (cloud has none to keep). */
	v = json_object_get(body, "scope");
	if (v) {
		if (scope_parse(v, &next.scope, err))
			goto out;
		if (next.scope && !self_hosted) {
			scope_misplaced(err);
			goto out;
		}
	} else if (self_hosted && cur->scope && !(next.scope = strdup(cur->scope))) {
		oom(err);
		goto out;
	}

	/* Admission judges the merged config, but only when the body touches config: renaming
	 * an environment stored under another backend must not be refused. */
	if (config && admission_check(next.config, caps, err))
		goto out;

	if (changed)
		*changed = !str_equal(cur->name, next.name) ||
			   !json_equal(cur->description ? cur->description : json_null(),
				       next.description) ||
			   !(cur->metadata ? json_equal(cur->metadata, next.metadata)
					   : !json_object_size(next.metadata)) ||
			   !json_equal(cur->config, next.config) ||
			   !str_equal(cur->scope, next.scope);
	env_fields_release(cur);
	*cur = next;
	memset(&next, 0, sizeof(next));
	ret = 0;
out:
	env_fields_release(&next);
	return ret;
}
