/* The resource table's generic handlers (handlers/resource.c) over a resource of the test's own:
 * "thing", whose db operations work on an in-memory table. Retrieve, list (limits, pages and
 * their cursors), archive and delete are checked without a database: db_tx is wrapped
 * (-Wl,--wrap=db_tx) to run its function once, as a transaction that commits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/config.h"
#include "../../db/db.h"
#include "../../handlers/resource.h"
#include "../../http/http.h"
#include "unit.h"

#define THINGS_MAX 8
#define THING_COLS 4 /* id, created (db form), archived_at, workspace */
enum { C_ID, C_CREATED, C_ARCHIVED, C_WS };

struct thing {
	char id[32], created[32], archived[32], ws[16];
	int deleted, referenced;
};

static struct thing things[THINGS_MAX];
static int nthings, gets, archives, lists;
static enum db_status get_fails; /* what the next thing_get returns instead of rows */

static void thing_add(const char *id, const char *ws, int referenced)
{
	struct thing *t = &things[nthings];

	snprintf(t->id, sizeof(t->id), "%s", id);
	snprintf(t->ws, sizeof(t->ws), "%s", ws);
	/* ascending creation times: 2026-01-01 00:00:0N */
	snprintf(t->created, sizeof(t->created), "2026-01-01 00:00:%02d.000000", nthings);
	t->referenced = referenced;
	nthings++;
}

/* ROWS holding the things I[0..n) (cells point into the table: no arena is freed). */
static void rows_of(struct db_rows *rows, const int *idx, unsigned n)
{
	memset(rows, 0, sizeof(*rows));
	rows->nrows = n;
	rows->ncols = THING_COLS;
	rows->cell = calloc(n * THING_COLS + 1, sizeof(char *));
	rows->len = calloc(n * THING_COLS + 1, sizeof(unsigned long));
	for (unsigned r = 0; r < n; r++) {
		struct thing *t = &things[idx[r]];
		char **c = rows->cell + r * THING_COLS;

		c[C_ID] = t->id;
		c[C_CREATED] = t->created;
		c[C_ARCHIVED] = t->archived[0] ? t->archived : NULL;
		c[C_WS] = t->ws;
		for (unsigned k = 0; k < THING_COLS; k++)
			rows->len[r * THING_COLS + k] = c[k] ? strlen(c[k]) : 0;
	}
}

/* db_rows_free for rows_of's rows (db.c's would free an arena these rows do not have). */
void __wrap_db_rows_free(struct db_rows *rows);
void __wrap_db_rows_free(struct db_rows *rows)
{
	free(rows->cell);
	free(rows->len);
	memset(rows, 0, sizeof(*rows));
}

enum db_status __wrap_db_tx(struct db *db, enum db_status (*fn)(struct db *, void *), void *arg);
enum db_status __wrap_db_tx(struct db *db, enum db_status (*fn)(struct db *, void *), void *arg)
{
	return fn(db, arg);
}

static int visible(const struct thing *t, const struct db_key *k)
{
	return !t->deleted && !strcmp(t->ws, k->workspace_id);
}

static enum db_status thing_get(struct db *db, const struct db_key *k, int for_update,
				struct db_rows *rows)
{
	(void)db;
	(void)for_update;
	gets++;
	if (get_fails) {
		enum db_status st = get_fails;

		get_fails = DB_OK;
		return st;
	}
	for (int i = 0; i < nthings; i++)
		if (visible(&things[i], k) && !strcmp(things[i].id, k->id)) {
			rows_of(rows, &i, 1);
			return DB_OK;
		}
	rows_of(rows, NULL, 0);
	return DB_OK;
}

static enum db_status thing_list(struct db *db, const struct db_key *k, const struct db_page *p,
				 struct db_rows *rows)
{
	int idx[THINGS_MAX];
	unsigned n = 0;

	(void)db;
	lists++;
	for (int i = 0; i < nthings && n < (unsigned)db_page_rows(p); i++) {
		const struct thing *t = &things[i];

		if (!visible(t, k) || (t->archived[0] && !p->include_archived))
			continue;
		if (p->after_created &&
		    (strcmp(t->created, p->after_created) < 0 ||
		     (!strcmp(t->created, p->after_created) && strcmp(t->id, p->after_id) <= 0)))
			continue;
		idx[n++] = i;
	}
	rows_of(rows, idx, n);
	return DB_OK;
}

static enum db_status thing_archive(struct db *db, const struct db_key *k, const char *now)
{
	(void)db;
	archives++;
	for (int i = 0; i < nthings; i++)
		if (visible(&things[i], k) && !strcmp(things[i].id, k->id))
			snprintf(things[i].archived, sizeof(things[i].archived), "%s", now);
	return DB_OK;
}

