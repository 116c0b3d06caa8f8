/* The tailer's order: seq is an AUTO_INCREMENT, allocated at insert and visible at commit, so a
 * transaction can commit a seq below one already read. Everything up to `low` is settled; above
 * it the tailer remembers what it published, and a missing seq is waited for until it is
 * TAIL_GAP_WAIT_MS older than the first event published after it (then it was rolled back, or
 * a Galera node's own auto-increment step skipped it). Every read starts at `low`, so a late
 * commit comes in seq order with the rest: a session's events are published in its order (its
 * appends are serialised by its row lock, so its own seqs commit in order). */
#include "tail.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../common/startup.h"
#include "../common/strbuf.h"
#include "../db/events.h"
#include "../handlers/events.h"

#define TAIL_HEAD_MAX 4096 /* a publisher answer's head */
#define TAIL_WARN_EVERY_MS 10000

static volatile sig_atomic_t tail_stop;

static void on_stop(int sig)
{
	(void)sig;
	tail_stop = 1;
}

int tail_enabled(const struct config *cfg)
{
	return cfg->stream_publish_socket[0] != '\0';
}

/* ---- the publisher connection: HTTP/1.1 over nginx's unix socket ---- */

struct publisher {
	const char *path;
	int fd; /* -1: not connected */
	long long warned_ms;
};

