/* Idempotency-Key on POST creates (environments, sessions, agents). The SDK retries a POST
 * after a timeout; with a key, the retry gets the stored response instead of a second row. The
 * first successful response to a key is kept 24 hours; the same key with another request
 * answers 422 idempotency_key_reused. Keys are per account of a workspace: another account using
 * the same key makes its own request, never sees the first one's answer and cannot tell that the
 * key was used.
 *
 * Claim, create and stored response are one transaction (db/idempotency.h): a worker killed at
 * any instant leaves either nothing (the key is free at once) or the object with its stored
 * response (a retry replays it). A request whose key is held by a running request waits for it
 * and then replays. */
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

struct idem_ctx {
	struct worker *w;
	struct request *req;
	struct response *resp;
	handler_fn handler;
	struct idem_ref ref;
	int refused; /* the handler answered an error: roll back, the key stays free */
};

/* One attempt: claim the key, run the create in this transaction, store its response. */
static enum db_status idem_tx(struct db *db, void *arg)
{
	struct idem_ctx *c = arg;
	enum idem_claim claim;
	char *stored = NULL;
	enum db_status st;
	int status = 0;

	resp_release(c->resp);
	c->refused = 0;
	st = idem_claim(db, &c->ref, &claim, &status, &stored);
	if (st)
		return st;
	switch (claim) {
	case IDEM_NEW:
		break;
	case IDEM_REPLAY:
		c->resp->status = status;
		c->resp->body = stored;
		c->resp->body_len = strlen(stored);
		resp_header(c->resp, "idempotent-replayed", "true");
		return DB_OK;
	case IDEM_MISMATCH:
		resp_error(c->resp, c->req, 422, "idempotency_key_reused",
			   "the 'Idempotency-Key' was already used with a different request");
		return DB_OK;
	case IDEM_IN_FLIGHT:
		resp_error(
			c->resp, c->req, 409, NULL,
			"a request with this 'Idempotency-Key' is still in progress; retry later");
		resp_set_retry(c->resp, 1);
		return DB_OK;
	}
	c->handler(c->w, c->req, c->resp);
	/* only a success is kept: an error leaves the key free for a corrected retry */
	if (c->resp->status == 200 && c->resp->body)
		return idem_store(db, &c->ref, c->resp->status, c->resp->body);
	c->refused = 1;
	return DB_CONFLICT;
}

void idem_run(struct worker *w, struct request *req, struct response *resp, handler_fn handler)
{
	const char *key = req_env(req, "HTTP_IDEMPOTENCY_KEY");
	char now[CLOCK_DB_LEN], expires[CLOCK_DB_LEN], stale[CLOCK_DB_LEN];
	unsigned char hash[SHA256_LEN];
	struct idem_ctx c = { w, req, resp, handler, { 0 }, 0 };
	enum db_status st;

	if (!key) {
		handler(w, req, resp);
		return;
	}
	if (!key_valid(key)) {
		resp_error(resp, req, 400, NULL,
			   "the 'Idempotency-Key' header must be 1-%d printable ASCII characters",
			   IDEM_KEY_MAX);
		return;
	}
	request_hash(req, hash);
	clock_now(now, NULL);
	clock_in(IDEM_TTL_S, expires, NULL);
	clock_in(-IDEM_IN_FLIGHT_MAX_S, stale, NULL);
	c.ref = (struct idem_ref){ req->principal->workspace_id,
				   req->principal->account_id,
				   key,
				   hash,
				   now,
				   expires,
				   stale };
	st = db_tx(w->db, idem_tx, &c);
	if (st && !(st == DB_CONFLICT && c.refused)) {
		resp_release(resp);
		handle_db_error(w, req, resp, st);
	}
}
