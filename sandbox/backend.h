/* The sandbox library (docs/design.md, Backends): the one call every binary makes into a
 * sandbox, whatever its backend: create or attach by a deterministic name (sbx_create), run argv
 * with a time limit and, where the backend can, bytes on its stdin (sbx_run), set the egress
 * allowlist where supported, destroy (a missing sandbox counts as destroyed), and the package
 * cache and listing calls; then the driver interface behind it (struct sandbox_backend).
 *
 * Sharing. sbx_open fills a struct sbx once; from then on it is read-only: every input of a call
 * is its parameter (struct sbx_spec for a create, struct sbx_exec for a run, a watch for the
 * others), never a field set around the call. The calls (sbx_create ... sbx_check) may run at
 * once from several threads on one opened struct sbx, each with its own spec, exec and watch:
 * the HTTP drivers take a libcurl handle per call (the client's own when it is free, else one of
 * the call's) and ask the watch of the call running on their thread; opensandbox's endpoint
 * cache, srt's allowlists and temporary directory and bwrap's overlay probe are locked. Setting
 * s->deployment, sbx_open and sbx_close are not calls: they come before and after any.
 * A bwrap command is tied to the thread that started it (PR_SET_PDEATHSIG: a thread waits in
 * sbx_run while its command runs), from its first instant: nothing of it outlives that thread.
 * local and srt commands end at their time limit or stop, not with their caller. */
#ifndef TERRARIUM_SANDBOX_BACKEND_H
#define TERRARIUM_SANDBOX_BACKEND_H

#include <jansson.h>
#include <limits.h>
#include <stddef.h>

#include "../common/backend.h"
#include "../common/config.h"
#include "process.h"

#define SBX_ID_MAX 256
#define SBX_ERR_MAX 512
#define SBX_MASKS_MAX 8
#define SBX_DEPLOYMENT_MAX 64	  /* s->deployment: 32 hex digits and the NUL, with room */
#define SBX_STDIN_MAX (16u << 20) /* bytes sbx_exec.stdin_data may hold */
/* The host trees a sandbox of bwrap or srt may read: what toolchains need, and nothing the
 * service writes (its logs, state and run directories live under /var, /run, /srv or a checkout
 * elsewhere; its configuration directory is hidden on its own, s->masks). bwrap builds its view
 * from them; srt denies every other entry of /. */