static enum db_status thing_remove(struct db *db, const struct db_key *k, int *found,
				   struct verr *err)
{
	(void)db;
	*found = 0;
	for (int i = 0; i < nthings; i++)
		if (visible(&things[i], k) && !strcmp(things[i].id, k->id)) {
			*found = 1;
			if (things[i].referenced) {
				verr_set(err, 409, NULL, "thing '%s' is referenced", k->id);
				return DB_OK;
			}
			things[i].deleted = 1;
		}
	return DB_OK;
}

/* A thing whose id holds "bad" has a stored JSON cell that does not parse. */
static json_t *thing_render(struct db *db, const struct db_rows *rows, unsigned r)
{
	const char *archived = db_cell(rows, r, C_ARCHIVED);
	json_t *stored;

	if (strstr(db_cell(rows, r, C_ID), "bad")) {
		assert_int_equal(db_json_load(db, "{\"cut", "thing", db_cell(rows, r, C_ID), "data",
					      &stored),
				 DB_CORRUPT);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:o}", "id", db_cell(rows, r, C_ID), "type", "thing",
			 "archived", archived ? json_true() : json_false());
}

static const struct resource RES_THING = {
	.kind = "thing",
	.id_prefix = "thg_",
	.not_found_code = "thing_not_found",
	.visibility = RES_VIS_WORKSPACE,
	.flags = RES_LIST_ARCHIVED,
	.cursor_kind = "thing",
	.list_default = 2,
	.list_max = 3,
	.filters_text = "include_archived",
	.cols = { .id = C_ID, .created_db = C_CREATED, .archived = C_ARCHIVED },
	.render = thing_render,
	.db = { .get = thing_get,
		.list = thing_list,
		.archive = thing_archive,
		.remove = thing_remove },
};

static struct config cfg;
static struct worker w;

static int setup(void **state)
{
	(void)state;
	memset(things, 0, sizeof(things));
	nthings = gets = archives = lists = 0;
	get_fails = DB_OK;
	thing_add("thg_a1", "ws1", 0);
	thing_add("thg_a2", "ws1", 1);
	thing_add("thg_b1", "ws2", 0);
	thing_add("thg_a3", "ws1", 0);
	thing_add("thg_a4", "ws1", 0);
	memset(&w, 0, sizeof(w));
	w.cfg = &cfg;
	w.db = db_new(&cfg); /* never connected: the operations above are the database */
	memset(w.cursor_key, 7, sizeof(w.cursor_key));
	w.cursor_key_loaded = 1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	db_free(w.db);
	return 0;
}

/* Run HANDLER for workspace ws1 with the route capture ID (or NULL) and QUERY ("a=b&c=d" or
 * NULL); the response body parsed into *BODY (NULL when it is not JSON). */
static int call(handler_fn handler, const char *id, const char *query, const char *body_json,
		json_t **body)
{
	static char *env[] = { NULL };
	struct auth_principal who = { .kind = AUTH_WORKSPACE_KEY, .workspace_id = "ws1" };
	struct request req;
	struct response resp;
	int status;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	snprintf(req.method, sizeof(req.method), "GET");
	snprintf(req.path, sizeof(req.path), "/v1/things%s%s", id ? "/" : "", id ? id : "");
	snprintf(req.request_id, sizeof(req.request_id), "req_test");
	req.principal = &who;
	req.env = env;
	if (id) {
		snprintf(req.param_buf, sizeof(req.param_buf), "%s", id);
		req.params[0] = req.param_buf;
		req.nparams = 1;
	}
	if (query)
		assert_int_equal(req_parse_query(&req, query), 0);
	if (body_json)
		req.json = json_loads(body_json, 0, NULL);
	req.route_data = &RES_THING;
	handler(&w, &req, &resp);
	status = resp.status;
	*body = json_loadb(resp.body, resp.body_len, 0, NULL);
	req_release(&req);
	resp_release(&resp);
	return status;
}

static const char *str(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(o, path1);

	if (path2)
		v = json_object_get(v, path2);
	return json_is_string(v) ? json_string_value(v) : "";
}

/* error.details.error_code of the envelope B, or "". */
static const char *error_code(json_t *b)
{
	return str(json_object_get(b, "error"), "details", "error_code");
}

/* HANDLER on ID (no query, no body) answers 200 with the row ID, of type TYPE. */
static void expect_row(handler_fn handler, const char *id, const char *type)
{
	json_t *b;

	assert_int_equal(call(handler, id, NULL, NULL, &b), 200);
	assert_string_equal(str(b, "id", NULL), id);
	assert_string_equal(str(b, "type", NULL), type);
	json_decref(b);
}

