/* Idempotency-Key on POST creates (environments, sessions, agents). The SDK retries a POST
 * after a timeout; with a key, the retry gets the stored response instead of a second row. The
 * first successful response to a key is kept 24 hours; the same key with another request
 * answers 422 idempotency_key_reused; a key whose first request is still running answers 409
 * (retry later). Keys are per workspace. */
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/log.h"
#include "../db/idempotency.h"
#include "handlers.h"

#define IDEM_KEY_MAX 255

static int key_valid(const char *key)
{
	size_t n = strlen(key);

	if (!n || n > IDEM_KEY_MAX)
		return 0;
	for (const char *p = key; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
			return 0;
	return 1;
}

static void request_hash(const struct request *req, unsigned char out[SHA256_LEN])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, req->method, strlen(req->method));
	sha256_update(&s, "\n", 1);
	sha256_update(&s, req->path, strlen(req->path));
	sha256_update(&s, "\n", 1);
	sha256_update(&s, req->body ? req->body : "", req->body_len);
	sha256_final(&s, out);
}

int idem_begin(struct worker *w, struct request *req, struct response *resp, int *held)
{
	const char *key = req_env(req, "HTTP_IDEMPOTENCY_KEY");
	char now[CLOCK_DB_LEN], expires[CLOCK_DB_LEN], stale[CLOCK_DB_LEN];
	unsigned char hash[SHA256_LEN];
	enum idem_claim claim;
	char *stored = NULL;
	enum db_status st;
	int status = 0;

	*held = 0;
	if (!key)
		return 0;
	if (!key_valid(key)) {
		resp_error(resp, req, 400, NULL,
			   "the 'Idempotency-Key' header must be 1-%d printable ASCII characters",
			   IDEM_KEY_MAX);
		return 1;
	}
	request_hash(req, hash);
	clock_now(now, NULL);
	clock_in(IDEM_TTL_S, expires, NULL);
	clock_in(-IDEM_IN_FLIGHT_MAX_S, stale, NULL);
	st = idem_claim(w->db, req->auth.workspace_id, key, hash, now, expires, stale, &claim,
			&status, &stored);
	if (st) {
		handle_db_error(w, req, resp, st);
		return 1;
	}
	switch (claim) {
	case IDEM_NEW:
		*held = 1;
		return 0;
	case IDEM_REPLAY:
		free(resp->body);
		resp->status = status;
		resp->body = stored;
		resp->body_len = strlen(stored);
		resp_header(resp, "idempotent-replayed", "true");
		return 1;
	case IDEM_MISMATCH:
		resp_error(resp, req, 422, "idempotency_key_reused",
			   "the 'Idempotency-Key' was already used with a different request");
		return 1;
	case IDEM_IN_FLIGHT:
		resp_error(resp, req, 409, NULL,
			   "a request with this 'Idempotency-Key' is still in progress; retry later");
		resp_set_retry(resp, 1);
		return 1;
	}
	return 0;
}

void idem_end(struct worker *w, struct request *req, struct response *resp)
{
	const char *key = req_env(req, "HTTP_IDEMPOTENCY_KEY");
	enum db_status st;

	/* only a success is kept: an error leaves the key free for a corrected retry */
	if (resp->status == 200 && resp->body)
		st = idem_store(w->db, req->auth.workspace_id, key, resp->status, resp->body);
	else
		st = idem_release(w->db, req->auth.workspace_id, key);
	if (st)
		log_error("idempotency key of %s: database %s: %s", req->request_id,
			  db_status_name(st), db_error(w->db));
}
