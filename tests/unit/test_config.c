/* Unit tests of the configuration (common/config.c) and the backend table (common/backend.c):
 * loading, defaults and bounds kept exactly as users' files rely on, errors naming section and
 * key, `config dump`, and docs/config.md listing exactly the table's keys. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../common/backend.h"
#include "../../common/config.h"
#include "unit.h"

#define DOC_PATH_MAX 4096
#define DOC_MAX (256 * 1024)

static char *write_tmp(const char *text)
{
	static char path[64];
	int fd;
	strcpy(path, "/tmp/terrarium-test-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* config_load of TEXT; returns its result, the error (if any) into CFG. */
static int load_text(struct config *cfg, const char *text)
{
	char *p = write_tmp(text);
	int rc = config_load(cfg, p);
	unlink(p);
	return rc;
}

static void test_load(void **state)
{
	struct config cfg;
	(void)state;
	setenv("TERRARIUM_DB_PASSWORD", "from-env", 1);
	assert_int_equal(load_text(&cfg, "[database]\nsocket = /run/x.sock\npassword = a\n[api]\n"
					 "workers = 3\nsocket_mode = 0640\n[sandbox]\n"
					 "backend = opensandbox\npass_env = A,B\n"),
			 0);
	unsetenv("TERRARIUM_DB_PASSWORD");
	assert_string_equal(cfg.db_socket, "/run/x.sock");
	assert_string_equal(cfg.db_password, "from-env");
	assert_int_equal(cfg.api_workers, 3);
	assert_int_equal(cfg.api_socket_mode, 0640);
	assert_string_equal(cfg.backend, "opensandbox");
	assert_string_equal(cfg.sandbox_pass_env, "A,B");
	assert_string_equal(cfg.db_name, "terrarium");

	assert_int_equal(load_text(&cfg, "[opensandbox]\nurl = http://127.0.0.1:9/\n"
					 "api_key_file = /run/k\ntimeout_seconds = 7\n"),
			 0);
	assert_string_equal(config_remote(&cfg, "opensandbox")->url, "http://127.0.0.1:9/");
	assert_string_equal(config_remote(&cfg, "opensandbox")->api_key_file, "/run/k");
	assert_int_equal(config_remote(&cfg, "opensandbox")->timeout_s, 7);
	assert_int_equal(config_remote(&cfg, "docker")->timeout_s, CONFIG_DEFAULT_HTTP_TIMEOUT_S);
	assert_null(config_remote(&cfg, "local"));
	assert_null(config_remote(&cfg, "nope"));

	/* poll_recheck_ms: off unless set */
	assert_int_equal(cfg.api_poll_recheck_ms, 0);
	assert_int_equal(load_text(&cfg, "[api]\npoll_recheck_ms = 100\n"), 0);
	assert_int_equal(cfg.api_poll_recheck_ms, 100);

	assert_int_equal(load_text(&cfg, "[log]\nlevel = warn\n"), 0);
	assert_int_equal(cfg.log_level, 2);

	assert_int_equal(config_load(&cfg, "/nonexistent/terrarium.ini"), -1);
	assert_non_null(strstr(cfg.error, "cannot read"));
	setenv("TERRARIUM_CONFIG", "/etc/x.ini", 1);
	assert_string_equal(config_path(NULL), "/etc/x.ini");
	assert_string_equal(config_path("/a.ini"), "/a.ini");
	unsetenv("TERRARIUM_CONFIG");
	assert_string_equal(config_path(NULL), CONFIG_DEFAULT_PATH);
}

