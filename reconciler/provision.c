#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/egress.h"
#include "../common/log.h"
#include "../common/packages.h"
#include "../common/redact.h"
#include "recon.h"

#define RECON_ARGV_MAX 300 /* manager argv: a few options + up to 256 packages */
#define RECON_JITTER 0.2
#define RECON_RENEWALS_PER_LEASE 3     /* renewals while a command runs, per lease period */
#define RECON_LEASE_MARGIN_S 0.5       /* stop a command this long before an unrenewed lease ends */
#define RECON_ROOT_SHOWN "<sandboxes>" /* what last_error shows for the sandbox root */
#define RECON_HOST_SHOWN "<host>"      /* ... and for the other host paths it knows */
#define RECON_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

long recon_backoff(const struct config *cfg, long long attempts, double jitter)
{
	double d = (double)cfg->backoff_base_s;

	for (long long i = 1; i < attempts && d < (double)cfg->backoff_cap_s; i++)
		d *= 2;
	if (d > (double)cfg->backoff_cap_s)
		d = (double)cfg->backoff_cap_s;
	d *= 1.0 + RECON_JITTER * (2.0 * jitter - 1.0);
	return d < 0 ? 0 : (long)(d + 0.5);
}

/* Variables named by the CA bundle setting: every tool the managers run reads one of them. */
static const char *const ca_vars[] = {
	"SSL_CERT_FILE",      "NODE_EXTRA_CA_CERTS", "PIP_CERT",
	"REQUESTS_CA_BUNDLE", "CARGO_HTTP_CAINFO",   "GIT_SSL_CAINFO"
};

