/* /v1/sessions (docs/api.md §4): create, update and the resource table's entry (retrieve, list,
 * archive and delete are handlers/resource.c's). Creating a session
 * captures its environment's configuration and revision and resolves its agent, and for a cloud
 * environment writes the pending provisioning intent, all in one transaction that first writes
 * the environment row (archive and delete of the environment serialise with it, on one MariaDB
 * or across Galera nodes). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/agents.h"
#include "../db/environments.h"
#include "../db/events.h"
#include "../db/sessions.h"
#include "../db/vaults.h"
#include "../db/work.h"
#include "agent_validate.h"
#include "cursor.h"
#include "env_validate.h"
#include "handlers.h"
#include "resource.h"

#define SES_TITLE_MAX 500    /* characters */
#define SES_VAULT_IDS_MAX 20 /* vaults of one session */
#define SES_CURSOR_KIND "sesn"

static const char *provisioning_status(const char *state)
{
	if (!state)
		return "not_required";
	switch (intent_state_of(state)) {
	case INTENT_PENDING:
		return "pending";
	case INTENT_CLAIMED:
		return "provisioning";
	case INTENT_DONE:
		return "ready";
	default:
		return "failed"; /* failed, terminated, cancelled */
	}
}

/* The API object for row R of a session SELECT (row_render). */
static json_t *session_object(struct db *db, const struct db_rows *rows, unsigned r)
{
	const char *id = db_cell(rows, r, SES_C_ID);
	const char *title = db_cell(rows, r, SES_C_TITLE);
	const char *archived = db_cell(rows, r, SES_C_ARCHIVED);
	const char *state = db_cell(rows, r, SES_C_INTENT_STATE);
	const char *last_error = db_cell(rows, r, SES_C_LAST_ERROR);
	const char *next = db_cell(rows, r, SES_C_NEXT_ATTEMPT);
	const char *mcp_text = db_cell(rows, r, SES_C_MCP);
	json_t *agent = NULL, *meta = NULL, *mcp = NULL, *vaults = NULL, *prov, *obj;
	int waiting =
		intent_state_of(state) == INTENT_PENDING || intent_state_of(state) == INTENT_FAILED;

	/* the MCP server list is optional (SQL NULL: the agent's own) */
	if (db_json_load(db, db_cell(rows, r, SES_C_AGENT), "session", id, "agent", &agent) ||
	    db_json_load_object(db, db_cell(rows, r, SES_C_METADATA), "session", id, "metadata",
				&meta) ||
	    (mcp_text && db_json_load(db, mcp_text, "session", id, "MCP servers", &mcp)) ||
	    db_json_load(db, db_cell(rows, r, SES_C_VAULT_IDS), "session", id, "vault ids",
			 &vaults)) {
		json_decref(agent);
		json_decref(meta);
		json_decref(mcp);
		json_decref(vaults);
		return NULL;
	}
	if (mcp) /* the session-local replacement is what the session runs with */
		json_object_set_new(agent, "mcp_servers", mcp);
	prov = json_pack(
		"{s:s, s:I, s:I, s:o, s:o}", "status", provisioning_status(state),
		"environment_revision",
		(json_int_t)strtoll(db_cell(rows, r, SES_C_REVISION), NULL, 10), "attempts",
		(json_int_t)(state ? strtoll(db_cell(rows, r, SES_C_ATTEMPTS), NULL, 10) : 0),
		"last_error", last_error ? json_string(last_error) : json_null(), "next_attempt_at",
		waiting && next ? json_string(next) : json_null());
	obj = json_pack(
		"{s:s, s:s, s:o, s:s, s:s, s:o, s:o, s:s, s:s, s:o, s:[], s:o, s:[],"
		" s:{}, s:{}, s:n, s:o}",
		"id", id, "type", "session", "agent", agent, "environment_id",
		db_cell(rows, r, SES_C_ENVIRONMENT_ID), "status", db_cell(rows, r, SES_C_STATUS),
		"title", title ? json_string(title) : json_null(), "metadata", meta, "created_at",
		db_cell(rows, r, SES_C_CREATED), "updated_at", db_cell(rows, r, SES_C_UPDATED),
		"archived_at", archived ? json_string(archived) : json_null(), "resources",
		"vault_ids", vaults, "outcome_evaluations", "stats", "usage", "budget",
		"provisioning", prov);
	return obj;
}

