/* A send (handlers/events.c) over a session of the test's own, without a database: the event
 * log's and the work queue's writes are wrapped (-Wl,--wrap=...) and record what each attempt
 * of the transaction wrote; db_tx runs its function again when a test asks for retries, as
 * db/db.c does after a deadlock or a lost commit (the first attempts' writes are rolled back). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/config.h"
#include "../../db/db.h"
#include "../../db/events.h"
#include "../../handlers/events.h"
#include "../../http/http.h"
#include "unit.h"

#define SESSION_ID "sesn_0123456789abcdefghijklmn"

static int retries;		       /* attempts db_tx rolls back before one commits */
static int attempts;		       /* attempts db_tx ran */
static int requeued;		       /* work items the committing attempt queued */
static int self_hosted;		       /* the session's environment is self_hosted */
static char status[EVENTS_STATUS_MAX]; /* the session's status the committing attempt left */

enum db_status __wrap_db_tx(struct db *db, enum db_status (*fn)(struct db *, void *), void *arg);
enum db_status __wrap_db_tx(struct db *db, enum db_status (*fn)(struct db *, void *), void *arg)
{
	enum db_status st;

	do {
		attempts++;
		requeued = 0;
		status[0] = '\0';
		st = fn(db, arg);
	} while (st == DB_OK && retries-- > 0); /* the commit deadlocked: all of it again */
	return st;
}

enum db_status __wrap_evdb_lock(struct db *db, const struct db_key *k, const char *now,
				struct ev_session *s, int *found);
enum db_status __wrap_evdb_lock(struct db *db, const struct db_key *k, const char *now,
				struct ev_session *s, int *found)
{
	(void)db;
	memset(s, 0, sizeof(*s));
	*found = !strcmp(k->id, SESSION_ID);
	snprintf(s->id, sizeof(s->id), "%s", k->id);
	snprintf(s->workspace_id, sizeof(s->workspace_id), "%s", k->workspace_id);
	snprintf(s->environment_id, sizeof(s->environment_id), "env_test");
	snprintf(s->status, sizeof(s->status), SES_IDLE);
	snprintf(s->now, sizeof(s->now), "%s", now);
	s->self_hosted = self_hosted;
	return DB_OK;
}

enum db_status __wrap_evdb_append(struct db *db, struct ev_session *s, const struct ev_new *e);
enum db_status __wrap_evdb_append(struct db *db, struct ev_session *s, const struct ev_new *e)
{
	(void)db;
	s->event_pos += !e->queued;
	return DB_OK;
}

enum db_status __wrap_evdb_status(struct db *db, struct ev_session *s, const char *st,
				  const char *stop_reason, const char *event_id);
enum db_status __wrap_evdb_status(struct db *db, struct ev_session *s, const char *st,
				  const char *stop_reason, const char *event_id)
{
	(void)db;
	(void)stop_reason;
	(void)event_id;
	snprintf(s->status, sizeof(s->status), "%s", st);
	return DB_OK;
}

enum db_status __wrap_evdb_save(struct db *db, const struct ev_session *s);
enum db_status __wrap_evdb_save(struct db *db, const struct ev_session *s)
{
	(void)db;
	snprintf(status, sizeof(status), "%s", s->status);
	return DB_OK;
}

/* The session's work items are all stopped: a turn queues a new one. */
enum db_status __wrap_workdb_requeue(struct db *db, const char *id, const char *ws,
				     const char *env_id, const char *session_id, const char *now,
				     int *queued);
enum db_status __wrap_workdb_requeue(struct db *db, const char *id, const char *ws,
				     const char *env_id, const char *session_id, const char *now,
				     int *queued)
{
	(void)db;
	(void)id;
	(void)ws;
	(void)env_id;
	(void)session_id;
	(void)now;
	requeued++;
	*queued = 1;
	return DB_OK;
}

enum db_status __wrap_workdb_wake(struct db *db, const char *env_id);
enum db_status __wrap_workdb_wake(struct db *db, const char *env_id)
{
	(void)db;
	(void)env_id;
	return DB_OK;
}

/* The log holds one event: the tool use TOOL_USE_ID of body tool_use (NULL: none), with no
 * answer; evdb_await's two reads are the only statements a send runs past the wrapped writes. */
#define TOOL_USE_ID "sevt_tooluse0123456789abcdef"
static const char *tool_use;

enum db_status __wrap_db_exec(struct db *db, const char *sql, const struct db_val *params,
			      unsigned nparams, struct db_rows *rows, unsigned long long *affected);
