/* The sandbox backend interface the reconciler drives (DESIGN.md, Backends): create or attach
 * by a deterministic name, run argv with a time limit, set the egress allowlist where
 * supported, destroy (a missing sandbox counts as destroyed). */
#ifndef TERRARIUM_SANDBOX_BACKEND_H
#define TERRARIUM_SANDBOX_BACKEND_H

#include <jansson.h>
#include <stddef.h>

#include "../../common/backend.h"
#include "../../common/config.h"
#include "process.h"

#define SBX_ID_MAX 256
#define SBX_ERR_MAX 512
#define SBX_MASKS_MAX 8

struct sandbox_backend;

/* A backend bound to a deployment's configuration. */
struct sbx {
	const struct sandbox_backend *ops;
	const struct backend_caps *caps;
	const struct config *cfg;
	char root[CONFIG_STR_MAX];             /* absolute sandbox root (local, bwrap) */
	char masks[SBX_MASKS_MAX][CONFIG_STR_MAX]; /* host paths hidden inside bwrap */
	int nmasks;
};

struct sandbox_backend {
	const char *name;
	/* Create the sandbox NAME, or attach to it when it exists; its id goes to ID. 0 or -1. */
	int (*create)(struct sbx *s, const char *name, char *id, size_t idsz, char *err,
		      size_t errsz);
	/* The working directory of commands inside sandbox ID, as they see it (into OUT). */
	void (*workdir)(struct sbx *s, const char *id, char *out, size_t outsz);
	/* Run ARGV inside sandbox ID with environment ENVP; SHARE_NET gives it the host's
	 * network (unrestricted policy), else it has none unless the backend enforces a list. */
	int (*run)(struct sbx *s, const char *id, int share_net, char *const argv[],
		   char *const envp[], long timeout_s, struct proc_result *res);
	/* Set the egress allowlist (a JSON array of hosts); NULL when unsupported. */
	int (*set_egress)(struct sbx *s, const char *id, json_t *hosts, char *err, size_t errsz);
	/* Destroy sandbox ID; one that does not exist counts as destroyed. 0 or -1. */
	int (*destroy)(struct sbx *s, const char *id, char *err, size_t errsz);
};

/* Bind the backend named by CFG (local or bwrap here). 0, or -1 with ERR set when the backend
 * has no driver in this build or its root cannot be prepared. CONFIG_FILE is the configuration
 * file's path (hidden from bwrap sandboxes with its directory). */
int sbx_open(struct sbx *s, const struct config *cfg, const char *config_file, char *err,
	     size_t errsz);

extern const struct sandbox_backend sbx_local;
extern const struct sandbox_backend sbx_bwrap;

/* Shared by local and bwrap: sandbox directories under s->root. */
int sbx_dir_create(struct sbx *s, const char *name, char *id, size_t idsz, char *err,
		   size_t errsz);
int sbx_dir_destroy(struct sbx *s, const char *id, char *err, size_t errsz);
/* s->root + "/" + ID into OUT; -1 when ID is not a plain name. */
int sbx_dir_path(struct sbx *s, const char *id, char *out, size_t outsz);

#endif
