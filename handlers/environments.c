/* /v1/environments: create, retrieve, update, list, archive, delete (API.md §3). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/environments.h"
#include "cursor.h"
#include "env_validate.h"
#include "handlers.h"

#define ENV_ID_PREFIX "env_"
#define ENV_ID_MAX 40
#define ENV_LIST_DEFAULT_LIMIT 100
#define ENV_LIST_MAX_LIMIT 1000
#define ENV_CURSOR_KIND "env"
#define ENV_NOT_FOUND_CODE "environment_not_found" /* the SDK maps it to BetaEnvironmentNotFoundError */

/* The API object for one row of an environment SELECT. New reference, caller decrefs; NULL
 * when a stored JSON column does not parse. */
static json_t *env_object(const struct db_rows *rows, unsigned r)
{
	const char *desc = db_cell(rows, r, ENV_C_DESCRIPTION);
	const char *scope = db_cell(rows, r, ENV_C_SCOPE);
	const char *archived = db_cell(rows, r, ENV_C_ARCHIVED);
	json_t *meta = json_loads(db_cell(rows, r, ENV_C_METADATA), 0, NULL);
	json_t *config = json_loads(db_cell(rows, r, ENV_C_CONFIG), 0, NULL);
	json_t *obj;

	if (!meta || !config) {
		json_decref(meta);
		json_decref(config);
		return NULL;
	}
	obj = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:o}", "id",
			db_cell(rows, r, ENV_C_ID), "type", "environment", "name",
			db_cell(rows, r, ENV_C_NAME), "description",
			desc ? json_string(desc) : json_null(), "metadata", meta, "config", config,
			"created_at", db_cell(rows, r, ENV_C_CREATED), "updated_at",
			db_cell(rows, r, ENV_C_UPDATED), "archived_at",
			archived ? json_string(archived) : json_null());
	if (obj && scope)
		json_object_set_new(obj, "scope", json_string(scope));
	return obj;
}

/* Respond with the object of row 0, or 404 when there is no row. */
static void respond_row(struct worker *w, struct request *req, struct response *resp,
			const struct db_rows *rows)
{
	json_t *obj;

	(void)w;
	if (!rows->nrows) {
		resp_error(resp, req, 404, ENV_NOT_FOUND_CODE, "environment '%s' not found", req->params[0]);
		return;
	}
	obj = env_object(rows, 0);
	if (!obj) {
		log_error("environment %s: stored JSON does not parse", req->params[0]);
		resp_error(resp, req, 500, NULL, "internal error");
		return;
	}
	resp_json(resp, 200, obj);
}

/* 1 when S looks like an environment id; anything else cannot exist, so it answers 404
 * without a query. */
