/* The route table and dispatch: 404/405, then the route's flags (auth, beta header, JSON body)
 * in one place, then the handler. */
#ifndef TERRARIUM_ROUTER_H
#define TERRARIUM_ROUTER_H

#include "../handlers/handlers.h"

#define ROUTE_AUTH 0x1      /* API key required */
#define ROUTE_BETA 0x2      /* anthropic-beta must contain ROUTE_BETA_REQUIRED */
#define ROUTE_JSON 0x4      /* body must be a JSON object */
#define ROUTE_JSON_OPT 0x8  /* body may be absent; if present it must be a JSON object */
#define ROUTE_IDEMPOTENT 0x10 /* honours the Idempotency-Key header (creates) */
#define ROUTE_ENV_KEY 0x20    /* an environment key may call it (its environment's work routes) */
#define ROUTE_WORK_TOKEN 0x40 /* a sessions token may call it (its item, its session) */
#define ROUTE_BETA_REQUIRED "managed-agents-2026-04-01"
#define ROUTE_BETA_HEADER_MAX 4096
/* anthropic-version values accepted on the API routes (absent is fine too) */
#define ROUTE_VERSIONS { "2023-06-01", "2026-10-21" }
#define ROUTE_VERSIONS_TEXT "2023-06-01, 2026-10-21"

struct route {
	const char *method;
	const char *pattern; /* "/v1/environments/{id}/archive": {x} captures one segment */
	handler_fn handler;
	unsigned flags;
};

/* Find the route for req->method and req->path, check its flags and run the handler. Always
 * leaves a complete response in RESP. */
void route_dispatch(struct worker *w, struct request *req, struct response *resp);

/* Match PATH against PATTERN; on success stores captures in req->params. 1 on match. */
int route_match(const char *pattern, const char *path, struct request *req);

/* 1 when the comma-separated header VALUE contains TOKEN as one element. */
int header_list_has(const char *value, const char *token);

#endif
