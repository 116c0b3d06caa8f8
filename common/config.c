#include "config.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONFIG_Q_(x) #x
#define CONFIG_Q(x) CONFIG_Q_(x) /* a numeric constant spelled as the INI file would */

#define CONFIG_MASK "********"
#define CONFIG_DUMP_WIDTH 96 /* comment lines of config dump (inih reads lines of < 200 bytes) */

#define F(field) offsetof(struct config, field), sizeof(((struct config *)0)->field)
#define R(field) offsetof(struct remote_conf, field), sizeof(((struct remote_conf *)0)->field)
/* Rows of keys[] by kind: a string (default DEF, FLAGS); a number of TYPE in MIN..MAX whose
 * default DEF is a constant, spelled as the INI file would; a string of every HTTP backend's own
 * section (struct remote_conf), empty by default. */
#define KEY_STR(section, name, field, def, flags, doc)                                             \
	{                                                                                          \
		section, name, CONFIG_STRING, F(field), 0, 0, def, flags, doc                      \
	}
#define KEY_NUM(section, name, type, field, min, max, def, doc)                                    \
	{                                                                                          \
		section, name, type, F(field), min, max, CONFIG_Q(def), 0, doc                     \
	}
#define REMOTE_STR(name, field, doc)                                                               \
	{                                                                                          \
		NULL, name, CONFIG_STRING, R(field), 0, 0, "", 0, doc                              \
	}

static const char *const levels[] = { "debug", "info", "warn", "error" };
#define LEVEL_COUNT (sizeof(levels) / sizeof(levels[0]))

