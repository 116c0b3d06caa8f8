/* MariaDB access: one connection per process, prepared statements cached by SQL text
 * address (only texts built into the program are executed: db_exec), one error classification,
 * and a transaction runner that retries deadlocks and lock wait timeouts. Only db/ includes
 * mysql.h. */
#ifndef TERRARIUM_DB_H
#define TERRARIUM_DB_H

#include <stddef.h>
#include <string.h>

#include "../common/config.h"

#define DB_STMT_CACHE_MAX 96
#define DB_TX_MAX_ATTEMPTS 5
#define DB_TX_BACKOFF_BASE_MS 5
#define DB_TX_BACKOFF_CAP_MS 200
#define DB_CONNECT_TIMEOUT_S 2
#define DB_IO_TIMEOUT_S 30
#define DB_MAX_PARAMS 24
#define DB_MAX_COLUMNS 64 /* columns of one result set */

enum db_status {
	DB_OK = 0,
	DB_CONFLICT, /* duplicate key, foreign key violation */
	DB_RETRY,    /* deadlock or Galera certification failure (1213), lock wait timeout
		      * (1205), Galera node not in the primary component (1047): nothing was
		      * committed; retry the transaction */
	DB_GONE,     /* the server is unreachable or went away */
	DB_FATAL,    /* the server refused the statement for another reason: a bug or bad state */
	DB_NOMEM,    /* out of memory on this side (the client library or the caller) */
	DB_CORRUPT,  /* stored data is not what the code expects: JSON that does not parse, a
		      * value longer than its buffer, a missing server secret */
};
#define DB_ERROR_MAX 512 /* bytes of the message kept with a failure */

enum db_type { DBT_NULL, DBT_STR, DBT_INT };

struct db_val {
	enum db_type type;
	const char *s;
	size_t len;
	long long i;
};

#define DB_STR(x) ((struct db_val){ DBT_STR, (x), strlen(x), 0 })
#define DB_STRN(x, n) ((struct db_val){ DBT_STR, (x), (n), 0 })
#define DB_INT(x) ((struct db_val){ DBT_INT, NULL, 0, (x) })
#define DB_NULL ((struct db_val){ DBT_NULL, NULL, 0, 0 })
/* S, or SQL NULL when S is NULL (db_opt) or, for db_opt_nonempty, also when S is "". */
static inline struct db_val db_opt(const char *s)
{
	return s ? DB_STR(s) : DB_NULL;
}
static inline struct db_val db_opt_nonempty(const char *s)
{
	return s && *s ? DB_STR(s) : DB_NULL;
}

/* The PARAMS and NPARAMS arguments of db_exec, the count derived rather than written: */
/* ...from the values themselves: db_exec(db, sql, DB_PARAMS(DB_STR(id), DB_INT(n)), ...) */
#define DB_PARAMS(...)                                                                             \
	((const struct db_val[]){ __VA_ARGS__ }),                                                  \
		(unsigned)(sizeof((const struct db_val[]){ __VA_ARGS__ }) / sizeof(struct db_val))
/* ...from an array of values (a pointer does not compile) */
#define DB_ARRAY(a)                                                                                \
	(a), (unsigned)(sizeof(a) / sizeof((a)[0]) +                                               \
			0 * sizeof(char[1 - 2 * __builtin_types_compatible_p(                      \
							__typeof__(a), __typeof__(&(a)[0]))]))
/* ...for a statement without parameters */
#define DB_NONE NULL, 0u

/* A fully fetched result set: cell[r * ncols + c] is a NUL-terminated string, or NULL for SQL
 * NULL; len[] the matching lengths. Owned by the struct (db_rows_free). Everything lives in
 * one arena of a few large blocks (usually one), not one allocation per cell. */
struct db_rows {
	unsigned nrows, ncols;
	char **cell;
	unsigned long *len;
	struct db_block *arena; /* private to db.c */
};

struct db;

/* New handle for CFG (borrowed; must outlive the handle); does not connect yet. */
struct db *db_new(const struct config *cfg);
void db_free(struct db *db);

/* Connect if not connected. DB_OK or DB_GONE / DB_FATAL / DB_NOMEM. */
enum db_status db_connect(struct db *db);

/* TEXT, a string literal reading rows by key, or when LOCK the same read locking the rows it
 * returns (FOR UPDATE, inside a transaction): a get and its locking twin written once, each a
 * literal as db_exec wants. */
#define DB_FOR_UPDATE_IF(lock, text) ((lock) ? text " FOR UPDATE" : text)

/* Execute SQL (a string literal or a static const array: its address keys the statement cache;
 * text made at run time is refused with DB_FATAL before anything runs) with PARAMS, passed as
 * DB_PARAMS(...), DB_ARRAY(p) or DB_NONE: NPARAMS must be the number of `?` in SQL, which the
 * server counted at prepare (another count is DB_FATAL before anything runs). When ROWS
 * is given the result set is fetched into it (caller db_rows_free). AFFECTED, when given,
 * receives the affected row count. Outside a transaction a server-gone error reconnects and
 * retries once. */
