/* Configuration shared by the API and the reconciler: one INI file (inih).
 *
 * Path: -c PATH, else $TERRARIUM_CONFIG, else CONFIG_DEFAULT_PATH: "terrarium.ini" in the working
 * directory, or what the build defines (`make CONFIG_DEFAULT_PATH=...`; the Debian package's
 * build makes it /etc/terrarium/terrarium.ini, debian/rules).
 * Environment overrides: TERRARIUM_DB_PASSWORD replaces [database] password.
 *
 * Every key, its type, bounds, default and documentation is one row of the table in config.c
 * (config_keys); docs/config.md is the reference and a unit test keeps the two equal;
 * `terrarium-api config dump` prints every key with its effective value. */
#ifndef TERRARIUM_CONFIG_H
#define TERRARIUM_CONFIG_H

#include <stddef.h>
#include <stdio.h>

#include "backend.h"

#define CONFIG_STR_MAX 512
#ifndef CONFIG_DEFAULT_PATH
#define CONFIG_DEFAULT_PATH "terrarium.ini"
#endif
#define CONFIG_DEFAULT_MIGRATIONS "sql"
#define CONFIG_DEFAULT_MAX_REQUESTS 10000
#define CONFIG_MAX_MAX_REQUESTS 1000000000
#define CONFIG_DEFAULT_MAX_RSS_MB 128 /* docs/limits.md: a worker past it is recycled */
#define CONFIG_MAX_RSS_MB_MAX 65536
#define CONFIG_DEFAULT_API_USER "www-data"
#define CONFIG_DEFAULT_SOCKET_MODE 0660
#define CONFIG_MAX_WORKERS 256
/* The reconciler's account when started as root: the API's, which already reaches the run
 * directory (its sockets) and nothing secret in it (the config and key files are root's). */
#define CONFIG_DEFAULT_RECONCILER_USER CONFIG_DEFAULT_API_USER
/* a blocked long poll holds its worker (and a database connection) for up to 999 ms but no
 * CPU: polls get their own, larger pool (docs/work-queue.md) */
#define CONFIG_DEFAULT_POLL_WORKERS 16
/* a poll blocks for at most 999 ms: a longer recheck interval would never be used */
#define CONFIG_POLL_RECHECK_MS_MAX 999
/* [stream] (docs/events.md) */
#define CONFIG_DEFAULT_TAIL_MS 20
#define CONFIG_TAIL_MS_MAX 1000
#define CONFIG_DEFAULT_STREAM_HOLD_S 45
#define CONFIG_STREAM_HOLD_S_MAX 3600
#define CONFIG_DEFAULT_STREAM_POLL_MS 100
#define CONFIG_STREAM_POLL_MS_MAX 5000
#define CONFIG_DEFAULT_STREAM_PING_S 5
#define CONFIG_STREAM_PING_S_MAX 300
/* [model] and [runner] (docs/runner.md) */
#define CONFIG_DEFAULT_MODEL_URL "https://api.anthropic.com"
#define CONFIG_DEFAULT_MODEL_IDLE_S 60
#define CONFIG_MODEL_IDLE_S_MAX 3600
#define CONFIG_DEFAULT_MODEL_RETRIES 6
#define CONFIG_MODEL_RETRIES_MAX 100
#define CONFIG_DEFAULT_MODEL_BACKOFF_MS 1000
#define CONFIG_DEFAULT_MODEL_BACKOFF_CAP_MS 30000
#define CONFIG_MODEL_BACKOFF_MS_MAX 600000
#define CONFIG_DEFAULT_MODEL_MAX_TOKENS 8192
#define CONFIG_MODEL_MAX_TOKENS_MAX 1000000
#define CONFIG_DEFAULT_MAX_TURNS 16
#define CONFIG_MAX_TURNS_MAX 1024
#define CONFIG_DEFAULT_RUNNER_LEASE_S 60
#define CONFIG_DEFAULT_RUNNER_POLL_MS 25
#define CONFIG_RUNNER_POLL_MS_MAX 10000
#define CONFIG_DEFAULT_TOOL_RESULT_TIMEOUT_S 3600
#define CONFIG_DEFAULT_MAX_ROUND_TRIPS 100
#define CONFIG_MAX_ROUND_TRIPS_MAX 100000
#define CONFIG_DEFAULT_MCP_CALL_TIMEOUT_S 300 /* runner/mcp.h MCP_CALL_TIMEOUT_MS is this */
#define CONFIG_MCP_CALL_TIMEOUT_S_MAX 3600
#define CONFIG_DEFAULT_SANDBOX_ROOT "var/sandboxes"
#define CONFIG_DEFAULT_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define CONFIG_DEFAULT_PASS_ENV                                                                    \
	"http_proxy,https_proxy,no_proxy,HTTP_PROXY,HTTPS_PROXY,NO_PROXY,NODE_EXTRA_CA_CERTS,"     \
	"SSL_CERT_FILE,SSL_CERT_DIR,REQUESTS_CA_BUNDLE,PIP_CERT,CURL_CA_BUNDLE"