/* Every key (docs/config.md lists them in this order). */
static const struct config_key keys[] = {
	KEY_STR("database", "socket", db_socket, "", 0,
		"MariaDB's unix socket; empty: connect to host and port"),
	KEY_STR("database", "host", db_host, "localhost", 0, "MariaDB's host when socket is empty"),
	KEY_NUM("database", "port", CONFIG_UINT, db_port, 0, 65535, 0,
		"MariaDB's TCP port; 0: the client library's default (3306)"),
	KEY_STR("database", "user", db_user, "terrarium", 0, "the database account"),
	KEY_STR("database", "password", db_password, "", CONFIG_SECRET,
		"the database account's password; TERRARIUM_DB_PASSWORD overrides it"),
	KEY_STR("database", "name", db_name, "terrarium", 0, "the database (schema) name"),
	KEY_STR("database", "migrations", db_migrations, CONFIG_DEFAULT_MIGRATIONS, 0,
		"the directory of numbered .sql files `terrarium-api migrate` applies"),

	KEY_STR("api", "socket", api_socket, "var/api.sock", 0,
		"the FastCGI socket: a unix socket path, or HOST:PORT for FastCGI over TCP"),
	KEY_STR("api", "socket_group", api_socket_group, "", 0,
		"the group given the unix socket (the web server's); empty: the process's own"),
	KEY_NUM("api", "socket_mode", CONFIG_MODE, api_socket_mode, 0, 0777,
		CONFIG_DEFAULT_SOCKET_MODE, "the unix socket's mode (octal)"),
	KEY_NUM("api", "workers", CONFIG_INT, api_workers, 0, CONFIG_MAX_WORKERS, 0,
		"prefork workers on socket; 0: two per core"),
	KEY_NUM("api", "max_requests", CONFIG_LONG, api_max_requests, 0, CONFIG_MAX_MAX_REQUESTS,
		CONFIG_DEFAULT_MAX_REQUESTS,
		"a worker is recycled after this many requests; 0: never"),
	KEY_NUM("api", "max_rss_mb", CONFIG_LONG, api_max_rss_mb, 1, CONFIG_MAX_RSS_MB_MAX,
		CONFIG_DEFAULT_MAX_RSS_MB,
		"a worker whose peak RSS passed this many MiB is recycled after its request"),
	KEY_STR("api", "user", api_user, CONFIG_DEFAULT_API_USER, 0,
		"the account workers run as when the supervisor is started as root"),
	KEY_STR("api", "poll_socket", api_poll_socket, "", 0,
		"a second FastCGI socket with its own workers for the work queue's long polls; "
		"empty: none, polls share socket's workers"),
	KEY_NUM("api", "poll_workers", CONFIG_INT, api_poll_workers, 1, CONFIG_MAX_WORKERS,
		CONFIG_DEFAULT_POLL_WORKERS, "workers on poll_socket"),
	KEY_NUM("api", "poll_recheck_ms", CONFIG_LONG, api_poll_recheck_ms, 0,
		CONFIG_POLL_RECHECK_MS_MAX, 0,
		"a blocked long poll also reads the queue again after this many ms, for queueings "
		"its database server cannot wake it from (a Galera cluster: docs/cluster.md); 0: "
		"only when woken"),

	KEY_STR("stream", "publish_socket", stream_publish_socket, "", 0,
		"the unix socket of nginx's event publisher (nchan) the supervisor's tailer "
		"publishes new events to; empty: no tailer, streams are served by workers "
		"(hold_seconds)"),
	KEY_NUM("stream", "tail_ms", CONFIG_LONG, stream_tail_ms, 1, CONFIG_TAIL_MS_MAX,
		CONFIG_DEFAULT_TAIL_MS,
		"how often the tailer reads the events appended since its last read"),
	KEY_NUM("stream", "hold_seconds", CONFIG_LONG, stream_hold_s, 1, CONFIG_STREAM_HOLD_S_MAX,
		CONFIG_DEFAULT_STREAM_HOLD_S,
		"without a publisher, a worker holds a stream this long before it ends it (the "
		"client reconnects)"),
	KEY_NUM("stream", "poll_ms", CONFIG_LONG, stream_poll_ms, 1, CONFIG_STREAM_POLL_MS_MAX,
		CONFIG_DEFAULT_STREAM_POLL_MS,
		"without a publisher, how often a held stream reads its session's new events"),
	KEY_NUM("stream", "ping_seconds", CONFIG_LONG, stream_ping_s, 1, CONFIG_STREAM_PING_S_MAX,
		CONFIG_DEFAULT_STREAM_PING_S,
		"without a publisher, a held stream sends a keep-alive comment this often (under "
		"Apache and lighttpd, a client that left frees its process at the next one)"),
	KEY_NUM("stream", "max_held", CONFIG_INT, stream_max_held, 0, CONFIG_MAX_WORKERS, 0,
		"without a publisher, the streams held at once by the supervisor's workers "
		"(beyond: 503); 0: half of those that take them (the long-poll pool's when `[api] "
		"poll_socket` is set)"),

	{ "sandbox", "backend", CONFIG_BACKEND, F(backend), 0, 0, "local", 0,
	  "the sandbox backend: a name in the backend table (common/backend.c)" },
	KEY_STR("sandbox", "root", sandbox_root, CONFIG_DEFAULT_SANDBOX_ROOT, 0,
		"the directory holding one workspace per sandbox (local, bwrap, srt)"),
	KEY_STR("sandbox", "srt_dir", srt_dir, "", 0,
		"the directory npm ci installed sandbox-runtime into; empty: sandbox-runtime/ of "
		"the checkout the reconciler binary was built in"),
	KEY_STR("sandbox", "path", sandbox_path, "", 0,
		"PATH for package-manager commands; empty: the reconciler's own"),
	KEY_STR("sandbox", "pass_env", sandbox_pass_env, CONFIG_DEFAULT_PASS_ENV, 0,
		"the variables (comma-separated) install and --exec commands inherit"),
	KEY_STR("sandbox", "pass_env_extra", sandbox_pass_env_extra, "", 0,
		"more variables, added to pass_env"),
	KEY_STR("sandbox", "ca_bundle", sandbox_ca_bundle, CONFIG_DEFAULT_CA_BUNDLE,
		CONFIG_ABSOLUTE | CONFIG_IF_EXISTS,
		"a PEM file of CA certificates, mounted read-only into bwrap sandboxes, "
		"bind-mounted into docker containers and named by SSL_CERT_FILE, "
		"NODE_EXTRA_CA_CERTS, PIP_CERT, REQUESTS_CA_BUNDLE, CARGO_HTTP_CAINFO and "
		"GIT_SSL_CAINFO; the default applies when that file exists; empty: none"),
	KEY_NUM("sandbox", "cache_max_age_days", CONFIG_LONG, cache_max_age_days, 0,
		CONFIG_MAX_CACHE_AGE_DAYS, CONFIG_DEFAULT_CACHE_MAX_AGE_DAYS,
		"package cache entries unused this long are removed; 0 disables the cache"),

	KEY_STR("reconciler", "user", reconciler_user, CONFIG_DEFAULT_RECONCILER_USER,
		CONFIG_NONEMPTY, "the account the reconciler works as when started as root"),
	KEY_NUM("reconciler", "lease_seconds", CONFIG_LONG, lease_s, 1, CONFIG_MAX_LEASE_S,
		CONFIG_DEFAULT_LEASE_S,
		"how long a claim on an intent lasts unless renewed; renewed every third of it (at "
		"least every second) while a backend works on the intent, on every backend "
		"(docs/sandbox.md)"),
	KEY_NUM("reconciler", "max_attempts", CONFIG_LONG, max_attempts, 1, CONFIG_MAX_MAX_ATTEMPTS,
		CONFIG_DEFAULT_MAX_ATTEMPTS,
		"failed attempts after which an intent is terminated until --retry"),
	KEY_NUM("reconciler", "backoff_base_seconds", CONFIG_LONG, backoff_base_s, 0,
		CONFIG_MAX_BACKOFF_BASE_S, CONFIG_DEFAULT_BACKOFF_BASE_S,
		"the first retry's delay, doubled on every attempt"),
	KEY_NUM("reconciler", "backoff_cap_seconds", CONFIG_LONG, backoff_cap_s, 0,
		CONFIG_MAX_BACKOFF_CAP_S, CONFIG_DEFAULT_BACKOFF_CAP_S, "the longest retry delay"),
	KEY_NUM("reconciler", "command_timeout_seconds", CONFIG_LONG, command_timeout_s, 1,
		CONFIG_MAX_COMMAND_TIMEOUT_S, CONFIG_DEFAULT_COMMAND_TIMEOUT_S,
		"the time limit of one install command"),
	KEY_NUM("reconciler", "output_max_bytes", CONFIG_LONG, output_max, CONFIG_MIN_OUTPUT_MAX,
		CONFIG_MAX_OUTPUT_MAX, CONFIG_DEFAULT_OUTPUT_MAX, "output captured per command"),
	KEY_NUM("reconciler", "last_error_max_bytes", CONFIG_LONG, last_error_max,
		CONFIG_MIN_LAST_ERROR_MAX, CONFIG_MAX_LAST_ERROR_MAX, CONFIG_DEFAULT_LAST_ERROR_MAX,
		"the longest last_error kept on an intent"),

	KEY_STR("model", "base_url", model_base_url, CONFIG_DEFAULT_MODEL_URL, CONFIG_NONEMPTY,
		"the Messages API the runner calls ({base_url}/v1/messages)"),
	KEY_STR("model", "api_key_file", model_api_key_file, "", 0,
		"a file holding the model API key (mode 0600); empty: the ANTHROPIC_API_KEY "
		"variable"),
	KEY_NUM("model", "idle_timeout_seconds", CONFIG_LONG, model_idle_timeout_s, 1,
		CONFIG_MODEL_IDLE_S_MAX, CONFIG_DEFAULT_MODEL_IDLE_S,
		"a model stream silent this long is aborted and the request retried"),
	KEY_NUM("model", "max_retries", CONFIG_LONG, model_max_retries, 0, CONFIG_MODEL_RETRIES_MAX,
		CONFIG_DEFAULT_MODEL_RETRIES,
		"retries of a model request that failed transiently (429, 529, 5xx, a timeout) "
		"before the turn ends with retries_exhausted"),
	KEY_NUM("model", "backoff_ms", CONFIG_LONG, model_backoff_ms, 0,
		CONFIG_MODEL_BACKOFF_MS_MAX, CONFIG_DEFAULT_MODEL_BACKOFF_MS,
		"the first retry's delay, doubled on every retry (a retry-after answer wins)"),
	KEY_NUM("model", "backoff_cap_ms", CONFIG_LONG, model_backoff_cap_ms, 0,
		CONFIG_MODEL_BACKOFF_MS_MAX, CONFIG_DEFAULT_MODEL_BACKOFF_CAP_MS,
		"the longest retry delay"),
	KEY_NUM("model", "max_tokens", CONFIG_LONG, model_max_tokens, 1,
		CONFIG_MODEL_MAX_TOKENS_MAX, CONFIG_DEFAULT_MODEL_MAX_TOKENS,
		"max_tokens of every model request"),

	KEY_NUM("runner", "max_turns", CONFIG_INT, runner_max_turns, 1, CONFIG_MAX_TURNS_MAX,
		CONFIG_DEFAULT_MAX_TURNS, "turns one runner runs at once"),
	KEY_NUM("runner", "lease_seconds", CONFIG_LONG, runner_lease_s, 1, CONFIG_MAX_LEASE_S,
		CONFIG_DEFAULT_RUNNER_LEASE_S,
		"how long a runner's claim on a turn lasts unless renewed (every third of it): a "
		"turn whose runner died is taken up again after it"),
	KEY_NUM("runner", "poll_ms", CONFIG_LONG, runner_poll_ms, 1, CONFIG_RUNNER_POLL_MS_MAX,
		CONFIG_DEFAULT_RUNNER_POLL_MS, "how often an idle runner looks for turns to take"),
	KEY_NUM("runner", "tool_result_timeout_seconds", CONFIG_LONG, runner_tool_result_timeout_s,
		1, CONFIG_MAX_LEASE_S, CONFIG_DEFAULT_TOOL_RESULT_TIMEOUT_S,
		"a self_hosted session waiting longer than this for a tool's result ends its turn "
		"with an error result to the model"),
	KEY_NUM("runner", "max_round_trips", CONFIG_LONG, runner_max_round_trips, 1,
		CONFIG_MAX_ROUND_TRIPS_MAX, CONFIG_DEFAULT_MAX_ROUND_TRIPS,
		"model requests one turn makes at most before it ends "
		"(tool_use_limit_reached_error)"),
	KEY_NUM("runner", "mcp_call_timeout_seconds", CONFIG_LONG, runner_mcp_call_timeout_s, 1,
		CONFIG_MCP_CALL_TIMEOUT_S_MAX, CONFIG_DEFAULT_MCP_CALL_TIMEOUT_S,
		"the time limit of one MCP tool call: a server that has not answered by then fails "
		"the call with a timeout (the model gets an error result)"),
	KEY_NUM("runner", "host_tools", CONFIG_INT, runner_host_tools, 0, 1, 0,
		"1 lets the model's built-in tools run on a backend without isolation (local: host "
		"processes of the runner's account, which read what it can read: for tests and "
		"development only); 0 answers each with an error result naming this setting"),
	KEY_NUM("runner", "mcp_local_addresses", CONFIG_INT, runner_mcp_local_addresses, 0, 1, 0,
		"1 lets an agent's MCP server be at an address of this machine (loopback, "
		"link-local, its interfaces': a server beside the runner, for tests and "
		"development); 0 refuses such a server (mcp_connection_failed_error), so that an "
		"agent's URL cannot reach the runner's host"),

	KEY_STR("vault", "key_file", vault_key_file, "", CONFIG_ABSOLUTE,
		"the vault key: a file of exactly 32 random bytes, readable by the API and the "
		"runner only, that seals the secrets of vault credentials (docs/vaults.md); empty: "
		"credentials are refused"),

	{ "log", "level", CONFIG_LEVEL, F(log_level), 0, 0, CONFIG_DEFAULT_LOG_LEVEL, 0,
	  "the least severe message logged" },

	REMOTE_STR("url", url, "the service's base URL (docker with socket: http://localhost)"),
	REMOTE_STR("socket", socket,
		   "a unix socket to reach the service through (docker: the Engine's)"),
	REMOTE_STR("api_key_file", api_key_file,
		   "a file holding the service's credential (never logged)"),
	REMOTE_STR("image", image, "the sandbox image or template"),
	{ NULL, "timeout_seconds", CONFIG_LONG, R(timeout_s), 1, CONFIG_MAX_HTTP_TIMEOUT_S,
	  CONFIG_Q(CONFIG_DEFAULT_HTTP_TIMEOUT_S), 0, "the time limit of one HTTP call" },

};
#define KEY_COUNT (sizeof(keys) / sizeof(keys[0]))

