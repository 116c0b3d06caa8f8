/* The agents and agent_versions tables. An agent row holds identity, workspace, current
 * version and timestamps; each version row holds the full definition (see
 * handlers/agent_validate.h) as JSON. Every query filters on the workspace: another
 * workspace's agent is indistinguishable from a missing one. */
#ifndef TERRARIUM_DB_AGENTS_H
#define TERRARIUM_DB_AGENTS_H

#include <jansson.h>

#include "db.h"
#include "table.h"

/* Columns of every agent SELECT (agentdb_get, agentdb_list, agentdb_versions), in this order. */
enum agent_col {
	AGENT_C_ID,
	AGENT_C_VERSION,    /* the version this row shows */
	AGENT_C_DEFINITION, /* JSON */
	AGENT_C_CREATED,    /* RFC 3339: the agent's creation */
	AGENT_C_UPDATED,    /* RFC 3339: the agent's last change for the current version, else
			     * the creation of the version shown */
	AGENT_C_ARCHIVED,   /* RFC 3339 or NULL */
	AGENT_C_CURRENT,    /* the agent's current version */
	AGENT_C_CREATED_DB, /* "YYYY-MM-DD HH:MM:SS.ffffff": the list cursor's key (for version
			     * lists, the version's creation) */
};

struct agent_row_in {
	const char *id, *workspace_id, *account_id;
	const char *definition; /* JSON text */
	const char *now;	/* "YYYY-MM-DD HH:MM:SS.ffffff" */
};

/* Agent K->id of workspace K->workspace_id at K->version (0 = current) into ROWS (0 or 1 row;
 * caller db_rows_free). FOR_UPDATE locks the agent row (current version only). */
enum db_status agentdb_get(struct db *db, const struct db_key *k, int for_update,
			   struct db_rows *rows);

/* Insert the agent row and its version 1. Run inside db_tx (two statements). */
enum db_status agentdb_insert(struct db *db, const struct agent_row_in *in);

/* Record VERSION (the current + 1) with IN->definition and make it current (updated_at =
 * IN->now). Run inside db_tx after agentdb_get(..., FOR_UPDATE). */
enum db_status agentdb_add_version(struct db *db, const struct agent_row_in *in, long long version);

/* Set archived_at (and updated_at) of agent K->id of K->workspace_id at NOW when not yet
 * archived (an archived agent is left as it is). */
enum db_status agentdb_archive(struct db *db, const struct db_key *k, const char *now);

/* Agents of K->workspace_id newest first (created_at, id), current versions, as page P says
 * (include_archived, created_at between gte and lte inclusive when given, after the cursor),
 * at most db_page_rows(P) rows into ROWS (caller db_rows_free). */
enum db_status agentdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			    struct db_rows *rows);

/* Versions of agent ID (of WS) newest first, below BEFORE_VERSION (0: from the newest), at
 * most LIMIT rows. No rows when the agent does not exist. */
enum db_status agentdb_versions(struct db *db, const char *ws, const char *id,
				long long before_version, long long limit, struct db_rows *rows);

/* The agent snapshot (BetaManagedAgentsSessionAgent JSON: id, type "agent", version, name,
 * description, model, system, mcp_servers, tools, skills, execution_identity, multiagent) of
 * AGENT_ID at VERSION (0 = latest) in workspace WS. DB_OK with *SNAPSHOT a new reference (caller
 * decrefs) or NULL when no such agent/version; *ARCHIVED set to 1 when the agent is archived
 * (else 0). Plain SELECTs through db_exec: safe inside a db_tx transaction (takes no lock).
 * DB_CORRUPT when the stored definition does not parse, DB_NOMEM when memory runs out. */
enum db_status agentdb_snapshot(struct db *db, const char *ws, const char *agent_id,
				long long version, json_t **snapshot, int *archived);

#endif
