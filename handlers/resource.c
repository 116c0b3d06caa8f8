/* Retrieve, list, archive and delete, written once against the resource table (resource.h). */
#include "resource.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "cursor.h"
#include "env_validate.h"

/* ---- text bodies ---- */

/* '"' and '\\', the five short escapes, other control characters as \u00XX (upper-case hex);
 * UTF-8 passes through (the database's utf8mb4 columns hold valid UTF-8). */
void text_put_str(struct strbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	/* the characters with a short escape, and the letter of each after its backslash */
	static const char short_char[] = "\"\\\b\f\n\r\t", short_letter[] = "\"\\bfnrt";

	if (strbuf_grow(b, 2 + 6 * n))
		return;
	b->buf[b->len++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char *o = b->buf + b->len;
		const char *e;

		if (c >= 0x20 && c != '"' && c != '\\') {
			*o = (char)c;
			b->len++;
			continue;
		}
		o[0] = '\\';
		e = memchr(short_char, c, sizeof(short_char) - 1);
		if (e) {
			o[1] = short_letter[e - short_char];
			b->len += 2;
		} else {
			memcpy(o + 1, "u00", 3);
			o[4] = hex[c >> 4];
			o[5] = hex[c & 15];
			b->len += 6;
		}
	}
	b->buf[b->len++] = '"';
	b->buf[b->len] = '\0';
}

void text_put_opt_str(struct strbuf *b, const char *s)
{
	if (s)
		text_put_str(b, s, strlen(s));
	else
		TEXT_PUT_LIT(b, "null");
}

void text_put_member(struct strbuf *b, const char *key, const char *value)
{
	strbuf_addstr(b, key);
	text_put_opt_str(b, value);
}

void text_respond(struct response *resp, const struct request *req, int status, struct strbuf *b)
{
	if (b->oom || !b->buf) {
		strbuf_release(b);
		respond_internal(req, resp, "out of memory building the body");
		return;
	}
	free(resp->body);
	resp->status = status;
	resp->body = strbuf_detach(b, &resp->body_len);
}

/* Append RES's object of row R: its text, or its JSON value dumped compact (what resp_json
 * sends). -1 when the row does not render (what did not parse recorded on DB). */
static int res_put(const struct resource *res, struct db *db, struct strbuf *b,
		   const struct db_rows *rows, unsigned r)
{
	json_t *obj;
	size_t n;

	if (res->put)
		return res->put(b, rows, r);
	obj = res->render(db, rows, r);
	if (!obj)
		return -1;
	n = json_dumpb(obj, NULL, 0, JSON_COMPACT);
	if (n && !strbuf_grow(b, n)) {
		json_dumpb(obj, b->buf + b->len, n, JSON_COMPACT);
		b->len += n;
		b->buf[b->len] = '\0';
	} else {
		b->oom = 1;
	}
	json_decref(obj);
	return 0;
}

/* ---- pieces ---- */

void resource_key(const struct resource *res, const struct request *req, const char *id,
		  struct db_key *k)
{
	memset(k, 0, sizeof(*k));
	k->workspace_id = req->principal->workspace_id;
	k->account_id = res->visibility == RES_VIS_ACCOUNT ? req->principal->account_id : NULL;
	k->parent_id = res->visibility == RES_VIS_PARENT ? req->params[0] : NULL;
	k->id = id;
}

enum db_status resource_get(const struct resource *res, struct db *db, const struct request *req,
			    const char *id, int for_update, struct db_rows *rows)
{
	struct db_key k;

	resource_key(res, req, id, &k);
	return res->db.get(db, &k, for_update, rows);
}

/* RES's 404 naming ID (its first 64 bytes: an id not yet checked may be anything). */
static void res_not_found(const struct resource *res, struct request *req, struct response *resp,
			  const char *id)
{
	resp_error(resp, req, 404, res->not_found_code, "%s '%.64s' not found", res->kind, id);
}

