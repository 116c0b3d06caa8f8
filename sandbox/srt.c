/* The `srt` backend: Anthropic's sandbox-runtime (docs/srt.md). Workspaces are the sandbox
 * directories of bwrap and local (dir.c); every command runs through `srt` with a settings file
 * written for that command: writes only in the workspace (and a private /tmp); reads denied by
 * default, every entry of / but the trees toolchains need (SBX_VIEW_ROOTS, bwrap's view) and
 * what srt mounts itself, so that no directory the service writes (its logs, state and run
 * directories) is seen, and within those trees the configuration directory, the sandbox root
 * (other sandboxes) and home directories denied too; and the network namespace removed, with
 * HTTP(S) and TCP going through srt's proxies on the host,
 * which admit only the allowlist set by set_egress (`*.` wildcards match subdomains). No list:
 * no network. An unrestricted policy runs through sandbox-runtime/srt-unrestricted.mjs, which
 * admits every host but this one.
 *
 * srt runs on the host as the reconciler's user and the command keeps that uid inside: a
 * reconciler started as root opens this driver (srt_prepare) and then gives up root for its
 * [reconciler] user before any command runs (reconciler/main.c, leave_root). Everything srt
 * executes on the host (node, bwrap, socat, rg) is found at open on the reconciler's own PATH and
 * named by absolute path, never looked up on the sandbox's PATH, whose first entry is a workspace
 * directory the sandbox writes. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "backend.h"
#include "srt_hosts.h"

#define SRT_RUNTIME_DIR "sandbox-runtime" /* beside build/ in the checkout (default srt_dir) */
#define SRT_PACKAGE "node_modules/@anthropic-ai/sandbox-runtime"
#define SRT_CLI SRT_PACKAGE "/dist/cli.js"
#define SRT_SECCOMP_DIR SRT_PACKAGE "/vendor/seccomp" /* executed inside the sandbox */
#define SRT_UNRESTRICTED "srt-unrestricted.mjs"
#define SRT_HOST_TMP "/var/tmp/terrarium-srt.XXXXXX" /* outside the sandbox's private /tmp */
#define SRT_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
#define SRT_OWN_ARGS 9 /* node, --no-warnings, script, --settings F, --, env, PATH, TMPDIR */
#define SRT_ARGV_MAX (SRT_OWN_ARGS + 320) /* room for an install of 256 packages */
#define SRT_ENV_MAX 64
#define SRT_CHECK_TIMEOUT_S 60
#define SRT_CHECK_OUTPUT "terrarium-srt-check-ok"
#define SRT_WHO_MAX 128 /* "'user' (uid N)" */
/* what srt mounts itself in every sandbox: never denied */
#define SRT_OWN_MOUNTS                                                                             \
	{                                                                                          \
		"/dev", "/proc"                                                                    \
	}
#define SRT_RUN_SUBDIR "run"	       /* srt's TMPDIR, its proxy sockets: read inside */
#define SRT_SETTINGS_SUBDIR "settings" /* the settings files: never read inside */

enum srt_tool { SRT_NODE, SRT_BWRAP, SRT_SOCAT, SRT_RG, SRT_ENV, SRT_NTOOLS };
static const char *const srt_tool_names[SRT_NTOOLS] = { "node", "bwrap", "socat", "rg", "env" };

struct srt_state {
	char dir[PATH_MAX];		 /* sandbox-runtime install (package.json, node_modules) */
	char tool[SRT_NTOOLS][PATH_MAX]; /* absolute paths on the reconciler's PATH */
	char host_path[CONFIG_STR_MAX * 4];	      /* the PATH srt itself runs with */
	char tmp[sizeof(SRT_HOST_TMP)];		      /* private to us: the two below, --check's */
	char run_dir[sizeof(SRT_HOST_TMP) + 16];      /* tmp/run: srt's TMPDIR (its sockets) */
	char settings_dir[sizeof(SRT_HOST_TMP) + 16]; /* tmp/settings: denied to the sandbox */
	char egress_id[SBX_ID_MAX];		      /* the sandbox the allowlist below is for */
	json_t *egress;				      /* srt allowedDomains, or NULL: no network */
	pthread_mutex_t lock; /* tmp (made by the first command) and the allowlist above */
};

/* The first executable NAME on PATH into OUT. 0 or -1. */
static int find_on_path(const char *path, const char *name, char *out, size_t outsz)
{
	while (*path) {
		size_t len = strcspn(path, ":");
		int n = snprintf(out, outsz, "%.*s/%s", (int)len, path, name);

		if (len && path[0] == '/' && n > 0 && (size_t)n < outsz && !access(out, X_OK))
			return 0;
		path += len;
		path += *path == ':';
	}
	return -1;
}

