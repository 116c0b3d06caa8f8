/* One turn, in its own process (docs/runner.md). Every iteration rebuilds the history from the
 * log, settles the tool uses it holds (runs those the server runs, answers denied and unknown
 * ones, parks on those the client must answer), then asks the model. Every write is fenced on
 * the claim (db/turns.h): a runner that lost the turn writes nothing more. A built-in tool's
 * start is committed before it runs; a start without a result is never run again: the model is
 * told the outcome is unknown. */
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../db/events.h"
#include "../db/vaults.h"
#include "../db/work.h"
#include "history.h"
#include "mcp.h"
#include "tools.h"

#define TURN_UNKNOWN_OUTCOME                                                                       \
	"the runner running this tool stopped before it recorded the outcome; the tool may or "    \
	"may "                                                                                     \
	"not have run: check before running it again"
#define TURN_NO_CLIENT_RESULT "no result arrived from the client within %ld s"
#define TURN_UNAVAILABLE "tool '%s' is not available to this agent"
#define TURN_CUT_INPUT                                                                             \
	"the reply stopped (%s) before the input of this call of '%s' was complete: it was not "   \
	"run; make the call again with a smaller input (a large file in several parts)"
#define TURN_REFUSE_MSG_MAX 512 /* the error result of a tool use that is not run */
#define TURN_ERR_MAX 512	/* a session.error's message made by the turn */
#define TURN_MCP_NAME_SHOWN 64	/* bytes of an MCP server's or tool's name in a message */
/* a message about an MCP server: the names, the client's error and the words around them */
#define TURN_MCP_MSG_MAX (MCP_ERROR_MAX + 2 * TURN_MCP_NAME_SHOWN + 64)
#define STOP_END_TURN "{\"type\":\"end_turn\"}"
#define STOP_REFUSAL "{\"type\":\"refusal\"}"

struct turn {
	const struct runner *r;
	struct turn_claim claim;
	struct db *db;
	struct model_client *model;
	json_t *agent; /* the session's agent snapshot */
	int self_hosted;
	struct toolset tools;
	struct history h;
	struct turn_sandbox *sandbox; /* opened by the first tool that needs it */
	json_t *offered;	      /* the tools offered to the model: the toolset's and MCP's */
	struct mcp_names names;	      /* the MCP tools' names as offered */
	struct vault_secrets secrets; /* the session's credentials, opened (wiped at the end) */
	struct turn_mcp {
		char name[256];
		struct mcp_client *client; /* NULL: it could not be used (why: error) */
		char error[MCP_ERROR_MAX];
	} mcp[MCP_SERVERS_MAX];
	int nmcp;
	long long renewed_ms;
	long long checked_ms; /* the stop conditions last read (a query, a fenced write) */
	int lost;	      /* the claim is not ours any more: write nothing */
	int stopping;	      /* a user.interrupt (or the lost claim) asks the turn to stop */
	int overdue;	      /* claimed because the client's results are overdue */
	long writes;	      /* fenced writes committed so far */
	long long tokens[4];  /* input, output, cache creation, cache read of this process */
	json_t *refusal;      /* the last reply was a refusal: the idle's stop_details */
};

/* ---- writes, fenced on the claim ---- */

typedef enum db_status (*turn_change)(struct turn *t, struct db *db, struct ev_session *s,
				      void *arg);

/* How a fenced write ends (turn_write's FLAGS). */
enum write_flags {
	W_RELEASE = 1,	  /* the turn ends with this write: give the claim back */
	W_KEEP_STATE = 2, /* the change leaves the session's state (evdb_save) as it is */
};

struct write_ctx {
	struct turn *t;
	turn_change change;
	void *arg;
	unsigned flags;
};

static enum db_status write_tx(struct db *db, void *arg)
{
	struct write_ctx *w = arg;
	struct ev_session s;
	char now[CLOCK_DB_LEN];
	enum db_status st;
	int lost = 0;

	clock_now(now, NULL);
	st = turns_lock(db, &w->t->claim, w->t->r->owner, now, &s, &lost);
	if (!st && lost)
		w->t->lost = 1;
	/* the lock read what turns_should_stop asks: turn_stop need not ask again at once */
	if (!st && !lost) {
		w->t->checked_ms = clock_mono_ms();
		if (s.interrupted)
			w->t->stopping = 1;
	}
	if (!st && !lost)
		st = w->change(w->t, db, &s, w->arg);
	if (!st && !lost && !(w->flags & W_KEEP_STATE))
		st = evdb_save(db, &s);
	if (!st && !lost && (w->flags & W_RELEASE))
		st = turns_release(db, &s);
	ev_session_release(&s);
	return st;
}

/* Run CHANGE in one fenced transaction, ended as FLAGS (enum write_flags) say. 0, or -1 (the
 * claim lost, or a database failure: logged) after which the turn writes nothing more. */
static int turn_write(struct turn *t, turn_change change, void *arg, unsigned flags)
{
	struct write_ctx w = { t, change, arg, flags };
	enum db_status st;

	if (t->lost)
		return -1;
	st = db_tx(t->db, write_tx, &w);
	if (st) {
		log_error("runner: session %s: %s", t->claim.session_id, db_error(t->db));
		t->lost = 1; /* another runner takes the turn over when the lease ends */
	} else if (t->lost) {
		log_warn("runner: session %s: the turn is not this runner's any more",
			 t->claim.session_id);
	} else {
		t->writes++;
	}
	return t->lost ? -1 : 0;
}

