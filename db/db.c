#include "db.h"

#include <errmsg.h>
#include <jansson.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <mysql.h>
#include <mysqld_error.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"

#define DB_CELL_MIN 64
#define DB_ARENA_BLOCK 16384		 /* later arena blocks of a result set, at least */
#define DB_ARENA_FIRST_MAX (1024 * 1024) /* first arena block of a result set, at most */

struct stmt_entry {
	const char *sql;
	MYSQL_STMT *stmt;
};

struct db {
	const struct config *cfg;
	MYSQL *conn;
	bool in_tx;
	bool tx_lost;	/* the connection closed inside a transaction: its statements fail */
	bool tx_unsure; /* Galera: a command without a result (prepare, close) was sent inside the
			 * transaction; whether the transaction is still open is not known yet */
	bool galera;	/* the server is a Galera node (wsrep_on) */
	bool sync_wait; /* Galera causality checks (wsrep_sync_wait) are on for this connection */
	bool tx_open;	/* a db_tx runs (in_tx drops when its connection is lost) */
	enum db_status tx_failed; /* first DB_RETRY/DB_GONE inside the open transaction */
	struct stmt_entry cache[DB_STMT_CACHE_MAX];
	int ncache;
	enum db_status status;	  /* of the last failure; DB_OK after a success */
	char error[DB_ERROR_MAX]; /* its message; "" after a success */
};

enum db_status db_classify(unsigned err)
{
	switch (err) {
	case 0:
		return DB_OK;
	case ER_LOCK_DEADLOCK: /* also Galera's certification failure, at COMMIT */
	case ER_LOCK_WAIT_TIMEOUT:
	case ER_UNKNOWN_COM_ERROR:    /* 1047: Galera node outside the primary component */
	case ER_UNKNOWN_STMT_HANDLER: /* the server forgot a prepared statement (a migration): */
	case ER_NEED_REPREPARE:	      /* prepared again on the retry */
		return DB_RETRY;
	case CR_OUT_OF_MEMORY:
	case ER_OUTOFMEMORY:
	case ER_OUT_OF_RESOURCES:
		return DB_NOMEM;
	case ER_DUP_ENTRY:
	case ER_ROW_IS_REFERENCED_2:
	case ER_NO_REFERENCED_ROW_2:
		return DB_CONFLICT;
	case CR_SERVER_GONE_ERROR:
	case CR_SERVER_LOST:
	case CR_CONNECTION_ERROR:
	case CR_CONN_HOST_ERROR:
	case CR_SERVER_LOST_EXTENDED:
	case ER_CONNECTION_KILLED:
	case ER_SERVER_SHUTDOWN:
	case ER_CON_COUNT_ERROR:
	case ER_QUERY_INTERRUPTED:
	case 4031: /* ER_CLIENT_INTERACTION_TIMEOUT: disconnected by the server */
		return DB_GONE;
	default:
		return DB_FATAL;
	}
}

const char *db_status_name(enum db_status status)
{
	/* in the enum's order; only DB_FATAL and DB_CONFLICT are the database's refusals: the
	 * name says whose failure it is */
	static const char *const names[] = { "ok",
					     "database conflict",
					     "database busy",
					     "database unavailable",
					     "database error",
					     "out of memory",
					     "corrupt stored data" };
	_Static_assert(sizeof(names) / sizeof(names[0]) == DB_CORRUPT + 1, "a name per status");

	return (unsigned)status < sizeof(names) / sizeof(names[0]) ? names[status] : "?";
}

const char *db_error(const struct db *db)
{
	return db->error;
}

enum db_status db_last_status(const struct db *db)
{
	return db->status;
}

/* Set the failure ST with the message FMT/AP: formatted into a buffer of its own first, so an
 * argument that is db->error itself is read whole before it is replaced. */
