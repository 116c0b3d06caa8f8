/* The package managers an environment may list (docs/api.md §3, config.packages), one table row
 * each in installation order (docs/design.md, Provisioning step 4): apt, cargo, gem, go, npm,
 * pip. Every user reads the table: the API's validation and the normalised config's key order
 * (handlers/env_validate.c), the reconciler's installs and its resume steps
 * (reconciler/provision.c), the package cache key (reconciler/cache.c) and the canonical registry
 * hosts of the egress policy (common/egress.c). */
#ifndef TERRARIUM_PACKAGES_H
#define TERRARIUM_PACKAGES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define PKG_MANAGER_COUNT 6 /* rows of pkg_managers (checked against the table when compiled) */
#define PKG_MAX_ENTRIES 256 /* package specs per manager */
#define PKG_ENTRY_MAX 512   /* bytes of one package spec */
/* an element of pkg_manager.install replaced by the manager's install prefix (its path) */
#define PKG_PREFIX_ARG "{prefix}"

struct pkg_manager {
	const char *name; /* its key in config.packages and its step in an intent's steps_done */
	/* the install command before the package specs, NULL-terminated: argv[0] is the program
	 * that must exist in the sandbox; PKG_PREFIX_ARG stands for the install prefix */
	const char *const *install;
	/* where the packages go, under the sandbox's workspace: "" the workspace itself, ".pip" a
	 * directory in it; NULL: the manager's own place (the image's) */
	const char *prefix;
	/* run once before the first install of a provisioning (apt: the package lists, which
	 * images ship without), NULL-terminated; NULL: none. UPDATE_STEP names it in the
	 * reconciler's step timings ("apt_update"); its errors say "<name> update". */
	const char *const *update;
	const char *update_step;
	bool as_root; /* installs run as the sandbox's root (a backend needs caps.apt for it) */
	/* the hosts its installs fetch from, NULL-terminated: the canonical registry hosts
	 * (egress_policy) are every row's, in the table's order */
	const char *const *registry;
};

/* The table, in installation order (which is also the order of the package lists in a
 * normalised config and in a package cache key). */
extern const struct pkg_manager pkg_managers[PKG_MANAGER_COUNT];

/* The row of manager NAME, or NULL when there is none. */
const struct pkg_manager *pkg_find(const char *name);

/* Why the package spec SPEC (LEN bytes of valid UTF-8, at most PKG_ENTRY_MAX) is refused, as a
 * message tail ("must not start with '-'"), or NULL when it is acceptable; the same rules for
 * every manager: not blank, no leading '-' (it would be an option), no control characters, no
 * URL with credentials. The tails never quote the spec: it may hold a token. */
const char *pkg_spec_problem(const char *spec, size_t len);

/* The install argv of M for SPECS (a JSON array of strings, validated at admission) into the
 * sandbox workspace WORKDIR: a NULL-terminated array in ARGV (at most MAX entries, pointers into
 * SPECS, the table and PREFIX, a buffer M's install prefix is written to). Each spec is one
 * argument, never seen by a shell. Returns the count, or -1 when M is NULL or it does not fit. */
int pkg_install_argv(const struct pkg_manager *m, json_t *specs, const char *workdir,
		     const char **argv, int max, char *prefix, size_t prefixsz);

#endif
