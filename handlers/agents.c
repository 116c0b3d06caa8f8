/* /v1/agents (docs/api.md §5; SDK resources/beta/agents): create, update (writes a new version),
 * the versions of one agent, and the resource table's entry (retrieve, optionally at a version,
 * list and archive are handlers/resource.c's). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/agents.h"
#include "../db/keys.h"
#include "agent_validate.h"
#include "cursor.h"
#include "handlers.h"
#include "resource.h"

#define AGENT_ID_PREFIX "agent_"
#define AGENT_CURSOR_KIND "agent"
#define AGENT_VERSIONS_CURSOR_KIND "agentv"
#define AGENT_VERSION_TEXT_MAX 24
#define AGENT_Q_GTE "created_at[gte]"
#define AGENT_Q_LTE "created_at[lte]"
#define AGENT_FILTERS_TEXT "include_archived, created_at[gte], created_at[lte] or agent"

/* The API object for row R of an agent SELECT (row_render). */
static json_t *agent_object(struct db *db, const struct db_rows *rows, unsigned r)
{
	const char *archived = db_cell(rows, r, AGENT_C_ARCHIVED);
	json_t *def, *obj;

	if (db_json_load_object(db, db_cell(rows, r, AGENT_C_DEFINITION), "agent",
				db_cell(rows, r, AGENT_C_ID), "definition", &def))
		return NULL;
	obj = json_pack("{s:s, s:s}", "id", db_cell(rows, r, AGENT_C_ID), "type", "agent");
	if (obj && (json_object_update(obj, def) ||
		    json_object_set_new(obj, "version",
					json_integer(atoll(db_cell(rows, r, AGENT_C_VERSION)))) ||
		    json_object_set_new(obj, "created_at",
					json_string(db_cell(rows, r, AGENT_C_CREATED))) ||
		    json_object_set_new(obj, "updated_at",
					json_string(db_cell(rows, r, AGENT_C_UPDATED))) ||
		    json_object_set_new(obj, "archived_at",
					archived ? json_string(archived) : json_null()))) {
		json_decref(obj);
		obj = NULL;
	}
	json_decref(def);
	return obj;
}

static int check_id(struct request *req, struct response *resp)
{
	return resource_check(&RES_AGENT, req, resp, req->params[0]);
}

/* --- create ----------------------------------------------------------------------------- */

static enum db_status create_tx(struct db *db, void *arg)
{
	return agentdb_insert(db, arg);
}

void agent_create(struct worker *w, struct request *req, struct response *resp)
{
	char id[RESOURCE_ID_MAX], now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	struct verr err = { 0 };
	char *text = NULL;
	enum db_status st;
	json_t *def, *obj;

	def = agent_validate_create(req->json, &err);
	if (!def) {
		respond_verr(req, resp, &err);
		return;
	}
	if (resource_new_id(req, resp, AGENT_ID_PREFIX, id))
		goto out;
	clock_now(now_db, now_api);
	st = db_json_dump(w->db, def, "agent", id, "definition", &text);
	if (!st)
		st = db_tx(w->db, create_tx,
			   &(struct agent_row_in){ .id = id,
						   .workspace_id = req->principal->workspace_id,
						   .account_id = req->principal->account_id,
						   .definition = text,
						   .now = now_db });
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	/* the rows hold exactly what was validated: answer from it without reading it back */
	obj = json_pack("{s:s, s:s}", "id", id, "type", "agent");
	if (!obj || json_object_update(obj, def) ||
	    json_object_set_new(obj, "version", json_integer(1)) ||
	    json_object_set_new(obj, "created_at", json_string(now_api)) ||
	    json_object_set_new(obj, "updated_at", json_string(now_api)) ||
	    json_object_set_new(obj, "archived_at", json_null())) {
		json_decref(obj);
		respond_internal(req, resp, "out of memory");
		goto out;
	}
	resp_json(resp, 200, obj);
out:
	free(text);
	json_decref(def);
}

/* --- update ----------------------------------------------------------------------------- */

/* The update's body and its `version` (0 when absent). */
struct update_arg {
	json_t *body;
	long long expected;
};

/* The update's change (resource_change): a new version when the body changes the definition,
 * refused when the body names a version that is not the current one. */
static enum db_status update_change(struct db *db, const struct db_key *k,
				    const struct db_rows *rows, void *arg, int *wrote,
				    struct verr *err)
{
	const struct update_arg *u = arg;
	long long current = atoll(db_cell(rows, 0, AGENT_C_CURRENT));
	json_t *cur, *next = NULL;
	char now_db[CLOCK_DB_LEN];
	char *text = NULL;
	enum db_status st = DB_OK;
	int changed = 0;