/* Errors name the section and key (and the first error wins: it is the line inih reports). */
static void test_errors(void **state)
{
	static const struct unit_text_case cases[] = {
		{ "[daytona]\napi_key = inline-secrets-are-refused\n",
		  "daytona.api_key: unknown key" },
		{ "[local]\nurl = http://x/\n", "local.url: unknown key" },
		{ "[sandbox]\nbackend = vmware\n",
		  "sandbox.backend: unknown backend 'vmware' (one of: "
		  "local, bwrap, srt, docker, opensandbox, e2b, "
		  "cube, daytona)" },
		{ "[api]\nworkerz = 3\n", "api.workerz: unknown key" },
		{ "[api]\nworkers = -1\n", "api.workers: out of range 0..256" },
		{ "[api]\nworkers = 3x\n", "api.workers: invalid value" },
		{ "[api]\nsocket_mode = 0800\n", "api.socket_mode: invalid value" },
		{ "[api]\nsocket_mode = 01000\n", "api.socket_mode: out of range 0..777" },
		{ "[log]\nlevel = loud\n",
		  "log.level: invalid value (one of: debug, info, warn, error)" },
		{ "[reconciler]\nuser =\n", "reconciler.user: must not be empty" },
		{ "[sandbox]\nca_bundle = certs.pem\n",
		  "sandbox.ca_bundle: an absolute path or empty" },
		{ "[docker]\ntimeout_seconds = 0\n",
		  "docker.timeout_seconds: out of range 1..3600" },
		{ "[api]\nworkers = 500\n[log]\nlevel = loud\n", "api.workers: out of range" },
	};
	struct config cfg;
	char big[CONFIG_STR_MAX + 32];
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(load_text(&cfg, cases[i].in), -1);
		if (!strstr(cfg.error, cases[i].want))
			fail_msg("%s: error '%s' lacks '%s'", cases[i].in, cfg.error,
				 cases[i].want);
	}
	/* inih (Debian's build) reads lines of at most 199 bytes: longer is a syntax error */
	snprintf(big, sizeof(big), "[database]\nname = %0*d\n", CONFIG_STR_MAX, 0);
	assert_int_equal(load_text(&cfg, big), -1);
	assert_non_null(strstr(cfg.error, "syntax error"));
	snprintf(big, sizeof(big), "%0*d", CONFIG_STR_MAX, 0);
	setenv("TERRARIUM_DB_PASSWORD", big, 1);
	assert_int_equal(load_text(&cfg, ""), -1);
	unsetenv("TERRARIUM_DB_PASSWORD");
	assert_non_null(strstr(cfg.error, "TERRARIUM_DB_PASSWORD"));
}

/* The streams held without a publisher: half of the pool that takes them (the long-poll pool's
 * when there is one), or [stream] max_held. */
static void test_stream_max_held(void **state)
{
	struct config cfg;
	(void)state;
	assert_int_equal(load_text(&cfg, "[api]\nworkers = 6\n"), 0);
	assert_int_equal(config_stream_max_held(&cfg), 3);
	assert_int_equal(load_text(&cfg, "[api]\nworkers = 4\npoll_socket = /run/p.sock\n"
					 "poll_workers = 16\n"),
			 0);
	assert_int_equal(config_stream_max_held(&cfg), 8);
	assert_int_equal(load_text(&cfg, "[api]\nworkers = 1\n"), 0);
	assert_int_equal(config_stream_max_held(&cfg), 1);
	assert_int_equal(
		load_text(&cfg, "[api]\npoll_socket = /run/p.sock\n[stream]\nmax_held = 5\n"), 0);
	assert_int_equal(config_stream_max_held(&cfg), 5);
}

/* A field of struct config and the default it must hold: the string WANT, or (WANT NULL) the
 * number NUMBER in the field's type (int, unsigned or long). */
struct field_default {
	const char *field;
	size_t offset, size;
	const char *want;
	long number;
};

#define FIELD_(f) #f, offsetof(struct config, f), sizeof(((struct config *)0)->f)
#define STRING_IS(f, want)                                                                         \
	{                                                                                          \
		FIELD_(f), want, 0                                                                 \
	}
#define NUMBER_IS(f, number)                                                                       \
	{                                                                                          \
		FIELD_(f), NULL, number                                                            \
	}