/* Add NAME=VALUE unless NAME is set already (the first setting wins) or it does not fit. */
static void env_set(struct recon_env *e, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void env_set(struct recon_env *e, const char *name, const char *fmt, ...)
{
	size_t len = strlen(name);
	va_list ap;
	int k;

	if (e->n >= RECON_ENV_MAX)
		return;
	for (int i = 0; i < e->n; i++)
		if (!strncmp(e->envp[i], name, len) && e->envp[i][len] == '=')
			return;
	k = snprintf(e->entry[e->n], RECON_ENV_ENTRY_MAX, "%s=", name);
	va_start(ap, fmt);
	k += vsnprintf(e->entry[e->n] + k, RECON_ENV_ENTRY_MAX - (size_t)k, fmt, ap);
	va_end(ap);
	if (k >= RECON_ENV_ENTRY_MAX)
		return;
	e->envp[e->n] = e->entry[e->n];
	e->envp[++e->n] = NULL;
}

/* The variables of a comma- or space-separated NAMES list that the reconciler has. */
static void env_pass(struct recon_env *e, const char *names)
{
	while (*names) {
		size_t len = strcspn(names, ", ");
		char name[CONFIG_STR_MAX];
		const char *value;

		if (len && len < sizeof(name)) {
			memcpy(name, names, len);
			name[len] = '\0';
			value = getenv(name);
			if (value)
				env_set(e, name, "%s", value);
		}
		names += len;
		names += strspn(names, ", ");
	}
}

void recon_env(const struct config *cfg, const char *workdir, struct recon_env *e)
{
	const char *path = cfg->sandbox_path[0] ? cfg->sandbox_path : getenv("PATH");

	e->n = 0;
	e->envp[0] = NULL;
	/* where each manager installs (common/packages.c), so installed packages load and their
	 * commands run without further setup */
	env_set(e, "PATH", "%s/node_modules/.bin:%s/bin:%s/.pip/bin:%s/.cargo/bin:%s/.gem/bin:%s",
		workdir, workdir, workdir, workdir, workdir, path ? path : RECON_DEFAULT_PATH);
	env_set(e, "NODE_PATH", "%s/node_modules", workdir);
	env_set(e, "PYTHONPATH", "%s/.pip", workdir);
	env_set(e, "GEM_HOME", "%s/.gem", workdir);
	env_set(e, "GEM_PATH", "%s/.gem", workdir);
	env_set(e, "HOME", "%s", workdir);
	env_set(e, "LANG", "C.UTF-8");
	env_set(e, "DEBIAN_FRONTEND", "noninteractive");
	env_set(e, "GOBIN", "%s/bin", workdir);
	env_set(e, "GOPATH", "%s/go", workdir);
	/* Go's module cache is read-only by default, which would stop the teardown */
	env_set(e, "GOFLAGS", "-modcacherw");
	env_set(e, "PIP_DISABLE_PIP_VERSION_CHECK", "1");
	env_set(e, "npm_config_update_notifier", "false");
	env_set(e, "CI", "true");
	/* the configured CA bundle before anything passed through: it is the one the sandbox can
	 * read (bwrap mounts it) */
	if (cfg->sandbox_ca_bundle[0])
		for (size_t i = 0; i < sizeof(ca_vars) / sizeof(ca_vars[0]); i++)
			env_set(e, ca_vars[i], "%s", cfg->sandbox_ca_bundle);
	env_pass(e, cfg->sandbox_pass_env);
	env_pass(e, cfg->sandbox_pass_env_extra);
}

int recon_bound(const struct config *cfg, struct db *db, struct sbx *sbx, const char *session_id,
		struct recon_bound *b, char *err, size_t errsz)
{
	struct db_rows rows;
	const char *policy;

	b->egress = NULL;
	if (intents_binding(db, session_id, &rows)) {
		snprintf(err, errsz, "database: %s", db_error(db));
		return -1;
	}
	if (!rows.nrows) {
		db_rows_free(&rows);
		return 0;
	}
	snprintf(b->id, sizeof(b->id), "%s", db_cell(&rows, 0, 1));
	policy = db_cell(&rows, 0, 2); /* NULL: unrestricted */
	b->share_net = policy == NULL;
	if (sbx->ops->egress_per_command && policy && !(b->egress = json_loads(policy, 0, NULL))) {
		snprintf(err, errsz, "the bound egress policy does not parse");
		db_rows_free(&rows);
		return -1;
	}
	db_rows_free(&rows);
	sbx_workdir(sbx, b->id, b->workdir, sizeof(b->workdir));
	recon_env(cfg, b->workdir, &b->env);
	return 1;
}

void recon_bound_exec(struct recon_bound *b, struct sbx_exec *ex)
{
	ex->envp = b->env.envp;
	ex->share_net = b->share_net;
	ex->egress = b->egress;
}

void recon_bound_release(struct recon_bound *b)
{
	json_decref(b->egress);
	b->egress = NULL;
}

/* a character that can continue a file name: a match followed or preceded by one is part of a
 * longer name, not the path */
static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* AFTER follows a match: does the name go on? (a '.' that ends a sentence ends it) */
static int longer_name(const char *after)
{
	return name_char(after[0]) && !(after[0] == '.' && !name_char(after[1]));
}

void recon_scrub(char *text, size_t size, const char *path, const char *shown)
{
	size_t plen = strlen(path), slen = strlen(shown), n = 0;
	const char *p = text;
	char *out;

	while (plen > 1 && path[plen - 1] == '/')
		plen--; /* "/srv/sb/" names /srv/sb */
	if (plen < 2 || !size || !(out = malloc(size)))
		return;
	while (*p && n < size - 1) {
		if (!strncmp(p, path, plen) && !longer_name(p + plen) &&
		    (p == text || (!name_char(p[-1]) && p[-1] != '/'))) {
			size_t k = slen < size - 1 - n ? slen : size - 1 - n;
			memcpy(out + n, shown, k);
			n += k;
			p += plen;
		} else {
			out[n++] = *p++;
		}
	}
	out[n] = '\0';
	memcpy(text, out, n + 1);
	free(out);
}

/* The host paths a reconciler knows of, each with what last_error shows instead; the longest
 * first, so a path inside another (the sandbox root under the configuration's directory) keeps
 * its own name. */
#define RECON_HIDDEN_MAX (SBX_MASKS_MAX + 8)
struct hidden {
	char path[CONFIG_STR_MAX];
	const char *shown;
};

static void hide(struct hidden *h, int *n, const char *path, const char *shown)
{
	if (*n < RECON_HIDDEN_MAX && path[0] == '/' && path[1] && strlen(path) < CONFIG_STR_MAX) {
		strcpy(h[*n].path, path);
		h[*n].shown = shown;
		(*n)++;
	}
}

static int longest_first(const void *a, const void *b)
{
	size_t la = strlen(((const struct hidden *)a)->path);
	size_t lb = strlen(((const struct hidden *)b)->path);
	return la < lb ? 1 : la > lb ? -1 : 0;
}

void recon_hide_host_paths(const struct recon *r, char *text, size_t size)
{
	struct hidden h[RECON_HIDDEN_MAX];
	const struct remote_conf *rc = r->sbx.remote;
	int n = 0;

	hide(h, &n, r->sbx.root, RECON_ROOT_SHOWN);
	hide(h, &n, r->cfg->sandbox_root, RECON_ROOT_SHOWN);
	/* the configuration's directory, /root, /home (open.c) */
	for (int i = 0; i < r->sbx.nmasks; i++)
		if (strcmp(r->sbx.masks[i], r->sbx.root))
			hide(h, &n, r->sbx.masks[i], RECON_HOST_SHOWN);
	/* the run directory: MariaDB's socket beside the stack's other files */
	if (r->cfg->db_socket[0] == '/') {
		char dir[CONFIG_STR_MAX];
		char *slash;
		snprintf(dir, sizeof(dir), "%s", r->cfg->db_socket);
		slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			hide(h, &n, dir, RECON_HOST_SHOWN);
		}
	}
	hide(h, &n, r->cfg->srt_dir, RECON_HOST_SHOWN);
	if (rc) {
		hide(h, &n, rc->socket, RECON_HOST_SHOWN);
		hide(h, &n, rc->api_key_file, RECON_HOST_SHOWN);
	}
	qsort(h, (size_t)n, sizeof(h[0]), longest_first);
	for (int i = 0; i < n; i++)
		recon_scrub(text, size, h[i].path, h[i].shown);
}