static void respond_row(struct worker *w, struct request *req, struct response *resp,
			const struct db_rows *rows, const char *id)
{
	resource_respond(&RES_SESSION, w, req, resp, rows, id);
}

static int check_id(struct request *req, struct response *resp)
{
	return resource_check(&RES_SESSION, req, resp, req->params[0]);
}

/* Fields the SDK defines that this server does not support: accepted only when empty. */
static int unsupported_field(const char *key, json_t *value, struct verr *err)
{
	if (!strcmp(key, "vault_ids") || !strcmp(key, "resources")) {
		if (json_is_array(value) && !json_array_size(value))
			return 0;
		return verr_set(err, 400, NULL,
				"'%s' is not supported by this server; send [] or omit it", key);
	}
	return verr_set(err, 400, NULL, "'%s' is not supported by this server", key);
}

static int title_valid(json_t *title, struct verr *err)
{
	if (json_is_null(title))
		return 0;
	if (!json_is_string(title))
		return verr_set(err, 400, NULL, "'title' must be a string or null");
	if (utf8_chars(json_string_value(title)) > SES_TITLE_MAX)
		return verr_set(err, 400, NULL, "'title' must be at most %d characters",
				SES_TITLE_MAX);
	return 0;
}

/* ---- create ---- */

struct create_ctx {
	struct request *req;
	const char *agent_id, *env_id;
	long long agent_version;  /* 0: latest */
	json_t *metadata;	  /* validated */
	json_t *vault_ids;	  /* validated shape: distinct strings (borrowed from the body) */
	const char *title;	  /* NULL: null */
	char id[RESOURCE_ID_MAX]; /* the new session's, made before the transaction */
	char work_id[RESOURCE_ID_MAX]; /* its work item's (self_hosted environments) */
	char now_db[CLOCK_DB_LEN];
	int work_queued;     /* a self_hosted environment's work item was queued */
	struct db_rows rows; /* the created session */
	struct verr err;
};

/* The shape of `vault_ids` (V, absent: none): an array of at most SES_VAULT_IDS_MAX distinct
 * strings (which vaults they name is create_tx's). 0 or -1 with c->err. */
static int vault_ids_parse(json_t *v, struct create_ctx *c)
{
	char echo[VERR_ECHO_BUF];
	json_t *id;
	size_t i;

	if (!v)
		return 0;
	if (!json_is_array(v))
		return verr_set(&c->err, 400, NULL, "'vault_ids' must be an array of vault ids");
	if (json_array_size(v) > SES_VAULT_IDS_MAX)
		return verr_set(&c->err, 400, NULL,
				"'vault_ids' may name at most %d vaults (got %zu)",
				SES_VAULT_IDS_MAX, json_array_size(v));
	json_array_foreach (v, i, id) {
		if (!json_is_string(id))
			return verr_set(&c->err, 400, NULL, "'vault_ids[%zu]' must be a string", i);
		for (size_t j = 0; j < i; j++)
			if (json_equal(id, json_array_get(v, j)))
				return verr_set(
					&c->err, 400, NULL,
					"'vault_ids[%zu]' repeats 'vault_ids[%zu]' ('%s')", i, j,
					verr_echo(echo, json_string_value(id), VERR_ECHO_CHARS));
	}
	c->vault_ids = v;
	return 0;
}

/* Each vault of c->vault_ids is one of the workspace's (404 naming it when not: another
 * workspace's is missing) and not archived (400), held under a shared lock until the session
 * is written (an archive or delete of the vault waits for it). DB_OK with c->err set when
 * refused. */
