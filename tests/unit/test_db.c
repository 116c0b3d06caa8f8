/* db/db.c without a server: error classes, and the failure a handle reports (status and
 * message set together, formatted safely even from the handle's own message). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errmsg.h>
#include <jansson.h>
#include <mysqld_error.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/config.h"
#include "../../db/db.h"
#include "unit.h"

static void test_classes(void **state)
{
	(void)state;
	assert_int_equal(db_classify(0), DB_OK);
	/* docs/cluster.md: a deadlock or certification failure (1213, also at COMMIT), a lock
	 * wait timeout and a node outside the primary component (1047) are retried */
	assert_int_equal(db_classify(ER_LOCK_DEADLOCK), DB_RETRY);
	assert_int_equal(db_classify(ER_LOCK_WAIT_TIMEOUT), DB_RETRY);
	assert_int_equal(db_classify(ER_UNKNOWN_COM_ERROR), DB_RETRY);
	/* a statement the server forgot is prepared again by the retry */
	assert_int_equal(db_classify(ER_NEED_REPREPARE), DB_RETRY);
	assert_int_equal(db_classify(ER_UNKNOWN_STMT_HANDLER), DB_RETRY);
	assert_int_equal(db_classify(ER_DUP_ENTRY), DB_CONFLICT);
	assert_int_equal(db_classify(ER_ROW_IS_REFERENCED_2), DB_CONFLICT);
	assert_int_equal(db_classify(CR_SERVER_GONE_ERROR), DB_GONE);
	assert_int_equal(db_classify(CR_SERVER_LOST), DB_GONE);
	assert_int_equal(db_classify(CR_CONNECTION_ERROR), DB_GONE);
	assert_int_equal(db_classify(CR_CONN_HOST_ERROR), DB_GONE);
	/* out of memory is not the database's failure */
	assert_int_equal(db_classify(CR_OUT_OF_MEMORY), DB_NOMEM);
	assert_int_equal(db_classify(ER_OUTOFMEMORY), DB_NOMEM);
	assert_int_equal(db_classify(ER_PARSE_ERROR), DB_FATAL);
	assert_int_equal(db_classify(ER_ACCESS_DENIED_ERROR), DB_FATAL);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(db_status_name(DB_OK), "ok");
	assert_string_equal(db_status_name(DB_CONFLICT), "database conflict");
	assert_string_equal(db_status_name(DB_RETRY), "database busy");
	assert_string_equal(db_status_name(DB_GONE), "database unavailable");
	assert_string_equal(db_status_name(DB_FATAL), "database error");
	assert_string_equal(db_status_name(DB_NOMEM), "out of memory");
	assert_string_equal(db_status_name(DB_CORRUPT), "corrupt stored data");
	assert_string_equal(db_status_name((enum db_status)99), "?");
}

static void test_messages(void **state)
{
	struct config cfg;
	struct db *db;
	char long_arg[2 * DB_ERROR_MAX];

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	db = db_new(&cfg);
	assert_non_null(db);
	assert_int_equal(db_last_status(db), DB_OK);
	assert_string_equal(db_error(db), "");

	assert_int_equal(
		db_fail(db, DB_CORRUPT, "agent %s: stored definition does not parse", "agent_x"),
		DB_CORRUPT);
	assert_int_equal(db_last_status(db), DB_CORRUPT);
	assert_string_equal(db_error(db), "agent agent_x: stored definition does not parse");

	/* a message made from the handle's own message (snprintf into its own source was
	 * undefined behaviour): read whole, then replaced */
	db_fail(db, DB_FATAL, "1064: %s", db_error(db));
	assert_int_equal(db_last_status(db), DB_FATAL);
	assert_string_equal(db_error(db), "1064: agent agent_x: stored definition does not parse");
	db_fail(db, DB_FATAL, "%s; %s", db_error(db), db_error(db));
	assert_string_equal(db_error(db), "1064: agent agent_x: stored definition does not parse; "
					  "1064: agent agent_x: stored definition does not parse");

	/* a message longer than the buffer is cut, NUL-terminated */
	memset(long_arg, 'x', sizeof(long_arg) - 1);
	long_arg[sizeof(long_arg) - 1] = '\0';
	db_fail(db, DB_NOMEM, "%s", long_arg);
	assert_int_equal(strlen(db_error(db)), DB_ERROR_MAX - 1);
	assert_int_equal(db_last_status(db), DB_NOMEM);

	/* a server that is not there: DB_GONE, with the client's error number and text */
	snprintf(cfg.db_socket, sizeof(cfg.db_socket), "/nonexistent/terrarium-test.sock");
	assert_int_equal(db_connect(db), DB_GONE);
	assert_int_equal(db_last_status(db), DB_GONE);
	assert_non_null(strstr(db_error(db), "2002: "));

	/* a statement with more parameters than DB_MAX_PARAMS is refused before any connect */
	{
		struct db_val p[DB_MAX_PARAMS + 1];

		for (unsigned i = 0; i < DB_MAX_PARAMS + 1; i++)
			p[i] = DB_INT(i);
		assert_int_equal(db_exec(db, "SELECT 1", DB_ARRAY(p), NULL, NULL), DB_FATAL);
		assert_non_null(strstr(db_error(db), "DB_MAX_PARAMS"));
	}
	db_free(db);
}

