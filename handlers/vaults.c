/* /v1/vaults and /v1/vaults/{id}/credentials (docs/api.md §8, docs/vaults.md; SDK
 * resources/beta/vaults): the creates and updates, and the two resource table entries (retrieve,
 * list, archive and delete are handlers/resource.c's). A credential's secret is sealed
 * (common/vault_crypto.h) before it reaches the database and no route ever returns it: the
 * credential SELECTs do not even read it. */
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/vaults.h"
#include "agent_validate.h"
#include "env_validate.h"
#include "handlers.h"
#include "resource.h"

#define VAULT_CURSOR_KIND "vlt"
#define CRED_CURSOR_KIND "vcrd"
#define VAULT_NAME_MAX 255	 /* characters; SDK: "1-255 characters" */
#define VAULT_CREDENTIALS_MAX 20 /* live credentials of one vault */
#define VAULT_TOKEN_MAX 8192	 /* bytes of a static_bearer token */
#define VAULT_TOKEN_FIELD "auth.token"
#define VAULT_URL_FIELD "auth.mcp_server_url"

/* ---- objects ---- */

/* The API object for row R of a vault SELECT (row_render). New reference, or NULL when its stored
 * metadata does not parse (DB_CORRUPT recorded in DB). */
static json_t *vault_object(struct db *db, const struct db_rows *rows, unsigned r)
{
	const char *archived = db_cell(rows, r, VAULT_C_ARCHIVED);
	json_t *meta = NULL;

	if (db_json_load_object(db, db_cell(rows, r, VAULT_C_METADATA), "vault",
				db_cell(rows, r, VAULT_C_ID), "metadata", &meta))
		return NULL;
	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:s, s:o}", "id", db_cell(rows, r, VAULT_C_ID),
			 "type", "vault", "display_name", db_cell(rows, r, VAULT_C_NAME),
			 "metadata", meta, "created_at", db_cell(rows, r, VAULT_C_CREATED),
			 "updated_at", db_cell(rows, r, VAULT_C_UPDATED), "archived_at",
			 archived ? json_string(archived) : json_null());
}

/* The API object for row R of a credential SELECT: what the SDK's
 * BetaManagedAgentsStaticBearerAuthResponse shows of the auth, never the token (the row does
 * not hold it). New reference or NULL on corrupt JSON. */
static json_t *cred_object(struct db *db, const struct db_rows *rows, unsigned r)
{
	const char *archived = db_cell(rows, r, CRED_C_ARCHIVED);
	const char *name = db_cell(rows, r, CRED_C_NAME);
	json_t *meta = NULL;

	if (db_json_load_object(db, db_cell(rows, r, CRED_C_METADATA), "credential",
				db_cell(rows, r, CRED_C_ID), "metadata", &meta))
		return NULL;
	return json_pack("{s:s, s:s, s:s, s:o, s:{s:s, s:s}, s:o, s:s, s:s, s:o}", "id",
			 db_cell(rows, r, CRED_C_ID), "type", "vault_credential", "vault_id",
			 db_cell(rows, r, CRED_C_VAULT_ID), "display_name",
			 name ? json_string(name) : json_null(), "auth", "type",
			 db_cell(rows, r, CRED_C_AUTH_TYPE), "mcp_server_url",
			 db_cell(rows, r, CRED_C_URL), "metadata", meta, "created_at",
			 db_cell(rows, r, CRED_C_CREATED), "updated_at",
			 db_cell(rows, r, CRED_C_UPDATED), "archived_at",
			 archived ? json_string(archived) : json_null());
}

/* ---- fields ---- */

/* A display name V at FIELD: a string of 1-VAULT_NAME_MAX characters, or (NULLABLE) absent,
 * null or "", which *OUT gets as NULL. 0, or -1 with ERR. */
static int name_parse(json_t *v, const char *field, int nullable, const char **out,
		      struct verr *err)
{
	const char *s = json_string_value(v);

