/* terrarium-runner: runs sessions' turns (docs/runner.md).
 *
 *   terrarium-runner [-c CONFIG] --loop [--max-seconds S]
 *   terrarium-runner [-c CONFIG] --once [--max-seconds S]
 *
 * It claims pending turns under a lease ([runner] lease_seconds, renewed while a turn runs;
 * FOR UPDATE SKIP LOCKED and fencing, as the reconciler's intents: any number of runners on any
 * number of hosts) and runs each in a process of its own, at most [runner] max_turns at once.
 * --once runs what is due, waits for those turns, and exits. The model's key comes from
 * [model] api_key_file or ANTHROPIC_API_KEY, read once before root is given up; it is never on
 * a command line and never logged. Exit status: 0, 1 when a turn's process failed, 2 on usage or
 * configuration errors, 3 when the database could not be used. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../common/startup.h"
#include "../db/keys.h"
#include "../sandbox/backend.h"
#include "runner.h"

#define RUNNER_KEY_ENV "ANTHROPIC_API_KEY"
#define RUNNER_CONNECT_TIMEOUT_S 10

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct options {
	const char *config;
	int once, loop;
	long max_seconds;
};

static int usage(void)
{
	fprintf(stderr, "usage: terrarium-runner [-c CONFIG] --loop [--max-seconds S]\n"
			"       terrarium-runner [-c CONFIG] --once [--max-seconds S]\n");
	return 2;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *next = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(argv[i], "-c") && next) {
			o->config = argv[++i];
		} else if (!strcmp(argv[i], "--once")) {
			o->once = 1;
		} else if (!strcmp(argv[i], "--loop")) {
			o->loop = 1;
		} else if (!strcmp(argv[i], "--max-seconds") && next) {
			errno = 0;
			o->max_seconds = strtol(argv[++i], &end, 10);
			if (*end || errno || o->max_seconds < 1)
				return -1;
		} else {
			return -1;
		}
	}
	return o->once + o->loop == 1 ? 0 : -1;
}

/* 1 when URL's host is loopback (a model on this machine: the tests' fake needs no key). */
static int url_loopback(const char *url)
{
	static const char *const hosts[] = { "127.", "localhost", "[::1]" };
	const char *h = strstr(url, "://");

	h = h ? h + 3 : url;
	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++)
		if (!strncmp(h, hosts[i], strlen(hosts[i])))
			return 1;
	return 0;
}

/* The model's settings and key (from [model] api_key_file, else ANTHROPIC_API_KEY), read while
 * the files are still readable. Without a key a non-loopback model cannot be called: every turn
 * then ends with a session.error naming the missing setting. 0, or -1 (logged) when the key file
 * is named but cannot be read. */
static int model_setup(struct runner *r)
{
	const struct config *cfg = r->cfg;
	struct model_conf *m = &r->model;
	const char *env = getenv(RUNNER_KEY_ENV);

	memset(m, 0, sizeof(*m));
	snprintf(m->base_url, sizeof(m->base_url), "%s", cfg->model_base_url);
	m->idle_timeout_s = cfg->model_idle_timeout_s;
	m->connect_timeout_s = RUNNER_CONNECT_TIMEOUT_S;
	m->max_tokens = cfg->model_max_tokens;
	if (cfg->model_api_key_file[0]) {
		FILE *f = fopen(cfg->model_api_key_file, "r");
		size_t n;

		if (!f || !fgets(m->api_key, sizeof(m->api_key), f)) {
			log_error("runner: [model] api_key_file %s: cannot read it",
				  cfg->model_api_key_file);
			if (f)
				fclose(f);
			return -1;
		}
		fclose(f);
		n = strcspn(m->api_key, "\r\n");
		m->api_key[n] = '\0';
	} else if (env && *env) {
		snprintf(m->api_key, sizeof(m->api_key), "%s", env);
	}
	if (env) /* the variable goes: turns' sandboxes and tools never see it */
		explicit_bzero(getenv(RUNNER_KEY_ENV), strlen(env));
	unsetenv(RUNNER_KEY_ENV);
	if (!m->api_key[0] && !url_loopback(m->base_url))
		snprintf(r->model_missing, sizeof(r->model_missing),
			 "no model API key: set [model] api_key_file (a file holding the key) or "
			 "the ANTHROPIC_API_KEY variable of terrarium-runner ([model] base_url is "
			 "%.128s)",
			 m->base_url);
	return 0;
}

/* The vault key ([vault] key_file), read while the file is still readable: the MCP servers'
 * bearer tokens are opened with it in the turns (docs/vaults.md). A key that cannot be loaded
 * is logged and kept as the reason a credential does not open: sessions without vaults run. */
static void vault_setup(struct runner *r)
{
	if (!vault_key_load(&r->vault, r->cfg->vault_key_file))
		log_info("runner: vault key %s (id %s) loaded", r->vault.path, r->vault.id);
	else if (r->cfg->vault_key_file[0])
		log_error("runner: %s: sessions' vault credentials cannot be used", r->vault.error);
}

/* The running turns: pid per slot. */
struct slots {
	pid_t *pid;
	int n, used, failed;
};

