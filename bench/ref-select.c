/* bench-ref-select: GET .../environments/{id} answers one environment row by primary key, as
 * JSON, with a single prepared SELECT of the same columns the API reads; GET .../environments
 * answers the 100 newest rows of workspace REF_LIST_WORKSPACE_ID with a single prepared SELECT
 * on the index the API's list uses (bench/ref.h). No authentication, no visibility rules, no
 * cursor, no JSON library: the floors for GET /v1/environments/{id} and for a list page. */
#include <stdlib.h>
#include <string.h>

#include "ref.h"

#define SEL_COLS 10
#define SEL_ID_MAX 64

#define SEL_COLUMNS                                                                  \
	"SELECT id, name, description, metadata, config, scope,"                     \
	" DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"                         \
	" DATE_FORMAT(updated_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"                         \
	" DATE_FORMAT(archived_at, '%Y-%m-%dT%H:%i:%s.%fZ'), revision FROM environments"

static const char sel_sql[] = SEL_COLUMNS " WHERE id = ?";
static const char list_sql[] =
	SEL_COLUMNS " WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT 100";

static MYSQL_STMT *list_stmt;
static char cell[SEL_COLS][REF_CELL_MAX];
static unsigned long len[SEL_COLS];
static my_bool isnull[SEL_COLS];

static int sel_prepare(struct ref *r)
{
	r->stmt = mysql_stmt_init(r->conn);
	list_stmt = mysql_stmt_init(r->conn);
	if (!r->stmt || !list_stmt)
		return -1;
	if (mysql_stmt_prepare(r->stmt, sel_sql, strlen(sel_sql)) ||
	    mysql_stmt_prepare(list_stmt, list_sql, strlen(list_sql)))
		return -1;
	return 0;
}

#define LIT(r, s) ref_put_raw((r), (s), sizeof(s) - 1)

static void put_opt(struct ref *r, int c)
{
	if (isnull[c])
		ref_put_raw(r, "null", 4);
	else
		ref_put_str(r, cell[c], len[c]);
}

static void bind_string(MYSQL_BIND *b, const char *s, size_t n)
{
	memset(b, 0, sizeof(*b));
	b->buffer_type = MYSQL_TYPE_STRING;
	b->buffer = (void *)s;
	b->buffer_length = (unsigned long)n;
}

/* Execute STMT with one string parameter and bind its columns to cell[]. 0 or -1. */
static int run(MYSQL_STMT *stmt, const char *param, size_t n)
{
	MYSQL_BIND in, out[SEL_COLS];

	bind_string(&in, param, n);
	memset(out, 0, sizeof(out));
	for (int c = 0; c < SEL_COLS; c++) {
		out[c].buffer_type = MYSQL_TYPE_STRING;
		out[c].buffer = cell[c];
		out[c].buffer_length = REF_CELL_MAX;
		out[c].length = &len[c];
		out[c].is_null = &isnull[c];
	}
	if (mysql_stmt_bind_param(stmt, &in) || mysql_stmt_execute(stmt) ||
	    mysql_stmt_bind_result(stmt, out))
		return -1;
	return 0;
}

/* The environment object's members, in the API's order: the text before the value, the value's
 * column in SEL_COLUMNS, and how it is written. "scope" (column 5) follows when not NULL. */
enum sel_kind { SEL_STR, SEL_RAW, SEL_OPT }; /* JSON string, JSON as stored, string or null */
#define SEL_MEMBER(prefix, col, kind) {prefix, sizeof(prefix) - 1, col, kind}
static const struct sel_member {
	const char *prefix;
	size_t prefix_len;
	int col;
	enum sel_kind kind;
} sel_members[] = {
	SEL_MEMBER("{\"id\":", 0, SEL_STR),
	SEL_MEMBER(",\"type\":\"environment\",\"name\":", 1, SEL_STR),
	SEL_MEMBER(",\"description\":", 2, SEL_OPT),
	SEL_MEMBER(",\"metadata\":", 3, SEL_RAW),
	SEL_MEMBER(",\"config\":", 4, SEL_RAW),
	SEL_MEMBER(",\"created_at\":", 6, SEL_STR),
	SEL_MEMBER(",\"updated_at\":", 7, SEL_STR),
	SEL_MEMBER(",\"archived_at\":", 8, SEL_OPT),
};

/* The fetched row as the API's environment object (the same members, in the same order). */
static void put_object(struct ref *r)
{
	for (size_t i = 0; i < sizeof(sel_members) / sizeof(sel_members[0]); i++) {
		const struct sel_member *m = &sel_members[i];

		ref_put_raw(r, m->prefix, m->prefix_len);
		if (m->kind == SEL_RAW)
			ref_put_raw(r, cell[m->col], len[m->col]);
		else if (m->kind == SEL_OPT)
			put_opt(r, m->col);
		else
			ref_put_str(r, cell[m->col], len[m->col]);
	}
	if (!isnull[5]) {
		LIT(r, ",\"scope\":");
		ref_put_str(r, cell[5], len[5]);
	}
	LIT(r, "}");
}

static int get_one(struct ref *r, const char *id, size_t idlen)
{
	if (run(r->stmt, id, idlen)) {
		LIT(r, "{\"error\":\"database\"}");
		return 500;
	}
	if (mysql_stmt_fetch(r->stmt) != 0) {
		mysql_stmt_free_result(r->stmt);
		LIT(r, "{\"error\":\"not found\"}");
		return 404;
	}
	while (mysql_stmt_fetch(r->stmt) == 0)
		;
	mysql_stmt_free_result(r->stmt);
	put_object(r);
	return 200;
}

static int get_list(struct ref *r)
{
	const char *ws = getenv("REF_LIST_WORKSPACE_ID");
	int n = 0;

	if (!ws)
		ws = "";
	if (run(list_stmt, ws, strlen(ws))) {
		LIT(r, "{\"error\":\"database\"}");
		return 500;
	}
	LIT(r, "{\"data\":[");
	while (mysql_stmt_fetch(list_stmt) == 0) {
		if (n++)
			LIT(r, ",");
		put_object(r);
	}
	mysql_stmt_free_result(list_stmt);
	LIT(r, "],\"next_page\":null}");
	return 200;
}

static int sel_handle(struct ref *r, FCGX_Request *fr)
{
	const char *uri = FCGX_GetParam("REQUEST_URI", fr->envp);
	size_t n = uri ? strcspn(uri, "?") : 0;
	const char *id;

	if (n >= 13 && !strncmp(uri + n - 13, "/environments", 13))
		return get_list(r);
	id = uri ? memrchr(uri, '/', n) : NULL;
	id = id ? id + 1 : "";
	n = uri ? (size_t)(uri + n - id) : 0;
	return get_one(r, id, n > SEL_ID_MAX ? SEL_ID_MAX : n);
}

int main(void)
{
	static const struct ref_ops ops = { "select", sel_prepare, sel_handle };
	return ref_main(&ops);
}
