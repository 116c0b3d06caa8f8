/* /v1/environments (docs/api.md §3): create and update, and the resource table's entry (retrieve,
 * list, archive and delete are handlers/resource.c's). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/environments.h"
#include "cursor.h"
#include "env_validate.h"
#include "handlers.h"
#include "resource.h"

#define ENV_ID_PREFIX "env_"
#define ENV_CURSOR_KIND "env"
#define ENV_NOT_FOUND_CODE                                                                         \
	"environment_not_found" /* the SDK maps it to BetaEnvironmentNotFoundError */

/* Environment objects are written as text straight from the row, not built as Jansson values
 * and dumped (parse, pack, dump and free dominated a GET: README, Performance). The output is
 * byte for byte what json_dumps(JSON_COMPACT) makes of the packed object:
 *  - keys in the order the object was packed in, "scope" last and only when set;
 *  - strings escaped as Jansson escapes them (text_put_str);
 *  - metadata and config spliced as stored: envdb_insert/envdb_update are their only writers
 *    and store json_dumps(JSON_COMPACT) output, which a load and a compact dump reproduce
 *    exactly, and the columns' CHECK (json_valid(...)) keeps anything else out. */
/* An environment object's members as text: NUL-terminated, metadata and config serialised
 * JSON; NULL description/archived_at are null, a NULL scope is left out. */
struct env_obj_text {
	const char *id, *name, *description, *metadata, *config, *created, *updated, *archived,
		*scope;
};

/* Append the API object O. */
static void env_put_fields(struct strbuf *b, const struct env_obj_text *o)
{
	text_put_member(b, "{\"id\":", o->id);
	text_put_member(b, ",\"type\":\"environment\",\"name\":", o->name);
	text_put_member(b, ",\"description\":", o->description);
	strbuf_addstr(b, ",\"metadata\":");
	strbuf_addstr(b, o->metadata);
	strbuf_addstr(b, ",\"config\":");
	strbuf_addstr(b, o->config);
	text_put_member(b, ",\"created_at\":", o->created);
	text_put_member(b, ",\"updated_at\":", o->updated);
	text_put_member(b, ",\"archived_at\":", o->archived);
	if (o->scope)
		text_put_member(b, ",\"scope\":", o->scope);
	TEXT_PUT_LIT(b, "}");
}

/* Append the API object of row R of an environment SELECT. */
static void env_put_object(struct strbuf *b, const struct db_rows *rows, unsigned r)
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

/* Respond with the object of row 0, or 404 when there is no row. */
static void respond_row(struct worker *w, struct request *req, struct response *resp,
			const struct db_rows *rows)
{
	resource_respond(&RES_ENVIRONMENT, w, req, resp, rows, req->params[0]);
}

static int check_id(struct request *req, struct response *resp)
{
	return resource_check(&RES_ENVIRONMENT, req, resp, req->params[0]);
}

/* Serialised forms of the fields for the row writers. Strings are owned (env_text_free). */
struct env_text {
	char *metadata, *config, *description;
};

/* F as environment ID's row holds it, into T. DB_OK, or DB_NOMEM (recorded on DB). */
static enum db_status env_text_make(struct db *db, const char *id, const struct env_fields *f,
				    struct env_text *t)
{
	enum db_status st =
		db_json_dump(db, f->metadata, "environment", id, "metadata", &t->metadata);

	if (!st)
		st = db_json_dump(db, f->config, "environment", id, "config", &t->config);
	if (!st && json_is_string(f->description)) {
		t->description = strdup(json_string_value(f->description));
		if (!t->description)
			st = db_fail(db, DB_NOMEM, "environment %s: copying the description", id);
	}
	return st;
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

/* The row writers' input for environment ID of REQ's key: F's fields, T their text. */
static const struct env_row_in *env_row(struct env_row_in *in, const char *id,
					const struct request *req, const struct env_fields *f,
					const struct env_text *t, const char *now)
{
	*in = (struct env_row_in){ .id = id,
				   .workspace_id = req->principal->workspace_id,
				   .account_id = req->principal->account_id,
				   .name = f->name,
				   .description = t->description,
				   .metadata = t->metadata,
				   .type = config_type(f),
				   .scope = f->scope,
				   .config = t->config,
				   .now = now };
	return in;
}

/* Respond 200 with the environment ID just written: the row holds exactly what was validated
 * (F, stored as the text T), so the answer is built from that rather than read back, and from
 * the text just stored rather than serialising metadata and config a second time. */
static void respond_written(struct request *req, struct response *resp, const char *id,
			    const struct env_fields *f, const struct env_text *t,
			    const char *created, const char *updated)
{
	struct strbuf b = STRBUF_INIT;

	env_put_fields(&b, &(struct env_obj_text){ .id = id,
						   .name = f->name,
						   .description = t->description,
						   .metadata = t->metadata,
						   .config = t->config,
						   .created = created,
						   .updated = updated,
						   .scope = f->scope });
	text_respond(resp, req, 200, &b);
}

void env_create(struct worker *w, struct request *req, struct response *resp)
{
	struct env_row_in in;
	struct env_fields f = { 0 };
	struct env_text t = { 0 };
	struct verr err = { 0 };
	char id[RESOURCE_ID_MAX], now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	enum db_status st;

	if (env_validate_create(req->json, w->caps, &f, &err)) {
		respond_verr(req, resp, &err);
		return;
	}
	if (resource_new_id(req, resp, ENV_ID_PREFIX, id))
		goto out;
	clock_now(now_db, now_api);
	st = env_text_make(w->db, id, &f, &t);
	if (!st)
		st = envdb_insert(w->db, env_row(&in, id, req, &f, &t, now_db));
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	respond_written(req, resp, id, &f, &t, now_api, now_api);
out:
	env_text_free(&t);
	env_fields_release(&f);
}

/* Load the stored fields of row 0 (environment ID) into F (owned). DB_OK, or DB_CORRUPT (stored
 * JSON that does not parse) / DB_NOMEM recorded on DB, with F empty. */
static enum db_status fields_from_row(struct db *db, const char *id, const struct db_rows *rows,
				      struct env_fields *f)
{
	const char *desc = db_cell(rows, 0, ENV_C_DESCRIPTION);
	const char *scope = db_cell(rows, 0, ENV_C_SCOPE);
	enum db_status st;