#define CONFIG_DEFAULT_CACHE_MAX_AGE_DAYS 14
#define CONFIG_MAX_CACHE_AGE_DAYS 3650
#define CONFIG_DEFAULT_LEASE_S 600
#define CONFIG_MAX_LEASE_S 86400
#define CONFIG_DEFAULT_MAX_ATTEMPTS 5
#define CONFIG_MAX_MAX_ATTEMPTS 1000
#define CONFIG_DEFAULT_BACKOFF_BASE_S 10
#define CONFIG_MAX_BACKOFF_BASE_S 86400
#define CONFIG_DEFAULT_BACKOFF_CAP_S 900
#define CONFIG_MAX_BACKOFF_CAP_S 604800 /* a week */
#define CONFIG_DEFAULT_COMMAND_TIMEOUT_S 900
#define CONFIG_MAX_COMMAND_TIMEOUT_S 86400
#define CONFIG_DEFAULT_OUTPUT_MAX 65536
#define CONFIG_MIN_OUTPUT_MAX 256
#define CONFIG_MAX_OUTPUT_MAX 16777216 /* 16 MiB */
#define CONFIG_DEFAULT_LAST_ERROR_MAX 4096
#define CONFIG_MIN_LAST_ERROR_MAX 64
#define CONFIG_MAX_LAST_ERROR_MAX 1048576 /* 1 MiB */
#define CONFIG_DEFAULT_LOG_LEVEL "info"

#define CONFIG_DEFAULT_HTTP_TIMEOUT_S 30
#define CONFIG_MAX_HTTP_TIMEOUT_S 3600

/* Settings of one HTTP backend (its own section, named like the backend). */
struct remote_conf {
	char url[CONFIG_STR_MAX];
	char socket[CONFIG_STR_MAX];
	char api_key_file[CONFIG_STR_MAX];
	char image[CONFIG_STR_MAX];
	long timeout_s;
};

struct config {
	char db_socket[CONFIG_STR_MAX];
	char db_host[CONFIG_STR_MAX];
	unsigned db_port;
	char db_user[CONFIG_STR_MAX];
	char db_password[CONFIG_STR_MAX];
	char db_name[CONFIG_STR_MAX];
	char db_migrations[CONFIG_STR_MAX];

	char api_socket[CONFIG_STR_MAX];
	char api_socket_group[CONFIG_STR_MAX];
	char api_user[CONFIG_STR_MAX];
	unsigned api_socket_mode;
	int api_workers;
	long api_max_requests;
	long api_max_rss_mb;
	char api_poll_socket[CONFIG_STR_MAX];
	int api_poll_workers;
	long api_poll_recheck_ms;

	char stream_publish_socket[CONFIG_STR_MAX];
	long stream_tail_ms;
	long stream_hold_s;
	long stream_poll_ms;
	long stream_ping_s;
	int stream_max_held;

