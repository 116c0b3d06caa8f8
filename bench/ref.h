/* Reference responders for `make bench` (scripts/bench.sh): the least a FastCGI program behind
 * the same nginx can do to answer one request with one MariaDB statement. The API's figures are
 * reported as ratios to these, measured in the same run, so the table says what terrarium's own
 * code costs on top of nginx, libfcgi and MariaDB rather than how fast the machine is.
 *
 * Each reference is a prefork server like the API: REF_WORKERS single-threaded workers on one
 * unix socket, each with one MariaDB connection and its statement prepared once. Configuration
 * comes from the environment (the database password from a file, never argv):
 *   REF_SOCKET        FastCGI socket path to create
 *   REF_SOCKET_GROUP  group the socket is given to (mode 0660), optional
 *   REF_WORKERS       number of workers (default 4)
 *   REF_DB_SOCKET REF_DB_USER REF_DB_PASSWORD_FILE REF_DB_NAME
 *   REF_WORKSPACE_ID  the workspace rows are inserted into (bench-ref-insert)
 *   REF_LIST_WORKSPACE_ID  the workspace listed by GET .../environments (bench-ref-select) */
#ifndef TERRARIUM_BENCH_REF_H
#define TERRARIUM_BENCH_REF_H

#include <fcgiapp.h>
#include <mysql.h>
#include <stddef.h>

#define REF_BODY_MAX (1024 * 1024)
#define REF_OUT_MAX (512 * 1024) /* a list page of 100 rows fits */
#define REF_CELL_MAX (16 * 1024)
#define REF_BACKLOG 1024

/* One worker's state. */
struct ref {
	MYSQL *conn;
	MYSQL_STMT *stmt;
	char out[REF_OUT_MAX]; /* the response body under construction */
	size_t outlen;
};

/* What a reference program provides: prepare its statement on R->conn (0 or -1), and answer
 * one request (fill r->out, return the HTTP status). */
struct ref_ops {
	const char *name;
	int (*prepare)(struct ref *r);
	int (*handle)(struct ref *r, FCGX_Request *fr);
};

/* Bind the socket, fork the workers, supervise them until SIGTERM. Returns the exit status. */
int ref_main(const struct ref_ops *ops);

/* Read the request body (CONTENT_LENGTH bytes) into BUF (MAX bytes at most): its length, or -1
 * when it is missing, empty or longer than MAX. */
long ref_read_body(FCGX_Request *fr, char *buf, long max);

/* Append S (N bytes) to r->out as a JSON string (quoted, escaped); raw: as is. */
void ref_put_str(struct ref *r, const char *s, size_t n);
void ref_put_raw(struct ref *r, const char *s, size_t n);

#endif
