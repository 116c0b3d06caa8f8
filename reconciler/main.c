/* terrarium-reconciler: turns provisioning intents into sandboxes (DESIGN.md, Provisioning).
 *
 *   terrarium-reconciler [-c CONFIG] --once [--limit N] [--max-seconds S] [--metrics-file P]
 *   terrarium-reconciler [-c CONFIG] --loop [--max-seconds S] [--metrics-file P]
 *   terrarium-reconciler [-c CONFIG] --status
 *   terrarium-reconciler [-c CONFIG] --retry SESSION_ID
 *   terrarium-reconciler [-c CONFIG] --dry-run [--limit N]
 *   terrarium-reconciler [-c CONFIG] --exec SESSION_ID -- COMMAND [ARG...]
 *   terrarium-reconciler [-c CONFIG] --check
 *
 * --once claims due intents and carries each to its end; several reconcilers may run at once
 * (claims use FOR UPDATE SKIP LOCKED and leases). The exit status is 1 when an intent failed in
 * the run, 2 on usage or configuration errors, 3 when the database could not be used. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../db/idempotency.h"
#include "recon.h"

#define RECON_DEFAULT_LIMIT 100
#define RECON_CLAIM_BATCH 8
#define RECON_LOOP_IDLE_MS 250      /* --loop: pause when nothing is due (claim latency) */
#define RECON_DRIFT_CHECK_MAX 20     /* bound sandboxes checked for drift per run */
#define RECON_LOOP_HOUSEKEEP_S 30    /* --loop: drift checks and cache pruning this often */
#define RECON_STATUS_FAILURES 10
#define RECON_STATUS_ERROR_CHARS 200
#define RECON_EXEC_TIMEOUT_S 300
#define RECON_IDEM_EXPIRE_BATCH 10000 /* expired idempotency keys removed per run */

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct options {
	const char *config, *metrics, *retry, *exec_session;
	char **exec_argv;
	int once, loop, status, dry_run, check;
	long limit, max_seconds;
};

static int usage(void)
{
	fprintf(stderr,
		"usage: terrarium-reconciler [-c CONFIG] --once [--limit N] [--max-seconds S]"
		" [--metrics-file PATH]\n"
		"       terrarium-reconciler [-c CONFIG] --loop [--max-seconds S] [--metrics-file PATH]\n"
		"       terrarium-reconciler [-c CONFIG] --status | --retry SESSION_ID | --check\n"
		"       terrarium-reconciler [-c CONFIG] --dry-run [--limit N]\n"
		"       terrarium-reconciler [-c CONFIG] --exec SESSION_ID -- COMMAND [ARG...]\n");
	return 2;
}

static int parse_count(const char *s, long *out)
{
	char *end;
	errno = 0;
	*out = strtol(s, &end, 10);
	return !*s || *end || errno || *out < 1 ? -1 : 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	o->limit = RECON_DEFAULT_LIMIT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-c") && next)
			o->config = argv[++i];
		else if (!strcmp(a, "--once"))
			o->once = 1;
		else if (!strcmp(a, "--loop"))
			o->loop = 1;
		else if (!strcmp(a, "--status"))
			o->status = 1;
		else if (!strcmp(a, "--check"))
			o->check = 1;
		else if (!strcmp(a, "--dry-run"))
			o->dry_run = 1;
		else if (!strcmp(a, "--retry") && next)
			o->retry = argv[++i];
		else if (!strcmp(a, "--metrics-file") && next)
			o->metrics = argv[++i];
		else if (!strcmp(a, "--limit") && next) {
			if (parse_count(argv[++i], &o->limit))
				return -1;
		} else if (!strcmp(a, "--max-seconds") && next) {
			if (parse_count(argv[++i], &o->max_seconds))
				return -1;
		} else if (!strcmp(a, "--exec") && next) {
			o->exec_session = argv[++i];
			if (i + 2 >= argc || strcmp(argv[i + 1], "--"))
				return -1;
			o->exec_argv = argv + i + 2;
			break;
		} else
			return -1;
	}
	return o->once + o->loop + o->status + o->dry_run + o->check + !!o->retry +
			       !!o->exec_session ==
		       1
		       ? 0
		       : -1;
}

