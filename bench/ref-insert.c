/* bench-ref-insert: POST reads the body and stores it with one prepared single-row INSERT into
 * environments (autocommit), in workspace REF_WORKSPACE_ID, then answers the new row's id and
 * the body as JSON (bench/ref.h). No validation, no authentication, no JSON library: the floor
 * for POST /v1/environments. The body must be JSON (it lands in the config column). */
#include <stdlib.h>
#include <string.h>

#include "../common/crypto.h"
#include "ref.h"

#define INS_ID_LEN 64

static const char ins_sql[] =
	"INSERT INTO environments (id, workspace_id, account_id, name, description, metadata,"
	" type, scope, config, revision, created_at, updated_at)"
	" VALUES (?, ?, 'bench-ref', ?, NULL, '{}', 'cloud', NULL, ?, 1,"
	" UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))";

static char body[REF_BODY_MAX + 1];

static int ins_prepare(struct ref *r)
{
	r->stmt = mysql_stmt_init(r->conn);
	return r->stmt && !mysql_stmt_prepare(r->stmt, ins_sql, strlen(ins_sql)) ? 0 : -1;
}

#define LIT(r, s) ref_put_raw((r), (s), sizeof(s) - 1)

static int ins_handle(struct ref *r, FCGX_Request *fr)
{
	const char *ws = getenv("REF_WORKSPACE_ID");
	long got = ref_read_body(fr, body, REF_BODY_MAX);
	char id[INS_ID_LEN];
	MYSQL_BIND in[4];

	if (got < 0 || !ws || random_id(id, sizeof(id), "env_", ID_RANDOM_LEN)) {
		LIT(r, "{\"error\":\"bad request\"}");
		return 400;
	}
	memset(in, 0, sizeof(in));
	in[0].buffer_type = in[1].buffer_type = in[2].buffer_type = in[3].buffer_type =
		MYSQL_TYPE_STRING;
	in[0].buffer = id;
	in[0].buffer_length = strlen(id);
	in[1].buffer = (void *)ws;
	in[1].buffer_length = strlen(ws);
	in[2].buffer = id;
	in[2].buffer_length = strlen(id);
	in[3].buffer = body;
	in[3].buffer_length = (unsigned long)got;
	if (mysql_stmt_bind_param(r->stmt, in) || mysql_stmt_execute(r->stmt)) {
		LIT(r, "{\"error\":\"database\"}");
		return 500;
	}
	LIT(r, "{\"id\":");
	ref_put_str(r, id, strlen(id));
	LIT(r, ",\"type\":\"environment\",\"stored\":");
	ref_put_raw(r, body, (size_t)got);
	LIT(r, "}");
	return 200;
}

int main(void)
{
	static const struct ref_ops ops = { "insert", ins_prepare, ins_handle };
	return ref_main(&ops);
}
