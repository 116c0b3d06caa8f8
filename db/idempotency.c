#include "idempotency.h"

#include <stdlib.h>
#include <string.h>

struct claim_ctx {
	const char *ws, *key, *now, *expires, *stale;
	const unsigned char *hash;
	enum idem_claim out;
	int status;
	char *response;
};

static enum db_status claim_tx(struct db *db, void *arg)
{
	/* a row is taken over when it expired, or when it stayed in flight past any request's
	 * time limit (its request died with its worker) */
	static const char sel[] =
		"SELECT request_hash, status, response,"
		" expires_at < ? OR (status = 0 AND created_at < ?)"
		" FROM idempotency_keys WHERE workspace_id = ? AND idem_key = ? FOR UPDATE";
	static const char ins[] = "INSERT INTO idempotency_keys (workspace_id, idem_key,"
				  " request_hash, status, created_at, expires_at)"
				  " VALUES (?, ?, ?, 0, ?, ?)";
	static const char takeover[] =
		"UPDATE idempotency_keys SET request_hash = ?, status = 0, response = NULL,"
		" created_at = ?, expires_at = ? WHERE workspace_id = ? AND idem_key = ?";
	struct claim_ctx *c = arg;
	struct db_val hash = DB_STRN((const char *)c->hash, 32);
	struct db_rows rows;
	enum db_status st;

	free(c->response);
	c->response = NULL;
	st = db_exec(db, sel,
		     (struct db_val[]){ DB_STR(c->now), DB_STR(c->stale), DB_STR(c->ws),
					DB_STR(c->key) },
		     4, &rows, NULL);
	if (st)
		return st;
	if (!rows.nrows) {
		db_rows_free(&rows);
		c->out = IDEM_NEW;
		/* a concurrent first use of the same key loses here with a duplicate key: the
		 * transaction is retried and then finds the row */
		st = db_exec(db, ins,
			     (struct db_val[]){ DB_STR(c->ws), DB_STR(c->key), hash, DB_STR(c->now),
						DB_STR(c->expires) },
			     5, NULL, NULL);
		return st == DB_CONFLICT ? DB_RETRY : st;
	}
	if (!strcmp(db_cell(&rows, 0, 3), "1")) {
		db_rows_free(&rows);
		c->out = IDEM_NEW;
		return db_exec(db, takeover,
			       (struct db_val[]){ hash, DB_STR(c->now), DB_STR(c->expires),
						  DB_STR(c->ws), DB_STR(c->key) },
			       5, NULL, NULL);
	}
	if (rows.len[0] != 32 || memcmp(db_cell(&rows, 0, 0), c->hash, 32))
		c->out = IDEM_MISMATCH;
	else if (!strcmp(db_cell(&rows, 0, 1), "0") || !db_cell(&rows, 0, 2))
		c->out = IDEM_IN_FLIGHT;
	else {
		c->out = IDEM_REPLAY;
		c->status = atoi(db_cell(&rows, 0, 1));
		c->response = strdup(db_cell(&rows, 0, 2));
		if (!c->response)
			st = DB_FATAL;
	}
	db_rows_free(&rows);
	return st;
}

enum db_status idem_claim(struct db *db, const char *ws, const char *key,
			  const unsigned char hash[32], const char *now, const char *expires,
			  const char *stale, enum idem_claim *out, int *status, char **response)
{
	struct claim_ctx c = { ws, key, now, expires, stale, hash, IDEM_NEW, 0, NULL };
	enum db_status st = db_tx(db, claim_tx, &c);

	*out = c.out;
	*status = c.status;
	*response = st ? NULL : c.response;
	if (st)
		free(c.response);
	return st;
}

enum db_status idem_store(struct db *db, const char *ws, const char *key, int status,
			  const char *response)
{
	static const char sql[] = "UPDATE idempotency_keys SET status = ?, response = ?"
				  " WHERE workspace_id = ? AND idem_key = ? AND status = 0";
	return db_exec(db, sql,
		       (struct db_val[]){ DB_INT(status), DB_STR(response), DB_STR(ws), DB_STR(key) },
		       4, NULL, NULL);
}

enum db_status idem_release(struct db *db, const char *ws, const char *key)
{
	static const char sql[] =
		"DELETE FROM idempotency_keys WHERE workspace_id = ? AND idem_key = ? AND status = 0";
	return db_exec(db, sql, (struct db_val[]){ DB_STR(ws), DB_STR(key) }, 2, NULL, NULL);
}

enum db_status idem_expire(struct db *db, const char *now, long limit,
			   unsigned long long *removed)
{
	static const char sql[] = "DELETE FROM idempotency_keys WHERE expires_at < ? LIMIT ?";
	return db_exec(db, sql, (struct db_val[]){ DB_STR(now), DB_INT(limit) }, 2, NULL, removed);
}
