/* terrarium-reconciler: turns provisioning intents into sandboxes (DESIGN.md, Provisioning).
 * This first version reads the configuration and checks the database connection; the step
 * machine arrives with the reconciler issue. */
#include <stdio.h>
#include <string.h>

#include "../common/config.h"
#include "../common/log.h"
#include "../db/db.h"

static int usage(void)
{
	fprintf(stderr, "usage: terrarium-reconciler [-c CONFIG] --check\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	struct config cfg;
	struct db *db;
	enum db_status st;
	int i = 1;

	if (argc > 2 && !strcmp(argv[1], "-c")) {
		path = argv[2];
		i = 3;
	}
	if (i != argc - 1 || strcmp(argv[i], "--check"))
		return usage();
	if (config_load(&cfg, path)) {
		fprintf(stderr, "config: %s\n", cfg.error);
		return 1;
	}
	log_set_level(cfg.log_level);
	db = db_new(&cfg);
	if (!db)
		return 1;
	st = db_query(db, "SELECT 1");
	if (st)
		log_error("database %s: %s", db_status_name(st), db_error(db));
	else
		log_info("configuration %s read; database reachable; backend %s",
			 config_path(path), cfg.backend);
	db_free(db);
	return st ? 1 : 0;
}