	*out = NULL;
	if (nullable && (!v || json_is_null(v) || (s && !*s)))
		return 0;
	if (!s || !*s || utf8_chars(s) > VAULT_NAME_MAX)
		return verr_set(err, 400, NULL, "'%s' must be a string of 1-%d characters%s", field,
				VAULT_NAME_MAX, nullable ? " or null" : "");
	*out = s;
	return 0;
}

/* 0 when AUTH's type is static_bearer; else -1 with ERR naming the type (any other auth
 * type is refused, nothing stored). */
static int auth_type_check(json_t *auth, struct verr *err)
{
	json_t *type = json_object_get(auth, "type");
	char echo[VERR_ECHO_BUF];

	if (!type)
		return verr_set(err, 400, NULL, "'auth.type' is required");
	if (!json_is_string(type))
		return verr_set(err, 400, NULL, "'auth.type' must be a string");
	if (strcmp(json_string_value(type), VAULT_AUTH_STATIC_BEARER))
		return verr_set(err, 400, NULL,
				"'auth.type' '%s' is not supported by this server: it stores "
				"'" VAULT_AUTH_STATIC_BEARER "' credentials only",
				verr_echo(echo, json_string_value(type), VERR_ECHO_CHARS));
	return 0;
}

/* The token V: 1-VAULT_TOKEN_MAX printable ASCII bytes without spaces (it goes into an
 * Authorization header). Its value is never echoed. 0, or -1 with ERR. */
static int token_parse(json_t *v, const char **out, size_t *len, struct verr *err)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);

	if (!s || !n || n > VAULT_TOKEN_MAX)
		return verr_set(err, 400, NULL,
				"'" VAULT_TOKEN_FIELD "' must be a string of 1-%d bytes",
				VAULT_TOKEN_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return verr_set(
				err, 400, NULL,
				"'" VAULT_TOKEN_FIELD "' must be printable ASCII without "
				"spaces or control characters (it is sent as a bearer token)");
	*out = s;
	*len = n;
	return 0;
}

/* ---- vaults ---- */

static int vault_check(struct request *req, struct response *resp)
{
	return resource_check(&RES_VAULT, req, resp, req->params[0]);
}

struct vault_create {
	struct request *req;
	const char *name;
	char *meta_text;
	char id[RESOURCE_ID_MAX];
	struct db_rows rows;
};

static enum db_status vault_create_tx(struct db *db, void *arg)
{
	struct vault_create *c = arg;
	char now[CLOCK_DB_LEN];
	enum db_status st;

	db_rows_free(&c->rows);
	memset(&c->rows, 0, sizeof(c->rows));
	clock_now(now, NULL);
	st = vaultdb_insert(db,
			    &(struct vault_row_in){ .id = c->id,
						    .workspace_id = c->req->principal->workspace_id,
						    .display_name = c->name,
						    .metadata = c->meta_text,
						    .now = now });
	if (!st)
		st = resource_get(&RES_VAULT, db, c->req, c->id, 0, &c->rows);
	return st;
}

void vault_create(struct worker *w, struct request *req, struct response *resp)
{
	static const char *const fields[] = { "display_name", "metadata", NULL };
	struct vault_create c = { .req = req };
	struct verr err = { 0 };
	json_t *meta = NULL;
	enum db_status st;

	if (verr_check_fields(req->json, "", fields, &err) ||
	    (!json_object_get(req->json, "display_name") &&
	     verr_set(&err, 400, NULL, "'display_name' is required")) ||
	    name_parse(json_object_get(req->json, "display_name"), "display_name", 0, &c.name,
		       &err) ||
	    !(meta = meta_validate(json_object_get(req->json, "metadata"), "metadata", &err))) {
		respond_verr(req, resp, &err);
		return;
	}
	c.meta_text = json_dumps(meta, JSON_COMPACT);
	if (!c.meta_text || random_id(c.id, sizeof(c.id), VAULT_ID_PREFIX, ID_RANDOM_LEN)) {
		respond_internal(req, resp, c.meta_text ? "no random id" : "out of memory");
		goto out;
	}
	st = db_tx(w->db, vault_create_tx, &c);
	if (st)
		handle_db_error(w, req, resp, st);
	else
		resource_respond(&RES_VAULT, w, req, resp, &c.rows, c.id);
out:
	db_rows_free(&c.rows);
	free(c.meta_text);
	json_decref(meta);
}