static enum db_status vaults_hold(struct db *db, struct create_ctx *c)
{
	char echo[VERR_ECHO_BUF];
	struct db_rows rows;
	enum db_status st;
	json_t *v;
	size_t i;

	json_array_foreach (c->vault_ids, i, v) {
		const char *id = json_string_value(v);
		int archived;

		if (!resource_id_valid(id, VAULT_ID_PREFIX)) {
			verr_set(&c->err, 404, NULL, "vault '%s' not found ('vault_ids[%zu]')",
				 verr_echo(echo, id, VERR_ECHO_CHARS), i);
			return DB_OK;
		}
		st = vaultdb_hold(db, c->req->principal->workspace_id, id, &rows);
		if (st)
			return st;
		archived = rows.nrows && db_cell(&rows, 0, VAULT_C_ARCHIVED);
		if (!rows.nrows)
			verr_set(&c->err, 404, NULL, "vault '%s' not found ('vault_ids[%zu]')", id,
				 i);
		else if (archived)
			verr_set(&c->err, 400, NULL,
				 "vault '%s' is archived; 'vault_ids[%zu]' must name a live vault",
				 id, i);
		db_rows_free(&rows);
		if (c->err.status)
			return DB_OK;
	}
	return DB_OK;
}

/* Parse and validate the create body into C. 0 or -1 with c->err. */
static int create_parse(json_t *body, struct create_ctx *c)
{
	const char *key;
	json_t *v, *agent;

	json_object_foreach (body, key, v) {
		if (strcmp(key, "agent") && strcmp(key, "environment_id") &&
		    strcmp(key, "metadata") && strcmp(key, "title") && strcmp(key, "vault_ids")) {
			if (!strcmp(key, "resources") || !strcmp(key, "budget") ||
			    !strcmp(key, "initial_events")) {
				if (unsupported_field(key, v, &c->err))
					return -1;
				continue;
			}
			return verr_set(&c->err, 400, NULL, "unknown field '%.64s'", key);
		}
	}
	agent = json_object_get(body, "agent");
	if (!agent)
		return verr_set(&c->err, 400, NULL, "'agent' is required");
	if (json_is_string(agent)) {
		c->agent_id = json_string_value(agent);
	} else if (json_is_object(agent)) {
		json_t *type = json_object_get(agent, "type"),
		       *ver = json_object_get(agent, "version");
		json_object_foreach (agent, key, v)
			if (strcmp(key, "type") && strcmp(key, "id") && strcmp(key, "version"))
				return verr_set(&c->err, 400, NULL, "unknown field 'agent.%.64s'",
						key);
		if (type && (!json_is_string(type) || strcmp(json_string_value(type), "agent")))
			return verr_set(&c->err, 400, NULL, "'agent.type' must be 'agent'");
		c->agent_id = json_string_value(json_object_get(agent, "id"));
		if (!c->agent_id)
			return verr_set(&c->err, 400, NULL,
					"'agent.id' is required and must be a string");
		if (ver && !json_is_null(ver)) {
			if (!json_is_integer(ver) || json_integer_value(ver) < 1)
				return verr_set(&c->err, 400, NULL,
						"'agent.version' must be a positive integer");
			c->agent_version = json_integer_value(ver);
		}
	} else {
		return verr_set(&c->err, 400, NULL,
				"'agent' must be an agent id or "
				"{\"type\":\"agent\",\"id\":...,\"version\":...}");
	}
	c->env_id = json_string_value(json_object_get(body, "environment_id"));
	if (!json_object_get(body, "environment_id"))
		return verr_set(&c->err, 400, NULL, "'environment_id' is required");
	if (!c->env_id)
		return verr_set(&c->err, 400, NULL, "'environment_id' must be a string");
	v = json_object_get(body, "title");
	if (v && title_valid(v, &c->err))
		return -1;
	c->title = json_string_value(v);
	if (vault_ids_parse(json_object_get(body, "vault_ids"), c))
		return -1;
	c->metadata = meta_validate(json_object_get(body, "metadata"), "metadata", &c->err);
	return c->metadata ? 0 : -1;
}

