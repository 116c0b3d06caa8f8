/* /v1/environments: create, retrieve, update, list, archive, delete (docs/api.md §3). */
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
#define ENV_LIST_DEFAULT_LIMIT 100
#define ENV_LIST_MAX_LIMIT 1000
#define ENV_CURSOR_KIND "env"
#define ENV_BUF_MIN 1024 /* first allocation of a response body built as text */
#define ENV_NOT_FOUND_CODE "environment_not_found" /* the SDK maps it to BetaEnvironmentNotFoundError */

/* Environment objects are written as text straight from the row, not built as Jansson values
 * and dumped (parse, pack, dump and free dominated a GET: README, Performance). The output is
 * byte for byte what json_dumps(JSON_COMPACT) makes of the packed object:
 *  - keys in the order the object was packed in, "scope" last and only when set;
 *  - strings escaped as Jansson escapes them (env_put_str);
 *  - metadata and config spliced as stored: envdb_insert/envdb_update are their only writers
 *    and store json_dumps(JSON_COMPACT) output, which a load and a compact dump reproduce
 *    exactly, and the columns' CHECK (json_valid(...)) keeps anything else out. */
struct env_buf {
	char *p; /* owned; NUL-terminated */
	size_t len, cap;
	int oom;
};

/* Make room for N more bytes (and the NUL). 0, or -1 (and b->oom) when out of memory. */
static int env_reserve(struct env_buf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->oom)
		return -1;
	if (b->len + n + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : ENV_BUF_MIN;
	while (cap < b->len + n + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static void env_put(struct env_buf *b, const char *s, size_t n)
{
	if (env_reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

#define ENV_PUT_LIT(b, lit) env_put((b), (lit), sizeof(lit) - 1)

/* S[0..n) as a JSON string, escaped exactly as Jansson's dump does with no flags: '"' and
 * '\\', the five short escapes, other control characters as \u00XX (upper-case hex); UTF-8
 * passes through (the database's utf8mb4 columns hold valid UTF-8). */
static void env_put_str(struct env_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";

	if (env_reserve(b, 2 + 6 * n))
		return;
	b->p[b->len++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char *o = b->p + b->len;
		if (c >= 0x20 && c != '"' && c != '\\') {
			*o = (char)c;
			b->len++;
			continue;
		}
		o[0] = '\\';
		switch (c) {
		case '"': o[1] = '"'; break;
		case '\\': o[1] = '\\'; break;
		case '\b': o[1] = 'b'; break;
		case '\f': o[1] = 'f'; break;
		case '\n': o[1] = 'n'; break;
		case '\r': o[1] = 'r'; break;
		case '\t': o[1] = 't'; break;
		default:
			memcpy(o + 1, "u00", 3);
			o[4] = hex[c >> 4];
			o[5] = hex[c & 15];
			b->len += 4;
		}
		b->len += 2;
	}
	b->p[b->len++] = '"';
	b->p[b->len] = '\0';
}

/* An environment object's members as text: NUL-terminated, metadata and config serialised
 * JSON; NULL description/archived_at are null, a NULL scope is left out. */
struct env_obj_text {
	const char *id, *name, *description, *metadata, *config, *created, *updated, *archived,
		*scope;
};

static void env_put_opt_str(struct env_buf *b, const char *s)
{
	if (s)
		env_put_str(b, s, strlen(s));
	else
		ENV_PUT_LIT(b, "null");
}

/* Append the API object O. */
static void env_put_fields(struct env_buf *b, const struct env_obj_text *o)
{
	ENV_PUT_LIT(b, "{\"id\":");
	env_put_opt_str(b, o->id);
	ENV_PUT_LIT(b, ",\"type\":\"environment\",\"name\":");
	env_put_opt_str(b, o->name);
	ENV_PUT_LIT(b, ",\"description\":");
	env_put_opt_str(b, o->description);
	ENV_PUT_LIT(b, ",\"metadata\":");
	env_put(b, o->metadata, strlen(o->metadata));
	ENV_PUT_LIT(b, ",\"config\":");
	env_put(b, o->config, strlen(o->config));
	ENV_PUT_LIT(b, ",\"created_at\":");
	env_put_opt_str(b, o->created);
	ENV_PUT_LIT(b, ",\"updated_at\":");
	env_put_opt_str(b, o->updated);
	ENV_PUT_LIT(b, ",\"archived_at\":");
	env_put_opt_str(b, o->archived);
	if (o->scope) {
		ENV_PUT_LIT(b, ",\"scope\":");
		env_put_opt_str(b, o->scope);
	}
	ENV_PUT_LIT(b, "}");
}

/* Append the API object of row R of an environment SELECT. */
static void env_put_object(struct env_buf *b, const struct db_rows *rows, unsigned r)
{
	env_put_fields(b, &(struct env_obj_text){
				  .id = db_cell(rows, r, ENV_C_ID),
				  .name = db_cell(rows, r, ENV_C_NAME),
				  .description = db_cell(rows, r, ENV_C_DESCRIPTION),
				  .metadata = db_cell(rows, r, ENV_C_METADATA),
				  .config = db_cell(rows, r, ENV_C_CONFIG),
				  .created = db_cell(rows, r, ENV_C_CREATED),
				  .updated = db_cell(rows, r, ENV_C_UPDATED),
				  .archived = db_cell(rows, r, ENV_C_ARCHIVED),
				  .scope = db_cell(rows, r, ENV_C_SCOPE),
			  });
}

/* Respond STATUS with B's text as the body (B's buffer is handed over), or 500 when building
 * it ran out of memory. */
static void env_respond_buf(struct response *resp, const struct request *req, int status,
			    struct env_buf *b)
{
	if (b->oom || !b->p) {
		free(b->p);
		respond_internal(req, resp, "out of memory building the body");
		return;
	}
	free(resp->body);
	resp->status = status;
	resp->body = b->p;
	resp->body_len = b->len;
	b->p = NULL;
}

/* Respond with the object of row 0, or 404 when there is no row. */
static void respond_row(struct worker *w, struct request *req, struct response *resp,
			const struct db_rows *rows)
{
	struct env_buf b = { 0 };

	(void)w;
	if (!rows->nrows) {
		resp_error(resp, req, 404, ENV_NOT_FOUND_CODE, "environment '%s' not found", req->params[0]);
		return;
	}
	env_put_object(&b, rows, 0);
	env_respond_buf(resp, req, 200, &b);
}

static int check_id(struct request *req, struct response *resp)
{
	return resource_check_id(req, resp, ENV_ID_PREFIX, "environment", ENV_NOT_FOUND_CODE);
}

/* Serialised forms of the fields for the row writers. Strings are owned (env_text_free). */
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
	struct env_buf b = { 0 };
	char id[RESOURCE_ID_MAX], now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	enum db_status st;

	if (env_validate_create(req->json, w->caps, &f, &err)) {
		resp_error(resp, req, err.status, err.code, "%s", err.msg);
		return;
	}
	if (env_text_make(&f, &t) || random_id(id, sizeof(id), ENV_ID_PREFIX, ID_RANDOM_LEN)) {
		respond_internal(req, resp, "out of memory or no random id");
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
	/* the row holds exactly what was validated: answer from it without reading it back, and
	 * from the text just stored rather than serialising metadata and config a second time */
	env_put_fields(&b, &(struct env_obj_text){ .id = id,
						   .name = f.name,
						   .description = t.description,
						   .metadata = t.metadata,
						   .config = t.config,
						   .created = now_api,
						   .updated = now_api,
						   .scope = f.scope });
	env_respond_buf(resp, req, 200, &b);
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

/* An update reads the row and writes it back only if it is still at the revision read: two
 * statements in autocommit, no transaction (which cost START TRANSACTION, a locking read and
 * COMMIT: four round trips). A row that changed in between is read again. */
#define ENV_UPDATE_ATTEMPTS 5

/* One attempt of env_update: read, validate against what was read, compare-and-set. 1 when RESP
 * was filled (answered), 0 when the row changed meanwhile (try again). */
static int update_once(struct worker *w, struct request *req, struct response *resp)
{
	struct env_fields f = { 0 };
	struct env_text t = { 0 };
	struct verr err = { 0 };
	struct env_buf b = { 0 };
	struct db_rows rows = { 0 };
	char now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	unsigned long long n = 0;
	enum db_status st;
	int changed = 0, answered = 1;

	st = envdb_get(w->db, req->params[0], req->auth.workspace_id, req->auth.account_id,
		       ENVDB_NO_LOCK, &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		return 1;
	}
	if (!rows.nrows || db_cell(&rows, 0, ENV_C_ARCHIVED)) {
		if (rows.nrows)
			resp_error(resp, req, 400, "environment_archived",
				   "environment '%s' is archived and cannot be updated",
				   req->params[0]);
		else
			respond_row(w, req, resp, &rows);
		goto out;
	}
	if (fields_from_row(&rows, &f)) {
		handle_db_error(w, req, resp,
				db_fail(w->db, DB_CORRUPT,
					"environment %s: stored JSON does not parse",
					req->params[0]));
		goto out;
	}
	if (env_validate_update(req->json, w->caps, &f, &changed, &err)) {
		resp_error(resp, req, err.status, err.code, "%s", err.msg);
		goto out;
	}
	if (!changed) {
		respond_row(w, req, resp, &rows);
		goto out;
	}
	if (env_text_make(&f, &t)) {
		respond_internal(req, resp, "out of memory serialising the fields");
		goto out;
	}
	clock_now(now_db, now_api);
	st = envdb_update(w->db,
			  &(struct env_row_in){ .id = req->params[0],
						.workspace_id = req->auth.workspace_id,
						.name = f.name,
						.description = t.description,
						.metadata = t.metadata,
						.type = config_type(&f),
						.scope = f.scope,
						.config = t.config,
						.now = now_db },
			  strtoll(db_cell(&rows, 0, ENV_C_REVISION), NULL, 10), &n);
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	if (!n) {
		answered = 0;
		goto out;
	}
	/* the row holds what was validated: answer from it without reading it back */
	env_put_fields(&b, &(struct env_obj_text){ .id = req->params[0],
						   .name = f.name,
						   .description = t.description,
						   .metadata = t.metadata,
						   .config = t.config,
						   .created = db_cell(&rows, 0, ENV_C_CREATED),
						   .updated = now_api,
						   .scope = f.scope });
	env_respond_buf(resp, req, 200, &b);
out:
	env_text_free(&t);
	env_fields_release(&f);
	db_rows_free(&rows);
	return answered;
}

void env_update(struct worker *w, struct request *req, struct response *resp)
{
	if (check_id(req, resp))
		return;
	for (int attempt = 0; attempt < ENV_UPDATE_ATTEMPTS; attempt++)
		if (update_once(w, req, resp))
			return;
	handle_db_error(w, req, resp,
			db_fail(w->db, DB_RETRY, "environment %s: changed by %d other writes meanwhile",
				req->params[0], ENV_UPDATE_ATTEMPTS));
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
	const char *ia = req_query(req, "include_archived");

	if (query_limit(req, resp, ENV_LIST_MAX_LIMIT, ENV_LIST_DEFAULT_LIMIT, limit))
		return -1;
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
	struct env_buf b = { 0 };
	long long limit;
	int include_archived;
	enum db_status st;
	unsigned shown;

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
	/* {"data":[...],"next_page":...}: the order json_pack gave these keys */
	shown = list_page_rows(&rows, limit);
	ENV_PUT_LIT(&b, "{\"data\":[");
	for (unsigned r = 0; r < shown; r++) {
		if (r)
			ENV_PUT_LIT(&b, ",");
		env_put_object(&b, &rows, r);
	}
	ENV_PUT_LIT(&b, "],\"next_page\":");
	if (rows.nrows > shown &&
	    !cursor_make(w->cursor_key, sizeof(w->cursor_key), ENV_CURSOR_KIND, filter,
			 db_cell(&rows, shown - 1, ENV_C_CREATED_DB),
			 db_cell(&rows, shown - 1, ENV_C_ID), next))
		env_put_str(&b, next, strlen(next));
	else
		ENV_PUT_LIT(&b, "null");
	ENV_PUT_LIT(&b, "}");
	db_rows_free(&rows);
	env_respond_buf(resp, req, 200, &b);
}