int resource_check(const struct resource *res, struct request *req, struct response *resp,
		   const char *id)
{
	if (resource_id_valid(id, res->id_prefix))
		return 0;
	res_not_found(res, req, resp, id);
	return -1;
}

/* Why the last row did not render, for the log: the stored cell that did not parse (db_json_load
 * recorded it), else memory. */
static enum db_status res_unrendered(const struct worker *w)
{
	return db_last_status(w->db) ? db_last_status(w->db) : DB_NOMEM;
}

void resource_respond(const struct resource *res, struct worker *w, struct request *req,
		      struct response *resp, const struct db_rows *rows, const char *id)
{
	struct strbuf b = STRBUF_INIT;

	if (!rows->nrows) {
		res_not_found(res, req, resp, id);
		return;
	}
	if (res_put(res, w->db, &b, rows, 0)) {
		strbuf_release(&b);
		handle_db_error(w, req, resp, res_unrendered(w));
		return;
	}
	text_respond(resp, req, 200, &b);
}

/* The route's resource, after its route check and the shape of its id, and into K the key of
 * the row the route names. NULL with RESP filled. */
static const struct resource *res_route(struct worker *w, struct request *req,
					struct response *resp, struct db_key *k)
{
	const struct resource *res = req->route_data;

	if (res->route_check && res->route_check(w, req, resp))
		return NULL;
	if (resource_check(res, req, resp, req->params[res->id_param]))
		return NULL;
	resource_key(res, req, req->params[res->id_param], k);
	return res;
}

/* ---- retrieve ---- */

