/* Migration runner: sql/NNN_name.sql files applied in name order, each recorded in
 * schema_migrations. Statements end with ';' at the end of a line. DDL commits implicitly in
 * MariaDB, so a failed migration stops the run and is reported; it is not recorded. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"

#define MIGRATE_MAX_FILES 512
#define MIGRATE_MAX_FILE_BYTES (1024 * 1024)
#define MIGRATE_LOCK_TIMEOUT_S 60

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || n > MIGRATE_MAX_FILE_BYTES ||
	    fseek(f, 0, SEEK_SET))
		goto out;
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		goto out;
	}
	if (buf)
		buf[n] = '\0';
out:
	fclose(f);
	return buf;
}

/* Run each ';'-at-end-of-line statement of SQL. */
static enum db_status run_script(struct db *db, char *sql, const char *file)
{
	char *stmt = sql;

	for (char *p = sql; *p; p++) {
		if (*p != ';' || (p[1] != '\n' && p[1] != '\0' && p[1] != '\r'))
			continue;
		*p = '\0';
		while (*stmt == '\n' || *stmt == ' ' || *stmt == '\r' || *stmt == '\t')
			stmt++;
		if (*stmt) {
			enum db_status st = db_query(db, stmt);
			if (st) {
				fprintf(stderr, "migrate: %s: %s\n", file, db_error(db));
				return st;
			}
		}
		stmt = p + 1;
	}
	return DB_OK;
}

enum db_status migrate_dir(struct db *db, const char *dir)
{
	static const char applied_sql[] = "SELECT 1 FROM schema_migrations WHERE version = ?";
	static const char record_sql[] = "INSERT INTO schema_migrations (version) VALUES (?)";
	char *names[MIGRATE_MAX_FILES];
	int n = 0, applied = 0;
	enum db_status st;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		fprintf(stderr, "migrate: cannot open %s\n", dir);
		return DB_FATAL;
	}
	while ((de = readdir(d)) && n < MIGRATE_MAX_FILES) {
		size_t len = strlen(de->d_name);
		if (len > 4 && !strcmp(de->d_name + len - 4, ".sql"))
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(*names), by_name);

	st = db_query(db, "SELECT GET_LOCK('terrarium_migrate', 60)");
	if (!st)
		st = db_query(db, "CREATE TABLE IF NOT EXISTS schema_migrations ("
				  " version VARCHAR(255) NOT NULL PRIMARY KEY,"
				  " applied_at DATETIME(6) NOT NULL DEFAULT UTC_TIMESTAMP(6)"
				  ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin");
	for (int i = 0; i < n && !st; i++) {
		struct db_rows rows;
		char path[4096];
		char *sql;

		st = db_exec(db, applied_sql, DB_PARAMS(DB_STR(names[i])), &rows, NULL);
		if (st)
			break;
		if (rows.nrows) {
			db_rows_free(&rows);
			continue;
		}
		db_rows_free(&rows);
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		sql = slurp(path);
		if (!sql) {
			fprintf(stderr, "migrate: cannot read %s\n", path);
			st = DB_FATAL;
			break;
		}
		fprintf(stderr, "migrate: applying %s\n", names[i]);
		st = run_script(db, sql, names[i]);
		free(sql);
		if (!st)
			st = db_exec(db, record_sql, DB_PARAMS(DB_STR(names[i])), NULL, NULL);
		applied += !st;
	}
	db_query(db, "SELECT RELEASE_LOCK('terrarium_migrate')");
	for (int i = 0; i < n; i++)
		free(names[i]);
	if (!st)
		fprintf(stderr, "migrate: %d applied, schema up to date\n", applied);
	return st;
}
