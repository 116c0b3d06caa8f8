/* The environments table. Every query filters on the workspace and on `scope: account`
 * visibility (an account-scoped environment is visible only to its creating account). */
#ifndef TERRARIUM_DB_ENVIRONMENTS_H
#define TERRARIUM_DB_ENVIRONMENTS_H

#include "db.h"
#include "table.h"

/* Columns of every environment SELECT, in this order. */
enum env_col {
	ENV_C_ID,
	ENV_C_NAME,
	ENV_C_DESCRIPTION,
	ENV_C_METADATA,
	ENV_C_CONFIG,
	ENV_C_SCOPE,
	ENV_C_CREATED,	/* RFC 3339 */
	ENV_C_UPDATED,	/* RFC 3339 */
	ENV_C_ARCHIVED, /* RFC 3339 or NULL */
	ENV_C_REVISION,
	ENV_C_CREATED_DB /* "YYYY-MM-DD HH:MM:SS.ffffff", the list cursor's key */
};

struct env_row_in {
	const char *id, *workspace_id, *account_id, *name;
	const char *description; /* NULL: SQL NULL */
	const char *metadata, *type, *scope /* NULL */, *config;
	const char *now; /* "YYYY-MM-DD HH:MM:SS.ffffff" */
};

enum envdb_lock { ENVDB_NO_LOCK, ENVDB_LOCK_UPDATE, ENVDB_LOCK_SHARE };

/* One visible environment by id into ROWS (0 or 1 row), locked as LOCK says (inside a
 * transaction: LOCK_SHARE is what session creation takes, so that archive and delete, which
 * need the row exclusively, serialise with it). */
enum db_status envdb_get(struct db *db, const char *id, const char *ws, const char *account,
			 enum envdb_lock lock, struct db_rows *rows);
enum db_status envdb_insert(struct db *db, const struct env_row_in *in);
/* Replace the user-settable fields, revision + 1, updated_at = in->now, when the row is still
 * at REVISION and not archived (compare and set: one statement, no lock held across the
 * caller's read). *AFFECTED = 1 when written, 0 when the row changed, went or was archived. */
enum db_status envdb_update(struct db *db, const struct env_row_in *in, long long revision,
			    unsigned long long *affected);
/* Session creation's write to its environment's row (session_writes + 1), before it reads the
 * row: the row lock is exclusive from the start, and on a Galera cluster, where locks are local
 * to one node, the write makes an archive or delete of the environment committed on another
 * node fail one of the two at certification (a shared lock alone would let both commit). */
enum db_status envdb_hold_for_session(struct db *db, const char *id, const char *ws,
				      const char *account);
/* Set archived_at (and updated_at) of environment K->id, as K->workspace_id and K->account_id
 * see it, at NOW when not yet archived (an archived one is left as it is). */
enum db_status envdb_archive(struct db *db, const struct db_key *k, const char *now);
/* Delete when no session references it: one statement. *AFFECTED = 1 when deleted. */
enum db_status envdb_delete(struct db *db, const char *id, const char *ws, const char *account,
			    unsigned long long *affected);
/* Sessions referencing ENVIRONMENT_ID into *COUNT; *EXISTS = the environment is visible. */
enum db_status envdb_references(struct db *db, const char *id, const char *ws, const char *account,
				int *exists, long long *count);
/* Environments of K->workspace_id that K->account_id sees, newest first, as page P says
 * (include_archived, after the cursor), at most db_page_rows(P) rows into ROWS (caller
 * db_rows_free). */
enum db_status envdb_list(struct db *db, const struct db_key *k, const struct db_page *p,
			  struct db_rows *rows);

#endif
