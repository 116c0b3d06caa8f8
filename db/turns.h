/* The runner's claims on sessions' turns (docs/runner.md): the reconciler's lease and fencing
 * (docs/design.md, Provisioning) applied to a session row. A claim takes due turns FOR UPDATE
 * SKIP LOCKED in a short transaction and gives each the owner, a lease and attempt + 1; every
 * later write of the runner locks the session and checks owner and attempt first, so a runner
 * that lost its lease (it stalled, another took the turn) writes nothing more. */
#ifndef TERRARIUM_DB_TURNS_H
#define TERRARIUM_DB_TURNS_H

#include "db.h"
#include "events.h"

#define TURNS_OWNER_MAX 128
#define TURNS_CLAIM_MAX 64 /* turns one claim takes at most */

/* A claimed turn. */
struct turn_claim {
	char session_id[64];
	unsigned long long attempt; /* the fencing token the claim gave */
};

/* Claim at most MAX (<= TURNS_CLAIM_MAX) due turns for OWNER with a lease of LEASE_S seconds
 * from NOW: sessions with a turn pending whose lease is free, and sessions of self_hosted
 * environments waiting for their client longer than BLOCKED_S (their turn ends with error
 * results, docs/runner.md). Oldest due first. *N = how many went to OUT. */
enum db_status turns_claim(struct db *db, const char *owner, long lease_s, long blocked_s,
			   const char *now, int max, struct turn_claim *out, int *n);

/* Extend the lease of T held by OWNER to LEASE_S seconds from NOW. *LOST = 1 when it is not
 * OWNER's any more. */
enum db_status turns_renew(struct db *db, const struct turn_claim *t, const char *owner,
			   long lease_s, const char *now, int *lost);

/* Lock T's session for a write of the runner (evdb_lock_id into S, stamped NOW): *LOST = 1
 * (S then unusable) when it is gone or no longer OWNER's at T's attempt. In a transaction. */
enum db_status turns_lock(struct db *db, const struct turn_claim *t, const char *owner,
			  const char *now, struct ev_session *s, int *lost);

/* Give the turn back (after evdb_save, in the same transaction): no owner, no lease. */
enum db_status turns_release(struct db *db, const struct ev_session *s);

/* Record that tool use TOOL_USE_ID of session S starts now (its own transaction, before the
 * tool runs). *ALREADY = 1 when a start was recorded before: it must not run again. */
enum db_status turns_tool_start(struct db *db, const struct ev_session *s, const char *tool_use_id,
				int *already);

/* The tool uses of SESSION_ID whose start was recorded, into ROWS (column 0: the id). */
enum db_status turns_tool_starts(struct db *db, const char *session_id, struct db_rows *rows);

/* Is a user.interrupt waiting for T's running turn? *YES = 1 when one is, or when the turn is
 * no longer OWNER's (either way it must stop). */
enum db_status turns_should_stop(struct db *db, const struct turn_claim *t, const char *owner,
				 int *yes);

#endif