const struct config_key *config_keys(size_t *n)
{
	*n = KEY_COUNT;
	return keys;
}

static bool http_section(const char *section)
{
	const struct backend_caps *b = backend_lookup(section);
	return b && b->http;
}

static int parse_long(const char *value, int base, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(value, &end, base);
	if (errno || end == value || *end)
		return -1;
	*out = v;
	return 0;
}

/* The values key K accepts when it takes a name ("a, b, c)"), into BUF. */
static void list_choices(const struct config_key *k, char *buf, size_t sz)
{
	size_t n = k->type == CONFIG_LEVEL ? LEVEL_COUNT : BACKEND_TABLE_LEN, len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && len < sz; i++) {
		const char *name = k->type == CONFIG_LEVEL ? levels[i] : backend_at(i)->name;
		int w = snprintf(buf + len, sz - len, "%s%s", name, i + 1 < n ? ", " : ")");
		if (w < 0)
			return;
		len += (size_t)w;
	}
}

/* Store VALUE into key K of the struct at BASE. 0, or -1 with ERR set ("SECTION.KEY: ..."). */
static int set_value(const struct config_key *k, const char *section, void *base, const char *value,
		     char *err, size_t errsz)
{
	char *field = (char *)base + k->offset;
	long v = 0;

	switch (k->type) {
	case CONFIG_STRING:
	case CONFIG_BACKEND:
		if (strlen(value) >= k->size) {
			snprintf(err, errsz, "%s.%s: longer than %zu bytes", section, k->name,
				 k->size - 1);
			return -1;
		}
		if ((k->flags & CONFIG_NONEMPTY) && !value[0]) {
			snprintf(err, errsz, "%s.%s: must not be empty", section, k->name);
			return -1;
		}
		if ((k->flags & CONFIG_ABSOLUTE) && value[0] && value[0] != '/') {
			snprintf(err, errsz, "%s.%s: an absolute path or empty", section, k->name);
			return -1;
		}
		if (k->type == CONFIG_BACKEND && !backend_lookup(value)) {
			snprintf(err, errsz, "%s.%s: unknown backend '%.64s' (one of: ", section,
				 k->name, value);
			list_choices(k, err + strlen(err), errsz - strlen(err));
			return -1;
		}
		memset(field, 0, k->size);
		memcpy(field, value, strlen(value));
		return 0;
	case CONFIG_LEVEL:
		for (size_t i = 0; i < LEVEL_COUNT; i++)
			if (!strcmp(levels[i], value)) {
				*(int *)field = (int)i;
				return 0;
			}
		snprintf(err, errsz, "%s.%s: invalid value (one of: ", section, k->name);
		list_choices(k, err + strlen(err), errsz - strlen(err));
		return -1;
	case CONFIG_INT:
	case CONFIG_UINT:
	case CONFIG_MODE:
	case CONFIG_LONG:
		if (parse_long(value, k->type == CONFIG_MODE ? 8 : 10, &v)) {
			snprintf(err, errsz, "%s.%s: invalid value (%s number)", section, k->name,
				 k->type == CONFIG_MODE ? "an octal" : "a");
			return -1;
		}
		if (v < k->min || v > k->max) {
			snprintf(err, errsz,
				 k->type == CONFIG_MODE ? "%s.%s: out of range %lo..%lo"
							: "%s.%s: out of range %ld..%ld",
				 section, k->name, k->min, k->max);
			return -1;
		}
		if (k->type == CONFIG_INT)
			*(int *)field = (int)v;
		else if (k->type == CONFIG_LONG)
			*(long *)field = v;
		else
			*(unsigned *)field = (unsigned)v;
		return 0;
	}
	snprintf(err, errsz, "%s.%s: invalid value", section, k->name);
	return -1;
}