/* Events of one write appended together (evdb_append_rows), in the order they were added. */
struct batch {
	struct ev_new e[EVENTS_APPEND_ROWS];
	char ids[EVENTS_APPEND_ROWS][64], refs[EVENTS_APPEND_ROWS][64];
	char types[EVENTS_APPEND_ROWS][EVENTS_TYPE_MAX];
	char *bodies[EVENTS_APPEND_ROWS]; /* owned */
	size_t n;
};

/* The end of B: after ST (a failure: B is dropped), what it holds is appended to S. */
static enum db_status batch_end(struct db *db, struct ev_session *s, struct batch *b,
				enum db_status st)
{
	if (!st && b->n)
		st = evdb_append_rows(db, s, b->e, b->n);
	for (size_t i = 0; i < b->n; i++)
		free(b->bodies[i]);
	b->n = 0;
	return st;
}

/* Add EV (an object whose first member is "type"; stolen) to B, for S, referring to REF; its
 * id into ID_OUT (64 bytes) when not NULL. A full B is appended first. */
static enum db_status emit_to(struct batch *b, struct db *db, struct ev_session *s, json_t *ev,
			      const char *ref, char *id_out)
{
	const char *type = json_string_value(json_object_get(ev, "type"));
	enum db_status st = b->n == EVENTS_APPEND_ROWS ? batch_end(db, s, b, DB_OK) : DB_OK;
	size_t i = b->n;

	if (!st && random_id(b->ids[i], sizeof(b->ids[i]), EVENT_ID_PREFIX, ID_RANDOM_LEN))
		st = db_fail(db, DB_FATAL, "session %s: no random id for an event", s->id);
	if (!st)
		st = db_json_dump(db, ev, "session", s->id, "event", &b->bodies[i]);
	if (!st) {
		snprintf(b->types[i], sizeof(b->types[i]), "%s", type ? type : "");
		snprintf(b->refs[i], sizeof(b->refs[i]), "%s", ref ? ref : "");
		b->e[i] = (struct ev_new){ .id = b->ids[i],
					   .type = b->types[i],
					   .ref_id = ref ? b->refs[i] : NULL,
					   .body = b->bodies[i] };
		b->n++;
		if (id_out)
			memcpy(id_out, b->ids[i], sizeof(b->ids[i]));
	}
	json_decref(ev);
	return st;
}

/* Append EV (stolen) to S now, referring to REF; its id into ID_OUT (64 bytes) when not
 * NULL. */
static enum db_status emit_id(struct db *db, struct ev_session *s, json_t *ev, const char *ref,
			      char *id_out)
{
	struct batch b;

	b.n = 0;
	return batch_end(db, s, &b, emit_to(&b, db, s, ev, ref, id_out));
}

static enum db_status emit(struct db *db, struct ev_session *s, json_t *ev, const char *ref)
{
	return emit_id(db, s, ev, ref, NULL);
}

/* ---- what stops a turn ---- */

/* The cancel callback of the model call, the tools and the waits: renews the lease when a
 * third of it has passed, and says whether the turn must stop (an interrupt, a lost claim),
 * asking the database at most every RUNNER_STOP_CHECK_MS (a fenced write reads the same under
 * its lock, write_tx). */
static int turn_stop(void *arg)
{
	struct turn *t = arg;
	const struct config *cfg = t->r->cfg;
	char now[CLOCK_DB_LEN];
	int yes = 0;

	if (t->stopping || t->lost)
		return 1;
	if (clock_mono_ms() - t->renewed_ms >= cfg->runner_lease_s * 1000 / 3) {
		int lost = 0;
		clock_now(now, NULL);
		if (turns_renew(t->db, &t->claim, t->r->owner, cfg->runner_lease_s, now, &lost) ==
			    DB_OK &&
		    !lost)
			t->renewed_ms = clock_mono_ms();
		else if (lost)
			t->lost = 1;
	}
	if (!t->lost && clock_mono_ms() - t->checked_ms >= RUNNER_STOP_CHECK_MS &&
	    turns_should_stop(t->db, &t->claim, t->r->owner, &yes) == DB_OK) {
		t->checked_ms = clock_mono_ms();
		if (yes)
			t->stopping = 1;
	}
	return t->stopping || t->lost;
}

/* Sleep MS, asking turn_stop every RUNNER_TOOL_POLL_MS. 1 when the turn must stop. */
static int turn_sleep(struct turn *t, long ms)
{
	long long until = clock_mono_ms() + ms;

	while (clock_mono_ms() < until) {
		long left = (long)(until - clock_mono_ms());
		clock_sleep_ms(left < RUNNER_TOOL_POLL_MS ? left : RUNNER_TOOL_POLL_MS);
		if (turn_stop(t))
			return 1;
	}
	return turn_stop(t);
}

/* ---- the end of a turn ---- */

struct idle_arg {
	const char *stop_reason;  /* JSON object text */
	json_t *error;		  /* a session.error to append first (stolen), or NULL */
	json_t *blocking;	  /* requires_action: the ids (borrowed) */
	const char *stop_details; /* JSON object text, or NULL (null) */
};

static enum db_status idle_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	struct idle_arg *a = arg;
	enum db_status st = DB_OK;

	(void)t;
	if (a->error) {
		st = emit(db, s, a->error, NULL);
		a->error = NULL;
	}
	free(s->blocking);
	s->blocking = NULL;
	if (!st && a->blocking)
		st = db_json_dump(db, a->blocking, "session", s->id, "blocking ids", &s->blocking);
	s->turn_pending = 0;
	s->interrupt = 0;
	return st ? st
		  : evdb_status_details(db, s, SES_IDLE, a->stop_reason, a->stop_details, NULL);
}