/* CFG's field of D holds D's value; a test failure naming the field when not. */
static void expect_default(const struct config *cfg, const struct field_default *d)
{
	const char *at = (const char *)cfg + d->offset;
	long got;

	if (d->want) {
		if (strcmp(at, d->want))
			fail_msg("%s: '%s', want '%s'", d->field, at, d->want);
		return;
	}
	if (d->size == sizeof(long)) {
		memcpy(&got, at, sizeof(got));
	} else {
		int v;

		if (d->size != sizeof(v))
			fail_msg("%s: a field of %zu bytes, neither an int nor a long", d->field,
				 d->size);
		memcpy(&v, at, sizeof(v));
		got = v;
	}
	if (got != d->number)
		fail_msg("%s: %ld, want %ld", d->field, got, d->number);
}

/* Defaults of an empty file: exactly the values every deployment's file relies on. */
static void test_defaults(void **state)
{
	const struct field_default defaults[] = {
		STRING_IS(db_socket, ""),
		STRING_IS(db_host, "localhost"),
		NUMBER_IS(db_port, 0),
		STRING_IS(db_user, "terrarium"),
		STRING_IS(db_password, ""),
		STRING_IS(db_name, "terrarium"),
		STRING_IS(db_migrations, "sql"),
		STRING_IS(api_socket, "var/api.sock"),
		STRING_IS(api_socket_group, ""),
		NUMBER_IS(api_socket_mode, 0660),
		NUMBER_IS(api_workers, 0),
		NUMBER_IS(api_max_requests, 10000),
		NUMBER_IS(api_max_rss_mb, 128),
		STRING_IS(api_user, "www-data"),
		STRING_IS(api_poll_socket, ""),
		NUMBER_IS(api_poll_workers, 16),
		STRING_IS(backend, "local"),
		STRING_IS(sandbox_root, "var/sandboxes"),
		STRING_IS(srt_dir, ""),
		STRING_IS(sandbox_path, ""),
		STRING_IS(sandbox_pass_env,
			  "http_proxy,https_proxy,no_proxy,HTTP_PROXY,HTTPS_PROXY,NO_PROXY,"
			  "NODE_EXTRA_CA_CERTS,SSL_CERT_FILE,SSL_CERT_DIR,REQUESTS_CA_BUNDLE,"
			  "PIP_CERT,CURL_CA_BUNDLE"),
		STRING_IS(sandbox_pass_env_extra, ""),
		STRING_IS(sandbox_ca_bundle, access("/etc/ssl/certs/ca-certificates.crt", R_OK)
						     ? ""
						     : "/etc/ssl/certs/ca-certificates.crt"),
		NUMBER_IS(cache_max_age_days, 14),
		STRING_IS(reconciler_user, "www-data"),
		NUMBER_IS(lease_s, 600),
		NUMBER_IS(max_attempts, 5),
		NUMBER_IS(backoff_base_s, 10),
		NUMBER_IS(backoff_cap_s, 900),
		NUMBER_IS(command_timeout_s, 900),
		NUMBER_IS(output_max, 65536),
		NUMBER_IS(last_error_max, 4096),
		NUMBER_IS(log_level, 1),
	};
	struct config cfg;
	(void)state;
	assert_int_equal(load_text(&cfg, ""), 0);
	for (size_t i = 0; i < UNIT_LEN(defaults); i++)
		expect_default(&cfg, &defaults[i]);
	for (size_t b = 0; b < BACKEND_TABLE_LEN; b++) {
		const struct remote_conf *r = config_remote(&cfg, backend_at(b)->name);
		if (!backend_at(b)->http) {
			assert_null(r);
			continue;
		}
		assert_non_null(r);
		assert_string_equal(r->url, "");
		assert_string_equal(r->socket, "");
		assert_string_equal(r->api_key_file, "");
		assert_string_equal(r->image, "");
		assert_int_equal(r->timeout_s, 30);
	}
}