#define SBX_VIEW_ROOTS                                                                             \
	{                                                                                          \
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"     \
	}

/* One sandbox ops->list found: its id (what destroy takes) and the name it was created with
 * (the session id, from its label or metadata; "" when it carries none). */
struct sbx_listed {
	char id[SBX_ID_MAX];
	char name[SBX_ID_MAX];
};

struct sandbox_backend;

/* A backend bound to a deployment's configuration: what sbx_open found, fixed from then on. */
struct sbx {
	const struct sandbox_backend *ops;
	const struct backend_caps *caps;
	const struct config *cfg;
	char root[CONFIG_STR_MAX]; /* absolute sandbox root (local, bwrap) */
	/* host paths hidden inside bwrap and srt, and from last_error (every backend) */
	char masks[SBX_MASKS_MAX][CONFIG_STR_MAX];
	int nmasks;
	const struct remote_conf *remote; /* the driver's [section] (HTTP backends), borrowed */
	/* Set by the caller once, after sbx_open and before any call: this deployment's identity
	 * (the database's "deployment" id, db/keys.h). Backends whose sandboxes live on a service
	 * that others may share (docker, the HTTP backends) label every sandbox they create with
	 * it, and list returns only sandboxes carrying it: two stacks on one Engine or account
	 * never see each other's. Directory backends ignore it (their sandbox root is the
	 * deployment's own). */
	char deployment[SBX_DEPLOYMENT_MAX];
	/* Set by the driver's open: a unix socket the reconciler must keep reaching after it gave
	 * up root (docker: the Engine's); its group is kept as a supplementary group. "" none. */
	char control_socket[CONFIG_STR_MAX];
	void *priv; /* the driver's state (HTTP client...), owned by it */
};

/* What sbx_create makes, or finds made by an earlier attempt. Borrowed by the call. */
struct sbx_spec {
	const char *name; /* the deterministic name (a session id): what attach finds it by */
	/* The network a NEW sandbox starts with. 1: the policy is unrestricted (docker: the
	 * default bridge network; opensandbox: no network policy). 0: none (docker: NetworkMode
	 * "none"), or, for a backend with set_egress, deny-all until set_egress opens hosts. An
	 * attached sandbox keeps what it was created with. local and bwrap ignore it (each run's
	 * share_net decides). */
	int share_net;
	/* The image or tree a NEW sandbox starts from instead of the configured base (a package
	 * cache entry's ref, from sbx_cache_lookup), or NULL. */
	const char *from;
	/* The environment every command in it gets (NULL-terminated), or NULL; docker makes it
	 * the container's, so that every later command sees the same. */
	char *const *env;
	/* 1 when no command runs in the new sandbox before the caller binds it and calls
	 * sbx_start: a backend with a start operation may leave the rest of its start-up to that
	 * call (docker starts the container there). */
	int defer_start;
	/* Asked while the create's service calls run (pulls and polls included); a non-zero
	 * answer aborts the call and fails the create. NULL: none. */
	const struct proc_watch *watch;
};

/* One command sbx_run runs. Borrowed by the call. */
struct sbx_exec {
	char *const *argv; /* never through a shell */
	char *const *envp; /* its whole environment (NULL-terminated) */
	/* 1 runs it as the sandbox's root (apt needs it), 0 as its unprivileged user where the
	 * backend has one (docker) */
	int as_root;
	/* the host's network (unrestricted policy; bwrap: outbound through user-mode networking,
	 * never the host's loopback), else none unless the backend enforces a list */
	int share_net;
	long timeout_s;	   /* then the whole process tree is killed: res->timed_out */
	size_t output_max; /* bytes of output kept (the tail); 0: [sandbox] output_max */
	/* Asked about every watch->interval_ms while the command runs (and during an HTTP
	 * driver's calls); a non-zero answer stops it at once (a process tree: killed; docker:
	 * its exec's processes killed; e2b: SIGKILL through envd; opensandbox: execd's interrupt;
	 * daytona: the call aborted): res->stopped. NULL: none. */
	const struct proc_watch *watch;
	/* STDIN_LEN bytes the command reads on its stdin (at most SBX_STDIN_MAX), then end of
	 * file; NULL: it reads /dev/null. Only backends with stdin (local, bwrap, srt: the
	 * process backends) take them; the others refuse such a run. */
	const char *stdin_data;
	size_t stdin_len;
	/* For a backend that gives every command its allowlist (egress_per_command: srt): the
	 * hosts this command may reach (a JSON array, borrowed; share_net 0). NULL: the list
	 * sbx_set_egress last gave this sandbox. */
	json_t *egress;
};

/* Bind the backend named by CFG (the drivers table in open.c). 0, or -1 with ERR set when the
 * backend has no driver in this build, its root cannot be prepared (local, bwrap) or its driver's
 * open failed (HTTP backends: no [section], url, image or readable api_key_file). CONFIG_FILE is
 * the configuration file's path (hidden from bwrap sandboxes with its directory). Call sbx_close
 * when done. */
int sbx_open(struct sbx *s, const struct config *cfg, const char *config_file, char *err,
	     size_t errsz);

/* Started as root, a program that works on S's sandboxes (the reconciler, the runner: WHO in
 * messages) gives up root for good for USER ([reconciler] user): the sandbox root becomes
 * USER's (sbx_dir_own), and the group of S's control socket (the Docker Engine's, root:docker
 * 0660) is kept as USER's only supplementary group, so that the Engine stays reachable. Not
 * root: nothing to do. 0, or -1 (logged) when the program must not go on. */
int sbx_leave_root(struct sbx *s, const char *user, const char *who);

/* Release what sbx_open prepared (the driver's state); safe to call twice. */
void sbx_close(struct sbx *s);

/* The calls (call.c). Each runs the backend's operation with its inputs; an operation the
 * backend does not have fails (-1, ERR naming the backend and what it cannot do) unless said
 * otherwise. WATCH (may be NULL) is asked while the HTTP drivers' service calls run, as
 * sbx_exec.watch is: a non-zero answer aborts the call. */

/* Create the sandbox SPEC->name, or attach to it when it exists; its id goes to ID. 0 or -1. */
int sbx_create(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
	       size_t errsz);
/* Run EX in sandbox ID. 0 when it ran (RES: exit status or 128 + signal, timed_out or stopped,
 * the tail of its output with stdout and stderr together), -1 when it could not be started
 * (RES->output says why; stdin given to a backend without it: "cannot pass stdin", errno
 * ENOTSUP; more than SBX_STDIN_MAX bytes of it: errno E2BIG). RES is filled either way: release
 * it with proc_result_release. */
int sbx_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res);
/* Set sandbox ID's egress allowlist to HOSTS (a JSON array of hosts, borrowed). 0 or -1. */
int sbx_set_egress(struct sbx *s, const char *id, json_t *hosts, const struct proc_watch *watch,
		   char *err, size_t errsz);
