/* Agent body validation (docs/api.md §5, SDK AgentCreateParams / AgentUpdateParams). Bodies are
 * Jansson values loaded with JSON_REJECT_DUPLICATES, so every string is valid UTF-8. Create and
 * update share one field table: create starts from the defaults and update from the stored
 * definition, both apply the body to a copy, and the result is handed over only when the whole
 * body is valid, so a refused request never leaves a half-applied state behind. */
#include "agent_validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../common/clock.h"
#include "env_validate.h"

#define AV_BAD_REQUEST 400
#define AV_INTERNAL 500
#define AV_PATH_MAX 96 /* "tools[255].configs[255].permission_policy" */
#define AV_URL_PORT_MAX 65535
#define AV_YEAR_MIN 1000 /* MariaDB DATETIME range */
#define AV_YEAR_MAX 9999

#define AV_IDENTITY_DEFAULT "service_account"
#define AV_IDENTITY_AWS "aws_role"
#define AV_TOOLSET "agent_toolset_20260401"
#define AV_MCP_TOOLSET "mcp_toolset"
#define AV_CUSTOM "custom"
#define AV_MULTIAGENT_COORDINATOR "coordinator"
#define AV_MULTIAGENT_2026 "multiagent_20261001"

static const char *const create_fields[] = { "name",	   "model",    "description",
					     "system",	   "metadata", "mcp_servers",
					     "tools",	   "skills",   "execution_identity",
					     "multiagent", NULL };
static const char *const update_fields[] = { "name",	   "model",    "description",
					     "system",	   "metadata", "mcp_servers",
					     "tools",	   "skills",   "execution_identity",
					     "multiagent", "version",  NULL };
static const char *const model_fields[] = { "id", "effort", "speed", "inference_geo", NULL };
static const char *const type_only_fields[] = { "type", NULL };
static const char *const mcp_server_fields[] = { "type", "name", "url", NULL };
static const char *const aws_identity_fields[] = { "type", "role_arn", NULL };
static const char *const toolset_fields[] = { "type", "configs", "default_config", NULL };
static const char *const mcp_toolset_fields[] = { "type", "mcp_server_name", "configs",
						  "default_config", NULL };
static const char *const custom_tool_fields[] = { "type", "name", "description", "input_schema",
						  NULL };
static const char *const default_config_fields[] = { "enabled", "permission_policy", NULL };
static const char *const tool_config_fields[] = { "name", "type", "enabled", "permission_policy",
						  NULL };
static const char *const web_fetch_config_fields[] = { "name",
						       "type",
						       "enabled",
						       "permission_policy",
						       "allowed_domains",
						       "blocked_domains",
						       "max_content_tokens",
						       "url_sources",
						       NULL };
static const char *const web_search_config_fields[] = { "name",
							"type",
							"enabled",
							"permission_policy",
							"allowed_domains",
							"blocked_domains",
							"user_location",
							NULL };
static const char *const mcp_tool_config_fields[] = { "name", "enabled", "permission_policy",
						      NULL };
static const char *const skill_fields[] = { "type", "skill_id", "version", NULL };
static const char *const coordinator_fields[] = { "type", "agents", NULL };
static const char *const multiagent_fields[] = { "type", "advisor", "subagents", "workflows",
						 NULL };

static const char *const efforts[] = { "low", "medium", "high", "xhigh", "max", NULL };
static const char *const speeds[] = { "standard", "fast", NULL };
static const char *const tool_types[] = { AV_TOOLSET, AV_MCP_TOOLSET, AV_CUSTOM, NULL };
static const char *const toolset_tools[] = { "bash", "edit",	  "read",	"write", "glob",
					     "grep", "web_fetch", "web_search", NULL };
static const char *const policies[] = { "always_allow", "always_ask", "auto", NULL };
static const char *const skill_types[] = { "anthropic", "custom", NULL };
static const char *const multiagent_types[] = { AV_MULTIAGENT_COORDINATOR, AV_MULTIAGENT_2026,
						NULL };

static int oom(struct verr *err)
{
	return verr_set(err, AV_INTERNAL, NULL, "out of memory");
}

/* A deep copy of V, or NULL with ERR set. */
static json_t *copy_or_oom(json_t *v, struct verr *err)
{
	json_t *ret = json_deep_copy(v);

	if (!ret)
		oom(err);
	return ret;
}

/* 1 when V is a string of MIN..MAX code points. */
static int str_chars(json_t *v, size_t min, size_t max)
{
	size_t n;

	if (!json_is_string(v))
		return 0;
	n = utf8_chars(json_string_value(v));
	return n >= min && n <= max;
}

