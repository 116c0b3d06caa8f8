/* The resource table (Redis's command table is the model): each resource the API serves
 * (environment, agent, session, work item, vault, vault credential) is described once here, and
 * retrieve, list, archive and delete are written once against that description
 * (handlers/resource.c). A resource's own file keeps only what is its own: validation, create and
 * update semantics, its rendering and its db operations, which the table points at. The route table
 * names the generic handlers with the resource as the route's data. */
#ifndef TERRARIUM_HANDLERS_RESOURCE_H
#define TERRARIUM_HANDLERS_RESOURCE_H

#include "../common/clock.h"
#include "../common/strbuf.h"
#include "../db/table.h"
#include "handlers.h"
#include "verr.h"

/* a list's cursor binding */
#define RESOURCE_FILTER_MAX (2 * CLOCK_DB_LEN + RESOURCE_ID_MAX + 16)
/* Bodies built as text go into a struct strbuf (common/strbuf.h). */
#define TEXT_PUT_LIT(b, lit) strbuf_add((b), (lit), sizeof(lit) - 1)
/* S[0..n) as a JSON string, escaped exactly as Jansson's compact dump escapes it. */
void text_put_str(struct strbuf *b, const char *s, size_t n);
/* S as a JSON string, or null when S is NULL. */
void text_put_opt_str(struct strbuf *b, const char *s);
/* KEY as it stands (the member's punctuation and name: ",\"name\":"), then VALUE as a JSON
 * string, or null when VALUE is NULL. */
void text_put_member(struct strbuf *b, const char *key, const char *value);
/* Respond STATUS with B's text as the body (B's buffer is handed over), or 500 when building
 * it ran out of memory. */
void text_respond(struct response *resp, const struct request *req, int status, struct strbuf *b);

/* Who sees a resource's rows: the filter its db operations apply with the key's fields (struct
 * db_key, db/table.h, which the generic handlers fill from the request). */
enum resource_visibility {
	RES_VIS_WORKSPACE, /* every key of the workspace (agents) */
	RES_VIS_ACCOUNT,   /* the workspace's keys but another account's `scope: account`
			    * environments and their sessions (environments, sessions) */
	RES_VIS_PARENT,	   /* the workspace's, under the resource the path names first (work
			    * items: the environment; credentials: the vault) */
};

/* A list's parameters, parsed by the generic list and the resource's list_query: the page
 * its db operation reads (include_archived only with RES_LIST_ARCHIVED), and what the cursor
 * is bound to. */
struct resource_list {
	struct db_page page;
	char filter[RESOURCE_FILTER_MAX];
};

#define RES_VERSIONED 0x1      /* retrieve takes ?version= (agents) */
#define RES_LIST_ARCHIVED 0x2  /* lists take include_archived */
#define RES_LIST_PREV_PAGE 0x4 /* a page carries "prev_page": null (sessions) */

/* Where the generic handlers find what they read in a row of the resource's SELECTs (its get
 * and list return the same columns). */
struct resource_cols {
	unsigned id, created_db; /* the list cursor's key: created_db, then id */
	unsigned archived;	 /* its cell is NULL unless archived; read only with db.archive */
};

/* The resource's db operations, with the key the generic handlers fill by the visibility rule. */
struct resource_db {
	/* One visible row (0 or 1) into ROWS; FOR_UPDATE locks it (inside a transaction). With
	 * RES_VERSIONED, K->version is the `version` query parameter (0 = current). */
	enum db_status (*get)(struct db *db, const struct db_key *k, int for_update,
			      struct db_rows *rows);
	/* Visible rows after P's cursor, at most db_page_rows(P) (one more tells a next page). */
	enum db_status (*list)(struct db *db, const struct db_key *k, const struct db_page *p,
			       struct db_rows *rows);
	/* Archive the row (read locked and not archived) at NOW, with what goes with it; in the
	 * archive's transaction. NULL: the resource has no archive. */
	enum db_status (*archive)(struct db *db, const struct db_key *k, const char *now);
	/* Delete the row: *FOUND = 0 when it is not visible; ERR set when refused (409). NULL: no
	 * delete. */
	enum db_status (*remove)(struct db *db, const struct db_key *k, int *found,
				 struct verr *err);
};

