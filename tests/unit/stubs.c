/* A fake route table over the real API policy (handlers/dispatch.c): each handler records that
 * it ran; the policy's own calls (auth_request, idem_run) are stand-ins. */
#include "stubs.h"

#include <stdio.h>
#include <string.h>

int stub_auth_result;
const char *stub_last_handler;

size_t stub_read(void *ctx, char *buf, size_t n)
{
	struct stub_src *s = ctx;
	size_t k = s->len - s->off < n ? s->len - s->off : n;

	memcpy(buf, (const char *)s->data + s->off, k);
	s->off += k;
	return k;
}

static void record(const char *name, struct response *resp)
{
	stub_last_handler = name;
	resp_json(resp, 200, json_pack("{s:s}", "handler", name));
}

int auth_request(struct worker *w, struct request *req, struct response *resp, unsigned admits,
		 struct auth_principal *p)
{
	(void)w;
	(void)admits;
	if (stub_auth_result) {
		resp_error(resp, req, 401, NULL, "invalid API key");
		return -1;
	}
	memset(p, 0, sizeof(*p));
	snprintf(p->workspace_id, sizeof(p->workspace_id), "ws_stub");
	return 0;
}

void idem_run(struct worker *w, struct request *req, struct response *resp, handler_fn handler)
{
	handler(w, req, resp);
}

#define STUB(fn)                                                                                   \
	static void fake_##fn(struct worker *w, struct request *req, struct response *resp)        \
	{                                                                                          \
		(void)w;                                                                           \
		(void)req;                                                                         \
		record(#fn, resp);                                                                 \
	}
STUB(health_live)
STUB(env_create)
STUB(env_list)
STUB(env_retrieve)
STUB(env_update)
STUB(env_delete)
STUB(env_archive)

static const struct api_route fake_routes[] = {
	{ { "GET", "/healthz" }, fake_health_live, 0, NULL },
	{ { "POST", "/v1/environments" },
	  fake_env_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT,
	  NULL },
	{ { "GET", "/v1/environments" }, fake_env_list, ROUTE_AUTH | ROUTE_BETA, NULL },
	{ { "GET", "/v1/environments/{id}" }, fake_env_retrieve, ROUTE_AUTH | ROUTE_BETA, NULL },
	{ { "POST", "/v1/environments/{id}" },
	  fake_env_update,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON,
	  NULL },
	{ { "DELETE", "/v1/environments/{id}" }, fake_env_delete, ROUTE_AUTH | ROUTE_BETA, NULL },
	{ { "POST", "/v1/environments/{id}/archive" },
	  fake_env_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT,
	  NULL },
};

void stub_dispatch(struct worker *w, struct request *req, struct response *resp)
{
	api_dispatch(w, fake_routes, sizeof(fake_routes) / sizeof(fake_routes[0]), req, resp);
}