	if (u->expected && u->expected != current) {
		verr_set(err, 409, NULL,
			 "'version' %lld does not match the agent's current version %lld: retrieve "
			 "the agent and retry",
			 u->expected, current);
		return DB_OK;
	}
	st = db_json_load(db, db_cell(rows, 0, AGENT_C_DEFINITION), "agent", k->id, "definition",
			  &cur);
	if (st)
		return st;
	next = agent_validate_update(u->body, cur, &changed, err);
	if (!next || !changed)
		goto out; /* refused, or nothing to write: no new version */
	st = db_json_dump(db, next, "agent", k->id, "definition", &text);
	if (st)
		goto out;
	clock_now(now_db, NULL);
	st = agentdb_add_version(db,
				 &(struct agent_row_in){ .id = k->id,
							 .workspace_id = k->workspace_id,
							 .definition = text,
							 .now = now_db },
				 current + 1);
	*wrote = 1;
out:
	free(text);
	json_decref(next);
	json_decref(cur);
	return st;
}

void agent_update(struct worker *w, struct request *req, struct response *resp)
{
	struct update_arg u = { .body = req->json };
	struct verr err = { 0 };

	if (check_id(req, resp))
		return;
	/* a malformed `version` is a 400 before anything is read */
	if (agent_update_version(req->json, &u.expected, &err)) {
		respond_verr(req, resp, &err);
		return;
	}
	resource_update(&RES_AGENT, w, req, resp, update_change, &u);
}

/* --- list ------------------------------------------------------------------------------- */

/* created_at[gte], created_at[lte]; the cursor is bound to every filter. */
static int agent_list_query(struct request *req, struct response *resp, struct resource_list *l)
{
	struct db_page *p = &l->page;

	if (query_time(req, resp, AGENT_Q_GTE, p->gte) ||
	    query_time(req, resp, AGENT_Q_LTE, p->lte))
		return -1;
	snprintf(l->filter, sizeof(l->filter), "a%d;g%s;l%s", p->include_archived, p->gte, p->lte);
	return 0;
}

const struct resource RES_AGENT = {
	.kind = "agent",
	.id_prefix = AGENT_ID_PREFIX,
	.visibility = RES_VIS_WORKSPACE,
	.flags = RES_VERSIONED | RES_LIST_ARCHIVED,
	.cursor_kind = AGENT_CURSOR_KIND,
	.filters_text = AGENT_FILTERS_TEXT,
	.cols = { .id = AGENT_C_ID,
		  .created_db = AGENT_C_CREATED_DB,
		  .archived = AGENT_C_ARCHIVED },
	.render = agent_object,
	.list_query = agent_list_query,
	.db = { .get = agentdb_get, .list = agentdb_list, .archive = agentdb_archive },
};

void agent_versions(struct worker *w, struct request *req, struct response *resp)
{
	char created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX];
	struct db_rows rows = { 0 };
	long long limit, before = 0;
	enum db_status st;
	char *end;
	int paged;

	if (check_id(req, resp) ||
	    query_limit(req, resp, LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT, &limit) ||
	    page_parse(w, req, resp, AGENT_VERSIONS_CURSOR_KIND, req->params[0], NULL, created, id,
		       &paged))
		return;
	if (paged) {
		before = strtoll(id, &end, 10);
		if (*end || before < 1) {
			resp_error(resp, req, 400, NULL, "'page' is not a valid cursor");
			return;
		}
	}
	st = agentdb_versions(w->db, req->principal->workspace_id, req->params[0], before,
			      limit + 1, &rows);
	if (!st && !rows.nrows) {    /* every agent has a version: no rows means no such agent */
		db_rows_free(&rows); /* an empty result set still holds its arena */
		st = resource_get(&RES_AGENT, w->db, req, req->params[0], 0, &rows);
	}
	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	if (!rows.nrows) {
		db_rows_free(&rows);
		resp_error(resp, req, 404, NULL, "agent '%s' not found", req->params[0]);
		db_rows_free(&rows);
		return;
	}
	if (!before || atoll(db_cell(&rows, 0, AGENT_C_VERSION)) < before)
		resource_page(&RES_AGENT, w, req, resp, &rows, limit, AGENT_VERSIONS_CURSOR_KIND,
			      req->params[0], AGENT_C_CREATED_DB, AGENT_C_VERSION);
	else /* the existence probe's row is not a page */
		resp_json(resp, 200, json_pack("{s:[], s:n}", "data", "next_page"));
	db_rows_free(&rows);
}