/* The string value of OBJ[KEY] when it is one of LIST, else NULL. */
static const char *enum_member(json_t *obj, const char *key, const char *const *list)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return verr_in_list(s, list) ? s : NULL;
}

/* Set DEF[KEY] to VALUE (stolen), the result of a parse: NULL means the parse failed and
 * already set ERR. 0, or -1. */
static int put(json_t *def, const char *key, json_t *value, struct verr *err)
{
	if (!value)
		return -1;
	if (json_object_set_new(def, key, value))
		return oom(err);
	return 0;
}

/* NULL-safe string equality (stored definitions are trusted, but not blindly). */
static int str_eq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* --- scalar fields ---------------------------------------------------------------------- */

static json_t *name_parse(json_t *v, struct verr *err)
{
	json_t *ret;

	if (!str_chars(v, 1, AGENT_NAME_MAX)) {
		verr_set(err, AV_BAD_REQUEST, NULL, "'name' must be a string of 1-%d characters",
			 AGENT_NAME_MAX);
		return NULL;
	}
	ret = json_string(json_string_value(v));
	if (!ret)
		oom(err);
	return ret;
}

/* description / system: a string of at most MAX characters or null; "" is stored as null
 * (the SDK: "send empty string or null to clear"). New reference or NULL with ERR set. */
static json_t *text_parse(json_t *v, const char *field, size_t max, struct verr *err)
{
	json_t *ret;

	if (json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
		return json_null();
	if (!str_chars(v, 1, max)) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'%s' must be a string of at most %zu characters, or null", field, max);
		return NULL;
	}
	ret = json_string(json_string_value(v));
	if (!ret)
		oom(err);
	return ret;
}

/* --- model ------------------------------------------------------------------------------ */

/* The effort level of V (a bare level or {"type": level}), or NULL with ERR set. */
static const char *effort_level(json_t *v, struct verr *err)
{
	const char *level = NULL;

	if (json_is_string(v))
		level = json_string_value(v);
	else if (json_is_object(v)) {
		if (verr_check_fields(v, "model.effort", type_only_fields, err))
			return NULL;
		level = json_string_value(json_object_get(v, "type"));
	}
	if (!verr_in_list(level, efforts)) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'%s' must be one of 'low', 'medium', 'high', 'xhigh', 'max' (or "
			 "{\"type\": "
			 "level}), or null",
			 "model.effort");
		return NULL;
	}
	return level;
}

/* Normalise the model V (string or model_config object). STORED_EFFORT (borrowed, may be NULL)
 * is kept when V omits `effort` (update); without it the default level applies. New reference
 * or NULL with ERR set. */
static json_t *model_parse(json_t *v, json_t *stored_effort, struct verr *err)
{
	json_t *id = v, *effort = NULL, *speed = NULL, *geo = NULL, *ret;
	const char *level = AGENT_EFFORT_DEFAULT, *speed_s = AGENT_SPEED_DEFAULT;

	if (json_is_object(v)) {
		if (verr_check_fields(v, "model", model_fields, err))
			return NULL;
		id = json_object_get(v, "id");
		effort = json_object_get(v, "effort");
		speed = json_object_get(v, "speed");
		geo = json_object_get(v, "inference_geo");
	} else if (!json_is_string(v)) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'model' must be a model id string or an object with 'id'");
		return NULL;
	}
	if (!str_chars(id, 1, AGENT_MODEL_ID_MAX)) {
		verr_set(err, AV_BAD_REQUEST, NULL, "'%s' must be a string of 1-%d characters",
			 json_is_object(v) ? "model.id" : "model", AGENT_MODEL_ID_MAX);
		return NULL;
	}
	if (effort && !json_is_null(effort)) {
		if (!(level = effort_level(effort, err)))
			return NULL;
	} else if (!effort && json_is_object(stored_effort) &&
		   verr_in_list(json_string_value(json_object_get(stored_effort, "type")),
				efforts)) {
		level = json_string_value(json_object_get(stored_effort, "type"));
	}
	if (speed && !json_is_null(speed)) {
		if (!verr_in_list(json_string_value(speed), speeds)) {
			verr_set(err, AV_BAD_REQUEST, NULL,
				 "'%s' must be 'standard' or 'fast', or null", "model.speed");
			return NULL;
		}
		speed_s = json_string_value(speed);
	}
	if (geo && !json_is_null(geo) && !str_chars(geo, 1, AGENT_INFERENCE_GEO_MAX)) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'model.inference_geo' must be a string of 1-%d characters, or null",
			 AGENT_INFERENCE_GEO_MAX);
		return NULL;
	}
	ret = json_pack("{s:s, s:{s:s}, s:s}", "id", json_string_value(id), "effort", "type", level,
			"speed", speed_s);
	if (ret && geo && !json_is_null(geo) &&
	    json_object_set_new(ret, "inference_geo", json_string(json_string_value(geo)))) {
		json_decref(ret);
		ret = NULL;
	}
	if (!ret)
		oom(err);
	return ret;
}

