#include "events.h"

#include "../common/crypto.h"

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_TS(col) "DATE_FORMAT(" col ", '%Y-%m-%dT%H:%i:%s.%fZ')"
/* clang-format off */
#define EV_SELECT \
	"SELECT seq, id, session_id, ord, type, ref_id, " API_TS("processed_at") ", body" \
	" FROM session_events "
/* The runtime state of a session, read locked. The environment's type is the captured
 * configuration's (what the session runs with, whatever the environment became since). */
#define EV_LOCK_SELECT \
	"SELECT s.id, s.status, s.event_pos, s.turn_pending, s.archived_at IS NOT NULL," \
	" JSON_VALUE(s.environment_config, '$.type') = 'self_hosted', s.blocking," \
	" s.interrupt_at IS NOT NULL, s.runner_owner, s.runner_attempt, s.workspace_id," \
	" s.environment_id" \
	" FROM sessions s "
/* clang-format on */
#define BODY_PREFIX "{\"type\":"

void ev_session_release(struct ev_session *s)
{
	free(s->blocking);
	s->blocking = NULL;
}

static enum db_status lock_read(struct db *db, const char *sql, const struct db_val *p, unsigned n,
				const char *now, struct ev_session *s, int *found)
{
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, p, n, &rows, NULL);
	const char *blocking;

	memset(s, 0, sizeof(*s));
	*found = 0;
	if (st)
		return st;
	if (rows.nrows) {
		*found = 1;
		snprintf(s->id, sizeof(s->id), "%s", db_cell(&rows, 0, 0));
		snprintf(s->status, sizeof(s->status), "%s", db_cell(&rows, 0, 1));
		s->event_pos = strtoull(db_cell(&rows, 0, 2), NULL, 10);
		s->turn_pending = atoi(db_cell(&rows, 0, 3));
		s->archived = atoi(db_cell(&rows, 0, 4));
		s->self_hosted = db_cell(&rows, 0, 5) && atoi(db_cell(&rows, 0, 5));
		blocking = db_cell(&rows, 0, 6);
		s->interrupted = atoi(db_cell(&rows, 0, 7));
		snprintf(s->runner_owner, sizeof(s->runner_owner), "%s",
			 db_cell(&rows, 0, 8) ? db_cell(&rows, 0, 8) : "");
		s->runner_attempt = strtoull(db_cell(&rows, 0, 9), NULL, 10);
		snprintf(s->workspace_id, sizeof(s->workspace_id), "%s", db_cell(&rows, 0, 10));
		snprintf(s->environment_id, sizeof(s->environment_id), "%s",
			 db_cell(&rows, 0, 11) ? db_cell(&rows, 0, 11) : "");
		if (blocking && !(s->blocking = strdup(blocking)))
			st = db_fail(db, DB_NOMEM, "session %s: reading its state", s->id);
		snprintf(s->now, sizeof(s->now), "%s", now);
	}
	db_rows_free(&rows);
	return st;
}

enum db_status evdb_lock(struct db *db, const struct db_key *k, const char *now,
			 struct ev_session *s, int *found)
{
	static const char sql[] = EV_LOCK_SELECT
		"WHERE s.id = ? AND s.workspace_id = ? AND s.deleted_at IS NULL"
		" AND NOT EXISTS (SELECT 1 FROM environments e WHERE e.id = s.environment_id"
		" AND e.scope = 'account' AND e.account_id <> ?) FOR UPDATE";
	struct db_val p[] = { DB_STR(k->id), DB_STR(k->workspace_id), DB_STR(k->account_id) };

	return lock_read(db, sql, DB_ARRAY(p), now, s, found);
}

enum db_status evdb_lock_id(struct db *db, const char *id, const char *now, struct ev_session *s,
			    int *found)
{
	static const char sql[] =
		EV_LOCK_SELECT "WHERE s.id = ? AND s.deleted_at IS NULL FOR UPDATE";

	return lock_read(db, sql, DB_PARAMS(DB_STR(id)), now, s, found);
}

