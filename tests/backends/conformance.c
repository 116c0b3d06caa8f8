/* Backend conformance suite: one program run against whichever driver a configuration file
 * names ([sandbox] backend), through the same interface the reconciler uses (backend.h).
 *
 *   test_conformance -c CONFIG [-n NAME]
 *
 * Checks: stable identity across a reconciler restart (create, then a fresh sbx_open and create
 * of the same name gives the same id), idempotent create-or-attach, command exit codes (0, 3),
 * output, environment and argv passed intact (no shell expansion), the working directory, output
 * capped at output_max ([sandbox] output_max, or the run's own) with the tail kept, bytes on a
 * command's stdin where the backend takes them (refused with ENOTSUP where it does not), egress
 * policy updates where the driver has them
 * (install-time widening, then final narrowing), idempotent destroy (twice, and a name never
 * created), destroy by name when no id was recorded, and where the driver lists its sandboxes
 * (ops->list, the reconciler's sweep): the sandbox is listed with its name while it exists, not
 * after its destroy, and (a backend on a shared service) not by another deployment.
 *
 * With CONFORMANCE_FAKE_LOG=URL (a protocol fake's /__fake/log), the egress check also reads the
 * policy states the fake recorded for the sandbox and requires the two updates in order.
 * No database is contacted. Prints "N passed, N failed"; exit status 1 when any failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../common/config.h"
#include "../../sandbox/backend.h"
#include "check.h"

#define CONF_NAME_MAX 64
#define CONF_CAP 1000  /* output_max during the cap check */
#define CONF_SEQ_N 300 /* `seq 1 300` prints 1092 bytes */
#define CONF_TIMEOUT_S 60
#define CONF_ENV_VALUE "two words, 'quoted' and $NOT_EXPANDED"
#define CONF_LIST_MAX 1000   /* sandboxes one list call may return here */
#define CONF_BG_TIMEOUT_S 30 /* the background check's time limit */
#define CONF_BG_PROMPT_S 10  /* ... and how soon its command must be answered */

static const char *const conf_envp[] = {
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
	"TERRARIUM_CONFORMANCE=" CONF_ENV_VALUE, NULL
};

/* Run ARGV in sandbox ID as EX says (NULL: the defaults); RES filled (caller releases). The
 * run's return code. */
static int run_ex(struct sbx *s, const char *id, const char *const argv[],
		  const struct sbx_exec *ex, struct proc_result *res)
{
	struct sbx_exec e = ex ? *ex : (struct sbx_exec){ .timeout_s = CONF_TIMEOUT_S };

	e.argv = (char *const *)argv;
	e.envp = (char *const *)conf_envp;
	return sbx_run(s, id, &e, res);
}

static int run(struct sbx *s, const char *id, const char *const argv[], struct proc_result *res)
{
	return run_ex(s, id, argv, NULL, res);
}

static const char *out_of(const struct proc_result *res)
{
	return res->output ? res->output : "";
}

/* S with newlines shown as \n, at most 200 bytes, for messages. Static buffer: one per call
 * site in a message. */
static const char *shown(const char *s)
{
	static char buf[4][256];
	static int next;
	char *b = buf[next++ % 4];
	size_t o = 0;

	for (; *s && o < 200; s++) {
		if (*s == '\n') {
			b[o++] = '\\';
			b[o++] = 'n';
		} else {
			b[o++] = *s;
		}
	}
	b[o] = '\0';
	return b;
}