static enum db_status fail_set(struct db *db, enum db_status st, const char *fmt, va_list ap)
{
	char msg[DB_ERROR_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	memcpy(db->error, msg, sizeof(msg));
	db->status = st;
	return st;
}

enum db_status db_fail(struct db *db, enum db_status st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_set(db, st, fmt, ap);
	va_end(ap);
	return st;
}

enum db_status db_json_load(struct db *db, const char *text, const char *kind, const char *id,
			    const char *what, json_t **out)
{
	*out = text ? json_loads(text, 0, NULL) : NULL;
	if (!*out)
		return db_fail(db, DB_CORRUPT, "%s %s: stored %s does not parse", kind, id, what);
	return DB_OK;
}

enum db_status db_json_load_object(struct db *db, const char *text, const char *kind,
				   const char *id, const char *what, json_t **out)
{
	enum db_status st = db_json_load(db, text, kind, id, what, out);

	if (st || json_is_object(*out))
		return st;
	json_decref(*out);
	*out = NULL;
	return db_fail(db, DB_CORRUPT, "%s %s: stored %s is not an object", kind, id, what);
}

enum db_status db_json_dump(struct db *db, const json_t *v, const char *kind, const char *id,
			    const char *what, char **out)
{
	*out = v ? json_dumps(v, JSON_COMPACT) : NULL;
	if (!*out)
		return db_fail(db, DB_NOMEM, "%s %s: serialising the %s", kind, id, what);
	return DB_OK;
}

/* A call succeeded: no failure to report. */
static void fail_clear(struct db *db)
{
	db->status = DB_OK;
	db->error[0] = '\0';
}

struct db *db_new(const struct config *cfg)
{
	struct db *db = calloc(1, sizeof(*db));

	if (db)
		db->cfg = cfg;
	return db;
}

static void db_disconnect(struct db *db)
{
	for (int i = 0; i < db->ncache; i++)
		mysql_stmt_close(db->cache[i].stmt);
	db->ncache = 0;
	if (db->conn)
		mysql_close(db->conn);
	db->conn = NULL;
	if (db->in_tx)
		db->tx_lost = true;
	db->in_tx = false;
}

void db_free(struct db *db)
{
	if (!db)
		return;
	db_disconnect(db);
	free(db);
}

/* The server or client library reported ERR with MSG: classify it, record both, and end what
 * the class ends (the transaction's attempt, the connection). */
static enum db_status fail(struct db *db, unsigned err, const char *msg)
{
	enum db_status st = db_fail(db, db_classify(err), "%u: %s", err, msg);

	if ((st == DB_GONE || st == DB_RETRY) && db->tx_open && !db->tx_failed)
		db->tx_failed = st;
	/* On Galera a transaction aborted for a conflict (1213, 1047) can leave the connection
	 * out of step with the server (the next command waited for the 30 s read timeout): the
	 * retry starts on a new connection. */
	if (st == DB_GONE || (st == DB_RETRY && db->galera))
		db_disconnect(db);
	return st;
}

enum db_status db_connect(struct db *db)
{
	const struct config *c = db->cfg;
	unsigned timeout = DB_CONNECT_TIMEOUT_S, io = DB_IO_TIMEOUT_S;
	my_bool off = 0;
	MYSQL *m;