/* Destroy sandbox ID (or the sandbox created under the name ID when no id was recorded); one
 * that does not exist counts as destroyed. 0 or -1. */
int sbx_destroy(struct sbx *s, const char *id, const struct proc_watch *watch, char *err,
		size_t errsz);
/* Finish starting sandbox ID, created with defer_start (one already running counts as
 * started); a backend without a start operation has nothing to finish: 0. 0, or -1 with ERR
 * set: its first command starts it then. */
int sbx_start(struct sbx *s, const char *id, const struct proc_watch *watch, char *err,
	      size_t errsz);
/* Does sandbox ID still exist? 1 yes, 0 no (removed behind our back), -1 with ERR when it
 * cannot tell (or the backend cannot say: no exists operation). */
int sbx_exists(struct sbx *s, const char *id, const struct proc_watch *watch, char *err,
	       size_t errsz);
/* The sandboxes of this deployment that exist now, at most MAX into OUT, their number into
 * *N. 0, or -1 with ERR set (nothing is listed). */
int sbx_list(struct sbx *s, struct sbx_listed *out, int max, int *n, const struct proc_watch *watch,
	     char *err, size_t errsz);
/* The package cache (contracts at struct sandbox_backend): lookup 1 present (REF filled), 0
 * absent, -1 error; store 0 or -1; remove 0 removed or absent, 1 kept (in use), -1 error. */
int sbx_cache_lookup(struct sbx *s, const char *key, char *ref, size_t refsz,
		     const struct proc_watch *watch, char *err, size_t errsz);
int sbx_cache_store(struct sbx *s, const char *id, const char *key, const struct proc_watch *watch,
		    char *err, size_t errsz);
int sbx_cache_remove(struct sbx *s, const char *key, const struct proc_watch *watch, char *err,
		     size_t errsz);
/* The working directory of commands inside sandbox ID, as they see it, into OUT. */
void sbx_workdir(struct sbx *s, const char *id, char *out, size_t outsz);
/* --check: run a command through the backend as sandboxes would; a backend without a
 * self-test passes. 0, or -1 with ERR set. */
int sbx_check(struct sbx *s, char *err, size_t errsz);

/* ---- the driver interface ---- */

/* The operations' types: one a signature, so that a driver's functions are declared in one
 * line each (below) and the table in open.c binds them. */
typedef int sbx_setup_fn(struct sbx *s, char *err, size_t errsz);
typedef void sbx_release_fn(struct sbx *s);
typedef int sbx_create_fn(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz,
			  char *err, size_t errsz);
typedef void sbx_workdir_fn(struct sbx *s, const char *id, char *out, size_t outsz);
typedef int sbx_run_fn(struct sbx *s, const char *id, const struct sbx_exec *ex,
		       struct proc_result *res);
typedef int sbx_egress_fn(struct sbx *s, const char *id, json_t *hosts, char *err, size_t errsz);
/* ID: a sandbox id (destroy, start, exists) or a package cache key (cache_remove) */
typedef int sbx_target_fn(struct sbx *s, const char *id, char *err, size_t errsz);
typedef int sbx_list_fn(struct sbx *s, struct sbx_listed *out, int max, int *n, char *err,
			size_t errsz);
typedef int sbx_cache_lookup_fn(struct sbx *s, const char *key, char *ref, size_t refsz, char *err,
				size_t errsz);
typedef int sbx_cache_store_fn(struct sbx *s, const char *id, const char *key, char *err,
			       size_t errsz);