/* Prometheus textfile: written to PATH.tmp and renamed, so a collector never reads half. */
static int write_metrics(struct recon *r, const char *path)
{
	char tmp[4096];
	struct db_rows rows;
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "# HELP terrarium_intents Provisioning intents by kind and state.\n"
		   "# TYPE terrarium_intents gauge\n");
	if (!intents_counts(r->db, &rows)) {
		for (unsigned i = 0; i < rows.nrows; i++)
			fprintf(f, "terrarium_intents{kind=\"%s\",state=\"%s\"} %s\n",
				db_cell(&rows, i, 0), db_cell(&rows, i, 1), db_cell(&rows, i, 2));
		db_rows_free(&rows);
	}
	fprintf(f,
		"# HELP terrarium_reconciler_attempts_total Intents claimed (attempts) in this run.\n"
		"# TYPE terrarium_reconciler_attempts_total counter\n"
		"terrarium_reconciler_attempts_total %ld\n"
		"# HELP terrarium_reconciler_done_total Intents completed (bound or torn down) in this run.\n"
		"# TYPE terrarium_reconciler_done_total counter\n"
		"terrarium_reconciler_done_total %ld\n"
		"# HELP terrarium_reconciler_failures_total Attempts that failed in this run.\n"
		"# TYPE terrarium_reconciler_failures_total counter\n"
		"terrarium_reconciler_failures_total %ld\n"
		"# HELP terrarium_reconciler_leases_lost_total Intents dropped after losing the lease.\n"
		"# TYPE terrarium_reconciler_leases_lost_total counter\n"
		"terrarium_reconciler_leases_lost_total %ld\n"
		"# HELP terrarium_reconciler_step_seconds Time spent per provisioning step.\n"
		"# TYPE terrarium_reconciler_step_seconds summary\n",
		r->stats.claimed, r->stats.done, r->stats.failed,
		r->stats.lost);
	for (int i = 0; i < r->stats.nsteps; i++)
		fprintf(f,
			"terrarium_reconciler_step_seconds_sum{step=\"%s\"} %.6f\n"
			"terrarium_reconciler_step_seconds_count{step=\"%s\"} %ld\n",
			r->stats.steps[i].step, r->stats.steps[i].seconds, r->stats.steps[i].step,
			r->stats.steps[i].count);
	fprintf(f,
		"# HELP terrarium_reconciler_last_run_timestamp_seconds End of the last run.\n"
		"# TYPE terrarium_reconciler_last_run_timestamp_seconds gauge\n"
		"terrarium_reconciler_last_run_timestamp_seconds %ld\n",
		(long)time(NULL));
	if (fclose(f))
		return -1;
	return rename(tmp, path);
}

/* Claim and process until nothing is due, LIMIT intents were taken, or the deadline. A --once
 * run judges "due" by its start time, so an intent that fails during the run waits for a later
 * run even when its backoff is zero. */