/* --- MCP servers ------------------------------------------------------------------------ */

int agent_url_host(const char *url, char *host, size_t hostsz)
{
	char buf[HOST_NAME_MAX_LEN + 1];
	const char *a, *end, *colon;
	size_t len = strlen(url), hostlen, skip;

	if (len > AGENT_MCP_URL_MAX)
		return -1;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f)
			return -1; /* whitespace, control bytes, non-ASCII: not a URL */
	if (!strncasecmp(url, "https://", 8))
		skip = 8;
	else if (!strncasecmp(url, "http://", 7))
		skip = 7;
	else
		return -1;
	a = url + skip;
	end = a + strcspn(a, "/?#");
	if (memchr(a, '@', (size_t)(end - a)) || *a == '[')
		return -1; /* userinfo hides the real host; IPv6 is outside the egress grammar */
	colon = memchr(a, ':', (size_t)(end - a));
	hostlen = (size_t)((colon ? colon : end) - a);
	if (!hostlen || hostlen > HOST_NAME_MAX_LEN)
		return -1;
	for (size_t i = 0; i < hostlen; i++)
		buf[i] = (a[i] >= 'A' && a[i] <= 'Z') ? (char)(a[i] - 'A' + 'a') : a[i];
	buf[hostlen] = '\0';
	if (buf[0] == '*' || !host_pattern_valid(buf))
		return -1;
	if (colon) {
		const char *p = colon + 1;
		long port = 0;

		if (p == end || end - p > 5)
			return -1;
		for (; p < end; p++) {
			if (*p < '0' || *p > '9')
				return -1;
			port = port * 10 + (*p - '0');
		}
		if (port < 1 || port > AV_URL_PORT_MAX)
			return -1;
	}
	if (host) {
		if (hostlen + 1 > hostsz)
			return -1;
		memcpy(host, buf, hostlen + 1);
	}
	return 0;
}

/* 0 when V is null or an array of at most MAX entries; else -1 with ERR naming FIELD. */
static int check_list(json_t *v, const char *field, size_t max, struct verr *err)
{
	if (json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s' must be an array or null", field);
	if (json_array_size(v) > max)
		return verr_set(err, AV_BAD_REQUEST, NULL,
				"'%s' must have at most %zu entries (got %zu)", field, max,
				json_array_size(v));
	return 0;
}

int mcp_url_validate(json_t *v, const char *field, struct verr *err)
{
	if (json_is_string(v) && !agent_url_host(json_string_value(v), NULL, 0))
		return 0;
	return verr_set(err, AV_BAD_REQUEST, NULL,
			"'%s' must be an absolute http or https URL with a host name or IPv4 "
			"address (optional port; no userinfo, whitespace or control characters; at "
			"most %d bytes)",
			field, AGENT_MCP_URL_MAX);
}

json_t *mcp_servers_validate(json_t *v, const char *field, struct verr *err)
{
	char path[AV_PATH_MAX], url_field[AV_PATH_MAX + 8], buf[VERR_ECHO_BUF];
	json_t *ret, *s;
	size_t i;

	if (check_list(v, field, AGENT_MCP_SERVERS_MAX, err))
		return NULL;
	if (json_is_null(v))
		return json_array();
	ret = json_array();
	if (!ret) {
		oom(err);
		return NULL;
	}
	json_array_foreach (v, i, s) {
		json_t *name = json_object_get(s, "name"), *url = json_object_get(s, "url");

		snprintf(path, sizeof(path), "%s[%zu]", field, i);
		if (!json_is_object(s)) {
			verr_set(err, AV_BAD_REQUEST, NULL, "'%s' must be an object", path);
			goto fail;
		}
		if (verr_check_fields(s, path, mcp_server_fields, err))
			goto fail;
		if (!enum_member(s, "type", (const char *const[]){ "url", NULL })) {
			verr_set(err, AV_BAD_REQUEST, NULL, "'%s.type' must be 'url'", path);
			goto fail;
		}
		if (!str_chars(name, 1, AGENT_MCP_NAME_MAX)) {
			verr_set(err, AV_BAD_REQUEST, NULL,
				 "'%s.name' must be a string of 1-%d characters", path,
				 AGENT_MCP_NAME_MAX);
			goto fail;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(json_string_value(name),
				    json_string_value(
					    json_object_get(json_array_get(v, j), "name")))) {
				verr_set(err, AV_BAD_REQUEST, NULL,
					 "'%s.name' duplicates '%s[%zu].name' ('%s'): names "
					 "must be unique",
					 path, field, j,
					 verr_echo(buf, json_string_value(name), VERR_ECHO_CHARS));
				goto fail;
			}
		snprintf(url_field, sizeof(url_field), "%s.url", path);
		if (mcp_url_validate(url, url_field, err))
			goto fail;
		if (json_array_append_new(ret, json_pack("{s:s, s:O, s:O}", "type", "url", "name",
							 name, "url", url))) {
			oom(err);
			goto fail;
		}
	}
	return ret;
fail:
	json_decref(ret);
	return NULL;
}

/* --- tools ------------------------------------------------------------------------------ */

/* OBJ's member KEY (of OBJ at PATH) when it may be absent, null or an object of the fields
 * ALLOWED: 0 with *OUT the object and SUB its path ("PATH.KEY"), or *OUT NULL when absent or
 * null; else -1 with ERR a 400. */
static int optional_object(json_t *obj, const char *key, const char *path,
			   const char *const *allowed, char sub[AV_PATH_MAX], json_t **out,
			   struct verr *err)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	snprintf(sub, AV_PATH_MAX, "%s.%s", path, key);
	if (!json_is_object(v))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s' must be an object or null", sub);
	if (verr_check_fields(v, sub, allowed, err))
		return -1;
	*out = v;
	return 0;
}

