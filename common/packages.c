/* The package-manager table (contract in packages.h). */
#include "packages.h"

#include <stdio.h>
#include <string.h>

static const char *const apt_install[] = { "apt-get", "install", "-y", "--no-install-recommends",
					   NULL };
static const char *const apt_update[] = { "apt-get", "update", NULL };
static const char *const apt_registry[] = { "deb.debian.org",
					    "security.debian.org",
					    "archive.ubuntu.com",
					    "security.ubuntu.com",
					    "ports.ubuntu.com",
					    "snapshot.debian.org",
					    NULL };
static const char *const cargo_install[] = { "cargo", "install", "--root", PKG_PREFIX_ARG, NULL };
static const char *const cargo_registry[] = { "crates.io", "index.crates.io", "static.crates.io",
					      NULL };
static const char *const gem_install[] = { "gem",	    "install",	    "--no-document",
					   "--install-dir", PKG_PREFIX_ARG, NULL };
static const char *const gem_registry[] = { "rubygems.org", "index.rubygems.org",
					    "api.rubygems.org", NULL };
static const char *const go_install[] = { "go", "install", NULL };
static const char *const go_registry[] = { "proxy.golang.org", "sum.golang.org",
					   "storage.googleapis.com", NULL };
static const char *const npm_install[] = { "npm",      "install",      "--no-audit", "--no-fund",
					   "--prefix", PKG_PREFIX_ARG, NULL };
static const char *const npm_registry[] = { "registry.npmjs.org", NULL };
static const char *const pip_install[] = { "pip",      "install",      "--no-input",
					   "--target", PKG_PREFIX_ARG, NULL };
static const char *const pip_registry[] = { "pypi.org", "files.pythonhosted.org", NULL };

/* One row a manager, in installation order; the registries together are the 18 canonical hosts
 * in the order the product documentation lists them (seed 000). */
const struct pkg_manager pkg_managers[] = {
	{ .name = "apt",
	  .install = apt_install,
	  .update = apt_update,
	  .update_step = "apt_update",
	  .as_root = true,
	  .registry = apt_registry },
	{ .name = "cargo",
	  .install = cargo_install,
	  .prefix = ".cargo",
	  .registry = cargo_registry },
	{ .name = "gem", .install = gem_install, .prefix = ".gem", .registry = gem_registry },
	{ .name = "go", .install = go_install, .registry = go_registry },
	{ .name = "npm", .install = npm_install, .prefix = "", .registry = npm_registry },
	{ .name = "pip", .install = pip_install, .prefix = ".pip", .registry = pip_registry },
};
_Static_assert(sizeof(pkg_managers) / sizeof(pkg_managers[0]) == PKG_MANAGER_COUNT,
	       "PKG_MANAGER_COUNT counts the rows of pkg_managers");

const struct pkg_manager *pkg_find(const char *name)
{
	for (size_t i = 0; i < PKG_MANAGER_COUNT; i++)
		if (!strcmp(pkg_managers[i].name, name))
			return &pkg_managers[i];
	return NULL;
}

static int is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* 1 when S holds "scheme://" followed by an authority carrying userinfo ('@' before the first
 * '/', '?', '#' or blank). Every "://" is examined: pip accepts "name @ https://...". */
static int url_has_credentials(const char *s)
{
	for (const char *p = strstr(s, "://"); p; p = strstr(p + 3, "://")) {
		for (const char *q = p + 3; *q && !strchr("/?#", *q) && !is_blank(*q); q++)
			if (*q == '@')
				return 1;
	}
	return 0;
}

const char *pkg_spec_problem(const char *spec, size_t len)
{
	int blank = 1;

	for (size_t i = 0; i < len; i++)
		if (!is_blank((unsigned char)spec[i]))
			blank = 0;
	if (blank)
		return "must not be empty or blank";
	if (spec[0] == '-')
		return "must not start with '-'";
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)spec[i] < 0x20 || (unsigned char)spec[i] == 0x7f)
			return "must not contain control characters";
	if (url_has_credentials(spec))
		return "must not contain a URL with credentials";
	return NULL;
}

int pkg_install_argv(const struct pkg_manager *m, json_t *specs, const char *workdir,
		     const char **argv, int max, char *prefix, size_t prefixsz)
{
	json_t *spec;
	size_t i;
	int n = 0;

	if (!m)
		return -1;
	if (m->prefix) {
		int k = snprintf(prefix, prefixsz, "%s%s%s", workdir, m->prefix[0] ? "/" : "",
				 m->prefix);
		/* cut, it would name a path outside the workspace */
		if (k < 0 || (size_t)k >= prefixsz)
			return -1;
	}
	for (const char *const *a = m->install; *a; a++) {
		if (n >= max - 1)
			return -1;
		argv[n++] = strcmp(*a, PKG_PREFIX_ARG) ? *a : prefix;
	}
	/* specs were validated at admission (pkg_spec_problem): each is one argument */
	json_array_foreach (specs, i, spec) {
		if (n >= max - 1)
			return -1;
		argv[n++] = json_string_value(spec);
	}
	argv[n] = NULL;
	return n;
}
