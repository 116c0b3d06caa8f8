/* Unit tests of the package cache's keys (reconciler/cache.c) and of the session environment
 * (reconciler/provision.c recon_env) that docker containers and --exec share. No database, no
 * Engine. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "../../reconciler/recon.h"
#include "unit.h"

struct fixture {
	struct config cfg;
	struct remote_conf remote;
	struct recon r;
};

static void setup_recon(struct fixture *f, const char *backend, const char *image)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->remote.image, sizeof(f->remote.image), "%s", image);
	f->cfg.cache_max_age_days = 14;
	f->r.cfg = &f->cfg;
	f->r.sbx.cfg = &f->cfg;
	f->r.sbx.ops = sbx_driver(backend);
	f->r.sbx.remote = !strcmp(backend, "docker") ? &f->remote : NULL;
}

static void key_of(struct fixture *f, const char *env, const char *packages, char *key)
{
	json_t *p = json_loads(packages, 0, NULL);
	assert_non_null(p);
	assert_int_equal(recon_cache_key(&f->r, env, p, key), 0);
	assert_int_equal(strlen(key), RECON_CACHE_KEY_LEN);
	assert_int_equal(strspn(key, "0123456789abcdef"), RECON_CACHE_KEY_LEN);
	json_decref(p);
}

static void test_key_stable_and_canonical(void **state)
{
	struct fixture f;
	char a[RECON_CACHE_KEY_LEN + 1], b[RECON_CACHE_KEY_LEN + 1];
	(void)state;

	setup_recon(&f, "docker", "terrarium-sandbox:1");
	key_of(&f, "env_1", "{\"apt\":[\"jq\"],\"npm\":[\"is-number@7.0.0\"]}", a);
	key_of(&f, "env_1", "{\"npm\":[\"is-number@7.0.0\"],\"pip\":[],\"apt\":[\"jq\"]}", b);
	assert_string_equal(a, b); /* member order and empty lists do not matter */
}

static void test_key_distinguishes_what_matters(void **state)
{
	/* each differs from env_1's {"apt":["jq"]} on terrarium-sandbox:1 in one respect */
	static const struct {
		const char *image, *env, *packages;
	} others[] = {
		{ "terrarium-sandbox:1", "env_2", "{\"apt\":[\"jq\"]}" },	   /* environment */
		{ "terrarium-sandbox:1", "env_1", "{\"apt\":[\"jq\",\"curl\"]}" }, /* packages */
		{ "terrarium-sandbox:1", "env_1", "{\"npm\":[\"jq\"]}" },	   /* manager */
		{ "terrarium-sandbox:2", "env_1", "{\"apt\":[\"jq\"]}" },	   /* base image */
	};
	struct fixture f;
	char base[RECON_CACHE_KEY_LEN + 1], k[RECON_CACHE_KEY_LEN + 1];
	(void)state;

	setup_recon(&f, "docker", "terrarium-sandbox:1");
	key_of(&f, "env_1", "{\"apt\":[\"jq\"]}", base);
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		setup_recon(&f, "docker", others[i].image);
		key_of(&f, others[i].env, others[i].packages, k);
		assert_string_not_equal(base, k);
	}
}

static void test_cache_enabled(void **state)
{
	struct fixture f;
	(void)state;

	setup_recon(&f, "docker", "img");
	assert_true(recon_cache_enabled(&f.r));
	f.cfg.cache_max_age_days = 0;
	assert_false(recon_cache_enabled(&f.r)); /* 0 disables it */
	setup_recon(&f, "bwrap", "");
	assert_true(recon_cache_enabled(&f.r));
	setup_recon(&f, "local", "");
	assert_false(recon_cache_enabled(&f.r)); /* no cache operations */
}

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);
	for (int i = 0; envp[i]; i++)
		if (!strncmp(envp[i], name, n) && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

static void test_session_env(void **state)
{
	static struct recon_env e;
	struct config cfg;
	(void)state;

	memset(&cfg, 0, sizeof(cfg));
	strcpy(cfg.sandbox_path, "/usr/bin:/bin");
	strcpy(cfg.sandbox_ca_bundle, "/host/ca.pem");
	recon_env(&cfg, "/workspace", &e);
	/* where common/packages.c puts each manager's packages, for docker's containers too */
	assert_non_null(strstr(env_get(e.envp, "PATH"), "/workspace/node_modules/.bin:"));
	assert_non_null(strstr(env_get(e.envp, "PATH"), "/workspace/.pip/bin:"));
	assert_string_equal(env_get(e.envp, "HOME"), "/workspace");
	assert_string_equal(env_get(e.envp, "PYTHONPATH"), "/workspace/.pip");
	assert_string_equal(env_get(e.envp, "GOBIN"), "/workspace/bin");
	/* the host's path: docker replaces it by the mounted bundle's (docker.c container_env) */
	assert_string_equal(env_get(e.envp, "SSL_CERT_FILE"), "/host/ca.pem");
}

UNIT_MAIN(cmocka_unit_test(test_key_stable_and_canonical),
	  cmocka_unit_test(test_key_distinguishes_what_matters),
	  cmocka_unit_test(test_cache_enabled), cmocka_unit_test(test_session_env))