/* [sandbox] srt_dir, else sandbox-runtime/ beside the directory holding this binary (build/). */
static int runtime_dir(const struct config *cfg, char *out, size_t outsz)
{
	char exe[PATH_MAX];
	ssize_t n;
	int k;

	if (cfg->srt_dir[0])
		return realpath(cfg->srt_dir, out) && strlen(out) < outsz ? 0 : -1;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	k = snprintf(out, outsz, "%s/%s", dirname(dirname(exe)), SRT_RUNTIME_DIR);
	if (k < 0 || (size_t)k >= outsz || !realpath(out, exe))
		return -1;
	return snprintf(out, outsz, "%s", exe) < (int)outsz ? 0 : -1;
}

void srt_close(struct sbx *s)
{
	struct srt_state *st = s->priv;
	char err[SBX_ERR_MAX];

	if (st->tmp[0] && sbx_rmtree(st->tmp, err, sizeof(err)))
		log_warn("srt: %s", err);
	json_decref(st->egress);
	pthread_mutex_destroy(&st->lock);
	free(st);
	s->priv = NULL;
}

/* The name of the user this process runs as (the reconciler's working user once root is given
 * up) into OUT. */
static void self_user(char *out, size_t outsz)
{
	struct passwd *pw = getpwuid(geteuid());

	if (pw)
		snprintf(out, outsz, "'%s' (uid %u)", pw->pw_name, (unsigned)geteuid());
	else
		snprintf(out, outsz, "uid %u", (unsigned)geteuid());
}

/* PATH (absolute) cut at the first directory on its way this process may not search, with
 * *ERRNUM set to why; left whole when every directory is searchable. Returns PATH. */
static char *blocked_at(char *path, int *errnum)
{
	for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (access(path, X_OK)) {
			*errnum = errno;
			break;
		}
		*p = '/';
	}
	return path;
}

/* Whether this process can run srt from ST->dir: the scripts node runs readable, every
 * directory above them searchable. A checkout under a 0700 home directory (/root) made by root
 * fails here once the reconciler has given up root. 0, or -1 with ERR naming the first path in
 * the way and the user. */
static int srt_reachable(const struct srt_state *st, char *err, size_t errsz)
{
	static const char *const scripts[] = { SRT_CLI, SRT_UNRESTRICTED };
	char path[PATH_MAX * 2], who[SRT_WHO_MAX];

	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		int e;

		snprintf(path, sizeof(path), "%s/%s", st->dir, scripts[i]);
		if (!access(path, R_OK))
			continue;
		e = errno;
		blocked_at(path, &e);
		self_user(who, sizeof(who));
		snprintf(err, errsz,
			 "srt: user %s, which runs the sandboxes, cannot read %s/%s: %s: %s; "
			 "sandbox-runtime must be readable by that user (a checkout under a 0700 "
			 "home "
			 "directory such as /root is not: docs/srt.md, Install)",
			 who, st->dir, scripts[i], path, strerror(e));
		return -1;
	}
	return 0;
}

int srt_prepare(struct sbx *s, char *err, size_t errsz)
{
	struct srt_state *st = calloc(1, sizeof(*st));
	const char *path = getenv("PATH");
	char file[PATH_MAX * 2], who[SRT_WHO_MAX];

	if (!st) {
		snprintf(err, errsz, "srt: out of memory");
		return -1;
	}
	pthread_mutex_init(&st->lock, NULL);
	s->priv = st;
	snprintf(st->host_path, sizeof(st->host_path), "%s",
		 path && *path ? path : SRT_DEFAULT_PATH);
	if (runtime_dir(s->cfg, st->dir, sizeof(st->dir))) {
		const char *dir = s->cfg->srt_dir[0] ? s->cfg->srt_dir : SRT_RUNTIME_DIR;
		int e = errno;

		snprintf(file, sizeof(file), "%s", dir);
		if (dir[0] == '/')
			blocked_at(file, &e);
		self_user(who, sizeof(who));
		snprintf(err, errsz,
			 "srt: no sandbox-runtime directory (%s) for user %s: %s: %s; run "
			 "scripts/install-deps.sh, in a checkout that user can read (docs/srt.md, "
			 "Install)",
			 dir, who, file, strerror(e));
		goto fail;
	}
	snprintf(file, sizeof(file), "%s/%s", st->dir, SRT_CLI);
	if (access(file, F_OK) && errno == ENOENT) {
		snprintf(err, errsz,
			 "srt: %s is missing: run scripts/install-deps.sh (npm ci in %s)", file,
			 st->dir);
		goto fail;
	}
	/* a reconciler started as root checks again at its first command, as its working user */
	if (geteuid() != 0 && srt_reachable(st, err, errsz))
		goto fail;
	for (int i = 0; i < SRT_NTOOLS; i++)
		if (find_on_path(st->host_path, srt_tool_names[i], st->tool[i],
				 sizeof(st->tool[i]))) {
			snprintf(err, errsz,
				 "srt: '%s' is not on PATH (scripts/install-deps.sh installs it)",
				 srt_tool_names[i]);
			goto fail;
		}
	return 0;
fail:
	srt_close(s);
	return -1;
}