/* permission_policy at PATH: absent, null, or {"type": one of policies}. */
static int policy_check(json_t *obj, const char *path, struct verr *err)
{
	char sub[AV_PATH_MAX];
	json_t *v;

	if (optional_object(obj, "permission_policy", path, type_only_fields, sub, &v, err))
		return -1;
	if (v && !enum_member(v, "type", policies))
		return verr_set(err, AV_BAD_REQUEST, NULL,
				"'%s.type' must be 'always_allow', 'always_ask' or 'auto'", sub);
	return 0;
}

/* `enabled` of OBJ at PATH: absent, null or a boolean. */
static int enabled_check(json_t *obj, const char *path, struct verr *err)
{
	json_t *v = json_object_get(obj, "enabled");

	if (v && !json_is_null(v) && !json_is_boolean(v))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s.enabled' must be a boolean or null",
				path);
	return 0;
}

/* default_config of the toolset at PATH: absent, null or {enabled, permission_policy}. */
static int default_config_check(json_t *tool, const char *path, struct verr *err)
{
	char sub[AV_PATH_MAX];
	json_t *v;

	if (optional_object(tool, "default_config", path, default_config_fields, sub, &v, err) ||
	    (v && (enabled_check(v, sub, err) || policy_check(v, sub, err))))
		return -1;
	return 0;
}

/* One entry of a toolset's `configs` at PATH. MCP: any tool name; the built-in toolset: one of
 * toolset_tools, with that tool's own extra fields (stored as given). */
static int tool_config_check(json_t *c, const char *path, int mcp, struct verr *err)
{
	const char *name;
	const char *const *allowed = mcp ? mcp_tool_config_fields : tool_config_fields;
	json_t *type;

	if (!json_is_object(c))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s' must be an object", path);
	name = json_string_value(json_object_get(c, "name"));
	if (mcp) {
		if (!str_chars(json_object_get(c, "name"), 1, AGENT_TOOL_NAME_MAX))
			return verr_set(err, AV_BAD_REQUEST, NULL,
					"'%s.name' must be a string of 1-%d characters", path,
					AGENT_TOOL_NAME_MAX);
	} else {
		if (!verr_in_list(name, toolset_tools))
			return verr_set(
				err, AV_BAD_REQUEST, NULL,
				"'%s.name' must be one of 'bash', 'edit', 'read', 'write', 'glob', "
				"'grep', 'web_fetch', 'web_search'",
				path);
		if (!strcmp(name, "web_fetch"))
			allowed = web_fetch_config_fields;
		else if (!strcmp(name, "web_search"))
			allowed = web_search_config_fields;
		type = json_object_get(c, "type");
		if (type && !json_is_null(type) &&
		    (!json_is_string(type) || strcmp(json_string_value(type), name)))
			return verr_set(err, AV_BAD_REQUEST, NULL,
					"'%s.type' must equal its 'name' ('%s')", path, name);
	}
	if (verr_check_fields(c, path, allowed, err) || enabled_check(c, path, err) ||
	    policy_check(c, path, err))
		return -1;
	return 0;
}