/* clang-format off */
#define EV_INSERT \
	"INSERT INTO session_events (id, session_id, ord, type, ref_id, processed_at," \
	" created_at, body) VALUES "
#define EV_ROW "(?, ?, ?, ?, ?, ?, ?, ?)"
#define EV_ROW_PARAMS 8
/* clang-format on */

/* 1 (the failure recorded) when E's body does not start with its type, as every stored one
 * must (BODY_PREFIX: what the list and the stream splice) */
static int body_bad(struct db *db, const struct ev_session *s, const struct ev_new *e)
{
	if (!strncmp(e->body, BODY_PREFIX, sizeof(BODY_PREFIX) - 1))
		return 0;
	db_fail(db, DB_CORRUPT, "session %s: event %s does not start with its type", s->id, e->id);
	return 1;
}

enum db_status evdb_append_rows(struct db *db, struct ev_session *s, const struct ev_new *e,
				size_t n)
{
	/* the statement of K rows is insert[K - 1]: texts built in, as db_exec wants them */
	static const char *const insert[EVENTS_APPEND_ROWS] = {
		EV_INSERT EV_ROW,
		EV_INSERT EV_ROW "," EV_ROW,
		EV_INSERT EV_ROW "," EV_ROW "," EV_ROW,
	};
	struct db_val p[EVENTS_APPEND_ROWS * EV_ROW_PARAMS];
	enum db_status st = DB_OK;

	_Static_assert(sizeof(p) / sizeof(p[0]) <= DB_MAX_PARAMS,
		       "EVENTS_APPEND_ROWS rows take more parameters than a statement may have");
	for (size_t done = 0; !st && done < n;) {
		size_t k = n - done < EVENTS_APPEND_ROWS ? n - done : EVENTS_APPEND_ROWS;

		for (size_t i = 0; i < k; i++) {
			const struct ev_new *x = &e[done + i];
			struct db_val *r = &p[i * EV_ROW_PARAMS];

			if (x->queued || body_bad(db, s, x))
				return x->queued ? db_fail(db, DB_CORRUPT,
							   "session %s: event %s is queued", s->id,
							   x->id)
						 : DB_CORRUPT;
			r[0] = DB_STR(x->id);
			r[1] = DB_STR(s->id);
			r[2] = DB_INT((long long)++s->event_pos);
			r[3] = DB_STR(x->type);
			r[4] = db_opt(x->ref_id);
			r[5] = DB_STR(s->now);
			r[6] = DB_STR(s->now);
			r[7] = DB_STR(x->body);
		}
		st = db_exec(db, insert[k - 1], p, (unsigned)(k * EV_ROW_PARAMS), NULL, NULL);
		done += k;
	}
	return st;
}

enum db_status evdb_append(struct db *db, struct ev_session *s, const struct ev_new *e)
{
	/* a queued event's ord needs its seq: given by a second statement in the same
	 * transaction, from the temporary 0 that no processed event has (positions start at 1) */
	static const char queued[] =
		"INSERT INTO session_events (id, session_id, ord, type, ref_id, processed_at,"
		" created_at, body) VALUES (?, ?, 0, ?, ?, NULL, ?, ?)";
	static const char queued_ord[] = "UPDATE session_events SET ord = ? + seq WHERE id = ?";
	enum db_status st;

	if (!e->queued)
		return evdb_append_rows(db, s, e, 1);
	if (body_bad(db, s, e))
		return DB_CORRUPT;
	st = db_exec(db, queued,
		     DB_PARAMS(DB_STR(e->id), DB_STR(s->id), DB_STR(e->type), db_opt(e->ref_id),
			       DB_STR(s->now), DB_STR(e->body)),
		     NULL, NULL);
	if (!st)
		st = db_exec(db, queued_ord,
			     DB_PARAMS(DB_INT((long long)EVENTS_QUEUED_ORD), DB_STR(e->id)), NULL,
			     NULL);
	return st;
}

