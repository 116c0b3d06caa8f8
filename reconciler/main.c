/* terrarium-reconciler: turns provisioning intents into sandboxes (docs/design.md, Provisioning).
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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../db/idempotency.h"
#include "../db/keys.h"
#include "../db/sessions.h"
#include "recon.h"

#define RECON_DEFAULT_LIMIT 100
#define RECON_CLAIM_BATCH 8
#define RECON_LOOP_IDLE_MS 250	  /* --loop: pause when nothing is due (claim latency) */
#define RECON_DRIFT_CHECK_MAX 20  /* bound sandboxes checked for drift per run */
#define RECON_LOOP_HOUSEKEEP_S 30 /* --loop: drift checks and cache pruning this often */
#define RECON_STATUS_FAILURES 10
#define RECON_STATUS_ERROR_CHARS 200
#define RECON_EXEC_TIMEOUT_S 300
#define RECON_IDEM_EXPIRE_BATCH 10000  /* expired idempotency keys removed per run */
#define RECON_METRICS_MAX (256 * 1024) /* bytes of an existing metrics file read back */
#define RECON_SWEEP_INTERVAL_S 60      /* --loop: sandboxes without a session looked for */
#define RECON_SWEEP_MAX 1000	       /* sandboxes a sweep looks at, at most (ops->list) */

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
		"       terrarium-reconciler [-c CONFIG] --loop [--max-seconds S] [--metrics-file "
		"PATH]\n"
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

/* The counters of the metrics file: name, help, this process's value. */
struct counter {
	const char *name, *help;
	long value;
};

/* The value of the sample NAME (whole line up to the value) in TEXT, or 0. */
static double sample(const char *text, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, name, len) && p[len] == ' ')
			return strtod(p + len + 1, NULL);
	return 0;
}

/* Open what write_metrics needs while the reconciler may still be root: PATH.lock and PATH
 * itself (for a directory the [reconciler] user cannot write to). */
static void open_metrics(struct recon *r, const char *path)
{
	char lock[4096];

	snprintf(lock, sizeof(lock), "%s.lock", path);
	r->metrics_lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (r->metrics_lock_fd < 0)
		r->metrics_lock_fd = open(lock, O_RDONLY | O_CLOEXEC);
	r->metrics_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
}

/* Prometheus textfile. The counters are totals over every run that wrote PATH: a run adds what
 * it did since it last wrote to the values in the file, under a lock (PATH.lock) shared by
 * concurrent runs. Written to PATH.tmp and renamed, so a collector never reads half; when the
 * directory is closed to the [reconciler] user (it was opened as root), rewritten in place. */
