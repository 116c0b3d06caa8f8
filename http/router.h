/* Router mechanics, transport-neutral and policy-free: match a request's path against a table of
 * {method, pattern} entries, answer 404 / 405 (with Allow), and the web server's own error pages.
 * What a route requires (authentication, headers, a body) is the caller's table's business. */
#ifndef TERRARIUM_HTTP_ROUTER_H
#define TERRARIUM_HTTP_ROUTER_H

#include <stddef.h>

#include "http.h"

#define ROUTE_ALLOW_MAX 64 /* bytes of the Allow header of a 405 */

/* The first member of every route table entry. */
struct route_pattern {
	const char *method;
	const char *pattern; /* "/v1/environments/{id}/archive": {x} captures one segment */
};

/* Match PATH against PATTERN; on success stores captures in req->params. 1 on match. */
int route_match(const char *pattern, const char *path, struct request *req);

/* The entry of TABLE (N entries of SIZE bytes, each beginning with a struct route_pattern) for
 * req->method and req->path, its captures in req->params; or NULL with RESP a 404 (no pattern
 * matches the path) or a 405 whose Allow header lists the methods of the patterns that do. */
const void *route_find(const void *table, size_t n, size_t size, struct request *req,
		       struct response *resp);

/* 1 when the comma-separated header VALUE contains TOKEN as one element. */
int header_list_has(const char *value, const char *token);

/* When the web server sent its own error (req->server_error: Apache ErrorDocument, lighttpd
 * server.error-handler), answer it in the docs/api.md §2 envelope and return 1; else 0. */
int route_server_error(const struct request *req, struct response *resp);

#endif
