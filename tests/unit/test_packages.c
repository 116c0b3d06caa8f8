/* Unit tests of the package-manager table (common/packages.c): each manager's install argv
 * (every package one argument, prefixes inside the workspace, what does not fit refused), the
 * rules of a package spec, the canonical registry hosts in seed order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "../../common/packages.h"
#include "unit.h"

/* snprintf that must fit */
#define FMT(buf, ...) assert_true(snprintf((buf), sizeof(buf), __VA_ARGS__) < (int)sizeof(buf))

/* ---------------------------------------------------------------- install argv */

#define UT_WORKDIR "/srv/sandboxes/sesn_01ABC"

struct argv_case {
	const char *manager;
	const char *expect[12]; /* before the packages */
	const char *prefix;	/* expected prefix buffer content, NULL: not used */
};

static void test_install_argv_per_manager(void **state)
{
	static const struct argv_case cases[] = {
		{ "apt", { "apt-get", "install", "-y", "--no-install-recommends" }, NULL },
		{ "cargo",
		  { "cargo", "install", "--root", UT_WORKDIR "/.cargo" },
		  UT_WORKDIR "/.cargo" },
		{ "gem",
		  { "gem", "install", "--no-document", "--install-dir", UT_WORKDIR "/.gem" },
		  UT_WORKDIR "/.gem" },
		{ "go", { "go", "install" }, NULL },
		{ "npm",
		  { "npm", "install", "--no-audit", "--no-fund", "--prefix", UT_WORKDIR },
		  NULL },
		{ "pip",
		  { "pip", "install", "--no-input", "--target", UT_WORKDIR "/.pip" },
		  UT_WORKDIR "/.pip" },
	};
	/* odd-looking entries stay single arguments: no shell, no splitting */
	json_t *pkgs = json_loads("[\"a==1.0\", \"b c\", \"$(touch x)\", \"golang.org/x/y@v1\", "
				  "\"\\u00e9;rm -rf /\"]",
				  0, NULL);
	(void)state;
	assert_non_null(pkgs);
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *argv[32];
		char prefix[256] = "";
		int nfixed = 0, n, i;

		while (cases[c].expect[nfixed])
			nfixed++;
		for (i = 0; i < 32; i++)
			argv[i] = "unset";
		n = pkg_install_argv(pkg_find(cases[c].manager), pkgs, UT_WORKDIR, argv, 32, prefix,
				     sizeof(prefix));
		assert_int_equal(n, nfixed + (int)json_array_size(pkgs));
		for (i = 0; i < nfixed; i++)
			if (strcmp(argv[i], cases[c].expect[i]))
				fail_msg("%s: argv[%d] = \"%s\", expected \"%s\"", cases[c].manager,
					 i, argv[i], cases[c].expect[i]);
		/* each package: one argument, the very string of the array */
		for (i = 0; i < (int)json_array_size(pkgs); i++)
			assert_ptr_equal(argv[nfixed + i],
					 json_string_value(json_array_get(pkgs, i)));
		assert_null(argv[n]);
		if (cases[c].prefix) {
			assert_string_equal(prefix, cases[c].prefix);
			/* inside the workdir */
			assert_int_equal(strncmp(prefix, UT_WORKDIR "/", strlen(UT_WORKDIR) + 1),
					 0);
		}
		if (!strcmp(cases[c].manager, "npm"))
			assert_string_equal(argv[5], UT_WORKDIR);
	}
	json_decref(pkgs);
}

/* MANAGER's install command for PKGS in the workdir /w, into ARGV of ARGV_MAX entries: what
 * pkg_install_argv returns (the prefix it writes is not looked at). */
static int install_argc(const char *manager, json_t *pkgs, const char **argv, size_t argv_max)
{
	char prefix[64];

	return pkg_install_argv(pkg_find(manager), pkgs, "/w", argv, argv_max, prefix,
				sizeof(prefix));
}

static void test_install_argv_empty_list(void **state)
{
	json_t *none = json_array();
	const char *argv[8];
	(void)state;
	assert_int_equal(install_argc("apt", none, argv, 8), 4);
	assert_null(argv[4]);
	assert_int_equal(install_argc("go", none, argv, 8), 2);
	assert_string_equal(argv[0], "go");
	assert_null(argv[2]);
	json_decref(none);
}

static void test_install_argv_unknown_manager(void **state)
{
	static const char *const unknown[] = { "brew", "", "APT", "pip3" };
	json_t *pkgs = json_loads("[\"x\"]", 0, NULL);
	const char *argv[16];
	(void)state;
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		assert_int_equal(install_argc(unknown[i], pkgs, argv, 16), -1);
	json_decref(pkgs);
}

static void test_install_argv_overflow(void **state)
{
	/* MANAGER's command for two packages into an argv of ARGV_MAX entries returns WANT */
	static const struct {
		const char *manager;
		size_t argv_max;
		int want;
	} cases[] = {
		/* apt: 4 fixed + 2 packages + NULL = 7 entries */
		{ "apt", 6, -1 },
		{ "apt", 3, -1 },
		{ "apt", 1, -1 },
		{ "apt", 0, -1 },
		/* gem: 5 fixed + 2 + NULL = 8 */
		{ "gem", 8, 7 },
		{ "gem", 7, -1 },
		/* npm: 6 fixed + 2 + NULL = 9 */
		{ "npm", 9, 8 },
		{ "npm", 8, -1 },
	};
	json_t *pkgs = json_loads("[\"p1\", \"p2\"]", 0, NULL);
	const char *argv[16];
	(void)state;
	assert_int_equal(install_argc("apt", pkgs, argv, 7), 6);
	assert_null(argv[6]);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(install_argc(cases[i].manager, pkgs, argv, cases[i].argv_max),
				 cases[i].want);
	json_decref(pkgs);
}