/* Every numeric key's range, as it was before the table: MIN and MAX load, one past each
 * does not, and the error names the key. */
static void test_bounds(void **state)
{
	static const struct {
		const char *section, *key;
		long min, max;
		int octal;
	} ranges[] = {
		{ "database", "port", 0, 65535, 0 },
		{ "api", "socket_mode", 0, 0777, 1 },
		{ "api", "workers", 0, 256, 0 },
		{ "api", "poll_workers", 1, 256, 0 },
		{ "api", "poll_recheck_ms", 0, 999, 0 },
		{ "api", "max_requests", 0, 1000000000L, 0 },
		{ "api", "max_rss_mb", 1, 65536, 0 },
		{ "stream", "tail_ms", 1, 1000, 0 },
		{ "stream", "hold_seconds", 1, 3600, 0 },
		{ "stream", "poll_ms", 1, 5000, 0 },
		{ "stream", "ping_seconds", 1, 300, 0 },
		{ "stream", "max_held", 0, 256, 0 },
		{ "model", "idle_timeout_seconds", 1, 3600, 0 },
		{ "model", "max_retries", 0, 100, 0 },
		{ "model", "backoff_ms", 0, 600000, 0 },
		{ "model", "backoff_cap_ms", 0, 600000, 0 },
		{ "model", "max_tokens", 1, 1000000, 0 },
		{ "runner", "max_turns", 1, 1024, 0 },
		{ "runner", "lease_seconds", 1, 86400, 0 },
		{ "runner", "poll_ms", 1, 10000, 0 },
		{ "runner", "tool_result_timeout_seconds", 1, 86400, 0 },
		{ "runner", "max_round_trips", 1, 100000, 0 },
		{ "runner", "mcp_call_timeout_seconds", 1, 3600, 0 },
		{ "runner", "host_tools", 0, 1, 0 },
		{ "runner", "mcp_local_addresses", 0, 1, 0 },
		{ "sandbox", "cache_max_age_days", 0, 3650, 0 },
		{ "reconciler", "lease_seconds", 1, 86400, 0 },
		{ "reconciler", "max_attempts", 1, 1000, 0 },
		{ "reconciler", "backoff_base_seconds", 0, 86400, 0 },
		{ "reconciler", "backoff_cap_seconds", 0, 7 * 86400, 0 },
		{ "reconciler", "command_timeout_seconds", 1, 86400, 0 },
		{ "reconciler", "output_max_bytes", 256, 16 * 1024 * 1024, 0 },
		{ "reconciler", "last_error_max_bytes", 64, 1024 * 1024, 0 },
		{ "opensandbox", "timeout_seconds", 1, 3600, 0 },
		{ "docker", "timeout_seconds", 1, 3600, 0 },
		{ "e2b", "timeout_seconds", 1, 3600, 0 },
		{ "cube", "timeout_seconds", 1, 3600, 0 },
		{ "daytona", "timeout_seconds", 1, 3600, 0 },
	};
	struct config cfg;
	char text[256], needle[128];
	size_t n, numeric = 0;
	const struct config_key *keys = config_keys(&n);
	(void)state;

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
#define fmt(v)                                                                                     \
	(ranges[i].octal ? "[%s]\n%s = %lo\n" : "[%s]\n%s = %ld\n"), ranges[i].section,            \
		ranges[i].key, (v)
		snprintf(needle, sizeof(needle), "%s.%s: out of range", ranges[i].section,
			 ranges[i].key);
		snprintf(text, sizeof(text), fmt(ranges[i].min));
		assert_int_equal(load_text(&cfg, text), 0);
		snprintf(text, sizeof(text), fmt(ranges[i].max));
		assert_int_equal(load_text(&cfg, text), 0);
		snprintf(text, sizeof(text), "[%s]\n%s = %ld\n", ranges[i].section, ranges[i].key,
			 ranges[i].min - 1);
		assert_int_equal(load_text(&cfg, text), -1);
		assert_non_null(strstr(cfg.error, needle));
		snprintf(text, sizeof(text), fmt(ranges[i].max + 1));
#undef fmt
		assert_int_equal(load_text(&cfg, text), -1);
		if (!strstr(cfg.error, needle))
			fail_msg("%s lacks %s", cfg.error, needle);
	}
	/* and the list above is every numeric key of the table */
	for (size_t i = 0; i < n; i++)
		if (keys[i].type != CONFIG_STRING && keys[i].type != CONFIG_BACKEND &&
		    keys[i].type != CONFIG_LEVEL)
			numeric += keys[i].section ? 1 : 5;
	assert_int_equal(numeric, sizeof(ranges) / sizeof(ranges[0]));
}