/* srt's TMPDIR and the settings directory, made by the first command: a reconciler started as
 * root opens its backend before it gives up root, and they must be its working user's. That
 * user's access to sandbox-runtime is checked there too. srt binds its proxy sockets from its
 * TMPDIR into the sandbox before it applies the read denials, so that directory is read back
 * inside (settings()); the settings files, beside it, never are. */
static int srt_tmp_make(struct srt_state *st, char *err, size_t errsz)
{
	if (st->tmp[0])
		return 0;
	if (srt_reachable(st, err, errsz))
		return -1;
	snprintf(st->tmp, sizeof(st->tmp), "%s", SRT_HOST_TMP);
	if (!mkdtemp(st->tmp)) {
		snprintf(err, errsz, "mkdtemp %s: %s", SRT_HOST_TMP, strerror(errno));
		st->tmp[0] = '\0';
		return -1;
	}
	snprintf(st->run_dir, sizeof(st->run_dir), "%s/%s", st->tmp, SRT_RUN_SUBDIR);
	snprintf(st->settings_dir, sizeof(st->settings_dir), "%s/%s", st->tmp, SRT_SETTINGS_SUBDIR);
	if (mkdir(st->run_dir, 0700) || mkdir(st->settings_dir, 0700)) {
		snprintf(err, errsz, "mkdir in %s: %s", st->tmp, strerror(errno));
		return -1;
	}
	return 0;
}

/* srt_tmp_make, once for every thread. */
static int srt_tmp(struct srt_state *st, char *err, size_t errsz)
{
	int rc;

	pthread_mutex_lock(&st->lock);
	rc = srt_tmp_make(st, err, errsz);
	pthread_mutex_unlock(&st->lock);
	return rc;
}

int srt_set_egress(struct sbx *s, const char *id, json_t *hosts, char *err, size_t errsz)
{
	struct srt_state *st = s->priv;
	json_t *domains = srt_domains(hosts, err, errsz);

	if (!domains)
		return -1;
	pthread_mutex_lock(&st->lock);
	json_decref(st->egress);
	st->egress = domains;
	snprintf(st->egress_id, sizeof(st->egress_id), "%s", id);
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* Whether PATH (a path on the host) is one of the trees a sandbox sees (SBX_VIEW_ROOTS) or srt
 * mounts itself, or lies below one, once symlinks are resolved. */
static int shown_inside(const char *path)
{
	static const char *const roots[] = SBX_VIEW_ROOTS, *const own[] = SRT_OWN_MOUNTS;
	const char *all[sizeof(roots) / sizeof(roots[0]) + sizeof(own) / sizeof(own[0])];
	char real[PATH_MAX], root[PATH_MAX];
	size_t n = 0;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		all[n++] = roots[i];
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		all[n++] = own[i];
	for (size_t i = 0; i < n; i++)
		if (!strcmp(path, all[i]))
			return 1;
	if (!realpath(path, real))
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t k;
		if (!realpath(all[i], root))
			continue;
		k = strlen(root);
		if (!strncmp(real, root, k) && (real[k] == '/' || !real[k]))
			return 1;
	}
	return 0;
}

/* Deny reads by default: every entry of / that is not shown_inside goes to DENY (srt mounts an
 * empty tmpfs over a directory, /dev/null over a file): /tmp (a private one), /var, /run, /srv,
 * /home, /root, /mnt, a checkout at the top... 0, or -1 when / cannot be listed. */
static int deny_outside_view(json_t *deny)
{
	DIR *d = opendir("/");
	struct dirent *e;
	char path[PATH_MAX];

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "/%s", e->d_name);
		if (!shown_inside(path))
			json_array_append_new(deny, json_string(path));
	}
	closedir(d);
	return 0;
}

/* The settings file of one command in DIR (srt's format: its README, "Configuration"), or NULL
 * with ERR set. */