static int configs_check(json_t *tool, const char *path, int mcp, struct verr *err)
{
	char sub[AV_PATH_MAX];
	json_t *v = json_object_get(tool, "configs"), *c;
	size_t i;

	if (!v)
		return 0;
	if (!json_is_array(v))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s.configs' must be an array", path);
	json_array_foreach (v, i, c) {
		snprintf(sub, sizeof(sub), "%s.configs[%zu]", path, i);
		if (tool_config_check(c, sub, mcp, err))
			return -1;
	}
	return 0;
}

/* 1 when S is 1-AGENT_TOOL_NAME_MAX of [A-Za-z0-9_-] (the SDK's custom tool name rule). */
static int tool_name_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n >= 1 && n <= AGENT_TOOL_NAME_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static int tool_check(json_t *t, const char *path, struct verr *err)
{
	const char *type;
	json_t *schema;

	if (!json_is_object(t))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s' must be an object", path);
	type = enum_member(t, "type", tool_types);
	if (!type)
		return verr_set(
			err, AV_BAD_REQUEST, NULL,
			"'%s.type' must be 'agent_toolset_20260401', 'mcp_toolset' or 'custom'",
			path);
	if (!strcmp(type, AV_TOOLSET))
		return verr_check_fields(t, path, toolset_fields, err) ||
				       configs_check(t, path, 0, err) ||
				       default_config_check(t, path, err)
			       ? -1
			       : 0;
	if (!strcmp(type, AV_MCP_TOOLSET)) {
		if (verr_check_fields(t, path, mcp_toolset_fields, err))
			return -1;
		if (!str_chars(json_object_get(t, "mcp_server_name"), 1, AGENT_MCP_NAME_MAX))
			return verr_set(err, AV_BAD_REQUEST, NULL,
					"'%s.mcp_server_name' must be a string of 1-%d characters",
					path, AGENT_MCP_NAME_MAX);
		return configs_check(t, path, 1, err) || default_config_check(t, path, err) ? -1
											    : 0;
	}
	if (verr_check_fields(t, path, custom_tool_fields, err))
		return -1;
	if (!tool_name_valid(json_string_value(json_object_get(t, "name"))))
		return verr_set(err, AV_BAD_REQUEST, NULL,
				"'%s.name' must be 1-%d characters of letters, digits, '_' and '-'",
				path, AGENT_TOOL_NAME_MAX);
	if (!json_is_string(json_object_get(t, "description")))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s.description' must be a string",
				path);
	schema = json_object_get(t, "input_schema");
	if (!json_is_object(schema) ||
	    !enum_member(schema, "type", (const char *const[]){ "object", NULL }))
		return verr_set(
			err, AV_BAD_REQUEST, NULL,
			"'%s.input_schema' must be a JSON Schema object with \"type\": \"object\"",
			path);
	return 0;
}

/* The list V at FIELD (null: empty, at most MAX entries), each entry checked by ENTRY (entry I of
 * LIST at PATH "FIELD[I]": 0, or -1 with ERR set), copied. New reference or NULL with ERR set. */
static json_t *list_parse(json_t *v, const char *field, size_t max,
			  int (*entry)(json_t *list, size_t i, const char *path, struct verr *err),
			  struct verr *err)
{
	char path[AV_PATH_MAX];
	size_t i;

	if (check_list(v, field, max, err))
		return NULL;
	if (json_is_null(v))
		return json_array();
	for (i = 0; i < json_array_size(v); i++) {
		snprintf(path, sizeof(path), "%s[%zu]", field, i);
		if (entry(v, i, path, err))
			return NULL;
	}
	return copy_or_oom(v, err);
}

/* Entry I of the tools array: a tool, and a custom tool's name not used by an earlier one. */
static int tools_entry(json_t *tools, size_t i, const char *path, struct verr *err)
{
	char buf[VERR_ECHO_BUF];
	json_t *t = json_array_get(tools, i);
	const char *name;

	if (tool_check(t, path, err))
		return -1;
	if (strcmp(json_string_value(json_object_get(t, "type")), AV_CUSTOM))
		return 0;
	name = json_string_value(json_object_get(t, "name"));
	for (size_t j = 0; j < i; j++) {
		json_t *o = json_array_get(tools, j);

		if (str_eq(json_string_value(json_object_get(o, "type")), AV_CUSTOM) &&
		    str_eq(json_string_value(json_object_get(o, "name")), name))
			return verr_set(err, AV_BAD_REQUEST, NULL,
					"'%s.name' duplicates 'tools[%zu].name' ('%s'): custom "
					"tool names must be unique",
					path, j, verr_echo(buf, name, VERR_ECHO_CHARS));
	}
	return 0;
}

/* --- skills, execution identity, multiagent -------------------------------------------- */