/* In session C's transaction, what will run it, by its environment's type (CONFIG, the parsed
 * config of ENV's row 0): a provisioning intent (cloud) that carries what provisioning needs,
 * captured now, so that later environment updates do not reach this session; or a work item
 * (self_hosted), from which the customer's workers learn of the session. */
static enum db_status create_runner(struct db *db, struct create_ctx *c, const json_t *config,
				    const struct db_rows *env)
{
	const char *type = json_string_value(json_object_get(config, "type"));
	const char *ws = c->req->principal->workspace_id;
	char *spec_text = NULL;
	json_t *spec;
	enum db_status st;

	if (!type || strcmp(type, "cloud")) {
		st = workdb_enqueue(db, c->work_id, ws, c->env_id, c->id, c->now_db);
		c->work_queued = !st;
		return st;
	}
	spec = json_pack("{s:s, s:I, s:O, s:O}", "environment_id", c->env_id,
			 "environment_revision",
			 (json_int_t)strtoll(db_cell(env, 0, ENV_C_REVISION), NULL, 10), "packages",
			 json_object_get(config, "packages"), "networking",
			 json_object_get(config, "networking"));
	st = db_json_dump(db, spec, "session", c->id, "intent", &spec_text);
	if (!st)
		st = sesdb_insert_intent(db, c->id, ws, INTENT_PROVISION, spec_text, NULL,
					 c->now_db);
	json_decref(spec);
	free(spec_text);
	return st;
}

static enum db_status create_tx(struct db *db, void *arg)
{
	struct create_ctx *c = arg;
	const struct auth_principal *a = c->req->principal;
	struct db_rows env = { 0 };
	json_t *snapshot = NULL, *config = NULL;
	char *snap_text = NULL, *meta_text = NULL, *vaults_text = NULL;
	int archived = 0;
	enum db_status st;

	db_rows_free(&c->rows);
	memset(&c->err, 0, sizeof(c->err));
	c->work_queued = 0;
	if (!resource_id_valid(c->agent_id, "agent_")) {
		verr_set(&c->err, 404, NULL, "agent '%.64s' not found", c->agent_id);
		return DB_OK;
	}
	st = agentdb_snapshot(db, a->workspace_id, c->agent_id, c->agent_version, &snapshot,
			      &archived);
	if (st)
		goto out;
	if (!snapshot) {
		if (c->agent_version)
			verr_set(&c->err, 404, NULL, "agent '%s' has no version %lld", c->agent_id,
				 c->agent_version);
		else
			verr_set(&c->err, 404, NULL, "agent '%s' not found", c->agent_id);
		goto out;
	}
	if (archived) {
		verr_set(&c->err, 400, NULL,
			 "agent '%s' is archived; 'agent' must name a live agent", c->agent_id);
		goto out;
	}
	if (!resource_id_valid(c->env_id, "env_")) {
		verr_set(&c->err, 404, "environment_not_found", "environment '%.64s' not found",
			 c->env_id);
		goto out;
	}
	/* an archive or delete of this environment waits for us, or we for it; across Galera
	 * nodes one of the two fails certification (envdb_hold_for_session) */
	st = envdb_hold_for_session(db, c->env_id, a->workspace_id, a->account_id);
	if (!st)
		st = envdb_get(db, c->env_id, a->workspace_id, a->account_id, ENVDB_LOCK_SHARE,
			       &env);
	if (st)
		goto out;
	if (!env.nrows) {
		verr_set(&c->err, 404, "environment_not_found", "environment '%s' not found",
			 c->env_id);
		goto out;
	}
	if (db_cell(&env, 0, ENV_C_ARCHIVED)) {
		verr_set(&c->err, 400, "environment_archived",
			 "environment '%s' is archived and cannot be used for new sessions",
			 c->env_id);
		goto out;
	}
	if (c->vault_ids) {
		st = vaults_hold(db, c);
		if (st || c->err.status)
			goto out;
	}
	st = db_json_load(db, db_cell(&env, 0, ENV_C_CONFIG), "environment", c->env_id, "config",
			  &config);
	if (st)
		goto out;
	st = db_json_dump(db, snapshot, "session", c->id, "agent snapshot", &snap_text);
	if (!st)
		st = db_json_dump(db, c->metadata, "session", c->id, "metadata", &meta_text);
	if (!st && c->vault_ids)
		st = db_json_dump(db, c->vault_ids, "session", c->id, "vault ids", &vaults_text);
	if (st)
		goto out;
	clock_now(c->now_db, NULL);
	st = sesdb_insert(
		db,
		&(struct session_row_in){
			.id = c->id,
			.workspace_id = a->workspace_id,
			.environment_id = c->env_id,
			.environment_config = db_cell(&env, 0, ENV_C_CONFIG),
			.environment_revision = strtoll(db_cell(&env, 0, ENV_C_REVISION), NULL, 10),
			.agent_id = c->agent_id,
			.agent_version = json_integer_value(json_object_get(snapshot, "version")),
			.agent_snapshot = snap_text,
			.title = c->title,
			.metadata = meta_text,
			.vault_ids = vaults_text ? vaults_text : "[]",
			.now = c->now_db });
	if (!st)
		st = create_runner(db, c, config, &env);
	if (st)
		goto out;
	st = resource_get(&RES_SESSION, db, c->req, c->id, 0, &c->rows);
out:
	db_rows_free(&env);
	json_decref(snapshot);
	json_decref(config);
	free(snap_text);
	free(meta_text);
	free(vaults_text);
	return st;
}

