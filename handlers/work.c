/* /v1/environments/{id}/work*: the self-hosted work queue (docs/api.md §6, docs/work-queue.md):
 * poll, ack, heartbeat, stop, retrieve, update, list, stats; environment keys and sessions
 * tokens. States: queued -> (delivered by a poll, still queued) -> starting (ack) -> active
 * (first heartbeat) -> stopping (stop requested) -> stopped. Every transition reads the item
 * locked, changes a struct work_row here and writes it back (db/work.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/environments.h"
#include "../db/events.h"
#include "../db/work.h"
#include "cursor.h"
#include "env_validate.h"
#include "handlers.h"
#include "resource.h"

#define WORK_KIND "work"
#define WORK_CURSOR_KIND "work"
#define WORK_BLOCK_MS_MAX 999 /* docs/api.md §6: block_ms 1-999 */
#define WORK_RECLAIM_DEFAULT_MS 5000
#define WORK_RECLAIM_MAX_MS 86400000LL /* a day */
#define WORK_TTL_DEFAULT_S 60
#define WORK_TTL_MIN_S 10
#define WORK_TTL_MAX_S 600
#define WORK_TTL_PARAM_MAX 1000000000LL /* larger desired_ttl_seconds: 400 (smaller: clamped) */
#define WORK_NO_HEARTBEAT "NO_HEARTBEAT"
#define WORK_EXPECTED_MAX 64 /* bytes of expected_last_heartbeat */
#define WORK_HOST_MAX 255    /* Host header used in the secret's api_base_url */
#define WORK_SECRET_JSON_MAX 512

/* ---- rendering ---- */

/* DATETIME(6) text ("YYYY-MM-DD HH:MM:SS.ffffff") as RFC 3339 into OUT, or NULL -> "". */
static void work_ts_api(const char *db, char out[CLOCK_API_LEN])
{
	if (!db || !*db) {
		out[0] = '\0';
		return;
	}
	snprintf(out, CLOCK_API_LEN, "%.10sT%.15sZ", db, db + 11);
}

/* A timestamp cell as a JSON string or null. New reference. */
static json_t *work_ts_json(const char *db)
{
	char api[CLOCK_API_LEN];

	work_ts_api(db, api);
	return *api ? json_string(api) : json_null();
}

/* The API object for row R of a work SELECT, secret null (row_render). */
static json_t *work_object(struct db *db, const struct db_rows *rows, unsigned r)
{
	json_t *meta;

	if (db_json_load_object(db, db_cell(rows, r, WORK_C_METADATA), "work",
				db_cell(rows, r, WORK_C_ID), "metadata", &meta))
		return NULL;
	return json_pack("{s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:o, s:n, s:o, s:o, s:o, s:o, s:o,"
			 " s:o}",
			 "type", "work", "id", db_cell(rows, r, WORK_C_ID), "environment_id",
			 db_cell(rows, r, WORK_C_ENVIRONMENT_ID), "data", "type", "session", "id",
			 db_cell(rows, r, WORK_C_SESSION_ID), "state",
			 db_cell(rows, r, WORK_C_STATE), "metadata", meta, "secret", "created_at",
			 work_ts_json(db_cell(rows, r, WORK_C_CREATED)), "acknowledged_at",
			 work_ts_json(db_cell(rows, r, WORK_C_ACKNOWLEDGED)), "started_at",
			 work_ts_json(db_cell(rows, r, WORK_C_STARTED)), "latest_heartbeat_at",
			 work_ts_json(db_cell(rows, r, WORK_C_HEARTBEAT)), "stop_requested_at",
			 work_ts_json(db_cell(rows, r, WORK_C_STOP_REQUESTED)), "stopped_at",
			 work_ts_json(db_cell(rows, r, WORK_C_STOPPED)));
}

/* 404 naming the work item (params[1]). */
static void work_not_found(struct request *req, struct response *resp)
{
	resp_error(resp, req, 404, NULL, "work '%.64s' not found", req->params[1]);
}