/* The table itself: each type matches its field's size, each default is within bounds (it is
 * applied through the parser), no key twice. */
static void test_table(void **state)
{
	size_t n, http = 0;
	const struct config_key *keys = config_keys(&n);
	(void)state;

	assert_true(n > 30);
	for (size_t i = 0; i < n; i++) {
		const struct config_key *k = &keys[i];
		size_t want = k->type == CONFIG_LONG				 ? sizeof(long)
			      : k->type == CONFIG_INT || k->type == CONFIG_LEVEL ? sizeof(int)
			      : k->type == CONFIG_UINT || k->type == CONFIG_MODE ? sizeof(unsigned)
										 : 0;
		if (want)
			assert_int_equal(k->size, want);
		else
			assert_true(k->size >= CONFIG_STR_MAX);
		assert_true(k->doc && k->doc[0] && k->def);
		for (size_t j = 0; j < i; j++)
			assert_false(!strcmp(keys[j].name, k->name) &&
				     (keys[j].section && k->section
					      ? !strcmp(keys[j].section, k->section)
					      : keys[j].section == k->section));
	}
	for (size_t b = 0; b < BACKEND_TABLE_LEN; b++) {
		assert_ptr_equal(backend_lookup(backend_at(b)->name), backend_at(b));
		assert_int_equal(backend_index(backend_at(b)->name), (int)b);
		http += backend_at(b)->http;
	}
	assert_int_equal(http, 5);
	assert_null(backend_at(BACKEND_TABLE_LEN));
	assert_null(backend_lookup("vmware"));
	assert_int_equal(backend_index("vmware"), -1);
}

/* config dump: every key, the password masked, and (without a secret) the dump loads back
 * into exactly the same configuration. */
static void test_dump(void **state)
{
	struct config cfg, again;
	char *out = NULL, line[CONFIG_STR_MAX + 64];
	size_t outlen = 0, n;
	const struct config_key *keys = config_keys(&n);
	FILE *f;
	(void)state;

	assert_int_equal(load_text(&cfg, "[database]\npassword = hunter2-secret\n[api]\n"
					 "socket_mode = 0640\nworkers = 7\n[docker]\n"
					 "socket = /run/d.sock\n[log]\nlevel = error\n"),
			 0);
	f = open_memstream(&out, &outlen);
	assert_non_null(f);
	assert_int_equal(config_dump(&cfg, f), 0);
	fclose(f);
	assert_null(strstr(out, "hunter2"));
	assert_non_null(strstr(out, "\npassword = ********\n"));
	assert_non_null(strstr(out, "\nsocket_mode = 0640\n"));
	assert_non_null(strstr(out, "\n[docker]\n"));
	assert_non_null(strstr(out, "\nsocket = /run/d.sock\n"));
	assert_non_null(strstr(out, "\nlevel = error\n"));
	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "\n%s = ", keys[i].name);
		assert_non_null(strstr(out, line));
		snprintf(line, sizeof(line), "\n; %.40s", keys[i].doc); /* comments are wrapped */
		assert_non_null(strstr(out, line));
	}
	free(out);

	/* round trip without the secret */
	memset(cfg.db_password, 0, sizeof(cfg.db_password));
	out = NULL;
	f = open_memstream(&out, &outlen);
	assert_int_equal(config_dump(&cfg, f), 0);
	fclose(f);
	assert_int_equal(load_text(&again, out), 0);
	free(out);
	assert_memory_equal(&cfg, &again, sizeof(cfg));
}

