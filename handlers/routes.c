/* The API's route table (docs/api.md): every route with the checks its flags ask for
 * (handlers/router.c). */
#include "router.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../api/tail.h"
#include "auth_guard.h"
#include "resource.h"

static const struct api_route routes[] = {
	{ { "GET", "/healthz" }, health_live, 0, NULL },
	{ { "GET", "/readyz" }, health_ready, 0, NULL },
	{ { "POST", "/v1/environments" },
	  env_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT,
	  NULL },
	{ { "GET", "/v1/environments" }, resource_list, ROUTE_AUTH | ROUTE_BETA, &RES_ENVIRONMENT },
	{ { "GET", "/v1/environments/{id}" },
	  resource_retrieve,
	  ROUTE_AUTH | ROUTE_BETA,
	  &RES_ENVIRONMENT },
	{ { "POST", "/v1/environments/{id}" },
	  env_update,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON,
	  NULL },
	{ { "DELETE", "/v1/environments/{id}" },
	  resource_delete,
	  ROUTE_AUTH | ROUTE_BETA,
	  &RES_ENVIRONMENT },
	{ { "POST", "/v1/environments/{id}/archive" },
	  resource_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT,
	  &RES_ENVIRONMENT },
	/* the work queue (docs/api.md §6): poll and stats before the {work_id} routes they also
	   match */
	{ { "GET", "/v1/environments/{id}/work/poll" },
	  work_poll,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY,
	  NULL },
	{ { "GET", "/v1/environments/{id}/work/stats" },
	  work_stats,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY,
	  NULL },
	{ { "GET", "/v1/environments/{id}/work" },
	  resource_list,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY,
	  &RES_WORK },
	{ { "GET", "/v1/environments/{id}/work/{work_id}" },
	  resource_retrieve,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN,
	  &RES_WORK },
	{ { "POST", "/v1/environments/{id}/work/{work_id}" },
	  work_update,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_ENV_KEY,
	  NULL },
	{ { "POST", "/v1/environments/{id}/work/{work_id}/ack" },
	  work_ack,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN,
	  NULL },
	{ { "POST", "/v1/environments/{id}/work/{work_id}/heartbeat" },
	  work_heartbeat,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN,
	  NULL },
	{ { "POST", "/v1/environments/{id}/work/{work_id}/stop" },
	  work_stop,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT | ROUTE_ENV_KEY | ROUTE_WORK_TOKEN,
	  NULL },
	{ { "POST", "/v1/agents" },
	  agent_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT,
	  NULL },
	{ { "GET", "/v1/agents" }, resource_list, ROUTE_AUTH | ROUTE_BETA, &RES_AGENT },
	{ { "GET", "/v1/agents/{id}" }, resource_retrieve, ROUTE_AUTH | ROUTE_BETA, &RES_AGENT },
	{ { "POST", "/v1/agents/{id}" }, agent_update, ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON, NULL },
	{ { "POST", "/v1/agents/{id}/archive" },
	  resource_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT,
	  &RES_AGENT },
	{ { "GET", "/v1/agents/{id}/versions" }, agent_versions, ROUTE_AUTH | ROUTE_BETA, NULL },
	/* vaults and their credentials (docs/api.md §8) */
	{ { "POST", "/v1/vaults" },
	  vault_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT,
	  NULL },
	{ { "GET", "/v1/vaults" }, resource_list, ROUTE_AUTH | ROUTE_BETA, &RES_VAULT },
	{ { "GET", "/v1/vaults/{id}" }, resource_retrieve, ROUTE_AUTH | ROUTE_BETA, &RES_VAULT },
	{ { "POST", "/v1/vaults/{id}" }, vault_update, ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON, NULL },
	{ { "DELETE", "/v1/vaults/{id}" }, resource_delete, ROUTE_AUTH | ROUTE_BETA, &RES_VAULT },
	{ { "POST", "/v1/vaults/{id}/archive" },
	  resource_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT,
	  &RES_VAULT },
	{ { "POST", "/v1/vaults/{id}/credentials" },
	  cred_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT,
	  NULL },
	{ { "GET", "/v1/vaults/{id}/credentials" },
	  resource_list,
	  ROUTE_AUTH | ROUTE_BETA,
	  &RES_VAULT_CREDENTIAL },
	{ { "GET", "/v1/vaults/{id}/credentials/{credential_id}" },
	  resource_retrieve,
	  ROUTE_AUTH | ROUTE_BETA,
	  &RES_VAULT_CREDENTIAL },
	{ { "POST", "/v1/vaults/{id}/credentials/{credential_id}" },
	  cred_update,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON,
	  NULL },
	{ { "DELETE", "/v1/vaults/{id}/credentials/{credential_id}" },
	  resource_delete,
	  ROUTE_AUTH | ROUTE_BETA,
	  &RES_VAULT_CREDENTIAL },
	{ { "POST", "/v1/vaults/{id}/credentials/{credential_id}/archive" },
	  resource_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT,
	  &RES_VAULT_CREDENTIAL },
	{ { "POST", "/v1/sessions" },
	  session_create,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT,
	  NULL },
	{ { "GET", "/v1/sessions" }, resource_list, ROUTE_AUTH | ROUTE_BETA, &RES_SESSION },
	{ { "GET", "/v1/sessions/{id}" },
	  resource_retrieve,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_WORK_TOKEN,
	  &RES_SESSION },
	{ { "POST", "/v1/sessions/{id}" },
	  session_update,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON,
	  NULL },
	{ { "DELETE", "/v1/sessions/{id}" },
	  resource_delete,
	  ROUTE_AUTH | ROUTE_BETA,
	  &RES_SESSION },
	/* session events (docs/api.md §7); the stream is held by nginx where it can
	 * (docs/events.md), which asks this route whether to open it */
	{ { "POST", "/v1/sessions/{id}/events" },
	  events_send,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON | ROUTE_IDEMPOTENT | ROUTE_WORK_TOKEN,
	  NULL },
	{ { "GET", "/v1/sessions/{id}/events" },
	  events_list,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_WORK_TOKEN,
	  NULL },
	{ { "GET", "/v1/sessions/{id}/events/stream" },
	  events_stream,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_WORK_TOKEN,
	  NULL },
	{ { "POST", "/v1/sessions/{id}/archive" },
	  resource_archive,
	  ROUTE_AUTH | ROUTE_BETA | ROUTE_JSON_OPT,
	  &RES_SESSION },
};