/* Respond with the item in ROWS, or 404. */
static void respond_work(struct worker *w, struct request *req, struct response *resp,
			 const struct db_rows *rows)
{
	resource_respond(&RES_WORK, w, req, resp, rows, req->params[1]);
}

/* ---- the environment of every work route ---- */

/* Check params[0] names a visible self_hosted environment, then give back the leases of its
 * items that expired. 0, or -1 with RESP filled (404 environment_not_found, 400 for cloud). */
static int work_env(struct worker *w, struct request *req, struct response *resp)
{
	struct db_rows env = { 0 };
	json_t *config = NULL;
	const char *type;
	enum db_status st;
	int ret = -1;

	if (!resource_id_valid(req->params[0], "env_")) {
		resp_error(resp, req, 404, "environment_not_found", "environment '%.64s' not found",
			   req->params[0]);
		return -1;
	}
	st = resource_get(&RES_ENVIRONMENT, w->db, req, req->params[0], 0, &env);
	if (st) {
		handle_db_error(w, req, resp, st);
		return -1;
	}
	if (!env.nrows) {
		resp_error(resp, req, 404, "environment_not_found", "environment '%s' not found",
			   req->params[0]);
		goto out;
	}
	st = db_json_load(w->db, db_cell(&env, 0, ENV_C_CONFIG), "environment", req->params[0],
			  "config", &config);
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	type = json_string_value(json_object_get(config, "type"));
	if (!type || strcmp(type, "self_hosted")) {
		resp_error(resp, req, 400, NULL,
			   "environment '%s' is %s: the work queue exists only for self_hosted "
			   "environments",
			   req->params[0], type ? type : "not self_hosted");
		goto out;
	}
	st = workdb_expire(w->db, req->params[0]);
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	ret = 0;
out:
	json_decref(config);
	db_rows_free(&env);
	return ret;
}

/* work_env, then the shape of the work id (params[1]). */
static int work_item_route(struct worker *w, struct request *req, struct response *resp)
{
	if (work_env(w, req, resp))
		return -1;
	return resource_check(&RES_WORK, req, resp, req->params[1]);
}

/* Routes whose body is optional take no fields but those named in FIELDS (NULL-terminated). */
static int body_fields(struct request *req, struct response *resp, const char *const *fields)
{
	const char *key;
	json_t *v;

	if (!req->json)
		return 0;
	json_object_foreach (req->json, key, v) {
		if (!verr_in_list(key, fields)) {
			resp_error(resp, req, 400, NULL, "unknown field '%.64s'", key);
			return -1;
		}
	}
	return 0;
}

/* ---- poll ---- */

/* The poll's `secret`: base64url of {"sessions_token","api_base_url"} into a new string
 * (caller frees). The base URL is the one the request came in on. */
static char *work_secret(const struct request *req, const char *token)
{
	const char *host = req_env(req, "HTTP_HOST"), *scheme = req_env(req, "REQUEST_SCHEME");
	json_t *o = json_pack("{s:s}", "sessions_token", token);
	char *text, *out = NULL;
	size_t n;

	if (host && *host && strlen(host) <= WORK_HOST_MAX &&
	    strspn(host, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz.-:[]") ==
		    strlen(host)) {
		char url[WORK_HOST_MAX + 16];
		snprintf(url, sizeof(url), "%s://%s",
			 scheme && !strcmp(scheme, "https") ? "https" : "http", host);
		json_object_set_new(o, "api_base_url", json_string(url));
	}
	text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!text)
		return NULL;
	n = strlen(text);
	out = malloc(4 * ((n + 2) / 3) + 1);
	if (out)
		b64url_encode((const unsigned char *)text, n, out);
	free(text);
	return out;
}