/* The struct key K of SECTION lives in: CFG itself or SECTION's remote_conf. */
static void *key_base(const struct config *cfg, const struct config_key *k, const char *section)
{
	return k->section ? (void *)cfg : (void *)&cfg->remote[backend_index(section)];
}

/* The row of SECTION.NAME, or NULL. */
static const struct config_key *find_key(const char *section, const char *name)
{
	bool http = http_section(section);

	for (size_t i = 0; i < KEY_COUNT; i++)
		if (!strcmp(keys[i].name, name) &&
		    (keys[i].section ? !strcmp(keys[i].section, section) : http))
			return &keys[i];
	return NULL;
}

const struct remote_conf *config_remote(const struct config *cfg, const char *name)
{
	return http_section(name) ? &cfg->remote[backend_index(name)] : NULL;
}

/* inih callback: returns nonzero to continue; an unknown key or bad value stops the parse (the
 * first error is kept: ini_parse reports its line). */
static int on_entry(void *user, const char *section, const char *name, const char *value)
{
	struct config *cfg = user;
	const struct config_key *k = find_key(section, name);
	char err[CONFIG_STR_MAX];

	if (!k)
		snprintf(err, sizeof(err), "%s.%s: unknown key", section, name);
	else if (!set_value(k, section, key_base(cfg, k, section), value, err, sizeof(err)))
		return 1;
	if (!cfg->error[0])
		memcpy(cfg->error, err, sizeof(cfg->error));
	return 0;
}