/* The update's change (resource_change; ARG the body, validated but for metadata): display
 * name and metadata (a per-key patch), written when either changes. */
static enum db_status vault_change(struct db *db, const struct db_key *k,
				   const struct db_rows *rows, void *arg, int *wrote,
				   struct verr *err)
{
	json_t *body = arg;
	const char *name = json_string_value(json_object_get(body, "display_name"));
	char now[CLOCK_DB_LEN];
	struct meta_change m;
	enum db_status st;

	if (!name)
		name = db_cell(rows, 0, VAULT_C_NAME);
	st = meta_change_load(db, db_cell(rows, 0, VAULT_C_METADATA), "vault", k->id,
			      json_object_get(body, "metadata"), &m, err);
	if (st || !m.meta || (!m.changed && !strcmp(name, db_cell(rows, 0, VAULT_C_NAME))))
		goto out; /* refused, or nothing changes */
	clock_now(now, NULL);
	st = vaultdb_update(db, k->id, k->workspace_id, name, m.text, now);
	*wrote = 1;
out:
	meta_change_release(&m);
	return st;
}

void vault_update(struct worker *w, struct request *req, struct response *resp)
{
	static const char *const fields[] = { "display_name", "metadata", NULL };
	json_t *name = json_object_get(req->json, "display_name");
	struct verr err = { 0 };
	const char *unused;

	if (vault_check(req, resp))
		return;
	if (verr_check_fields(req->json, "", fields, &err) ||
	    (name && name_parse(name, "display_name", 0, &unused, &err))) {
		respond_verr(req, resp, &err);
		return;
	}
	resource_update(&RES_VAULT, w, req, resp, vault_change, req->json);
}

/* A vault's delete takes its credentials with it, in one transaction. */
static enum db_status vault_remove_tx(struct db *db, void *arg)
{
	void **a = arg;

	return vaultdb_remove(db, a[0], a[1]);
}

static enum db_status vault_remove(struct db *db, const struct db_key *k, int *found,
				   struct verr *err)
{
	(void)err;
	return db_tx(db, vault_remove_tx, (void *[]){ (void *)k, found });
}

const struct resource RES_VAULT = {
	.kind = "vault",
	.id_prefix = VAULT_ID_PREFIX,
	.visibility = RES_VIS_WORKSPACE,
	.flags = RES_LIST_ARCHIVED,
	.cursor_kind = VAULT_CURSOR_KIND,
	.filters_text = "include_archived",
	.cols = { .id = VAULT_C_ID,
		  .created_db = VAULT_C_CREATED_DB,
		  .archived = VAULT_C_ARCHIVED },
	.render = vault_object,
	.db = { .get = vaultdb_get,
		.list = vaultdb_list,
		.archive = vaultdb_archive,
		.remove = vault_remove },
};

/* ---- credentials ---- */

/* The vault in the path (params[0]) exists in the workspace: its 404 before anything about
 * the credential (the resource's route check). */
static int cred_vault(struct worker *w, struct request *req, struct response *resp)
{
	struct db_rows rows;
	enum db_status st;
	int found;

	if (vault_check(req, resp))
		return -1;
	st = resource_get(&RES_VAULT, w->db, req, req->params[0], 0, &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		return -1;
	}
	found = rows.nrows > 0;
	db_rows_free(&rows);
	if (!found) {
		resp_error(resp, req, 404, NULL, "vault '%s' not found", req->params[0]);
		return -1;
	}
	return 0;
}

