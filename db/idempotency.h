/* The idempotency_keys table (API.md: Idempotency-Key on POST creates). */
#ifndef TERRARIUM_DB_IDEMPOTENCY_H
#define TERRARIUM_DB_IDEMPOTENCY_H

#include "db.h"

#define IDEM_TTL_S (24 * 3600)
#define IDEM_IN_FLIGHT_MAX_S 120 /* longer than any request may take (nginx: 30 s) */

enum idem_claim {
	IDEM_NEW,       /* the key is ours now: run the request, then idem_store or idem_release */
	IDEM_REPLAY,    /* a stored response for the same request: *STATUS and *RESPONSE */
	IDEM_MISMATCH,  /* the key was used for a different request */
	IDEM_IN_FLIGHT, /* the first request with this key has not finished */
};

/* Take KEY of workspace WS for a request whose hash is HASH: insert an in-flight row, or find
 * the live row. A row that expired, or that is still in flight but was created before STALE
 * (its request died), is taken over. On IDEM_REPLAY, *RESPONSE is a new string (caller frees). */
enum db_status idem_claim(struct db *db, const char *ws, const char *key,
			  const unsigned char hash[32], const char *now, const char *expires,
			  const char *stale, enum idem_claim *out, int *status, char **response);

/* Store the response of the request that holds KEY. */
enum db_status idem_store(struct db *db, const char *ws, const char *key, int status,
			  const char *response);

/* Give KEY up (the request failed in a way worth retrying): remove its in-flight row. */
enum db_status idem_release(struct db *db, const char *ws, const char *key);

/* Remove up to LIMIT expired keys. *REMOVED receives the count. */
enum db_status idem_expire(struct db *db, const char *now, long limit,
			   unsigned long long *removed);

#endif
