/* /v1/sessions/{id}/events (docs/api.md §7, docs/events.md): send, list, and the stream's
 * authorisation (nginx holds the streams; handlers/stream.c serves them where it cannot). A
 * send checks every event, then in one transaction locks the session, checks each answer
 * against the log, appends the events and the status changes they cause. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../db/events.h"
#include "../db/sessions.h"
#include "../db/work.h"
#include "cursor.h"
#include "event_validate.h"
#include "events.h"
#include "handlers.h"
#include "resource.h"

#define EVENTS_CURSOR_KIND "sevt"
#define OUTCOME_ID_PREFIX "outc_"
/* The error_code of a refused answer (docs/api.md §7). */
#define CODE_NOT_FOUND "tool_use_not_found"
#define CODE_NOT_ASKED "tool_use_not_awaiting_confirmation"
#define CODE_ANSWERED "tool_use_already_answered"
#define CODE_NOT_APPROVED "tool_use_not_approved"
#define CODE_DENIED "tool_use_denied"
#define CODE_NOT_SELF_HOSTED "tool_result_not_self_hosted"
#define CODE_ARCHIVED "session_archived"
#define CODE_TERMINATED "session_terminated"
#define STOP_END_TURN "{\"type\":\"end_turn\"}"

/* What the client may still send for a tool use (db/events.h evdb_await). */
static int awaits_client(enum ev_await a)
{
	return a == AW_CONFIRMATION || a == AW_RESULT || a == AW_CUSTOM;
}

/* ---- send ---- */

struct send_ctx {
	struct request *req;
	json_t *events;
	struct ev_checked chk[EVENTS_SEND_MAX];
	char ids[EVENTS_SEND_MAX][RESOURCE_ID_MAX];
	char *bodies[EVENTS_SEND_MAX]; /* stored (and echoed) text of each */
	int queued[EVENTS_SEND_MAX];
	char now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	int found;
	char work_id[RESOURCE_ID_MAX]; /* a new work item's, when a self_hosted turn needs one */
	int work_queued;
	char env_id[RESOURCE_ID_MAX];
	struct verr err;
};

/* A turn starts: the runner (docs/events.md) takes sessions with a pending turn; a
 * self_hosted session whose workers are done with it gets a new work item (docs/work-queue.md). */
static enum db_status start_turn(struct db *db, struct send_ctx *c, struct ev_session *s)
{
	enum db_status st = DB_OK;

	free(s->blocking); /* a new turn supersedes what the last one waited for */
	s->blocking = NULL;
	s->turn_pending = 1;
	if (s->self_hosted && s->environment_id[0] && !c->work_queued) {
		st = workdb_requeue(db, c->work_id, s->workspace_id, s->environment_id, s->id,
				    s->now, &c->work_queued);
		snprintf(c->env_id, sizeof(c->env_id), "%s", s->environment_id);
	}
	return st ? st : evdb_status(db, s, SES_RUNNING, NULL, NULL);
}

