/* terrarium-runner (docs/runner.md): claims sessions' pending turns under a lease and runs each
 * in a process of its own: the model loop against the Messages API, the agent's tools in the
 * session's sandbox, every step appended to the session's event log. */
#ifndef TERRARIUM_RUNNER_H
#define TERRARIUM_RUNNER_H

#include "../common/config.h"
#include "../common/vault_crypto.h"
#include "../db/turns.h"
#include "model.h"

#define RUNNER_TOOL_POLL_MS 200	  /* a running tool asks this often whether to stop */
#define RUNNER_STOP_CHECK_MS 100  /* a turn reads whether to stop at most this often */
#define RUNNER_SANDBOX_WAIT_S 600 /* a turn waits at most this long for provisioning */

struct sbx;

/* What the runner's turns share, set up before they fork (read-only in them). */
struct runner {
	const struct config *cfg;
	const char *config_path;
	struct sbx *sbx; /* the deployment's sandbox backend */
	char owner[TURNS_OWNER_MAX];
	struct model_conf model;
	char model_missing[512]; /* why no model can be called ("": it can) */
	/* the vault key that opens sessions' credentials (db/vaults.h vaultdb_session_secrets,
	 * docs/vaults.md), read at start before the runner gives up root; when not loaded its
	 * error names the file, and a credential that needs it does not open */
	struct vault_key vault;
};

/* Run turn C to its end (idle, parked on requires_action, lease lost): the body of a turn's
 * process. The process exit status: 0, 1 when the turn failed (its events say so), 3 when the
 * database could not be reached. */
int turn_run(const struct runner *r, const struct turn_claim *c);

/* The sandbox a turn's tools run in (runner/sandbox.c). */
struct turn_sandbox;

/* Make sure session SESSION_ID's sandbox is provisioned (provisioning it now, through its
 * intent, when it is not yet: the reconciler never does it twice) and open it for commands.
 * NULL with ERR set when it cannot be had. STOP is asked while provisioning waits. */
struct turn_sandbox *turn_sandbox_open(const struct runner *r, struct db *db,
				       const char *session_id, int (*stop)(void *), void *arg,
				       char *err, size_t errsz);
void turn_sandbox_close(struct turn_sandbox *sb);

struct tool_exec;
/* The tool_exec of SB: commands run in the session's sandbox, stopped when STOP says so. */
void turn_sandbox_exec(struct turn_sandbox *sb, int (*stop)(void *), void *arg,
		       struct tool_exec *x);

#endif