static void stat_step(struct recon *r, const char *step, double seconds)
{
	struct recon_stats *s = &r->stats;
	int i;

	for (i = 0; i < s->nsteps; i++)
		if (!strcmp(s->steps[i].step, step))
			break;
	if (i == s->nsteps) {
		if (s->nsteps >= RECON_STEPS_MAX)
			return;
		s->steps[s->nsteps++] = (struct step_stat){ step, 0, 0 };
	}
	s->steps[i].seconds += seconds;
	s->steps[i].count++;
}

struct job {
	struct recon *r;
	struct intent *in;
	struct intent_fence fence;
	double lease_end; /* monotonic time the lease last renewed runs out */
	int lost;	  /* a renewal found the lease taken: stop */
	json_t *steps;	  /* steps done so far */
	char sandbox_id[SBX_ID_MAX];
	char error[SBX_ERR_MAX * 8];
	int terminal; /* the failure cannot pass by retrying (a manager missing from the image) */
	/* renews the lease while the backend works (commands, the HTTP drivers' calls); NULL
	 * before the work starts */
	const struct proc_watch *watch;
};

static int done(struct job *j, const char *step)
{
	size_t i;
	json_t *v;

	json_array_foreach (j->steps, i, v)
		if (!strcmp(json_string_value(v), step))
			return 1;
	return 0;
}

/* Renew the lease (and, with MARK, record that a sandbox may exist). RECON_DONE, LOST or
 * DB_ERROR. */
static enum recon_outcome renew(struct job *j, int mark)
{
	char now[CLOCK_DB_LEN], lease[CLOCK_DB_LEN];
	double t = clock_mono_s();
	int lost = 0;

	clock_now(now, NULL);
	clock_in(j->r->cfg->lease_s, lease, NULL);
	if (intents_renew(j->r->db, &j->fence, mark, lease, now, &lost)) {
		log_error("intent %lld: renewing the lease: %s", j->in->id, db_error(j->r->db));
		return RECON_DB_ERROR;
	}
	if (lost) {
		j->lost = 1;
		return RECON_LOST;
	}
	j->lease_end = t + (double)j->r->cfg->lease_s;
	return RECON_DONE;
}

/* Seconds between two renewals of an intent's lease while the backend works: a third of it, at
 * least one. */
static long renew_every(const struct recon *r)
{
	long every = r->cfg->lease_s / RECON_RENEWALS_PER_LEASE;

	return every < 1 ? 1 : every;
}

/* Renew when the last renewal is about renew_every old (the watch may tick more often: r->also).
 * Half a tick counts as due: a tick that comes a hair early must not put the renewal off by a
 * whole tick (with the reconciler's own watch, a tick is renew_every long). */
static enum recon_outcome renew_due(struct job *j)
{
	double due = j->lease_end - (double)(j->r->cfg->lease_s - renew_every(j->r));
	double half_tick = j->watch ? (double)j->watch->interval_ms / 2000.0 : 0;

	if (clock_mono_s() + half_tick < due)
		return RECON_DONE;
	return renew(j, 0);
}

/* proc_watch: renew while a command runs. Stop it when the lease is taken, or when renewals
 * keep failing until the lease may have run out (another reconciler may start this work). */
static int lease_tick(void *arg)
{
	struct job *j = arg;
	enum recon_outcome out = renew_due(j);

	if (j->r->also && j->r->also->tick(j->r->also->arg)) {
		log_info("intent %lld: its caller stops: stopping the command", j->in->id);
		j->lost = 1;
		return 1;
	}

	if (out == RECON_LOST) {
		log_warn("intent %lld: lease lost while a command ran: stopping it", j->in->id);
		return 1;
	}
	if (out == RECON_DB_ERROR && clock_mono_s() >= j->lease_end - RECON_LEASE_MARGIN_S) {
		log_warn("intent %lld: lease not renewed before its end: stopping the command",
			 j->in->id);
		j->lost = 1;
		return 1;
	}
	return 0;
}