/* Entry I of the skills array. */
static int skills_entry(json_t *skills, size_t i, const char *path, struct verr *err)
{
	json_t *s = json_array_get(skills, i), *ver;

	if (!json_is_object(s))
		return verr_set(err, AV_BAD_REQUEST, NULL, "'%s' must be an object", path);
	if (verr_check_fields(s, path, skill_fields, err))
		return -1;
	if (!enum_member(s, "type", skill_types))
		return verr_set(err, AV_BAD_REQUEST, NULL,
				"'%s.type' must be 'anthropic' or 'custom'", path);
	if (!str_chars(json_object_get(s, "skill_id"), 1, AGENT_SKILL_ID_MAX))
		return verr_set(err, AV_BAD_REQUEST, NULL,
				"'%s.skill_id' must be a string of 1-%d characters", path,
				AGENT_SKILL_ID_MAX);
	ver = json_object_get(s, "version");
	if (ver && !json_is_null(ver) && !str_chars(ver, 1, AGENT_SKILL_ID_MAX))
		return verr_set(err, AV_BAD_REQUEST, NULL,
				"'%s.version' must be a non-empty string or null", path);
	return 0;
}

/* null, {"type":"service_account"} -> the default; {"type":"aws_role","role_arn":...}. */
static json_t *identity_parse(json_t *v, struct verr *err)
{
	const char *type;
	json_t *ret;

	if (json_is_null(v))
		return json_pack("{s:s}", "type", AV_IDENTITY_DEFAULT);
	if (!json_is_object(v)) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'execution_identity' must be an object or null");
		return NULL;
	}
	type = enum_member(v, "type",
			   (const char *const[]){ AV_IDENTITY_DEFAULT, AV_IDENTITY_AWS, NULL });
	if (!type) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'execution_identity.type' must be 'service_account' or 'aws_role'");
		return NULL;
	}
	if (!strcmp(type, AV_IDENTITY_DEFAULT)) {
		if (verr_check_fields(v, "execution_identity", type_only_fields, err))
			return NULL;
		ret = json_pack("{s:s}", "type", AV_IDENTITY_DEFAULT);
	} else {
		if (verr_check_fields(v, "execution_identity", aws_identity_fields, err))
			return NULL;
		if (!str_chars(json_object_get(v, "role_arn"), 1, AGENT_ROLE_ARN_MAX)) {
			verr_set(
				err, AV_BAD_REQUEST, NULL,
				"'execution_identity.role_arn' must be a string of 1-%d characters",
				AGENT_ROLE_ARN_MAX);
			return NULL;
		}
		ret = json_pack("{s:s, s:O}", "type", AV_IDENTITY_AWS, "role_arn",
				json_object_get(v, "role_arn"));
	}
	if (!ret)
		oom(err);
	return ret;
}

/* null, or a coordinator / multiagent_20261001 object stored as given after shape checks.
 * Roster resolution against other agents is not done: the control plane runs no threads. */
static json_t *multiagent_parse(json_t *v, struct verr *err)
{
	const char *type;

	if (json_is_null(v))
		return json_null();
	if (!json_is_object(v)) {
		verr_set(err, AV_BAD_REQUEST, NULL, "'multiagent' must be an object or null");
		return NULL;
	}
	type = enum_member(v, "type", multiagent_types);
	if (!type) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'multiagent.type' must be 'coordinator' or 'multiagent_20261001'");
		return NULL;
	}
	if (!strcmp(type, AV_MULTIAGENT_COORDINATOR)) {
		json_t *agents = json_object_get(v, "agents"), *a;
		size_t i;

		if (verr_check_fields(v, "multiagent", coordinator_fields, err))
			return NULL;
		if (!json_is_array(agents) || json_array_size(agents) < 1 ||
		    json_array_size(agents) > AGENT_ROSTER_MAX) {
			verr_set(err, AV_BAD_REQUEST, NULL,
				 "'multiagent.agents' must be an array of 1-%d entries",
				 AGENT_ROSTER_MAX);
			return NULL;
		}
		json_array_foreach (agents, i, a) {
			if (!json_is_string(a) && !json_is_object(a)) {
				verr_set(
					err, AV_BAD_REQUEST, NULL,
					"'multiagent.agents[%zu]' must be an agent id string or an "
					"object",
					i);
				return NULL;
			}
		}
	} else {
		static const char *const members[] = { "advisor", "subagents", "workflows" };

		if (verr_check_fields(v, "multiagent", multiagent_fields, err))
			return NULL;
		for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
			json_t *m = json_object_get(v, members[i]);

			if (m && !json_is_null(m) &&
			    (!json_is_object(m) || !json_is_string(json_object_get(m, "type")))) {
				verr_set(err, AV_BAD_REQUEST, NULL,
					 "'multiagent.%s' must be an object with a 'type', or null",
					 members[i]);
				return NULL;
			}
		}
	}
	return copy_or_oom(v, err);
}