/* anthropic-worker-id: absent, or 1..WORK_WORKER_ID_MAX printable ASCII. 0 or -1 (400). */
static int worker_id_param(struct request *req, struct response *resp, const char **out)
{
	const char *id = req_env(req, "HTTP_ANTHROPIC_WORKER_ID");

	*out = NULL;
	if (!id)
		return 0;
	for (const char *p = id; *p; p++)
		if (*p < 0x21 || *p > 0x7e)
			id = "";
	if (!*id || strlen(id) > WORK_WORKER_ID_MAX) {
		resp_error(resp, req, 400, NULL,
			   "the 'anthropic-worker-id' header must be 1 to %d printable ASCII "
			   "characters without spaces",
			   WORK_WORKER_ID_MAX);
		return -1;
	}
	*out = id;
	return 0;
}

void work_poll(struct worker *w, struct request *req, struct response *resp)
{
	char token[sizeof(WORK_TOKEN_PREFIX) + WORK_TOKEN_RANDOM_LEN], *secret = NULL;
	unsigned char hash[SHA256_LEN];
	const char *worker_id;
	long long block_ms, reclaim_ms, deadline;
	struct db_rows rows = { 0 };
	enum db_status st;
	json_t *obj;

	if (query_count(req, resp, "block_ms", 1, WORK_BLOCK_MS_MAX, 0, &block_ms) ||
	    query_count(req, resp, "reclaim_older_than_ms", 1, WORK_RECLAIM_MAX_MS,
			WORK_RECLAIM_DEFAULT_MS, &reclaim_ms) ||
	    worker_id_param(req, resp, &worker_id) || work_env(w, req, resp))
		return;
	deadline = clock_mono_ms() + block_ms;
	if (worker_id && (st = workdb_seen(w->db, req->params[0], worker_id)))
		goto db_fail;
	for (;;) {
		long long left;
		int woken;

		if (random_id(token, sizeof(token), WORK_TOKEN_PREFIX, WORK_TOKEN_RANDOM_LEN)) {
			respond_internal(req, resp, "no random token");
			return;
		}
		sha256(token, strlen(token), hash);
		st = workdb_claim(w->db, req->params[0], reclaim_ms, worker_id, hash, &rows);
		if (st)
			goto db_fail;
		if (rows.nrows)
			break;
		db_rows_free(&rows);
		left = deadline - clock_mono_ms();
		if (left <= 0) {
			resp_empty(resp, 204);
			return;
		}
		/* a queueing committed through another database server (a Galera node) cannot
		 * wake this poll: [api] poll_recheck_ms bounds how late it is seen */
		if (w->cfg->api_poll_recheck_ms && left > w->cfg->api_poll_recheck_ms)
			left = w->cfg->api_poll_recheck_ms;
		st = workdb_wait(w->db, req->params[0], reclaim_ms, left, &woken);
		/* not woken by a queueing: a lease may have run out meanwhile */
		if (!st && !woken)
			st = workdb_expire(w->db, req->params[0]);
		if (st)
			goto db_fail;
	}
	obj = work_object(w->db, &rows, 0);
	secret = work_secret(req, token);
	if (!obj || !secret) {
		json_decref(obj);
		handle_db_error(w, req, resp, obj ? DB_NOMEM : db_last_status(w->db));
	} else {
		json_object_set_new(obj, "secret", json_string(secret));
		resp_json(resp, 200, obj);
	}
	explicit_bzero(token, sizeof(token));
	free(secret);
	db_rows_free(&rows);
	return;
db_fail:
	db_rows_free(&rows);
	handle_db_error(w, req, resp, st);
}

/* ---- transitions on one item ---- */

enum work_op { WORK_ACK, WORK_HEARTBEAT, WORK_STOP };

struct work_tx {
	enum work_op op;
	int force;	      /* stop */
	long long ttl;	      /* heartbeat: the clamped TTL */
	const char *expected; /* heartbeat: expected_last_heartbeat or NULL */
	struct db_rows rows;  /* the item after the transition */
	struct verr err;
	json_t *details;		   /* 412's details (new reference) */
	char heartbeat_api[CLOCK_API_LEN]; /* heartbeat answer */
	int lease_extended;
};