/* End the turn idle with STOP_REASON, after ERROR (stolen, may be NULL). */
static int turn_idle(struct turn *t, const char *stop_reason, json_t *error)
{
	struct idle_arg a = { stop_reason, error, NULL, NULL };
	int rc = turn_write(t, idle_change, &a, W_RELEASE);

	json_decref(a.error);
	return rc;
}

/* A session.error of TYPE with MESSAGE and retry status RETRY (retrying, exhausted,
 * terminal). New reference. */
static json_t *session_error(const char *type, const char *message, const char *retry)
{
	return json_pack("{s:s, s:{s:s, s:s, s:{s:s}}}", "type", "session.error", "error", "type",
			 type, "message", message, "retry_status", "type", retry);
}

/* ---- settling the tool uses of the history ---- */

struct result_arg {
	const char *tool_use_id;
	const char *text;
	int is_error;
};

static enum db_status result_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	struct result_arg *a = arg;

	(void)t;
	return emit(db, s,
		    json_pack("{s:s, s:s, s:[{s:s, s:s}], s:b}", "type", "agent.tool_result",
			      "tool_use_id", a->tool_use_id, "content", "type", "text", "text",
			      a->text, "is_error", a->is_error),
		    a->tool_use_id);
}

/* Give the model the result of tool use ID without running anything. */
static int answer(struct turn *t, const char *id, const char *text, int is_error)
{
	struct result_arg a = { id, text, is_error };

	return turn_write(t, result_change, &a, 0);
}

struct start_arg {
	const char *id;
	int already;
};

static enum db_status start_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	struct start_arg *a = arg;

	(void)t;
	return turns_tool_start(db, s, a->id, &a->already);
}

/* After a tool use's result was written (RC its write's): -1 when the turn goes no further
 * (the write failed, or an interrupt stopped the tool: its result says so), else 0. */
static int result_written(const struct turn *t, int rc)
{
	return (rc || t->stopping) ? -1 : 0;
}

/* Run built-in tool use U in the session's sandbox: its start committed first, its result
 * after. 0, or -1 when the turn must stop. */
static int run_builtin(struct turn *t, const struct tool_use *u)
{
	struct start_arg start = { u->id, 0 };
	struct tool_exec x;
	struct tool_result res = { 0 };
	char err[512];

	if (!t->sandbox) {
		t->sandbox = turn_sandbox_open(t->r, t->db, t->claim.session_id, turn_stop, t, err,
					       sizeof(err));
		if (!t->sandbox) {
			char msg[640];
			if (t->stopping || t->lost)
				return -1;
			snprintf(msg, sizeof(msg), "the session's sandbox is not available: %s",
				 err);
			return answer(t, u->id, msg, 1);
		}
	}
	if (turn_write(t, start_change, &start, W_KEEP_STATE))
		return -1;
	if (start.already) /* a runner before this one started it: never twice */
		return answer(t, u->id, TURN_UNKNOWN_OUTCOME, 1);
	turn_sandbox_exec(t->sandbox, turn_stop, t, &x);
	tools_run(&x, u->name, u->input, &res);
	if (t->lost || (t->stopping && !res.text)) {
		tool_result_release(&res);
		return -1;
	}
	{
		/* an interrupted tool's result says so (the SDK's "aborted"), not that a runner
		 * died without recording the outcome */
		struct result_arg a = { u->id, res.text, res.is_error };
		int rc = turn_write(t, result_change, &a, 0);
		tool_result_release(&res);
		return result_written(t, rc);
	}
}

/* ---- MCP ---- */

struct mcp_result_arg {
	const char *use_id;
	json_t *content; /* borrowed */
	int is_error;
};

static enum db_status mcp_result_change(struct turn *t, struct db *db, struct ev_session *s,
					void *arg)
{
	struct mcp_result_arg *a = arg;

	(void)t;
	return emit(db, s,
		    json_pack("{s:s, s:s, s:O, s:b}", "type", "agent.mcp_tool_result",
			      "mcp_tool_use_id", a->use_id, "content", a->content, "is_error",
			      a->is_error),
		    a->use_id);
}

/* An MCP result that is only text MSG, an error. */
static int mcp_answer(struct turn *t, const char *id, const char *msg)
{
	json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", msg);
	struct mcp_result_arg a = { id, content, 1 };
	int rc = content ? turn_write(t, mcp_result_change, &a, 0) : -1;

	json_decref(content);
	return rc;
}

/* Call MCP tool use U on its server: the start committed first, as a built-in's (a call whose
 * outcome a dead runner left unknown is never made again). 0, or -1 when the turn must stop. */
static int run_mcp(struct turn *t, const struct tool_use *u)
{
	struct start_arg start = { u->id, 0 };
	struct mcp_result res = { 0 };
	struct mcp_error err = { 0 };
	struct turn_mcp *m = NULL;
	char msg[TURN_MCP_MSG_MAX];
	int rc;

	for (int i = 0; i < t->nmcp; i++)
		if (u->server && !strcmp(t->mcp[i].name, u->server))
			m = &t->mcp[i];
	if (!m || !m->client) {
		snprintf(msg, sizeof(msg), "MCP server '%.*s' is not available%s%s",
			 TURN_MCP_NAME_SHOWN, u->server ? u->server : "", m ? ": " : "",
			 m ? m->error : "");
		return mcp_answer(t, u->id, msg);
	}
	if (turn_write(t, start_change, &start, W_KEEP_STATE))
		return -1;
	if (start.already)
		return mcp_answer(t, u->id, TURN_UNKNOWN_OUTCOME);
	if (mcp_call(m->client, u->name, u->input, &res, &err)) {
		if (t->lost)
			return -1;
		/* a call the interrupt cancelled is answered so too */
		snprintf(msg, sizeof(msg), "MCP server '%.*s', tool '%.*s': %s",
			 TURN_MCP_NAME_SHOWN, m->name, TURN_MCP_NAME_SHOWN, u->name, err.message);
		rc = mcp_answer(t, u->id, msg);
		return result_written(t, rc);
	}
	{
		struct mcp_result_arg a = { u->id, res.content, res.is_error };
		rc = turn_write(t, mcp_result_change, &a, 0);
	}
	mcp_result_release(&res);
	return result_written(t, rc);
}