struct resource {
	const char *kind;	    /* "environment": error messages and logs */
	const char *id_prefix;	    /* "env_" */
	const char *not_found_code; /* error_code of its 404, or NULL */
	unsigned id_param;	    /* the route capture holding the id */
	enum resource_visibility visibility;
	unsigned flags;			  /* RES_* */
	const char *cursor_kind;	  /* the list cursor's kind (cursor.h) */
	long long list_default, list_max; /* `limit`'s; 0: LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT */
	const char *filters_text; /* named in the 400 for a cursor of another list, or NULL */
	struct resource_cols cols;
	/* The API object of row R: as text appended to B (-1 when it does not render), or, when
	 * put is NULL, as a JSON value (row_render's contract). */
	int (*put)(struct strbuf *b, const struct db_rows *rows, unsigned r);
	row_render render;
	/* Checks of the route before anything else (work items: the environment), or NULL:
	 * 0, or -1 with RESP filled. */
	int (*route_check)(struct worker *w, struct request *req, struct response *resp);
	/* The resource's own list parameters and the cursor's filter text into L, or NULL (the
	 * filter is then include_archived's): 0, or -1 with RESP a 400. */
	int (*list_query)(struct request *req, struct response *resp, struct resource_list *l);
	struct resource_db db;
};

extern const struct resource RES_ENVIRONMENT, RES_AGENT, RES_SESSION, RES_WORK, RES_VAULT,
	RES_VAULT_CREDENTIAL;

/* The generic handlers: the resource is the route's data (req->route_data). */
handler_func resource_retrieve, resource_list, resource_archive, resource_delete;

/* The key of RES's row ID as the request's principal sees it: RES's visibility rule (the
 * parent is the route's first capture). */
void resource_key(const struct resource *res, const struct request *req, const char *id,
		  struct db_key *k);

/* RES's row ID under resource_key's key, read by RES's get (FOR_UPDATE: locked, inside a
 * transaction) into ROWS (0 or 1 rows; the caller frees). */
enum db_status resource_get(const struct resource *res, struct db *db, const struct request *req,
			    const char *id, int for_update, struct db_rows *rows);

/* A change to one row inside resource_update's transaction: ROWS holds the row, read locked
 * (visible, not archived). It writes the change (*WROTE = 1), leaves the row as it is (*WROTE
 * stays 0), or refuses with ERR set (and DB_OK). ARG is resource_update's. */
typedef enum db_status (*resource_change)(struct db *db, const struct db_key *k,
					  const struct db_rows *rows, void *arg, int *wrote,
					  struct verr *err);

/* The metadata of a row an update patches (vaults, credentials, work items, sessions). */
struct meta_change {
	json_t *old;  /* the stored object */
	json_t *meta; /* patched; NULL when the patch was refused */
	char *text;   /* META serialised, for the write */
	int changed;  /* META differs from OLD */
};

/* STORED, the metadata cell of the row of KIND ID, patched per key with PATCH (meta_patch;
 * NULL: unchanged) into M, which meta_change_release frees whatever the outcome. DB_OK with
 * M->meta NULL and ERR set when the patch is refused; DB_CORRUPT when STORED does not parse,
 * DB_NOMEM when the result cannot be serialised (db_json_load, db_json_dump). */
enum db_status meta_change_load(struct db *db, const char *stored, const char *kind, const char *id,
				json_t *patch, struct meta_change *m, struct verr *err);
void meta_change_release(struct meta_change *m);

/* Update the row the request names (route and id already checked) in one transaction: the row
 * read locked, 400 when archived, CHANGE, the row read again when written. Answered with the
 * refusal, a database failure, RES's 404 or RES's object of the row. */
void resource_update(const struct resource *res, struct worker *w, struct request *req,
		     struct response *resp, resource_change change, void *arg);

/* resource_update's transaction without the answer, for a caller that answers itself: ROWS
 * (the caller frees it) holds the row after the change, no row when it is not visible; ERR the
 * refusal (status 0: none). */
enum db_status resource_change_run(const struct resource *res, struct worker *w,
				   struct request *req, resource_change change, void *arg,
				   struct db_rows *rows, struct verr *err);

/* Respond 200 with RES's object of row 0 of ROWS, 404 (RES's not-found) naming ID when ROWS is
 * empty, or 500 when the row does not render (logged: what did not parse, or out of memory). */
void resource_respond(const struct resource *res, struct worker *w, struct request *req,
		      struct response *resp, const struct db_rows *rows, const char *id);

/* 0 when ID has RES's id shape; else -1 with RESP RES's 404 (no query is made). */
int resource_check(const struct resource *res, struct request *req, struct response *resp,
		   const char *id);

/* Respond 200 {"data": RES's objects of the first LIMIT rows within list_page_rows's budget,
 * "next_page": cursor|null[, "prev_page": null]}; the cursor (CURSOR_KIND, FILTER) points after
 * the last row shown (columns CREATED_COL and ID_COL) when ROWS holds more. Rows that do not
 * render are logged and left out. */
void resource_page(const struct resource *res, struct worker *w, struct request *req,
		   struct response *resp, const struct db_rows *rows, long long limit,
		   const char *cursor_kind, const char *filter, unsigned created_col,
		   unsigned id_col);

#endif