/* proc_watch during a create: renew, but never stop it. A create abandoned on the way may
 * still complete on the backend's side (an HTTP service finishes what it was asked), where
 * nothing would destroy it; let finish (the HTTP timeout bounds it), what it made is known
 * and destroyed when the lease was lost and the session is gone (discard). */
static int create_tick(void *arg)
{
	struct job *j = arg;

	if (!j->lost && renew_due(j) == RECON_LOST)
		log_warn("intent %lld: lease lost during the create: letting it finish", j->in->id);
	if (j->r->also)
		(void)j->r->also->tick(j->r->also->arg); /* its own renewal; a create finishes */
	return 0;
}

/* Record STEP as done (and the sandbox id), renewing the lease. RECON_DONE, LOST or DB_ERROR. */
static enum recon_outcome record(struct job *j, const char *step)
{
	char now[CLOCK_DB_LEN], lease[CLOCK_DB_LEN];
	char *text;
	enum db_status st;
	int lost = 0;

	if (step && !done(j, step))
		json_array_append_new(j->steps, json_string(step));
	text = json_dumps(j->steps, JSON_COMPACT);
	if (!text)
		return RECON_DB_ERROR;
	clock_now(now, NULL);
	clock_in(j->r->cfg->lease_s, lease, NULL);
	st = intents_progress(j->r->db, &j->fence, text, j->sandbox_id, lease, now, &lost);
	free(text);
	if (st) {
		log_error("intent %lld: recording %s: %s", j->in->id, step ? step : "progress",
			  db_error(j->r->db));
		return RECON_DB_ERROR;
	}
	if (!lost)
		j->lease_end = clock_mono_s() + (double)j->r->cfg->lease_s;
	return lost ? RECON_LOST : RECON_DONE;
}

static enum recon_outcome fail(struct job *j)
{
	struct recon *r = j->r;
	char now[CLOCK_DB_LEN], next[CLOCK_DB_LEN];
	char *redacted = malloc((size_t)r->cfg->last_error_max + 1);
	unsigned jitter = 0;
	int terminal = j->terminal || j->in->attempts >= r->cfg->max_attempts, lost = 0;
	long delay;
	enum db_status st;

	if (j->lost) { /* the watch stopped the step: nothing is this run's to record */
		free(redacted);
		return RECON_LOST;
	}
	if (!redacted)
		return RECON_DB_ERROR;
	/* API clients read last_error: no host paths */
	recon_hide_host_paths(r, j->error, sizeof(j->error));
	redact(j->error, redacted, (size_t)r->cfg->last_error_max + 1);
	random_bytes(&jitter, sizeof(jitter));
	delay = recon_backoff(r->cfg, j->in->attempts, (double)jitter / 4294967295.0);
	clock_now(now, NULL);
	clock_in(delay, next, NULL);
	st = intents_fail(r->db, &j->fence, j->in->session_id, terminal, redacted, next, now,
			  &lost);
	log_warn("intent %lld (session %s) attempt %lld failed%s: %s", j->in->id, j->in->session_id,
		 j->in->attempts,
		 j->terminal ? " (terminated)"
		 : terminal  ? " (terminated: max attempts)"
			     : "",
		 redacted);
	free(redacted);
	if (st)
		return RECON_DB_ERROR;
	return lost ? RECON_LOST : RECON_FAILED;
}

/* What failed, then the tail of the command's output (the end is where the cause is). */
static void command_error(struct job *j, const char *what, const struct proc_result *res)
{
	const char *out = res->output ? res->output : "";
	size_t head, room, len = strlen(out);
	int cut;

	if (res->timed_out)
		head = (size_t)snprintf(j->error, sizeof(j->error), "%s: timed out after %lds",
					what, j->r->cfg->command_timeout_s);
	else if (res->exit_code < 0)
		head = (size_t)snprintf(j->error, sizeof(j->error), "%s: could not be started",
					what);
	else
		head = (size_t)snprintf(j->error, sizeof(j->error), "%s: exit status %d", what,
					res->exit_code);
	if (head >= sizeof(j->error) - 32)
		return;
	room = sizeof(j->error) - head - 32;
	cut = res->truncated || len > room;
	if (len > room)
		out += len - room;
	snprintf(j->error + head, sizeof(j->error) - head, "%s\n%s", cut ? " (output tail)" : "",
		 out);
}

/* The lease was lost right after a create: when the session was deleted meanwhile (its
 * teardown may already have run, finding nothing), the sandbox just made is destroyed here. A
 * lease taken over by another provisioning leaves the sandbox to it. */
