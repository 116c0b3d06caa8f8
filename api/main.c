/* terrarium-api: the API server and its administrative commands.
 *
 *   terrarium-api [-c CONFIG] serve                      prefork supervisor on [api] socket
 *   terrarium-api [-c CONFIG] migrate [SQL_DIR]          apply the migrations in SQL_DIR
 *                                                       (default: [database] migrations)
 *   terrarium-api [-c CONFIG] key create WORKSPACE [ACCOUNT]   print a new key (shown once)
 *   terrarium-api [-c CONFIG] key revoke [KEY_ID]   the key on stdin (a workspace or an
 *                                                   environment key), or its id (apikey_...)
 *   terrarium-api [-c CONFIG] key create-environment ENV_ID   an environment key (shown once)
 *   terrarium-api [-c CONFIG] work status                each self_hosted environment's queue
 *   terrarium-api [-c CONFIG] workspace id WORKSPACE
 *   terrarium-api [-c CONFIG] vault check SESSION_ID     the credentials its turns present
 *                                                       and whether each opens (never the
 *                                                       secret; docs/vaults.md)
 *   terrarium-api [-c CONFIG] config dump                every key's effective value
 *
 * Started by a web server (GATEWAY_INTERFACE set, or a listening socket on fd 0) it serves:
 * FastCGI on fd 0 (spawn-fcgi, mod_fcgid), or one plain CGI request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/config.h"
#include "../common/log.h"
#include "../common/startup.h"
#include "../db/keys.h"
#include "../db/vaults.h"
#include "../db/work.h"
#include "../fcgi/serve.h"
#include "../handlers/dispatch.h"
#include "tail.h"

#define MAIN_DEFAULT_ACCOUNT "default"
#define MAIN_KEY_ID_PREFIX "apikey_"

/* The API as fcgi/serve.c runs it: the unknown-key guard set up before the workers fork, a
 * struct worker per process, api_handle per request (handlers/dispatch.h), and the event tailer
 * beside the workers (api/tail.c, docs/events.md). */
static const struct serve_app api_app = {
	.init = api_init,
	.worker_new = api_worker_new,
	.worker_free = api_worker_free,
	.handle = api_handle,
	.aux_enabled = tail_enabled,
	.aux_run = tail_run,
	.aux_name = "terrarium-tail",
};

/* Read the key to revoke from stdin (one line): a secret on the command line is visible to
 * every local user in ps and /proc. 0, or -1 when nothing usable was read. */
static int read_key(char *key, size_t sz)
{
	size_t n;

	if (!fgets(key, (int)sz, stdin))
		return -1;
	n = strcspn(key, "\r\n");
	if (!n || (key[n] == '\0' && n == sz - 1)) /* empty, or longer than any key */
		return -1;
	key[n] = '\0';
	return 0;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: terrarium-api [-c CONFIG] serve\n"
		"       terrarium-api [-c CONFIG] migrate [SQL_DIR]\n"
		"       terrarium-api [-c CONFIG] key create WORKSPACE [ACCOUNT]\n"
		"       terrarium-api [-c CONFIG] key revoke [KEY_ID]   (the key itself on stdin)\n"
		"       terrarium-api [-c CONFIG] key create-environment ENV_ID\n"
		"       terrarium-api [-c CONFIG] work status\n"
		"       terrarium-api [-c CONFIG] workspace id WORKSPACE\n"
		"       terrarium-api [-c CONFIG] vault check SESSION_ID\n"
		"       terrarium-api [-c CONFIG] config dump\n");
	return 2;
}

/* `work status`: one line per self_hosted environment's queue. */
static enum db_status work_status(struct db *db)
{
	struct db_rows rows;
	enum db_status st = workdb_queues(db, &rows);

	if (st)
		return st;
	printf("%-28s %-20s %6s %8s %-28s %7s %8s\n", "environment", "workspace", "depth",
	       "pending", "oldest_queued_at", "running", "workers");
	for (unsigned r = 0; r < rows.nrows; r++)
		printf("%-28s %-20s %6s %8s %-28s %7s %8s\n", db_cell(&rows, r, 0),
		       db_cell(&rows, r, 1), db_cell(&rows, r, 2), db_cell(&rows, r, 3),
		       db_cell(&rows, r, 4) ? db_cell(&rows, r, 4) : "-", db_cell(&rows, r, 5),
		       db_cell(&rows, r, 6));
	db_rows_free(&rows);
	return DB_OK;
}

/* `vault check SESSION_ID`: the key [vault] key_file names (its id, or why it does not load),
 * then one line per credential the session's turns would present (vaultdb_session_secrets):
 * vault, credential, URL, and "ok" with the secret's length or why it does not open. The
 * secret itself is never printed. *BAD = 1 when the key or a credential does not open. */
static enum db_status vault_check(struct db *db, const struct config *cfg, const char *session_id,
				  int *bad)
{
	struct vault_key key;
	struct vault_secrets s;
	enum db_status st;

	*bad = vault_key_load(&key, cfg->vault_key_file) != 0;
	if (*bad)
		fprintf(stderr, "%s\n", key.error);
	else
		fprintf(stderr, "vault key %s: id %s\n", key.path, key.id);
	st = vaultdb_session_secrets(db, &key, session_id, &s);
	for (size_t i = 0; !st && i < s.n; i++) {
		printf("%s %s %s ", s.v[i].vault_id, s.v[i].credential_id, s.v[i].mcp_server_url);
		if (s.v[i].token)
			printf("ok (%zu bytes)\n", s.v[i].token_len);
		else
			printf("does not open: %s\n", s.v[i].error);
		*bad |= !s.v[i].token;
	}
	vault_secrets_free(&s);
	vault_key_wipe(&key);
	return st;
}

