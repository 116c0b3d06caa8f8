/* A session's conversation rebuilt from its event log (docs/runner.md): the Messages API's
 * messages[] the runner sends with every model request. Nothing of a turn lives only in a
 * runner's memory: whoever takes the turn rebuilds the same history. */
#ifndef TERRARIUM_RUNNER_HISTORY_H
#define TERRARIUM_RUNNER_HISTORY_H

#include <jansson.h>

#include "../db/db.h"

/* What the log holds about one tool use. */
struct tool_use {
	char id[64];   /* the event's id, also the tool_use id the model sees */
	char type[32]; /* agent.tool_use, agent.custom_tool_use, agent.mcp_tool_use */
	char *name;    /* owned; an MCP tool's name as its server spells it */
	char *server;  /* agent.mcp_tool_use: its mcp_server_name (owned), else NULL */
	json_t *input; /* new reference */
	int ask;       /* evaluated_permission was ask */
	int confirmed, denied;
	char *deny_message; /* owned, or NULL */
	int answered;	    /* a result is in the log */
};

struct history {
	json_t *messages;      /* the Messages API's messages (new reference) */
	struct tool_use *uses; /* tool uses in log order (owned) */
	int nuses;
	int queued;		 /* user.messages still queued (processed_at NULL) */
	int answered_since_idle; /* results/confirmations after the last session.status_idle */
};

struct mcp_names;

/* Rebuild session SESSION_ID's history from its processed events (ROWS of evdb_list, in the
 * session's order, columns as db/events.h). An agent.mcp_tool_use is the model's call of the
 * name NAMES gives its tool (the names this turn offers, runner/mcp.h; NULL: none), else of
 * mcp_tool_name's. 0, or -1 when out of memory or a stored event does not parse. */
int history_build(const struct db_rows *rows, const struct mcp_names *names, struct history *h);

void history_release(struct history *h);

/* The tool use ID of H, or NULL. */
struct tool_use *history_use(struct history *h, const char *id);

#endif