/* --- create / update -------------------------------------------------------------------- */

/* Every mcp_toolset in DEF's tools must name a server of DEF's mcp_servers (SDK: "Must match a
 * server name from the mcp_servers array"). Judged on the merged result. */
static int refs_check(json_t *def, struct verr *err)
{
	json_t *tools = json_object_get(def, "tools"),
	       *servers = json_object_get(def, "mcp_servers");
	json_t *t, *s;
	size_t i, j;
	char buf[VERR_ECHO_BUF];

	json_array_foreach (tools, i, t) {
		const char *want = json_string_value(json_object_get(t, "mcp_server_name"));
		int found = 0;

		if (!str_eq(json_string_value(json_object_get(t, "type")), AV_MCP_TOOLSET))
			continue;
		json_array_foreach (servers, j, s)
			if (str_eq(json_string_value(json_object_get(s, "name")), want))
				found = 1;
		if (!found)
			return verr_set(err, AV_BAD_REQUEST, NULL,
					"'tools[%zu].mcp_server_name' must name a server in "
					"'mcp_servers' (none is named '%s')",
					i, verr_echo(buf, want ? want : "", VERR_ECHO_CHARS));
	}
	return 0;
}

/* Apply the fields of BODY (an object whose keys were checked) to DEF. CREATE selects the
 * create rules for metadata (whole object) and model effort (no stored value). */
static int apply(json_t *body, json_t *def, int create, struct verr *err)
{
	json_t *v;

	if ((v = json_object_get(body, "name")) && put(def, "name", name_parse(v, err), err))
		return -1;
	if ((v = json_object_get(body, "model"))) {
		json_t *stored =
			create ? NULL : json_object_get(json_object_get(def, "model"), "effort");

		if (json_is_null(v))
			return verr_set(
				err, AV_BAD_REQUEST, NULL,
				"'model' cannot be null: send a model id string or an object "
				"with 'id'");
		if (put(def, "model", model_parse(v, stored, err), err))
			return -1;
	}
	if ((v = json_object_get(body, "description")) &&
	    put(def, "description", text_parse(v, "description", AGENT_DESCRIPTION_MAX, err), err))
		return -1;
	if ((v = json_object_get(body, "system")) &&
	    put(def, "system", text_parse(v, "system", AGENT_SYSTEM_MAX, err), err))
		return -1;
	if ((v = json_object_get(body, "mcp_servers")) &&
	    put(def, "mcp_servers", mcp_servers_validate(v, "mcp_servers", err), err))
		return -1;
	if ((v = json_object_get(body, "tools")) &&
	    put(def, "tools", list_parse(v, "tools", AGENT_TOOLS_MAX, tools_entry, err), err))
		return -1;
	if ((v = json_object_get(body, "skills")) &&
	    put(def, "skills", list_parse(v, "skills", AGENT_SKILLS_MAX, skills_entry, err), err))
		return -1;
	if ((v = json_object_get(body, "execution_identity")) &&
	    put(def, "execution_identity", identity_parse(v, err), err))
		return -1;
	if ((v = json_object_get(body, "multiagent")) &&
	    put(def, "multiagent", multiagent_parse(v, err), err))
		return -1;
	if ((v = json_object_get(body, "metadata"))) {
		json_t *meta =
			create ? meta_validate(v, "metadata", err)
			       : meta_patch(json_object_get(def, "metadata"), v, "metadata", err);
		if (!meta || json_object_set_new(def, "metadata", meta))
			return meta ? oom(err) : -1;
	}
	return refs_check(def, err);
}

/* The definition of an agent with nothing set but what create requires. New reference. */
static json_t *def_defaults(void)
{
	return json_pack("{s:s, s:n, s:n, s:n, s:[], s:[], s:[], s:{s:s}, s:n, s:{}}", "name", "",
			 "description", "system", "model", "mcp_servers", "tools", "skills",
			 "execution_identity", "type", AV_IDENTITY_DEFAULT, "multiagent",
			 "metadata");
}

/* The whole definition (system, tools, descriptions, everything a session captures) within
 * AGENT_DEFINITION_MAX bytes of compact JSON. 0, or -1 with ERR set. */
