/* Session events (docs/events.md): the append-only log of a session and the runtime state kept
 * with it on the session's row (status, positions, the pending turn, what a requires_action
 * waits for). The API, the reconciler and the runner all append through these functions, and a
 * status change is always one evdb_status call: the row's status and the session.status_* event
 * that announces it are written in the caller's transaction together. */
#ifndef TERRARIUM_DB_EVENTS_H
#define TERRARIUM_DB_EVENTS_H

#include "db.h"
#include "table.h"

#define EVENT_ID_PREFIX "sevt_"
/* A queued event (processed_at NULL) sorts after every processed one: its ord is this plus its
 * seq until a turn takes it (sql/011_session_events.sql). */
#define EVENTS_QUEUED_ORD 4611686018427387904ULL /* 2^62 */
#define EVENTS_STATUS_MAX 16			 /* "rescheduling" and the NUL, with room */
#define EVENTS_TYPE_MAX 64			 /* longest event type stored */
#define EVENTS_TYPES_MAX 16			 /* types[] of one list */
/* events one INSERT of evdb_append_rows holds: a reply's tool use, span end and usage */
#define EVENTS_APPEND_ROWS 3

/* The session statuses (docs/api.md §7, status machine). */
#define SES_IDLE "idle"
#define SES_RUNNING "running"
#define SES_RESCHEDULING "rescheduling"
#define SES_TERMINATED "terminated"

/* A session's runtime state as evdb_lock read it; the caller changes it (evdb_append,
 * evdb_status, its own fields) and evdb_save writes it back, in the same transaction. */
struct ev_session {
	char id[64];
	char workspace_id[64], environment_id[64]; /* environment_id "" once it is deleted */
	char status[EVENTS_STATUS_MAX];
	unsigned long long event_pos; /* the last position given */
	int turn_pending;
	int archived;
	int self_hosted;	/* its captured environment's type is self_hosted */
	int interrupt;		/* set: save records a user.interrupt for the running turn */
	int interrupted;	/* a user.interrupt asked the running turn to stop (as read) */
	char runner_owner[128]; /* the runner holding the turn, "" none (as read) */
	unsigned long long runner_attempt; /* its fencing token (as read) */
	char *blocking; /* JSON array of the ids a requires_action waits for, or NULL; owned */
	char now[32];	/* the transaction's time (DB format), for everything it writes */
};

/* Release what S owns. */
void ev_session_release(struct ev_session *s);

/* Lock session K->id (visible to K as sesdb_get sees sessions: live, of K's workspace, not
 * another account's scope: account environment's) and read its runtime state into S, stamped
 * NOW (DB format). *FOUND = 0 when it is not visible. Inside a transaction. */
enum db_status evdb_lock(struct db *db, const struct db_key *k, const char *now,
			 struct ev_session *s, int *found);

/* Lock session ID (no visibility check: the reconciler and the runner act for the deployment)
 * into S as evdb_lock does. *FOUND = 0 when it does not exist or is deleted. */
enum db_status evdb_lock_id(struct db *db, const char *id, const char *now, struct ev_session *s,
			    int *found);

/* One event to append. BODY is the event's JSON object text without id and processed_at; it
 * starts with {"type": (evdb_append refuses anything else as DB_CORRUPT). */
struct ev_new {
	const char *id;	    /* "sevt_..." made by the caller */
	const char *type;   /* the type BODY names */
	const char *ref_id; /* the tool use it answers or reports on, or NULL */
	const char *body;
	int queued; /* 1: processed_at NULL, sorted after every processed event */
};

/* Append E to session S at S->now: a processed event takes the next position. */
enum db_status evdb_append(struct db *db, struct ev_session *s, const struct ev_new *e);

/* Append the N processed events E (none queued) to session S at S->now, in their order: what N
 * evdb_append calls write, in one statement for each EVENTS_APPEND_ROWS of them. */
enum db_status evdb_append_rows(struct db *db, struct ev_session *s, const struct ev_new *e,
				size_t n);

/* Change S's status to STATUS with the event that announces it (session.status_running,
 * session.status_idle with STOP_REASON, a JSON object text, session.status_rescheduled,
 * session.status_terminated), whose id is EVENT_ID (NULL: a new one). For idle, STOP_REASON is
 * required. Nothing is appended when the status is STATUS already and it is not idle (an idle with
 * a new stop reason is announced again: a requires_action with fewer ids). */
enum db_status evdb_status(struct db *db, struct ev_session *s, const char *status,
			   const char *stop_reason, const char *event_id);

/* evdb_status with the idle event's stop_details: STOP_DETAILS, a JSON object text (NULL:
 * null), as a refusal has them. */
enum db_status evdb_status_details(struct db *db, struct ev_session *s, const char *status,
				   const char *stop_reason, const char *stop_details,
				   const char *event_id);

/* Provisioning moved session SESSION_ID to STATUS (docs/design.md, Provisioning): a failed
 * attempt to rescheduling, the last one to terminated, a bound sandbox (or --retry) back to
 * idle from either. A session with a turn pending or running is the runner's: left as it is. */
enum db_status evdb_provisioning(struct db *db, const char *session_id, const char *status,
				 const char *now);

/* The message of the session.error a self_hosted session gets when its client is gone. */
#define EVENTS_CLIENT_GONE                                                                         \
	"the session's work item stopped while the session waited for its client (a tool result "  \
	"or a confirmation); the next user.message queues a new work item"