struct sandbox_backend {
	const char *name;
	/* Optional: prepare the driver's state in s->priv (HTTP client, credential) once per
	 * sbx_open; s->cfg and s->remote are set. 0, or -1 with ERR set. */
	sbx_setup_fn *open;
	/* Optional, directory backends (local, bwrap): prepare s->priv once the sandbox root and
	 * the hidden paths (s->masks) are known. 0, or -1 with ERR set. */
	sbx_setup_fn *prepare;
	/* Optional: release s->priv (called by sbx_close). */
	sbx_release_fn *close;
	/* Create the sandbox SPEC->name, or attach to it when it exists; its id goes to ID. 0 or
	 * -1. */
	sbx_create_fn *create;
	/* The working directory of commands inside sandbox ID, as they see it (into OUT). */
	sbx_workdir_fn *workdir;
	/* Run EX inside sandbox ID (struct sbx_exec; sbx_run has filled in output_max and
	 * checked stdin against has_stdin). */
	sbx_run_fn *run;
	/* Set the egress allowlist (a JSON array of hosts); NULL when unsupported. */
	sbx_egress_fn *set_egress;
	/* Destroy sandbox ID; one that does not exist counts as destroyed. 0 or -1. */
	sbx_target_fn *destroy;
	/* Optional: finish starting sandbox ID, created with defer_start (docker: start
	 * the container; one already running counts as started). 0, or -1 with ERR set: its first
	 * command starts it then. */
	sbx_target_fn *start;
	/* Optional: does sandbox ID still exist? 1 yes, 0 no (removed behind our back), -1 with
	 * ERR when it cannot tell. NULL: the backend cannot say (no drift checks). */
	sbx_target_fn *exists;
	/* Optional: the sandboxes of this deployment that exist now (directory backends: the
	 * directories under s->root; the others: those created with s->deployment, found through
	 * the service's list call with its label or metadata filter), at most MAX into OUT, their
	 * number into *N. Sandboxes being removed may be listed. 0, or -1 with ERR set (nothing is
	 * listed). NULL: the backend cannot list (no sweep of sandboxes without a session). */
	sbx_list_fn *list;
	/* Optional package cache (reconciler/cache.c). cache_lookup: the ref of entry KEY (64 hex
	 * digits) into REF, for sbx_spec.from; 1 present, 0 absent, -1 error. cache_store: make
	 * sandbox ID's state entry KEY, replacing any entry of that key as one atomic step (two
	 * reconcilers storing one key leave one whole entry); 0 or -1. cache_remove: remove entry
	 * KEY; 0 removed or absent, 1 kept because a sandbox still uses it, -1 error. */
	sbx_cache_lookup_fn *cache_lookup;
	sbx_cache_store_fn *cache_store;
	sbx_target_fn *cache_remove;
	/* Optional, for --check: run a command through the backend as sandboxes would. 0, or -1
	 * with ERR set. */
	sbx_setup_fn *check;
	/* 1 when the allowlist goes with each command (srt wraps every command with one): a run
	 * takes sbx_exec.egress, else the list set_egress last gave the sandbox in this process. */
	int egress_per_command;
	/* 1 when run passes sbx_exec.stdin_data to the command (the process backends). */
	int has_stdin;
};

/* For ops->list of the backends that label sandboxes with s->deployment (open.c). Start: *N = 0;
 * -1 with ERR set when there is no deployment id to list by. Add: sandbox ID (created as NAME;
 * NULL when it carries no name) goes to OUT[*N] when its deployment label DEPLOYMENT is
 * s->deployment (a service that ignores the list's filter must not hand us another deployment's
 * sandbox), ID is not NULL and fits, and *N < MAX. */
int sbx_list_start(struct sbx *s, int *n, char *err, size_t errsz);
void sbx_list_add(struct sbx *s, struct sbx_listed *out, int max, int *n, const char *id,
		  const char *name, const char *deployment);

/* The driver of backend NAME (the table in open.c), or NULL when this build has none. */
const struct sandbox_backend *sbx_driver(const char *name);

/* The drivers' own operations, bound to their backends' names by the table in open.c (each
 * file's, with the contract of its member of struct sandbox_backend). e2b.c serves both e2b and
 * cube (the E2B protocol at [cube]); srt.c is sandbox-runtime (bwrap + proxies). */
sbx_setup_fn bwrap_prepare, srt_prepare, srt_check;
sbx_setup_fn docker_open, osb_open, e2b_open, daytona_open;
sbx_release_fn bwrap_close, srt_close;
sbx_create_fn bwrap_create, docker_create, osb_create, e2b_create, daytona_create;
sbx_workdir_fn e2b_workdir, daytona_workdir;
sbx_run_fn local_run, bwrap_run, srt_run, docker_run, osb_run, e2b_run, daytona_run;
sbx_egress_fn srt_set_egress, osb_set_egress;
sbx_target_fn docker_destroy, osb_destroy, e2b_destroy, daytona_destroy;
sbx_target_fn docker_start, docker_exists, docker_cache_remove;
sbx_list_fn docker_list, osb_list, e2b_list, daytona_list;
sbx_cache_lookup_fn docker_cache_lookup;
sbx_cache_store_fn docker_cache_store;

/* The working directory of backends whose sandboxes see their workspace at SBX_WORKSPACE
 * (bwrap, docker, opensandbox): ops->workdir. */