static json_t *settings(struct sbx *s, const char *dir, json_t *domains, int open_net, char *err,
			size_t errsz)
{
	struct srt_state *st = s->priv;
	char seccomp[PATH_MAX * 2];
	json_t *deny = json_array(), *allow = json_array(), *root;

	/* reads denied by default (a private /tmp among them), then the masks of sbx_open inside
	 * what is shown (the configuration directory, the sandbox root, home directories) and
	 * srt's own settings files. The workspace is bound back over the denied root. */
	if (deny_outside_view(deny)) {
		snprintf(err, errsz, "cannot list / to deny what lies outside the view: %s",
			 strerror(errno));
		json_decref(deny);
		json_decref(allow);
		json_decref(domains);
		return NULL;
	}
	for (int i = 0; i < s->nmasks; i++)
		json_array_append_new(deny, json_string(s->masks[i]));
	json_array_append_new(deny, json_string(st->settings_dir));
	/* read back: srt's seccomp helper and `env`, which run inside, and its proxy sockets */
	snprintf(seccomp, sizeof(seccomp), "%s/%s", st->dir, SRT_SECCOMP_DIR);
	json_array_append_new(allow, json_string(seccomp));
	json_array_append_new(allow, json_string(st->run_dir));
	if (!shown_inside(st->tool[SRT_ENV]))
		json_array_append_new(allow, json_string(st->tool[SRT_ENV]));
	root = json_pack("{s:{s:o, s:[], s:b}, s:{s:o, s:o, s:[s], s:[]}, s:s, s:s, s:{s:s}}",
			 "network", "allowedDomains", domains, "deniedDomains", "strictAllowlist",
			 !open_net, "filesystem", "denyRead", deny, "allowRead", allow,
			 "allowWrite", dir, "denyWrite", "bwrapPath", st->tool[SRT_BWRAP],
			 "socatPath", st->tool[SRT_SOCAT], "ripgrep", "command", st->tool[SRT_RG]);
	if (!root)
		snprintf(err, errsz, "out of memory");
	return root;
}

/* A command that could not be started: "srt: WHAT[: DETAIL]" as its output. */
static void fail_result(struct proc_result *res, const char *what, const char *detail)
{
	char msg[SBX_ERR_MAX];

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	snprintf(msg, sizeof(msg), "srt: %s%s%s", what, detail ? ": " : "", detail ? detail : "");
	res->output = strdup(msg);
	res->len = res->output ? strlen(res->output) : 0;
}

/* Run EX's command through srt in workspace DIR with allowedDomains DOMAINS (borrowed), or every
 * host but this one when EX->share_net. */
static int srt_exec(struct sbx *s, const char *dir, json_t *domains, const struct sbx_exec *ex,
		    struct proc_result *res)
{
	char *const *argv = ex->argv, *const *envp = ex->envp;
	int open_net = ex->share_net;
	struct srt_state *st = s->priv;
	char file[sizeof(st->settings_dir) + 8], script[PATH_MAX * 2],
		tmpdir[sizeof(st->run_dir) + 8];
	char host_path[sizeof(st->host_path) + 8], msg[SBX_ERR_MAX];
	const char *args[SRT_ARGV_MAX], *env[SRT_ENV_MAX + 3], *sandbox_path = NULL;
	json_t *conf;
	int n = 0, k = 0, fd, rc, in = -1;

	if (srt_tmp(st, msg, sizeof(msg))) {
		fail_result(res, "setup", msg);
		return -1;
	}
	snprintf(file, sizeof(file), "%s/XXXXXX", st->settings_dir);
	fd = mkstemp(file);
	if (fd < 0) {
		fail_result(res, "settings file", strerror(errno));
		return -1;
	}
	conf = settings(s, dir, json_incref(domains), open_net, msg, sizeof(msg));
	if (!conf) {
		close(fd);
		unlink(file);
		fail_result(res, "settings", msg);
		return -1;
	}
	rc = json_dumpfd(conf, fd, JSON_COMPACT);
	json_decref(conf);
	if (close(fd) || rc) {
		unlink(file);
		fail_result(res, "writing the settings file failed", file);
		return -1;
	}

	/* srt's own environment: the command's, but srt's PATH (the sandbox's PATH begins with a
	 * directory it writes) and srt's TMPDIR; the command gets its PATH back through env(1)
	 * inside, and /tmp as TMPDIR */
	for (int i = 0; envp[i] && k < SRT_ENV_MAX; i++) {
		if (!strncmp(envp[i], "PATH=", 5))
			sandbox_path = envp[i];
		else if (strncmp(envp[i], "TMPDIR=", 7))
			env[k++] = envp[i];
	}
	snprintf(host_path, sizeof(host_path), "PATH=%s", st->host_path);
	snprintf(tmpdir, sizeof(tmpdir), "TMPDIR=%s", st->run_dir);
	env[k++] = host_path;
	env[k++] = tmpdir;
	env[k] = NULL;

