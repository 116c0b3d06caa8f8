#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend.h"
#include "http.h"

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

/* The drivers in this build, by the backend name of the configuration. A driver with an open
 * operation is an HTTP backend: it gets its [section] (config_remote) and prepares its own state;
 * the others work in directories under the sandbox root. */
static const struct sandbox_backend *const drivers[] = {
	&sbx_local,
	&sbx_bwrap,
	&sbx_opensandbox,
	&sbx_docker,
	&sbx_e2b,
	&sbx_cube,
	&sbx_daytona,
	&sbx_srt,
};

int sbx_open(struct sbx *s, const struct config *cfg, const char *config_file, char *err,
	     size_t errsz)
{
	char real[PATH_MAX], cfgdir[PATH_MAX];

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->caps = backend_lookup(cfg->backend);
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (!strcmp(cfg->backend, drivers[i]->name))
			s->ops = drivers[i];
	if (!s->ops || !s->caps) {
		snprintf(err, errsz, "backend '%s' has no driver in this build", cfg->backend);
		return -1;
	}
	/* what a sandboxed command must not read: the configuration (it holds the database
	 * password) and home directories; then the other sandboxes (below). Every backend's
	 * last_error hides them too (provision.c). */
	if (config_file && realpath(config_file, cfgdir))
		add_mask(s, dirname(cfgdir));
	add_mask(s, "/root");
	add_mask(s, "/home");
	if (s->ops->open) {
		s->remote = config_remote(cfg, cfg->backend);
		if (!s->remote) {
			snprintf(err, errsz, "backend '%s' has no configuration section",
				 cfg->backend);
			return -1;
		}
		if (s->ops->open(s, err, errsz))
			return -1;
		/* an HTTP driver's calls ask the caller's watch (sbx.watch) while they run */
		if (s->ops->close == sbx_http_close)
			((struct http_client *)s->priv)->watch = &s->watch;
		return 0;
	}
	if (mkdir_p(cfg->sandbox_root) || !realpath(cfg->sandbox_root, real) ||
	    strlen(real) >= sizeof(s->root)) {
		snprintf(err, errsz, "sandbox root %s: %s", cfg->sandbox_root, strerror(errno));
		return -1;
	}
	strcpy(s->root, real);
	add_mask(s, s->root);
	return s->ops->prepare ? s->ops->prepare(s, err, errsz) : 0;
}

void sbx_close(struct sbx *s)
{
	if (s->ops && s->ops->close && s->priv)
		s->ops->close(s);
	s->priv = NULL;
}

int sbx_list_start(struct sbx *s, int *n, char *err, size_t errsz)
{
	*n = 0;
	if (s->deployment[0])
		return 0;
	snprintf(err, errsz, "%s: no deployment id to list by", s->ops->name);
	return -1;
}

void sbx_list_add(struct sbx *s, struct sbx_listed *out, int max, int *n, const char *id,
		  const char *name, const char *deployment)
{
	if (*n >= max || !id || !*id || strlen(id) >= sizeof(out->id) || !deployment ||
	    strcmp(deployment, s->deployment))
		return;
	strcpy(out[*n].id, id);
	snprintf(out[*n].name, sizeof(out[*n].name), "%s", name ? name : "");
	(*n)++;
}
