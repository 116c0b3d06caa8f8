/* GET /v1/sessions/{id}/events/stream (docs/api.md §7, docs/events.md). Behind nginx with
 * nchan the streams are held there: nginx asks this route (with the FastCGI parameter
 * TERRARIUM_STREAM_AUTH) whether the request may open the session's stream, and the tailer
 * publishes new events to it. Without it (Apache, lighttpd, an nginx without the module) a
 * worker holds the stream itself, reading the session's new events every [stream] poll_ms, for
 * at most [stream] hold_seconds, and at most [stream] max_held streams at once among the
 * supervisor's workers. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../db/events.h"
#include "events.h"
#include "handlers.h"
#include "resource.h"

#define STREAM_SLOTS_MAX 256 /* CONFIG_MAX_WORKERS: one stream a worker at most */
#define STREAM_BATCH 200     /* events one read of a held stream takes */
#define STREAM_FRAME_MAX 64  /* "event: <type>\ndata: " and the blank line */

static const char *const delta_types[] = { "agent.message", "agent.thinking", NULL };
static const char *const stream_params[] = { "event_deltas[]", "event_deltas", "beta", NULL };

/* The pids of the workers holding a stream, shared by the supervisor's workers (mapped before
 * they fork: stream_slots_init). A slot whose process died is free. */
static pid_t *slots;

int stream_slots_init(void)
{
	void *p = mmap(NULL, STREAM_SLOTS_MAX * sizeof(pid_t), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	slots = p;
	return 0;
}

/* Take one of MAX slots for this process: 1, or 0 when all are held by live processes. Without
 * the shared slots (a worker started by the web server) every stream is let through: the web
 * server's own process limit bounds them. */
static int slot_take(int max)
{
	pid_t me = getpid();

	if (!slots)
		return 1;
	for (int i = 0; i < max && i < STREAM_SLOTS_MAX; i++) {
		pid_t held = __atomic_load_n(&slots[i], __ATOMIC_SEQ_CST);

		if (held && (held == me || kill(held, 0) == 0 || errno != ESRCH))
			continue;
		if (__atomic_compare_exchange_n(&slots[i], &held, me, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			return 1;
	}
	return 0;
}

static void slot_give(void)
{
	pid_t me = getpid();

	for (int i = 0; slots && i < STREAM_SLOTS_MAX; i++) {
		pid_t held = me;
		__atomic_compare_exchange_n(&slots[i], &held, 0, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
	}
}

/* The stream's query: event_deltas (agent.message, agent.thinking: accepted; deltas are not
 * sent, the full events are) and beta. 0, or -1 with RESP a 400. */
static int stream_query(struct request *req, struct response *resp)
{
	char echo[VERR_ECHO_BUF];

	for (int i = 0; i < req->nquery; i++) {
		const char *name = req->query[i].name;

		if (!verr_in_list(name, stream_params)) {
			resp_error(resp, req, 400, NULL, "unknown query parameter '%s'",
				   verr_echo(echo, name, VERR_ECHO_CHARS));
			return -1;
		}
		if (strcmp(name, "beta") && !verr_in_list(req->query[i].value, delta_types)) {
			resp_error(resp, req, 400, NULL,
				   "'event_deltas[]' must be agent.message or agent.thinking");
			return -1;
		}
	}
	return 0;
}

/* Write ROWS' events as frames. 0, or -1 when the client is gone. *LAST: the last seq written;
 * *DELETED = 1 after a session.deleted. */
static int write_frames(struct response *resp, const struct db_rows *rows, unsigned long long *last,
			int *deleted)
{
	for (unsigned r = 0; r < rows->nrows; r++) {
		struct strbuf b = STRBUF_INIT;
		const char *type = db_cell(rows, r, EV_C_TYPE);
		int rc;

		strbuf_addf(&b, "event: %s\ndata: ", type);
		event_put(&b, db_cell(rows, r, EV_C_ID), db_cell(rows, r, EV_C_PROCESSED),
			  db_cell(rows, r, EV_C_BODY));
		TEXT_PUT_LIT(&b, "\n\n");
		rc = b.oom ? -1 : resp_stream_write(resp, b.buf, b.len);
		strbuf_release(&b);
		if (rc)
			return -1;
		*last = strtoull(db_cell(rows, r, EV_C_SEQ), NULL, 10);
		*deleted |= !strcmp(type, "session.deleted");
	}
	return 0;
}

/* Hold the stream of session ID: from the latest event on, every new one as a frame, a
 * keep-alive comment when idle, until hold_seconds passed, the client left, the session was
 * deleted or the worker is asked to stop. */
static void hold(struct worker *w, struct request *req, struct response *resp, const char *id)
{
	const struct config *cfg = w->cfg;
	long long start = clock_mono_ms(), pinged = start;
	unsigned long long last = 0;
	enum db_status st = evdb_session_last_seq(w->db, id, &last);
	int deleted = 0;

	if (st) {
		handle_db_error(w, req, resp, st);
		return;
	}
	if (resp_stream_start(resp, req, "text/event-stream") ||
	    resp_stream_write(resp, ": ok\n\n", 6))
		return;
	while (!deleted && clock_mono_ms() - start < cfg->stream_hold_s * 1000) {
		struct db_rows rows = { 0 };
		int rc;

		clock_sleep_ms(cfg->stream_poll_ms);
		if (resp_stream_gone(resp)) /* the client left: its slot is free at once */
			break;
		st = evdb_session_after(w->db, id, last, STREAM_BATCH, &rows);
		if (st) {
			log_warn("stream %s: reading its events: %s", id, db_error(w->db));
			break;
		}
		rc = write_frames(resp, &rows, &last, &deleted);
		db_rows_free(&rows);
		if (rc)
			break;
		if (clock_mono_ms() - pinged >= cfg->stream_ping_s * 1000) {
			pinged = clock_mono_ms();
			if (resp_stream_write(resp, ": ping\n\n", 8))
				break;
		}
	}
}

void events_stream(struct worker *w, struct request *req, struct response *resp)
{
	int max;

	if (stream_query(req, resp) || resource_check(&RES_SESSION, req, resp, req->params[0]) ||
	    event_session_found(w, req, resp))
		return;
	if (req_env(req, "TERRARIUM_STREAM_AUTH")) { /* nginx asks; it holds the stream */
		resp_empty(resp, 200);
		return;
	}
	max = config_stream_max_held(w->cfg);
	if (!resp->stream || !slot_take(max)) {
		resp_error(resp, req, 503, NULL,
			   "this server holds at most %d event streams at once; retry later", max);
		return;
	}
	hold(w, req, resp, req->params[0]);
	slot_give();
}
