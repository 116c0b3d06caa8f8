/* The prefork server shared by the reference responders (bench/ref.h). Deliberately plain:
 * the point is a floor to compare the API with, not a second implementation of it. */
#include "ref.h"

#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REF_MAX_WORKERS 64

static volatile sig_atomic_t ref_stop;

static void on_term(int sig)
{
	(void)sig;
	ref_stop = 1;
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return v && *v ? v : def;
}

void ref_put_raw(struct ref *r, const char *s, size_t n)
{
	if (r->outlen + n > sizeof(r->out))
		n = sizeof(r->out) - r->outlen;
	memcpy(r->out + r->outlen, s, n);
	r->outlen += n;
}

void ref_put_str(struct ref *r, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	ref_put_raw(r, "\"", 1);
	for (size_t i = 0; i < n && r->outlen + 7 < sizeof(r->out); i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			r->out[r->outlen++] = '\\';
			r->out[r->outlen++] = (char)c;
		} else if (c < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };
			memcpy(r->out + r->outlen, e, 6);
			r->outlen += 6;
		} else {
			r->out[r->outlen++] = (char)c;
		}
	}
	ref_put_raw(r, "\"", 1);
}

long ref_read_body(FCGX_Request *fr, char *buf, long max)
{
	const char *clen = FCGX_GetParam("CONTENT_LENGTH", fr->envp);
	long want = clen ? atol(clen) : 0, got = 0;
	int k;

	if (want <= 0 || want > max)
		return -1;
	while (got < want && (k = FCGX_GetStr(buf + got, (int)(want - got), fr->in)) > 0)
		got += k;
	return got;
}

static int db_open(struct ref *r)
{
	char pw[256] = "";
	FILE *f = fopen(env_or("REF_DB_PASSWORD_FILE", "/dev/null"), "r");

	if (f) {
		if (!fgets(pw, sizeof(pw), f))
			pw[0] = '\0';
		fclose(f);
		pw[strcspn(pw, "\r\n")] = '\0';
	}
	r->conn = mysql_init(NULL);
	if (!r->conn)
		return -1;
	mysql_options(r->conn, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	mysql_options(r->conn, MYSQL_INIT_COMMAND, "SET time_zone = '+00:00'");
	if (!mysql_real_connect(r->conn, NULL, env_or("REF_DB_USER", "terrarium"), pw,
				env_or("REF_DB_NAME", "terrarium"), 0, getenv("REF_DB_SOCKET"),
				0)) {
		fprintf(stderr, "ref: connect: %s\n", mysql_error(r->conn));
		return -1;
	}
	return 0;
}

static void write_response(FCGX_Request *fr, int status, const struct ref *r)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "Status: %d %s\r\ncontent-type: application/json\r\n"
			 "content-length: %lu\r\n\r\n",
			 status, status == 200 ? "OK" : "Error", (unsigned long)r->outlen);

	FCGX_PutStr(head, n, fr->out);
	FCGX_PutStr(r->out, (int)r->outlen, fr->out);
}

static int worker(const struct ref_ops *ops, int fd)
{
	static struct ref r;
	FCGX_Request fr;

	signal(SIGTERM, SIG_DFL);
	if (db_open(&r) || ops->prepare(&r)) {
		fprintf(stderr, "ref %s: %s\n", ops->name, mysql_error(r.conn));
		return 1;
	}
	if (FCGX_InitRequest(&fr, fd, 0))
		return 1;
	while (FCGX_Accept_r(&fr) >= 0) {
		int status;
		r.outlen = 0;
		status = ops->handle(&r, &fr);
		write_response(&fr, status, &r);
		FCGX_Finish_r(&fr);
	}
	return 0;
}

int ref_main(const struct ref_ops *ops)
{
	const char *path = getenv("REF_SOCKET"), *group = getenv("REF_SOCKET_GROUP");
	int n = atoi(env_or("REF_WORKERS", "4")), fd;
	pid_t pids[REF_MAX_WORKERS] = { 0 };
	struct sigaction sa;

	if (!path || n < 1 || n > REF_MAX_WORKERS) {
		fprintf(stderr, "ref %s: set REF_SOCKET and REF_WORKERS (1..%d)\n", ops->name,
			REF_MAX_WORKERS);
		return 2;
	}
	if (FCGX_Init())
		return 1;
	unlink(path);
	fd = FCGX_OpenSocket(path, REF_BACKLOG);
	if (fd < 0) {
		fprintf(stderr, "ref %s: cannot bind %s: %s\n", ops->name, path, strerror(errno));
		return 1;
	}
	if (group && *group) {
		struct group *g = getgrnam(group);
		if (!g || chown(path, (uid_t)-1, g->gr_gid)) {
			fprintf(stderr, "ref %s: cannot give %s to group %s\n", ops->name, path,
				group);
			return 1;
		}
	}
	chmod(path, 0660);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			_exit(worker(ops, fd));
	}
	fprintf(stderr, "ref %s: %d workers on %s\n", ops->name, n, path);
	while (!ref_stop) {
		int status;
		pid_t pid = wait(&status);
		if (pid < 0 && errno != EINTR)
			break;
		if (pid > 0 && !ref_stop) {
			fprintf(stderr, "ref %s: worker %d exited; stopping\n", ops->name,
				(int)pid);
			break;
		}
	}
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGTERM);
	while (wait(NULL) > 0)
		;
	unlink(path);
	return 0;
}