/* The event type announcing STATUS. */
static const char *status_event(const char *status)
{
	static const struct {
		const char *status, *event;
	} map[] = {
		{ SES_IDLE, "session.status_idle" },
		{ SES_RUNNING, "session.status_running" },
		{ SES_RESCHEDULING, "session.status_rescheduled" },
		{ SES_TERMINATED, "session.status_terminated" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].status, status))
			return map[i].event;
	return NULL;
}

enum db_status evdb_status(struct db *db, struct ev_session *s, const char *status,
			   const char *stop_reason, const char *event_id)
{
	return evdb_status_details(db, s, status, stop_reason, NULL, event_id);
}

enum db_status evdb_status_details(struct db *db, struct ev_session *s, const char *status,
				   const char *stop_reason, const char *stop_details,
				   const char *event_id)
{
	const char *type = status_event(status);
	int idle = !strcmp(status, SES_IDLE);
	char small[128], *body, id[64];
	struct ev_new e = { .id = event_id ? event_id : id };
	enum db_status st;

	if (!event_id && random_id(id, sizeof(id), EVENT_ID_PREFIX, ID_RANDOM_LEN))
		return db_fail(db, DB_FATAL, "session %s: no random id for its %s event", s->id,
			       type ? type : status);
	if (!type || (idle && !stop_reason))
		return db_fail(db, DB_FATAL, "session %s: no event announces status '%s'", s->id,
			       status);
	if (!idle && !strcmp(s->status, status))
		return DB_OK;
	if (idle) {
		const char *details = stop_details ? stop_details : "null";
		size_t n = strlen(stop_reason) + strlen(details) + 96;
		body = malloc(n);
		if (!body)
			return db_fail(db, DB_NOMEM, "session %s: its idle event", s->id);
		snprintf(body, n,
			 "{\"type\":\"session.status_idle\",\"stop_reason\":%s,"
			 "\"stop_details\":%s}",
			 stop_reason, details);
	} else {
		snprintf(small, sizeof(small), "{\"type\":\"%s\"}", type);
		body = small;
	}
	e.type = type;
	e.body = body;
	st = evdb_append(db, s, &e);
	if (body != small)
		free(body);
	if (!st)
		snprintf(s->status, sizeof(s->status), "%s", status);
	return st;
}

enum db_status evdb_provisioning(struct db *db, const char *session_id, const char *status,
				 const char *now)
{
	struct ev_session s;
	int found;
	enum db_status st = evdb_lock_id(db, session_id, now, &s, &found);

	if (st || !found || s.turn_pending)
		goto out;
	if (!strcmp(status, SES_IDLE)) { /* provisioning no longer holds it back */
		if (strcmp(s.status, SES_RESCHEDULING) && strcmp(s.status, SES_TERMINATED))
			goto out;
		st = evdb_status(db, &s, SES_IDLE, "{\"type\":\"end_turn\"}", NULL);
	} else if (strcmp(s.status, status)) {
		st = evdb_status(db, &s, status, NULL, NULL);
	} else {
		goto out;
	}
	if (!st)
		st = evdb_save(db, &s);
out:
	ev_session_release(&s);
	return st;
}

enum db_status evdb_client_gone(struct db *db, struct ev_session *s)
{
	static const char body[] =
		"{\"type\":\"session.error\",\"error\":{\"type\":\"unknown_error\",\"message\":"
		"\"" EVENTS_CLIENT_GONE "\",\"retry_status\":{\"type\":\"terminal\"}}}";
	char id[64];
	struct ev_new e = { .id = id, .type = "session.error", .body = body };
	enum db_status st;

	if (s->turn_pending || !s->blocking)
		return DB_OK;
	if (random_id(id, sizeof(id), EVENT_ID_PREFIX, ID_RANDOM_LEN))
		return db_fail(db, DB_FATAL, "session %s: no random id for an event", s->id);
	st = evdb_append(db, s, &e);
	free(s->blocking);
	s->blocking = NULL;
	return st ? st : evdb_status(db, s, SES_IDLE, "{\"type\":\"end_turn\"}", NULL);
}