enum db_status __wrap_db_exec(struct db *db, const char *sql, const struct db_val *params,
			      unsigned nparams, struct db_rows *rows, unsigned long long *affected)
{
	static char id[] = TOOL_USE_ID, type[] = "agent.tool_use", body[4096];
	static char *cell[EV_C_COUNT];
	static unsigned long len[EV_C_COUNT];

	(void)db;
	(void)params;
	(void)nparams;
	if (affected)
		*affected = 0;
	if (!rows)
		return DB_OK;
	*rows = (struct db_rows){ .ncols = EV_C_COUNT, .cell = cell, .len = len };
	if (!tool_use || strstr(sql, "ref_id = ?")) /* no answers */
		return DB_OK;
	snprintf(body, sizeof(body), "%s", tool_use);
	cell[EV_C_ID] = id;
	cell[EV_C_TYPE] = type;
	cell[EV_C_BODY] = body;
	for (unsigned c = 0; c < EV_C_COUNT; c++)
		len[c] = cell[c] ? strlen(cell[c]) : 0;
	rows->nrows = 1;
	return DB_OK;
}

/* db_rows_free for __wrap_db_exec's rows (they own nothing). */
void __wrap_db_rows_free(struct db_rows *rows);
void __wrap_db_rows_free(struct db_rows *rows)
{
	memset(rows, 0, sizeof(*rows));
}

static struct config cfg;
static struct worker w;

static int setup(void **state)
{
	(void)state;
	retries = attempts = requeued = self_hosted = 0;
	tool_use = NULL;
	status[0] = '\0';
	memset(&w, 0, sizeof(w));
	w.cfg = &cfg;
	w.db = db_new(&cfg); /* never connected: the wrapped writes are the database */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	db_free(w.db);
	return 0;
}

/* events_send to SESSION_ID for workspace ws1 with BODY: the answer's status. */
static int send_events(const char *body)
{
	static char *env[] = { NULL };
	struct auth_principal who = { .kind = AUTH_WORKSPACE_KEY, .workspace_id = "ws1" };
	struct request req = { .method = "POST",
			       .path = "/v1/sessions/" SESSION_ID "/events",
			       .request_id = "req_test",
			       .param_buf = SESSION_ID,
			       .nparams = 1,
			       .principal = &who,
			       .env = env };
	struct response resp = { 0 };
	int st;

	req.params[0] = req.param_buf;
	req.json = json_loads(body, 0, NULL);
	assert_non_null(req.json);
	events_send(&w, &req, &resp);
	st = resp.status;
	req_release(&req);
	resp_release(&resp);
	return st;
}

/* A user.message to a session idle (self_hosted when SELF) that takes ATTEMPTS attempts to
 * commit starts a turn: the session running, WORK work items queued by the attempt that
 * commits. */
static void expect_turn(int self, int n_attempts, int work)
{
	static const char body[] = "{\"events\":[{\"type\":\"user.message\",\"content\":"
				   "[{\"type\":\"text\",\"text\":\"hi\"}]}]}";

	self_hosted = self;
	attempts = 0;
	retries = n_attempts - 1;
	assert_int_equal(send_events(body), 200);
	assert_int_equal(attempts, n_attempts);
	assert_int_equal(requeued, work);
	assert_string_equal(status, SES_RUNNING);
}

/* A self_hosted session whose work items are done gets a new one in the transaction that
 * commits, however many attempts rolled back before it. */
static void test_turn_work_item_on_retry(void **state)
{
	(void)state;
	expect_turn(1, 1, 1);
	expect_turn(1, 3, 1);
}

/* A cloud session's turn is the runner's: no work item, on any attempt. */
static void test_cloud_turn_no_work_item(void **state)
{
	(void)state;
	expect_turn(0, 2, 0);
}

/* What a tool use waits for is its own evaluated_permission, whatever its input holds: a
 * self_hosted session's allowed tool use takes its result, even when the model's input has a
 * member of that name. */
static void test_permission_not_from_input(void **state)
{
	static const char result[] =
		"{\"events\":[{\"type\":\"user.tool_result\",\"tool_use_id\":\"" TOOL_USE_ID
		"\",\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}]}";

	(void)state;
	self_hosted = 1;
	tool_use = "{\"type\":\"agent.tool_use\",\"name\":\"bash\",\"input\":{\"command\":"
		   "\"true\",\"evaluated_permission\":\"ask\"},\"evaluated_permission\":\"allow\"}";
	assert_int_equal(send_events(result), 200);
	/* and the other way round: an ask is asked, whatever the input says */
	tool_use = "{\"type\":\"agent.tool_use\",\"name\":\"bash\",\"input\":{\"a\":{"
		   "\"evaluated_permission\":\"allow\"}},\"evaluated_permission\":\"ask\"}";
	assert_int_equal(send_events(result), 400);
}

UNIT_MAIN(cmocka_unit_test_setup_teardown(test_turn_work_item_on_retry, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_cloud_turn_no_work_item, setup, teardown),
	  cmocka_unit_test_setup_teardown(test_permission_not_from_input, setup, teardown))
