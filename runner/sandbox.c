/* The session's sandbox for a turn's tools: the one the reconciler provisioned and bound, or,
 * for the first sandbox-using turn of a session not provisioned yet, the one this turn
 * provisions itself through the session's provision intent (claimed as the reconciler claims
 * it, and carried through the same step machine: never two processes at once). Commands run as
 * the reconciler's --exec runs them: the sandbox's workdir, the environment its installs had,
 * the network its policy allows. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/intents.h"
#include "../reconciler/recon.h"
#include "runner.h"
#include "tools.h"

#define SANDBOX_WAIT_POLL_MS 500 /* how often a turn looks whether its sandbox is bound */

struct turn_sandbox {
	const struct runner *r;
	struct sbx *sbx;
	struct recon_bound bound; /* its id, workdir, environment and network */
	int (*stop)(void *);
	void *arg;
	struct proc_watch watch;
};

static int watch_tick(void *arg);

/* The binding of SESSION_ID into SB. 1 bound, 0 not (yet), -1 with ERR set. */
static int bound(struct turn_sandbox *sb, struct db *db, const char *session_id, char *err,
		 size_t errsz)
{
	return recon_bound(sb->r->cfg, db, sb->sbx, session_id, &sb->bound, err, errsz);
}

/* Provision SESSION_ID now, or wait for whoever provisions it. 0 when it is bound after. */
static int provision(struct turn_sandbox *sb, struct db *db, const char *session_id, char *err,
		     size_t errsz)
{
	const struct config *cfg = sb->r->cfg;
	long long deadline = clock_mono_ms() + (long long)RUNNER_SANDBOX_WAIT_S * 1000;

	while (clock_mono_ms() < deadline) {
		struct recon rc;
		struct intent in;
		enum intent_take take;
		char now[CLOCK_DB_LEN], lease[CLOCK_DB_LEN];
		int b;

		clock_now(now, NULL);
		clock_in(cfg->lease_s, lease, NULL);
		if (intents_claim_session(db, session_id, sb->r->owner, now, lease, &in, &take)) {
			snprintf(err, errsz, "database: %s", db_error(db));
			return -1;
		}
		if (take == INTENT_STOPPED) {
			snprintf(err, errsz,
				 "its provisioning was stopped (terminated after too many failed "
				 "attempts: terrarium-reconciler --retry %s)",
				 session_id);
			return -1;
		}
		if (take == INTENT_TAKEN) {
			enum recon_outcome out;

			memset(&rc, 0, sizeof(rc));
			rc.cfg = cfg;
			rc.db = db;
			rc.sbx = *sb->sbx;
			snprintf(rc.owner, sizeof(rc.owner), "%s", sb->r->owner);
			rc.metrics_fd = rc.metrics_lock_fd = -1;
			/* the turn's lease is renewed (and its stop asked) while it provisions */
			rc.also = &sb->watch;
			sb->watch = (struct proc_watch){ watch_tick, sb, RUNNER_TOOL_POLL_MS };
			out = recon_process(&rc, &in);
			intent_release(&in);
			if (out != RECON_DONE) {
				snprintf(err, errsz,
					 "provisioning failed (see the session's "
					 "provisioning.last_error)");
				return -1;
			}
		} else if (take == INTENT_BUSY) {
			if (sb->stop && sb->stop(sb->arg))
				return -1;
			clock_sleep_ms(SANDBOX_WAIT_POLL_MS);
		}
		b = bound(sb, db, session_id, err, errsz);
		if (b)
			return b > 0 ? 0 : -1;
	}
	snprintf(err, errsz, "provisioning took longer than %d s", RUNNER_SANDBOX_WAIT_S);
	return -1;
}

struct turn_sandbox *turn_sandbox_open(const struct runner *r, struct db *db,
				       const char *session_id, int (*stop)(void *), void *arg,
				       char *err, size_t errsz)
{
	struct turn_sandbox *sb = calloc(1, sizeof(*sb));
	int b;

	if (!sb) {
		snprintf(err, errsz, "out of memory");
		return NULL;
	}
	/* the model chooses the commands: never as host processes unless the operator says so */
	if (!r->sbx->caps->isolated && !r->cfg->runner_host_tools) {
		snprintf(
			err, errsz,
			"backend '%s' runs commands as host processes of the runner's account, "
			"without isolation: built-in tools run there only with [runner] host_tools "
			"= 1 (tests and development; docs/runner.md)",
			r->sbx->caps->name);
		free(sb);
		return NULL;
	}
	sb->r = r;
	sb->sbx = r->sbx;
	sb->stop = stop;
	sb->arg = arg;
	b = bound(sb, db, session_id, err, errsz);
	if (b == 0 && !provision(sb, db, session_id, err, errsz))
		b = 1;
	if (b != 1) {
		free(sb);
		return NULL;
	}
	return sb;
}

void turn_sandbox_close(struct turn_sandbox *sb)
{
	if (!sb)
		return;
	recon_bound_release(&sb->bound);
	free(sb);
}

static int watch_tick(void *arg)
{
	struct turn_sandbox *sb = arg;

	return sb->stop && sb->stop(sb->arg);
}

static int sandbox_run(void *ctx, char *const argv[], const char *in, size_t inlen, long timeout_ms,
		       size_t cap, struct tool_exec_out *out, char *err, size_t errsz)
{
	struct turn_sandbox *sb = ctx;
	struct proc_result res;
	long timeout_s = (timeout_ms + 999) / 1000;
	/* the sandbox's unprivileged user where the backend has one (docker) */
	struct sbx_exec ex = { .argv = argv,
			       .timeout_s = timeout_s > 0 ? timeout_s : 1,
			       .output_max = cap,
			       .watch = &sb->watch,
			       .stdin_data = in,
			       .stdin_len = in ? inlen : 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	sb->watch = (struct proc_watch){ watch_tick, sb, RUNNER_TOOL_POLL_MS };
	recon_bound_exec(&sb->bound, &ex);
	rc = sbx_run(sb->sbx, sb->bound.id, &ex, &res);
	if (rc) {
		snprintf(err, errsz, "%.*s", (int)res.len,
			 res.output ? res.output : "the command could not start");
		proc_result_release(&res);
		return -1;
	}
	out->status = res.exit_code;
	out->timed_out = res.timed_out;
	out->cancelled = res.stopped;
	out->output = res.output;
	out->len = res.len;
	out->truncated = res.truncated;
	return 0;
}

void turn_sandbox_exec(struct turn_sandbox *sb, int (*stop)(void *), void *arg, struct tool_exec *x)
{
	sb->stop = stop;
	sb->arg = arg;
	memset(x, 0, sizeof(*x));
	x->run = sandbox_run;
	x->ctx = sb;
	x->workdir = sb->bound.workdir;
	x->stdin_ok = sb->sbx->ops->has_stdin;
}