static void check_commands(struct sbx *s, const char *id)
{
	struct proc_result res;
	char workdir[CONFIG_STR_MAX * 2], expect[CONFIG_STR_MAX * 2 + 2];
	const char *const exit0[] = { "sh", "-c", "exit 0", NULL };
	const char *const exit3[] = { "sh", "-c", "exit 3", NULL };
	const char *const echo[] = { "echo", "hello", "it's", "$HOME", "`id`", "a  b", NULL };
	const char *const env[] = { "printenv", "TERRARIUM_CONFORMANCE", NULL };
	const char *const pwd[] = { "pwd", NULL };
	int rc;

	rc = run(s, id, exit0, &res);
	check(rc == 0 && res.exit_code == 0 && !res.timed_out,
	      "sh -c 'exit 0' exits 0 (rc %d, exit %d)", rc, res.exit_code);
	proc_result_release(&res);

	rc = run(s, id, exit3, &res);
	check(rc == 0 && res.exit_code == 3, "sh -c 'exit 3' exits 3 (rc %d, exit %d: %s)", rc,
	      res.exit_code, shown(out_of(&res)));
	proc_result_release(&res);

	rc = run(s, id, echo, &res);
	check(rc == 0 && res.exit_code == 0 &&
		      !strcmp(out_of(&res), "hello it's $HOME `id` a  b\n"),
	      "argv reaches the command intact, unexpanded (output '%s')", shown(out_of(&res)));
	proc_result_release(&res);

	rc = run(s, id, env, &res);
	check(rc == 0 && res.exit_code == 0 && !strcmp(out_of(&res), CONF_ENV_VALUE "\n"),
	      "the environment reaches the command (output '%s')", shown(out_of(&res)));
	proc_result_release(&res);

	sbx_workdir(s, id, workdir, sizeof(workdir));
	snprintf(expect, sizeof(expect), "%s\n", workdir);
	rc = run(s, id, pwd, &res);
	check(rc == 0 && res.exit_code == 0 && !strcmp(out_of(&res), expect),
	      "commands run in the workdir %s (output '%s')", workdir, shown(out_of(&res)));
	proc_result_release(&res);
}

static void check_output_cap(struct sbx *s, struct config *cfg, const char *id)
{
	const char *const seq[] = { "seq", "1", "300", NULL };
	char full[4096];
	size_t len = 0, want;
	long saved = cfg->output_max;
	struct proc_result res;
	int rc;

	for (int i = 1; i <= CONF_SEQ_N; i++)
		len += (size_t)snprintf(full + len, sizeof(full) - len, "%d\n", i);
	want = len > CONF_CAP ? CONF_CAP : len;
	cfg->output_max = CONF_CAP;
	rc = run(s, id, seq, &res);
	cfg->output_max = saved;
	check(rc == 0 && res.exit_code == 0 && res.len == want && res.truncated &&
		      !memcmp(out_of(&res), full + len - want, want),
	      "output capped at output_max=%d with the tail kept (got %zu bytes, truncated %d, "
	      "ends '%s')",
	      CONF_CAP, res.len, res.truncated,
	      shown(res.len > 12 ? out_of(&res) + res.len - 12 : out_of(&res)));
	proc_result_release(&res);
	/* the run's own cap, the configuration's left as it is */
	rc = run_ex(s, id, seq,
		    &(struct sbx_exec){ .timeout_s = CONF_TIMEOUT_S, .output_max = CONF_CAP },
		    &res);
	check(rc == 0 && res.exit_code == 0 && res.len == want && res.truncated &&
		      !memcmp(out_of(&res), full + len - want, want),
	      "output capped at the run's output_max=%d (got %zu bytes, truncated %d)", CONF_CAP,
	      res.len, res.truncated);
	proc_result_release(&res);
}

/* Bytes on a command's stdin: `cat` gives them back whole (a NUL and no final newline
 * included) where the backend takes stdin; elsewhere the run is refused before anything runs. */