/* Refuse answer I of C when its tool use is not waiting for it. 0: it may be appended. */
static int answer_check(struct send_ctx *c, unsigned i, const struct ev_session *s, enum ev_await a,
			int denied)
{
	const struct ev_checked *e = &c->chk[i];
	const char *field = e->kind == EVK_CUSTOM_RESULT ? "custom_tool_use_id" : "tool_use_id";
	char echo[VERR_ECHO_BUF];

	verr_echo(echo, e->ref, VERR_ECHO_CHARS);
	if (e->kind == EVK_TOOL_RESULT && !s->self_hosted)
		return verr_set(&c->err, 400, CODE_NOT_SELF_HOSTED,
				"'events[%u].type': user.tool_result is accepted only by sessions "
				"of self_hosted environments (this session runs its tools itself)",
				i);
	if (a == AW_UNKNOWN)
		return verr_set(&c->err, 400, CODE_NOT_FOUND,
				"'events[%u].%s' '%s' is not a tool use of this session", i, field,
				echo);
	if (a == AW_ANSWERED)
		return verr_set(&c->err, 400, CODE_ANSWERED,
				"'events[%u].%s' '%s' has been answered already", i, field, echo);
	switch (e->kind) {
	case EVK_CONFIRMATION:
		if (a == AW_CONFIRMATION)
			return 0;
		if (a == AW_CUSTOM)
			return verr_set(
				&c->err, 400, CODE_NOT_ASKED,
				"'events[%u].tool_use_id' '%s' is a custom tool use: answer "
				"it with user.custom_tool_result",
				i, echo);
		return verr_set(&c->err, 400, CODE_NOT_ASKED,
				"'events[%u].tool_use_id' '%s' is not waiting for a confirmation "
				"(%s)",
				i, echo,
				denied		 ? "it was denied"
				: a == AW_RESULT ? "it was allowed; its result is awaited"
						 : "it was confirmed already or asked for none");
	case EVK_CUSTOM_RESULT:
		if (a == AW_CUSTOM)
			return 0;
		return verr_set(&c->err, 400, CODE_NOT_FOUND,
				"'events[%u].custom_tool_use_id' '%s' is not a custom tool use of "
				"this session",
				i, echo);
	default: /* EVK_TOOL_RESULT */
		if (a == AW_RESULT)
			return 0;
		if (a == AW_CONFIRMATION)
			return verr_set(&c->err, 400, CODE_NOT_APPROVED,
					"'events[%u].tool_use_id' '%s' waits for its "
					"user.tool_confirmation first",
					i, echo);
		if (denied)
			return verr_set(
				&c->err, 400, CODE_DENIED,
				"'events[%u].tool_use_id' '%s' was denied: it has no result", i,
				echo);
		return verr_set(
			&c->err, 400, CODE_NOT_FOUND,
			"'events[%u].tool_use_id' '%s' is not waiting for a user.tool_result", i,
			echo);
	}
}

/* After the answers: the ids the last requires_action listed that still wait. None: the turn
 * resumes; fewer: the idle is announced again with the rest. */
static enum db_status resolve_blocking(struct db *db, struct send_ctx *c, struct ev_session *s)
{
	json_t *ids = s->blocking ? json_loads(s->blocking, 0, NULL) : NULL, *left = json_array();
	char *text = NULL, *reason = NULL;
	enum db_status st = DB_OK;
	size_t i;
	json_t *id;

	if (!ids || !left) {
		st = s->blocking && !ids ? db_fail(db, DB_CORRUPT,
						   "session %s: stored blocking does "
						   "not parse",
						   s->id)
					 : DB_OK;
		goto out;
	}
	json_array_foreach (ids, i, id) {
		enum ev_await a;
		int denied;

		st = evdb_await(db, s, json_string_value(id), &a, &denied);
		if (st)
			goto out;
		if (awaits_client(a))
			json_array_append(left, id);
	}
	if (json_array_size(left) == json_array_size(ids))
		goto out;
	if (!json_array_size(left)) {
		st = start_turn(db, c, s);
		goto out;
	}
	st = db_json_dump(db, left, "session", s->id, "blocking ids", &text);
	if (st)
		goto out;
	reason = malloc(strlen(text) + 64);
	if (!reason) {
		st = db_fail(db, DB_NOMEM, "session %s: its requires_action", s->id);
		goto out;
	}
	sprintf(reason, "{\"type\":\"requires_action\",\"event_ids\":%s}", text);
	free(s->blocking);
	s->blocking = text;
	text = NULL;
	st = evdb_status(db, s, SES_IDLE, reason, NULL);
out:
	json_decref(ids);
	json_decref(left);
	free(text);
	free(reason);
	return st;
}

/* Append event I of C to S, and what it causes. *ANSWERED = 1 for an answer. */
static enum db_status send_one(struct db *db, struct send_ctx *c, unsigned i, struct ev_session *s,
			       int *answered)
{
	const struct ev_checked *e = &c->chk[i];
	struct ev_new ev = { .id = c->ids[i], .type = e->type, .body = c->bodies[i] };
	enum db_status st;
	enum ev_await a;
	int denied, n;

	switch (e->kind) {
	case EVK_MESSAGE:
		ev.queued = s->turn_pending; /* a running turn takes it next */
		break;
	case EVK_SYSTEM:
		ev.queued = c->queued[i - 1];
		break;
	case EVK_CONFIRMATION:
	case EVK_CUSTOM_RESULT:
	case EVK_TOOL_RESULT:
		st = evdb_await(db, s, e->ref, &a, &denied);
		if (st)
			return st;
		if (answer_check(c, i, s, a, denied))
			return DB_OK;
		ev.ref_id = e->ref;
		*answered = 1;
		break;
	default:
		break;
	}
	c->queued[i] = ev.queued;
	st = evdb_append(db, s, &ev);
	if (st)
		return st;
	if (e->kind == EVK_MESSAGE && !ev.queued)
		return start_turn(db, c, s);
	if (e->kind != EVK_INTERRUPT)
		return DB_OK;
	if (s->turn_pending) { /* the runner stops the turn; what was queued is cancelled */
		s->interrupt = 1;
		return evdb_process_queued(db, s, &n);
	}
	if (s->blocking) { /* what the idle waited for is abandoned */
		free(s->blocking);
		s->blocking = NULL;
		return evdb_status(db, s, SES_IDLE, STOP_END_TURN, NULL);
	}
	return DB_OK;
}