/* The lease as the server holds it (BetaWorkLeaseState). New reference. */
static json_t *lease_state(const struct work_row *row)
{
	return json_pack("{s:o, s:b, s:s, s:I}", "last_heartbeat", work_ts_json(row->heartbeat_at),
			 "lease_extended", 0, "state", row->state, "ttl_seconds",
			 (json_int_t)row->ttl_seconds);
}

static void set_now(char *field, const char *now)
{
	if (!*field)
		snprintf(field, WORK_TS_LEN, "%s", now);
}

/* The heartbeat rules of docs/api.md §6 on ROW (item ID). 0 with ROW changed (or left when
 * stopping), or -1 with ERR and c->details (412). */
static int heartbeat_apply(struct work_tx *c, const char *id, struct work_row *row, const char *now,
			   struct verr *err)
{
	char stored[CLOCK_API_LEN];

	work_ts_api(row->heartbeat_at, stored);
	if (!strcmp(row->state, "stopping") || !strcmp(row->state, "stopped")) {
		/* no comparison: the state tells the worker to stop */
		snprintf(c->heartbeat_api, sizeof(c->heartbeat_api), "%s", stored);
		c->lease_extended = 0;
		return 0;
	}
	if (!strcmp(row->state, "queued") ||
	    (!strcmp(row->state, "starting") && c->expected &&
	     strcmp(c->expected, WORK_NO_HEARTBEAT)) ||
	    (!strcmp(row->state, "active") && c->expected && strcmp(c->expected, stored))) {
		c->details = json_pack("{s:s, s:o}", "error_code", "heartbeat_precondition_failed",
				       "current_state", lease_state(row));
		if (!strcmp(row->state, "queued"))
			return verr_set(err, 412, NULL,
					"work '%s' holds no lease: it is queued (not acknowledged, "
					"or its lease expired)",
					id);
		return verr_set(
			err, 412, NULL,
			"'expected_last_heartbeat' does not match the stored heartbeat (%s)",
			*stored ? stored : "none: send NO_HEARTBEAT");
	}
	if (!strcmp(row->state, "starting")) {
		snprintf(row->state, sizeof(row->state), "active");
		snprintf(row->started_at, WORK_TS_LEN, "%s", now);
	}
	snprintf(row->heartbeat_at, WORK_TS_LEN, "%s", now);
	row->ttl_seconds = c->ttl;
	clock_in(c->ttl, row->lease_expires_at, NULL);
	work_ts_api(now, c->heartbeat_api);
	c->lease_extended = 1;
	return 0;
}

/* The item of SESSION_ID stopped: when the session waits for its client (requires_action) and
 * no live item is left to bring one, nobody can answer: the wait ends (evdb_client_gone: a
 * session.error saying so, idle end_turn; docs/work-queue.md). Part of the stop's transaction. */
static enum db_status work_stopped(struct db *db, const char *session_id, const char *now)
{
	struct ev_session s;
	int found = 0, live = 1;
	enum db_status st = evdb_lock_id(db, session_id, now, &s, &found);

	if (!st && found && !s.turn_pending && s.blocking)
		st = workdb_session_live(db, session_id, &live);
	if (!st && !live) {
		st = evdb_client_gone(db, &s);
		if (!st)
			st = evdb_save(db, &s);
	}
	ev_session_release(&s);
	return st;
}