/* Apply every default (through the parser, so a default obeys its own bounds). 0 or -1. */
static int set_defaults(struct config *cfg)
{
	for (size_t i = 0; i < KEY_COUNT; i++) {
		const struct config_key *k = &keys[i];

		if ((k->flags & CONFIG_IF_EXISTS) && access(k->def, R_OK))
			continue;
		for (size_t b = 0; b < BACKEND_TABLE_LEN; b++) {
			const char *section = k->section ? k->section : backend_at(b)->name;

			if (!k->section && !backend_at(b)->http)
				continue;
			if (set_value(k, section, key_base(cfg, k, section), k->def, cfg->error,
				      sizeof(cfg->error)))
				return -1;
			if (k->section)
				break;
		}
	}
	return 0;
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
	if (set_defaults(cfg))
		return -1;
	path = config_path(path);
	rc = ini_parse(path, on_entry, cfg);
	if (rc < 0) {
		snprintf(cfg->error, sizeof(cfg->error), "%s: cannot read: %s", path,
			 strerror(errno));
		return -1;
	}
	if (rc > 0) {
		if (!cfg->error[0])
			snprintf(cfg->error, sizeof(cfg->error), "%s: syntax error on line %d",
				 path, rc);
		return -1;
	}
	env = getenv("TERRARIUM_DB_PASSWORD");
	if (env && strlen(env) >= sizeof(cfg->db_password)) {
		snprintf(cfg->error, sizeof(cfg->error), "TERRARIUM_DB_PASSWORD: too long");
		return -1;
	}
	if (env)
		strcpy(cfg->db_password, env);
	return 0;
}

