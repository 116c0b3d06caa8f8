#include "router.h"

#include <ctype.h>
#include <string.h>

#define ALLOW_MAX 64

static const struct route routes[] = {
	{ "GET", "/healthz", health_live, 0 },
	{ "GET", "/readyz", health_ready, 0 },
	{ "POST", "/v1/environments", env_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT },
	{ "GET", "/v1/environments", env_list, ROUTE_AUTH | ROUTE_BETA },
	{ "GET", "/v1/environments/{id}", env_retrieve, ROUTE_AUTH | ROUTE_BETA },
	{ "POST", "/v1/environments/{id}", env_update, ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON },
	{ "DELETE", "/v1/environments/{id}", env_delete, ROUTE_AUTH | ROUTE_BETA },
	{ "POST", "/v1/environments/{id}/archive", env_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT },
	/* the work queue (docs/api.md §6): poll and stats before the {work_id} routes they also match */
	{ "GET", "/v1/environments/{id}/work/poll", work_poll,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY },
	{ "GET", "/v1/environments/{id}/work/stats", work_stats,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY },
	{ "GET", "/v1/environments/{id}/work", work_list, ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY },
	{ "GET", "/v1/environments/{id}/work/{work_id}", work_retrieve,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN },
	{ "POST", "/v1/environments/{id}/work/{work_id}", work_update,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_ENV_KEY },
	{ "POST", "/v1/environments/{id}/work/{work_id}/ack", work_ack,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN },
	{ "POST", "/v1/environments/{id}/work/{work_id}/heartbeat", work_heartbeat,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN },
	{ "POST", "/v1/environments/{id}/work/{work_id}/stop", work_stop,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN },
	{ "POST", "/v1/agents", agent_create, ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT },
	{ "GET", "/v1/agents", agent_list, ROUTE_AUTH | ROUTE_BETA },
	{ "GET", "/v1/agents/{id}", agent_retrieve, ROUTE_AUTH | ROUTE_BETA },
	{ "POST", "/v1/agents/{id}", agent_update, ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON },
	{ "POST", "/v1/agents/{id}/archive", agent_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT },
	{ "GET", "/v1/agents/{id}/versions", agent_versions, ROUTE_AUTH | ROUTE_BETA },
	{ "POST", "/v1/sessions", session_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT },
	{ "GET", "/v1/sessions", session_list, ROUTE_AUTH | ROUTE_BETA },
	{ "GET", "/v1/sessions/{id}", session_retrieve, ROUTE_AUTH | ROUTE_BETA | ROUTE_WORK_TOKEN },
	{ "POST", "/v1/sessions/{id}", session_update, ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON },
	{ "DELETE", "/v1/sessions/{id}", session_delete, ROUTE_AUTH | ROUTE_BETA },
	{ "POST", "/v1/sessions/{id}/archive", session_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT },
};

int route_match(const char *pattern, const char *path, struct request *req)
{
	const char *p = pattern, *s = path;
	size_t used = 0;
	int n = 0;

	while (*p && *s) {
		if (*p == '{') {
			const char *seg_end = strchr(s, '/');
			size_t len = seg_end ? (size_t)(seg_end - s) : strlen(s);
			p = strchr(p, '}');
			if (!p || !len || n >= REQ_MAX_PARAMS || used + len + 1 > sizeof(req->param_buf))
				return 0;
			p++;
			memcpy(req->param_buf + used, s, len);
			req->param_buf[used + len] = '\0';
			req->params[n++] = req->param_buf + used;
			used += len + 1;
			s += len;
			continue;
		}
		if (*p != *s)
			return 0;
		p++, s++;
	}
	if (*p || *s)
		return 0;
	req->nparams = n;
	return 1;
}

int header_list_has(const char *value, const char *token)
{
	size_t tlen = strlen(token);

	while (value && *value) {
		const char *end = strchr(value, ',');
		const char *a = value, *b = end ? end : value + strlen(value);
		while (a < b && isspace((unsigned char)*a))
			a++;
		while (b > a && isspace((unsigned char)b[-1]))
			b--;
		if ((size_t)(b - a) == tlen && !strncmp(a, token, tlen))
			return 1;
		value = end ? end + 1 : NULL;
	}
	return 0;
}

static int version_known(const char *v)
{
	static const char *versions[] = ROUTE_VERSIONS;

	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(versions[i], v))
			return 1;
	return 0;
}

