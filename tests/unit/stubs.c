/* Stand-ins for the handlers and database calls the router links against, so router, request
 * and response code can be tested without a database. Each records that it ran. */
#include "stubs.h"

#include <string.h>

int stub_auth_result;
const char *stub_last_handler;

static void record(const char *name, struct response *resp)
{
	stub_last_handler = name;
	resp_json(resp, 200, json_pack("{s:s}", "handler", name));
}

int auth_request(struct worker *w, struct request *req, struct response *resp)
{
	(void)w;
	if (stub_auth_result)
		resp_error(resp, req, 401, NULL, "invalid API key");
	return stub_auth_result;
}

void handle_db_error(struct worker *w, struct request *req, struct response *resp,
		     enum db_status st)
{
	(void)w;
	(void)st;
	resp_error(resp, req, 503, NULL, "the database is unavailable");
}

void idem_run(struct worker *w, struct request *req, struct response *resp, handler_fn handler)
{
	handler(w, req, resp);
}

#define STUB(fn)                                                                   \
	void fn(struct worker *w, struct request *req, struct response *resp)      \
	{                                                                          \
		(void)w;                                                           \
		(void)req;                                                         \
		record(#fn, resp);                                                 \
	}
STUB(health_live)
STUB(health_ready)
STUB(env_create)
STUB(env_retrieve)
STUB(env_update)
STUB(env_list)
STUB(env_archive)
STUB(env_delete)
STUB(agent_create)
STUB(agent_retrieve)
STUB(agent_update)
STUB(agent_list)
STUB(agent_archive)
STUB(agent_versions)
STUB(session_create)
STUB(session_retrieve)
STUB(session_update)
STUB(session_list)
STUB(session_archive)
STUB(session_delete)
STUB(work_poll)
STUB(work_ack)
STUB(work_heartbeat)
STUB(work_stop)
STUB(work_retrieve)
STUB(work_update)
STUB(work_list)
STUB(work_stats)

int work_scope_check(struct request *req, struct response *resp, int env_key_route,
		     int token_route)
{
	(void)req;
	(void)resp;
	(void)env_key_route;
	(void)token_route;
	return 0;
}
