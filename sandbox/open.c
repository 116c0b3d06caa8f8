#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/privs.h"
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

/* The drivers, one row per backend the configuration may name, in common/backend.c's order: the
 * backend's name, then its operations (struct sandbox_backend, backend.h); an operation a row
 * leaves out is NULL, not supported. Two kinds of driver share most operations:
 * - DIR_DRIVER: local, bwrap and srt keep their sandboxes in directories under the sandbox root
 *   (dir.c) and pass a command's stdin on;
 * - HTTP_DRIVER: a driver with an open operation (named P_open, like the rest of its own) gets
 *   its [section] (config_remote), prepares its own state and is closed by sbx_http_close.
 * A cache is three operations (CACHE_OPS). e2b and cube are one driver under two names, so that
 * [cube] holds CubeSandbox's settings. */
#define DIR_DRIVER(backend)                                                                        \
	.name = backend, .destroy = sbx_dir_destroy, .list = sbx_dir_list, .has_stdin = 1
#define HTTP_DRIVER(backend, p)                                                                    \
	.name = backend, .open = p##_open, .close = sbx_http_close, .create = p##_create,          \
	.run = p##_run, .destroy = p##_destroy, .list = p##_list
#define CACHE_OPS(p)                                                                               \
	.cache_lookup = p##_cache_lookup, .cache_store = p##_cache_store,                          \
	.cache_remove = p##_cache_remove
static const struct sandbox_backend drivers[] = {
	{ DIR_DRIVER("local"), .create = sbx_dir_make, .workdir = sbx_dir_workdir,
	  .run = local_run },
	{ DIR_DRIVER("bwrap"), .prepare = bwrap_prepare, .close = bwrap_close,
	  .create = bwrap_create, .workdir = sbx_workspace_workdir, .run = bwrap_run,
	  .exists = sbx_dir_exists, CACHE_OPS(sbx_dir) },
	{ DIR_DRIVER("srt"), .prepare = srt_prepare, .close = srt_close, .create = sbx_dir_make,
	  .workdir = sbx_dir_workdir, .run = srt_run, .set_egress = srt_set_egress,
	  .check = srt_check, .egress_per_command = 1 },
	{ HTTP_DRIVER("docker", docker), .workdir = sbx_workspace_workdir, .start = docker_start,
	  .exists = docker_exists, CACHE_OPS(docker) },
	{ HTTP_DRIVER("opensandbox", osb), .workdir = sbx_workspace_workdir,
	  .set_egress = osb_set_egress },
	{ HTTP_DRIVER("e2b", e2b), .workdir = e2b_workdir },
	{ HTTP_DRIVER("cube", e2b), .workdir = e2b_workdir },
	{ HTTP_DRIVER("daytona", daytona), .workdir = daytona_workdir },
};
_Static_assert(sizeof(drivers) / sizeof(drivers[0]) == BACKEND_TABLE_LEN,
	       "one row per backend of common/backend.c");

const struct sandbox_backend *sbx_driver(const char *name)
{
	for (size_t i = 0; i < sizeof(drivers) / sizeof(drivers[0]); i++)
		if (!strcmp(name, drivers[i].name))
			return &drivers[i];
	return NULL;
}

int sbx_open(struct sbx *s, const struct config *cfg, const char *config_file, char *err,
	     size_t errsz)
{
	char real[PATH_MAX], cfgdir[PATH_MAX];

	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->caps = backend_lookup(cfg->backend);
	s->ops = sbx_driver(cfg->backend);
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
		return s->ops->open(s, err, errsz);
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

int sbx_leave_root(struct sbx *s, const char *user, const char *who)
{
	unsigned uid, gid;
	long keep = -1;

	if (geteuid() != 0)
		return 0;
	if (privs_lookup(user, &uid, &gid)) {
		log_error(
			"%s: [reconciler] user '%s' is unknown or is root; refusing to run as root",
			who, user);
		return -1;
	}
	if (s->root[0] && sbx_dir_own(s, uid, gid))
		log_warn("sandbox root %s: giving it to '%s': %s", s->root, user, strerror(errno));
	if (s->control_socket[0]) {
		/* the Engine's socket (root:docker 0660): its group, never root's, comes along */
		struct stat st;

		if (stat(s->control_socket, &st))
			log_warn("backend socket %s: %s", s->control_socket, strerror(errno));
		else if (st.st_gid == 0)
			log_warn("backend socket %s belongs to group root: the [reconciler] user "
				 "cannot reach it; give it a group of its own (dockerd --group)",
				 s->control_socket);
		else
			keep = (long)st.st_gid;
	}
	return privs_drop_keep(user, who, "[reconciler] user", keep);
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