/* HANDLER on ID with QUERY and BODY answers STATUS; unless NULL, the envelope's error_code is
 * CODE and its message holds PART. */
static void expect_status(handler_fn handler, const char *id, const char *query,
			  const char *body_json, int status, const char *code, const char *part)
{
	json_t *b;

	assert_int_equal(call(handler, id, query, body_json, &b), status);
	if (code)
		assert_string_equal(error_code(b), code);
	if (part)
		assert_non_null(strstr(str(b, "error", "message"), part));
	json_decref(b);
}

/* resource_list with QUERY (or NULL) answers 200: ROWS rows (unless -1), the first FIRST
 * (unless NULL), a next page when MORE is 1, none when 0 (unchecked when -1). The body, which
 * the caller releases. */
static json_t *expect_page(const char *query, int rows, const char *first, int more)
{
	json_t *b, *data;

	assert_int_equal(call(resource_list, NULL, query, NULL, &b), 200);
	data = json_object_get(b, "data");
	if (rows >= 0)
		assert_int_equal(json_array_size(data), rows);
	if (first)
		assert_string_equal(str(json_array_get(data, 0), "id", NULL), first);
	if (more >= 0)
		assert_true(more ? json_is_string(json_object_get(b, "next_page"))
				 : json_is_null(json_object_get(b, "next_page")));
	return b;
}

static void test_retrieve(void **state)
{
	json_t *b;

	(void)state;
	expect_row(resource_retrieve, "thg_a1", "thing");
	/* another workspace's row and a missing one: the resource's own 404 */
	expect_status(resource_retrieve, "thg_b1", NULL, NULL, 404, "thing_not_found", "thg_b1");
	/* an id of another shape is refused before any query */
	gets = 0;
	expect_status(resource_retrieve, "env_a1", NULL, NULL, 404, "thing_not_found", NULL);
	assert_int_equal(gets, 0);
	/* the database unavailable: 503, retry later */
	get_fails = DB_GONE;
	assert_int_equal(call(resource_retrieve, "thg_a1", NULL, NULL, &b), 503);
	assert_string_equal(str(b, "error", "type"), "overloaded_error");
	json_decref(b);
}

static void test_list_pages(void **state)
{
	json_t *b, *b2;
	char q[512];

	(void)state;
	/* workspace ws1 has four things: the default limit (2) shows the first two */
	b = expect_page(NULL, 2, "thg_a1", 1);
	/* the next page starts after the last row shown and ends the list */
	snprintf(q, sizeof(q), "page=%s", str(b, "next_page", NULL));
	b2 = expect_page(q, 2, "thg_a3", 0);
	/* the cursor is bound to its filters: include_archived=true is another list */
	snprintf(q, sizeof(q), "include_archived=true&page=%s", str(b, "next_page", NULL));
	expect_status(resource_list, NULL, q, NULL, 400, NULL, "include_archived");
	json_decref(b);
	json_decref(b2);
	/* a forged cursor and limits out of range: 400 without a query */
	lists = 0;
	expect_status(resource_list, NULL, "page=bm90IGEgY3Vyc29y", NULL, 400, NULL, NULL);
	expect_status(resource_list, NULL, "limit=4", NULL, 400, NULL, "'limit'");
	expect_status(resource_list, NULL, "limit=0", NULL, 400, NULL, NULL);
	expect_status(resource_list, NULL, "include_archived=yes", NULL, 400, NULL,
		      "include_archived");
	assert_int_equal(lists, 0);
	/* limit=3 shows three of the four, with a next page */
	json_decref(expect_page("limit=3", 3, NULL, 1));
}

static void test_archive(void **state)
{
	json_t *b;

	(void)state;
	assert_int_equal(call(resource_archive, "thg_a1", NULL, NULL, &b), 200);
	assert_true(json_is_true(json_object_get(b, "archived")));
	json_decref(b);
	assert_int_equal(archives, 1);
	/* archiving again answers the row as it is, without archiving it twice */
	assert_int_equal(call(resource_archive, "thg_a1", NULL, "{}", &b), 200);
	assert_true(json_is_true(json_object_get(b, "archived")));
	json_decref(b);
	assert_int_equal(archives, 1);
	/* an archived row leaves the default list, and comes back with include_archived */
	json_decref(expect_page("limit=3", -1, "thg_a2", -1));
	json_decref(expect_page("limit=3&include_archived=true", -1, "thg_a1", -1));
	/* archive takes no fields; another workspace's row is not found */
	expect_status(resource_archive, "thg_a3", NULL, "{\"x\":1}", 400, NULL, "'x'");
	expect_status(resource_archive, "thg_b1", NULL, NULL, 404, NULL, NULL);
	assert_int_equal(archives, 1);
}

