#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"

#define set_str(dst, value) set_str_n((dst), sizeof(dst), (value))

static int set_str_n(char *dst, size_t size, const char *value)
{
	if (strlen(value) >= size)
		return -1;
	strcpy(dst, value);
	return 0;
}

static int parse_long(const char *value, int base, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(value, &end, base);
	if (errno || end == value || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_level(const char *value)
{
	static const char *levels[] = { "debug", "info", "warn", "error" };

	for (int i = 0; i < 4; i++)
		if (!strcmp(levels[i], value))
			return i;
	return -1;
}

static const char *const remote_names[CONFIG_REMOTE_BACKENDS] = { "opensandbox", "docker", "e2b",
								   "cube", "daytona" };

static int remote_index(const char *name)
{
	for (int i = 0; i < CONFIG_REMOTE_BACKENDS; i++)
		if (!strcmp(remote_names[i], name))
			return i;
	return -1;
}

const struct remote_conf *config_remote(const struct config *cfg, const char *name)
{
	int i = remote_index(name);
	return i < 0 ? NULL : &cfg->remote[i];
}

/* One key of a remote backend's section. 0, -1 bad value, 1 unknown key. */
static int remote_entry(struct remote_conf *r, const char *name, const char *value)
{
	if (!strcmp(name, "url"))
		return set_str(r->url, value);
	if (!strcmp(name, "socket"))
		return set_str(r->socket, value);
	if (!strcmp(name, "api_key_file"))
		return set_str(r->api_key_file, value);
	if (!strcmp(name, "image"))
		return set_str(r->image, value);
	if (!strcmp(name, "timeout_seconds"))
		return parse_long(value, 10, 1, 3600, &r->timeout_s);
	return 1;
}

/* inih callback: returns nonzero to continue; an unknown key or bad value stops the parse. */
static int on_entry(void *user, const char *section, const char *name, const char *value)
{
	struct config *cfg = user;
	long v;
	int rc = -1;

#define KEY(s, k) (!strcmp(section, s) && !strcmp(name, k))
	if (KEY("database", "socket"))
		rc = set_str(cfg->db_socket, value);
	else if (KEY("database", "host"))
		rc = set_str(cfg->db_host, value);
	else if (KEY("database", "port")) {
		rc = parse_long(value, 10, 0, 65535, &v);
		cfg->db_port = (unsigned)v;
	} else if (KEY("database", "user"))
		rc = set_str(cfg->db_user, value);
	else if (KEY("database", "password"))
		rc = set_str(cfg->db_password, value);
	else if (KEY("database", "name"))
		rc = set_str(cfg->db_name, value);
	else if (KEY("database", "migrations"))
		rc = set_str(cfg->db_migrations, value);
	else if (KEY("api", "socket"))
		rc = set_str(cfg->api_socket, value);
	else if (KEY("api", "user"))
		rc = set_str(cfg->api_user, value);
	else if (KEY("api", "socket_group"))
		rc = set_str(cfg->api_socket_group, value);
	else if (KEY("api", "socket_mode")) {
		rc = parse_long(value, 8, 0, 0777, &v);
		cfg->api_socket_mode = (unsigned)v;
	} else if (KEY("api", "workers")) {
		rc = parse_long(value, 10, 0, CONFIG_MAX_WORKERS, &v);
		cfg->api_workers = (int)v;
	} else if (KEY("api", "poll_socket")) {
		rc = set_str(cfg->api_poll_socket, value);
	} else if (KEY("api", "poll_workers")) {
		rc = parse_long(value, 10, 1, CONFIG_MAX_WORKERS, &v);
		cfg->api_poll_workers = (int)v;
	} else if (KEY("api", "max_requests")) {
		rc = parse_long(value, 10, 0, 1000000000L, &v);
		cfg->api_max_requests = v;
	} else if (KEY("api", "max_rss_mb")) {
		rc = parse_long(value, 10, 1, CONFIG_MAX_RSS_MB_MAX, &v);
		cfg->api_max_rss_mb = v;
	} else if (KEY("sandbox", "backend")) {
		rc = backend_lookup(value) ? set_str(cfg->backend, value) : -1;
	} else if (KEY("sandbox", "root")) {
		rc = set_str(cfg->sandbox_root, value);
	} else if (KEY("sandbox", "pass_env")) {
		rc = set_str(cfg->sandbox_pass_env, value);
	} else if (KEY("sandbox", "pass_env_extra")) {
		rc = set_str(cfg->sandbox_pass_env_extra, value);
	} else if (KEY("sandbox", "ca_bundle")) {
		rc = value[0] && value[0] != '/' ? -1 : set_str(cfg->sandbox_ca_bundle, value);
	} else if (KEY("reconciler", "user")) {
		rc = value[0] ? set_str(cfg->reconciler_user, value) : -1;
	} else if (KEY("sandbox", "path")) {
		rc = set_str(cfg->sandbox_path, value);
	} else if (KEY("sandbox", "cache_max_age_days")) {
		rc = parse_long(value, 10, 0, CONFIG_MAX_CACHE_AGE_DAYS, &cfg->cache_max_age_days);
	} else if (KEY("sandbox", "srt_dir")) {
		rc = set_str(cfg->srt_dir, value);
	} else if (KEY("reconciler", "lease_seconds")) {
		rc = parse_long(value, 10, 1, 86400, &cfg->lease_s);
	} else if (KEY("reconciler", "max_attempts")) {
		rc = parse_long(value, 10, 1, 1000, &cfg->max_attempts);
	} else if (KEY("reconciler", "backoff_base_seconds")) {
		rc = parse_long(value, 10, 0, 86400, &cfg->backoff_base_s);
	} else if (KEY("reconciler", "backoff_cap_seconds")) {
		rc = parse_long(value, 10, 0, 7 * 86400, &cfg->backoff_cap_s);
	} else if (KEY("reconciler", "command_timeout_seconds")) {
		rc = parse_long(value, 10, 1, 86400, &cfg->command_timeout_s);
	} else if (KEY("reconciler", "output_max_bytes")) {
		rc = parse_long(value, 10, 256, 16 * 1024 * 1024, &cfg->output_max);
	} else if (KEY("reconciler", "last_error_max_bytes")) {
		rc = parse_long(value, 10, 64, 1024 * 1024, &cfg->last_error_max);
	} else if (remote_index(section) >= 0) {
		rc = remote_entry(&cfg->remote[remote_index(section)], name, value);
		if (rc == 1) {
			snprintf(cfg->error, sizeof(cfg->error), "%s.%s: unknown key", section, name);
			return 0;
		}
	} else if (KEY("log", "level")) {
		cfg->log_level = parse_level(value);
		rc = cfg->log_level < 0 ? -1 : 0;
	} else {
		snprintf(cfg->error, sizeof(cfg->error), "%s.%s: unknown key", section, name);
		return 0;
	}
#undef KEY
	if (rc) {
		snprintf(cfg->error, sizeof(cfg->error), "%s.%s: invalid value", section, name);
		return 0;
	}
	return 1;
}

const char *config_path(const char *path)
{
	const char *env;

	if (path && *path)
		return path;
	env = getenv("TERRARIUM_CONFIG");
	return env && *env ? env : CONFIG_DEFAULT_PATH;
}

int config_load(struct config *cfg, const char *path)
{
	const char *env;
	int rc;

	memset(cfg, 0, sizeof(*cfg));
	strcpy(cfg->db_host, "localhost");
	strcpy(cfg->db_user, "terrarium");
	strcpy(cfg->db_name, "terrarium");
	strcpy(cfg->db_migrations, CONFIG_DEFAULT_MIGRATIONS);
	strcpy(cfg->api_socket, "var/api.sock");
	cfg->api_socket_mode = 0660;
	strcpy(cfg->api_user, CONFIG_DEFAULT_API_USER);
	cfg->api_max_requests = CONFIG_DEFAULT_MAX_REQUESTS;
	cfg->api_max_rss_mb = CONFIG_DEFAULT_MAX_RSS_MB;
	cfg->api_poll_workers = CONFIG_DEFAULT_POLL_WORKERS;
	strcpy(cfg->backend, "local");
	strcpy(cfg->sandbox_root, CONFIG_DEFAULT_SANDBOX_ROOT);
	strcpy(cfg->sandbox_pass_env, CONFIG_DEFAULT_PASS_ENV);
	if (!access(CONFIG_DEFAULT_CA_BUNDLE, R_OK))
		strcpy(cfg->sandbox_ca_bundle, CONFIG_DEFAULT_CA_BUNDLE);
	strcpy(cfg->reconciler_user, CONFIG_DEFAULT_RECONCILER_USER);
	cfg->cache_max_age_days = CONFIG_DEFAULT_CACHE_MAX_AGE_DAYS;
	cfg->lease_s = CONFIG_DEFAULT_LEASE_S;
	cfg->max_attempts = CONFIG_DEFAULT_MAX_ATTEMPTS;
	cfg->backoff_base_s = CONFIG_DEFAULT_BACKOFF_BASE_S;
	cfg->backoff_cap_s = CONFIG_DEFAULT_BACKOFF_CAP_S;
	cfg->command_timeout_s = CONFIG_DEFAULT_COMMAND_TIMEOUT_S;
	cfg->output_max = CONFIG_DEFAULT_OUTPUT_MAX;
	cfg->last_error_max = CONFIG_DEFAULT_LAST_ERROR_MAX;
	for (int i = 0; i < CONFIG_REMOTE_BACKENDS; i++)
		cfg->remote[i].timeout_s = CONFIG_DEFAULT_HTTP_TIMEOUT_S;
	cfg->log_level = 1;

	path = config_path(path);
	rc = ini_parse(path, on_entry, cfg);
	if (rc < 0) {
		snprintf(cfg->error, sizeof(cfg->error), "%s: cannot read: %s", path, strerror(errno));
		return -1;
	}
	if (rc > 0) {
		if (!cfg->error[0])
			snprintf(cfg->error, sizeof(cfg->error), "%s: syntax error on line %d", path, rc);
		return -1;
	}
	env = getenv("TERRARIUM_DB_PASSWORD");
	if (env && set_str(cfg->db_password, env)) {
		snprintf(cfg->error, sizeof(cfg->error), "TERRARIUM_DB_PASSWORD: too long");
		return -1;
	}
	return 0;
}