#define SBX_WORKSPACE "/workspace"
void sbx_workspace_workdir(struct sbx *s, const char *id, char *out, size_t outsz);
/* The common part of the HTTP drivers' ops->open (http.c): their state, SIZE bytes zeroed whose
 * first member is its struct http_client, becomes s->priv with the client bound to RC (the
 * driver's [section], as the driver completed it) under the backend's name, sending the
 * credential as "AUTH_NAME: AUTH_PREFIXkey" (AUTH_NAME NULL: none). The state, or NULL with ERR
 * set. */
void *sbx_http_open(struct sbx *s, const struct remote_conf *rc, size_t size, const char *auth_name,
		    const char *auth_prefix, char *err, size_t errsz);
/* ops->close of the HTTP drivers (http.c): s->priv is their state, whose first member is its
 * struct http_client: released, then the state freed. */
void sbx_http_close(struct sbx *s);

/* Shared by local, bwrap and srt: sandbox directories under s->root. sbx_dir_create makes (or
 * finds) the directory NAME; sbx_dir_make is ops->create of local and srt: the directory
 * SPEC->name (the rest of a spec concerns commands, which those backends start themselves). */
int sbx_dir_create(struct sbx *s, const char *name, char *id, size_t idsz, char *err, size_t errsz);
sbx_create_fn sbx_dir_make;
int sbx_dir_destroy(struct sbx *s, const char *id, char *err, size_t errsz);
/* ops->list of local, bwrap and srt: the directories under s->root whose name does not start
 * with '.' (the package cache and bwrap's records do), id and name both the directory's. */
int sbx_dir_list(struct sbx *s, struct sbx_listed *out, int max, int *n, char *err, size_t errsz);
/* Give the sandbox root and every workspace in it that someone else owns (made by root before
 * the reconciler gave up root) to UID:GID. Called as root. 0, or -1 when part failed. */
int sbx_dir_own(struct sbx *s, unsigned uid, unsigned gid);
/* s->root + "/" + ID into OUT; -1 when ID is not a plain name. */
int sbx_dir_path(struct sbx *s, const char *id, char *out, size_t outsz);
/* bwrap's sandboxes (dir.c): each has a record ROOT/.layers/ID beside its directory, made first,
 * so that a directory gone while its record stays is drift. With FROM (a package cache entry's
 * directory; NULL: none) the new sandbox NAME is LAYERED (1: the entry is the read-only lower layer
 * of an overlay whose upper layer is the sandbox's directory, mounted by the backend for each
 * command) or a copy of the entry (0). An existing sandbox is attached when it is what this create
 * would make, else replaced (an attempt that recorded nothing left it). */
int sbx_dir_create_from(struct sbx *s, const char *name, const char *from, int layered, char *id,
			size_t idsz, char *err, size_t errsz);
/* The layers of sandbox ID. */
struct sbx_layer {
	char lower[PATH_MAX], upper[PATH_MAX], work[PATH_MAX], mnt[PATH_MAX];
};
/* 1 when ID is layered (L filled), 0 when it is a plain directory, -1 with ERR when its lower
 * layer is gone. */
int sbx_dir_layer(struct sbx *s, const char *id, struct sbx_layer *l, char *err, size_t errsz);
/* ops->exists of bwrap: 0 when the record of ID is there but its directory (or lower layer) is
 * not; 1 when it is whole, or has no record under this root (another configuration's, or made
 * before records existed: not this reconciler's to judge). */
int sbx_dir_exists(struct sbx *s, const char *id, char *err, size_t errsz);
/* Package cache of directory backends: entries ROOT/.cache/KEY (an entry still the lower layer
 * of a sandbox is kept: cache_remove answers 1). */
int sbx_dir_cache_lookup(struct sbx *s, const char *key, char *ref, size_t refsz, char *err,
			 size_t errsz);
int sbx_dir_cache_store(struct sbx *s, const char *id, const char *key, char *err, size_t errsz);
int sbx_dir_cache_remove(struct sbx *s, const char *key, char *err, size_t errsz);
/* The workspace of sandbox ID as its commands see it (its directory; s->root when ID is not a
 * plain name). */
void sbx_dir_workdir(struct sbx *s, const char *id, char *out, size_t outsz);
/* Remove PATH and everything below it, making read-only directories writable first, never
 * following a symlink or crossing a mount; a missing PATH counts as removed. 0, or -1 with
 * ERR set. */
int sbx_rmtree(const char *path, char *err, size_t errsz);

#endif