struct mcp_error_arg {
	const char *server;
	const struct mcp_error *err;
};

static enum db_status mcp_error_change(struct turn *t, struct db *db, struct ev_session *s,
				       void *arg)
{
	const struct mcp_error_arg *a = arg;
	char msg[TURN_MCP_MSG_MAX];
	json_t *ev;

	(void)t;
	snprintf(msg, sizeof(msg), "MCP server '%.*s': %s; the turn goes on without its tools",
		 TURN_MCP_NAME_SHOWN, a->server, a->err->message);
	ev = session_error(mcp_error_type(a->err), msg, "terminal");
	/* the SDK's MCP error objects name their server */
	if (!ev || json_object_set_new(json_object_get(ev, "error"), "mcp_server_name",
				       json_string(a->server))) {
		json_decref(ev);
		return db_fail(db, DB_NOMEM, "session %s: an MCP error event", s->id);
	}
	return emit(db, s, ev, NULL);
}

/* The bearer the session's vaults hold for the MCP server at URL (exact match), or NULL: none,
 * or one that does not open (*WHY then says why: the key file, never the token). */
static const char *turn_bearer(struct turn *t, const char *url, const char **why)
{
	const struct vault_secret *v = vault_secrets_find(&t->secrets, url);

	*why = v && !v->token ? v->error : NULL;
	return v ? v->token : NULL;
}

/* Open each MCP server an mcp_toolset of the agent names (its url in the agent's mcp_servers)
 * and offer its enabled tools; a call may take [runner] mcp_call_timeout_seconds. One that
 * cannot be used gets a session.error and is left out. */
static int turn_mcp_open(struct turn *t)
{
	json_t *servers = json_object_get(t->agent, "mcp_servers"), *srv;
	const struct mcp_limits limits = {
		.call_timeout_ms = t->r->cfg->runner_mcp_call_timeout_s * 1000,
		.local_addresses = t->r->cfg->runner_mcp_local_addresses,
	};
	size_t i;

	if (mcp_names_init(&t->names))
		return -1;
	if (json_object_size(t->tools.mcp) &&
	    vaultdb_session_secrets(t->db, &t->r->vault, t->claim.session_id, &t->secrets)) {
		log_error("runner: session %s: its vaults: %s", t->claim.session_id,
			  db_error(t->db));
		return -1;
	}
	json_array_foreach (servers, i, srv) {
		const char *name = json_string_value(json_object_get(srv, "name"));
		const char *url = json_string_value(json_object_get(srv, "url"));
		struct turn_mcp *m;
		struct mcp_error err = { 0 };
		json_t *tools = NULL, *tool;
		size_t k;

		if (!name || !url || !json_object_get(t->tools.mcp, name) ||
		    t->nmcp >= MCP_SERVERS_MAX)
			continue;
		m = &t->mcp[t->nmcp++];
		snprintf(m->name, sizeof(m->name), "%s", name);
		{
			const char *why, *bearer = turn_bearer(t, url, &why);
			if (why) { /* the credential is there but does not open */
				err.kind = MCP_ERR_AUTH;
				snprintf(err.message, sizeof(err.message), "%s", why);
			} else {
				m->client = mcp_connect(url, bearer, &limits, turn_stop, t, &err);
			}
		}
		if (m->client && mcp_list_tools(m->client, &tools, &err)) {
			mcp_close(m->client);
			m->client = NULL;
		}
		if (!m->client) {
			struct mcp_error_arg a = { name, &err };
			snprintf(m->error, sizeof(m->error), "%s", err.message);
			if (err.kind == MCP_ERR_CANCELLED || turn_write(t, mcp_error_change, &a, 0))
				return -1;
			continue;
		}
		json_array_foreach (tools, k, tool) {
			const char *tname = json_string_value(json_object_get(tool, "name"));
			char offered[MCP_TOOL_NAME_MAX + 1];
			enum tool_policy p;

			if (!tname || toolset_mcp_policy(&t->tools, name, tname, &p) != 1 ||
			    mcp_names_add(&t->names, name, tname, t->tools.kinds, offered))
				continue;
			json_array_append_new(t->offered, mcp_tool_definition(tool, offered));
		}
		json_decref(tools);
	}
	return 0;
}

enum settle { SETTLE_MODEL, SETTLE_PARKED, SETTLE_STOP };

struct park_arg {
	json_t *ids; /* the tool uses waiting for the client (borrowed) */
	int parked;  /* some still wait: the session went idle */
};

/* Park: the ids that still wait for the client, checked again under the lock (an answer may
 * have come since the history was read), go idle with requires_action. None left: nothing is
 * written, the turn goes on. */
