/* API policy over a route table: after http/router.c found the route (404/405), its flags
 * (key, scope, beta and version headers, JSON body, idempotency) are checked in one place,
 * then its handler runs. */
#ifndef TERRARIUM_HANDLERS_ROUTER_H
#define TERRARIUM_HANDLERS_ROUTER_H

#include "../fcgi/serve.h"
#include "../http/router.h"
#include "handlers.h"

#define ROUTE_AUTH 0x1	      /* API key required */
#define ROUTE_BETA 0x2	      /* anthropic-beta must contain ROUTE_BETA_REQUIRED */
#define ROUTE_JSON 0x4	      /* body must be a JSON object */
#define ROUTE_JSON_OPT 0x8    /* body may be absent; if present it must be a JSON object */
#define ROUTE_IDEMPOTENT 0x10 /* honours the Idempotency-Key header (creates) */
#define ROUTE_ENV_KEY 0x20    /* an environment key may call it (its environment's work routes) */
#define ROUTE_WORK_TOKEN 0x40 /* a sessions token may call it (its item, its session) */
#define ROUTE_BETA_REQUIRED "managed-agents-2026-04-01"
#define ROUTE_BETA_HEADER_MAX 4096
/* anthropic-version values accepted on the API routes (absent is fine too) */
#define ROUTE_VERSIONS                                                                             \
	{                                                                                          \
		"2023-06-01", "2026-10-21"                                                         \
	}
#define ROUTE_VERSIONS_TEXT "2023-06-01, 2026-10-21"

struct api_route {
	struct route_pattern route; /* first: what http/router.c matches */
	handler_fn handler;
	unsigned flags;
	const void *data; /* req->route_data for the handler: the resource of resource.h's */
};

/* Answer REQ from TABLE (N routes): the web server's error page, 404/405, the route's flags,
 * then its handler with req->route_data set. Always leaves a complete response in RESP. */
void api_dispatch(struct worker *w, const struct api_route *table, size_t n, struct request *req,
		  struct response *resp);

/* api_dispatch over the API's route table (handlers/routes.c). WORKER is a struct worker. */
void api_handle(void *worker, struct request *req, struct response *resp);

/* The API as fcgi/serve.c runs it: a struct worker per process, api_handle per request. */
extern const struct serve_app api_app;

#endif