static int admin(const struct config *cfg, int argc, char **argv)
{
	struct db *db = db_new(cfg);
	enum db_status st = DB_FATAL;
	int ret = 1, found = 0;

	if (!db)
		return 1;
	if (!strcmp(argv[0], "migrate")) {
		st = migrate_dir(db, argc > 1 ? argv[1] : cfg->db_migrations);
	} else if (!strcmp(argv[0], "key") && argc >= 3 && !strcmp(argv[1], "create")) {
		char key[sizeof(KEY_PREFIX) + KEY_RANDOM_LEN];
		const char *account = argc > 3 ? argv[3] : MAIN_DEFAULT_ACCOUNT;
		if (strlen(argv[2]) > WORKSPACE_NAME_MAX || strlen(account) > ACCOUNT_NAME_MAX) {
			fprintf(stderr, "workspace and account names are at most %d characters\n",
				WORKSPACE_NAME_MAX);
			goto out;
		}
		char key_id[AUTH_ID_MAX];
		st = keys_create(db, argv[2], account, key, sizeof(key), key_id, sizeof(key_id));
		if (!st) {
			printf("%s\n", key);
			fprintf(stderr, "key id: %s (for key revoke)\n", key_id);
		}
	} else if (!strcmp(argv[0], "key") && argc == 3 && !strcmp(argv[1], "create-environment")) {
		char key[sizeof(ENVKEY_PREFIX) + KEY_RANDOM_LEN];
		enum envkey_status outcome = ENVKEY_OK;

		st = envkeys_create(db, argv[2], key, sizeof(key), &outcome);
		if (!st && outcome != ENVKEY_OK) {
			fprintf(stderr,
				outcome == ENVKEY_NO_ENVIRONMENT
					? "no environment %.64s\n"
					: "environment %.64s is not self_hosted: only self_hosted "
					  "environments have a work queue\n",
				argv[2]);
			goto out;
		}
		if (!st)
			printf("%s\n", key);
	} else if (!strcmp(argv[0], "key") && (argc == 2 || argc == 3) &&
		   !strcmp(argv[1], "revoke")) {
		char key[KEY_MAX_LEN + 2];
		if (argc == 3 && strncmp(argv[2], MAIN_KEY_ID_PREFIX, strlen(MAIN_KEY_ID_PREFIX))) {
			fprintf(stderr,
				"key revoke takes a key id (%s...), or the key itself on stdin;"
				" never the key as an argument\n",
				MAIN_KEY_ID_PREFIX);
			ret = 2;
			goto out;
		}
		if (argc == 2 && read_key(key, sizeof(key))) {
			fprintf(stderr, "key revoke: no key on stdin\n");
			goto out;
		}
		st = argc == 3 ? keys_revoke_id(db, argv[2], &found) : keys_revoke(db, key, &found);
		if (!st && !found && argc == 2) /* not a workspace key: an environment key? */
			st = envkeys_revoke(db, key, &found);
		if (!st && !found) {
			fprintf(stderr, "no active key matches\n");
			goto out;
		}
	} else if (!strcmp(argv[0], "work") && argc == 2 && !strcmp(argv[1], "status")) {
		st = work_status(db);
	} else if (!strcmp(argv[0], "vault") && argc == 3 && !strcmp(argv[1], "check")) {
		st = vault_check(db, cfg, argv[2], &found);
		if (!st && found) {
			ret = 1;
			goto out;
		}
	} else if (!strcmp(argv[0], "workspace") && argc == 3 && !strcmp(argv[1], "id")) {
		char id[AUTH_ID_MAX];
		st = workspace_lookup(db, argv[2], id, sizeof(id), &found);
		if (!st && !found) {
			fprintf(stderr, "no workspace named %s\n", argv[2]);
			goto out;
		}
		if (!st)
			printf("%s\n", id);
	} else {
		ret = usage();
		goto out;
	}
	if (st)
		fprintf(stderr, "%s: %s\n", db_status_name(st), db_error(db));
	ret = st ? 1 : 0;
out:
	db_free(db);
	return ret;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	struct config cfg;
	int i = 1;

	if (argc > 2 && !strcmp(argv[1], "-c")) {
		path = argv[2];
		i = 3;
	}
	if (i >= argc) {
		int mode = serve_started_by_server();
		if (!mode)
			return usage();
		if (startup_config(&cfg, path))
			return 1;
		return mode == SERVE_FASTCGI ? serve_fd0(&cfg, &api_app)
					     : serve_cgi(&cfg, &api_app);
	}
	if (startup_config(&cfg, path))
		return 1;
	if (!strcmp(argv[i], "serve"))
		return serve_supervisor(&cfg, &api_app);
	if (!strcmp(argv[i], "config") && argc - i == 2 && !strcmp(argv[i + 1], "dump"))
		return config_dump(&cfg, stdout) ? 1 : 0;
	return admin(&cfg, argc - i, argv + i);
}