void session_create(struct worker *w, struct request *req, struct response *resp)
{
	struct create_ctx c = { .req = req };
	enum db_status st;

	if (create_parse(req->json, &c)) {
		respond_verr(req, resp, &c.err);
		goto out;
	}
	if (resource_new_id(req, resp, SES_ID_PREFIX, c.id) ||
	    resource_new_id(req, resp, WORK_ID_PREFIX, c.work_id))
		goto out;
	st = db_tx(w->db, create_tx, &c);
	if (!respond_refusal(w, req, resp, st, &c.err)) {
		respond_row(w, req, resp, &c.rows, c.id);
		/* after the commit: polls blocked on this environment take the item now */
		if (c.work_queued && (st = workdb_wake(w->db, c.env_id)))
			log_warn("waking polls of %s: %s: %s", c.env_id, db_status_name(st),
				 db_error(w->db));
	}
out:
	json_decref(c.metadata);
	db_rows_free(&c.rows);
}

/* ---- update ---- */

struct update_ctx {
	json_t *body;
	json_t *mcp;	 /* validated replacement list or NULL when not given */
	struct verr err; /* the body's refusal */
};

static int update_parse(json_t *body, struct update_ctx *c)
{
	const char *key;
	json_t *v, *agent;

	json_object_foreach (body, key, v) {
		if (!strcmp(key, "metadata") || !strcmp(key, "title") || !strcmp(key, "agent"))
			continue;
		if (!strcmp(key, "vault_ids") || !strcmp(key, "budget")) {
			if (unsupported_field(key, v, &c->err))
				return -1;
			continue;
		}
		return verr_set(&c->err, 400, NULL, "unknown field '%.64s'", key);
	}
	v = json_object_get(body, "title");
	if (v && title_valid(v, &c->err))
		return -1;
	agent = json_object_get(body, "agent");
	if (agent) {
		if (!json_is_object(agent))
			return verr_set(&c->err, 400, NULL, "'agent' must be an object");
		json_object_foreach (agent, key, v) {
			if (!strcmp(key, "mcp_servers"))
				continue;
			if (!strcmp(key, "tools"))
				return verr_set(&c->err, 400, NULL,
						"'agent.tools' is not supported by this server");
			return verr_set(&c->err, 400, NULL, "unknown field 'agent.%.64s'", key);
		}
		v = json_object_get(agent, "mcp_servers");
		if (v) {
			c->mcp = mcp_servers_validate(v, "agent.mcp_servers", &c->err);
			if (!c->mcp)
				return -1;
		}
	}
	return 0;
}