/* docs/config.md is the reference: a row "| `[SECTION] KEY` | DEFAULT | RANGE | DOC |" for every
 * key (the HTTP backends' keys as `[BACKEND] KEY`, each such backend named as `[NAME]`), and
 * no row for a key the table lacks. */
static void test_docs_list_every_key(void **state)
{
	char path[DOC_PATH_MAX], want[CONFIG_STR_MAX];
	const char *self = __FILE__, *tail = strstr(self, "tests/unit/test_config.c");
	char *doc = calloc(1, DOC_MAX);
	size_t n, len, rows = 0;
	const struct config_key *keys = config_keys(&n);
	FILE *f;
	(void)state;

	assert_non_null(doc);
	assert_non_null(tail);
	snprintf(path, sizeof(path), "%.*sdocs/config.md", (int)(tail - self), self);
	f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s", path);
	len = fread(doc, 1, DOC_MAX - 1, f);
	fclose(f);
	assert_true(len > 0 && len < DOC_MAX - 1);

	for (size_t i = 0; i < n; i++) {
		const char *row, *end;
		snprintf(want, sizeof(want), "| `[%s] %s` |",
			 keys[i].section ? keys[i].section : "BACKEND", keys[i].name);
		row = strstr(doc, want);
		if (!row) {
			fail_msg("docs/config.md does not list %s", want);
			return;
		}
		if (strstr(row + 1, want))
			fail_msg("docs/config.md lists %s twice", want);
		end = strchr(row, '\n');
		assert_non_null(end);
		snprintf(want, sizeof(want), "| %s |", keys[i].doc);
		if (!memmem(row, (size_t)(end - row), want, strlen(want)))
			fail_msg("docs/config.md: the row of [%s] %s does not read '%s'",
				 keys[i].section ? keys[i].section : "BACKEND", keys[i].name, want);
		if (keys[i].def[0]) {
			snprintf(want, sizeof(want), "| `%s`", keys[i].def);
			if (!memmem(row, (size_t)(end - row), want, strlen(want)))
				fail_msg("docs/config.md: the default of [%s] %s is not `%s`",
					 keys[i].section ? keys[i].section : "BACKEND",
					 keys[i].name, keys[i].def);
		}
	}
	for (size_t b = 0; b < BACKEND_TABLE_LEN; b++) {
		if (!backend_at(b)->http)
			continue;
		snprintf(want, sizeof(want), "`[%s]`", backend_at(b)->name);
		if (!strstr(doc, want))
			fail_msg("docs/config.md does not name %s", want);
	}
	/* no row for a key the table lacks */
	for (const char *p = doc; (p = strstr(p, "\n| `[")); p++) {
		char section[64], key[64];
		const struct config_key *k = NULL;
		if (sscanf(p, "\n| `[%63[^]]] %63[^`]`", section, key) != 2)
			continue;
		rows++;
		for (size_t i = 0; i < n && !k; i++)
			if (!strcmp(keys[i].name, key) &&
			    !strcmp(keys[i].section ? keys[i].section : "BACKEND", section))
				k = &keys[i];
		if (!k)
			fail_msg("docs/config.md lists [%s] %s, which the table lacks", section,
				 key);
	}
	assert_int_equal(rows, n);
	free(doc);
}

UNIT_MAIN(cmocka_unit_test(test_load), cmocka_unit_test(test_errors),
	  cmocka_unit_test(test_defaults), cmocka_unit_test(test_bounds),
	  cmocka_unit_test(test_table), cmocka_unit_test(test_dump),
	  cmocka_unit_test(test_docs_list_every_key), cmocka_unit_test(test_stream_max_held))
