/* What every handler sees: the worker's long-lived state, the parsed request, the response.
 * Handlers validate, persist through db/, and fill the response; they never write to the
 * socket. */
#ifndef TERRARIUM_HANDLERS_H
#define TERRARIUM_HANDLERS_H

#include "../common/backend.h"
#include "../common/config.h"
#include "../common/crypto.h"
#include "../common/vault_crypto.h"
#include "../db/db.h"
#include "../http/http.h"
#include "auth.h"
#include "verr.h"

struct worker {
	const struct config *cfg;
	struct db *db;
	const struct backend_caps *caps;
	unsigned char cursor_key[SHA256_LEN];
	int cursor_key_loaded;
	struct auth_cache_entry auth_cache[AUTH_CACHE_SLOTS]; /* auth.h */
	/* the vault key (docs/vaults.md), loaded before the workers forked; borrowed, read-only,
	 * and when not loaded its error says why */
	const struct vault_key *vault_key;
};

/* In the supervisor before the workers fork (or in the one worker of the fd 0 and CGI modes):
 * the vault key, the stream slots, the unknown-key guard. 0, or -1 to stop serving. */
int api_init(const struct config *cfg);

/* A worker's state for CFG (borrowed; outlives it): a struct worker, or NULL when out of
 * memory. Freed by api_worker_free (NULL is fine). Typed for fcgi/'s struct serve_app. */
void *api_worker_new(const struct config *cfg);
void api_worker_free(void *worker);

/* A route's handler: answers REQ into RESP. The handlers the route table names are declared
 * with this type (handler_func name;), so their signature is stated here once. */
typedef void handler_func(struct worker *w, struct request *req, struct response *resp);
typedef handler_func *handler_fn;

/* Map a database failure to the response: DB_GONE/DB_RETRY -> 503 overloaded_error with
 * retry-after; anything else -> 500 api_error. Logs the failure's class (database error, out of
 * memory, corrupt stored data...) and its message (db_error). */
void handle_db_error(struct worker *w, struct request *req, struct response *resp,
		     enum db_status st);

/* A failure on the handler's side (out of memory, a row that does not render): logs WHAT with
 * the request and responds 500 api_error. */
void respond_internal(const struct request *req, struct response *resp, const char *what);

/* Load the deployment's list-cursor key into W once, the one loader every list uses. 0, or -1
 * with RESP filled: 503 when the database is unavailable (docs/api.md §2: retry later); a
 * missing secret (migrations not applied) is the deployment's fault, not transient: 500. */
int worker_cursor_key(struct worker *w, struct request *req, struct response *resp);

/* Query parameter NAME as a count in MIN..MAX into *OUT (DEF when absent): digits only (no
 * sign, space or exponent). 0, or -1 with RESP a 400 naming NAME. */
int query_count(struct request *req, struct response *resp, const char *name, long long min,
		long long max, long long def, long long *out);

/* Query parameter NAME (an RFC 3339 timestamp) as a DATETIME literal in OUT (CLOCK_DB_LEN
 * bytes; "" when absent). 0, or -1 with RESP a 400 naming NAME. */
int query_time(struct request *req, struct response *resp, const char *name, char *out);

/* A list's `limit`: 1..LIST_MAX_LIMIT, LIST_DEFAULT_LIMIT when absent (docs/api.md). */
#define LIST_DEFAULT_LIMIT 100
#define LIST_MAX_LIMIT 1000
/* Pages of at most this many rows are light; larger ones spend nginx's heavy budget. */
#define LIST_LIGHT_LIMIT 100
/* A list page ends early, with next_page set, rather than carry more than this many stored
 * bytes (docs/limits.md): a page of large sessions is bounded like a page of small ones. */
#define LIST_PAGE_BYTES_MAX (1024 * 1024)

/* How many of the first LIMIT rows of ROWS make the page: rows are taken while their stored
 * bytes (the cells' lengths) stay within LIST_PAGE_BYTES_MAX, at least one. When fewer than
 * ROWS holds are taken, the page's next_page points after the last one taken. */
unsigned list_page_rows(const struct db_rows *rows, long long limit);

/* The `limit` of a list (1..MAX, DEF when absent) by query_count's rule. Behind nginx (the
 * TERRARIUM_HEAVY parameter is set), a limit over LIST_LIGHT_LIMIT that nginx did not count as
 * heavy is refused with 400. */
int query_limit(struct request *req, struct response *resp, long long max, long long def,
		long long *out);

/* Run the create HANDLER under the request's Idempotency-Key (handlers/idempotency.c): without
 * one it just runs; with one, the claim, HANDLER's writes and the stored response are one
 * transaction (HANDLER's db_tx calls join it), or RESP is a replay or a refusal. */
void idem_run(struct worker *w, struct request *req, struct response *resp, handler_fn handler);

/* Renders row R of a resource SELECT: a new reference, or NULL when a stored JSON cell does not
 * parse (read with db_json_load: DB_CORRUPT and its message recorded on DB) or out of memory
 * (nothing recorded). */
typedef json_t *(*row_render)(struct db *db, const struct db_rows *rows, unsigned r);

/* Size of an id buffer: the longest id accepted in a path or a body is RESOURCE_ID_MAX - 1
 * characters (the ids this API makes are a prefix and ID_RANDOM_LEN characters). */
#define RESOURCE_ID_MAX AUTH_ID_MAX

/* 1 when S is PREFIX followed by [0-9A-Za-z], shorter than RESOURCE_ID_MAX (the shape of every
 * id this API makes). */
int resource_id_valid(const char *s, const char *prefix);

/* A new id of that shape, PREFIX and ID_RANDOM_LEN random characters, into ID. 0, or -1 with
 * RESP a 500 (logged) when it does not fit. */
int resource_new_id(const struct request *req, struct response *resp, const char *prefix,
		    char id[RESOURCE_ID_MAX]);

/* The list's `page` query parameter (absent or empty: none, *PAGED = 0) checked against KIND and
 * FILTER into CREATED and ID (CURSOR_FIELD_MAX each); the cursor key is loaded first (the page
 * writes the next cursor with it). 0, or -1 with RESP filled: a 400 (FILTERS_TEXT, when given,
 * names the filters a cursor is bound to), or worker_cursor_key's. */
int page_parse(struct worker *w, struct request *req, struct response *resp, const char *kind,
	       const char *filter, const char *filters_text, char *created, char *id, int *paged);

/* Answer the refusal ERR: its status, error_code and message. */
void respond_verr(struct request *req, struct response *resp, const struct verr *err);

/* The end of a write: ST (handle_db_error) or a refusal ERR (respond_verr) answered into RESP:
 * 1; else 0 (nothing answered, the caller responds). */
int respond_refusal(struct worker *w, struct request *req, struct response *resp, enum db_status st,
		    const struct verr *err);

/* The handlers the route table (handlers/routes.c) names, by resource. */
handler_func health_live, health_ready;
handler_func env_create, env_update;
handler_func session_create, session_update;
handler_func agent_create, agent_update, agent_versions;
/* Vaults and their credentials (handlers/vaults.c, docs/vaults.md). */
handler_func vault_create, vault_update, cred_create, cred_update;
/* Session events (handlers/events.c, handlers/stream.c, docs/events.md). */
handler_func events_send, events_list, events_stream;
/* Map the slots counting the streams workers hold, shared by the workers forked after it
 * (handlers/stream.c). 0, or -1: each worker then lets every stream through. */
int stream_slots_init(void);
/* The self-hosted work queue (handlers/work.c, docs/work-queue.md). */
handler_func work_poll, work_ack, work_heartbeat, work_stop, work_update, work_stats;

#endif