	char model_base_url[CONFIG_STR_MAX];
	char model_api_key_file[CONFIG_STR_MAX];
	long model_idle_timeout_s;
	long model_max_retries;
	long model_backoff_ms;
	long model_backoff_cap_ms;
	long model_max_tokens;
	int runner_max_turns;
	long runner_lease_s;
	long runner_poll_ms;
	long runner_tool_result_timeout_s;
	long runner_max_round_trips;
	long runner_mcp_call_timeout_s;
	int runner_host_tools; /* 1: built-in tools may run on a backend without isolation */
	int runner_mcp_local_addresses; /* 1: MCP servers may be at this machine's addresses */

	char vault_key_file[CONFIG_STR_MAX];

	char backend[CONFIG_STR_MAX];
	char sandbox_root[CONFIG_STR_MAX];
	char sandbox_path[CONFIG_STR_MAX * 4];
	char sandbox_pass_env[CONFIG_STR_MAX];
	char sandbox_pass_env_extra[CONFIG_STR_MAX];
	char sandbox_ca_bundle[CONFIG_STR_MAX];
	char reconciler_user[CONFIG_STR_MAX];
	long cache_max_age_days; /* 0 = no package cache */
	char srt_dir[CONFIG_STR_MAX];
	int log_level;

	long lease_s;
	long max_attempts;
	long backoff_base_s;
	long backoff_cap_s;
	long command_timeout_s;
	long output_max;
	long last_error_max;

	/* indexed like the backend table (backend_at); used by the rows with http set */
	struct remote_conf remote[BACKEND_TABLE_LEN];

	/* set by config_load: "section.key: what is wrong" on failure */
	char error[CONFIG_STR_MAX];
};

enum config_type {
	CONFIG_STRING,	/* char[size] */
	CONFIG_INT,	/* int, decimal */
	CONFIG_UINT,	/* unsigned, decimal */
	CONFIG_MODE,	/* unsigned, octal */
	CONFIG_LONG,	/* long, decimal */
	CONFIG_LEVEL,	/* int: the index of a log level name (debug, info, warn, error) */
	CONFIG_BACKEND, /* char[size]: a name in the backend table */
};

#define CONFIG_SECRET 1u    /* never printed (config dump masks it) */
#define CONFIG_NONEMPTY 2u  /* an empty value is refused */
#define CONFIG_ABSOLUTE 4u  /* empty, or an absolute path */
#define CONFIG_IF_EXISTS 8u /* the default applies only when that file is readable */

/* One configuration key. */
struct config_key {
	const char *section; /* NULL: a key of every HTTP backend's own section ([docker]...) */
	const char *name;
	enum config_type type;
	size_t offset;	 /* into struct config, or into struct remote_conf when section is NULL */
	size_t size;	 /* of the field */
	long min, max;	 /* numbers: the accepted range */
	const char *def; /* the default, spelled as in the INI file */
	unsigned flags;	 /* CONFIG_SECRET... */
	const char *doc;
};

/* The table of every key, in the order of docs/config.md; its length goes to *N. Borrowed. */
const struct config_key *config_keys(size_t *n);

/* Fill defaults, then read PATH (NULL: $TERRARIUM_CONFIG or the default path), then apply
 * environment overrides. Returns 0, or -1 with cfg->error set (unknown key, bad value or one
 * out of range, naming the section and key; unreadable file). */
int config_load(struct config *cfg, const char *path);

/* Print every key of CFG with its effective value, section by section, as an INI file with
 * each key's documentation, default and range in comments; secrets are masked. 0, or -1 when
 * writing to OUT failed. */
int config_dump(const struct config *cfg, FILE *out);

/* The supervisor's workers on [api] socket: [api] workers, or two per core when it is 0. */
int config_api_workers(const struct config *cfg);

/* The event streams workers hold at once without a publisher: [stream] max_held, or, when it
 * is 0, half of the workers that take them (at least one): the long-poll pool's
 * ([api] poll_workers) when [api] poll_socket is set, else config_api_workers. */
int config_stream_max_held(const struct config *cfg);

/* The settings section of backend NAME, or NULL when NAME has none. Borrowed. */
const struct remote_conf *config_remote(const struct config *cfg, const char *name);

/* Resolve the path config_load would read for PATH. Borrowed string. */
const char *config_path(const char *path);

#endif