static int write_metrics(struct recon *r, const char *path)
{
	struct recon_stats *now = &r->stats, *was = &r->stats_written;
	struct counter counters[] = {
		{ "terrarium_reconciler_attempts_total", "Intents claimed (attempts).",
		  now->claimed - was->claimed },
		{ "terrarium_reconciler_done_total", "Intents completed (bound or torn down).",
		  now->done - was->done },
		{ "terrarium_reconciler_failures_total", "Attempts that failed.",
		  now->failed - was->failed },
		{ "terrarium_reconciler_leases_lost_total",
		  "Intents dropped after losing the lease.", now->lost - was->lost },
		{ "terrarium_reconciler_orphans_removed_total",
		  "Sandboxes no session owned, removed by the sweep.",
		  now->orphans - was->orphans },
	};
	char tmp[4096], name[256], now_db[CLOCK_DB_LEN];
	char *old = NULL, *text = NULL;
	size_t text_len = 0;
	struct db_rows rows;
	FILE *f = NULL;
	int ret = -1, in_place = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (r->metrics_lock_fd < 0 || flock(r->metrics_lock_fd, LOCK_EX))
		goto out;
	f = fopen(path, "r");
	old = calloc(1, RECON_METRICS_MAX + 1);
	if (!old)
		goto out;
	if (f) {
		/* a short or failed read leaves what was read (calloc'd: terminated) */
		size_t got = fread(old, 1, RECON_METRICS_MAX, f);
		old[got] = '\0';
		fclose(f);
	} else if (r->metrics_fd >= 0 && pread(r->metrics_fd, old, RECON_METRICS_MAX, 0) < 0) {
		old[0] = '\0';
	}
	f = open_memstream(&text, &text_len);
	if (!f)
		goto out;
	fprintf(f, "# HELP terrarium_intents Provisioning intents by kind and state.\n"
		   "# TYPE terrarium_intents gauge\n");
	if (!intents_counts(r->db, &rows)) {
		for (unsigned i = 0; i < rows.nrows; i++)
			fprintf(f, "terrarium_intents{kind=\"%s\",state=\"%s\"} %s\n",
				db_cell(&rows, i, 0), db_cell(&rows, i, 1), db_cell(&rows, i, 2));
		db_rows_free(&rows);
	}
	clock_now(now_db, NULL);
	if (!intents_oldest_due(r->db, now_db, &rows)) {
		fprintf(f,
			"# HELP terrarium_intents_due Intents due now (expired claims included).\n"
			"# TYPE terrarium_intents_due gauge\nterrarium_intents_due %s\n"
			"# HELP terrarium_intents_oldest_due_seconds How long the oldest due intent"
			" has waited.\n"
			"# TYPE terrarium_intents_oldest_due_seconds gauge\n"
			"terrarium_intents_oldest_due_seconds %.3f\n",
			db_cell(&rows, 0, 1), strtod(db_cell(&rows, 0, 2), NULL));
		db_rows_free(&rows);
	}
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++)
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %.0f\n", counters[i].name,
			counters[i].help, counters[i].name, counters[i].name,
			(old ? sample(old, counters[i].name) : 0) + (double)counters[i].value);
	fprintf(f, "# HELP terrarium_reconciler_step_seconds Time spent per provisioning step.\n"
		   "# TYPE terrarium_reconciler_step_seconds summary\n");
	/* the steps this process saw, then those only the file has */
	for (int i = 0; i < now->nsteps; i++) {
		const struct step_stat *st = &now->steps[i], *prev = NULL;
		double sum, count;
		for (int k = 0; k < was->nsteps; k++)
			if (!strcmp(was->steps[k].step, st->step))
				prev = &was->steps[k];
		snprintf(name, sizeof(name), "terrarium_reconciler_step_seconds_sum{step=\"%s\"}",
			 st->step);
		sum = (old ? sample(old, name) : 0) + st->seconds - (prev ? prev->seconds : 0);
		fprintf(f, "%s %.6f\n", name, sum);
		snprintf(name, sizeof(name), "terrarium_reconciler_step_seconds_count{step=\"%s\"}",
			 st->step);
		count = (old ? sample(old, name) : 0) +
			(double)(st->count - (prev ? prev->count : 0));
		fprintf(f, "%s %.0f\n", name, count);
	}
	for (const char *p = old; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		static const char pre[] = "terrarium_reconciler_step_seconds_";
		const char *q = strstr(p, "{step=\"");
		size_t len = strcspn(p, "\n");
		int seen = 0;
		if (strncmp(p, pre, sizeof(pre) - 1) || !q || q > p + len)
			continue;
		for (int i = 0; i < now->nsteps; i++) {
			size_t sl = strlen(now->steps[i].step);
			if (!strncmp(q + 7, now->steps[i].step, sl) && q[7 + sl] == '"')
				seen = 1;
		}
		if (!seen)
			fprintf(f, "%.*s\n", (int)len, p);
	}
	fprintf(f,
		"# HELP terrarium_reconciler_last_run_timestamp_seconds End of the last run.\n"
		"# TYPE terrarium_reconciler_last_run_timestamp_seconds gauge\n"
		"terrarium_reconciler_last_run_timestamp_seconds %ld\n",
		(long)time(NULL));
	if (fclose(f)) {
		f = NULL;
		goto out;
	}
	f = fopen(tmp, "w");
	if (!f && errno == EACCES && r->metrics_fd >= 0)
		in_place = 1;
	else if (!f || fwrite(text, 1, text_len, f) != text_len || fclose(f) || rename(tmp, path))
		goto out;
	f = NULL;
	if (in_place && (ftruncate(r->metrics_fd, 0) ||
			 pwrite(r->metrics_fd, text, text_len, 0) != (ssize_t)text_len))
		goto out;
	*was = *now;
	ret = 0;
out:
	if (f)
		fclose(f);
	free(old);
	free(text);
	if (r->metrics_lock_fd >= 0)
		flock(r->metrics_lock_fd, LOCK_UN);
	return ret;
}

