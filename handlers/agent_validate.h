/* Validation and normalisation of agent create/update bodies (docs/api.md §5, and the SDK's
 * AgentCreateParams / AgentUpdateParams where docs/api.md is silent). Pure functions: no database,
 * no I/O; every error names the offending field by its full path.
 *
 * An agent version's **definition** is one JSON object holding exactly the user-settable
 * fields, normalised as the API object shows them:
 *   name                string
 *   description         string or null ("" is stored as null)
 *   system              string or null ("" is stored as null)
 *   model               {"id":..., "effort":{"type":LEVEL}, "speed":"standard"|"fast"
 *                        [, "inference_geo":...]}
 *   mcp_servers         [{"type":"url","name":...,"url":...}, ...]
 *   tools, skills       arrays of objects, stored as given after the checks below
 *   execution_identity  {"type":"service_account"} or {"type":"aws_role","role_arn":...}
 *   multiagent          null or an object, stored as given after the checks below
 *   metadata            object of string -> string (16 / 64 / 512 rules) */
#ifndef TERRARIUM_AGENT_VALIDATE_H
#define TERRARIUM_AGENT_VALIDATE_H

#include <jansson.h>
#include <stddef.h>

#include "verr.h"

#define AGENT_NAME_MAX 256	   /* characters */
#define AGENT_DESCRIPTION_MAX 2048 /* characters */
#define AGENT_SYSTEM_MAX 100000	   /* characters */
#define AGENT_MODEL_ID_MAX 256	   /* characters */
#define AGENT_INFERENCE_GEO_MAX 64 /* characters */
#define AGENT_MCP_SERVERS_MAX 20   /* SDK: "Maximum 20" */
#define AGENT_MCP_NAME_MAX 255	   /* SDK: "1-255 characters" */
#define AGENT_MCP_URL_MAX 2048	   /* bytes */
#define AGENT_TOOLS_MAX 256	   /* SDK: "Maximum of 256 tools" */
#define AGENT_TOOL_NAME_MAX 128	   /* custom tool and tool-config names */
#define AGENT_SKILLS_MAX 64
#define AGENT_SKILL_ID_MAX 256	/* characters */
#define AGENT_ROLE_ARN_MAX 2048 /* SDK: "Maximum 2048 characters" */
#define AGENT_ROSTER_MAX 20	/* multiagent coordinator agents: "1–20 entries" */
#define AGENT_DEFINITION_MAX                                                                       \
	65536			    /* bytes of the whole definition as compact JSON: it is        \
				     * copied into every session (docs/limits.md) */
#define AGENT_EFFORT_DEFAULT "high" /* the per-model default effort, resolved at save time */
#define AGENT_SPEED_DEFAULT "standard"

/* Validate a create body (a JSON object). On success returns the definition (new reference,
 * caller decrefs); on failure NULL with ERR set (400, or 400 invalid_metadata). */
json_t *agent_validate_create(json_t *body, struct verr *err);

/* The optimistic-concurrency `version` of an update body into *VERSION (0 when absent).
 * 0, or -1 with ERR set when present but not an integer >= 1. */
int agent_update_version(json_t *body, long long *version, struct verr *err);

/* Apply the update BODY to CUR (a stored definition; not modified). On success returns the
 * merged definition (new reference, caller decrefs) and sets *CHANGED to 1 when it differs from
 * CUR (0 for `{}`, a body holding only `version`, or a no-op). On failure NULL with ERR set.
 * Omitted fields keep their value; `description`/`system` null or "" clear to null;
 * `mcp_servers`/`tools`/`skills` null or [] clear; `execution_identity` null restores the
 * default; `multiagent` null clears; `metadata` is a per-key patch; `name` and `model` cannot
 * be null; a `model` replaces the stored one except that an omitted `effort` keeps the stored
 * effort. */
json_t *agent_validate_update(json_t *body, json_t *cur, int *changed, struct verr *err);

/* Validate an MCP server list given at FIELD ("mcp_servers", "agent.mcp_servers"): null means
 * empty; at most AGENT_MCP_SERVERS_MAX entries of {"type":"url","name":1-255 chars, unique,
 * "url": absolute http(s) URL}. New reference to the normalised list (caller decrefs), or NULL
 * with ERR set naming e.g. "agent.mcp_servers[1].url". */
json_t *mcp_servers_validate(json_t *v, const char *field, struct verr *err);

/* Validate URL as an MCP server URL: absolute http or https, a host that is a hostname or an
 * IPv4 literal, optional port 1-65535, no userinfo, no whitespace or control characters, at
 * most AGENT_MCP_URL_MAX bytes. On success 0 and, when HOST is given, the host lower-cased
 * into HOST (size HOSTSZ; -1 when it does not fit). */
int agent_url_host(const char *url, char *host, size_t hostsz);

/* 0 when V is a string agent_url_host accepts (an MCP server URL); else -1 with ERR a 400
 * naming FIELD ("agent.mcp_servers[1].url", "auth.mcp_server_url"). */
int mcp_url_validate(json_t *v, const char *field, struct verr *err);

/* Convert an RFC 3339 timestamp ("2026-07-27T10:00:00Z", optional fraction of up to 9 digits,
 * 'Z' or a numeric offset) to a UTC MariaDB DATETIME(6) literal in OUT (size >= 27; fraction
 * truncated to microseconds). 0, or -1 when S is not a valid timestamp. */
int rfc3339_to_db(const char *s, char *out, size_t outsz);

#endif