static void discard(struct job *j)
{
	struct recon *r = j->r;
	/* a create that failed recorded no id: the name finds what it may have made */
	const char *id = j->sandbox_id[0] ? j->sandbox_id : j->in->session_id;
	char err[SBX_ERR_MAX];
	int gone = 0;

	if (intents_session_gone(r->db, j->in->session_id, &gone) || !gone)
		return;
	/* the lease is lost already: the destroy must not be stopped (no watch) */
	if (sbx_destroy(&r->sbx, id, NULL, err, sizeof(err)))
		log_warn(
			"intent %lld: session deleted during the create; destroying sandbox %s: %s",
			j->in->id, id, err);
	else
		log_info("intent %lld: session deleted during the create; sandbox %s destroyed",
			 j->in->id, id);
}

/* Run ARGV in the job's sandbox (as its root when AS_ROOT), renewing the lease while it runs
 * (the job's watch: a lost lease kills the command and sets j->lost). 0, or -1: j->lost, or
 * the error is WHAT's. */
static int run_step(struct job *j, const char *what, int as_root, int share_net, const char **argv,
		    char **envp)
{
	struct recon *r = j->r;
	struct sbx_exec ex = { .argv = (char *const *)argv,
			       .envp = envp,
			       .as_root = as_root,
			       .share_net = share_net,
			       .timeout_s = r->cfg->command_timeout_s,
			       .watch = j->watch };
	struct proc_result res;
	int rc = sbx_run(&r->sbx, j->sandbox_id, &ex, &res);

	if (j->lost) {
		proc_result_release(&res);
		return -1;
	}
	if (rc || res.exit_code != 0 || res.timed_out) {
		command_error(j, what, &res);
		proc_result_release(&res);
		return -1;
	}
	proc_result_release(&res);
	return 0;
}

/* Before installing: every manager with packages still to install must exist in the sandbox.
 * A missing one is a terminal failure ("sandbox image has no cargo"): retrying cannot help. */
#define RECON_CHECK_SCRIPT "for m do command -v \"$m\" >/dev/null 2>&1 || echo \"$m\"; done"
static int check_managers(struct job *j, json_t *packages, char **envp)
{
	const char *argv[4 + PKG_MANAGER_COUNT + 1] = { "sh", "-c", RECON_CHECK_SCRIPT, "sh" };
	const char *names[PKG_MANAGER_COUNT];
	struct recon *r = j->r;
	struct sbx_exec ex = { .argv = (char *const *)argv,
			       .envp = envp,
			       .timeout_s = r->cfg->command_timeout_s,
			       .watch = j->watch };
	struct proc_result res;
	int n = 4, k = 0, rc;

	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++) {
		const struct pkg_manager *pm = &pkg_managers[m];
		if (!json_array_size(json_object_get(packages, pm->name)) || done(j, pm->name))
			continue;
		names[k++] = pm->name;
		argv[n++] = pm->install[0]; /* the program the install runs */
	}
	argv[n] = NULL;
	if (!k)
		return 0;
	rc = sbx_run(&r->sbx, j->sandbox_id, &ex, &res);
	if (rc || res.exit_code != 0) {
		command_error(j, "checking the package managers", &res);
		proc_result_release(&res);
		return -1;
	}
	for (int i = 0; i < k; i++) {
		const char *prog = argv[4 + i];
		const char *hit = res.output ? strstr(res.output, prog) : NULL;
		size_t len = strlen(prog);
		/* a whole line of the output */
		while (hit && ((hit != res.output && hit[-1] != '\n') ||
			       (hit[len] != '\n' && hit[len] != '\0')))
			hit = strstr(hit + 1, prog);
		if (hit) {
			snprintf(j->error, sizeof(j->error),
				 "sandbox image has no %s (%s not found); use an image that "
				 "provides it",
				 names[i], prog);
			j->terminal = 1;
			proc_result_release(&res);
			return -1;
		}
	}
	proc_result_release(&res);
	return 0;
}

static enum recon_outcome teardown(struct job *j)
{
	struct recon *r = j->r;
	const char *id = j->in->sandbox_id[0] ? j->in->sandbox_id : j->in->session_id;
	double t0 = clock_mono_s();
	int lost = 0;

	if (sbx_destroy(&r->sbx, id, j->watch, j->error, sizeof(j->error)))
		return fail(j);
	stat_step(r, "teardown", clock_mono_s() - t0);
	if (intents_teardown_done(r->db, &j->fence, j->in->session_id, &lost))
		return RECON_DB_ERROR;
	if (!lost) {
		r->stats.teardowns++;
		log_info("intent %lld: session %s torn down (sandbox %s)", j->in->id,
			 j->in->session_id, id);
	}
	return lost ? RECON_LOST : RECON_DONE;
}