static void check_stdin(struct sbx *s, const char *id)
{
	static const char data[] = "line one\n\0second 'line' $HOME";
	const char *const cat[] = { "cat", NULL };
	struct sbx_exec ex = { .timeout_s = CONF_TIMEOUT_S,
			       .stdin_data = data,
			       .stdin_len = sizeof(data) - 1 };
	struct proc_result res;
	char *big;
	int rc;

	errno = 0;
	rc = run_ex(s, id, cat, &ex, &res);
	if (s->ops->has_stdin)
		check(rc == 0 && res.exit_code == 0 && res.len == sizeof(data) - 1 &&
			      !memcmp(out_of(&res), data, sizeof(data) - 1),
		      "stdin reaches the command whole (rc %d, exit %d, %zu bytes: '%s')", rc,
		      res.exit_code, res.len, shown(out_of(&res)));
	else
		check(rc == -1 && errno == ENOTSUP && strstr(out_of(&res), "cannot pass stdin"),
		      "stdin is refused by a backend without it (rc %d, errno %d: %s)", rc, errno,
		      shown(out_of(&res)));
	proc_result_release(&res);
	/* no stdin: end of file at once (/dev/null), never the caller's own */
	if (!s->ops->has_stdin)
		return;
	/* more than the cap: refused before anything runs */
	ex.stdin_len = SBX_STDIN_MAX + 1;
	if (!(big = calloc(1, ex.stdin_len))) {
		check(0, "stdin over SBX_STDIN_MAX (out of memory)");
		return;
	}
	ex.stdin_data = big;
	errno = 0;
	rc = run_ex(s, id, cat, &ex, &res);
	check(rc == -1 && errno == E2BIG && strstr(out_of(&res), "stdin"),
	      "stdin over SBX_STDIN_MAX is refused (rc %d, errno %d: %s)", rc, errno,
	      shown(out_of(&res)));
	proc_result_release(&res);
	free(big);
	rc = run(s, id, cat, &res);
	check(rc == 0 && res.exit_code == 0 && res.len == 0,
	      "without stdin a command reads end of file (rc %d, exit %d, '%s')", rc, res.exit_code,
	      shown(out_of(&res)));
	proc_result_release(&res);
}

/* A command that leaves a background job holding its output (`sleep 300 &`) is answered when
 * its own process ends, with its status and output, not at its time limit; the next command
 * runs. Where commands are host processes (the protocol fakes answer only the commands they
 * know). */
static void check_background(struct sbx *s, const char *id)
{
	const char *const bg[] = { "sh", "-c", "sleep 300 & echo started; exit 4", NULL };
	const char *const after[] = { "echo", "after", NULL };
	struct proc_result res;
	time_t t0 = time(NULL);
	long took;
	int rc;

	if (s->caps->http)
		return;
	rc = run_ex(s, id, bg, &(struct sbx_exec){ .timeout_s = CONF_BG_TIMEOUT_S }, &res);
	took = (long)(time(NULL) - t0);
	check(rc == 0 && !res.timed_out && res.exit_code == 4 &&
		      !strcmp(out_of(&res), "started\n") && took < CONF_BG_PROMPT_S,
	      "a command leaving a background job is answered when it ends (%lds, rc %d, exit %d, "
	      "timed out %d, '%s')",
	      took, rc, res.exit_code, res.timed_out, shown(out_of(&res)));
	proc_result_release(&res);
	rc = run(s, id, after, &res);
	check(rc == 0 && res.exit_code == 0 && !strcmp(out_of(&res), "after\n"),
	      "the next command runs (rc %d, exit %d, '%s')", rc, res.exit_code,
	      shown(out_of(&res)));
	proc_result_release(&res);
}

/* The policy states the fake (its log at URL) recorded for sandbox ID, or NULL. New reference. */
static json_t *fake_policies(const char *url, const char *id)
{
	json_t *root = fake_json(url, "GET", url);
	json_t *states = json_incref(json_object_get(json_object_get(root, "policies"), id));

	json_decref(root);
	return states;
}

/* Is sandbox ID (created as NAME) in S's list? 1 yes, 0 no, -1 the list failed (reported). */
static int listed(struct sbx *s, const char *id, const char *name)
{
	struct sbx_listed *l = calloc(CONF_LIST_MAX, sizeof(*l));
	char err[SBX_ERR_MAX];
	int n = 0, found = 0;

	if (!l || sbx_list(s, l, CONF_LIST_MAX, &n, NULL, err, sizeof(err))) {
		check(0, "list (%s)", l ? err : "out of memory");
		free(l);
		return -1;
	}
	for (int i = 0; i < n; i++)
		found |= !strcmp(l[i].id, id) && !strcmp(l[i].name, name);
	free(l);
	return found;
}