static int check_total(const json_t *def, struct verr *err)
{
	size_t n = json_dumpb(def, NULL, 0, JSON_COMPACT);

	if (n <= AGENT_DEFINITION_MAX)
		return 0;
	verr_set(err, AV_BAD_REQUEST, NULL,
		 "the agent is %zu bytes as JSON; at most %d (name, description, system, model,"
		 " tools, skills, mcp_servers, metadata and the rest together)",
		 n, AGENT_DEFINITION_MAX);
	return -1;
}

/* BODY applied to DEF (stolen; NULL: out of memory), CREATE as apply's, and the size checked:
 * DEF, or NULL with ERR set. */
static json_t *applied(json_t *body, json_t *def, int create, struct verr *err)
{
	if (!def) {
		oom(err);
		return NULL;
	}
	if (apply(body, def, create, err) || check_total(def, err)) {
		json_decref(def);
		return NULL;
	}
	return def;
}

json_t *agent_validate_create(json_t *body, struct verr *err)
{
	if (!json_is_object(body)) {
		verr_set(err, AV_BAD_REQUEST, NULL, "request body must be a JSON object");
		return NULL;
	}
	if (verr_check_fields(body, "", create_fields, err))
		return NULL;
	if (!json_object_get(body, "name")) {
		verr_set(err, AV_BAD_REQUEST, NULL, "'name' is required");
		return NULL;
	}
	if (!json_object_get(body, "model")) {
		verr_set(err, AV_BAD_REQUEST, NULL, "'model' is required");
		return NULL;
	}
	return applied(body, def_defaults(), 1, err);
}

int agent_update_version(json_t *body, long long *version, struct verr *err)
{
	json_t *v = json_object_get(body, "version");

	*version = 0;
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 1)
		return verr_set(err, AV_BAD_REQUEST, NULL,
				"'version' must be an integer of at least 1 (the agent's current "
				"version)");
	*version = json_integer_value(v);
	return 0;
}

json_t *agent_validate_update(json_t *body, json_t *cur, int *changed, struct verr *err)
{
	long long version;
	json_t *next;

	*changed = 0;
	if (!json_is_object(body)) {
		verr_set(err, AV_BAD_REQUEST, NULL, "request body must be a JSON object");
		return NULL;
	}
	if (verr_check_fields(body, "", update_fields, err) ||
	    agent_update_version(body, &version, err))
		return NULL;
	if (json_is_null(json_object_get(body, "name"))) {
		verr_set(err, AV_BAD_REQUEST, NULL,
			 "'name' cannot be null: omit it to keep the name");
		return NULL;
	}
	next = applied(body, json_deep_copy(cur), 0, err);
	if (next)
		*changed = !json_equal(next, cur);
	return next;
}

/* --- RFC 3339 --------------------------------------------------------------------------- */

/* Read exactly N digits at *P into *V and advance. 0 or -1. */
static int digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return -1;
		*v = *v * 10 + (**p - '0');
	}
	return 0;
}

static int expect(const char **p, const char *chars)
{
	if (!**p || !strchr(chars, **p))
		return -1;
	(*p)++;
	return 0;
}

int rfc3339_to_db(const char *s, char *out, size_t outsz)
{
	char frac[7] = "000000";
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	const char *p = s;
	struct tm back;
	time_t t;

	if (digits(&p, 4, &y) || expect(&p, "-") || digits(&p, 2, &mo) || expect(&p, "-") ||
	    digits(&p, 2, &d) || expect(&p, "Tt") || digits(&p, 2, &h) || expect(&p, ":") ||
	    digits(&p, 2, &mi) || expect(&p, ":") || digits(&p, 2, &sec))
		return -1;
	if (*p == '.') {
		int n = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 6)
				frac[n] = *p;
		if (n < 1 || n > 9)
			return -1;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p++ == '-' ? -1 : 1;
		if (digits(&p, 2, &oh) || expect(&p, ":") || digits(&p, 2, &om) || oh > 23 ||
		    om > 59)
			return -1;
	} else {
		return -1;
	}
	if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59)
		return -1;
	t = (time_t)clock_utc(y, mo, d, h, mi, sec);
	if (!gmtime_r(&t, &back) || back.tm_mday != d || back.tm_mon != mo - 1)
		return -1; /* 2026-02-30 */
	t -= (time_t)sign * (oh * 3600 + om * 60);
	if (!gmtime_r(&t, &back) || back.tm_year + 1900 < AV_YEAR_MIN ||
	    back.tm_year + 1900 > AV_YEAR_MAX)
		return -1;
	if (snprintf(out, outsz, "%04d-%02d-%02d %02d:%02d:%02d.%s", back.tm_year + 1900,
		     back.tm_mon + 1, back.tm_mday, back.tm_hour, back.tm_min, back.tm_sec,
		     frac) >= (int)outsz)
		return -1;
	return 0;
}