static enum db_status send_tx(struct db *db, void *arg)
{
	struct send_ctx *c = arg;
	struct request *req = c->req;
	struct db_key k;
	struct ev_session s;
	enum db_status st;
	int answered = 0;

	c->err.status = 0;
	c->work_queued = 0; /* a retried attempt: the work item of one rolled back is not there */
	resource_key(&RES_SESSION, req, req->params[0], &k);
	st = evdb_lock(db, &k, c->now_db, &s, &c->found);
	if (st || !c->found)
		goto out;
	if (s.archived) {
		verr_set(&c->err, 400, CODE_ARCHIVED,
			 "session '%s' is archived: it takes no events", s.id);
		goto out;
	}
	if (!strcmp(s.status, SES_TERMINATED)) {
		verr_set(&c->err, 400, CODE_TERMINATED,
			 "session '%s' is terminated: it takes no events", s.id);
		goto out;
	}
	for (unsigned i = 0; i < json_array_size(c->events) && !st && !c->err.status; i++)
		st = send_one(db, c, i, &s, &answered);
	if (st || c->err.status)
		goto out;
	if (answered && !s.turn_pending && s.blocking)
		st = resolve_blocking(db, c, &s);
	if (!st)
		st = evdb_save(db, &s);
out:
	ev_session_release(&s);
	/* a refused event undoes the events of the request appended before it: nothing is
	 * committed (events_send answers the refusal) */
	return !st && c->err.status ? DB_CONFLICT : st;
}

/* The stored text of event I: the event as sent with "type" first (db/events.h), plus what the
 * server adds (a user.define_outcome's outcome_id and max_iterations). NULL when out of memory
 * (errno ENOMEM) or out of random ids. */
static char *send_body(struct send_ctx *c, unsigned i)
{
	json_t *ev = json_array_get(c->events, i), *o = json_object(), *v;
	const char *key;
	char *text = NULL;

	if (!o || json_object_set(o, "type", json_object_get(ev, "type")))
		goto out;
	json_object_foreach (ev, key, v)
		if (strcmp(key, "type") && json_object_set(o, key, v))
			goto out;
	if (c->chk[i].kind == EVK_OUTCOME) {
		char outcome[RESOURCE_ID_MAX];

		if (random_id(outcome, sizeof(outcome), OUTCOME_ID_PREFIX, ID_RANDOM_LEN))
			goto out;
		if (json_object_set_new(o, "outcome_id", json_string(outcome)))
			goto out;
		v = json_object_get(o, "max_iterations");
		if ((!v || json_is_null(v)) &&
		    json_object_set_new(o, "max_iterations",
					json_integer(EVENTS_OUTCOME_ITER_DEFAULT)))
			goto out;
	}
	text = json_dumps(o, JSON_COMPACT);
out:
	json_decref(o);
	return text;
}

/* {"id":ID,"processed_at":AT|null, then the rest of BODY (which starts with {"type":). */
void event_put(struct strbuf *b, const char *id, const char *processed_at, const char *body)
{
	TEXT_PUT_LIT(b, "{\"id\":");
	text_put_str(b, id, strlen(id));
	text_put_member(b, ",\"processed_at\":", processed_at);
	TEXT_PUT_LIT(b, ",");
	strbuf_add(b, body + 1, strlen(body + 1));
}

int event_session_found(struct worker *w, struct request *req, struct response *resp)
{
	struct db_rows ses = { 0 };
	enum db_status st = resource_get(&RES_SESSION, w->db, req, req->params[0], 0, &ses);
	int found = !st && ses.nrows;

	db_rows_free(&ses);
	if (st)
		handle_db_error(w, req, resp, st);
	else if (!found)
		resp_error(resp, req, 404, NULL, "session '%s' not found", req->params[0]);
	return found ? 0 : -1;
}

