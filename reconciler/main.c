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
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/startup.h"
#include "../db/idempotency.h"
#include "../db/keys.h"
#include "../db/sessions.h"
#include "metrics.h"
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

/* The gauges of the metrics file: intents by kind and state, those due now and how long the
 * oldest has waited (each left out when its query fails). */
static void print_gauges(struct recon *r, FILE *f)
{
	char now_db[CLOCK_DB_LEN];
	struct db_rows rows;

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
}

/* The metrics file as it stands (at most RECON_METRICS_MAX bytes) into a new string (caller
 * frees; "" when there is none or it cannot be read), or NULL when out of memory. Read through
 * PATH, or through the descriptor opened as root when PATH cannot be opened now. */
static char *read_metrics(const struct recon *r, const char *path)
{
	char *text = calloc(1, RECON_METRICS_MAX + 1);
	FILE *f = fopen(path, "r");

	if (!text) {
		if (f)
			fclose(f);
		return NULL;
	}
	if (f) {
		/* a short or failed read leaves what was read (calloc'd: terminated) */
		text[fread(text, 1, RECON_METRICS_MAX, f)] = '\0';
		fclose(f);
	} else if (r->metrics_fd >= 0 && pread(r->metrics_fd, text, RECON_METRICS_MAX, 0) < 0) {
		text[0] = '\0';
	}
	return text;
}

/* Replace the file PATH by TEXT (LEN bytes): written to PATH.tmp and renamed, so a collector
 * never reads half; when the directory is closed to the [reconciler] user (it was opened as
 * root), rewritten in place through the descriptor opened then. 0 or -1. */
static int replace_metrics(const struct recon *r, const char *path, const char *text, size_t len)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f && errno == EACCES && r->metrics_fd >= 0)
		return ftruncate(r->metrics_fd, 0) ||
				       pwrite(r->metrics_fd, text, len, 0) != (ssize_t)len
			       ? -1
			       : 0;
	if (!f)
		return -1;
	if (fwrite(text, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) || rename(tmp, path) ? -1 : 0;
}

/* Prometheus textfile (reconciler/metrics.h). The counters are totals over every run that wrote
 * PATH: under a lock (PATH.lock) shared by concurrent runs, a run reads the totals in the file,
 * adds what it did since it last wrote, and writes the whole file once. 0 or -1. */
static int write_metrics(struct recon *r, const char *path)
{
	struct metrics m;
	char *old = NULL, *text = NULL;
	size_t text_len = 0;
	FILE *f;
	int ret = -1;

	if (r->metrics_lock_fd < 0 || flock(r->metrics_lock_fd, LOCK_EX))
		return -1;
	old = read_metrics(r, path);
	if (!old)
		goto out;
	metrics_parse(&m, old);
	metrics_add(&m, &r->stats, &r->stats_written);
	f = open_memstream(&text, &text_len);
	if (!f)
		goto out;
	print_gauges(r, f);
	metrics_print(f, &m, (long long)time(NULL));
	if (fclose(f) || replace_metrics(r, path, text, text_len))
		goto out;
	r->stats_written = r->stats;
	ret = 0;
out:
	free(old);
	free(text);
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
	if (sbx_list(&r->sbx, found, RECON_SWEEP_MAX, &total, NULL, err, sizeof(err))) {
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
			if (sbx_destroy(&r->sbx, l->id, NULL, err, sizeof(err))) {
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
			log_error("claim: %s: %s", db_status_name(st), db_error(r->db));
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

/* Run a command in a session's bound sandbox, with the network its policy allows and the
 * environment its installs had (recon_env: its packages on PATH and the language paths). A
 * deleted session has no sandbox to run in. A sandbox found gone has its session provisioned
 * again (drift.c). */
static int exec_in(struct recon *r, const char *session, char **argv)
{
	struct proc_result res;
	char err[SBX_ERR_MAX];
	struct recon_bound *b = malloc(sizeof(*b)); /* its environment is large */
	struct sbx_exec ex = { .argv = argv, .timeout_s = RECON_EXEC_TIMEOUT_S };
	int rc;

	if (!b)
		return 3;
	rc = recon_bound(r->cfg, r->db, &r->sbx, session, b, err, sizeof(err));
	if (rc <= 0) {
		if (rc == 0)
			fprintf(stderr,
				"session %s has no sandbox (not provisioned yet, or deleted)\n",
				session);
		else
			fprintf(stderr, "session %s: %s\n", session, err);
		free(b);
		return rc == 0 ? 2 : 3;
	}
	recon_bound_exec(b, &ex);
	rc = sbx_run(&r->sbx, b->id, &ex, &res);
	if (rc && r->sbx.ops->exists && sbx_exists(&r->sbx, b->id, NULL, err, sizeof(err)) == 0) {
		fprintf(stderr,
			"session %s: its sandbox %s no longer exists; the session is provisioned "
			"again by the next reconciler run\n",
			session, b->id);
		recon_drift_found(r, session, b->id);
		recon_bound_release(b);
		free(b);
		proc_result_release(&res);
		return 2;
	}
	recon_bound_release(b);
	free(b);
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
	if (sbx_check(&r->sbx, err, sizeof(err))) {
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
	char err[SBX_ERR_MAX];
	int ret = 2, found = 0;

	if (parse_args(argc, argv, &o))
		return usage();
	if (startup_config(&cfg, o.config))
		return 2;
	memset(&r, 0, sizeof(r));
	r.metrics_fd = r.metrics_lock_fd = -1;
	r.cfg = &cfg;
	r.db = db_new(&cfg);
	if (!r.db)
		return 3;
	startup_owner(r.owner, sizeof(r.owner), "");
	startup_signals(on_stop);

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