/* KEY's value in the struct at BASE, as the INI file would spell it, into BUF. */
static void format_value(const struct config_key *k, const void *base, char *buf, size_t sz)
{
	const char *field = (const char *)base + k->offset;

	switch (k->type) {
	case CONFIG_STRING:
	case CONFIG_BACKEND:
		snprintf(buf, sz, "%s",
			 (k->flags & CONFIG_SECRET) && field[0] ? CONFIG_MASK : field);
		return;
	case CONFIG_LEVEL: {
		int level = *(const int *)field;
		snprintf(buf, sz, "%s",
			 level >= 0 && (size_t)level < LEVEL_COUNT ? levels[level] : "?");
		return;
	}
	case CONFIG_INT:
		snprintf(buf, sz, "%d", *(const int *)field);
		return;
	case CONFIG_UINT:
		snprintf(buf, sz, "%u", *(const unsigned *)field);
		return;
	case CONFIG_MODE:
		snprintf(buf, sz, "%04o", *(const unsigned *)field);
		return;
	case CONFIG_LONG:
		snprintf(buf, sz, "%ld", *(const long *)field);
		return;
	}
	snprintf(buf, sz, "?");
}

/* TEXT as "; " comment lines of at most CONFIG_DUMP_WIDTH bytes, broken at spaces. */
static void dump_comment(const char *text, FILE *out)
{
	while (*text) {
		size_t n = strlen(text);

		if (n > CONFIG_DUMP_WIDTH) {
			n = CONFIG_DUMP_WIDTH;
			while (n > 0 && text[n] != ' ')
				n--;
			if (!n)
				n = strcspn(text, " ");
		}
		fprintf(out, "; %.*s\n", (int)n, text);
		text += n;
		text += strspn(text, " ");
	}
}