/* The key that seals credentials, or NULL with RESP a 500 and a log line naming the key file
 * (docs/vaults.md): never a credential stored without its secret. */
static const struct vault_key *cred_key(struct worker *w, struct request *req,
					struct response *resp)
{
	if (w->vault_key && w->vault_key->loaded)
		return w->vault_key;
	log_error("%s %s: credentials cannot be sealed: %s (%s)", req->method, req->path,
		  w->vault_key ? w->vault_key->error : "no vault key", req->request_id);
	resp_error(resp, req, 500, NULL,
		   "this server cannot store credentials: its vault key is missing or unusable "
		   "(the server's log says why)");
	return NULL;
}

struct cred_create {
	struct request *req;
	const char *name, *url;
	char *meta_text, *sealed;
	char id[RESOURCE_ID_MAX];
	struct db_rows rows;
	struct verr err;
};

/* Parse the create body into C: display_name, metadata and a static_bearer auth. *TOKEN and
 * *LEN: the token (borrowed from BODY). 0, or -1 with c->err. */
static int cred_create_parse(json_t *body, struct cred_create *c, const char **token, size_t *len)
{
	static const char *const fields[] = { "auth", "display_name", "metadata", NULL };
	static const char *const auth_fields[] = { "type", "token", "mcp_server_url", NULL };
	json_t *auth = json_object_get(body, "auth"), *meta;

	if (verr_check_fields(body, "", fields, &c->err))
		return -1;
	if (!auth)
		return verr_set(&c->err, 400, NULL, "'auth' is required");
	if (!json_is_object(auth))
		return verr_set(&c->err, 400, NULL, "'auth' must be an object");
	if (auth_type_check(auth, &c->err) || verr_check_fields(auth, "auth", auth_fields, &c->err))
		return -1;
	if (!json_object_get(auth, "token"))
		return verr_set(&c->err, 400, NULL, "'" VAULT_TOKEN_FIELD "' is required");
	if (token_parse(json_object_get(auth, "token"), token, len, &c->err))
		return -1;
	if (!json_object_get(auth, "mcp_server_url"))
		return verr_set(&c->err, 400, NULL, "'" VAULT_URL_FIELD "' is required");
	if (mcp_url_validate(json_object_get(auth, "mcp_server_url"), VAULT_URL_FIELD, &c->err))
		return -1;
	c->url = json_string_value(json_object_get(auth, "mcp_server_url"));
	if (name_parse(json_object_get(body, "display_name"), "display_name", 1, &c->name, &c->err))
		return -1;
	meta = meta_validate(json_object_get(body, "metadata"), "metadata", &c->err);
	if (!meta)
		return -1;
	c->meta_text = json_dumps(meta, JSON_COMPACT);
	json_decref(meta);
	return c->meta_text ? 0 : verr_set(&c->err, 500, NULL, "out of memory");
}

static enum db_status cred_create_tx(struct db *db, void *arg)
{
	struct cred_create *c = arg;
	const char *ws = c->req->principal->workspace_id, *vault_id = c->req->params[0];
	char now[CLOCK_DB_LEN], same[VAULT_ID_MAX];
	struct db_rows vault;
	long long live;
	enum db_status st;