static void idle(void)
{
	struct timespec ts = { RECON_LOOP_IDLE_MS / 1000, (RECON_LOOP_IDLE_MS % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Each run, and every RECON_LOOP_HOUSEKEEP_S in --loop: bound sandboxes that vanished are
 * provisioned again (drift.c); stale package cache entries go (cache.c). */
static void housekeep(struct recon *r)
{
	recon_drift_check(r, RECON_DRIFT_CHECK_MAX);
	recon_cache_prune(r);
}

static int run(struct recon *r, const struct options *o)
{
	time_t housekept = time(NULL);
	int idle_before = 0;
	time_t deadline = o->max_seconds ? time(NULL) + o->max_seconds : 0;
	char start[CLOCK_DB_LEN];
	long taken = 0;
	int failed = 0;

	/* first, so that a session found drifted is due in this very run */
	housekeep(r);
	clock_now(start, NULL);
	/* housekeeping the API leaves to the reconciler: idempotency keys past their 24 hours */
	{
		unsigned long long removed = 0;
		if (idem_expire(r->db, start, RECON_IDEM_EXPIRE_BATCH, &removed))
			log_warn("expiring idempotency keys: %s", db_error(r->db));
		else if (removed)
			log_info("expired %llu idempotency keys", removed);
	}
	while (!stop_requested && (!deadline || time(NULL) < deadline)) {
		struct intent batch[RECON_CLAIM_BATCH];
		char now[CLOCK_DB_LEN], lease[CLOCK_DB_LEN];
		long want = o->loop ? RECON_CLAIM_BATCH : o->limit - taken;
		int n = 0;
		enum db_status st;

		if (!o->loop && want <= 0)
			break;
		if (o->loop && time(NULL) - housekept >= RECON_LOOP_HOUSEKEEP_S) {
			housekeep(r);
			housekept = time(NULL);
		}
		if (want > RECON_CLAIM_BATCH)
			want = RECON_CLAIM_BATCH;
		if (o->loop)
			clock_now(now, NULL);
		else
			strcpy(now, start);
		if (o->loop && idle_before) {
			/* idle: one cheap statement per poll until something is due */
			int any = 0;
			if (intents_any_due(r->db, now, &any) == DB_OK && !any) {
				idle();
				continue;
			}
		}
		clock_in(r->cfg->lease_s, lease, NULL);
		st = intents_claim(r->db, r->owner, now, lease, (int)want, batch, &n);
		if (st) {
			log_error("claim: database %s: %s", db_status_name(st), db_error(r->db));
			if (!o->loop)
				return 3;
			idle();
			continue;
		}
		idle_before = !n;
		if (!n) {
			if (!o->loop)
				break;
			idle();
			continue;
		}
		taken += n;
		r->stats.claimed += n;
		for (int i = 0; i < n; i++)
			log_debug("claimed intent %lld (session %s)", batch[i].id, batch[i].session_id);
		for (int i = 0; i < n; i++) {
			enum recon_outcome out = recon_process(r, &batch[i]);
			failed |= out == RECON_FAILED || out == RECON_DB_ERROR;
			intent_release(&batch[i]);
		}
		if (o->metrics && o->loop)
			write_metrics(r, o->metrics);
	}
	log_info("run: %ld claimed, %ld done, %ld torn down, %ld failed, %ld lost", r->stats.claimed,
		 r->stats.done - r->stats.teardowns, r->stats.teardowns, r->stats.failed,
		 r->stats.lost);
	return failed ? 1 : 0;
}

static int status(struct recon *r)
{
	struct db_rows rows;
	char now[CLOCK_DB_LEN];

	clock_now(now, NULL);
	if (intents_counts(r->db, &rows))
		return 3;
	printf("%-10s %-11s %s\n", "KIND", "STATE", "COUNT");
	for (unsigned i = 0; i < rows.nrows; i++)
		printf("%-10s %-11s %s\n", db_cell(&rows, i, 0), db_cell(&rows, i, 1),
		       db_cell(&rows, i, 2));
	db_rows_free(&rows);
	if (intents_oldest_due(r->db, now, &rows))
		return 3;
	printf("\ndue now: %s, oldest due since %s\n", db_cell(&rows, 0, 1),
	       db_cell(&rows, 0, 0) ? db_cell(&rows, 0, 0) : "-");
	db_rows_free(&rows);
	if (intents_failures(r->db, RECON_STATUS_FAILURES, &rows))
		return 3;
	printf("\nrecent failures:%s\n", rows.nrows ? "" : " none");
	for (unsigned i = 0; i < rows.nrows; i++) {
		const char *e = db_cell(&rows, i, 5);
		char line[RECON_STATUS_ERROR_CHARS + 1];
		size_t k = 0;
		for (; e && *e && k < RECON_STATUS_ERROR_CHARS; e++)
			line[k++] = *e == '\n' ? ' ' : *e;
		line[k] = '\0';
		printf("  %s %s attempts=%s at=%s next=%s: %s\n", db_cell(&rows, i, 0),
		       db_cell(&rows, i, 1), db_cell(&rows, i, 2), db_cell(&rows, i, 3),
		       db_cell(&rows, i, 4), line);
	}
	db_rows_free(&rows);
	return 0;
}

static int dry_run(struct recon *r, long limit)
{
	struct db_rows rows;
	char now[CLOCK_DB_LEN];

	clock_now(now, NULL);
	if (intents_due(r->db, now, (int)limit, &rows))
		return 3;
	for (unsigned i = 0; i < rows.nrows; i++)
		printf("would %s session %s (intent %s, state %s, attempts %s, done %s)\n",
		       !strcmp(db_cell(&rows, i, 2), "teardown") ? "tear down" : "provision",
		       db_cell(&rows, i, 1), db_cell(&rows, i, 0), db_cell(&rows, i, 3),
		       db_cell(&rows, i, 4), db_cell(&rows, i, 5));
	printf("%u due\n", rows.nrows);
	db_rows_free(&rows);
	return 0;
}

/* Run a command in a session's bound sandbox, with the network its policy allows and the
 * session's environment (its packages on PATH and the language paths). A sandbox found gone
 * has its session provisioned again (drift.c). */
static int exec_in(struct recon *r, const char *session, char **argv)
{
	struct db_rows rows;
	struct proc_result res;
	char workdir[CONFIG_STR_MAX * 2], err[SBX_ERR_MAX];
	struct recon_env *env = malloc(sizeof(*env));
	int rc;

	if (!env || intents_binding(r->db, session, &rows)) {
		free(env);
		return 3;
	}
	if (!rows.nrows) {
		fprintf(stderr, "session %s has no sandbox (not provisioned yet?)\n", session);
		db_rows_free(&rows);
		free(env);
		return 2;
	}
	r->sbx.ops->workdir(&r->sbx, db_cell(&rows, 0, 1), workdir, sizeof(workdir));
	recon_env(r->cfg, workdir, env);
	rc = r->sbx.ops->run(&r->sbx, db_cell(&rows, 0, 1), db_cell(&rows, 0, 2) == NULL, argv,
			     env->envp, RECON_EXEC_TIMEOUT_S, &res);
	free(env);
	if (rc && r->sbx.ops->exists &&
	    r->sbx.ops->exists(&r->sbx, db_cell(&rows, 0, 1), err, sizeof(err)) == 0) {
		fprintf(stderr,
			"session %s: its sandbox %s no longer exists; the session is provisioned "
			"again by the next reconciler run\n",
			session, db_cell(&rows, 0, 1));
		recon_drift_found(r, session, db_cell(&rows, 0, 1));
		db_rows_free(&rows);
		proc_result_release(&res);
		return 2;
	}
	db_rows_free(&rows);
	if (rc && res.output)
		fprintf(stderr, "%.*s\n", (int)res.len, res.output);
	else if (res.output)
		fwrite(res.output, 1, res.len, stdout);
	rc = rc ? 127 : res.exit_code;
	proc_result_release(&res);
	return rc;
}

int main(int argc, char **argv)
{
	struct options o;
	struct config cfg;
	struct recon r;
	char host[64] = "host", err[SBX_ERR_MAX], rnd[12];
	struct sigaction sa;
	int ret = 2, found = 0;

	if (parse_args(argc, argv, &o))
		return usage();
	if (config_load(&cfg, o.config)) {
		fprintf(stderr, "config: %s\n", cfg.error);
		return 2;
	}
	log_set_level(cfg.log_level);
	memset(&r, 0, sizeof(r));
	r.cfg = &cfg;
	r.db = db_new(&cfg);
	if (!r.db)
		return 3;
	gethostname(host, sizeof(host) - 1);
	random_id(rnd, sizeof(rnd), "", 8);
	snprintf(r.owner, sizeof(r.owner), "%.60s:%d:%s", host, (int)getpid(), rnd);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (db_connect(r.db)) {
		log_error("database: %s", db_error(r.db));
		ret = 3;
		goto out;
	}
	if (o.check) {
		log_info("configuration %s read; database reachable; backend %s",
			 config_path(o.config), cfg.backend);
		ret = 0;
	} else if (o.status) {
		ret = status(&r);
	} else if (o.dry_run) {
		ret = dry_run(&r, o.limit);
	} else if (o.retry) {
		char now[CLOCK_DB_LEN];
		clock_now(now, NULL);
		if (intents_retry(r.db, o.retry, now, &found)) {
			ret = 3;
		} else if (!found) {
			fprintf(stderr, "no failed or terminated provisioning for session %s\n", o.retry);
			ret = 1;
		} else {
			printf("session %s: provisioning due again\n", o.retry);
			ret = 0;
		}
	} else {
		if (sbx_open(&r.sbx, &cfg, config_path(o.config), err, sizeof(err))) {
			log_error("sandbox backend: %s", err);
			ret = 2;
			goto out;
		}
		if (o.exec_session) {
			ret = exec_in(&r, o.exec_session, o.exec_argv);
		} else {
			ret = run(&r, &o);
			if (o.metrics && write_metrics(&r, o.metrics))
				log_error("metrics file %s: %s", o.metrics, strerror(errno));
		}
	}
out:
	sbx_close(&r.sbx);
	db_free(r.db);
	return ret;
}