	snprintf(script, sizeof(script), "%s/%s", st->dir, open_net ? SRT_UNRESTRICTED : SRT_CLI);
	args[n++] = st->tool[SRT_NODE];
	/* node's own warnings about srt (Node 18: "Importing JSON modules is an experimental
	 * feature") are not the command's output */
	args[n++] = "--no-warnings";
	args[n++] = script;
	args[n++] = "--settings";
	args[n++] = file;
	args[n++] = "--";
	args[n++] = st->tool[SRT_ENV];
	if (sandbox_path)
		args[n++] = sandbox_path;
	args[n++] = "TMPDIR=/tmp";
	for (int i = 0; argv[i]; i++) {
		if (n >= SRT_ARGV_MAX - 1) {
			unlink(file);
			fail_result(res, "too many arguments", NULL);
			return -1;
		}
		args[n++] = argv[i];
	}
	args[n] = NULL;
	if (ex->stdin_data && (in = proc_stdin(ex->stdin_data, ex->stdin_len)) < 0) {
		unlink(file);
		fail_result(res, "cannot prepare the command's stdin", strerror(errno));
		return -1;
	}
	rc = proc_run((char *const *)args, dir, (char *const *)env, in, ex->timeout_s,
		      ex->output_max, ex->watch, res);
	if (in >= 0)
		close(in);
	unlink(file);
	return rc;
}

int srt_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	struct srt_state *st = s->priv;
	char dir[CONFIG_STR_MAX * 2], msg[SBX_ERR_MAX];
	json_t *domains = NULL;
	int rc;

	if (sbx_dir_path(s, id, dir, sizeof(dir))) {
		fail_result(res, "invalid sandbox id", id);
		return -1;
	}
	/* the command's own list, else the one set for this sandbox, else none (limited
	 * networking sets one before any command runs); an unrestricted one needs none */
	if (!ex->share_net && ex->egress) {
		if (!(domains = srt_domains(ex->egress, msg, sizeof(msg)))) {
			fail_result(res, "egress policy", msg);
			return -1;
		}
	} else if (!ex->share_net) {
		pthread_mutex_lock(&st->lock);
		if (st->egress && !strcmp(st->egress_id, id))
			domains = json_incref(st->egress);
		pthread_mutex_unlock(&st->lock);
	}
	if (!domains)
		domains = json_array();
	rc = srt_exec(s, dir, domains, ex, res);
	json_decref(domains);
	return rc;
}

/* --check: a command runs through srt in a scratch workspace, writes there, and has no
 * network. */
int srt_check(struct sbx *s, char *err, size_t errsz)
{
	struct srt_state *st = s->priv;
	char dir[sizeof(st->tmp) + 8], path_env[sizeof(st->host_path) + 8], rm_err[SBX_ERR_MAX];
	char sh[] = "sh", c[] = "-c",
	     script[] = "echo " SRT_CHECK_OUTPUT " >probe && cat probe && "
			"! getent ahosts example.org >/dev/null 2>&1 || "
			"! echo 'the network is not removed'";
	char *const argv[] = { sh, c, script, NULL };
	char *envp[] = { path_env, NULL };
	struct proc_result res;
	json_t *none = json_array();
	int rc;

	snprintf(path_env, sizeof(path_env), "PATH=%s", st->host_path);
	if (srt_tmp(st, err, errsz)) {
		json_decref(none);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/check", st->tmp);
	if (mkdir(dir, 0700)) {
		snprintf(err, errsz, "srt: mkdir %s: %s", dir, strerror(errno));
		json_decref(none);
		return -1;
	}
	rc = srt_exec(s, dir, none,
		      &(struct sbx_exec){ .argv = argv,
					  .envp = envp,
					  .timeout_s = SRT_CHECK_TIMEOUT_S,
					  .output_max = (size_t)s->cfg->output_max },
		      &res);
	json_decref(none);
	if (rc || res.exit_code || res.timed_out || !res.output ||
	    strncmp(res.output, SRT_CHECK_OUTPUT "\n", strlen(SRT_CHECK_OUTPUT) + 1)) {
		snprintf(err, errsz, "srt self-test failed (exit %d%s): %.300s", res.exit_code,
			 res.timed_out ? ", timed out" : "", res.output ? res.output : "");
		rc = -1;
	}
	proc_result_release(&res);
	if (sbx_rmtree(dir, rm_err, sizeof(rm_err)))
		log_warn("srt: %s", rm_err);
	return rc ? -1 : 0;
}