static enum db_status park_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	struct park_arg *a = arg;
	json_t *left = json_array(), *id;
	char *ids = NULL, *reason = NULL;
	enum db_status st = left ? DB_OK : db_fail(db, DB_NOMEM, "session %s: parking", s->id);
	size_t i;

	(void)t;
	json_array_foreach (a->ids, i, id) {
		enum ev_await w;
		int denied;

		if (st)
			break;
		st = evdb_await(db, s, json_string_value(id), &w, &denied);
		if (!st && (w == AW_CONFIRMATION || w == AW_RESULT || w == AW_CUSTOM))
			json_array_append(left, id);
	}
	if (!st && json_array_size(left) && s->self_hosted) {
		/* the client must answer: no live work item means no worker will see the wait */
		int live = 0;
		st = workdb_session_live(db, s->id, &live);
		if (!st && !live) {
			s->turn_pending = 0;
			st = db_json_dump(db, left, "session", s->id, "blocking ids", &s->blocking);
			if (!st)
				st = evdb_client_gone(db, s);
			a->parked = !st;
			json_array_clear(left);
		}
	}
	if (!st && json_array_size(left)) {
		struct idle_arg idle = { NULL, NULL, left, NULL };

		st = db_json_dump(db, left, "session", s->id, "blocking ids", &ids);
		reason = st ? NULL : malloc(strlen(ids) + 64);
		if (!st && !reason)
			st = db_fail(db, DB_NOMEM, "session %s: parking", s->id);
		if (!st) {
			sprintf(reason, "{\"type\":\"requires_action\",\"event_ids\":%s}", ids);
			idle.stop_reason = reason;
			st = idle_change(t, db, s, &idle);
			a->parked = !st;
		}
	}
	free(ids);
	free(reason);
	json_decref(left);
	return st;
}

/* The release of a parked turn happens in park_change's transaction only when it parked. */
static enum db_status park_release_change(struct turn *t, struct db *db, struct ev_session *s,
					  void *arg)
{
	enum db_status st = park_change(t, db, s, arg);

	return !st && ((struct park_arg *)arg)->parked ? turns_release(db, s) : st;
}

/* Settle every tool use of the history that has no result: run what the server runs, answer
 * what was denied, what the client let time out and what a dead runner left unknown; park on
 * what the client must answer. */
static enum settle settle_uses(struct turn *t)
{
	json_t *waiting = json_array();
	struct park_arg park = { waiting, 0 };
	long timeout = t->r->cfg->runner_tool_result_timeout_s;
	char msg[256];

	if (!waiting)
		return SETTLE_STOP;
	for (int i = 0; i < t->h.nuses; i++) {
		const struct tool_use *u = &t->h.uses[i];
		int builtin = !strcmp(u->type, "agent.tool_use");
		int rc = 0;

		if (u->answered)
			continue;
		if (u->denied) {
			const char *why = u->deny_message ? u->deny_message : "denied by the user";
			/* each kind of use is answered by its own kind of result */
			rc = u->server ? mcp_answer(t, u->id, why) : answer(t, u->id, why, 1);
		} else if (u->ask && !u->confirmed) {
			json_array_append_new(waiting, json_string(u->id));
		} else if (!strcmp(u->type, "agent.custom_tool_use") ||
			   (builtin && t->self_hosted)) {
			if (t->overdue && builtin) {
				snprintf(msg, sizeof(msg), TURN_NO_CLIENT_RESULT, timeout);
				rc = answer(t, u->id, msg, 1);
			} else {
				json_array_append_new(waiting, json_string(u->id));
			}
		} else if (builtin) {
			rc = run_builtin(t, u);
		} else {
			rc = run_mcp(t, u);
		}
		if (rc || t->stopping) {
			json_decref(waiting);
			return SETTLE_STOP;
		}
	}
	if (json_array_size(waiting) && turn_write(t, park_release_change, &park, 0)) {
		json_decref(waiting);
		return SETTLE_STOP;
	}
	json_decref(waiting);
	return park.parked ? SETTLE_PARKED : SETTLE_MODEL;
}

/* ---- the model ---- */

enum round { ROUND_TOOLS, ROUND_END, ROUND_STOP };

struct reply_arg {
	const struct model_reply *reply;
	const char *start_id;
	int is_error;
};

static enum db_status span_start_change(struct turn *t, struct db *db, struct ev_session *s,
					void *arg)
{
	(void)t;
	return emit_id(db, s, json_pack("{s:s}", "type", "span.model_request_start"), NULL, arg);
}

/* The span's end and the session's usage so far, into B. */
static enum db_status usage_events(struct turn *t, struct batch *b, struct db *db,
				   struct ev_session *s, const struct reply_arg *a)
{
	const struct model_usage *u = &a->reply->usage;
	enum db_status st;

	t->tokens[0] += u->input;
	t->tokens[1] += u->output;
	t->tokens[2] += u->cache_creation;
	t->tokens[3] += u->cache_read;
	st = emit_to(b, db, s,
		     json_pack("{s:s, s:s, s:b, s:{s:I, s:I, s:I, s:I}}", "type",
			       "span.model_request_end", "model_request_start_id", a->start_id,
			       "is_error", a->is_error, "model_usage", "input_tokens",
			       (json_int_t)u->input, "output_tokens", (json_int_t)u->output,
			       "cache_creation_input_tokens", (json_int_t)u->cache_creation,
			       "cache_read_input_tokens", (json_int_t)u->cache_read),
		     NULL, NULL);
	if (st || a->is_error)
		return st;
	return emit_to(b, db, s,
		       json_pack("{s:s, s:{s:I, s:I, s:I}}", "type", "session.usage", "usage",
				 "input_tokens", (json_int_t)t->tokens[0], "output_tokens",
				 (json_int_t)t->tokens[1], "cache_read_input_tokens",
				 (json_int_t)t->tokens[3]),
		       NULL, NULL);
}

/* A tool use that is not run (of a tool the agent does not offer, or cut short at STOP, the
 * reply's stop reason, when not NULL): announced denied, answered with an error; into OUT. */