	db_rows_free(&c->rows);
	memset(&c->rows, 0, sizeof(c->rows));
	memset(&c->err, 0, sizeof(c->err));
	/* the vault row locked: creations in one vault (and its archive, its delete) serialise,
	 * so the count and the URL check below hold when the row is written */
	st = resource_get(&RES_VAULT, db, c->req, vault_id, 1, &vault);
	if (st)
		return st;
	if (!vault.nrows) {
		verr_set(&c->err, 404, NULL, "vault '%s' not found", vault_id);
		goto out;
	}
	if (db_cell(&vault, 0, VAULT_C_ARCHIVED)) {
		verr_set(&c->err, 400, NULL,
			 "vault '%s' is archived: credentials cannot be added to it", vault_id);
		goto out;
	}
	st = creddb_live(db, vault_id, c->url, &live, same);
	if (st)
		goto out;
	if (same[0]) {
		verr_set(&c->err, 409, NULL,
			 "vault '%s' already has a live credential for this mcp_server_url (%s): "
			 "update its token, or archive it first",
			 vault_id, same);
		goto out;
	}
	if (live >= VAULT_CREDENTIALS_MAX) {
		verr_set(&c->err, 409, NULL,
			 "vault '%s' already holds %d live credentials, the most a vault may hold: "
			 "archive or delete one first",
			 vault_id, VAULT_CREDENTIALS_MAX);
		goto out;
	}
	clock_now(now, NULL);
	st = creddb_insert(db, &(struct cred_row_in){ .id = c->id,
						      .vault_id = vault_id,
						      .workspace_id = ws,
						      .display_name = c->name,
						      .metadata = c->meta_text,
						      .auth_type = VAULT_AUTH_STATIC_BEARER,
						      .mcp_server_url = c->url,
						      .secret = c->sealed,
						      .now = now });
	if (!st)
		st = resource_get(&RES_VAULT_CREDENTIAL, db, c->req, c->id, 0, &c->rows);
out:
	db_rows_free(&vault);
	return st;
}

void cred_create(struct worker *w, struct request *req, struct response *resp)
{
	struct cred_create c = { .req = req };
	const struct vault_key *key;
	char err[VAULT_ERROR_MAX];
	const char *token = NULL;
	size_t len = 0;
	enum db_status st;

	/* the vault first: another workspace's answers 404 whatever the body */
	if (cred_vault(w, req, resp))
		return;
	if (cred_create_parse(req->json, &c, &token, &len)) {
		respond_verr(req, resp, &c.err);
		goto out;
	}
	key = cred_key(w, req, resp);
	if (!key)
		goto out;
	if (random_id(c.id, sizeof(c.id), VAULT_CRED_ID_PREFIX, ID_RANDOM_LEN)) {
		respond_internal(req, resp, "no random id");
		goto out;
	}
	if (vault_seal(key, VAULT_CRED_BIND(c.id, c.url), token, len, &c.sealed, err,
		       sizeof(err))) {
		respond_internal(req, resp, err);
		goto out;
	}
	st = db_tx(w->db, cred_create_tx, &c);
	if (!respond_refusal(w, req, resp, st, &c.err))
		resource_respond(&RES_VAULT_CREDENTIAL, w, req, resp, &c.rows, c.id);
out:
	db_rows_free(&c.rows);
	free(c.meta_text);
	free(c.sealed);
}

/* A credential update: its body, the key to seal with, and the new token (borrowed from the
 * body; NULL: the stored one is kept). */
struct cred_update {
	json_t *body;
	const struct vault_key *key;
	const char *token;
	size_t token_len;
};

/* Parse the update body into U: display_name, metadata (checked in the change) and an auth of
 * the credential's type with an optional token; mcp_server_url cannot change. 0, or -1 with
 * ERR. */
static int cred_update_parse(json_t *body, struct cred_update *u, struct verr *err)
{
	static const char *const fields[] = { "auth", "display_name", "metadata", NULL };
	static const char *const auth_fields[] = { "type", "token", NULL };
	json_t *auth = json_object_get(body, "auth"), *token;
	const char *unused;

	if (verr_check_fields(body, "", fields, err))
		return -1;
	if (json_object_get(body, "display_name") &&
	    name_parse(json_object_get(body, "display_name"), "display_name", 1, &unused, err))
		return -1;
	if (!auth || json_is_null(auth))
		return 0;
	if (!json_is_object(auth))
		return verr_set(err, 400, NULL, "'auth' must be an object");
	if (auth_type_check(auth, err))
		return -1;
	if (json_object_get(auth, "mcp_server_url"))
		return verr_set(err, 400, NULL,
				"'" VAULT_URL_FIELD "' cannot be changed: archive the credential "
				"and create another");
	if (verr_check_fields(auth, "auth", auth_fields, err))
		return -1;
	token = json_object_get(auth, "token");
	if (token && !json_is_null(token) && token_parse(token, &u->token, &u->token_len, err))
		return -1;
	return 0;
}