/* Transition C->op of the item (resource_change; ARG is C): ROWS holds it, read locked. */
static enum db_status work_change(struct db *db, const struct db_key *k, const struct db_rows *rows,
				  void *arg, int *wrote, struct verr *err)
{
	struct work_tx *c = arg;
	char now[CLOCK_DB_LEN];
	struct work_row row;

	json_decref(c->details); /* from an attempt db_tx ran again */
	c->details = NULL;
	work_row_load(&row, rows, 0);
	clock_now(now, NULL);
	switch (c->op) {
	case WORK_ACK:
		if (strcmp(row.state, "queued") || !*row.delivered_at) {
			verr_set(err, 409, NULL, "work '%s' cannot be acknowledged: it is %s%s",
				 k->id, row.state,
				 strcmp(row.state, "queued") ? ""
							     : " and was not delivered by a poll");
			return DB_OK;
		}
		snprintf(row.state, sizeof(row.state), "starting");
		snprintf(row.acknowledged_at, WORK_TS_LEN, "%s", now);
		/* a worker that never heartbeats gives the item back after one default lease */
		row.ttl_seconds = WORK_TTL_DEFAULT_S;
		clock_in(WORK_TTL_DEFAULT_S, row.lease_expires_at, NULL);
		break;
	case WORK_HEARTBEAT:
		if (heartbeat_apply(c, k->id, &row, now, err))
			return DB_OK;
		if (!c->lease_extended)
			return DB_OK; /* stopping or stopped: nothing changes */
		break;
	case WORK_STOP:
		if (!strcmp(row.state, "stopped")) {
			verr_set(err, 409, NULL, "work '%s' is already stopped", k->id);
			return DB_OK;
		}
		set_now(row.stop_requested_at, now);
		if (!strcmp(row.state, "active") && !c->force) {
			snprintf(row.state, sizeof(row.state), "stopping");
		} else if (strcmp(row.state, "stopping") || c->force) {
			snprintf(row.state, sizeof(row.state), "stopped");
			snprintf(row.stopped_at, WORK_TS_LEN, "%s", now);
			row.lease_expires_at[0] = '\0';
		}
		break;
	}
	*wrote = 1;
	{
		enum db_status st = workdb_write(db, k->id, &row, now);
		const char *session_id = db_cell(rows, 0, WORK_C_SESSION_ID);

		if (!st && c->op == WORK_STOP && !strcmp(row.state, "stopped") && session_id)
			st = work_stopped(db, session_id, now);
		return st;
	}
}

/* Run transition C and answer with the item (or, for a heartbeat, its lease). */
static void work_transition(struct worker *w, struct request *req, struct response *resp,
			    struct work_tx *c)
{
	enum db_status st =
		resource_change_run(&RES_WORK, w, req, work_change, c, &c->rows, &c->err);

	if (st)
		handle_db_error(w, req, resp, st);
	else if (!c->rows.nrows)
		work_not_found(req, resp);
	else if (c->details) {
		resp_error_details(resp, req, c->err.status, c->details, "%s", c->err.msg);
		c->details = NULL;
	} else if (c->err.status)
		resp_error(resp, req, c->err.status, NULL, "%s", c->err.msg);
	else if (c->op == WORK_HEARTBEAT) {
		struct work_row row;

		work_row_load(&row, &c->rows, 0);
		resp_json(resp, 200,
			  json_pack("{s:s, s:s, s:b, s:s, s:I}", "type", "work_heartbeat",
				    "last_heartbeat", c->heartbeat_api, "lease_extended",
				    c->lease_extended, "state", row.state, "ttl_seconds",
				    (json_int_t)row.ttl_seconds));
	} else
		respond_work(w, req, resp, &c->rows);
	json_decref(c->details);
	db_rows_free(&c->rows);
}

void work_ack(struct worker *w, struct request *req, struct response *resp)
{
	static const char *const fields[] = { NULL };
	struct work_tx c = { .op = WORK_ACK };

	if (work_item_route(w, req, resp) || body_fields(req, resp, fields))
		return;
	work_transition(w, req, resp, &c);
}

void work_heartbeat(struct worker *w, struct request *req, struct response *resp)
{
	static const char *const fields[] = { NULL };
	struct work_tx c = { .op = WORK_HEARTBEAT };

	if (work_item_route(w, req, resp) || body_fields(req, resp, fields) ||
	    query_count(req, resp, "desired_ttl_seconds", 0, WORK_TTL_PARAM_MAX, WORK_TTL_DEFAULT_S,
			&c.ttl))
		return;
	c.ttl = c.ttl < WORK_TTL_MIN_S	 ? WORK_TTL_MIN_S
		: c.ttl > WORK_TTL_MAX_S ? WORK_TTL_MAX_S
					 : c.ttl;
	c.expected = req_query(req, "expected_last_heartbeat");
	if (c.expected && (!*c.expected || strlen(c.expected) > WORK_EXPECTED_MAX)) {
		resp_error(resp, req, 400, NULL,
			   "'expected_last_heartbeat' must be NO_HEARTBEAT or the last_heartbeat "
			   "the server returned (at most %d characters)",
			   WORK_EXPECTED_MAX);
		return;
	}
	work_transition(w, req, resp, &c);
}