static enum db_status refuse(struct batch *out, struct db *db, struct ev_session *s,
			     const struct model_block *b, const char *stop)
{
	char id[64], msg[TURN_REFUSE_MSG_MAX];
	enum db_status st =
		emit_to(out, db, s,
			json_pack("{s:s, s:s, s:O, s:s}", "type", "agent.tool_use", "name", b->name,
				  "input", b->input, "evaluated_permission", "deny"),
			NULL, id);

	if (stop)
		snprintf(msg, sizeof(msg), TURN_CUT_INPUT, stop, b->name);
	else
		snprintf(msg, sizeof(msg), TURN_UNAVAILABLE, b->name);
	return st ? st
		  : emit_to(out, db, s,
			    json_pack("{s:s, s:s, s:[{s:s, s:s}], s:b}", "type",
				      "agent.tool_result", "tool_use_id", id, "content", "type",
				      "text", "text", msg, "is_error", 1),
			    id, NULL);
}

/* The reply's blocks as events, in their order: thinking, messages, tool uses; appended
 * together (one statement for a few events). */
static enum db_status reply_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	const struct reply_arg *a = arg;
	enum db_status st = DB_OK;
	struct batch out;

	out.n = 0;
	for (size_t i = 0; !st && i < a->reply->n; i++) {
		const struct model_block *b = &a->reply->blocks[i];
		enum tool_policy policy = TOOL_ALLOW;
		const char *perm;

		switch (b->type) {
		case MB_THINKING:
		case MB_REDACTED_THINKING:
			st = emit_to(&out, db, s, json_pack("{s:s}", "type", "agent.thinking"),
				     NULL, NULL);
			break;
		case MB_TEXT:
			if (b->text && *b->text)
				st = emit_to(&out, db, s,
					     json_pack("{s:s, s:[{s:s, s:s}]}", "type",
						       "agent.message", "content", "type", "text",
						       "text", b->text),
					     NULL, NULL);
			break;
		case MB_TOOL_USE:
			if (b->incomplete) {
				st = refuse(&out, db, s, b, a->reply->stop_reason);
				break;
			}
			switch (toolset_kind(&t->tools, b->name, &policy)) {
			case TOOL_CUSTOM:
				st = emit_to(&out, db, s,
					     json_pack("{s:s, s:s, s:O}", "type",
						       "agent.custom_tool_use", "name", b->name,
						       "input", b->input),
					     NULL, NULL);
				break;
			case TOOL_BUILTIN:
				perm = policy == TOOL_ASK ? "ask" : "allow";
				st = emit_to(&out, db, s,
					     json_pack("{s:s, s:s, s:O, s:s}", "type",
						       "agent.tool_use", "name", b->name, "input",
						       b->input, "evaluated_permission", perm),
					     NULL, NULL);
				break;
			default: {
				const char *server, *tool;

				if (mcp_names_find(&t->names, b->name, &server, &tool)) {
					st = refuse(&out, db, s, b, NULL); /* not offered */
					break;
				}
				if (toolset_mcp_policy(&t->tools, server, tool, &policy) != 1)
					policy = TOOL_ASK;
				perm = policy == TOOL_ALLOW ? "allow" : "ask";
				st = emit_to(&out, db, s,
					     json_pack("{s:s, s:s, s:s, s:O, s:s}", "type",
						       "agent.mcp_tool_use", "name", tool,
						       "mcp_server_name", server, "input", b->input,
						       "evaluated_permission", perm),
					     NULL, NULL);
				break;
			}
			}
			break;
		}
	}
	if (!st)
		st = usage_events(t, &out, db, s, a);
	return batch_end(db, s, &out, st);
}

static enum db_status span_error_change(struct turn *t, struct db *db, struct ev_session *s,
					void *arg)
{
	struct batch out;

	out.n = 0;
	return batch_end(db, s, &out, usage_events(t, &out, db, s, arg));
}

struct retry_arg {
	json_t *error; /* stolen */
	int back;      /* 0: to rescheduling, 1: back to running */
};

static enum db_status retry_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	struct retry_arg *a = arg;
	enum db_status st = DB_OK;

	(void)t;
	if (a->back)
		return evdb_status(db, s, SES_RUNNING, NULL, NULL);
	st = evdb_status(db, s, SES_RESCHEDULING, NULL, NULL);
	if (!st)
		st = emit(db, s, a->error, NULL);
	else
		json_decref(a->error);
	a->error = NULL;
	return st;
}

/* The session.error type of a model failure. */
static const char *model_error_type(const struct model_reply *r)
{
	if (r->http_status == 429 || !strcmp(r->error_type, "rate_limit_error"))
		return "model_rate_limited_error";
	if (r->http_status == 529 || !strcmp(r->error_type, "overloaded_error"))
		return "model_overloaded_error";
	return "model_request_failed_error";
}

/* The request: the agent's model, system and tools, the history. New reference. */
static json_t *request_body(struct turn *t)
{
	json_t *model = json_object_get(t->agent, "model"), *system;
	json_t *body;

	if (json_is_object(model))
		model = json_object_get(model, "id");
	body = json_pack("{s:O?, s:I, s:O}", "model", model, "max_tokens",
			 (json_int_t)t->r->cfg->model_max_tokens, "messages", t->h.messages);
	system = json_object_get(t->agent, "system");
	if (body && json_is_string(system) && *json_string_value(system))
		json_object_set(body, "system", system);
	if (body && json_array_size(t->offered))
		json_object_set(body, "tools", t->offered);
	return body;
}

/* The stop_details of a session idle after the refusal R: {type: "refusal", category,
 * explanation}, each null when the reply names none. New reference, NULL when out of memory. */