enum db_status evdb_save(struct db *db, const struct ev_session *s)
{
	static const char sql[] =
		"UPDATE sessions SET status = ?, event_pos = ?, turn_pending = ?,"
		" turn_due_at = IF(? = 1, COALESCE(turn_due_at, ?), NULL), blocking = ?,"
		" blocked_at = IF(? IS NULL, NULL, COALESCE(blocked_at, ?)),"
		" interrupt_at = IF(? = 1, ?, IF(? = 1, interrupt_at, NULL)), updated_at = ?"
		" WHERE id = ?";
	struct db_val p[] = { DB_STR(s->status),
			      DB_INT((long long)s->event_pos),
			      DB_INT(s->turn_pending),
			      DB_INT(s->turn_pending),
			      DB_STR(s->now),
			      db_opt(s->blocking),
			      db_opt(s->blocking),
			      DB_STR(s->now),
			      DB_INT(s->interrupt),
			      DB_STR(s->now),
			      DB_INT(s->turn_pending),
			      DB_STR(s->now),
			      DB_STR(s->id) };

	return db_exec(db, sql, DB_ARRAY(p), NULL, NULL);
}

enum db_status evdb_process_queued(struct db *db, struct ev_session *s, int *n)
{
	static const char sel[] = "SELECT id FROM session_events WHERE session_id = ? AND ord >= ?"
				  " AND processed_at IS NULL ORDER BY ord";
	static const char upd[] =
		"UPDATE session_events SET ord = ?, processed_at = ? WHERE id = ?";
	struct db_rows rows;
	enum db_status st =
		db_exec(db, sel, DB_PARAMS(DB_STR(s->id), DB_INT((long long)EVENTS_QUEUED_ORD)),
			&rows, NULL);

	*n = 0;
	for (unsigned r = 0; !st && r < rows.nrows; r++) {
		st = db_exec(db, upd,
			     DB_PARAMS(DB_INT((long long)++s->event_pos), DB_STR(s->now),
				       DB_STR(db_cell(&rows, r, 0))),
			     NULL, NULL);
		*n += !st;
	}
	db_rows_free(&rows);
	return st;
}

enum db_status evdb_get(struct db *db, const char *session_id, const char *id, struct db_rows *rows)
{
	static const char sql[] = EV_SELECT "WHERE session_id = ? AND id = ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(session_id), DB_STR(id)), rows, NULL);
}

enum db_status evdb_refs(struct db *db, const char *session_id, const char *ref,
			 struct db_rows *rows)
{
	static const char sql[] = EV_SELECT "WHERE session_id = ? AND ref_id = ? ORDER BY seq";

	return db_exec(db, sql, DB_PARAMS(DB_STR(session_id), DB_STR(ref)), rows, NULL);
}

#define EV_LIST_WHERE                                                                              \
	"WHERE session_id = ? AND (? IS NULL OR FIND_IN_SET(type, ?) > 0)"                         \
	" AND (? IS NULL OR processed_at > ?) AND (? IS NULL OR processed_at >= ?)"                \
	" AND (? IS NULL OR processed_at < ?) AND (? IS NULL OR processed_at <= ?) "
#define EV_LIST_ASC "AND ord > ? ORDER BY ord LIMIT ?"
#define EV_LIST_DESC "AND ord < ? ORDER BY ord DESC LIMIT ?"
#define EV_SIZES "SELECT LENGTH(body) FROM session_events "

/* How many of the Q->rows events Q asks for to read: those whose bodies fit in Q->bytes (at
 * least one), and one more that says a next page follows. */
static enum db_status list_rows(struct db *db, const struct ev_query *q, const struct db_val *p,
				unsigned n, long long *out)
{
	static const char asc[] = EV_SIZES EV_LIST_WHERE EV_LIST_ASC;
	static const char desc[] = EV_SIZES EV_LIST_WHERE EV_LIST_DESC;
	unsigned long long sum = 0;
	struct db_rows sizes;
	enum db_status st;
	unsigned r = 0;

	*out = q->rows;
	if (q->bytes <= 0)
		return DB_OK;
	st = db_exec(db, q->desc ? desc : asc, p, n, &sizes, NULL);
	for (; !st && r < sizes.nrows; r++) {
		sum += strtoull(db_cell(&sizes, r, 0), NULL, 10);
		if (r && sum > (unsigned long long)q->bytes)
			break;
	}
	if (!st && r < sizes.nrows)
		*out = (long long)r + 1;
	db_rows_free(&sizes);
	return st;
}