static int env_id_valid(const char *s)
{
	size_t n = strlen(s);
	return n > strlen(ENV_ID_PREFIX) && n < ENV_ID_MAX &&
	       !strncmp(s, ENV_ID_PREFIX, strlen(ENV_ID_PREFIX)) &&
	       strspn(s + 4, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") ==
		       n - 4;
}

static int check_id(struct request *req, struct response *resp)
{
	if (env_id_valid(req->params[0]))
		return 0;
	resp_error(resp, req, 404, ENV_NOT_FOUND_CODE, "environment '%.64s' not found", req->params[0]);
	return -1;
}

/* Serialised forms of the fields for the row writers. Strings are owned (free_row_in). */
struct env_text {
	char *metadata, *config, *description;
};

static int env_text_make(const struct env_fields *f, struct env_text *t)
{
	t->metadata = json_dumps(f->metadata, JSON_COMPACT);
	t->config = json_dumps(f->config, JSON_COMPACT);
	t->description = json_is_string(f->description) ? strdup(json_string_value(f->description))
							: NULL;
	return t->metadata && t->config &&
			       (!json_is_string(f->description) || t->description)
		       ? 0
		       : -1;
}

static void env_text_free(struct env_text *t)
{
	free(t->metadata);
	free(t->config);
	free(t->description);
}

static const char *config_type(const struct env_fields *f)
{
	return json_string_value(json_object_get(f->config, "type"));
}

void env_create(struct worker *w, struct request *req, struct response *resp)
{
	struct env_fields f = { 0 };
	struct env_text t = { 0 };
	struct verr err = { 0 };
	char id[ENV_ID_MAX], now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	enum db_status st;
	json_t *obj;

	if (env_validate_create(req->json, w->caps, &f, &err)) {
		resp_error(resp, req, err.status, err.code, "%s", err.msg);
		return;
	}
	if (env_text_make(&f, &t) || random_id(id, sizeof(id), ENV_ID_PREFIX, ID_RANDOM_LEN)) {
		resp_error(resp, req, 500, NULL, "internal error");
		goto out;
	}
	clock_now(now_db, now_api);
	st = envdb_insert(w->db, &(struct env_row_in){ .id = id,
						       .workspace_id = req->auth.workspace_id,
						       .account_id = req->auth.account_id,
						       .name = f.name,
						       .description = t.description,
						       .metadata = t.metadata,
						       .type = config_type(&f),
						       .scope = f.scope,
						       .config = t.config,
						       .now = now_db });
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	/* the row holds exactly what was validated: answer from it without reading it back */
	obj = json_pack("{s:s, s:s, s:s, s:O, s:O, s:O, s:s, s:s, s:n}", "id", id, "type",
			"environment", "name", f.name, "description", f.description, "metadata",
			f.metadata, "config", f.config, "created_at", now_api, "updated_at", now_api,
			"archived_at");
	if (obj && f.scope)
		json_object_set_new(obj, "scope", json_string(f.scope));
	resp_json(resp, 200, obj);
out:
	env_text_free(&t);
	env_fields_release(&f);
}

void env_retrieve(struct worker *w, struct request *req, struct response *resp)
{
	struct db_rows rows;
	enum db_status st;

	if (check_id(req, resp))
		return;
	st = envdb_get(w->db, req->params[0], req->auth.workspace_id, req->auth.account_id, ENVDB_NO_LOCK,
		       &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	respond_row(w, req, resp, &rows);
	db_rows_free(&rows);
}

/* Load the stored fields of row 0 into F (owned). 0 or -1 when stored JSON is corrupt. */
static int fields_from_row(const struct db_rows *rows, struct env_fields *f)
{
	const char *desc = db_cell(rows, 0, ENV_C_DESCRIPTION);
	const char *scope = db_cell(rows, 0, ENV_C_SCOPE);

	memset(f, 0, sizeof(*f));
	f->name = strdup(db_cell(rows, 0, ENV_C_NAME));
	f->description = desc ? json_string(desc) : json_null();
	f->metadata = json_loads(db_cell(rows, 0, ENV_C_METADATA), 0, NULL);
	f->config = json_loads(db_cell(rows, 0, ENV_C_CONFIG), 0, NULL);
	f->scope = scope ? strdup(scope) : NULL;
	if (!f->name || !f->description || !f->metadata || !f->config || (scope && !f->scope)) {
		env_fields_release(f);
		return -1;
	}
	return 0;
}

struct update_ctx {
	struct worker *w;
	struct request *req;
	struct db_rows rows;   /* the row after the update */
	struct verr err;       /* set when the update is refused */
};

static enum db_status update_tx(struct db *db, void *arg)
{
	struct update_ctx *c = arg;
	struct request *req = c->req;
	struct env_fields f;
	struct env_text t = { 0 };
	char now_db[CLOCK_DB_LEN];
	enum db_status st;
	int changed = 0;

	db_rows_free(&c->rows);
	memset(&c->err, 0, sizeof(c->err));
	st = envdb_get(db, req->params[0], req->auth.workspace_id, req->auth.account_id, ENVDB_LOCK_UPDATE,
		       &c->rows);
	if (st || !c->rows.nrows)
		return st;
	if (db_cell(&c->rows, 0, ENV_C_ARCHIVED)) {
		verr_set(&c->err, 400, "environment_archived",
			 "environment '%s' is archived and cannot be updated", req->params[0]);
		return DB_OK;
	}
	if (fields_from_row(&c->rows, &f)) {
		verr_set(&c->err, 500, NULL, "internal error");
		return DB_OK;
	}
	if (env_validate_update(req->json, c->w->caps, &f, &changed, &c->err) || !changed)
		goto out;
	if (env_text_make(&f, &t)) {
		verr_set(&c->err, 500, NULL, "internal error");
		goto out;
	}
	clock_now(now_db, NULL);
	st = envdb_update(db, &(struct env_row_in){ .id = req->params[0],
						    .workspace_id = req->auth.workspace_id,
						    .name = f.name,
						    .description = t.description,
						    .metadata = t.metadata,
						    .type = config_type(&f),
						    .scope = f.scope,
						    .config = t.config,
						    .now = now_db });
	if (!st) {
		db_rows_free(&c->rows);
		st = envdb_get(db, req->params[0], req->auth.workspace_id, req->auth.account_id, ENVDB_NO_LOCK,
			       &c->rows);
	}
out:
	env_text_free(&t);
	env_fields_release(&f);
	return st;
}

void env_update(struct worker *w, struct request *req, struct response *resp)
{
	struct update_ctx c = { .w = w, .req = req };
	enum db_status st;

	if (check_id(req, resp))
		return;
	st = db_tx(w->db, update_tx, &c);
	if (st)
		handle_db_error(w, req, resp, st);
	else if (c.err.status)
		resp_error(resp, req, c.err.status, c.err.code, "%s", c.err.msg);
	else
		respond_row(w, req, resp, &c.rows);
	db_rows_free(&c.rows);
}

struct archive_ctx {
	struct request *req;
	struct db_rows rows; /* the row after archiving */
};

/* Lock the row first, then take the time: a session that held the environment's shared lock
 * has committed by then, so archived_at is later than every session created before it. */
static enum db_status archive_tx(struct db *db, void *arg)
{
	struct archive_ctx *c = arg;
	struct auth *a = &c->req->auth;
	const char *id = c->req->params[0];
	char now_db[CLOCK_DB_LEN];
	unsigned long long n = 0;
	enum db_status st;

	db_rows_free(&c->rows);
	st = envdb_get(db, id, a->workspace_id, a->account_id, ENVDB_LOCK_UPDATE, &c->rows);
	if (st || !c->rows.nrows || db_cell(&c->rows, 0, ENV_C_ARCHIVED))
		return st; /* archiving twice returns the row unchanged */
	clock_now(now_db, NULL);
	st = envdb_archive(db, id, a->workspace_id, a->account_id, now_db, &n);
	if (!st) {
		db_rows_free(&c->rows);
		st = envdb_get(db, id, a->workspace_id, a->account_id, ENVDB_NO_LOCK, &c->rows);
	}
	return st;
}

void env_archive(struct worker *w, struct request *req, struct response *resp)
{
	struct archive_ctx c = { .req = req };
	enum db_status st;

	if (check_id(req, resp))
		return;
	if (req->json && json_object_size(req->json)) {
		const char *k = json_object_iter_key(json_object_iter(req->json));
		resp_error(resp, req, 400, NULL, "unknown field '%s': archive takes no fields", k);
		return;
	}
	st = db_tx(w->db, archive_tx, &c);
	if (st)
		handle_db_error(w, req, resp, st);
	else
		respond_row(w, req, resp, &c.rows);
	db_rows_free(&c.rows);
}

void env_delete(struct worker *w, struct request *req, struct response *resp)
{
	unsigned long long n = 0;
	long long sessions = 0;
	enum db_status st;
	int exists = 0;

	if (check_id(req, resp))
		return;
	st = envdb_delete(w->db, req->params[0], req->auth.workspace_id, req->auth.account_id,
			  &n);
	if (!st && !n)
		st = envdb_references(w->db, req->params[0], req->auth.workspace_id,
				      req->auth.account_id, &exists, &sessions);
	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	if (n) {
		resp_json(resp, 200, json_pack("{s:s, s:s}", "id", req->params[0], "type",
					       "environment_deleted"));
	} else if (!exists) {
		resp_error(resp, req, 404, ENV_NOT_FOUND_CODE, "environment '%s' not found", req->params[0]);
	} else {
		resp_error(resp, req, 409, NULL,
			   "environment '%s' is referenced by %lld session%s; delete %s first",
			   req->params[0], sessions, sessions == 1 ? "" : "s",
			   sessions == 1 ? "it" : "them");
	}
}

/* Parse the list query: limit, include_archived, page. 0 or -1 with RESP filled. */
static int list_params(struct request *req, struct response *resp, long long *limit,
		       int *include_archived, const char **page)
{
	const char *l = req_query(req, "limit"), *ia = req_query(req, "include_archived");
	char *end;

	*limit = ENV_LIST_DEFAULT_LIMIT;
	if (l) {
		errno = 0;
		*limit = strtoll(l, &end, 10);
		if (!*l || *end || errno || *limit < 1 || *limit > ENV_LIST_MAX_LIMIT) {
			resp_error(resp, req, 400, NULL,
				   "'limit' must be an integer from 1 to %d", ENV_LIST_MAX_LIMIT);
			return -1;
		}
	}
	*include_archived = 0;
	if (ia && strcmp(ia, "false")) {
		if (strcmp(ia, "true")) {
			resp_error(resp, req, 400, NULL, "'include_archived' must be true or false");
			return -1;
		}
		*include_archived = 1;
	}
	*page = req_query(req, "page");
	if (*page && !**page)
		*page = NULL;
	return 0;
}

void env_list(struct worker *w, struct request *req, struct response *resp)
{
	char created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX], next[CURSOR_MAX];
	const char *page, *filter;
	struct db_rows rows = { 0 };
	long long limit;
	int include_archived;
	enum db_status st;
	json_t *data, *body;

	if (list_params(req, resp, &limit, &include_archived, &page))
		return;
	if (worker_cursor_key(w, req, resp))
		return;
	filter = include_archived ? "a1" : "a0";
	if (page) {
		enum cursor_status cs = cursor_parse(w->cursor_key, sizeof(w->cursor_key),
						     ENV_CURSOR_KIND, filter, page, created, id);
		if (cs == CURSOR_OTHER_FILTER) {
			resp_error(resp, req, 400, NULL,
				   "'page' cursor belongs to a list with another include_archived");
			return;
		}
		if (cs) {
			resp_error(resp, req, 400, NULL, "'page' is not a valid cursor");
			return;
		}
	}
	/* one row more than asked tells whether another page exists */
	st = envdb_list(w->db, req->auth.workspace_id, req->auth.account_id, include_archived,
			page ? created : NULL, page ? id : NULL, limit + 1, &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	data = json_array();
	for (unsigned r = 0; r < rows.nrows && r < (unsigned long long)limit; r++) {
		json_t *obj = env_object(&rows, r);
		if (!obj) {
			log_error("environment %s: stored JSON does not parse",
				  db_cell(&rows, r, ENV_C_ID));
			continue;
		}
		json_array_append_new(data, obj);
	}
	body = json_pack("{s:o, s:n}", "data", data, "next_page");
	if (rows.nrows > (unsigned long long)limit) {
		unsigned last = (unsigned)limit - 1;
		if (!cursor_make(w->cursor_key, sizeof(w->cursor_key), ENV_CURSOR_KIND, filter,
				 db_cell(&rows, last, ENV_C_CREATED_DB), db_cell(&rows, last, ENV_C_ID),
				 next))
			json_object_set_new(body, "next_page", json_string(next));
	}
	db_rows_free(&rows);
	resp_json(resp, 200, body);
}