/* End what S waits for from its client (the turn's requires_action) because the client is
 * gone: a session.error saying so and idle with end_turn. Nothing when S waits for nothing. */
enum db_status evdb_client_gone(struct db *db, struct ev_session *s);

/* Write S's runtime state (status, positions, turn, blocking, interrupt) to its row. */
enum db_status evdb_save(struct db *db, const struct ev_session *s);

/* Give the queued events of S (processed_at NULL) the next positions and S->now: a turn took
 * them (the runner), or a user.interrupt cancelled them. *N = how many. */
enum db_status evdb_process_queued(struct db *db, struct ev_session *s, int *n);

/* What a tool use waits for, as its log says. */
enum ev_await {
	AW_UNKNOWN,	 /* no tool use of this session has that id */
	AW_CONFIRMATION, /* always_ask: a user.tool_confirmation */
	AW_RESULT,	 /* self_hosted: the client's user.tool_result */
	AW_CUSTOM,	 /* a user.custom_tool_result */
	AW_RESOLVED,	 /* nothing more from the client: the server runs it, or it was denied */
	AW_ANSWERED,	 /* its result is in the log */
};

/* What tool use ID of session S waits for, read from the log: the use (its type and
 * evaluated_permission) and the events that refer to it. *DENIED = 1 when a confirmation
 * denied it. The one rule the API (what a client may send) and the runner (what it still waits
 * for) both follow. */
enum db_status evdb_await(struct db *db, const struct ev_session *s, const char *id,
			  enum ev_await *out, int *denied);

/* Columns of evdb_get, evdb_refs, evdb_list and evdb_tail rows. */
enum ev_col {
	EV_C_SEQ,
	EV_C_ID,
	EV_C_SESSION,
	EV_C_ORD,
	EV_C_TYPE,
	EV_C_REF,
	EV_C_PROCESSED, /* API format, or NULL */
	EV_C_BODY,
	EV_C_COUNT
};

/* Event ID of session SESSION_ID into ROWS (0 or 1 row). */
enum db_status evdb_get(struct db *db, const char *session_id, const char *id,
			struct db_rows *rows);

/* The events of SESSION_ID whose ref_id is REF (answers to a tool use, its result), oldest
 * first, into ROWS. */
enum db_status evdb_refs(struct db *db, const char *session_id, const char *ref,
			 struct db_rows *rows);

/* Every event of session SESSION_ID in its order (queued ones last) into ROWS: the runner's
 * history. */
enum db_status evdb_session_events(struct db *db, const char *session_id, struct db_rows *rows);

/* A page of a session's events. */
struct ev_query {
	const char *session_id;
	int desc;	     /* newest first */
	long long after_ord; /* the cursor's position; 0 (asc) / LLONG_MAX (desc): ords are
			      * below 2^63 */
	long long rows;	     /* at most this many */
	long long bytes;     /* and no more than one past those whose bodies fit in this many
			      * bytes (the first always counts): 0, no bound */
	const char *types;   /* comma-separated types, or NULL for all */
	const char *gt, *gte, *lt, *lte; /* processed_at bounds (DB format), or NULL */
};

/* The events Q asks for, in its order, into ROWS. The bodies' sizes are read first, so that
 * a page of large events reads no more of them than it may show. */
enum db_status evdb_list(struct db *db, const struct ev_query *q, struct db_rows *rows);

/* The seqs of the events appended after global position AFTER_SEQ (every session), at most
 * MAX, ascending, into ROWS (one column): what a tailer has to publish, without the events. */
enum db_status evdb_tail_seqs(struct db *db, unsigned long long after_seq, long long max,
			      struct db_rows *rows);

/* The events of every session whose global position is above AFTER_SEQ and at most UPTO_SEQ,
 * by seq. */
enum db_status evdb_tail(struct db *db, unsigned long long after_seq, unsigned long long upto_seq,
			 struct db_rows *rows);

/* The highest seq of session SESSION_ID now (0: none): a stream starts after it. */
enum db_status evdb_session_last_seq(struct db *db, const char *session_id,
				     unsigned long long *seq);

/* Events of session SESSION_ID appended after its seq AFTER, at most MAX, by seq. A session's
 * appends are serialised by its row lock, so its seqs grow in commit order: no gap is ever
 * filled later. */
enum db_status evdb_session_after(struct db *db, const char *session_id, unsigned long long after,
				  long long max, struct db_rows *rows);

/* The highest seq now (0: none), for a tailer's start. */
enum db_status evdb_last_seq(struct db *db, unsigned long long *seq);

/* Session SESSION_ID is being deleted (in the caller's transaction, before its row goes): its
 * events go, and a session.deleted is appended, which ends its streams; it stays until
 * evdb_purge_deleted. Nothing when the session does not exist. */
enum db_status evdb_session_deleted(struct db *db, const char *session_id, const char *now);

/* Remove every event of session SESSION_ID but a session.deleted one (the session is gone). */
enum db_status evdb_remove_session(struct db *db, const char *session_id);

/* Remove the logs left by deleted sessions (their session.deleted) older than BEFORE (DB
 * format), at most MAX rows. */
enum db_status evdb_purge_deleted(struct db *db, const char *before, long long max);

#endif
