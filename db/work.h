/* The self-hosted work queue (docs/work-queue.md): work items, the sessions tokens a poll hands
 * out, the worker ids seen polling, and the wake-up of polls blocked in the database. Items
 * are filtered by environment and workspace in every query; the state machine itself lives in
 * handlers/work.c, which reads an item locked, changes a struct work_row and writes it back. */
#ifndef TERRARIUM_DB_WORK_H
#define TERRARIUM_DB_WORK_H

#include "../common/crypto.h"
#include "db.h"
#include "table.h"

#define WORK_ID_PREFIX "work_"
#define WORK_TOKEN_PREFIX "trmst_" /* sessions tokens (the `secret` of a poll) */
#define WORK_TOKEN_RANDOM_LEN 40
#define WORK_WORKER_ID_MAX 128	 /* anthropic-worker-id, bytes */
#define WORK_POLLERS_WINDOW_S 30 /* stats.workers_polling counts ids seen this recently */
#define WORK_POLLERS_REFRESH_S 5 /* ...to within this: a poller's row is rewritten this often */
#define WORK_TS_LEN 27		 /* "YYYY-MM-DD HH:MM:SS.ffffff" + NUL */

/* Columns of every work item SELECT, in this order. Timestamps are DATETIME(6) text
 * ("YYYY-MM-DD HH:MM:SS.ffffff") or NULL. */
enum work_col {
	WORK_C_ID,
	WORK_C_ENVIRONMENT_ID,
	WORK_C_SESSION_ID,
	WORK_C_STATE,
	WORK_C_METADATA,
	WORK_C_CREATED,
	WORK_C_ACKNOWLEDGED,
	WORK_C_STARTED,
	WORK_C_HEARTBEAT,
	WORK_C_STOP_REQUESTED,
	WORK_C_STOPPED,
	WORK_C_DELIVERED,
	WORK_C_TTL,
	WORK_C_LEASE_EXPIRES,
	WORK_C_COUNT
};

/* The mutable part of an item, as handlers/work.c changes it. Timestamps: "" for NULL. */
struct work_row {
	char state[16];
	char acknowledged_at[WORK_TS_LEN], started_at[WORK_TS_LEN], heartbeat_at[WORK_TS_LEN];
	char lease_expires_at[WORK_TS_LEN], stop_requested_at[WORK_TS_LEN];
	char stopped_at[WORK_TS_LEN], delivered_at[WORK_TS_LEN];
	long long ttl_seconds;
	const char *metadata; /* JSON text, borrowed */
};

/* Fill ROW from row R of a work SELECT (metadata borrowed from ROWS). */
void work_row_load(struct work_row *row, const struct db_rows *rows, unsigned r);

/* Queue a new item ID for SESSION_ID of environment ENV_ID (inside the session-create
 * transaction). */
enum db_status workdb_enqueue(struct db *db, const char *id, const char *ws, const char *env_id,
			      const char *session_id, const char *now);

/* A turn of SESSION_ID (of self_hosted environment ENV_ID) starts: when the session has no live
 * item (every one stopped: its last worker finished with it), queue a new one, ID, so that a
 * worker picks the session up again (docs/work-queue.md). *QUEUED = 1 when one was. Part of
 * the caller's transaction. */
enum db_status workdb_requeue(struct db *db, const char *id, const char *ws, const char *env_id,
			      const char *session_id, const char *now, int *queued);

/* *LIVE = 1 when SESSION_ID has an item that is not stopped (a worker has it or can poll it). */
enum db_status workdb_session_live(struct db *db, const char *session_id, int *live);

/* Item K->id of environment K->parent_id in workspace K->workspace_id into ROWS (0 or 1 row;
 * caller db_rows_free); FOR_UPDATE locks it. */
enum db_status workdb_get(struct db *db, const struct db_key *k, int for_update,
			  struct db_rows *rows);

/* Write ROW's fields to item WORK_ID (locked by the caller) with updated_at = NOW. When the
 * new state is stopped, the item's sessions tokens are revoked in the same statement run. */
enum db_status workdb_write(struct db *db, const char *work_id, const struct work_row *row,
			    const char *now);

/* Request the stop of SESSION_ID's item (session archived or deleted): queued and starting
 * items stop, active ones go to stopping. Part of the caller's transaction. */
enum db_status workdb_stop_session(struct db *db, const char *session_id, const char *ws,
				   const char *now);

/* Leases of ENV_ID that expired: starting/active go back to queued (never delivered again),
 * unless a stop was requested (then stopped, tokens revoked); stopping goes to stopped. */
enum db_status workdb_expire(struct db *db, const char *env_id);

/* Deliver the oldest deliverable item of ENV_ID (queued and never delivered, or delivered
 * longer than RECLAIM_MS ago and not acknowledged): one READ COMMITTED transaction that skips
 * items another poll has locked, records the delivery and WORKER_ID (NULL: none), revokes the
 * item's earlier tokens and stores TOKEN_HASH. ROWS gets the item, or no row. */
enum db_status workdb_claim(struct db *db, const char *env_id, long long reclaim_ms,
			    const char *worker_id, const unsigned char *token_hash,
			    struct db_rows *rows);

/* Block in the database until ENV_ID may have a deliverable item: returns after at most
 * MAX_MS, at once when one is deliverable now, at the next reclaim or lease expiry, or when
 * workdb_wake interrupts it (then *WOKEN = 1). Costs one statement and no CPU while it waits. */
enum db_status workdb_wait(struct db *db, const char *env_id, long long reclaim_ms,
			   long long max_ms, int *woken);

/* Wake the polls blocked in workdb_wait for ENV_ID, on any API host using this database (after
 * the commit that queued an item). */
enum db_status workdb_wake(struct db *db, const char *env_id);

/* Remember WORKER_ID polling ENV_ID now (and forget ids older than the window). */
enum db_status workdb_seen(struct db *db, const char *env_id, const char *worker_id);

/* Stats of ENV_ID: one row (depth, pending, oldest queued as DATETIME text or NULL, workers
 * seen in the window, workers ever recorded). */
enum db_status workdb_stats(struct db *db, const char *env_id, struct db_rows *rows);

/* Items of environment K->parent_id in K->workspace_id newest first after page P's cursor, at
 * most db_page_rows(P) rows into ROWS (caller db_rows_free). */
enum db_status workdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			   struct db_rows *rows);

/* Replace the metadata of item WORK_ID. */
enum db_status workdb_set_metadata(struct db *db, const char *work_id, const char *metadata,
				   const char *now);

/* A live sessions token by HASH: *FOUND, and work id, environment id, session id, workspace
 * and the environment's account (buffers of AUTH sizes: SZ each, ACCOUNT_SZ). */
enum db_status worktoken_lookup(struct db *db, const unsigned char hash[SHA256_LEN], char *work_id,
				char *env_id, char *session_id, char *ws, size_t sz, char *account,
				size_t account_sz, int *found);

/* Per-environment queue summary of every self_hosted environment (for the CLI): id, workspace
 * name, depth, pending, oldest queued, active, workers seen in the window. */
enum db_status workdb_queues(struct db *db, struct db_rows *rows);

#endif