static json_t *refusal_details(const struct model_reply *r)
{
	const json_t *c = json_object_get(r->stop_details, "category"),
		     *e = json_object_get(r->stop_details, "explanation");

	return json_pack("{s:s, s:O, s:O}", "type", "refusal", "category",
			 json_is_string(c) ? c : json_null(), "explanation",
			 json_is_string(e) ? e : json_null());
}

/* One model request, retried as the configuration says. */
static enum round model_round(struct turn *t)
{
	const struct config *cfg = t->r->cfg;
	struct model_reply reply;
	struct reply_arg ra = { &reply, NULL, 0 };
	char start_id[64];
	json_t *body = request_body(t);
	enum model_outcome out = MODEL_FAILED;
	enum round ret = ROUND_STOP;
	long delay = cfg->model_backoff_ms;

	memset(&reply, 0, sizeof(reply));
	ra.start_id = start_id;
	json_decref(t->refusal);
	t->refusal = NULL;
	if (!body || turn_write(t, span_start_change, start_id, 0))
		goto out;
	for (long attempt = 0;; attempt++) {
		model_reply_release(&reply);
		out = model_call(t->model, body, turn_stop, t, &reply);
		if (out != MODEL_RETRY || attempt >= cfg->model_max_retries)
			break;
		{
			struct retry_arg a = { session_error(model_error_type(&reply),
							     reply.error_message, "retrying"),
					       0 };
			long wait = reply.retry_after_ms >= 0 ? reply.retry_after_ms : delay;
			if (turn_write(t, retry_change, &a, 0) || turn_sleep(t, wait))
				goto out;
			a.back = 1;
			if (turn_write(t, retry_change, &a, 0))
				goto out;
		}
		delay = delay * 2 > cfg->model_backoff_cap_ms ? cfg->model_backoff_cap_ms
							      : delay * 2;
	}
	if (out == MODEL_CANCELLED || t->stopping || t->lost) {
		ra.is_error = 1; /* the span ends with the request */
		if (!t->lost)
			turn_write(t, span_error_change, &ra, 0);
		goto out;
	}
	if (out != MODEL_OK) {
		ra.is_error = 1;
		if (turn_write(t, span_error_change, &ra, 0))
			goto out;
		turn_idle(t,
			  out == MODEL_RETRY ? "{\"type\":\"retries_exhausted\"}" : STOP_END_TURN,
			  session_error(model_error_type(&reply), reply.error_message,
					out == MODEL_RETRY ? "exhausted" : "terminal"));
		goto out;
	}
	if (turn_write(t, reply_change, &ra, 0))
		goto out;
	/* the session's idle says so, with the reply's category and explanation */
	if (!strcmp(reply.stop_reason, "refusal") && !(t->refusal = refusal_details(&reply)))
		goto out;
	ret = strcmp(reply.stop_reason, "tool_use") ? ROUND_END : ROUND_TOOLS;
	/* a call cut short was answered with an error: the model makes it again */
	for (size_t i = 0; i < reply.n; i++)
		if (reply.blocks[i].incomplete)
			ret = ROUND_TOOLS;
out:
	model_reply_release(&reply);
	json_decref(body);
	return ret;
}

/* ---- the turn ---- */

/* The end of a turn, under the lock: messages queued while it ran start the next one (*ARG
 * = how many; the session stays running), else the session goes idle (end_turn, or refusal
 * when the model refused) and the claim ends. */
static enum db_status finish_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	struct idle_arg idle = { t->refusal ? STOP_REFUSAL : STOP_END_TURN, NULL, NULL, NULL };
	char *details = NULL;
	int *queued = arg;
	enum db_status st = evdb_process_queued(db, s, queued);

	if (st || *queued)
		return st;
	if (t->refusal)
		st = db_json_dump(db, t->refusal, "session", s->id, "stop details", &details);
	idle.stop_details = details;
	if (!st)
		st = idle_change(t, db, s, &idle);
	free(details);
	return st ? st : turns_release(db, s);
}

/* A turn taken because the client's results are overdue resumes: running again. */
static enum db_status resume_change(struct turn *t, struct db *db, struct ev_session *s, void *arg)
{
	(void)t;
	(void)arg;
	free(s->blocking);
	s->blocking = NULL;
	s->turn_pending = 1;
	return evdb_status(db, s, SES_RUNNING, NULL, NULL);
}

/* The interrupted turn ends, under the lock: idle, end_turn (what was queued when the interrupt
 * came, the interrupt itself processed: docs/api.md §7). Messages sent since (*ARG = how many)
 * start the next turn at once, as at a turn's end (finish_change); else the claim ends. */
static enum db_status interrupted_change(struct turn *t, struct db *db, struct ev_session *s,
					 void *arg)
{
	struct idle_arg idle = { STOP_END_TURN, NULL, NULL, NULL };
	int *queued = arg;
	enum db_status st = idle_change(t, db, s, &idle);

	/* the idle saved before a next turn is pending: interrupt_at outlives the save of a
	 * pending turn (evdb_save), and the next turn must not find it */
	if (!st)
		st = evdb_save(db, s);
	if (!st)
		st = evdb_process_queued(db, s, queued);
	if (st)
		return st;
	if (!*queued)
		return turns_release(db, s);
	s->turn_pending = 1;
	return evdb_status(db, s, SES_RUNNING, NULL, NULL);
}