/* Sandboxes of ours that no session owns: what the backend lists (ops->list: directories under
 * the sandbox root, or sandboxes labelled with this deployment on the service) made for a session
 * (named like one) that has no session row. A session row stays while anything of it may exist:
 * a deleted session keeps it until its teardown ran, and a session being provisioned has it
 * (its intent is marked "a sandbox may exist" before the create), so an owned sandbox or one
 * whose create is in flight for a live session is never taken. The list is read before the
 * rows: a sandbox listed for a row gone by then was torn down or never owned. At most
 * RECON_SWEEP_MAX sandboxes are looked at per run; each removed is logged. */
static void sweep(struct recon *r)
{
	struct sbx_listed *found;
	const char *ids[INTENT_OWNED_IDS];
	int at[INTENT_OWNED_IDS], exists[INTENT_OWNED_IDS], total = 0, n = 0;
	char err[SBX_ERR_MAX];

	if (!r->sbx.ops->list)
		return;
	found = calloc(RECON_SWEEP_MAX, sizeof(*found));
	if (!found) {
		log_warn("sweep: out of memory");
		return;
	}
	if (r->sbx.ops->list(&r->sbx, found, RECON_SWEEP_MAX, &total, err, sizeof(err))) {
		log_warn("sweep: listing the sandboxes: %s", err);
		goto out;
	}
	for (int k = 0; k <= total; k++) {
		if (k < total && !strncmp(found[k].name, SES_ID_PREFIX, strlen(SES_ID_PREFIX))) {
			ids[n] = found[k].name;
			at[n++] = k;
		}
		if (n < INTENT_OWNED_IDS && k < total)
			continue;
		if (n && intents_sessions_exist(r->db, ids, n, exists)) {
			log_warn("sweep: database: %s", db_error(r->db));
			break;
		}
		for (int i = 0; i < n; i++) {
			const struct sbx_listed *l = &found[at[i]];
			if (exists[i])
				continue;
			if (r->sbx.ops->destroy(&r->sbx, l->id, err, sizeof(err))) {
				log_warn("sweep: sandbox %s of session %s has no session; removing "
					 "it "
					 "failed: %s",
					 l->id, l->name, err);
			} else {
				log_warn("sweep: removed sandbox %s: no session owns it (made for "
					 "%s)",
					 l->id, l->name);
				r->stats.orphans++;
			}
		}
		n = 0;
	}
out:
	free(found);
}

/* Claim and process until nothing is due, LIMIT intents were taken, or the deadline. A --once
 * run judges "due" by its start time, so an intent that fails during the run waits for a later
 * run even when its backoff is zero. */
static void idle(void)
{
	clock_sleep_ms(RECON_LOOP_IDLE_MS); /* a stop request (SIGTERM) ends it early */
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
	time_t last_sweep;

	/* first, so that a session found drifted is due in this very run */
	housekeep(r);
	clock_now(start, NULL);
	sweep(r);
	last_sweep = time(NULL);
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
		if (o->loop && time(NULL) - last_sweep >= RECON_SWEEP_INTERVAL_S) {
			sweep(r);
			last_sweep = time(NULL);
		}
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
			log_debug("claimed intent %lld (session %s)", batch[i].id,
				  batch[i].session_id);
		for (int i = 0; i < n; i++) {
			enum recon_outcome out = recon_process(r, &batch[i]);
			failed |= out == RECON_FAILED || out == RECON_DB_ERROR;
			intent_release(&batch[i]);
		}
		if (o->metrics && o->loop)
			write_metrics(r, o->metrics);
	}
	log_info("run: %ld claimed, %ld done, %ld torn down, %ld failed, %ld lost",
		 r->stats.claimed, r->stats.done - r->stats.teardowns, r->stats.teardowns,
		 r->stats.failed, r->stats.lost);
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
		       !strcmp(db_cell(&rows, i, 2), INTENT_TEARDOWN) ? "tear down" : "provision",
		       db_cell(&rows, i, 1), db_cell(&rows, i, 0), db_cell(&rows, i, 3),
		       db_cell(&rows, i, 4), db_cell(&rows, i, 5));
	printf("%u due\n", rows.nrows);
	db_rows_free(&rows);
	return 0;
}

/* A backend that wraps every command with its allowlist (srt) learns the bound one, EGRESS
 * (JSON array text), for sandbox ID. 0 or -1 (reported). */