/* A provisioning in progress: the captured spec's parts and what the steps found on the way. */
struct prov {
	json_t *packages, *networking; /* borrowed from the spec */
	const char *env_id;
	int limited;   /* the networking policy is limited */
	int wanted;    /* managers with packages */
	int cache_on;  /* this deployment caches, and KEY is this sandbox's entry */
	int cache_hit; /* the sandbox was made from entry KEY (CACHE_REF) */
	int deferred;  /* the backend finishes starting the sandbox after the bind */
	char key[RECON_CACHE_KEY_LEN + 1], cache_ref[CONFIG_STR_MAX];
	char workdir[CONFIG_STR_MAX * 2]; /* the commands' working directory */
	struct recon_env *env;		  /* their environment; owned */
	json_t *final;			  /* the final egress policy; owned */
};

/* A step of a provisioning: RECON_DONE to go on to the next, else the outcome. */
typedef enum recon_outcome prov_step_fn(struct job *j, struct prov *p);

/* 0. The package cache: a sandbox provisioned earlier with the same packages for this
 * environment (cache.c); only a sandbox not created yet can start from it, and only one with
 * packages to install is worth an entry. */
static enum recon_outcome prov_cache_lookup(struct job *j, struct prov *p)
{
	struct recon *r = j->r;

	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++)
		p->wanted +=
			json_array_size(json_object_get(p->packages, pkg_managers[m].name)) > 0;
	if (!p->wanted || !recon_cache_enabled(r) ||
	    recon_cache_key(r, p->env_id, p->packages, p->key))
		return RECON_DONE;
	p->cache_on = 1;
	if (!done(j, "sandbox")) {
		int found = sbx_cache_lookup(&r->sbx, p->key, p->cache_ref, sizeof(p->cache_ref),
					     j->watch, j->error, sizeof(j->error));
		if (found < 0)
			log_warn("intent %lld: package cache lookup: %s", j->in->id, j->error);
		p->cache_hit = found == 1;
	}
	return RECON_DONE;
}

/* 1. Create or attach, under the deterministic name; a new sandbox starts with the network its
 * policy allows (docker: none unless unrestricted; opensandbox: deny-all until set_egress), the
 * session's environment, and the cache entry when there is one. */
static enum recon_outcome prov_create(struct job *j, struct prov *p)
{
	struct recon *r = j->r;
	/* renew, but never stop a create (create_tick) */
	struct proc_watch creating = { create_tick, j, j->watch ? j->watch->interval_ms : 1000L };
	struct sbx_spec spec = { .name = j->in->session_id,
				 .share_net = !p->limited,
				 .from = p->cache_hit ? p->cache_ref : NULL,
				 .watch = j->watch ? &creating : NULL };
	enum recon_outcome out;
	double t0;

	sbx_workdir(&r->sbx, j->in->session_id, p->workdir, sizeof(p->workdir));
	recon_env(r->cfg, p->workdir, p->env);
	spec.env = p->env->envp;
	/* nothing to run in it before the binding (no install left; docker has no egress step):
	 * the backend may finish starting it after the session is bound */
	p->deferred = r->sbx.ops->start && (p->cache_hit || !p->wanted) && !p->limited;
	spec.defer_start = p->deferred;
	t0 = clock_mono_s();
	if (sbx_create(&r->sbx, &spec, j->sandbox_id, sizeof(j->sandbox_id), j->error,
		       sizeof(j->error))) {
		out = fail(j);
		if (j->lost) /* the lease went during a create that failed: it may have made a
			      * sandbox that no one else will destroy */
			discard(j);
		return out;
	}
	stat_step(r, p->cache_hit ? "sandbox_cached" : "sandbox", clock_mono_s() - t0);
	if (p->cache_hit) {
		/* the entry holds every manager's packages: nothing is installed again */
		for (size_t m = 0; m < PKG_MANAGER_COUNT; m++) {
			const char *name = pkg_managers[m].name;
			if (json_array_size(json_object_get(p->packages, name)) && !done(j, name))
				json_array_append_new(j->steps, json_string(name));
		}
		json_array_append_new(j->steps, json_string("cache"));
		recon_cache_used(r, p->key, p->env_id);
		log_info("intent %lld: sandbox from package cache entry %.12s", j->in->id, p->key);
	}
	if (!done(j, "sandbox") && (out = record(j, "sandbox")) != RECON_DONE) {
		if (out == RECON_LOST)
			discard(j);
		return out;
	}
	return RECON_DONE;
}

/* The final policy (MCP hosts come from the session as it is now), then 2. the network open for
 * the install (limited only): the final list and the registry hosts. */
static enum recon_outcome prov_network(struct job *j, struct prov *p)
{
	struct recon *r = j->r;
	char *mcp_text = NULL;
	json_t *mcp, *install;
	double t0;
	int rc;

