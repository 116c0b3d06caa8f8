#include "router.h"

#include <ctype.h>
#include <string.h>

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
			if (!p || !len || n >= REQ_MAX_PARAMS ||
			    used + len + 1 > sizeof(req->param_buf))
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
	{ 413, 0, NULL }, /* resp_too_large */
	{ 414, 0, "request URI too long" },
	{ 431, 0, "request headers too large" },
	{ 500, 1, "internal server error" },
	{ 502, 1, "the API is unavailable" },
	{ 503, 1, "the service is overloaded, retry later" },
	{ 504, 1, "the API did not answer in time" },
};

int route_server_error(const struct request *req, struct response *resp)
{
	const struct server_error *e = NULL;

	if (!req->server_error)
		return 0;
	for (size_t i = 0; i < sizeof(server_errors) / sizeof(server_errors[0]); i++)
		if (server_errors[i].status == req->server_error)
			e = &server_errors[i];
	if (e && !e->message)
		resp_too_large(resp, req);
	else if (e)
		resp_error(resp, req, e->status, NULL, "%s", e->message);
	else
		resp_error(resp, req, req->server_error, NULL, "HTTP error %d", req->server_error);
	resp_set_retry(resp, e ? e->retry : req->server_error >= 500);
	return 1;
}

const void *route_find(const void *table, size_t n, size_t size, struct request *req,
		       struct response *resp)
{
	const struct route_pattern *found = NULL;
	char allow[ROUTE_ALLOW_MAX] = "";
	int path_matched = 0;

	for (size_t i = 0; i < n; i++) {
		const struct route_pattern *r =
			(const struct route_pattern *)((const char *)table + i * size);

		if (!route_match(r->pattern, req->path, req))
			continue;
		path_matched = 1;
		if (!strstr(allow, r->method) &&
		    strlen(allow) + strlen(r->method) + 3 <= sizeof(allow)) {
			if (allow[0])
				strcat(allow, ", ");
			strcat(allow, r->method);
		}
		if (!strcmp(r->method, req->method) && !found)
			found = r;
	}
	if (!found) {
		if (!path_matched) {
			resp_error(resp, req, 404, NULL, "no route for %s %s", req->method,
				   req->path);
			return NULL;
		}
		resp_header(resp, "allow", "%s", allow);
		resp_error(resp, req, 405, NULL, "method %s is not allowed on %s; allowed: %s",
			   req->method, req->path, allow);
		return NULL;
	}
	/* the captures of the last pattern tried may be stale: take the found route's */
	route_match(found->pattern, req->path, req);
	return found;
}