	memset(f, 0, sizeof(*f));
	st = db_json_load_object(db, db_cell(rows, 0, ENV_C_METADATA), "environment", id,
				 "metadata", &f->metadata);
	if (!st)
		st = db_json_load(db, db_cell(rows, 0, ENV_C_CONFIG), "environment", id, "config",
				  &f->config);
	if (st) {
		env_fields_release(f);
		return st;
	}
	f->name = strdup(db_cell(rows, 0, ENV_C_NAME));
	f->description = desc ? json_string(desc) : json_null();
	f->scope = scope ? strdup(scope) : NULL;
	if (!f->name || !f->description || (scope && !f->scope)) {
		env_fields_release(f);
		return db_fail(db, DB_NOMEM, "environment %s: out of memory", id);
	}
	return DB_OK;
}

/* An update reads the row and writes it back only if it is still at the revision read: two
 * statements in autocommit, no transaction (which cost START TRANSACTION, a locking read and
 * COMMIT: four round trips). A row that changed in between is read again. */
#define ENV_UPDATE_ATTEMPTS 5

/* One attempt of env_update: read, validate against what was read, compare-and-set. 1 when RESP
 * was filled (answered), 0 when the row changed meanwhile (try again). */
static int update_once(struct worker *w, struct request *req, struct response *resp)
{
	struct env_row_in in;
	struct env_fields f = { 0 };
	struct env_text t = { 0 };
	struct verr err = { 0 };
	struct db_rows rows = { 0 };
	char now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	unsigned long long n = 0;
	enum db_status st;
	int changed = 0, answered = 1;

	st = resource_get(&RES_ENVIRONMENT, w->db, req, req->params[0], 0, &rows);
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
	st = fields_from_row(w->db, req->params[0], &rows, &f);
	if (st) {
		handle_db_error(w, req, resp, st);
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
	clock_now(now_db, now_api);
	st = env_text_make(w->db, req->params[0], &f, &t);
	if (!st)
		st = envdb_update(w->db, env_row(&in, req->params[0], req, &f, &t, now_db),
				  strtoll(db_cell(&rows, 0, ENV_C_REVISION), NULL, 10), &n);
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	if (!n) {
		answered = 0;
		goto out;
	}
	respond_written(req, resp, req->params[0], &f, &t, db_cell(&rows, 0, ENV_C_CREATED),
			now_api);
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
			db_fail(w->db, DB_RETRY,
				"environment %s: changed by %d other writes meanwhile",
				req->params[0], ENV_UPDATE_ATTEMPTS));
}

/* ---- the resource table's entry ---- */

static int env_put_row(struct strbuf *b, const struct db_rows *rows, unsigned r)
{
	env_put_object(b, rows, r);
	return 0;
}

static enum db_status env_get(struct db *db, const struct db_key *k, int for_update,
			      struct db_rows *rows)
{
	return envdb_get(db, k->id, k->workspace_id, k->account_id,
			 for_update ? ENVDB_LOCK_UPDATE : ENVDB_NO_LOCK, rows);
}

/* One statement deletes only while no session references the environment; when it deleted
 * nothing, a second tells a missing environment (404) from a referenced one (409). */
static enum db_status env_remove(struct db *db, const struct db_key *k, int *found,
				 struct verr *err)
{
	unsigned long long n = 0;
	long long sessions = 0;
	enum db_status st;
	int exists = 0;

	st = envdb_delete(db, k->id, k->workspace_id, k->account_id, &n);
	if (!st && !n)
		st = envdb_references(db, k->id, k->workspace_id, k->account_id, &exists,
				      &sessions);
	*found = n || exists;
	if (!st && !n && exists)
		verr_set(err, 409, NULL,
			 "environment '%s' is referenced by %lld session%s; delete %s first", k->id,
			 sessions, sessions == 1 ? "" : "s", sessions == 1 ? "it" : "them");
	return st;
}

const struct resource RES_ENVIRONMENT = {
	.kind = "environment",
	.id_prefix = ENV_ID_PREFIX,
	.not_found_code = ENV_NOT_FOUND_CODE,
	.visibility = RES_VIS_ACCOUNT,
	.flags = RES_LIST_ARCHIVED,
	.cursor_kind = ENV_CURSOR_KIND,
	.filters_text = "include_archived",
	.cols = { .id = ENV_C_ID, .created_db = ENV_C_CREATED_DB, .archived = ENV_C_ARCHIVED },
	.put = env_put_row,
	.db = { .get = env_get,
		.list = envdb_list,
		.archive = envdb_archive,
		.remove = env_remove },
};
