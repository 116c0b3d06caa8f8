/* A fake route table for the API policy (handlers/dispatch.c) and stand-ins for the two calls
 * the policy makes (authentication with its scope, idempotency), so dispatch is tested without
 * the handlers or a database. */
#ifndef TERRARIUM_TEST_STUBS_H
#define TERRARIUM_TEST_STUBS_H

#include "../../handlers/dispatch.h"

extern int stub_auth_result;	      /* 0: authenticated; -1: 401 */
extern const char *stub_last_handler; /* name of the handler that ran, or NULL */

/* api_dispatch over the fake table: health_live (GET /healthz, no flags), env_create,
 * env_list, env_retrieve, env_update, env_delete, env_archive (the /v1/environments routes
 * with the real table's flags). */
void stub_dispatch(struct worker *w, struct request *req, struct response *resp);

/* A request body held in memory, read through stub_read (the req_reader contract of http.h:
 * fewer than N bytes only at the end of the input). */
struct stub_src {
	const void *data;
	size_t len, off;
};
size_t stub_read(void *ctx, char *buf, size_t n);

#endif