static int apply_bound_egress(struct recon *r, const char *id, const char *egress)
{
	char err[SBX_ERR_MAX];
	json_t *hosts = json_loads(egress, 0, NULL);
	int rc = hosts ? r->sbx.ops->set_egress(&r->sbx, id, hosts, err, sizeof(err)) : -1;

	if (!hosts)
		snprintf(err, sizeof(err), "the bound egress policy does not parse");
	if (rc)
		fprintf(stderr, "egress policy: %s\n", err);
	json_decref(hosts);
	return rc;
}

/* Run a command in a session's bound sandbox, with the network its policy allows and the
 * environment its installs had (recon_env: its packages on PATH and the language paths). A
 * deleted session has no sandbox to run in. A sandbox found gone has its session provisioned
 * again (drift.c). */
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
		fprintf(stderr, "session %s has no sandbox (not provisioned yet, or deleted)\n",
			session);
		db_rows_free(&rows);
		free(env);
		return 2;
	}
	if (r->sbx.ops->egress_per_command && db_cell(&rows, 0, 2) &&
	    apply_bound_egress(r, db_cell(&rows, 0, 1), db_cell(&rows, 0, 2))) {
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

/* The database's deployment id into r->sbx.deployment (hex): what docker and the HTTP backends
 * label sandboxes with, and list by. 0, or -1 (logged). */
static int load_deployment(struct recon *r)
{
	unsigned char id[KEYS_DEPLOYMENT_LEN];

	_Static_assert(KEYS_DEPLOYMENT_LEN * 2 < SBX_DEPLOYMENT_MAX,
		       "sbx.deployment holds the hex");
	if (secret_get(r->db, KEYS_DEPLOYMENT, id, sizeof(id))) {
		log_error("database: %s", db_error(r->db));
		return -1;
	}
	hex_encode(id, sizeof(id), r->sbx.deployment);
	return 0;
}

/* Started as root: the sandbox root (made above as root) becomes the [reconciler] user's,
 * then root is given up for good, before anything reads what a sandbox wrote. */
static int leave_root(struct recon *r)
{
	return sbx_leave_root(&r->sbx, r->cfg->reconciler_user, "reconciler");
}

/* --check of the backend (opened before root was given up): its self-test, when it has one,
 * runs a command the way sandboxes will. 0 or -1 (logged). */
static int backend_self_test(struct recon *r)
{
	char err[SBX_ERR_MAX];

	if (!r->sbx.ops->check)
		return 0;
	if (r->sbx.ops->check(&r->sbx, err, sizeof(err))) {
		log_error("sandbox backend %s: %s", r->cfg->backend, err);
		return -1;
	}
	log_info("backend %s: self-test passed", r->cfg->backend);
	return 0;
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
	r.metrics_fd = r.metrics_lock_fd = -1;
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
	if (o.once || o.loop || o.exec_session || o.check) {
		if (sbx_open(&r.sbx, &cfg, config_path(o.config), err, sizeof(err))) {
			log_error("sandbox backend: %s", err);
			ret = 2;
			goto out;
		}
	}
	if (r.sbx.ops && load_deployment(&r)) {
		ret = 3;
		goto out;
	}
	if (o.metrics)
		open_metrics(&r, o.metrics);
	/* the configuration was read and the database connected (the socket may be root's) */
	if (leave_root(&r)) {
		ret = 2;
		goto out;
	}
	if (o.check) {
		log_info("configuration %s read; database reachable; backend %s",
			 config_path(o.config), cfg.backend);
		ret = 0;
		/* a backend with a self-test runs a command the way sandboxes will */
		if (backend_self_test(&r))
			ret = 2;
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
			fprintf(stderr, "no failed or terminated intent for session %s\n", o.retry);
			ret = 1;
		} else {
			printf("session %s: due again\n", o.retry);
			ret = 0;
		}
	} else if (o.exec_session) {
		ret = exec_in(&r, o.exec_session, o.exec_argv);
	} else {
		ret = run(&r, &o);
		if (o.metrics && write_metrics(&r, o.metrics))
			log_error("metrics file %s: %s", o.metrics, strerror(errno));
	}
out:
	if (r.metrics_fd >= 0)
		close(r.metrics_fd);
	if (r.metrics_lock_fd >= 0)
		close(r.metrics_lock_fd);
	sbx_close(&r.sbx);
	db_free(r.db);
	return ret;
}