/* An mcp_toolset of session ID's agent snapshot (AGENT_TEXT, its stored cell) must keep naming a
 * server of the replacement list MCP, as the agents API requires of agents: DB_OK, with ERR set
 * when one would not; DB_CORRUPT when the snapshot does not parse. */
static enum db_status mcp_toolsets_kept(struct db *db, const char *id, const char *agent_text,
					json_t *mcp, struct verr *err)
{
	json_t *agent, *tool, *server;
	size_t i, k;
	enum db_status st = db_json_load(db, agent_text, "session", id, "agent", &agent);

	if (st)
		return st;
	json_array_foreach (json_object_get(agent, "tools"), i, tool) {
		const char *type = json_string_value(json_object_get(tool, "type"));
		const char *want = json_string_value(json_object_get(tool, "mcp_server_name"));
		int found = 0;

		if (!type || strcmp(type, "mcp_toolset") || !want)
			continue;
		json_array_foreach (mcp, k, server)
			found |= !strcmp(json_string_value(json_object_get(server, "name")), want);
		if (!found) {
			verr_set(err, 400, NULL,
				 "'agent.mcp_servers' must keep the server named '%.255s': "
				 "'agent.tools[%zu].mcp_server_name' (an mcp_toolset) uses it",
				 want, i);
			break;
		}
	}
	json_decref(agent);
	return DB_OK;
}

/* The update's change (resource_change): title, metadata (a per-key patch) and the agent's MCP
 * servers, written when any of them changes. */
static enum db_status update_change(struct db *db, const struct db_key *k,
				    const struct db_rows *rows, void *arg, int *wrote,
				    struct verr *err)
{
	struct update_ctx *c = arg;
	json_t *title;
	char *mcp_text = NULL, now_db[CLOCK_DB_LEN];
	const char *new_title, *old_title = db_cell(rows, 0, SES_C_TITLE), *old_mcp;
	struct meta_change m;
	enum db_status st = DB_OK;
	int changed;

	if (c->mcp) {
		st = mcp_toolsets_kept(db, k->id, db_cell(rows, 0, SES_C_AGENT), c->mcp, err);
		if (st || err->status)
			return st;
	}
	st = meta_change_load(db, db_cell(rows, 0, SES_C_METADATA), "session", k->id,
			      json_object_get(c->body, "metadata"), &m, err);
	if (st || !m.meta)
		goto out;
	title = json_object_get(c->body, "title");
	new_title = title ? json_string_value(title) : old_title;
	old_mcp = db_cell(rows, 0, SES_C_MCP);
	if (c->mcp)
		st = db_json_dump(db, c->mcp, "session", k->id, "MCP servers", &mcp_text);
	if (st)
		goto out;
	changed = m.changed ||
		  (title && ((new_title == NULL) != (old_title == NULL) ||
			     (new_title && strcmp(new_title, old_title)))) ||
		  (c->mcp && (!old_mcp || strcmp(mcp_text, old_mcp)));
	if (!changed)
		goto out;
	clock_now(now_db, NULL);
	st = sesdb_update(db, k->id, k->workspace_id, new_title, m.text,
			  c->mcp ? mcp_text : old_mcp, now_db);
	*wrote = 1;
out:
	meta_change_release(&m);
	free(mcp_text);
	return st;
}

void session_update(struct worker *w, struct request *req, struct response *resp)
{
	struct update_ctx c = { .body = req->json };

	if (check_id(req, resp))
		return;
	if (update_parse(req->json, &c))
		respond_verr(req, resp, &c.err);
	else
		resource_update(&RES_SESSION, w, req, resp, update_change, &c);
	json_decref(c.mcp);
}

/* ---- delete ---- */

struct delete_ctx {
	const struct db_key *key;
	int found;
};