void resource_retrieve(struct worker *w, struct request *req, struct response *resp)
{
	struct db_key k;
	const struct resource *res = res_route(w, req, resp, &k);
	struct db_rows rows;
	enum db_status st;

	if (!res)
		return;
	if ((res->flags & RES_VERSIONED) &&
	    query_count(req, resp, "version", 1, LLONG_MAX, 0, &k.version))
		return;
	st = res->db.get(w->db, &k, 0, &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	if (!rows.nrows && k.version)
		resp_error(resp, req, 404, res->not_found_code, "%s '%s' version %lld not found",
			   res->kind, k.id, k.version);
	else
		resource_respond(res, w, req, resp, &rows, k.id);
	db_rows_free(&rows);
}

/* ---- changes: archive and update ---- */

struct change_ctx {
	const struct resource *res;
	const struct db_key *key;
	resource_change change;
	void *arg;
	int refuse_archived; /* an update: 400 when archived (an archive leaves the row as it is) */
	struct db_rows rows; /* the row after the change */
	struct verr err;     /* set when the change is refused */
};

/* The row locked first, then changed, then read again when written (db_tx may run it again). */
static enum db_status change_tx(struct db *db, void *arg)
{
	struct change_ctx *c = arg;
	const struct resource *res = c->res;
	enum db_status st;
	int wrote = 0;

	db_rows_free(&c->rows);
	memset(&c->rows, 0, sizeof(c->rows));
	memset(&c->err, 0, sizeof(c->err));
	st = res->db.get(db, c->key, 1, &c->rows);
	if (st || !c->rows.nrows)
		return st;
	if (res->db.archive && db_cell(&c->rows, 0, res->cols.archived)) {
		if (c->refuse_archived)
			verr_set(&c->err, 400, NULL, "%s '%s' is archived and cannot be updated",
				 res->kind, c->key->id);
		return DB_OK;
	}
	st = c->change(db, c->key, &c->rows, c->arg, &wrote, &c->err);
	if (!st && wrote) {
		db_rows_free(&c->rows);
		st = res->db.get(db, c->key, 0, &c->rows);
	}
	return st;
}

/* RES's row K changed by CHANGE (with ARG) in one transaction (change_tx); ROWS (the caller
 * frees it) and ERR hold the outcome. */
static enum db_status change_in_tx(const struct resource *res, struct worker *w,
				   const struct db_key *k, resource_change change, void *arg,
				   int refuse_archived, struct db_rows *rows, struct verr *err)
{
	struct change_ctx c = { .res = res,
				.key = k,
				.change = change,
				.arg = arg,
				.refuse_archived = refuse_archived };
	enum db_status st = db_tx(w->db, change_tx, &c);

	*rows = c.rows;
	*err = c.err;
	return st;
}

/* change_in_tx, answered: the refusal, a database failure, RES's 404 or the row. */
static void change_answer(const struct resource *res, struct worker *w, struct request *req,
			  struct response *resp, const struct db_key *k, resource_change change,
			  void *arg, int refuse_archived)
{
	struct db_rows rows;
	struct verr err;
	enum db_status st = change_in_tx(res, w, k, change, arg, refuse_archived, &rows, &err);

	if (!respond_refusal(w, req, resp, st, &err))
		resource_respond(res, w, req, resp, &rows, k->id);
	db_rows_free(&rows);
}

enum db_status resource_change_run(const struct resource *res, struct worker *w,
				   struct request *req, resource_change change, void *arg,
				   struct db_rows *rows, struct verr *err)
{
	struct db_key k;

	resource_key(res, req, req->params[res->id_param], &k);
	return change_in_tx(res, w, &k, change, arg, 1, rows, err);
}

void resource_update(const struct resource *res, struct worker *w, struct request *req,
		     struct response *resp, resource_change change, void *arg)
{
	struct db_key k;

	resource_key(res, req, req->params[res->id_param], &k);
	change_answer(res, w, req, resp, &k, change, arg, 1);
}

/* The archive (resource_change; ARG is the resource). The row is locked before the time is
 * taken: a writer that held the row (a session creation's hold on its environment) has
 * committed by then, so archived_at is later than what it wrote. Archiving twice returns the
 * row unchanged (change_tx). */
static enum db_status archive_change(struct db *db, const struct db_key *k,
				     const struct db_rows *rows, void *arg, int *wrote,
				     struct verr *err)
{
	const struct resource *res = arg;
	char now_db[CLOCK_DB_LEN];

	(void)rows;
	(void)err;
	clock_now(now_db, NULL);
	*wrote = 1;
	return res->db.archive(db, k, now_db);
}

void resource_archive(struct worker *w, struct request *req, struct response *resp)
{
	struct db_key k;
	const struct resource *res = res_route(w, req, resp, &k);

	if (!res)
		return;
	if (req->json && json_object_size(req->json)) {
		resp_error(resp, req, 400, NULL, "unknown field '%.64s': archive takes no fields",
			   json_object_iter_key(json_object_iter(req->json)));
		return;
	}
	change_answer(res, w, req, resp, &k, archive_change, (void *)res, 0);
}

enum db_status meta_change_load(struct db *db, const char *stored, const char *kind, const char *id,
				json_t *patch, struct meta_change *m, struct verr *err)
{
	enum db_status st;

	memset(m, 0, sizeof(*m));
	st = db_json_load_object(db, stored, kind, id, "metadata", &m->old);
	if (st)
		return st;
	m->meta = meta_patch(m->old, patch, "metadata", err);
	if (!m->meta)
		return DB_OK;
	m->changed = !json_equal(m->meta, m->old);
	return db_json_dump(db, m->meta, kind, id, "metadata", &m->text);
}

void meta_change_release(struct meta_change *m)
{
	json_decref(m->old);
	json_decref(m->meta);
	free(m->text);
}

/* ---- delete ---- */

void resource_delete(struct worker *w, struct request *req, struct response *resp)
{
	struct db_key k;
	const struct resource *res = res_route(w, req, resp, &k);
	struct verr err = { 0 };
	enum db_status st;
	int found = 0;

	if (!res)
		return;
	st = res->db.remove(w->db, &k, &found, &err);
	if (respond_refusal(w, req, resp, st, &err))
		return;
	if (!found)
		res_not_found(res, req, resp, k.id);
	else {
		char type[RESOURCE_ID_MAX];

		snprintf(type, sizeof(type), "%s_deleted", res->kind);
		resp_json(resp, 200, json_pack("{s:s, s:s}", "id", k.id, "type", type));
	}
}

/* ---- list ---- */

void resource_page(const struct resource *res, struct worker *w, struct request *req,
		   struct response *resp, const struct db_rows *rows, long long limit,
		   const char *cursor_kind, const char *filter, unsigned created_col,
		   unsigned id_col)
{
	char next[CURSOR_MAX];
	struct strbuf b = STRBUF_INIT;
	unsigned shown = list_page_rows(rows, limit), put = 0;

	/* {"data":[...],"next_page":...[,"prev_page":null]}: the order json_pack gave these keys */
	TEXT_PUT_LIT(&b, "{\"data\":[");
	for (unsigned r = 0; r < shown; r++) {
		size_t mark = b.len;

		if (put)
			TEXT_PUT_LIT(&b, ",");
		if (res_put(res, w->db, &b, rows, r)) {
			log_error("%s %s left out of the page: %s: %s", res->kind,
				  db_cell(rows, r, id_col), db_status_name(res_unrendered(w)),
				  db_error(w->db));
			strbuf_remove(&b, mark, b.len - mark); /* the comma goes too */
			continue;
		}
		put++;
	}
	TEXT_PUT_LIT(&b, "],\"next_page\":");
	if (shown && rows->nrows > shown &&
	    !cursor_make(w->cursor_key, sizeof(w->cursor_key), cursor_kind, filter,
			 db_cell(rows, shown - 1, created_col), db_cell(rows, shown - 1, id_col),
			 next))
		text_put_str(&b, next, strlen(next));
	else
		TEXT_PUT_LIT(&b, "null");
	if (res->flags & RES_LIST_PREV_PAGE)
		TEXT_PUT_LIT(&b, ",\"prev_page\":null");
	TEXT_PUT_LIT(&b, "}");
	text_respond(resp, req, 200, &b);
}

void resource_list(struct worker *w, struct request *req, struct response *resp)
{
	const struct resource *res = req->route_data;
	char created[CURSOR_FIELD_MAX], id[CURSOR_FIELD_MAX];
	struct resource_list l;
	struct db_key k;
	struct db_rows rows = { 0 };
	enum db_status st;
	int paged;

	memset(&l, 0, sizeof(l));
	if (query_limit(req, resp, res->list_max ? res->list_max : LIST_MAX_LIMIT,
			res->list_default ? res->list_default : LIST_DEFAULT_LIMIT, &l.page.limit))
		return;
	if (res->route_check && res->route_check(w, req, resp))
		return;
	if (res->flags & RES_LIST_ARCHIVED) {
		const char *ia = req_query(req, "include_archived");

		if (ia && strcmp(ia, "false")) {
			if (strcmp(ia, "true")) {
				resp_error(resp, req, 400, NULL,
					   "'include_archived' must be true or false");
				return;
			}
			l.page.include_archived = 1;
		}
	}
	snprintf(l.filter, sizeof(l.filter), "a%d", l.page.include_archived);
	if (res->list_query && res->list_query(req, resp, &l))
		return;
	if (page_parse(w, req, resp, res->cursor_kind, l.filter, res->filters_text, created, id,
		       &paged))
		return;
	if (paged) {
		l.page.after_created = created;
		l.page.after_id = id;
	}
	resource_key(res, req, NULL, &k);
	st = res->db.list(w->db, &k, &l.page, &rows);
	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	resource_page(res, w, req, resp, &rows, l.page.limit, res->cursor_kind, l.filter,
		      res->cols.created_db, res->cols.id);
	db_rows_free(&rows);
}