/* Statement text lives as long as the program and keeps one address: only such text (a literal,
 * a static const array) reaches the statement cache, which is keyed on the address. Text made at
 * run time is refused before anything is prepared; text the program was built with goes on
 * (to a server that is not there: DB_GONE). */
static void test_statement_text(void **state)
{
	static const char in_array[] = "SELECT 2";
	static char writable[] = "SELECT 3";
	char on_stack[] = "SELECT 4";
	char *on_heap = strdup("SELECT 5");
	const char *built[] = { writable, on_stack, on_heap };
	struct config cfg;
	struct db *db;

	(void)state;
	assert_non_null(on_heap);
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.db_socket, sizeof(cfg.db_socket), "/nonexistent/terrarium-test.sock");
	db = db_new(&cfg);
	assert_non_null(db);
	for (unsigned i = 0; i < sizeof(built) / sizeof(built[0]); i++) {
		assert_int_equal(db_exec(db, built[i], DB_NONE, NULL, NULL), DB_FATAL);
		assert_non_null(strstr(db_error(db), "not a literal"));
		assert_non_null(strstr(db_error(db), built[i]));
	}
	assert_int_equal(db_exec(db, "SELECT 1", DB_NONE, NULL, NULL), DB_GONE);
	assert_int_equal(db_exec(db, in_array, DB_NONE, NULL, NULL), DB_GONE);
	db_free(db);
	free(on_heap);
}

/* The two rules for a JSON column: a stored cell that does not parse is DB_CORRUPT, a value that
 * cannot be serialised DB_NOMEM, each with a message naming the row and the column. */
static void test_json_cells(void **state)
{
	struct config cfg;
	struct db *db;
	json_t *v = NULL, *kept = json_object();
	char *text = NULL, mark = 'x';

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	db = db_new(&cfg);
	assert_non_null(db);

	assert_int_equal(db_json_load(db, "{\"a\": [1, 2]}", "agent", "agent_x", "definition", &v),
			 DB_OK);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(v, "a"), 1)), 2);
	assert_int_equal(db_last_status(db), DB_OK);
	assert_int_equal(db_json_dump(db, v, "agent", "agent_x", "definition", &text), DB_OK);
	assert_string_equal(text, "{\"a\":[1,2]}"); /* compact, as the columns hold it */
	assert_int_equal(db_last_status(db), DB_OK);
	free(text);
	json_decref(v);

	v = kept; /* *OUT is set on failure too */
	assert_int_equal(db_json_load(db, "{\"a\": ", "work", "work_x", "metadata", &v),
			 DB_CORRUPT);
	assert_null(v);
	assert_int_equal(db_last_status(db), DB_CORRUPT);
	assert_string_equal(db_error(db), "work work_x: stored metadata does not parse");
	/* SQL NULL in a JSON column is corrupt too */
	assert_int_equal(db_json_load(db, NULL, "environment", "env_x", "config", &v), DB_CORRUPT);
	assert_null(v);
	assert_string_equal(db_error(db), "environment env_x: stored config does not parse");

	/* a cell that must hold an object (metadata, a definition): an array is corrupt too */
	assert_int_equal(
		db_json_load_object(db, "{\"k\": \"v\"}", "vault", "vlt_x", "metadata", &v), DB_OK);
	assert_string_equal(json_string_value(json_object_get(v, "k")), "v");
	json_decref(v);
	assert_int_equal(db_json_load_object(db, "[1]", "vault", "vlt_x", "metadata", &v),
			 DB_CORRUPT);
	assert_null(v);
	assert_string_equal(db_error(db), "vault vlt_x: stored metadata is not an object");
	assert_int_equal(db_json_load_object(db, "{", "vault", "vlt_x", "metadata", &v),
			 DB_CORRUPT);
	assert_string_equal(db_error(db), "vault vlt_x: stored metadata does not parse");

	/* NULL: what a json_pack that ran out of memory leaves */
	text = &mark;
	assert_int_equal(db_json_dump(db, NULL, "session", "ses_x", "intent", &text), DB_NOMEM);
	assert_null(text);
	assert_int_equal(db_last_status(db), DB_NOMEM);
	assert_string_equal(db_error(db), "session ses_x: serialising the intent");
	json_decref(kept);
	db_free(db);
}

UNIT_MAIN(cmocka_unit_test(test_classes), cmocka_unit_test(test_names),
	  cmocka_unit_test(test_messages), cmocka_unit_test(test_statement_text),
	  cmocka_unit_test(test_json_cells))