	if (intents_session_mcp(r->db, j->in->session_id, &mcp_text))
		return RECON_DB_ERROR;
	mcp = mcp_text ? json_loads(mcp_text, 0, NULL) : NULL;
	free(mcp_text);
	p->final = egress_policy(p->networking, mcp, NULL, 0);
	install = p->limited && p->final ? egress_policy(p->networking, mcp, NULL, 1) : NULL;
	json_decref(mcp);
	if (!p->final) {
		snprintf(j->error, sizeof(j->error),
			 "captured networking configuration is malformed");
		return fail(j);
	}
	if (!p->limited)
		return RECON_DONE;
	t0 = clock_mono_s();
	rc = sbx_set_egress(&r->sbx, j->sandbox_id, install, j->watch, j->error, sizeof(j->error));
	json_decref(install);
	if (rc)
		return fail(j);
	stat_step(r, "network", clock_mono_s() - t0);
	return RECON_DONE;
}

/* Manager PM's install of LIST (its update first when it has one); recorded when done, so a
 * retry resumes at the manager that failed. */
static enum recon_outcome install_one(struct job *j, struct prov *p, const struct pkg_manager *pm,
				      json_t *list)
{
	struct recon *r = j->r;
	const char *argv[RECON_ARGV_MAX];
	char prefix[CONFIG_STR_MAX * 2], what[64];
	double t0;
	int rc;

	if (pm->update) {
		/* once per provisioning, before the manager's install */
		snprintf(what, sizeof(what), "%s update", pm->name);
		t0 = clock_mono_s();
		rc = run_step(j, what, pm->as_root, !p->limited, (const char **)pm->update,
			      p->env->envp);
		stat_step(r, pm->update_step, clock_mono_s() - t0);
		if (rc)
			return j->lost ? RECON_LOST : fail(j);
	}
	if (pkg_install_argv(pm, list, p->workdir, argv, RECON_ARGV_MAX, prefix, sizeof(prefix)) <
	    0) {
		snprintf(j->error, sizeof(j->error), "%s: too many packages", pm->name);
		return fail(j);
	}
	snprintf(what, sizeof(what), "%s install", pm->name);
	t0 = clock_mono_s();
	rc = run_step(j, what, pm->as_root, !p->limited, argv, p->env->envp);
	stat_step(r, pm->name, clock_mono_s() - t0);
	if (rc)
		return j->lost ? RECON_LOST : fail(j);
	log_info("intent %lld: %s packages installed", j->in->id, pm->name);
	return record(j, pm->name);
}

/* 3. Install, manager by manager, in the sandbox's workspace with the session's environment;
 * first, every manager needed must be in the sandbox. */
static enum recon_outcome prov_install(struct job *j, struct prov *p)
{
	struct recon *r = j->r;
	enum recon_outcome out = RECON_DONE;

	sbx_workdir(&r->sbx, j->sandbox_id, p->workdir, sizeof(p->workdir));
	recon_env(r->cfg, p->workdir, p->env);
	if (check_managers(j, p->packages, p->env->envp))
		return fail(j);
	for (size_t m = 0; out == RECON_DONE && m < PKG_MANAGER_COUNT; m++) {
		json_t *list = json_object_get(p->packages, pkg_managers[m].name);
		if (json_array_size(list) && !done(j, pkg_managers[m].name))
			out = install_one(j, p, &pkg_managers[m], list);
	}
	return out;
}

/* The package cache entry: the first session of a key to install records its sandbox (a failure
 * to store costs later sessions time, not this one its sandbox); one that started from the
 * entry has "cache" among its steps. */
static enum recon_outcome prov_cache_store(struct job *j, struct prov *p)
{
	struct recon *r = j->r;
	char err[SBX_ERR_MAX];
	double t0 = clock_mono_s();

	if (!p->cache_on || done(j, "cache"))
		return RECON_DONE;
	if (sbx_cache_store(&r->sbx, j->sandbox_id, p->key, j->watch, err, sizeof(err))) {
		log_warn("intent %lld: storing package cache entry %.12s: %s", j->in->id, p->key,
			 err);
	} else {
		recon_cache_used(r, p->key, p->env_id);
		log_info("intent %lld: stored package cache entry %.12s", j->in->id, p->key);
	}
	stat_step(r, "cache_store", clock_mono_s() - t0);
	return RECON_DONE;
}

/* 4. Restore the final egress policy (limited only). */
static enum recon_outcome prov_egress(struct job *j, struct prov *p)
{
	struct recon *r = j->r;
	double t0 = clock_mono_s();

	if (!p->limited)
		return RECON_DONE;
	if (sbx_set_egress(&r->sbx, j->sandbox_id, p->final, j->watch, j->error, sizeof(j->error)))
		return fail(j);
	stat_step(r, "egress", clock_mono_s() - t0);
	return RECON_DONE;
}