void events_send(struct worker *w, struct request *req, struct response *resp)
{
	struct send_ctx c = { .req = req };
	struct strbuf b = STRBUF_INIT;
	enum db_status st;
	const char *key;
	json_t *v;
	size_t n = 0;

	if (resource_check(&RES_SESSION, req, resp, req->params[0]))
		return;
	/* a body refused names its field, but only to a caller who may see the session */
	json_object_foreach (req->json, key, v)
		if (strcmp(key, "events")) {
			char echo[VERR_ECHO_BUF];

			if (!event_session_found(w, req, resp))
				resp_error(resp, req, 400, NULL, "unknown field '%s'",
					   verr_echo(echo, key, VERR_ECHO_CHARS));
			return;
		}
	c.events = json_object_get(req->json, "events");
	if (events_check(c.events, c.chk, &c.err)) {
		if (!event_session_found(w, req, resp))
			respond_verr(req, resp, &c.err);
		return;
	}
	n = json_array_size(c.events);
	clock_now(c.now_db, c.now_api);
	if (random_id(c.work_id, sizeof(c.work_id), WORK_ID_PREFIX, ID_RANDOM_LEN)) {
		respond_internal(req, resp, "no random id");
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (random_id(c.ids[i], sizeof(c.ids[i]), EVENT_ID_PREFIX, ID_RANDOM_LEN) ||
		    !(c.bodies[i] = send_body(&c, (unsigned)i))) {
			respond_internal(req, resp,
					 errno == ENOMEM ? "out of memory" : "no random id");
			goto out;
		}
	st = db_tx(w->db, send_tx, &c);
	if (st == DB_CONFLICT && c.err.status) /* refused, rolled back */
		st = DB_OK;
	if (respond_refusal(w, req, resp, st, &c.err))
		goto out;
	if (!c.found) {
		resp_error(resp, req, 404, NULL, "session '%s' not found", req->params[0]);
		goto out;
	}
	TEXT_PUT_LIT(&b, "{\"data\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			TEXT_PUT_LIT(&b, ",");
		event_put(&b, c.ids[i], c.queued[i] ? NULL : c.now_api, c.bodies[i]);
	}
	TEXT_PUT_LIT(&b, "]}");
	text_respond(resp, req, 200, &b);
	/* after the commit: polls blocked on the environment take the new item now */
	if (c.work_queued && (st = workdb_wake(w->db, c.env_id)))
		log_warn("waking polls of %s: %s", c.env_id, db_error(w->db));
out:
	for (size_t i = 0; i < n; i++)
		free(c.bodies[i]);
}

/* ---- list ---- */

#define EVENTS_Q_TYPES "types[]"
#define EVENTS_FILTERS_TEXT "order, types[] or created_at[...]"
#define EVENTS_FILTER_HASH 16 /* bytes of the filters' SHA-256 a cursor carries */

/* The query parameters a list takes (docs/api.md §7); anything else is refused. */
static const char *const list_params[] = { "limit",
					   "page",
					   "order",
					   EVENTS_Q_TYPES,
					   "types",
					   "created_at[gt]",
					   "created_at[gte]",
					   "created_at[lt]",
					   "created_at[lte]",
					   "beta",
					   NULL };

/* The types[] of REQ joined with commas into OUT (size EVENTS_TYPES_TEXT_MAX), "" when none. */
#define EVENTS_TYPES_TEXT_MAX (EVENTS_TYPES_MAX * EVENTS_TYPE_MAX)
static int list_types(struct request *req, struct response *resp, char *out)
{
	int n = 0;

	out[0] = '\0';
	for (int i = 0; i < req->nquery; i++) {
		const char *name = req->query[i].name, *t = req->query[i].value;
		size_t len = strlen(out);

		if (strcmp(name, EVENTS_Q_TYPES) && strcmp(name, "types"))
			continue;
		if (++n > EVENTS_TYPES_MAX) {
			resp_error(resp, req, 400, NULL, "'types[]' may be given at most %d times",
				   EVENTS_TYPES_MAX);
			return -1;
		}
		if (!*t || strlen(t) >= EVENTS_TYPE_MAX || strpbrk(t, ", ")) {
			resp_error(resp, req, 400, NULL, "'types[]' must be event types");
			return -1;
		}
		snprintf(out + len, EVENTS_TYPES_TEXT_MAX - len, "%s%s", len ? "," : "", t);
	}
	return 0;
}

void events_list(struct worker *w, struct request *req, struct response *resp)
{
	char types[EVENTS_TYPES_TEXT_MAX], text[RESOURCE_FILTER_MAX + EVENTS_TYPES_TEXT_MAX];
	char times[4][CLOCK_DB_LEN], pos[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX];
	char filter[2 * EVENTS_FILTER_HASH + 1], next[CURSOR_MAX];
	unsigned char hash[SHA256_LEN];
	static const char *const time_names[4] = { "created_at[gt]", "created_at[gte]",
						   "created_at[lt]", "created_at[lte]" };
	const char *order = req_query(req, "order");
	struct ev_query q = { .session_id = req->params[0] };
	struct db_rows rows = { 0 }, ses = { 0 };
	struct strbuf b = STRBUF_INIT;
	long long limit;
	enum db_status st;
	unsigned shown;
	int paged;

	for (int i = 0; i < req->nquery; i++)
		if (!verr_in_list(req->query[i].name, list_params)) {
			char echo[VERR_ECHO_BUF];
			resp_error(resp, req, 400, NULL, "unknown query parameter '%s'",
				   verr_echo(echo, req->query[i].name, VERR_ECHO_CHARS));
			return;
		}
	if (resource_check(&RES_SESSION, req, resp, req->params[0]) ||
	    query_limit(req, resp, LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT, &limit) ||
	    list_types(req, resp, types))
		return;
	if (order && strcmp(order, "asc")) {
		if (strcmp(order, "desc")) {
			resp_error(resp, req, 400, NULL, "'order' must be asc or desc");
			return;
		}
		q.desc = 1;
	}
	for (int i = 0; i < 4; i++)
		if (query_time(req, resp, time_names[i], times[i]))
			return;
	/* the cursor is bound to the session and every filter, by their hash: types[] may be
	 * longer than a cursor holds */
	snprintf(text, sizeof(text), "%s;%s;%s;%s;%s;%s;%s", req->params[0], q.desc ? "d" : "a",
		 types, times[0], times[1], times[2], times[3]);
	sha256(text, strlen(text), hash);
	hex_encode(hash, EVENTS_FILTER_HASH, filter);
	if (page_parse(w, req, resp, EVENTS_CURSOR_KIND, filter, EVENTS_FILTERS_TEXT, pos, id,
		       &paged))
		return;
	q.after_ord = paged ? strtoll(pos, NULL, 10) : q.desc ? LLONG_MAX : 0;
	q.rows = limit + 1;
	q.bytes = LIST_PAGE_BYTES_MAX; /* what list_page_rows may show: read no more bodies */
	q.types = types[0] ? types : NULL;
	q.gt = times[0][0] ? times[0] : NULL;
	q.gte = times[1][0] ? times[1] : NULL;
	q.lt = times[2][0] ? times[2] : NULL;
	q.lte = times[3][0] ? times[3] : NULL;
	/* the session first: another workspace's (or account's) session is a 404, like none */
	st = resource_get(&RES_SESSION, w->db, req, req->params[0], 0, &ses);
	if (!st && ses.nrows)
		st = evdb_list(w->db, &q, &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		goto out;
	}
	if (!ses.nrows) {
		resp_error(resp, req, 404, NULL, "session '%s' not found", req->params[0]);
		goto out;
	}
	shown = list_page_rows(&rows, limit);
	TEXT_PUT_LIT(&b, "{\"data\":[");
	for (unsigned r = 0; r < shown; r++) {
		if (r)
			TEXT_PUT_LIT(&b, ",");
		event_put(&b, db_cell(&rows, r, EV_C_ID), db_cell(&rows, r, EV_C_PROCESSED),
			  db_cell(&rows, r, EV_C_BODY));
	}
	TEXT_PUT_LIT(&b, "],\"next_page\":");
	if (shown && rows.nrows > shown &&
	    !cursor_make(w->cursor_key, sizeof(w->cursor_key), EVENTS_CURSOR_KIND, filter,
			 db_cell(&rows, shown - 1, EV_C_ORD), db_cell(&rows, shown - 1, EV_C_ID),
			 next))
		text_put_str(&b, next, strlen(next));
	else
		TEXT_PUT_LIT(&b, "null");
	TEXT_PUT_LIT(&b, "}");
	text_respond(resp, req, 200, &b);
out:
	db_rows_free(&rows);
	db_rows_free(&ses);
}
