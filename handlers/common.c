/* Cross-cutting pieces every route uses: database error mapping, authentication, health. */
#include <string.h>

#include "../common/log.h"
#include "../db/keys.h"
#include "handlers.h"

#define AUTH_BEARER "Bearer "

void handle_db_error(struct worker *w, struct request *req, struct response *resp,
		     enum db_status st)
{
	log_error("%s %s: database %s: %s (%s)", req->method, req->path, db_status_name(st),
		  db_error(w->db), req->request_id);
	if (st == DB_GONE || st == DB_RETRY)
		resp_error(resp, req, 503, NULL, "the database is unavailable; retry later");
	else
		resp_error(resp, req, 500, NULL, "internal error");
}

int auth_request(struct worker *w, struct request *req, struct response *resp)
{
	const char *key = req_env(req, "HTTP_X_API_KEY");
	const char *authz = req_env(req, "HTTP_AUTHORIZATION");
	const char *ws_header = req_env(req, "HTTP_ANTHROPIC_WORKSPACE_ID");
	unsigned char hash[SHA256_LEN];
	enum db_status st;
	int found = 0;

	if ((!key || !*key) && authz && !strncmp(authz, AUTH_BEARER, strlen(AUTH_BEARER)))
		key = authz + strlen(AUTH_BEARER);
	if (!key || !*key) {
		resp_error(resp, req, 401, NULL,
			   "missing API key: send 'x-api-key' or 'Authorization: Bearer'");
		return -1;
	}
	if (strlen(key) <= KEY_MAX_LEN) {
		sha256(key, strlen(key), hash);
		st = keys_lookup(w->db, hash, req->auth.key_id, req->auth.workspace_id,
				 req->auth.account_id, sizeof(req->auth.key_id), &found);
		if (st) {
			handle_db_error(w, req, resp, st);
			return -1;
		}
	}
	if (!found) {
		resp_error(resp, req, 401, NULL, "invalid API key");
		return -1;
	}
	if (ws_header && *ws_header && strcmp(ws_header, req->auth.workspace_id)) {
		resp_error(resp, req, 403, NULL,
			   "the 'anthropic-workspace-id' header does not match the API key's workspace");
		return -1;
	}
	return 0;
}

void health_live(struct worker *w, struct request *req, struct response *resp)
{
	(void)w;
	(void)req;
	resp_json(resp, 200, json_pack("{s:s}", "status", "ok"));
}

void health_ready(struct worker *w, struct request *req, struct response *resp)
{
	static const char sql[] = "SELECT 1";
	struct db_rows rows;
	enum db_status st = db_exec(w->db, sql, NULL, 0, &rows, NULL);

	if (st) {
		log_warn("readyz: database %s: %s", db_status_name(st), db_error(w->db));
		resp_error(resp, req, 503, NULL, "the database is unavailable");
		return;
	}
	db_rows_free(&rows);
	resp_json(resp, 200, json_pack("{s:s}", "status", "ready"));
}

int worker_cursor_key(struct worker *w, struct request *req, struct response *resp)
{
	enum db_status st;

	if (w->cursor_key_loaded)
		return 0;
	st = secret_get(w->db, "cursor", w->cursor_key, sizeof(w->cursor_key));
	if (st) {
		handle_db_error(w, req, resp, st);
		return -1;
	}
	w->cursor_key_loaded = 1;
	return 0;
}
