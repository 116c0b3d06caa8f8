/* The idempotency_keys table (docs/api.md: Idempotency-Key on POST creates). A key is claimed, its
 * request's object created and the response stored in ONE transaction (handlers/idempotency.c
 * runs the create inside it): a crash at any instant leaves either no object and no key row
 * (the transaction rolls back when the worker's connection closes), or the object and the
 * stored response together. A second request with the same key waits on the first's row lock
 * and then replays; there is no committed "in flight" state. */
#ifndef TERRARIUM_DB_IDEMPOTENCY_H
#define TERRARIUM_DB_IDEMPOTENCY_H

#include "../common/crypto.h"
#include "db.h"

#define IDEM_TTL_S (24 * 3600)
#define IDEM_IN_FLIGHT_MAX_S 120 /* in-flight rows of older versions older than this are free */

enum idem_claim {
	IDEM_NEW,	/* the key is ours in this transaction: create, then idem_store */
	IDEM_REPLAY,	/* a stored response for the same request: *STATUS and *RESPONSE */
	IDEM_MISMATCH,	/* the key was used for a different request */
	IDEM_IN_FLIGHT, /* an in-flight row left by an older version, not yet stale */
};

/* Which key (a key belongs to one account of one workspace: another account's use of the same
 * key is another row), for which request, and the times that decide expiry (DATETIME
 * literals). */
struct idem_ref {
	const char *ws, *account, *key;
	const unsigned char *hash; /* SHA256_LEN bytes: SHA-256 of the request */
	const char *now, *expires, *stale;
};

/* Inside a transaction: take REF's key (insert its row, or take over an expired/stale one) or
 * find its stored row. On IDEM_REPLAY, *RESPONSE is a new string (caller frees). The row stays
 * locked until the transaction ends. */
enum db_status idem_claim(struct db *db, const struct idem_ref *ref, enum idem_claim *out,
			  int *status, char **response);

/* Inside the claiming transaction: store the response of REF's request. */
enum db_status idem_store(struct db *db, const struct idem_ref *ref, int status,
			  const char *response);

/* Remove up to LIMIT expired keys. *REMOVED receives the count. */
enum db_status idem_expire(struct db *db, const char *now, long limit, unsigned long long *removed);

#endif