void work_stop(struct worker *w, struct request *req, struct response *resp)
{
	static const char *const fields[] = { "force", NULL };
	struct work_tx c = { .op = WORK_STOP };
	json_t *force = req->json ? json_object_get(req->json, "force") : NULL;

	if (work_item_route(w, req, resp) || body_fields(req, resp, fields))
		return;
	if (force && !json_is_boolean(force)) {
		resp_error(resp, req, 400, NULL, "'force' must be a boolean");
		return;
	}
	c.force = json_is_true(force);
	work_transition(w, req, resp, &c);
}

/* ---- retrieve, update, list, stats ---- */

/* The update's change (resource_change; ARG is the `metadata` patch): a per-key patch of the
 * item's metadata, written when it changes. */
static enum db_status update_change(struct db *db, const struct db_key *k,
				    const struct db_rows *rows, void *arg, int *wrote,
				    struct verr *err)
{
	char now[CLOCK_DB_LEN];
	struct meta_change m;
	enum db_status st;

	st = meta_change_load(db, db_cell(rows, 0, WORK_C_METADATA), "work", k->id, arg, &m, err);
	if (st || !m.meta || !m.changed)
		goto out;
	clock_now(now, NULL);
	st = workdb_set_metadata(db, k->id, m.text, now);
	*wrote = 1;
out:
	meta_change_release(&m);
	return st;
}

void work_update(struct worker *w, struct request *req, struct response *resp)
{
	static const char *const fields[] = { "metadata", NULL };
	json_t *patch;

	/* the environment and item first: another workspace's ids answer 404 whatever the body */
	if (work_item_route(w, req, resp) || body_fields(req, resp, fields))
		return;
	patch = json_object_get(req->json, "metadata");
	if (!patch) {
		resp_error(resp, req, 400, NULL, "'metadata' is required");
		return;
	}
	if (!json_is_object(patch)) {
		resp_error(resp, req, 400, "invalid_metadata", "'metadata' must be an object");
		return;
	}
	resource_update(&RES_WORK, w, req, resp, update_change, patch);
}

/* A cursor belongs to one environment's list. */
static int work_list_query(struct request *req, struct response *resp, struct resource_list *l)
{
	(void)resp;
	snprintf(l->filter, sizeof(l->filter), "%s", req->params[0]);
	return 0;
}

const struct resource RES_WORK = {
	.kind = WORK_KIND,
	.id_prefix = WORK_ID_PREFIX,
	.id_param = 1,
	.visibility = RES_VIS_PARENT,
	.cursor_kind = WORK_CURSOR_KIND,
	.filters_text = "another environment",
	.cols = { .id = WORK_C_ID, .created_db = WORK_C_CREATED },
	.render = work_object,
	.route_check = work_env,
	.list_query = work_list_query,
	.db = { .get = workdb_get, .list = workdb_list },
};

void work_stats(struct worker *w, struct request *req, struct response *resp)
{
	struct db_rows rows;
	enum db_status st;
	long long polling;

	if (work_env(w, req, resp))
		return;
	st = workdb_stats(w->db, req->params[0], &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	polling = atoll(db_cell(&rows, 0, 3));
	resp_json(resp, 200,
		  json_pack("{s:s, s:I, s:I, s:o, s:o}", "type", "work_queue_stats", "depth",
			    (json_int_t)atoll(db_cell(&rows, 0, 0)), "pending",
			    (json_int_t)atoll(db_cell(&rows, 0, 1)), "oldest_queued_at",
			    work_ts_json(db_cell(&rows, 0, 2)), "workers_polling",
			    polling ? json_integer(polling) : json_null()));
	db_rows_free(&rows);
}
