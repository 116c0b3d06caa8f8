/* Provisioning intents as the reconciler sees them (docs/design.md, Provisioning): claiming due
 * intents under a lease, writes fenced on (lease owner, attempt), binding, teardown, status. */
#ifndef TERRARIUM_DB_INTENTS_H
#define TERRARIUM_DB_INTENTS_H

#include "db.h"
#include "intent_state.h"

#define INTENT_FIELD_MAX 256
#define INTENT_CLAIM_MAX 64 /* intents claimed by one claim transaction */

/* One claimed intent. Strings are owned (intent_release). */
struct intent {
	long long id;
	char session_id[INTENT_FIELD_MAX];
	char workspace_id[INTENT_FIELD_MAX];
	char kind[32];
	char *spec;	  /* JSON text */
	char *steps_done; /* JSON array text */
	long long attempts;
	char sandbox_id[INTENT_FIELD_MAX]; /* "" when none recorded */
};

void intent_release(struct intent *in);

/* The fence every write after the claim carries. */
struct intent_fence {
	long long id;
	const char *owner;
	long long attempt;
};

/* Claim up to MAX due intents (pending, failed and due, or claimed with an expired lease) in one
 * short transaction with FOR UPDATE SKIP LOCKED: state claimed, lease OWNER until
 * LEASE_UNTIL, attempts + 1. Fills OUT[0..*N). */
enum db_status intents_claim(struct db *db, const char *owner, const char *now,
			     const char *lease_until, int max, struct intent *out, int *n);

/* What a claim of one session's provision intent found (intents_claim_session). */
enum intent_take {
	INTENT_TAKEN,	/* claimed for the caller: OUT is loaded */
	INTENT_BUSY,	/* another process holds it under a live lease: wait */
	INTENT_READY,	/* done: the sandbox is bound */
	INTENT_STOPPED, /* terminated (needs --retry), cancelled, or no such intent */
};

/* Claim SESSION_ID's provision intent for OWNER until LEASE_UNTIL whatever its next attempt
 * time (a turn that needs the sandbox provisions it now), unless it is done, held by a live
 * lease, or stopped: *TAKE says which. The runner's way into the reconciler's step machine, so
 * that a session is never provisioned by two processes at once. */
enum db_status intents_claim_session(struct db *db, const char *session_id, const char *owner,
				     const char *now, const char *lease_until, struct intent *out,
				     enum intent_take *take);

/* Is any intent due (what a claim would take)? One cheap statement: --loop asks it while idle
 * instead of opening a claim transaction. */
enum db_status intents_any_due(struct db *db, const char *now, int *any);

/* Due intents without claiming (for --dry-run), same order as the claim. */
enum db_status intents_due(struct db *db, const char *now, int max, struct db_rows *rows);

/* Renew the lease to LEASE_UNTIL (fenced); MARK_SANDBOX also records that a sandbox may exist
 * from now on (written before the backend is asked to create one: a session deleted after
 * this gets a teardown). *LOST = 1 when the fence matched nothing. */
enum db_status intents_renew(struct db *db, const struct intent_fence *f, int mark_sandbox,
			     const char *lease_until, const char *now, int *lost);

/* *GONE = 1 when SESSION_ID is deleted (or has no row). */
enum db_status intents_session_gone(struct db *db, const char *session_id, int *gone);

#define INTENT_OWNED_IDS 16 /* ids per intents_sessions_exist call */

/* EXISTS[i] = 1 when a session row (live or awaiting teardown) has id IDS[i]; N at most
 * INTENT_OWNED_IDS. */
enum db_status intents_sessions_exist(struct db *db, const char *const *ids, int n, int *exists);

/* Record progress: steps done (JSON array text), sandbox id, and a renewed lease. *LOST = 1
 * when the fence matched nothing (the lease was lost: drop the intent). */
enum db_status intents_progress(struct db *db, const struct intent_fence *f, const char *steps,
				const char *sandbox_id, const char *lease_until, const char *now,
				int *lost);

/* Fail the attempt: state (failed or terminated), last_error, next attempt time; the session's
 * status (rescheduling or terminated) in the same transaction. */
enum db_status intents_fail(struct db *db, const struct intent_fence *f, const char *session_id,
			    int terminal, const char *last_error, const char *next_attempt,
			    const char *now, int *lost);

/* Bind: write session_sandboxes, mark the intent done, session idle: one transaction. */
enum db_status intents_bind(struct db *db, const struct intent_fence *f, const char *session_id,
			    const char *backend, const char *sandbox_id, const char *egress,
			    const char *now, int *lost);

/* After a teardown destroyed the sandbox: remove the session's intents, binding and row. */
enum db_status intents_teardown_done(struct db *db, const struct intent_fence *f,
				     const char *session_id, int *lost);

/* The session's MCP servers for the egress policy: the session-local list when set, else the
 * agent snapshot's. *MCP_JSON is a new string (caller frees) or NULL when the session is gone. */
enum db_status intents_session_mcp(struct db *db, const char *session_id, char **mcp_json);

/* --retry: make SESSION_ID's failed or terminated intent (provision or teardown) due now with a
 * fresh attempt budget and no last_error (steps done are kept, so provisioning resumes).
 * *FOUND = 0 when there is no such intent. */
enum db_status intents_retry(struct db *db, const char *session_id, const char *now, int *found);

/* For --status and the metrics: counts by kind and state; the due intents (what a claim would
 * take, expired claims included): oldest due time, count, age of the oldest in seconds;
 * recent failures. */
enum db_status intents_counts(struct db *db, struct db_rows *rows);
enum db_status intents_oldest_due(struct db *db, const char *now, struct db_rows *rows);
enum db_status intents_failures(struct db *db, int max, struct db_rows *rows);

/* The binding of SESSION_ID while it is not deleted: backend, sandbox id, egress policy JSON
 * (for --exec). */
enum db_status intents_binding(struct db *db, const char *session_id, struct db_rows *rows);

#endif