enum db_status evdb_list(struct db *db, const struct ev_query *q, struct db_rows *rows)
{
	static const char asc[] = EV_SELECT EV_LIST_WHERE EV_LIST_ASC;
	static const char desc[] = EV_SELECT EV_LIST_WHERE EV_LIST_DESC;
	struct db_val p[] = { DB_STR(q->session_id), db_opt(q->types), db_opt(q->types),
			      db_opt(q->gt),	     db_opt(q->gt),    db_opt(q->gte),
			      db_opt(q->gte),	     db_opt(q->lt),    db_opt(q->lt),
			      db_opt(q->lte),	     db_opt(q->lte),   DB_INT(q->after_ord),
			      DB_INT(q->rows) };
	long long n;
	enum db_status st = list_rows(db, q, DB_ARRAY(p), &n);

	if (st)
		return st;
	p[sizeof(p) / sizeof(p[0]) - 1] = DB_INT(n);
	return db_exec(db, q->desc ? desc : asc, DB_ARRAY(p), rows, NULL);
}

enum db_status evdb_tail_seqs(struct db *db, unsigned long long after_seq, long long max,
			      struct db_rows *rows)
{
	static const char sql[] =
		"SELECT seq FROM session_events WHERE seq > ? ORDER BY seq LIMIT ?";

	return db_exec(db, sql, DB_PARAMS(DB_INT((long long)after_seq), DB_INT(max)), rows, NULL);
}

enum db_status evdb_tail(struct db *db, unsigned long long after_seq, unsigned long long upto_seq,
			 struct db_rows *rows)
{
	static const char sql[] = EV_SELECT "WHERE seq > ? AND seq <= ? ORDER BY seq";

	return db_exec(db, sql,
		       DB_PARAMS(DB_INT((long long)after_seq), DB_INT((long long)upto_seq)), rows,
		       NULL);
}

enum db_status evdb_session_last_seq(struct db *db, const char *session_id, unsigned long long *seq)
{
	static const char sql[] =
		"SELECT COALESCE(MAX(seq), 0) FROM session_events WHERE session_id = ?";
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), &rows, NULL);

	*seq = 0;
	if (!st && rows.nrows)
		*seq = strtoull(db_cell(&rows, 0, 0), NULL, 10);
	db_rows_free(&rows);
	return st;
}

enum db_status evdb_session_after(struct db *db, const char *session_id, unsigned long long after,
				  long long max, struct db_rows *rows)
{
	static const char sql[] = EV_SELECT "WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?";

	return db_exec(db, sql,
		       DB_PARAMS(DB_STR(session_id), DB_INT((long long)after), DB_INT(max)), rows,
		       NULL);
}

enum db_status evdb_last_seq(struct db *db, unsigned long long *seq)
{
	static const char sql[] = "SELECT COALESCE(MAX(seq), 0) FROM session_events";
	struct db_rows rows;
	enum db_status st = db_exec(db, sql, DB_NONE, &rows, NULL);

	*seq = 0;
	if (!st && rows.nrows)
		*seq = strtoull(db_cell(&rows, 0, 0), NULL, 10);
	db_rows_free(&rows);
	return st;
}

enum db_status evdb_session_deleted(struct db *db, const char *session_id, const char *now)
{
	struct ev_session s;
	int found;
	char id[64];
	enum db_status st = evdb_lock_id(db, session_id, now, &s, &found);
	struct ev_new e = { .id = id,
			    .type = "session.deleted",
			    .body = "{\"type\":\"session.deleted\"}" };