/* Parse the body as a JSON object into req->json. 0, or -1 with RESP filled. */
static int parse_body(struct request *req, struct response *resp, int optional)
{
	json_error_t jerr;

	if (!req->body_len) {
		if (optional)
			return 0;
		resp_error(resp, req, 400, NULL, "request body is required: a JSON object");
		return -1;
	}
	req->json = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!req->json) {
		/* Jansson names its own flag for this one ("... without JSON_ALLOW_NUL"): the
		 * client gets the rule, not the library's internals */
		if (strstr(jerr.text, "JSON_ALLOW_NUL"))
			resp_error(resp, req, 400, NULL,
				   "request body is not valid: strings must not contain \\u0000 (NUL)"
				   " (at position %d)",
				   jerr.position);
		else
			resp_error(resp, req, 400, NULL,
				   "request body is not valid JSON: %s (at position %d)", jerr.text,
				   jerr.position);
		return -1;
	}
	if (!json_is_object(req->json)) {
		resp_error(resp, req, 400, NULL, "request body must be a JSON object");
		return -1;
	}
	return 0;
}

/* The web server's own errors, answered in the docs/api.md §2 envelope when Apache
 * (ErrorDocument) or lighttpd (server.error-handler) runs this binary as CGI for them
 * (hosting/). nginx has the same pages in nginx/server.conf.in. */
static const struct server_error {
	int status;
	int retry; /* x-should-retry */
	const char *message;
} server_errors[] = {
	{ 400, 0, "malformed HTTP request" },
	{ 403, 0, "access to this path is forbidden" },
	{ 404, 0, "not found" },
	{ 408, 1, "the request was not received in time" },
	{ 411, 0, "a request body needs a Content-Length" },
	{ 413, 0, "request body exceeds the 1 MiB (1048576 bytes) limit" },
	{ 414, 0, "request URI too long" },
	{ 431, 0, "request headers too large" },
	{ 500, 1, "internal server error" },
	{ 502, 1, "the API is unavailable" },
	{ 503, 1, "the service is overloaded, retry later" },
	{ 504, 1, "the API did not answer in time" },
};

static void server_error_page(const struct request *req, struct response *resp)
{
	const struct server_error *e = NULL;

	for (size_t i = 0; i < sizeof(server_errors) / sizeof(server_errors[0]); i++)
		if (server_errors[i].status == req->server_error)
			e = &server_errors[i];
	if (e)
		resp_error(resp, req, e->status, NULL, "%s", e->message);
	else
		resp_error(resp, req, req->server_error, NULL, "HTTP error %d", req->server_error);
	resp_set_retry(resp, e ? e->retry : req->server_error >= 500);
}

void route_dispatch(struct worker *w, struct request *req, struct response *resp)
{
	const struct route *found = NULL;
	char allow[ALLOW_MAX] = "";
	char beta[ROUTE_BETA_HEADER_MAX];
	int path_matched = 0;

	if (req->server_error) {
		server_error_page(req, resp);
		return;
	}

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (!route_match(routes[i].pattern, req->path, req))
			continue;
		path_matched = 1;
		if (!strstr(allow, routes[i].method)) {
			if (allow[0])
				strcat(allow, ", ");
			strcat(allow, routes[i].method);
		}
		if (!strcmp(routes[i].method, req->method) && !found)
			found = &routes[i];
	}
	if (!found) {
		if (!path_matched) {
			resp_error(resp, req, 404, NULL, "no route for %s %s", req->method,
				   req->path);
			return;
		}
		resp_header(resp, "allow", "%s", allow);
		resp_error(resp, req, 405, NULL, "method %s is not allowed on %s; allowed: %s",
			   req->method, req->path, allow);
		return;
	}
	/* the captures of the last pattern tried may be stale: take the found route's */
	route_match(found->pattern, req->path, req);

	if ((found->flags & ROUTE_AUTH) &&
	    (auth_request(w, req, resp) ||
	     work_scope_check(req, resp, !!(found->flags & ROUTE_ENV_KEY),
			      !!(found->flags & ROUTE_WORK_TOKEN))))
		return;
	if (found->flags & ROUTE_BETA) {
		const char *version = req_env(req, "HTTP_ANTHROPIC_VERSION");
		int n;

		if (version && !version_known(version)) {
			resp_error(resp, req, 400, NULL,
				   "the 'anthropic-version' header must be one of: %s",
				   ROUTE_VERSIONS_TEXT);
			return;
		}
		n = req_header_all(req, "HTTP_ANTHROPIC_BETA", beta, sizeof(beta));
		if (n <= 0 || !header_list_has(beta, ROUTE_BETA_REQUIRED)) {
			resp_error(resp, req, 400, NULL,
				   "the 'anthropic-beta' header must include '%s'",
				   ROUTE_BETA_REQUIRED);
			return;
		}
	}
	if ((found->flags & (ROUTE_JSON | ROUTE_JSON_OPT)) &&
	    parse_body(req, resp, !!(found->flags & ROUTE_JSON_OPT)))
		return;
	if (found->flags & ROUTE_IDEMPOTENT)
		idem_run(w, req, resp, found->handler);
	else
		found->handler(w, req, resp);
}