static enum db_status delete_tx(struct db *db, void *arg)
{
	struct delete_ctx *c = arg;
	const struct db_key *k = c->key;
	struct db_rows rows;
	char now_db[CLOCK_DB_LEN];
	const char *state, *mark, *lease;
	enum db_status st;

	c->found = 0;
	st = sesdb_get(db, k, 1, &rows);
	if (st || !rows.nrows)
		goto out;
	c->found = 1;
	clock_now(now_db, NULL);
	st = workdb_stop_session(db, k->id, k->workspace_id, now_db);
	if (!st) /* its log goes; a session.deleted ends its streams */
		st = evdb_session_deleted(db, k->id, now_db);
	if (st)
		goto out;
	state = db_cell(&rows, 0, SES_C_INTENT_STATE);
	mark = db_cell(&rows, 0, SES_C_SANDBOX_MARK);
	lease = db_cell(&rows, 0, SES_C_LEASE_UNTIL);
	/* decided by what was created, never by attempts (--retry resets them): the reconciler
	 * marks the intent before it asks the backend for a sandbox, and that write waits for
	 * this transaction's lock on the intent */
	if (!state || !mark || !strcmp(mark, "0")) {
		/* no sandbox was ever asked for: the rows can go now */
		st = sesdb_remove(db, k->id, k->workspace_id);
	} else {
		/* a sandbox exists or may be half made: leave a teardown for the reconciler, due
		 * once a provisioning in flight has lost its lease */
		st = sesdb_retire(db, k->id, k->workspace_id, db_cell(&rows, 0, SES_C_SANDBOX_ID),
				  now_db, intent_state_of(state) == INTENT_CLAIMED ? lease : NULL);
	}
out:
	db_rows_free(&rows);
	return st;
}

static enum db_status session_remove(struct db *db, const struct db_key *k, int *found,
				     struct verr *err)
{
	struct delete_ctx c = { .key = k };
	enum db_status st = db_tx(db, delete_tx, &c);

	(void)err;
	*found = c.found;
	return st;
}

/* ---- list ---- */

/* order and agent_id; the cursor is bound to every filter. */
static int session_list_query(struct request *req, struct response *resp, struct resource_list *l)
{
	const char *order = req_query(req, "order"), *agent_id = req_query(req, "agent_id");

	if (order && strcmp(order, "desc")) {
		if (strcmp(order, "asc")) {
			resp_error(resp, req, 400, NULL, "'order' must be asc or desc");
			return -1;
		}
		l->page.asc = 1;
	}
	if (agent_id && !*agent_id)
		agent_id = NULL;
	if (agent_id && !resource_id_valid(agent_id, "agent_")) {
		resp_error(resp, req, 400, NULL, "'agent_id' is not an agent id");
		return -1;
	}
	l->page.agent_id = agent_id;
	snprintf(l->filter, sizeof(l->filter), "o%d;a%d;g%s", l->page.asc, l->page.include_archived,
		 agent_id ? agent_id : "");
	return 0;
}

/* The archive and the stop of the session's work item commit together. */
static enum db_status session_archive_row(struct db *db, const struct db_key *k, const char *now)
{
	unsigned long long n = 0;
	enum db_status st = sesdb_archive(db, k, now, &n);

	if (!st && n) /* an archived session's work item is asked to stop */
		st = workdb_stop_session(db, k->id, k->workspace_id, now);
	return st;
}

const struct resource RES_SESSION = {
	.kind = "session",
	.id_prefix = SES_ID_PREFIX,
	.visibility = RES_VIS_ACCOUNT,
	.flags = RES_LIST_ARCHIVED | RES_LIST_PREV_PAGE,
	.cursor_kind = SES_CURSOR_KIND,
	.filters_text = "include_archived, order or agent_id",
	.cols = { .id = SES_C_ID, .created_db = SES_C_CREATED_DB, .archived = SES_C_ARCHIVED },
	.render = session_object,
	.list_query = session_list_query,
	.db = { .get = sesdb_get,
		.list = sesdb_list,
		.archive = session_archive_row,
		.remove = session_remove },
};