	if (db->conn)
		return DB_OK;
	m = mysql_init(NULL);
	if (!m)
		return db_fail(db, DB_NOMEM, "connecting: out of memory");
	mysql_options(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	mysql_options(m, MYSQL_OPT_READ_TIMEOUT, &io);
	mysql_options(m, MYSQL_OPT_WRITE_TIMEOUT, &io);
	/* never let the client reconnect by itself: it would invalidate cached statements */
	mysql_options(m, MYSQL_OPT_RECONNECT, &off);
	mysql_options(m, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00', NAMES utf8mb4");
	if (!mysql_real_connect(m, c->db_socket[0] ? NULL : c->db_host, c->db_user, c->db_password,
				c->db_name, c->db_port, c->db_socket[0] ? c->db_socket : NULL, 0)) {
		unsigned err = mysql_errno(m);
		enum db_status st = db_fail(db, db_classify(err), "%u: %s", err, mysql_error(m));

		mysql_close(m);
		/* a refused login is not retried; a deadlock cannot happen here */
		return st == DB_RETRY || st == DB_CONFLICT ? db_fail(db, DB_FATAL, "%s", db->error)
							   : st;
	}
	db->conn = m;
	db->galera = db->sync_wait = false;
	/* a server without wsrep has no such variables: not Galera then */
	if (!mysql_query(m, "SELECT @@global.wsrep_on, @@session.wsrep_sync_wait")) {
		MYSQL_RES *res = mysql_store_result(m);
		MYSQL_ROW row = res ? mysql_fetch_row(res) : NULL;
		db->galera = row && row[0] && strcmp(row[0], "1") == 0;
		db->sync_wait = db->galera && row[1] && strcmp(row[1], "0") != 0;
		if (res)
			mysql_free_result(res);
	}
	return DB_OK;
}

enum db_status db_query(struct db *db, const char *sql)
{
	enum db_status st = db->tx_lost ? DB_RETRY : db_connect(db);

	if (st)
		return st;
	if (mysql_query(db->conn, sql))
		return fail(db, mysql_errno(db->conn), mysql_error(db->conn));
	/* drain any result so the connection stays usable */
	do {
		MYSQL_RES *res = mysql_store_result(db->conn);
		if (res)
			mysql_free_result(res);
	} while (mysql_next_result(db->conn) == 0);
	if (mysql_errno(db->conn))
		return fail(db, mysql_errno(db->conn), mysql_error(db->conn));
	if (!db->tx_open)
		fail_clear(db);
	return DB_OK;
}

enum db_status db_query_interruptible(struct db *db, const char *sql, int *interrupted)
{
	enum db_status st = db_connect(db);
	unsigned err;

	*interrupted = 0;
	if (st)
		return st;
	if (!mysql_query(db->conn, sql)) {
		MYSQL_RES *res = mysql_store_result(db->conn);
		if (res)
			mysql_free_result(res);
	}
	err = mysql_errno(db->conn);
	/* interrupted by KILL QUERY: the connection and its statements stay usable */
	*interrupted = err == ER_QUERY_INTERRUPTED;
	if (!err || err == ER_QUERY_INTERRUPTED)
		return DB_OK;
	return fail(db, err, mysql_error(db->conn));
}

/* DB_OK while the server still has our transaction open; DB_RETRY (the connection dropped, so
 * later statements fail with tx_lost) when it ended without our COMMIT or ROLLBACK. */
static enum db_status tx_still_open(struct db *db, const char *seen_at)
{
	if (!db->in_tx || (db->conn->server_status & SERVER_STATUS_IN_TRANS))
		return DB_OK;
	log_warn("database: the transaction ended on the server without COMMIT (aborted by a "
		 "replicated write-set), seen %s: retrying it",
		 seen_at);
	return fail(db, ER_LOCK_DEADLOCK, "transaction aborted on the server");
}

/* A Galera transaction aborted by a replicated write-set (a "BF abort") is rolled back by the
 * server; the client learns it from the 1213 answer to its next command. But a command that
 * returns no result (COM_STMT_PREPARE, COM_STMT_CLOSE) defers that error, and the server lost it:
 * the next COM_STMT_EXECUTE ran outside any transaction, in autocommit mode. The race test saw it
 * as a session INSERTed, rolled back behind our back, then not found by the SELECT that read it
 * back (404), with COMMIT succeeding on nothing; a deferred abort before an INSERT would have
 * committed that INSERT alone. So after such a command inside a transaction, one query that does
 * return a result asks the server: the deferred 1213, or a connection no longer in a transaction
 * (SERVER_STATUS_IN_TRANS), means the transaction is lost and is retried. */
static enum db_status tx_verify(struct db *db)
{
	if (!db->tx_unsure || !db->in_tx || !db->conn)
		return DB_OK;
	db->tx_unsure = false;
	if (mysql_query(db->conn, "DO 0"))
		return fail(db, mysql_errno(db->conn), mysql_error(db->conn));
	return tx_still_open(db, "before the next statement");
}

/* The cached statement for SQL (by its address), or NULL. */
static MYSQL_STMT *stmt_find(const struct db *db, const char *sql)
{
	for (int i = 0; i < db->ncache; i++)
		if (db->cache[i].sql == sql)
			return db->cache[i].stmt;
	return NULL;
}

/* dl_iterate_phdr's callback: 1 when ARG lies in a read-only segment loaded from INFO's file. */
static int in_read_only_segment(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t p = (uintptr_t)arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && !(ph->p_flags & PF_W) && p >= start &&
		    p - start < ph->p_memsz)
			return 1;
	}
	return 0;
}

/* 1 when SQL is text the program was built with (a string literal or a static const array: the
 * read-only data of a loaded file), which keeps its address and its text for the process's
 * life; 0 for text on the heap, the stack or in writable data. */
static int sql_is_static(const char *sql)
{
	return dl_iterate_phdr(in_read_only_segment, (void *)(uintptr_t)sql) == 1;
}

/* The cached statement for SQL, prepared now when missing. NULL with *ST and the failure
 * recorded. */
static MYSQL_STMT *stmt_get(struct db *db, const char *sql, enum db_status *st)
{
	MYSQL_STMT *stmt = stmt_find(db, sql);
	my_bool on = 1;

	if (stmt)
		return stmt;
	if (db->in_tx && db->galera)
		db->tx_unsure = true;
	stmt = mysql_stmt_init(db->conn);
	if (!stmt) {
		*st = fail(db, CR_OUT_OF_MEMORY, "preparing a statement: out of memory");
		return NULL;
	}
	if (mysql_stmt_prepare(stmt, sql, strlen(sql))) {
		unsigned err = mysql_stmt_errno(stmt);
		char msg[DB_ERROR_MAX];

		/* copied before the close frees the statement's message */
		snprintf(msg, sizeof(msg), "%s", mysql_stmt_error(stmt));
		mysql_stmt_close(stmt);
		*st = fail(db, err, msg);
		return NULL;
	}
	mysql_stmt_attr_set(stmt, STMT_ATTR_UPDATE_MAX_LENGTH, &on);
	if (db->ncache < DB_STMT_CACHE_MAX)
		db->cache[db->ncache++] = (struct stmt_entry){ sql, stmt };
	else
		log_warn("statement cache full; raise DB_STMT_CACHE_MAX");
	return stmt;
}

static void stmt_done(struct db *db, MYSQL_STMT *stmt)
{
	mysql_stmt_free_result(stmt);
	for (int i = 0; i < db->ncache; i++)
		if (db->cache[i].stmt == stmt)
			return;
	mysql_stmt_close(stmt);
	if (db->in_tx && db->galera)
		db->tx_unsure = true; /* COM_STMT_CLOSE: no result (tx_verify) */
}

/* One block of a result set's arena; blocks are chained newest first. */
struct db_block {
	struct db_block *next;
	size_t size, used;
	max_align_t data[]; /* size bytes */
};

/* N bytes (aligned for pointers) from *ARENA; a new block of at least HINT bytes when the
 * current one is full. NULL when out of memory. */
static void *arena_alloc(struct db_block **arena, size_t n, size_t hint)
{
	struct db_block *b = *arena;
	void *p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!b || b->size - b->used < n) {
		size_t size = n > hint ? n : hint;
		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->next = *arena;
		b->size = size;
		b->used = 0;
		*arena = b;
	}
	p = (char *)b->data + b->used;
	b->used += n;
	return p;
}