static void pub_close(struct publisher *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

static int pub_connect(struct publisher *p)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { TAIL_IO_TIMEOUT_MS / 1000, (TAIL_IO_TIMEOUT_MS % 1000) * 1000 };

	if (p->fd >= 0)
		return 0;
	if (strlen(p->path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, p->path);
	p->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->fd < 0)
		return -1;
	if (setsockopt(p->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(p->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    connect(p->fd, (struct sockaddr *)&a, sizeof(a))) {
		pub_close(p);
		return -1;
	}
	return 0;
}

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t k = send(fd, buf, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Read one answer: its status; the body (Content-Length or chunked) is read and dropped so the
 * connection can carry the next request. -1 when it cannot be read. */
static int read_answer(struct publisher *p)
{
	char head[TAIL_HEAD_MAX + 1], *end = NULL, *cl;
	size_t len = 0;
	long long body;
	int status;

	while (!end) {
		ssize_t k;
		if (len >= TAIL_HEAD_MAX)
			return -1;
		k = recv(p->fd, head + len, TAIL_HEAD_MAX - len, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		len += (size_t)k;
		head[len] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	if (sscanf(head, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	*end = '\0';
	cl = strcasestr(head, "\r\ncontent-length:");
	if (!cl) /* nchan's publisher answers carry a length; anything else: start afresh */
		return pub_close(p), status;
	body = strtoll(cl + 17, NULL, 10) - (long long)(len - (size_t)(end + 4 - head));
	while (body > 0) {
		char sink[1024];
		ssize_t k = recv(p->fd, sink,
				 body < (long long)sizeof(sink) ? (size_t)body : sizeof(sink), 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		body -= k;
	}
	return status;
}

/* METHOD /pub/CHANNEL with BODY (may be NULL) and the frame's event name TYPE. 0 when nginx
 * took it (2xx). One reconnection is tried: nginx closes idle keep-alive connections. */
static int pub_send(struct publisher *p, const char *method, const char *channel, const char *type,
		    const char *body, size_t body_len)
{
	struct strbuf req = STRBUF_INIT;
	int status = -1;

	strbuf_addf(&req, "%s /pub/%s HTTP/1.1\r\nHost: localhost\r\n", method, channel);
	if (type)
		strbuf_addf(&req, "Content-Type: application/json\r\nX-EventSource-Event: %s\r\n",
			    type);
	strbuf_addf(&req, "Content-Length: %zu\r\n\r\n", body ? body_len : 0);
	if (body)
		strbuf_add(&req, body, body_len);
	for (int attempt = 0; attempt < 2 && status < 0 && !req.oom; attempt++) {
		if (pub_connect(p))
			break;
		if (write_all(p->fd, req.buf, req.len) || (status = read_answer(p)) < 0) {
			pub_close(p);
			status = -1;
		}
	}
	strbuf_release(&req);
	if (status >= 200 && status < 300)
		return 0;
	if (clock_mono_ms() - p->warned_ms >= TAIL_WARN_EVERY_MS) {
		p->warned_ms = clock_mono_ms();
		log_warn("tailer: publishing to %s failed (%s %d); streams get events again when "
			 "it answers, and clients list what they missed",
			 p->path, status < 0 ? "no answer" : "status", status);
	}
	return -1;
}

/* ---- what has been published ---- */

struct published {
	unsigned long long seq;
	long long at_ms; /* when it was published */
};

struct tail {
	unsigned long long low; /* every seq up to it is settled */
	struct published *pub;	/* seqs above low that were published, ascending */
	size_t n;
};

static int tail_has(const struct tail *t, unsigned long long seq)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->pub[mid].seq == seq)
			return 1;
		if (t->pub[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* Remember SEQ as published (kept sorted: a late commit lands before later seqs). */
static void tail_add(struct tail *t, unsigned long long seq)
{
	size_t i = t->n;

	if (t->n == TAIL_PUBLISHED_MAX) { /* a gap held this long: give it up */
		t->low = t->pub[0].seq;
		memmove(t->pub, t->pub + 1, --t->n * sizeof(*t->pub));
		i = t->n;
	}
	while (i > 0 && t->pub[i - 1].seq > seq)
		i--;
	memmove(t->pub + i + 1, t->pub + i, (t->n - i) * sizeof(*t->pub));
	t->pub[i].seq = seq;
	t->pub[i].at_ms = clock_mono_ms();
	t->n++;
}

/* Move low over what is settled: published seqs that follow it, and gaps whose next published
 * seq is older than TAIL_GAP_WAIT_MS. */
static void tail_settle(struct tail *t)
{
	size_t k = 0;
	long long now = clock_mono_ms();

	while (k < t->n &&
	       (t->pub[k].seq == t->low + 1 || now - t->pub[k].at_ms >= TAIL_GAP_WAIT_MS))
		t->low = t->pub[k++].seq;
	memmove(t->pub, t->pub + k, (t->n - k) * sizeof(*t->pub));
	t->n -= k;
}

/* Publish ROWS' events that are not published yet. */
static void tail_publish(struct tail *t, struct publisher *p, const struct db_rows *rows)
{
	for (unsigned r = 0; r < rows->nrows; r++) {
		unsigned long long seq = strtoull(db_cell(rows, r, EV_C_SEQ), NULL, 10);
		const char *session = db_cell(rows, r, EV_C_SESSION);
		const char *type = db_cell(rows, r, EV_C_TYPE);
		struct strbuf b = STRBUF_INIT;

		if (seq <= t->low || tail_has(t, seq))
			continue;
		event_put(&b, db_cell(rows, r, EV_C_ID), db_cell(rows, r, EV_C_PROCESSED),
			  db_cell(rows, r, EV_C_BODY));
		if (!b.oom)
			pub_send(p, "POST", session, type, b.buf, b.len);
		strbuf_release(&b);
		/* a deleted session's streams end: nchan closes its subscribers */
		if (!strcmp(type, "session.deleted"))
			pub_send(p, "DELETE", session, NULL, NULL, 0);
		tail_add(t, seq);
	}
}

/* The next read: the seqs that follow low, the published ones above it included, so that a
 * late commit arrives in order with the rest; then the events from the first of them not
 * published to the last. While a gap waits, what was published after it is not read again. */
static enum db_status tail_read(struct db *db, struct tail *t, struct db_rows *rows)
{
	struct db_rows seqs;
	unsigned long long first = 0, last = 0;
	enum db_status st = evdb_tail_seqs(db, t->low, (long long)t->n + TAIL_BATCH, &seqs);

	for (unsigned r = 0; !st && r < seqs.nrows; r++) {
		unsigned long long seq = strtoull(db_cell(&seqs, r, 0), NULL, 10);

		if (tail_has(t, seq))
			continue;
		first = first ? first : seq;
		last = seq;
	}
	db_rows_free(&seqs);
	return st || !first ? st : evdb_tail(db, first - 1, last, rows);
}

/* Remove the logs deleted sessions left, once their session.deleted has been published long
 * enough ago. Every tailer of the deployment does it; the DELETEs are idempotent. */
static void tail_purge(struct db *db)
{
	char before[CLOCK_DB_LEN];
	enum db_status st;

	clock_in(-TAIL_DELETED_KEEP_S, before, NULL);
	st = evdb_purge_deleted(db, before, TAIL_BATCH);
	if (st)
		log_warn("tailer: purging deleted sessions' events: %s", db_error(db));
}

int tail_run(const struct config *cfg)
{
	struct publisher p = { cfg->stream_publish_socket, -1, 0 };
	struct tail t = { 0 };
	struct db *db = db_new(cfg);
	long long purged = 0, warned = 0;
	int started = 0;

	startup_signals(on_stop);
	t.pub = calloc(TAIL_PUBLISHED_MAX, sizeof(*t.pub));
	if (!db || !t.pub) {
		log_error("tailer: out of memory at start");
		free(t.pub);
		db_free(db);
		return 1;
	}
	log_info("tailer: publishing new events to %s every %ld ms", p.path, cfg->stream_tail_ms);
	while (!tail_stop) {
		struct db_rows rows = { 0 };
		enum db_status st;

		/* no replay: a stream starts after the latest event, so does the tailer */
		st = started ? tail_read(db, &t, &rows) : evdb_last_seq(db, &t.low);
		if (st) {
			if (clock_mono_ms() - warned >= TAIL_WARN_EVERY_MS) {
				warned = clock_mono_ms();
				log_warn("tailer: reading events: %s", db_error(db));
			}
		} else if (!started) {
			started = 1;
		} else {
			tail_publish(&t, &p, &rows);
			tail_settle(&t);
		}
		db_rows_free(&rows);
		if (clock_mono_ms() - purged >= TAIL_PURGE_EVERY_S * 1000) {
			purged = clock_mono_ms();
			tail_purge(db);
		}
		clock_sleep_ms(cfg->stream_tail_ms);
	}
	log_info("tailer: stopped");
	pub_close(&p);
	free(t.pub);
	db_free(db);
	return 0;
}
