/* API policy over a route table: after http/router.c found the route (404/405), its flags (the
 * credentials it admits, beta and version headers, JSON body, idempotency) are checked in one
 * place, then its handler runs. api/main.c registers the application with fcgi/ (struct
 * serve_app): auth_init (auth.h), api_worker_new and api_worker_free (handlers.h), api_handle. */
#ifndef TERRARIUM_HANDLERS_DISPATCH_H
#define TERRARIUM_HANDLERS_DISPATCH_H

#include "../http/router.h"
#include "auth.h"
#include "handlers.h"

/* Which credentials may call a route (auth.h): a route with none of these needs no key. */
#define ROUTE_AUTH AUTH_ADMITS(AUTH_WORKSPACE_KEY)	  /* a workspace API key */
#define ROUTE_ENV_KEY AUTH_ADMITS(AUTH_ENVIRONMENT_KEY)	  /* its environment's key */
#define ROUTE_WORK_TOKEN AUTH_ADMITS(AUTH_SESSIONS_TOKEN) /* its item's sessions token */
#define ROUTE_BETA 0x100       /* anthropic-beta must contain ROUTE_BETA_REQUIRED */
#define ROUTE_JSON 0x200       /* body must be a JSON object */
#define ROUTE_JSON_OPT 0x400   /* body may be absent; if present it must be a JSON object */
#define ROUTE_IDEMPOTENT 0x800 /* honours the Idempotency-Key header (creates) */
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
 * then its handler with req->route_data set, and req->principal while it runs. Always leaves a
 * complete response in RESP. */
void api_dispatch(struct worker *w, const struct api_route *table, size_t n, struct request *req,
		  struct response *resp);

/* api_dispatch over the API's route table (handlers/routes.c). WORKER is a struct worker. */
void api_handle(void *worker, struct request *req, struct response *resp);

#endif