/* 5. Bind: nothing is published before this. Then a deferred start (a command arriving
 * meanwhile starts the sandbox itself: docker's exec 409 path). */
static enum recon_outcome prov_bind(struct job *j, struct prov *p)
{
	struct recon *r = j->r;
	char *final_text = json_dumps(p->final, JSON_COMPACT | JSON_ENCODE_ANY);
	char now[CLOCK_DB_LEN], err[SBX_ERR_MAX];
	double t0 = clock_mono_s();
	int lost = 0, st;

	clock_now(now, NULL);
	st = intents_bind(r->db, &j->fence, j->in->session_id, r->sbx.ops->name, j->sandbox_id,
			  json_is_null(p->final) ? NULL : final_text, now, &lost);
	free(final_text);
	if (st)
		return RECON_DB_ERROR;
	stat_step(r, "bind", clock_mono_s() - t0);
	if (lost)
		return RECON_LOST;
	log_info("intent %lld: session %s ready (sandbox %s)", j->in->id, j->in->session_id,
		 j->sandbox_id);
	if (p->deferred) {
		t0 = clock_mono_s();
		/* bound: there is no lease left to keep (no watch) */
		if (sbx_start(&r->sbx, j->sandbox_id, NULL, err, sizeof(err)))
			log_warn("intent %lld: starting sandbox %s: %s (its first command starts "
				 "it)",
				 j->in->id, j->sandbox_id, err);
		stat_step(r, "start", clock_mono_s() - t0);
	}
	return RECON_DONE;
}

/* The steps of docs/design.md (Provisioning) after the claim, in order. */
static prov_step_fn *const prov_steps[] = { prov_cache_lookup, prov_create,	 prov_network,
					    prov_install,      prov_cache_store, prov_egress,
					    prov_bind };

static enum recon_outcome provision(struct job *j, json_t *spec)
{
	const char *net_type;
	struct prov p = { .packages = json_object_get(spec, "packages"),
			  .networking = json_object_get(spec, "networking"),
			  .env_id = json_string_value(json_object_get(spec, "environment_id")) };
	enum recon_outcome out = RECON_DONE;

	net_type = json_string_value(json_object_get(p.networking, "type"));
	p.limited = net_type && !strcmp(net_type, "limited");
	if (!(p.env = malloc(sizeof(*p.env)))) {
		snprintf(j->error, sizeof(j->error), "out of memory");
		return fail(j);
	}
	for (size_t i = 0; out == RECON_DONE && i < sizeof(prov_steps) / sizeof(prov_steps[0]); i++)
		out = prov_steps[i](j, &p);
	free(p.env);
	json_decref(p.final);
	return out;
}

enum recon_outcome recon_process(struct recon *r, struct intent *in)
{
	struct job j = { .r = r, .in = in };
	/* renews the lease while the backend works: commands, and the HTTP drivers' calls; asks
	 * r->also as often as it wants to be asked */
	struct proc_watch watch = { lease_tick, &j, renew_every(r) * 1000L };
	json_t *spec = json_loads(in->spec, 0, NULL);
	enum recon_outcome out;

	if (r->also && r->also->interval_ms < watch.interval_ms)
		watch.interval_ms = r->also->interval_ms;
	j.fence = (struct intent_fence){ in->id, r->owner, in->attempts };
	j.steps = json_loads(in->steps_done, 0, NULL);
	snprintf(j.sandbox_id, sizeof(j.sandbox_id), "%s", in->sandbox_id);
	if (!j.steps || !json_is_array(j.steps)) {
		json_decref(j.steps);
		j.steps = json_array();
	}
	/* the lease of a batch's later intents ran while earlier ones were worked on: it starts
	 * again now, or the intent was taken over (or cancelled) meanwhile. A provision intent is
	 * marked "a sandbox may exist" in the same write, durable before the backend's create: a
	 * session deleted from now on gets a teardown. */
	if ((out = renew(&j, !strcmp(in->kind, INTENT_PROVISION))) != RECON_DONE) {
		/* nothing was done */
	} else if (!spec) {
		snprintf(j.error, sizeof(j.error), "intent spec does not parse");
		out = fail(&j);
	} else {
		j.watch = &watch;
		out = !strcmp(in->kind, INTENT_TEARDOWN) ? teardown(&j) : provision(&j, spec);
	}
	json_decref(spec);
	json_decref(j.steps);
	switch (out) {
	case RECON_DONE:
		r->stats.done++;
		break;
	case RECON_FAILED:
		r->stats.failed++;
		break;
	case RECON_LOST:
		r->stats.lost++;
		log_warn("intent %lld: lease lost; dropped", in->id);
		break;
	case RECON_DB_ERROR:
		r->stats.failed++;
		break;
	}
	return out;
}
