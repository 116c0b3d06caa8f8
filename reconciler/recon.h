/* The reconciler's run: claimed intents go through the step machine of docs/design.md
 * (Provisioning), teardown intents destroy their sandbox. */
#ifndef TERRARIUM_RECON_H
#define TERRARIUM_RECON_H

#include "../common/config.h"
#include "../db/db.h"
#include "../db/intents.h"
#include "../sandbox/backend.h"

#define RECON_OWNER_MAX 128
#define RECON_STEPS_MAX 16

#define RECON_ENV_MAX 48
#define RECON_ENV_ENTRY_MAX 4200

/* The environment of a sandbox's commands (installs and --exec). */
struct recon_env {
	char entry[RECON_ENV_MAX][RECON_ENV_ENTRY_MAX];
	char *envp[RECON_ENV_MAX + 1];
	int n;
};

/* Fill E for commands in the sandbox workspace WORKDIR (as the sandbox sees it): PATH with the
 * package managers' bin directories first, NODE_PATH, PYTHONPATH and GEM_PATH into the
 * workspace, the CA bundle variables ([sandbox] ca_bundle), then the variables named by
 * [sandbox] pass_env and pass_env_extra that the reconciler has; nothing else is inherited. */
void recon_env(const struct config *cfg, const char *workdir, struct recon_env *e);

/* A session's bound sandbox, as commands in it run (--exec, the runner's tools): its id, the
 * working directory, the environment its installs had (recon_env), and the network its policy
 * allows. */
struct recon_bound {
	char id[SBX_ID_MAX];
	char workdir[CONFIG_STR_MAX * 2];
	int share_net;	/* the policy is unrestricted */
	json_t *egress; /* the bound allowlist, for a backend that takes it per command (srt) */
	struct recon_env env;
};

/* SESSION_ID's binding (while it is not deleted) into B. 1 bound (release B with
 * recon_bound_release), 0 none (not provisioned yet, or deleted), -1 with ERR set (the database,
 * a bound policy that does not parse). */
int recon_bound(const struct config *cfg, struct db *db, struct sbx *sbx, const char *session_id,
		struct recon_bound *b, char *err, size_t errsz);

/* EX's environment, network and allowlist for a command in B's sandbox (borrowed from B). */
void recon_bound_exec(struct recon_bound *b, struct sbx_exec *ex);

void recon_bound_release(struct recon_bound *b);

/* Started as root (else nothing happens): SBX's sandbox root (made as root) becomes the
 * [reconciler] user's, then root is given up for good for that user, keeping the group of the
 * backend's socket (the Engine's, root:docker 0660) when it has one; what the reconciler and the
 * runner do before anything reads what a sandbox wrote. WHO names the program in messages. 0, or
 * -1 (logged): the user is unknown or root, or the switch failed. */
int recon_leave_root(const struct config *cfg, struct sbx *sbx, const char *who);

/* Replace every occurrence of the host path PATH in TEXT (a buffer of SIZE bytes) by SHOWN,
 * whatever their lengths (what no longer fits is cut). Only a whole path counts: "/srv/sb" is
 * not replaced in "/srv/sbx" nor in "/x/srv/sb"; a trailing '/' of PATH is ignored. */
void recon_scrub(char *text, size_t size, const char *path, const char *shown);

struct step_stat {
	const char *step;
	double seconds;
	long count;
};

struct recon_stats {
	long claimed, done, failed, lost, teardowns, orphans;
	struct step_stat steps[RECON_STEPS_MAX];
	int nsteps;
};

struct recon {
	const struct config *cfg;
	struct db *db;
	struct sbx sbx;
	char owner[RECON_OWNER_MAX]; /* lease owner: host:pid:random */
	struct recon_stats stats;
	struct recon_stats stats_written; /* what the metrics file has already counted */
	int metrics_fd, metrics_lock_fd; /* --metrics-file and its lock, opened before leave_root */
};

/* Replace in TEXT (SIZE bytes) every host path R knows of: the sandbox root ("<sandboxes>"),
 * the configuration's directory, /root and /home, the run directory (the database socket's),
 * srt_dir, the HTTP backend's socket and key file ("<host>"). last_error goes
 * through it before API clients read it. */
void recon_hide_host_paths(const struct recon *r, char *text, size_t size);

enum recon_outcome { RECON_DONE, RECON_FAILED, RECON_LOST, RECON_DB_ERROR };

/* Carry out one claimed intent to its end (bound, failed with backoff, torn down) or until the
 * lease is found lost. */
enum recon_outcome recon_process(struct recon *r, struct intent *in);

/* The package cache (cache.c). A key is 64 hex digits. */
#define RECON_CACHE_KEY_LEN 64

/* Does this deployment cache provisioned sandboxes (cache_max_age_days > 0 and the backend
 * has cache operations)? */
int recon_cache_enabled(const struct recon *r);

/* The cache key of ENVIRONMENT_ID's captured PACKAGES on this backend and base. 0 or -1. */
int recon_cache_key(const struct recon *r, const char *environment_id, json_t *packages,
		    char key[RECON_CACHE_KEY_LEN + 1]);

/* Record a use (or the creation) of entry KEY; a database error is logged, not fatal. */
void recon_cache_used(struct recon *r, const char *key, const char *environment_id);

/* Remove entries unused for cache_max_age_days and those of deleted environments (a bounded
 * batch per call). */
void recon_cache_prune(struct recon *r);

/* Drift: a bound sandbox that no longer exists. recon_drift_check looks at up to MAX bindings
 * (checked longest ago first) and has each missing one provisioned again; returns how many
 * were. recon_drift_found does that for one session whose sandbox SANDBOX_ID was found gone. */
int recon_drift_check(struct recon *r, int max);
int recon_drift_found(struct recon *r, const char *session_id, const char *sandbox_id);

/* Next attempt delay in seconds after ATTEMPTS failed attempts: min(cap, base * 2^(n-1)),
 * +/- 20% jitter drawn from JITTER (0..1). */
long recon_backoff(const struct config *cfg, long long attempts, double jitter);

#endif
