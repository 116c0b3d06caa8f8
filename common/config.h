/* Configuration shared by the API and the reconciler: one INI file (inih).
 *
 * Path: -c PATH, else $TERRARIUM_CONFIG, else "terrarium.ini" in the working directory.
 * Environment overrides: TERRARIUM_DB_PASSWORD replaces [database] password.
 *
 * [database] socket, host, port, user, password, name
 * [api]      socket, socket_group, socket_mode (octal), workers (0 = 2 x cores),
 *            max_requests (recycle a worker after this many requests)
 * [sandbox]  backend (local, bwrap, docker, opensandbox, e2b, cube, daytona)
 * [log]      level (debug, info, warn, error)
 */
#ifndef TERRARIUM_CONFIG_H
#define TERRARIUM_CONFIG_H

#define CONFIG_STR_MAX 512
#define CONFIG_DEFAULT_PATH "terrarium.ini"
#define CONFIG_DEFAULT_MAX_REQUESTS 10000
#define CONFIG_MAX_WORKERS 256

struct config {
	char db_socket[CONFIG_STR_MAX];
	char db_host[CONFIG_STR_MAX];
	unsigned db_port;
	char db_user[CONFIG_STR_MAX];
	char db_password[CONFIG_STR_MAX];
	char db_name[CONFIG_STR_MAX];

	char api_socket[CONFIG_STR_MAX];
	char api_socket_group[CONFIG_STR_MAX];
	unsigned api_socket_mode;
	int api_workers;
	long api_max_requests;

	char backend[CONFIG_STR_MAX];
	int log_level;

	/* set by config_load: "section.key: what is wrong" on failure */
	char error[CONFIG_STR_MAX];
};

/* Fill defaults, then read PATH (NULL: $TERRARIUM_CONFIG or the default path), then apply
 * environment overrides. Returns 0, or -1 with cfg->error set (unknown key, bad value,
 * unreadable file, unknown backend). */
int config_load(struct config *cfg, const char *path);

/* Resolve the path config_load would read for PATH. Borrowed string. */
const char *config_path(const char *path);

#endif