void db_rows_free(struct db_rows *rows)
{
	struct db_block *b, *next;

	if (!rows)
		return;
	for (b = rows->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	memset(rows, 0, sizeof(*rows));
}

/* Fetch the whole stored result of STMT into ROWS. Returns 0 or a MariaDB error number.
 *
 * Per-request allocations dominated a GET's profile when every cell and every bind buffer had
 * its own malloc. Now the cell and length arrays, one staging row (bound once, sized from the
 * columns' max_length, which mysql_stmt_store_result computed) and the cells themselves come
 * from one arena whose first block is sized for the whole result: a result set costs one or
 * two mallocs and one free. */
static unsigned fetch_all(MYSQL_STMT *stmt, MYSQL_RES *meta, struct db_rows *rows)
{
	unsigned ncols = mysql_num_fields(meta), r = 0;
	MYSQL_FIELD *fields = mysql_fetch_fields(meta);
	unsigned long long nrows = mysql_stmt_num_rows(stmt);
	MYSQL_BIND bind[DB_MAX_COLUMNS];
	unsigned long lens[DB_MAX_COLUMNS];
	my_bool nulls[DB_MAX_COLUMNS], errs[DB_MAX_COLUMNS];
	size_t rowmax = 0, ncells, first;
	char *staging;

	memset(rows, 0, sizeof(*rows));
	if (ncols > DB_MAX_COLUMNS)
		return CR_UNKNOWN_ERROR;
	for (unsigned c = 0; c < ncols; c++)
		rowmax +=
			(fields[c].max_length > DB_CELL_MIN ? fields[c].max_length : DB_CELL_MIN) +
			1 + sizeof(max_align_t);
	ncells = (size_t)nrows * ncols;
	first = (ncells + 1) * (sizeof(char *) + sizeof(unsigned long)) + 4 * sizeof(max_align_t) +
		rowmax + (size_t)nrows * rowmax;
	if (first > DB_ARENA_FIRST_MAX)
		first = DB_ARENA_FIRST_MAX;
	rows->ncols = ncols;
	rows->cell = arena_alloc(&rows->arena, (ncells + 1) * sizeof(*rows->cell), first);
	rows->len = arena_alloc(&rows->arena, (ncells + 1) * sizeof(*rows->len), DB_ARENA_BLOCK);
	staging = arena_alloc(&rows->arena, rowmax, DB_ARENA_BLOCK);
	if (!rows->cell || !rows->len || !staging)
		goto oom;
	memset(rows->cell, 0, (ncells + 1) * sizeof(*rows->cell));
	memset(rows->len, 0, (ncells + 1) * sizeof(*rows->len));
	memset(bind, 0, sizeof(bind[0]) * ncols);
	for (unsigned c = 0; c < ncols; c++) {
		unsigned long cap =
			fields[c].max_length > DB_CELL_MIN ? fields[c].max_length : DB_CELL_MIN;
		bind[c].buffer_type = MYSQL_TYPE_STRING;
		bind[c].buffer = staging;
		bind[c].buffer_length = cap + 1;
		bind[c].length = &lens[c];
		bind[c].is_null = &nulls[c];
		bind[c].error = &errs[c];
		staging += cap + 1;
	}
	if (ncols && mysql_stmt_bind_result(stmt, bind)) {
		unsigned err = mysql_stmt_errno(stmt);
		db_rows_free(rows);
		return err;
	}
	for (;;) {
		int rc = mysql_stmt_fetch(stmt);
		if (rc == MYSQL_NO_DATA)
			break;
		if (rc == 1) {
			unsigned err = mysql_stmt_errno(stmt);
			db_rows_free(rows);
			return err;
		}
		if (r >= nrows)
			break;
		for (unsigned c = 0; c < ncols; c++) {
			char *cell;
			if (nulls[c])
				continue;
			cell = arena_alloc(&rows->arena, lens[c] + 1, DB_ARENA_BLOCK);
			if (!cell)
				goto oom;
			if (lens[c] < bind[c].buffer_length) {
				memcpy(cell, bind[c].buffer, lens[c]);
			} else {
				/* longer than max_length said: fetch this one directly */
				MYSQL_BIND one = bind[c];
				one.buffer = cell;
				one.buffer_length = lens[c] + 1;
				if (mysql_stmt_fetch_column(stmt, &one, c, 0)) {
					unsigned err = mysql_stmt_errno(stmt);
					db_rows_free(rows);
					return err;
				}
			}
			cell[lens[c]] = '\0';
			rows->cell[r * ncols + c] = cell;
			rows->len[r * ncols + c] = lens[c];
		}
		r++;
		rows->nrows = r;
	}
	return 0;
oom:
	db_rows_free(rows);
	return CR_OUT_OF_MEMORY;
}

static enum db_status exec_once(struct db *db, const char *sql, const struct db_val *params,
				unsigned nparams, struct db_rows *rows,
				unsigned long long *affected)
{
	MYSQL_BIND bind[DB_MAX_PARAMS];
	MYSQL_STMT *stmt;
	MYSQL_RES *meta = NULL;
	enum db_status st;
	unsigned err = 0;

	if (nparams > DB_MAX_PARAMS)
		return db_fail(db, DB_FATAL, "%u parameters: more than DB_MAX_PARAMS", nparams);
	if (db->tx_lost) /* never on a new connection, outside the transaction */
		return DB_RETRY;
	st = db_connect(db);
	if (st)
		return st;
	st = tx_verify(db); /* a statement closed by the previous call */
	if (st)
		return st;
	stmt = stmt_get(db, sql, &st);
	if (!stmt)
		return st;
	if (db->tx_unsure) { /* STMT was prepared just now */
		bool cached = false;
		for (int i = 0; i < db->ncache; i++)
			cached |= db->cache[i].stmt == stmt;
		st = tx_verify(db);
		if (st) {
			if (!cached || db->conn) /* else closed with the connection */
				stmt_done(db, stmt);
			return st;
		}
	}
	if (mysql_stmt_param_count(stmt) != nparams) {
		db_fail(db, DB_FATAL, "%lu parameters in the statement, %u given: %.80s",
			mysql_stmt_param_count(stmt), nparams, sql);
		stmt_done(db, stmt);
		return DB_FATAL;
	}
	memset(bind, 0, sizeof(bind));
	for (unsigned i = 0; i < nparams; i++) {
		switch (params[i].type) {
		case DBT_NULL:
			bind[i].buffer_type = MYSQL_TYPE_NULL;
			break;
		case DBT_STR:
			bind[i].buffer_type = MYSQL_TYPE_STRING;
			bind[i].buffer = (void *)params[i].s;
			bind[i].buffer_length = params[i].len;
			break;
		case DBT_INT:
			bind[i].buffer_type = MYSQL_TYPE_LONGLONG;
			bind[i].buffer = (void *)&params[i].i;
			break;
		}
	}
	if (nparams && mysql_stmt_bind_param(stmt, bind))
		goto stmt_fail;
	if (mysql_stmt_execute(stmt))
		goto stmt_fail;
	if (affected)
		*affected = mysql_stmt_affected_rows(stmt);
	meta = mysql_stmt_result_metadata(stmt);
	if (meta) {
		if (mysql_stmt_store_result(stmt))
			goto stmt_fail;
		if (rows) {
			err = fetch_all(stmt, meta, rows);
			if (err) {
				mysql_free_result(meta);
				stmt_done(db, stmt);
				return fail(db, err, "fetching a result");
			}
		}
		mysql_free_result(meta);
	} else if (rows) {
		memset(rows, 0, sizeof(*rows));
	}
	stmt_done(db, stmt);
	/* the last line of defence: the statement ran, but outside our transaction */
	st = tx_still_open(db, "after a statement ran outside it");
	if (st && rows)
		db_rows_free(rows);
	return st;

stmt_fail:
	err = mysql_stmt_errno(stmt);
	{
		char msg[DB_ERROR_MAX];

		/* copied before stmt_done may free the statement's message */
		snprintf(msg, sizeof(msg), "%s", mysql_stmt_error(stmt));
		if (meta)
			mysql_free_result(meta);
		stmt_done(db, stmt);
		if (err == ER_UNKNOWN_STMT_HANDLER || err == ER_NEED_REPREPARE) {
			/* the server forgot the statement (e.g. after a migration): drop the
			 * cache, so that the retry prepares it again */
			for (int i = 0; i < db->ncache; i++)
				mysql_stmt_close(db->cache[i].stmt);
			db->ncache = 0;
			if (db->in_tx && db->galera)
				db->tx_unsure = true; /* COM_STMT_CLOSE: no result (tx_verify) */
		}
		return fail(db, err, msg);
	}
}

enum db_status db_exec(struct db *db, const char *sql, const struct db_val *params,
		       unsigned nparams, struct db_rows *rows, unsigned long long *affected)
{
	bool in_tx = db->in_tx;
	enum db_status st;

	/* the statement cache is keyed on the text's address: a text built at run time would be
	 * prepared anew on every call, or find another text's statement once its buffer is reused
	 * (checked before the first prepare of each text; a cached one passed already) */
	if (!stmt_find(db, sql) && !sql_is_static(sql))
		return db_fail(
			db, DB_FATAL,
			"statement text is not a literal (the statement cache is keyed on its "
			"address): %.80s",
			sql);
	st = exec_once(db, sql, params, nparams, rows, affected);

	/* inside a transaction the caller's runner retries the whole transaction */
	if ((st == DB_GONE || st == DB_RETRY) && !in_tx && !db->tx_lost) {
		log_warn("%s (%s); retrying once", db_status_name(st), db->error);
		st = exec_once(db, sql, params, nparams, rows, affected);
	}
	if (!st && !db->tx_open)
		fail_clear(db);
	return st;
}

static void backoff(int attempt)
{
	unsigned ms = DB_TX_BACKOFF_BASE_MS << attempt, jitter;

	if (ms > DB_TX_BACKOFF_CAP_MS)
		ms = DB_TX_BACKOFF_CAP_MS;
	if (random_bytes(&jitter, sizeof(jitter)))
		jitter = 0;
	ms = ms / 2 + jitter % (ms / 2 + 1); /* "equal jitter": [ms/2, ms] */
	clock_sleep_ms((long)ms);
}

/* On Galera with wsrep_sync_wait, START TRANSACTION waits until this node has applied what the
 * cluster committed before it (the causality check); the statements inside must not wait again:
 * a statement waiting for the applier while its transaction holds row locks the applier needs
 * stalls both until the causal read timeout (30 s), and every read on the node behind them.
 * So the checks are off from START TRANSACTION to the end of the transaction. */
static enum db_status sync_wait_set(struct db *db, bool on)
{
	if (!db->sync_wait || !db->conn)
		return DB_OK;
	if (mysql_query(db->conn, on ? "SET SESSION wsrep_sync_wait = DEFAULT"
				     : "SET SESSION wsrep_sync_wait = 0")) {
		enum db_status st = fail(db, mysql_errno(db->conn), mysql_error(db->conn));
		if (on) /* a connection left without checks must not serve reads */
			db_disconnect(db);
		return st;
	}
	return DB_OK;
}

static enum db_status tx_attempts(struct db *db, db_tx_fn fn, void *ctx, bool read_committed)
{
	enum db_status st = DB_FATAL;

	for (int attempt = 0; attempt < DB_TX_MAX_ATTEMPTS; attempt++) {
		if (attempt)
			backoff(attempt);
		db->tx_lost = db->tx_unsure = false;
		st = db_connect(db);
		if (st == DB_GONE)
			continue;
		if (st)
			return st;
		/* SET TRANSACTION (no SESSION) applies to the next transaction only */
		if ((read_committed &&
		     mysql_query(db->conn, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED")) ||
		    mysql_query(db->conn, "START TRANSACTION")) {
			st = fail(db, mysql_errno(db->conn), mysql_error(db->conn));
			if (st == DB_GONE || st == DB_RETRY)
				continue;
			return st;
		}
		db->in_tx = true;
		db->tx_failed = DB_OK;
		st = sync_wait_set(db, false);
		if (!st)
			st = fn(db, ctx);
		if (st == DB_OK && db->tx_lost)
			st = DB_RETRY; /* FN went on after its connection closed: nothing committed
					*/
		/* a nested transaction's failure that its caller answered (503) still ends this
		 * one: the server rolled back (deadlock) or the connection is gone */
		if (db->tx_failed)
			st = db->tx_failed;
		if (st == DB_OK)
			st = tx_verify(db); /* FN's last command returned no result */
		if (st == DB_OK) {
			if (mysql_commit(db->conn)) {
				/* a lost connection during COMMIT leaves the outcome unknown: no
				 * retry */
				st = fail(db, mysql_errno(db->conn), mysql_error(db->conn));
				if (st == DB_RETRY) {
					if (db->conn)
						mysql_rollback(db->conn);
					db->in_tx = db->tx_lost = db->tx_unsure = false;
					sync_wait_set(db, true);
					continue;
				}
			}
			db->in_tx = db->tx_lost = db->tx_unsure = false;
			sync_wait_set(db, true);
			return st;
		}
		if (db->conn)
			mysql_rollback(db->conn);
		db->in_tx = db->tx_lost = db->tx_unsure = false;
		sync_wait_set(db, true);
		if (st != DB_RETRY && st != DB_GONE)
			return st;
		log_info("transaction attempt %d: %s (%s)", attempt + 1, db_status_name(st),
			 db->error);
	}
	return st;
}

static enum db_status tx_run(struct db *db, db_tx_fn fn, void *ctx, bool read_committed)
{
	enum db_status st;

	if (db->tx_open) /* nested: part of the enclosing transaction, which commits or retries */
		return fn(db, ctx);
	db->tx_open = true;
	st = tx_attempts(db, fn, ctx, read_committed);
	db->tx_open = false;
	db->tx_failed = DB_OK;
	if (!st)
		fail_clear(db);
	return st;
}

enum db_status db_tx(struct db *db, db_tx_fn fn, void *ctx)
{
	return tx_run(db, fn, ctx, false);
}

enum db_status db_tx_read_committed(struct db *db, db_tx_fn fn, void *ctx)
{
	return tx_run(db, fn, ctx, true);
}