/* The sweep's view while sandbox ID (NAME) exists: listed by its deployment, not by another's
 * (a backend on a shared service; a directory backend's root is the deployment's own). */
static void check_list(struct sbx *s, const char *id, const char *name)
{
	char mine[SBX_DEPLOYMENT_MAX];

	if (!s->ops->list)
		return;
	check(listed(s, id, name) == 1, "list shows sandbox %s with its name %s", id, name);
	if (s->root[0])
		return;
	snprintf(mine, sizeof(mine), "%s", s->deployment);
	snprintf(s->deployment, sizeof(s->deployment), "%s", "0another0deployment0");
	check(listed(s, id, name) == 0, "another deployment's list does not show it");
	snprintf(s->deployment, sizeof(s->deployment), "%s", mine);
}

/* JSON array of strings A and B hold the same set. */
static int same_set(json_t *a, json_t *b)
{
	size_t i, j;
	json_t *v, *w;

	if (json_array_size(a) != json_array_size(b))
		return 0;
	json_array_foreach (a, i, v) {
		int found = 0;
		json_array_foreach (b, j, w)
			found |= json_equal(v, w);
		if (!found)
			return 0;
	}
	return 1;
}

static void check_egress(struct sbx *s, const char *id)
{
	json_t *install =
		json_pack("[s,s,s]", "api.example.com", "pypi.org", "files.pythonhosted.org");
	json_t *final = json_pack("[s]", "api.example.com");
	const char *log = getenv("CONFORMANCE_FAKE_LOG");
	char err[SBX_ERR_MAX] = "";
	int rc;

	if (!s->ops->set_egress) {
		check(!s->caps->limited_egress,
		      "no set_egress: the capability table agrees (limited_egress %d)",
		      s->caps->limited_egress);
		goto out;
	}
	check(s->caps->limited_egress, "set_egress present: the capability table agrees");
	rc = sbx_set_egress(s, id, install, NULL, err, sizeof(err));
	check(rc == 0, "egress widened for the install (%s)", rc ? err : "ok");
	rc = sbx_set_egress(s, id, final, NULL, err, sizeof(err));
	check(rc == 0, "egress narrowed to the final policy (%s)", rc ? err : "ok");
	rc = sbx_set_egress(s, id, final, NULL, err, sizeof(err));
	check(rc == 0, "setting the same policy again succeeds (%s)", rc ? err : "ok");
	if (log && *log) {
		json_t *states = fake_policies(log, id);
		size_t n = json_array_size(states);
		int ok = n >= 2 && same_set(json_array_get(states, n - 2), install) &&
			 same_set(json_array_get(states, n - 1), final);
		char *text = states ? json_dumps(states, JSON_COMPACT) : NULL;
		check(ok,
		      "the fake saw install hosts, then the final hosts, in that order (%.300s)",
		      text ? text : "no states recorded");
		free(text);
		json_decref(states);
	}
out:
	json_decref(install);
	json_decref(final);
}

/* sbx_open S as the reconciler of DEPLOYMENT does, checked under the name WHAT. 0, or -1. */
static int open_as(struct sbx *s, const struct config *cfg, const char *config_file,
		   const char *deployment, const char *what)
{
	char err[SBX_ERR_MAX] = "";
	int rc = sbx_open(s, cfg, config_file, err, sizeof(err));

	check(rc == 0, "%s (%s)", what, rc ? err : "ok");
	if (rc)
		return -1;
	snprintf(s->deployment, sizeof(s->deployment), "%s", deployment);
	return 0;
}