/* The session's agent snapshot (with its session-local MCP servers) and environment type. */
static int turn_load(struct turn *t, char *err, size_t errsz)
{
	static const char sql[] = "SELECT agent_snapshot, mcp_servers,"
				  " JSON_VALUE(environment_config, '$.type') = 'self_hosted',"
				  " turn_pending FROM sessions WHERE id = ?";
	struct db_rows rows;
	enum db_status st =
		db_exec(t->db, sql, DB_PARAMS(DB_STR(t->claim.session_id)), &rows, NULL);
	json_t *mcp = NULL;
	int rc = -1;

	if (st || !rows.nrows) {
		snprintf(err, errsz, "%s", st ? db_error(t->db) : "the session is gone");
		goto out;
	}
	t->agent = json_loads(db_cell(&rows, 0, 0), 0, NULL);
	if (db_cell(&rows, 0, 1))
		mcp = json_loads(db_cell(&rows, 0, 1), 0, NULL);
	t->self_hosted = db_cell(&rows, 0, 2) && atoi(db_cell(&rows, 0, 2));
	t->overdue = !atoi(db_cell(&rows, 0, 3));
	if (!t->agent) {
		snprintf(err, errsz, "the session's agent snapshot does not parse");
		goto out;
	}
	if (mcp)
		json_object_set(t->agent, "mcp_servers", mcp);
	if (toolset_load(json_object_get(t->agent, "tools"), &t->tools, err, errsz))
		goto out;
	t->offered = json_copy(t->tools.definitions);
	if (!t->offered) {
		snprintf(err, errsz, "out of memory");
		goto out;
	}
	rc = 0;
out:
	json_decref(mcp);
	db_rows_free(&rows);
	return rc;
}

/* The history of the log as it stands. */
static int turn_history(struct turn *t)
{
	struct db_rows rows = { 0 };
	int rc;

	history_release(&t->h);
	if (evdb_session_events(t->db, t->claim.session_id, &rows)) {
		log_error("runner: session %s: %s", t->claim.session_id, db_error(t->db));
		return -1;
	}
	rc = history_build(&rows, &t->names, &t->h);
	db_rows_free(&rows);
	if (rc)
		log_error("runner: session %s: its history does not parse", t->claim.session_id);
	return rc;
}

static void turn_free(struct turn *t)
{
	for (int i = 0; i < t->nmcp; i++)
		mcp_close(t->mcp[i].client);
	mcp_names_release(&t->names);
	vault_secrets_free(&t->secrets);
	json_decref(t->offered);
	json_decref(t->refusal);
	turn_sandbox_close(t->sandbox);
	history_release(&t->h);
	toolset_release(&t->tools);
	json_decref(t->agent);
	model_free(t->model);
	db_free(t->db);
}

/* The rounds of a turn (model request, tools) until it ends: 0 when it ended (idle, or parked
 * on what the client must answer), 1 when it stopped (an interrupt, the claim lost, a failure
 * logged). */
static int turn_rounds(struct turn *t)
{
	const struct config *cfg = t->r->cfg;
	char err[TURN_ERR_MAX];
	long round_trips = 0;

	for (;;) {
		enum settle settled;
		enum round round;
		int queued = 0;
		long writes;

		if (turn_stop(t) || turn_history(t))
			return 1;
		writes = t->writes;
		settled = settle_uses(t);
		if (settled == SETTLE_PARKED)
			return 0;
		if (settled == SETTLE_STOP)
			return 1;
		t->overdue = 0;
		/* the results settling wrote go to the model: the log read again (not when it
		 * wrote nothing) */
		if (t->writes != writes && turn_history(t))
			return 1;
		if (++round_trips > cfg->runner_max_round_trips) {
			snprintf(err, sizeof(err),
				 "the turn made %ld model requests, the most one "
				 "may ([runner] max_round_trips)",
				 cfg->runner_max_round_trips);
			turn_idle(t, STOP_END_TURN,
				  session_error("tool_use_limit_reached_error", err, "terminal"));
			return 0;
		}
		round = model_round(t);
		if (round == ROUND_STOP)
			return 1;
		if (round == ROUND_TOOLS)
			continue;
		/* the turn ended: messages that came while it ran start the next one */
		if (turn_write(t, finish_change, &queued, 0))
			return 1;
		if (!queued)
			return 0;
	}
}

int turn_run(const struct runner *r, const struct turn_claim *c)
{
	const struct config *cfg = r->cfg;
	struct turn t;
	char err[TURN_ERR_MAX];
	int ret = 1;

	memset(&t, 0, sizeof(t));
	t.r = r;
	t.claim = *c;
	t.renewed_ms = clock_mono_ms();
	t.db = db_new(cfg);
	t.model = model_new(&r->model);
	if (!t.db || !t.model) {
		log_error("runner: out of memory");
		goto out;
	}
	if (db_connect(t.db)) {
		log_error("runner: database: %s", db_error(t.db));
		ret = 3;
		goto out;
	}
	if (turn_load(&t, err, sizeof(err))) {
		turn_idle(&t, STOP_END_TURN, session_error("unknown_error", err, "terminal"));
		goto out;
	}
	if (r->model_missing[0]) {
		turn_idle(
			&t, STOP_END_TURN,
			session_error("model_request_failed_error", r->model_missing, "terminal"));
		goto out;
	}
	if (t.overdue && turn_write(&t, resume_change, NULL, 0))
		goto out;
	if (turn_mcp_open(&t))
		goto out;
	for (;;) {
		int queued = 0;

		ret = turn_rounds(&t);
		if (!ret || !t.stopping || t.lost)
			break;
		/* interrupted: the turn ends idle; messages sent since start the next one */
		ret = 0;
		if (turn_write(&t, interrupted_change, &queued, 0) || !queued)
			break;
		t.stopping = 0;
	}
out:
	turn_free(&t);
	return ret;
}
