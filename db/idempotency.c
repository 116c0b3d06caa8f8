#include "idempotency.h"

#include <stdlib.h>
#include <string.h>

enum db_status idem_claim(struct db *db, const struct idem_ref *ref, enum idem_claim *out,
			  int *status, char **response)
{
	/* a row is taken over when it expired, or when it is an in-flight row older than any
	 * request's time limit (rows written before claims and creates shared a transaction) */
	static const char sel[] =
		"SELECT request_hash, status, response,"
		" expires_at < ? OR (status = 0 AND created_at < ?)"
		" FROM idempotency_keys WHERE workspace_id = ? AND account_id = ? AND idem_key = ?"
		" FOR UPDATE";
	static const char ins[] = "INSERT INTO idempotency_keys (workspace_id, account_id,"
				  " idem_key, request_hash, status, created_at, expires_at)"
				  " VALUES (?, ?, ?, ?, 0, ?, ?)";
	static const char takeover[] =
		"UPDATE idempotency_keys SET request_hash = ?, status = 0, response = NULL,"
		" created_at = ?, expires_at = ?"
		" WHERE workspace_id = ? AND account_id = ? AND idem_key = ?";
	struct db_val hash = DB_STRN((const char *)ref->hash, SHA256_LEN);
	struct db_rows rows;
	enum db_status st;

	*out = IDEM_NEW;
	*status = 0;
	*response = NULL;
	/* the insert waits while another transaction holds an uncommitted row for the key, then
	 * either succeeds (that one rolled back) or meets the committed row */
	st = db_exec(db, ins,
		     DB_PARAMS(DB_STR(ref->ws), DB_STR(ref->account), DB_STR(ref->key), hash,
			       DB_STR(ref->now), DB_STR(ref->expires)),
		     NULL, NULL);
	if (st != DB_CONFLICT)
		return st;
	st = db_exec(db, sel,
		     DB_PARAMS(DB_STR(ref->now), DB_STR(ref->stale), DB_STR(ref->ws),
			       DB_STR(ref->account), DB_STR(ref->key)),
		     &rows, NULL);
	if (st)
		return st;
	if (!rows.nrows) { /* removed since (expired): the retry inserts it */
		db_rows_free(&rows);
		return DB_RETRY;
	}
	if (!strcmp(db_cell(&rows, 0, 3), "1")) {
		db_rows_free(&rows);
		return db_exec(db, takeover,
			       DB_PARAMS(hash, DB_STR(ref->now), DB_STR(ref->expires),
					 DB_STR(ref->ws), DB_STR(ref->account), DB_STR(ref->key)),
			       NULL, NULL);
	}
	if (rows.len[0] != SHA256_LEN || memcmp(db_cell(&rows, 0, 0), ref->hash, SHA256_LEN))
		*out = IDEM_MISMATCH;
	else if (!strcmp(db_cell(&rows, 0, 1), "0") || !db_cell(&rows, 0, 2))
		*out = IDEM_IN_FLIGHT;
	else {
		*out = IDEM_REPLAY;
		*status = atoi(db_cell(&rows, 0, 1));
		*response = strdup(db_cell(&rows, 0, 2));
		if (!*response)
			st = DB_FATAL;
	}
	db_rows_free(&rows);
	return st;
}

enum db_status idem_store(struct db *db, const struct idem_ref *ref, int status,
			  const char *response)
{
	static const char sql[] = "UPDATE idempotency_keys SET status = ?, response = ?"
				  " WHERE workspace_id = ? AND account_id = ? AND idem_key = ?"
				  " AND status = 0";
	unsigned long long n = 0;
	enum db_status st = db_exec(db, sql,
				    DB_PARAMS(DB_INT(status), DB_STR(response), DB_STR(ref->ws),
					      DB_STR(ref->account), DB_STR(ref->key)),
				    NULL, &n);

	return st ? st : n == 1 ? DB_OK : DB_FATAL;
}

enum db_status idem_expire(struct db *db, const char *now, long limit, unsigned long long *removed)
{
	static const char sql[] = "DELETE FROM idempotency_keys WHERE expires_at < ? LIMIT ?";
	return db_exec(db, sql, DB_PARAMS(DB_STR(now), DB_INT(limit)), NULL, removed);
}
