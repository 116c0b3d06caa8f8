/* The `local` backend: a workspace directory on the host, commands run as host processes with
 * the workspace as working directory. No isolation; refuses packages and limited networking at
 * admission (common/backend.c). */
#include <stdio.h>

#include "backend.h"

int local_run(struct sbx *s, const char *id, int share_net, char *const argv[], char *const envp[],
	      long timeout_s, struct proc_result *res)
{
	char dir[CONFIG_STR_MAX * 2];

	(void)share_net; /* a host process has the host's network */
	sbx_dir_workdir(s, id, dir, sizeof(dir));
	return proc_run(argv, dir, envp, timeout_s, (size_t)s->cfg->output_max, s->watch, res);
}