void api_handle(void *worker, struct request *req, struct response *resp)
{
	api_dispatch(worker, routes, sizeof(routes) / sizeof(routes[0]), req, resp);
}

/* ---- the application fcgi/serve.c runs (registered by api/main.c) ---- */

/* The vault key (docs/vaults.md): loaded once, by the supervisor before it forks (as root it
 * reads a key file the workers cannot), or by the one worker of the fd 0 and CGI modes, and
 * read-only afterwards; the workers borrow it. */
static struct vault_key api_vault_key;
static int api_vault_key_tried;

static void api_vault_key_load(const struct config *cfg)
{
	if (api_vault_key_tried)
		return;
	api_vault_key_tried = 1;
	if (!vault_key_load(&api_vault_key, cfg->vault_key_file))
		return;
	if (cfg->vault_key_file[0])
		log_error("%s: vault credentials cannot be created or updated until it is fixed",
			  api_vault_key.error);
	else
		log_info("%s: vault credentials are refused", api_vault_key.error);
}

static int api_init(const struct config *cfg)
{
	api_vault_key_load(cfg);
	/* every worker shares the unknown-key cache and per-address budgets; without shared
	 * memory each worker keeps its own (the guard still holds, per worker) */
	if (auth_guard_init())
		log_warn("supervisor: no shared memory for the unknown-key guard: %s",
			 strerror(errno));
	/* the streams workers hold (without a publisher) are counted across workers */
	if (stream_slots_init())
		log_warn("supervisor: no shared memory for the stream slots: %s", strerror(errno));
	return 0;
}

static void *api_worker_new(const struct config *cfg)
{
	struct worker *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->cfg = cfg;
	w->caps = backend_lookup(cfg->backend);
	api_vault_key_load(cfg); /* the fd 0 and CGI modes: no supervisor loaded it */
	w->vault_key = &api_vault_key;
	w->db = db_new(cfg);
	if (!w->db) {
		free(w);
		return NULL;
	}
	return w;
}

static void api_worker_free(void *worker)
{
	struct worker *w = worker;

	if (!w)
		return;
	db_free(w->db);
	free(w);
}

const struct serve_app api_app = {
	.init = api_init,
	.worker_new = api_worker_new,
	.worker_free = api_worker_free,
	.handle = api_handle,
	.aux_enabled = tail_enabled,
	.aux_run = tail_run,
	.aux_name = "terrarium-tail",
};