enum db_status db_exec(struct db *db, const char *sql, const struct db_val *params,
		       unsigned nparams, struct db_rows *rows, unsigned long long *affected);

/* Execute SQL text without preparing (DDL, migrations). */
enum db_status db_query(struct db *db, const char *sql);

/* db_query for a statement that another connection may end early with KILL QUERY (a blocked
 * long poll, db/work.c): being interrupted (ER_QUERY_INTERRUPTED) is DB_OK with
 * *INTERRUPTED = 1. */
enum db_status db_query_interruptible(struct db *db, const char *sql, int *interrupted);

static inline const char *db_cell(const struct db_rows *r, unsigned row, unsigned col)
{
	return r->cell[row * r->ncols + col];
}
void db_rows_free(struct db_rows *rows);

typedef enum db_status (*db_tx_fn)(struct db *db, void *ctx);

/* Run FN inside a transaction: commit on DB_OK, roll back otherwise. DB_RETRY and a server-gone
 * before commit roll back, wait a jittered backoff and run FN again (FN must be re-runnable),
 * up to DB_TX_MAX_ATTEMPTS. A COMMIT refused with DB_RETRY (on Galera: certification failure
 * 1213 or 1047, nothing committed anywhere) is run again the same way; a connection lost
 * during COMMIT is not (the outcome is unknown). Returns FN's status or the commit's.
 * Called inside FN (or anything FN calls), db_tx runs its function once as part of the
 * enclosing transaction; a DB_RETRY or DB_GONE met anywhere inside makes the enclosing attempt
 * roll back and run again even when FN answered it and returned DB_OK. */
enum db_status db_tx(struct db *db, db_tx_fn fn, void *ctx);

/* db_tx at READ COMMITTED instead of REPEATABLE READ: locking reads lock the rows they return
 * and no gaps. For queue claims (SELECT ... FOR UPDATE SKIP LOCKED, then UPDATE of what was
 * returned): under REPEATABLE READ each claim gap-locked the index ranges it scanned, and two
 * claims moving rows into the range the other had scanned deadlocked (1213) on every few
 * batches. */
enum db_status db_tx_read_committed(struct db *db, db_tx_fn fn, void *ctx);

/* The message of the last failure ("" after a call that succeeded): the server's error number
 * and text, or what db_fail recorded. For logs only; never sent to clients. Borrowed from DB. */
const char *db_error(const struct db *db);

/* The status of the last failure, DB_OK after a call that succeeded. Status and message are
 * set together where the failure is found and cleared together by the next db_exec, db_query
 * or db_tx that succeeds (inside a transaction, a failure stays until the transaction ends:
 * it is what the transaction reports). */
enum db_status db_last_status(const struct db *db);

/* Record a failure found by the caller rather than the server (stored JSON that does not parse,
 * out of memory inside a transaction function): ST with the message FMT, formatted at once (an
 * argument may be db_error(DB) itself). Returns ST, so a transaction function can end with
 * `return db_fail(db, DB_CORRUPT, ...)`. */
enum db_status db_fail(struct db *db, enum db_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* JSON kept in a column (Jansson's json_t; db.h does not include jansson.h). The two rules for
 * a JSON column, stated here once; KIND and ID name the row and WHAT the column in the message
 * recorded on DB with db_fail. */
struct json_t;

/* Parse TEXT, a cell read from the row of KIND ID (json_loads, no flags), into *OUT (a new
 * reference the caller decrefs). DB_OK, or DB_CORRUPT with *OUT = NULL and the message
 * "KIND ID: stored WHAT does not parse" when TEXT is not a JSON object or array (SQL NULL,
 * TEXT NULL, counts as not parsing). */
enum db_status db_json_load(struct db *db, const char *text, const char *kind, const char *id,
			    const char *what, struct json_t **out);

/* db_json_load for a cell that holds an object: an array is DB_CORRUPT too (*OUT = NULL),
 * with the message "KIND ID: stored WHAT is not an object". */
enum db_status db_json_load_object(struct db *db, const char *text, const char *kind,
				   const char *id, const char *what, struct json_t **out);

/* Serialise V, an object or array, for writing to the row of KIND ID (json_dumps, JSON_COMPACT)
 * into *OUT (the caller frees). DB_OK, or DB_NOMEM with *OUT = NULL and the message "KIND ID:
 * serialising the WHAT" when json_dumps fails: out of memory, or V NULL (a json_pack that ran out
 * of memory). */
enum db_status db_json_dump(struct db *db, const struct json_t *v, const char *kind, const char *id,
			    const char *what, char **out);

/* Human-readable name of STATUS, for logs and messages: "ok", "database busy", "database
 * unavailable", "out of memory", "corrupt stored data"...; "?" for a value not in the enum. */
const char *db_status_name(enum db_status status);

/* Classify a MariaDB client or server error number: one table for every path (statements,
 * COMMIT, connect). */
enum db_status db_classify(unsigned err);

#endif
