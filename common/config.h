/* Configuration shared by the API and the reconciler: one INI file (inih).
 *
 * Path: -c PATH, else $TERRARIUM_CONFIG, else "terrarium.ini" in the working directory.
 * Environment overrides: TERRARIUM_DB_PASSWORD replaces [database] password.
 *
 * [database] socket, host, port, user, password, name, migrations (the directory of numbered
 *            .sql files `terrarium-api migrate` applies; default CONFIG_DEFAULT_MIGRATIONS)
 * [api]      socket (a unix socket path, or HOST:PORT for FastCGI over TCP), socket_group,
 *            socket_mode (octal; unix sockets only), workers (0 = 2 x cores),
 *            max_requests (recycle a worker after this many requests), max_rss_mb (recycle a
 *            worker whose peak RSS passed this; default CONFIG_DEFAULT_MAX_RSS_MB), user (the account
 *            workers run as when the supervisor is started as root; default
 *            CONFIG_DEFAULT_API_USER), poll_socket (a second FastCGI socket with its own
 *            workers for the work queue's long polls; empty: none, polls share the pool),
 *            poll_workers (workers on poll_socket; default CONFIG_DEFAULT_POLL_WORKERS)
 * [sandbox]  backend (local, bwrap, srt, docker, opensandbox, e2b, cube, daytona), root (the
 *            directory holding one workspace per sandbox, for local, bwrap and srt), srt_dir
 *            (the directory npm ci installed sandbox-runtime into; default: sandbox-runtime/ of
 *            the checkout the reconciler binary was built in), path (PATH
 *            for package-manager commands; default: the reconciler's own), pass_env (the
 *            variables install and --exec commands inherit; default CONFIG_DEFAULT_PASS_ENV),
 *            pass_env_extra (more variables, added to pass_env), ca_bundle (a PEM file of CA
 *            certificates: mounted read-only into bwrap sandboxes and named by SSL_CERT_FILE,
 *            NODE_EXTRA_CA_CERTS, PIP_CERT, REQUESTS_CA_BUNDLE, CARGO_HTTP_CAINFO,
 *            GIT_SSL_CAINFO, and bind-mounted into docker containers; default
 *            CONFIG_DEFAULT_CA_BUNDLE when it exists, "" for none), cache_max_age_days
 *            (package cache entries unused this long are removed; 0 disables the cache)
 * [reconciler] user (the account the reconciler works as when started as root; default
 *            CONFIG_DEFAULT_RECONCILER_USER), lease_seconds, max_attempts, backoff_base_seconds, backoff_cap_seconds,
 *            command_timeout_seconds (per install command), output_max_bytes (captured
 *            per command), last_error_max_bytes
 * [opensandbox] [docker] [e2b] [cube] [daytona]  the HTTP backends' settings: url (base URL;
 *            docker: http://localhost with socket), socket (docker: the Engine's unix socket),
 *            api_key_file (a file holding the credential; never logged), image (sandbox image or
 *            template), timeout_seconds (per HTTP call)
 * [log]      level (debug, info, warn, error)
 */
#ifndef TERRARIUM_CONFIG_H
#define TERRARIUM_CONFIG_H

#define CONFIG_STR_MAX 512
#define CONFIG_DEFAULT_PATH "terrarium.ini"
#define CONFIG_DEFAULT_MIGRATIONS "sql"
#define CONFIG_DEFAULT_MAX_REQUESTS 10000
#define CONFIG_DEFAULT_MAX_RSS_MB   128 /* docs/limits.md: a worker past it is recycled */
#define CONFIG_MAX_RSS_MB_MAX	    65536
#define CONFIG_DEFAULT_API_USER "www-data"
#define CONFIG_MAX_WORKERS 256
/* The reconciler's account when started as root: the API's, which already reaches the run
 * directory (its sockets) and nothing secret in it (the config and key files are root's). */
#define CONFIG_DEFAULT_RECONCILER_USER CONFIG_DEFAULT_API_USER
/* a blocked long poll holds its worker (and a database connection) for up to 999 ms but no
 * CPU: polls get their own, larger pool (docs/work-queue.md) */
#define CONFIG_DEFAULT_POLL_WORKERS 16
#define CONFIG_DEFAULT_SANDBOX_ROOT "var/sandboxes"
#define CONFIG_DEFAULT_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define CONFIG_DEFAULT_PASS_ENV                                                              \
	"http_proxy,https_proxy,no_proxy,HTTP_PROXY,HTTPS_PROXY,NO_PROXY,NODE_EXTRA_CA_CERTS," \
	"SSL_CERT_FILE,SSL_CERT_DIR,REQUESTS_CA_BUNDLE,PIP_CERT,CURL_CA_BUNDLE"
#define CONFIG_DEFAULT_CACHE_MAX_AGE_DAYS 14
#define CONFIG_MAX_CACHE_AGE_DAYS 3650
#define CONFIG_DEFAULT_LEASE_S 600
#define CONFIG_DEFAULT_MAX_ATTEMPTS 5
#define CONFIG_DEFAULT_BACKOFF_BASE_S 10
#define CONFIG_DEFAULT_BACKOFF_CAP_S 900
#define CONFIG_DEFAULT_COMMAND_TIMEOUT_S 900
#define CONFIG_DEFAULT_OUTPUT_MAX 65536
#define CONFIG_DEFAULT_LAST_ERROR_MAX 4096

#define CONFIG_DEFAULT_HTTP_TIMEOUT_S 30
#define CONFIG_REMOTE_BACKENDS 5

/* Settings of one HTTP backend ([opensandbox], [docker], [e2b], [cube], [daytona]). */
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

	/* indexed like config_remote_names: opensandbox, docker, e2b, cube, daytona */
	struct remote_conf remote[CONFIG_REMOTE_BACKENDS];

	/* set by config_load: "section.key: what is wrong" on failure */
	char error[CONFIG_STR_MAX];
};

/* Fill defaults, then read PATH (NULL: $TERRARIUM_CONFIG or the default path), then apply
 * environment overrides. Returns 0, or -1 with cfg->error set (unknown key, bad value,
 * unreadable file, unknown backend). */
int config_load(struct config *cfg, const char *path);

/* The settings section of remote backend NAME, or NULL when NAME has none. Borrowed. */
const struct remote_conf *config_remote(const struct config *cfg, const char *name);

/* Resolve the path config_load would read for PATH. Borrowed string. */
const char *config_path(const char *path);

#endif