/* The update's change (resource_change): display name, metadata (a per-key patch) and the
 * token, sealed anew for the credential's id and URL; written when any of them is given and
 * differs (a token given is always written: it cannot be compared). */
static enum db_status cred_change(struct db *db, const struct db_key *k, const struct db_rows *rows,
				  void *arg, int *wrote, struct verr *err)
{
	struct cred_update *u = arg;
	json_t *name_v = json_object_get(u->body, "display_name");
	const char *old_name = db_cell(rows, 0, CRED_C_NAME), *name = old_name;
	char now[CLOCK_DB_LEN], *sealed = NULL, why[VAULT_ERROR_MAX];
	struct meta_change m;
	enum db_status st;

	if (name_v)
		name_parse(name_v, "display_name", 1, &name, err); /* checked before: cannot fail */
	st = meta_change_load(db, db_cell(rows, 0, CRED_C_METADATA), "vault credential", k->id,
			      json_object_get(u->body, "metadata"), &m, err);
	if (st || !m.meta)
		goto out;
	if (!u->token && !m.changed &&
	    (name == old_name || (name && old_name && !strcmp(name, old_name))))
		goto out; /* nothing changes */
	if (u->token && vault_seal(u->key, VAULT_CRED_BIND(k->id, db_cell(rows, 0, CRED_C_URL)),
				   u->token, u->token_len, &sealed, why, sizeof(why))) {
		st = db_fail(db, DB_NOMEM, "vault credential %s: %s", k->id, why);
		goto out;
	}
	clock_now(now, NULL);
	st = creddb_update(db, k->id, k->workspace_id, name, m.text, sealed, now);
	*wrote = 1;
out:
	free(sealed);
	meta_change_release(&m);
	return st;
}

void cred_update(struct worker *w, struct request *req, struct response *resp)
{
	struct cred_update u = { .body = req->json };
	struct verr err = { 0 };

	if (cred_vault(w, req, resp) ||
	    resource_check(&RES_VAULT_CREDENTIAL, req, resp, req->params[1]))
		return;
	if (cred_update_parse(req->json, &u, &err)) {
		respond_verr(req, resp, &err);
		return;
	}
	if (u.token && !(u.key = cred_key(w, req, resp)))
		return;
	resource_update(&RES_VAULT_CREDENTIAL, w, req, resp, cred_change, &u);
}

static enum db_status cred_remove(struct db *db, const struct db_key *k, int *found,
				  struct verr *err)
{
	(void)err;
	return creddb_remove(db, k, found);
}

/* A cursor belongs to one vault's list. */
static int cred_list_query(struct request *req, struct response *resp, struct resource_list *l)
{
	(void)resp;
	snprintf(l->filter, sizeof(l->filter), "a%d;v%s", l->page.include_archived, req->params[0]);
	return 0;
}

const struct resource RES_VAULT_CREDENTIAL = {
	.kind = "vault_credential",
	.id_prefix = VAULT_CRED_ID_PREFIX,
	.id_param = 1,
	.visibility = RES_VIS_PARENT,
	.flags = RES_LIST_ARCHIVED,
	.cursor_kind = CRED_CURSOR_KIND,
	.filters_text = "include_archived or another vault",
	.cols = { .id = CRED_C_ID, .created_db = CRED_C_CREATED_DB, .archived = CRED_C_ARCHIVED },
	.render = cred_object,
	.route_check = cred_vault,
	.list_query = cred_list_query,
	.db = { .get = creddb_get,
		.list = creddb_list,
		.archive = creddb_archive,
		.remove = cred_remove },
};