	if (!st && found && random_id(id, sizeof(id), EVENT_ID_PREFIX, ID_RANDOM_LEN))
		st = db_fail(db, DB_FATAL, "session %s: no random id for its session.deleted event",
			     session_id);
	if (!st && found)
		st = evdb_remove_session(db, session_id);
	if (!st && found)
		st = evdb_append(db, &s, &e);
	ev_session_release(&s);
	return st;
}

enum db_status evdb_remove_session(struct db *db, const char *session_id)
{
	static const char sql[] =
		"DELETE FROM session_events WHERE session_id = ? AND type <> 'session.deleted'";
	static const char runs[] = "DELETE FROM session_tool_runs WHERE session_id = ?";
	enum db_status st = db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), NULL, NULL);

	return st ? st : db_exec(db, runs, DB_PARAMS(DB_STR(session_id)), NULL, NULL);
}

enum db_status evdb_purge_deleted(struct db *db, const char *before, long long max)
{
	static const char sql[] = "DELETE FROM session_events WHERE type = 'session.deleted'"
				  " AND created_at < ? LIMIT ?";

	return db_exec(db, sql, DB_PARAMS(DB_STR(before), DB_INT(max)), NULL, NULL);
}

/* Whether member KEY of event ROW of ROWS (its stored body) is the string VALUE, into *YES: the
 * event's own member, never one of its input's. */
static enum db_status body_says(struct db *db, const struct db_rows *rows, unsigned row,
				const char *key, const char *value, int *yes)
{
	json_t *body = NULL;
	enum db_status st = db_json_load_object(db, db_cell(rows, row, EV_C_BODY), "event",
						db_cell(rows, row, EV_C_ID), "body", &body);
	const char *v = json_string_value(json_object_get(body, key));

	*yes = !st && v && !strcmp(v, value);
	json_decref(body);
	return st;
}

enum db_status evdb_await(struct db *db, const struct ev_session *s, const char *id,
			  enum ev_await *out, int *denied)
{
	struct db_rows use = { 0 }, refs = { 0 };
	enum db_status st;
	const char *type;
	int ask, confirmed = 0, builtin;

	*out = AW_UNKNOWN;
	*denied = 0;
	if (strncmp(id, EVENT_ID_PREFIX, sizeof(EVENT_ID_PREFIX) - 1) || strlen(id) >= 64)
		return DB_OK;
	st = evdb_get(db, s->id, id, &use);
	if (st || !use.nrows)
		goto out;
	type = db_cell(&use, 0, EV_C_TYPE);
	if (strcmp(type, "agent.tool_use") && strcmp(type, "agent.mcp_tool_use") &&
	    strcmp(type, "agent.custom_tool_use"))
		goto out;
	st = evdb_refs(db, s->id, id, &refs);
	if (!st) /* the use's own member: its input (the model's) may hold one of that name */
		st = body_says(db, &use, 0, "evaluated_permission", "ask", &ask);
	if (st)
		goto out;
	builtin = !strcmp(type, "agent.tool_use");
	*out = !strcmp(type, "agent.custom_tool_use") ? AW_CUSTOM
	       : ask				      ? AW_CONFIRMATION
	       : s->self_hosted && builtin	      ? AW_RESULT
						      : AW_RESOLVED;
	for (unsigned r = 0; r < refs.nrows; r++) {
		if (strcmp(db_cell(&refs, r, EV_C_TYPE), "user.tool_confirmation")) {
			*out = AW_ANSWERED; /* a result of any kind */
			goto out;
		}
		confirmed = 1;
		st = body_says(db, &refs, r, "result", "deny", denied);
		if (st)
			goto out;
	}
	if (*out == AW_CONFIRMATION && confirmed)
		*out = !*denied && s->self_hosted && builtin ? AW_RESULT : AW_RESOLVED;
out:
	db_rows_free(&use);
	db_rows_free(&refs);
	return st;
}

enum db_status evdb_session_events(struct db *db, const char *session_id, struct db_rows *rows)
{
	static const char sql[] = EV_SELECT "WHERE session_id = ? ORDER BY ord";

	return db_exec(db, sql, DB_PARAMS(DB_STR(session_id)), rows, NULL);
}
