/* Sessions, their provisioning intents and sandbox bindings. A session row carries the
 * environment configuration and revision it captured and the agent snapshot it resolved; the
 * provision intent is written in the same transaction. Deleted sessions whose sandbox may exist
 * stay as rows with deleted_at set (hidden from the API) until the reconciler's teardown. */
#ifndef TERRARIUM_DB_SESSIONS_H
#define TERRARIUM_DB_SESSIONS_H

#include "db.h"
#include "intent_state.h"
#include "table.h"

#define SES_ID_PREFIX "sesn_" /* also the sandbox names of the directory backends */

/* Columns of every session SELECT, in this order. */
enum sess_col {
	SES_C_ID,
	SES_C_AGENT, /* agent snapshot JSON */
	SES_C_MCP,   /* session-local MCP server list JSON or NULL */
	SES_C_ENVIRONMENT_ID,
	SES_C_STATUS,
	SES_C_TITLE,
	SES_C_METADATA,
	SES_C_CREATED,
	SES_C_UPDATED,
	SES_C_ARCHIVED,
	SES_C_REVISION,	    /* environment revision captured */
	SES_C_INTENT_STATE, /* provision intent state or NULL (none: not required) */
	SES_C_ATTEMPTS,
	SES_C_LAST_ERROR,
	SES_C_NEXT_ATTEMPT,
	SES_C_CREATED_DB,
	SES_C_AGENT_ID,
	SES_C_INTENT_ID,
	SES_C_SANDBOX_ID,   /* the sandbox id the intent recorded, or NULL */
	SES_C_SANDBOX_MARK, /* "1": a sandbox may exist (set before the backend's create) */
	SES_C_LEASE_UNTIL,  /* the intent's lease end (DB format) or NULL */
	SES_C_VAULT_IDS,    /* the vault ids it was created with: a JSON array */
};

struct session_row_in {
	const char *id, *workspace_id, *environment_id, *environment_config, *agent_id;
	long long environment_revision, agent_version;
	const char *agent_snapshot, *title /* NULL */, *metadata, *now;
	const char *vault_ids; /* JSON array text */
};

/* Live (not deleted) session K->id of K->workspace_id, when K->account_id may see it (it is
 * not one of another account's scope: account environment), into ROWS (0 or 1 row; caller
 * db_rows_free); FOR_UPDATE locks it. */
enum db_status sesdb_get(struct db *db, const struct db_key *k, int for_update,
			 struct db_rows *rows);
enum db_status sesdb_insert(struct db *db, const struct session_row_in *in);
/* A pending provision intent for session SESSION_ID with SPEC (JSON text), due at NOW. */
enum db_status sesdb_insert_intent(struct db *db, const char *session_id, const char *ws,
				   const char *kind, const char *spec, const char *sandbox_id,
				   const char *now);
/* Write title (NULL: null), metadata and the session-local MCP list (NULL: none). */
enum db_status sesdb_update(struct db *db, const char *id, const char *ws, const char *title,
			    const char *metadata, const char *mcp_servers, const char *now);
/* Set archived_at (and updated_at) of session K (as sesdb_get sees it) at NOW when not yet
 * archived. *AFFECTED = rows changed. */
enum db_status sesdb_archive(struct db *db, const struct db_key *k, const char *now,
			     unsigned long long *affected);
/* Remove the session and its intents outright (nothing was provisioned yet). */
enum db_status sesdb_remove(struct db *db, const char *id, const char *ws);
/* Hide the session (deleted_at; its environment reference is dropped, so the environment can be
 * deleted), cancel its provision intent, queue a teardown intent due at NOT_BEFORE (DB format;
 * NULL or earlier than NOW: at NOW). A provisioning still in flight holds its lease until then
 * and cannot renew it (the intent is cancelled): the teardown comes after it. */
enum db_status sesdb_retire(struct db *db, const char *id, const char *ws, const char *sandbox_id,
			    const char *now, const char *not_before);
/* Live sessions of K->workspace_id that K->account_id may see, as page P says (newest first,
 * oldest first when asc; only agent_id's when given; include_archived; after the cursor), at
 * most db_page_rows(P) rows into ROWS (caller db_rows_free). */
enum db_status sesdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			  struct db_rows *rows);

#endif
