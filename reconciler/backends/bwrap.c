/* The `bwrap` backend: bubblewrap namespaces on the host. The host root is mounted read-only,
 * the sandbox's workspace (at its own path) is the only writable place, /tmp is private, the
 * configuration directory, the sandbox root (other sandboxes) and home directories are hidden,
 * and the network is unshared unless the policy is unrestricted. Packages go to prefixes inside
 * the workspace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"

#define BWRAP_BIN "bwrap"
#define BWRAP_OWN_ARGS 64                   /* bwrap's own options before the command */
#define BWRAP_ARGV_MAX (BWRAP_OWN_ARGS + 320) /* room for an install of 256 packages */

static void bwrap_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	if (sbx_dir_path(s, id, out, outsz))
		snprintf(out, outsz, "%s", s->root);
}

static int bwrap_run(struct sbx *s, const char *id, int share_net, char *const argv[],
		     char *const envp[], long timeout_s, struct proc_result *res)
{
	const char *args[BWRAP_ARGV_MAX];
	char dir[CONFIG_STR_MAX * 2];
	struct stat st;
	int n = 0;

	if (sbx_dir_path(s, id, dir, sizeof(dir))) {
		memset(res, 0, sizeof(*res));
		res->exit_code = -1;
		return -1;
	}
	args[n++] = BWRAP_BIN;
	args[n++] = "--ro-bind", args[n++] = "/", args[n++] = "/";
	args[n++] = "--dev", args[n++] = "/dev";
	args[n++] = "--proc", args[n++] = "/proc";
	args[n++] = "--tmpfs", args[n++] = "/tmp";
	for (int i = 0; i < s->nmasks; i++)
		if (!stat(s->masks[i], &st) && S_ISDIR(st.st_mode))
			args[n++] = "--tmpfs", args[n++] = s->masks[i];
	/* after the masks: the workspace reappears inside the hidden sandbox root */
	args[n++] = "--bind", args[n++] = dir, args[n++] = dir;
	args[n++] = "--chdir", args[n++] = dir;
	args[n++] = "--unshare-pid";
	args[n++] = "--unshare-ipc";
	args[n++] = "--unshare-uts";
	if (!share_net)
		args[n++] = "--unshare-net";
	args[n++] = "--die-with-parent";
	args[n++] = "--new-session";
	args[n++] = "--";
	for (int i = 0; argv[i]; i++) {
		if (n >= BWRAP_ARGV_MAX - 1) {
			memset(res, 0, sizeof(*res));
			res->exit_code = -1;
			res->output = strdup("bwrap: too many arguments");
			res->len = res->output ? strlen(res->output) : 0;
			return -1;
		}
		args[n++] = argv[i];
	}
	args[n] = NULL;
	return proc_run((char *const *)args, dir, envp, timeout_s, (size_t)s->cfg->output_max, res);
}

const struct sandbox_backend sbx_bwrap = {
	.name = "bwrap",
	.create = sbx_dir_create_from,
	.workdir = bwrap_workdir,
	.run = bwrap_run,
	.set_egress = NULL,
	.destroy = sbx_dir_destroy,
	.cache_lookup = sbx_dir_cache_lookup,
	.cache_store = sbx_dir_cache_store,
	.cache_remove = sbx_dir_cache_remove,
};