static void test_delete(void **state)
{
	(void)state;
	expect_row(resource_delete, "thg_a1", "thing_deleted");
	expect_status(resource_delete, "thg_a1", NULL, NULL, 404, "thing_not_found", NULL);
	/* a refusal of the resource's own (409) is answered as it was set */
	expect_status(resource_delete, "thg_a2", NULL, NULL, 409, NULL, "referenced");
	assert_false(things[1].deleted);
	expect_status(resource_delete, "thg_b1", NULL, NULL, 404, NULL, NULL);
	assert_false(things[2].deleted);
}

/* A row whose stored JSON does not parse: retrieve answers 500 (never a partial object), a list
 * leaves it out and shows the others. */
static void test_corrupt_row(void **state)
{
	json_t *b;

	(void)state;
	snprintf(things[0].id, sizeof(things[0].id), "thg_bad1"); /* first of ws1's */
	expect_status(resource_retrieve, "thg_bad1", NULL, NULL, 500, NULL, "internal error");
	b = expect_page("limit=3", 2, "thg_a2", 1);
	json_decref(b);
}

/* resource_get reads the row as the request's principal sees it (the visibility rule). */
static void test_get(void **state)
{
	struct auth_principal who = { .kind = AUTH_WORKSPACE_KEY, .workspace_id = "ws1" };
	struct request req = { .principal = &who };
	struct db_rows rows;

	(void)state;
	assert_int_equal(resource_get(&RES_THING, w.db, &req, "thg_a2", 0, &rows), DB_OK);
	assert_int_equal(rows.nrows, 1);
	assert_string_equal(db_cell(&rows, 0, C_ID), "thg_a2");
	db_rows_free(&rows);
	/* another workspace's row is not there */
	assert_int_equal(resource_get(&RES_THING, w.db, &req, "thg_b1", 0, &rows), DB_OK);
	assert_int_equal(rows.nrows, 0);
	db_rows_free(&rows);
}

/* An update's metadata: the stored cell patched per key, compared and serialised. */
static void test_meta_change(void **state)
{
	static const struct {
		const char *stored, *patch; /* patch: JSON text, or NULL for none */
		enum db_status st;
		int refused, changed;
		const char *text;
	} cases[] = {
		{ "{\"a\":\"1\"}", "{\"b\":\"2\"}", DB_OK, 0, 1, "{\"a\":\"1\",\"b\":\"2\"}" },
		{ "{\"a\":\"1\"}", "{\"a\":\"1\"}", DB_OK, 0, 0, "{\"a\":\"1\"}" },
		{ "{\"a\":\"1\"}", NULL, DB_OK, 0, 0, "{\"a\":\"1\"}" },
		{ "{\"a\":\"1\"}", "{\"a\":null}", DB_OK, 0, 1, "{}" },
		{ "{\"a\":\"1\"}", "[1]", DB_OK, 1, 0, NULL }, /* not an object: 400 */
		{ "[\"a\"]", "{}", DB_CORRUPT, 0, 0, NULL }, /* the stored cell is not an object */
		{ "{\"cut", "{}", DB_CORRUPT, 0, 0, NULL },  /* the stored cell does not parse */
	};

	(void)state;
	for (size_t i = 0; i < UNIT_LEN(cases); i++) {
		json_t *patch = cases[i].patch ? json_loads(cases[i].patch, 0, NULL) : NULL;
		struct verr err = { 0 };
		struct meta_change m;

		assert_int_equal(
			meta_change_load(w.db, cases[i].stored, "thing", "thg_a1", patch, &m, &err),
			cases[i].st);
		assert_int_equal(m.meta == NULL, cases[i].refused || cases[i].st != DB_OK);
		assert_int_equal(err.status, cases[i].refused ? 400 : 0);
		if (cases[i].refused) {
			assert_string_equal(err.code, "invalid_metadata");
			assert_non_null(strstr(err.msg, "'metadata'"));
		}
		if (cases[i].st == DB_CORRUPT && cases[i].stored[0] == '[')
			assert_string_equal(db_error(w.db),
					    "thing thg_a1: stored metadata is not an object");
		assert_int_equal(m.changed, cases[i].changed);
		if (cases[i].text)
			assert_string_equal(m.text, cases[i].text);
		else
			assert_null(m.text);
		meta_change_release(&m);
		json_decref(patch);
	}
	assert_string_equal(db_error(w.db), "thing thg_a1: stored metadata does not parse");
}

UNIT_MAIN(cmocka_unit_test_setup_teardown(test_retrieve, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_get, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_meta_change, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_corrupt_row, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_list_pages, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_archive, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_delete, setup, teardown))
