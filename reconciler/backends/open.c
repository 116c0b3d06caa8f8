#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -1;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

static void add_mask(struct sbx *s, const char *path)
{
	if (s->nmasks < SBX_MASKS_MAX && strlen(path) < CONFIG_STR_MAX && path[0] == '/')
		strcpy(s->masks[s->nmasks++], path);
}

int sbx_open(struct sbx *s, const struct config *cfg, const char *config_file, char *err,
	     size_t errsz)
{
	char real[PATH_MAX], cfgdir[PATH_MAX];

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->caps = backend_lookup(cfg->backend);
	if (!strcmp(cfg->backend, "local"))
		s->ops = &sbx_local;
	else if (!strcmp(cfg->backend, "bwrap"))
		s->ops = &sbx_bwrap;
	if (!s->ops || !s->caps) {
		snprintf(err, errsz, "backend '%s' has no driver in this build", cfg->backend);
		return -1;
	}
	if (mkdir_p(cfg->sandbox_root) || !realpath(cfg->sandbox_root, real) ||
	    strlen(real) >= sizeof(s->root)) {
		snprintf(err, errsz, "sandbox root %s: %s", cfg->sandbox_root, strerror(errno));
		return -1;
	}
	strcpy(s->root, real);
	/* what a sandboxed command must not read: other sandboxes, the configuration (it holds
	 * the database password) and home directories */
	add_mask(s, s->root);
	if (config_file && realpath(config_file, cfgdir))
		add_mask(s, dirname(cfgdir));
	add_mask(s, "/root");
	add_mask(s, "/home");
	return 0;
}