static void reap(struct slots *s, int block)
{
	pid_t pid;
	int status;

	while ((pid = waitpid(-1, &status, block && s->used ? 0 : WNOHANG)) > 0) {
		for (int i = 0; i < s->n; i++)
			if (s->pid[i] == pid) {
				s->pid[i] = 0;
				s->used--;
			}
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			s->failed = 1;
			if (WIFSIGNALED(status))
				log_warn("runner: turn process %d killed by signal %d", (int)pid,
					 WTERMSIG(status));
		}
		if (block)
			break;
	}
}

/* Fork the process that runs turn C (its lease was just taken). */
static void start_turn(struct runner *r, struct slots *s, const struct turn_claim *c)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == 0) {
		/* the runner's death ends its turns: the next runner takes them over at once,
		 * rather than a turn running on for nobody */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		_exit(turn_run(r, c));
	}
	if (pid < 0) {
		log_error("runner: fork: %s (the turn is taken up again when its lease ends)",
			  strerror(errno));
		return;
	}
	for (int i = 0; i < s->n; i++)
		if (!s->pid[i]) {
			s->pid[i] = pid;
			s->used++;
			break;
		}
	log_debug("runner: session %s: turn (attempt %llu) in process %d", c->session_id,
		  c->attempt, (int)pid);
}

static int run(struct runner *r, struct db *db, const struct options *o)
{
	const struct config *cfg = r->cfg;
	struct slots s = { calloc((size_t)cfg->runner_max_turns, sizeof(pid_t)),
			   cfg->runner_max_turns, 0, 0 };
	time_t deadline = o->max_seconds ? time(NULL) + o->max_seconds : 0;
	int ret = 0;

	if (!s.pid)
		return 3;
	while (!stop_requested && (!deadline || time(NULL) < deadline)) {
		struct turn_claim batch[TURNS_CLAIM_MAX];
		char now[CLOCK_DB_LEN];
		int n = 0;
		enum db_status st;

		reap(&s, 0);
		if (s.used < s.n) {
			clock_now(now, NULL);
			st = turns_claim(db, r->owner, cfg->runner_lease_s,
					 cfg->runner_tool_result_timeout_s, now, s.n - s.used,
					 batch, &n);
			if (st) {
				log_error("runner: claim: %s", db_error(db));
				if (o->once) {
					ret = 3;
					break;
				}
			}
			for (int i = 0; i < n; i++)
				start_turn(r, &s, &batch[i]);
		}
		if (o->once && !n && !s.used)
			break;
		if (!n)
			clock_sleep_ms(cfg->runner_poll_ms);
	}
	/* a stop request ends the turns too: the next runner takes them over */
	for (int i = 0; i < s.n; i++)
		if (s.pid[i] && stop_requested)
			kill(s.pid[i], SIGTERM);
	while (s.used)
		reap(&s, 1);
	if (s.failed && !ret)
		ret = 1;
	free(s.pid);
	return ret;
}

/* Started as root: root is given up for the [reconciler] user, who owns the sandboxes (and
 * keeps the Docker Engine's socket group: the docker backend's tools run through it). */
static int leave_root(const struct config *cfg, struct sbx *sbx)
{
	return sbx_leave_root(sbx, cfg->reconciler_user, "runner");
}

/* The database's deployment id: what docker and the HTTP backends label sandboxes with. */
static int load_deployment(struct db *db, struct sbx *sbx)
{
	unsigned char id[KEYS_DEPLOYMENT_LEN];

	if (secret_get(db, KEYS_DEPLOYMENT, id, sizeof(id))) {
		log_error("database: %s", db_error(db));
		return -1;
	}
	hex_encode(id, sizeof(id), sbx->deployment);
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct config cfg;
	struct runner r;
	struct sbx sbx;
	struct db *db = NULL;
	char err[SBX_ERR_MAX];
	int ret = 2;

	if (parse_args(argc, argv, &o))
		return usage();
	if (startup_config(&cfg, o.config))
		return 2;
	memset(&r, 0, sizeof(r));
	memset(&sbx, 0, sizeof(sbx));
	r.cfg = &cfg;
	r.config_path = config_path(o.config);
	r.sbx = &sbx;
	startup_owner(r.owner, sizeof(r.owner), "runner:");
	if (model_setup(&r))
		return 2;
	vault_setup(&r);

	startup_signals(on_stop);

	db = db_new(&cfg);
	if (!db)
		return 3;
	if (db_connect(db)) {
		log_error("database: %s", db_error(db));
		ret = 3;
		goto out;
	}
	if (sbx_open(&sbx, &cfg, r.config_path, err, sizeof(err))) {
		log_error("sandbox backend: %s", err);
		goto out;
	}
	if (load_deployment(db, &sbx)) {
		ret = 3;
		goto out;
	}
	if (leave_root(&cfg, &sbx))
		goto out;
	log_info("runner %s: up to %d turns at once, model %s%s", r.owner, cfg.runner_max_turns,
		 r.model.base_url, r.model_missing[0] ? " (no key: turns end with an error)" : "");
	ret = run(&r, db, &o);
	log_info("runner %s: stopped", r.owner);
out:
	if (sbx.ops)
		sbx_close(&sbx);
	db_free(db);
	explicit_bzero(&r.model, sizeof(r.model));
	vault_key_wipe(&r.vault);
	return ret;
}