int main(int argc, char **argv)
{
	const char *config_file = NULL, *prefix = "conf";
	char deployment[SBX_DEPLOYMENT_MAX];
	char name[CONF_NAME_MAX], name2[CONF_NAME_MAX], never[CONF_NAME_MAX];
	char id[SBX_ID_MAX] = "", id2[SBX_ID_MAX] = "", id3[SBX_ID_MAX] = "";
	char err[SBX_ERR_MAX] = "";
	struct config cfg;
	struct sbx s;
	int rc;

	rc = check_args(argc, argv, 'n', "[-n NAME-PREFIX]", 0, &prefix, &config_file, &cfg);
	if (rc)
		return rc;
	snprintf(name, sizeof(name), "%s-%ld-%ld-a", prefix, (long)getpid(), (long)time(NULL));
	snprintf(name2, sizeof(name2), "%s-%ld-%ld-b", prefix, (long)getpid(), (long)time(NULL));
	snprintf(never, sizeof(never), "%s-%ld-never", prefix, (long)getpid());
	/* what the reconciler reads from the database (sql/009_deployment.sql): hex */
	snprintf(deployment, sizeof(deployment), "c0f0%08lx%08lx", (long)getpid(),
		 (long)time(NULL));
	printf("== conformance: backend %s (%s)\n", cfg.backend, config_file);

	if (open_as(&s, &cfg, config_file, deployment, "sbx_open"))
		goto done;

	rc = sbx_create(&s, &(struct sbx_spec){ .name = name }, id, sizeof(id), err, sizeof(err));
	check(rc == 0 && id[0], "create %s -> %s (%s)", name, id, rc ? err : "ok");
	if (rc)
		goto close;
	rc = sbx_create(&s, &(struct sbx_spec){ .name = name }, id2, sizeof(id2), err, sizeof(err));
	check(rc == 0 && !strcmp(id, id2), "create again attaches to the same sandbox (%s%s)", id2,
	      rc ? err : "");

	/* a reconciler restart: nothing kept in memory */
	sbx_close(&s);
	if (open_as(&s, &cfg, config_file, deployment, "sbx_open after a restart"))
		goto done;
	rc = sbx_create(&s, &(struct sbx_spec){ .name = name }, id3, sizeof(id3), err, sizeof(err));
	check(rc == 0 && !strcmp(id, id3),
	      "after a restart, create attaches to the same sandbox (%s%s)", id3, rc ? err : "");

	check_commands(&s, id);
	check_output_cap(&s, &cfg, id);
	check_stdin(&s, id);
	check_background(&s, id);
	check_egress(&s, id);
	check_list(&s, id, name);

	rc = sbx_destroy(&s, id, NULL, err, sizeof(err));
	check(rc == 0, "destroy (%s)", rc ? err : "ok");
	if (s.ops->list)
		check(listed(&s, id, name) == 0, "list no longer shows the destroyed sandbox");
	rc = sbx_destroy(&s, id, NULL, err, sizeof(err));
	check(rc == 0, "destroy again: a missing sandbox counts as destroyed (%s)",
	      rc ? err : "ok");
	rc = sbx_destroy(&s, never, NULL, err, sizeof(err));
	check(rc == 0, "destroy of a name never created succeeds (%s)", rc ? err : "ok");

	/* teardown before the id was recorded: the reconciler passes the name */
	id2[0] = '\0';
	rc = sbx_create(&s, &(struct sbx_spec){ .name = name2 }, id2, sizeof(id2), err,
			sizeof(err));
	check(rc == 0, "create %s -> %s (%s)", name2, id2, rc ? err : "ok");
	if (!rc) {
		rc = sbx_destroy(&s, name2, NULL, err, sizeof(err));
		check(rc == 0, "destroy by name (%s)", rc ? err : "ok");
		id3[0] = '\0';
		rc = sbx_create(&s, &(struct sbx_spec){ .name = name2 }, id3, sizeof(id3), err,
				sizeof(err));
		check(rc == 0 && (!strcmp(id2, name2) || strcmp(id2, id3)),
		      "after destroy by name, create makes a new sandbox (%s, was %s)", id3, id2);
		rc = sbx_destroy(&s, id3, NULL, err, sizeof(err));
		check(rc == 0, "destroy (%s)", rc ? err : "ok");
	}
close:
	sbx_close(&s);
done:
	return check_summary();
}