/* 256 packages fit the reconciler's argv (reconciler/provision.c RECON_ARGV_MAX, 300), the most a
 * manager may list. */
static void test_install_argv_many_packages(void **state)
{
	json_t *pkgs = json_array();
	const char *argv[300];
	char name[16];
	(void)state;
	for (int i = 0; i < 256; i++) {
		FMT(name, "pkg%d", i);
		json_array_append_new(pkgs, json_string(name));
	}
	assert_int_equal(install_argc("npm", pkgs, argv, 300), 262);
	assert_string_equal(argv[261], "pkg255");
	assert_null(argv[262]);
	json_decref(pkgs);
}

/* A prefix that does not fit PREFIX is refused rather than cut to a path outside WORKDIR. */
static void test_regression_install_argv_prefix_cut(void **state)
{
	json_t *pkgs = json_loads("[\"x\"]", 0, NULL);
	const char *argv[16];
	char prefix[8];
	(void)state;
	assert_int_equal(pkg_install_argv(pkg_find("pip"), pkgs, "/srv/sbx/s1", argv, 16, prefix,
					  sizeof(prefix)),
			 -1);
	json_decref(pkgs);
}

/* The table in installation order, and the 18 canonical registry hosts of seed 000 in its order
 * (docs/design.md, Provisioning), as the managers' registries one after the other. */
static void test_table_order_and_registries(void **state)
{
	static const char *const order[] = { "apt", "cargo", "gem", "go", "npm", "pip" };
	static const char *const canonical[] = {
		"deb.debian.org",
		"security.debian.org",
		"archive.ubuntu.com",
		"security.ubuntu.com",
		"ports.ubuntu.com",
		"snapshot.debian.org",
		"crates.io",
		"index.crates.io",
		"static.crates.io",
		"rubygems.org",
		"index.rubygems.org",
		"api.rubygems.org",
		"proxy.golang.org",
		"sum.golang.org",
		"storage.googleapis.com",
		"registry.npmjs.org",
		"pypi.org",
		"files.pythonhosted.org",
	};
	size_t k = 0;
	(void)state;
	assert_int_equal(UNIT_LEN(order), PKG_MANAGER_COUNT);
	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++) {
		assert_string_equal(pkg_managers[m].name, order[m]);
		assert_ptr_equal(pkg_find(order[m]), &pkg_managers[m]);
		for (const char *const *h = pkg_managers[m].registry; *h; h++) {
			assert_true(k < UNIT_LEN(canonical));
			assert_string_equal(*h, canonical[k]);
			k++;
		}
	}
	assert_int_equal(k, UNIT_LEN(canonical));
	/* only apt runs as root and refreshes its index first */
	for (size_t m = 0; m < PKG_MANAGER_COUNT; m++) {
		int apt = !strcmp(pkg_managers[m].name, "apt");
		assert_int_equal(pkg_managers[m].as_root, apt);
		assert_int_equal(pkg_managers[m].update != NULL, apt);
	}
	assert_string_equal(pkg_find("apt")->update[0], "apt-get");
	assert_string_equal(pkg_find("apt")->update[1], "update");
	assert_null(pkg_find("apt")->update[2]);
}

/* A spec is one argument of an install: never an option, no control characters, no token in a
 * URL; the message never quotes the spec. */
static void test_spec_problem(void **state)
{
	static const struct {
		const char *spec;
		const char *problem; /* NULL: accepted */
	} cases[] = {
		{ "left-pad@1.3.0", NULL },
		{ "requests==2.31.0", NULL },
		{ "name @ https://example.com/x.whl", NULL },
		{ "golang.org/x/tools/cmd/stringer@latest", NULL },
		{ "", "must not be empty or blank" },
		{ " \t ", "must not be empty or blank" },
		{ "-e", "must not start with '-'" },
		{ "--index-url=https://evil", "must not start with '-'" },
		{ "a\nb", "must not contain control characters" },
		{ "a\x7f", "must not contain control characters" },
		{ "x @ https://user:tok3n@example.com/x.whl",
		  "must not contain a URL with credentials" },
		{ "git+https://tok3n@github.com/o/r", "must not contain a URL with credentials" },
		{ "https://example.com/a@b", NULL }, /* '@' in the path, not the authority */
	};
	(void)state;
	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		const char *got = pkg_spec_problem(cases[i].spec, strlen(cases[i].spec));
		if (!cases[i].problem ? got != NULL : !got || strcmp(got, cases[i].problem))
			fail_msg("spec %zu: got %s, expected %s", i, got ? got : "(accepted)",
				 cases[i].problem ? cases[i].problem : "(accepted)");
		if (got)
			assert_null(strstr(got, "tok3n"));
	}
}

UNIT_MAIN(cmocka_unit_test(test_install_argv_per_manager),
	  cmocka_unit_test(test_install_argv_empty_list),
	  cmocka_unit_test(test_install_argv_unknown_manager),
	  cmocka_unit_test(test_install_argv_overflow),
	  cmocka_unit_test(test_install_argv_many_packages),
	  cmocka_unit_test(test_regression_install_argv_prefix_cut),
	  cmocka_unit_test(test_table_order_and_registries), cmocka_unit_test(test_spec_problem))
