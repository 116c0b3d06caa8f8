/* The `local` backend: a workspace directory on the host, commands run as host processes with
 * the workspace as working directory. No isolation; refuses packages and limited networking at
 * admission (common/backend.c). */
#include <stdio.h>
#include <unistd.h>

#include "backend.h"

int local_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	char dir[CONFIG_STR_MAX * 2];
	int in = ex->stdin_data ? proc_stdin(ex->stdin_data, ex->stdin_len) : -1;
	int rc;

	/* a host process has the host's network: share_net changes nothing */
	if (ex->stdin_data && in < 0) {
		proc_result_fail(res, "local: cannot prepare the command's stdin");
		return -1;
	}
	sbx_dir_workdir(s, id, dir, sizeof(dir));
	rc = proc_run(ex->argv, dir, ex->envp, in, ex->timeout_s, ex->output_max, ex->watch, res);
	if (in >= 0)
		close(in);
	return rc;
}