static void dump_key(const struct config_key *k, const void *base, FILE *out)
{
	char value[CONFIG_STR_MAX * 4];

	format_value(k, base, value, sizeof(value));
	dump_comment(k->doc, out);
	fprintf(out, "; default: %s%s",
		(k->flags & CONFIG_SECRET) || !k->def[0] ? "(empty)" : k->def,
		(k->flags & CONFIG_IF_EXISTS) ? " (when it exists)" : "");
	if (k->type == CONFIG_MODE)
		fprintf(out, ", %04lo..%04lo", k->min, k->max);
	else if (k->type == CONFIG_LEVEL || k->type == CONFIG_BACKEND) {
		char choices[CONFIG_STR_MAX];
		list_choices(k, choices, sizeof(choices));
		fprintf(out, "; one of: %.*s", (int)strlen(choices) - 1, choices);
	} else if (k->type != CONFIG_STRING)
		fprintf(out, ", %ld..%ld", k->min, k->max);
	fprintf(out, "\n%s = %s\n", k->name, value);
}

int config_dump(const struct config *cfg, FILE *out)
{
	const char *section = NULL;

	fprintf(out, "; the effective configuration: every key, defaults filled in, secrets "
		     "masked\n");
	for (size_t i = 0; i < KEY_COUNT; i++) {
		const struct config_key *k = &keys[i];

		if (!k->section)
			continue;
		if (!section || strcmp(section, k->section))
			fprintf(out, "\n[%s]\n", k->section);
		section = k->section;
		dump_key(k, cfg, out);
	}
	for (size_t b = 0; b < BACKEND_TABLE_LEN; b++) {
		if (!backend_at(b)->http)
			continue;
		fprintf(out, "\n[%s]\n", backend_at(b)->name);
		for (size_t i = 0; i < KEY_COUNT; i++)
			if (!keys[i].section)
				dump_key(&keys[i], &cfg->remote[b], out);
	}
	return fflush(out) || ferror(out) ? -1 : 0;
}

int config_api_workers(const struct config *cfg)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (cfg->api_workers > 0)
		return cfg->api_workers;
	if (cores < 1)
		cores = 1;
	return cores * 2 > CONFIG_MAX_WORKERS ? CONFIG_MAX_WORKERS : (int)cores * 2;
}

int config_stream_max_held(const struct config *cfg)
{
	/* the workers that take the streams: the long-poll pool when there is one */
	int half = (cfg->api_poll_socket[0] ? cfg->api_poll_workers : config_api_workers(cfg)) / 2;

	if (cfg->stream_max_held > 0)
		return cfg->stream_max_held;
	return half ? half : 1;
}
