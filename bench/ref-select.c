/* bench-ref-select: GET .../environments/{id} answers one environment row by primary key, as
 * JSON, with a single prepared SELECT of the same columns the API reads; GET .../environments
 * answers the 100 newest rows of workspace REF_LIST_WORKSPACE_ID with a single prepared SELECT
 * on the index the API's list uses; POST .../environments/{id} reads the row so, then writes
 * the body (as text) into its description with one prepared compare-and-set UPDATE at the
 * revision read, and answers the row as written (bench/ref.h). No authentication, no visibility
 * rules, no cursor, no JSON library: the floors for GET /v1/environments/{id}, for a list page
 * and for an update that answers with the stored object. */
#include <stdlib.h>
#include <string.h>

#include "../common/clock.h"

#include "ref.h"

#define SEL_ID_MAX 64

#define SEL_COLUMNS                                                                                \
	"SELECT id, name, description, metadata, config, scope,"                                   \
	" DATE_FORMAT(created_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"                                       \
	" DATE_FORMAT(updated_at, '%Y-%m-%dT%H:%i:%s.%fZ'),"                                       \
	" DATE_FORMAT(archived_at, '%Y-%m-%dT%H:%i:%s.%fZ'), revision FROM environments"

static const char sel_sql[] = SEL_COLUMNS " WHERE id = ?";
static const char list_sql[] =
	SEL_COLUMNS " WHERE workspace_id = ? ORDER BY created_at DESC, id DESC LIMIT 100";
static const char upd_sql[] =
	"UPDATE environments SET description = ?, revision = revision + 1, updated_at = ?"
	" WHERE id = ? AND revision = ?";

/* The columns of SEL_COLUMNS, in its order. */
enum sel_col {
	SEL_C_ID,
	SEL_C_NAME,
	SEL_C_DESCRIPTION,
	SEL_C_METADATA,
	SEL_C_CONFIG,
	SEL_C_SCOPE,
	SEL_C_CREATED,
	SEL_C_UPDATED,
	SEL_C_ARCHIVED,
	SEL_C_REVISION,
	SEL_COLS
};
#define UPD_ATTEMPTS 5 /* compare-and-set tries before a 409 */

static MYSQL_STMT *list_stmt, *upd_stmt;
static char cell[SEL_COLS][REF_CELL_MAX];
static unsigned long len[SEL_COLS];
static my_bool isnull[SEL_COLS];

static int sel_prepare(struct ref *r)
{
	r->stmt = mysql_stmt_init(r->conn);
	list_stmt = mysql_stmt_init(r->conn);
	upd_stmt = mysql_stmt_init(r->conn);
	if (!r->stmt || !list_stmt || !upd_stmt)
		return -1;
	if (mysql_stmt_prepare(r->stmt, sel_sql, strlen(sel_sql)) ||
	    mysql_stmt_prepare(list_stmt, list_sql, strlen(list_sql)) ||
	    mysql_stmt_prepare(upd_stmt, upd_sql, strlen(upd_sql)))
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
 * column, and how it is written. "scope" follows when not NULL. */
enum sel_kind { SEL_STR, SEL_RAW, SEL_OPT }; /* JSON string, JSON as stored, string or null */
#define SEL_MEMBER(prefix, col, kind)                                                              \
	{                                                                                          \
		prefix, sizeof(prefix) - 1, col, kind                                              \
	}
static const struct sel_member {
	const char *prefix;
	size_t prefix_len;
	enum sel_col col;
	enum sel_kind kind;
} sel_members[] = {
	SEL_MEMBER("{\"id\":", SEL_C_ID, SEL_STR),
	SEL_MEMBER(",\"type\":\"environment\",\"name\":", SEL_C_NAME, SEL_STR),
	SEL_MEMBER(",\"description\":", SEL_C_DESCRIPTION, SEL_OPT),
	SEL_MEMBER(",\"metadata\":", SEL_C_METADATA, SEL_RAW),
	SEL_MEMBER(",\"config\":", SEL_C_CONFIG, SEL_RAW),
	SEL_MEMBER(",\"created_at\":", SEL_C_CREATED, SEL_STR),
	SEL_MEMBER(",\"updated_at\":", SEL_C_UPDATED, SEL_STR),
	SEL_MEMBER(",\"archived_at\":", SEL_C_ARCHIVED, SEL_OPT),
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
	if (!isnull[SEL_C_SCOPE]) {
		LIT(r, ",\"scope\":");
		ref_put_str(r, cell[SEL_C_SCOPE], len[SEL_C_SCOPE]);
	}
	LIT(r, "}");
}

/* Read row ID into cell[]: 200, or the status with R's answer filled. */
static int fetch_one(struct ref *r, const char *id, size_t idlen)
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
	return 200;
}

static int get_one(struct ref *r, const char *id, size_t idlen)
{
	int status = fetch_one(r, id, idlen);

	if (status == 200)
		put_object(r);
	return status;
}

/* The update: read, compare-and-set at the revision read (read again when another update came
 * between), answer the row as written. */
static int update_one(struct ref *r, FCGX_Request *fr, const char *id, size_t idlen)
{
	static char body[REF_CELL_MAX];
	long got = ref_read_body(fr, body, sizeof(body));
	char now_db[CLOCK_DB_LEN], now_api[CLOCK_API_LEN];
	MYSQL_BIND in[4];

	if (got < 0) {
		LIT(r, "{\"error\":\"bad request\"}");
		return 400;
	}
	for (int attempt = 0; attempt < UPD_ATTEMPTS; attempt++) {
		int status = fetch_one(r, id, idlen);

		if (status != 200)
			return status;
		clock_now(now_db, now_api);
		bind_string(&in[0], body, (size_t)got);
		bind_string(&in[1], now_db, strlen(now_db));
		bind_string(&in[2], id, idlen);
		bind_string(&in[3], cell[SEL_C_REVISION], len[SEL_C_REVISION]);
		if (mysql_stmt_bind_param(upd_stmt, in) || mysql_stmt_execute(upd_stmt)) {
			LIT(r, "{\"error\":\"database\"}");
			return 500;
		}
		if (mysql_stmt_affected_rows(upd_stmt) == 1) {
			memcpy(cell[SEL_C_DESCRIPTION], body, (size_t)got);
			len[SEL_C_DESCRIPTION] = (unsigned long)got;
			isnull[SEL_C_DESCRIPTION] = 0;
			len[SEL_C_UPDATED] = (unsigned long)strlen(now_api);
			memcpy(cell[SEL_C_UPDATED], now_api, len[SEL_C_UPDATED]);
			put_object(r);
			return 200;
		}
	}
	LIT(r, "{\"error\":\"conflict\"}");
	return 409;
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
	const char *method = FCGX_GetParam("REQUEST_METHOD", fr->envp);
	size_t n = uri ? strcspn(uri, "?") : 0;
	const char *id;

	if (n >= 13 && !strncmp(uri + n - 13, "/environments", 13))
		return get_list(r);
	id = uri ? memrchr(uri, '/', n) : NULL;
	id = id ? id + 1 : "";
	n = uri ? (size_t)(uri + n - id) : 0;
	if (n > SEL_ID_MAX)
		n = SEL_ID_MAX;
	if (method && !strcmp(method, "POST"))
		return update_one(r, fr, id, n);
	return get_one(r, id, n);
}

int main(void)
{
	static const struct ref_ops ops = { "select", sel_prepare, sel_handle };
	return ref_main(&ops);
}
