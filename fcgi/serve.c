/* The only file that speaks FastCGI: accept loop, reading the request, writing the response,
 * and the prefork supervisor. */
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <fcgiapp.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/clock.h"
#include "../common/log.h"
#include "../common/privs.h"
#include "../common/startup.h"

extern char **environ;

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Where the body comes from: a FastCGI stream or stdin. */
struct body_src {
	FCGX_Stream *in; /* NULL: stdin */
};

static size_t src_read(void *ctx, char *buf, size_t n)
{
	struct body_src *src = ctx;
	size_t got = 0;

	while (got < n) {
		size_t r;
		if (src->in) {
			int k = FCGX_GetStr(buf + got, (int)(n - got), src->in);
			if (k <= 0)
				break;
			r = (size_t)k;
		} else {
			r = fread(buf + got, 1, n - got, stdin);
			if (!r)
				break;
		}
		got += r;
	}
	return got;
}

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 409:
		return "Conflict";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Payload Too Large";
	case 422:
		return "Unprocessable Entity";
	case 429:
		return "Too Many Requests";
	case 503:
		return "Service Unavailable";
	default:
		return status < 500 ? "Client Error" : "Internal Server Error";
	}
}

/* Format the CGI response head (libfcgi's own printf loses %zu: format here, then write). */
static int format_head(const struct request *req, const struct response *resp, char *buf,
		       size_t size)
{
	int n = resp->status == 204 /* no content: no content headers either (RFC 9110) */
			? snprintf(buf, size, "Status: 204 %s\r\nrequest-id: %s\r\n", reason(204),
				   req->request_id)
			: snprintf(buf, size,
				   "Status: %d %s\r\ncontent-type: application/json\r\n"
				   "request-id: %s\r\ncontent-length: %zu\r\n",
				   resp->status, reason(resp->status), req->request_id,
				   resp->body_len);
	for (int i = 0; i < resp->nheaders && n > 0 && (size_t)n < size; i++)
		n += snprintf(buf + n, size - (size_t)n, "%s\r\n", resp->headers[i]);
	if (n > 0 && (size_t)n + 3 < size)
		n += snprintf(buf + n, size - (size_t)n, "\r\n");
	return n;
}

/* resp_stream's writer over a FastCGI stream: every write is flushed to the web server. */
static int fcgx_stream_write(void *ctx, const char *buf, size_t n)
{
	FCGX_Stream *out = ctx;

	for (size_t off = 0; off < n; off += SERVE_WRITE_CHUNK) {
		size_t k = n - off < SERVE_WRITE_CHUNK ? n - off : SERVE_WRITE_CHUNK;
		if (FCGX_PutStr(buf + off, (int)k, out) != (int)k)
			return -1;
	}
	return FCGX_FFlush(out) || FCGX_GetError(out) ? -1 : 0;
}

/* ...and over stdout (CGI). */
static int stdout_stream_write(void *ctx, const char *buf, size_t n)
{
	(void)ctx;
	return fwrite(buf, 1, n, stdout) != n || fflush(stdout) ? -1 : 0;
}

/* Handle one request whose parameters are ENV: read, hand it to APP, and leave the response
 * (or, when the handler streamed it through STREAM, nothing more to write). */
static void handle(const struct serve_app *app, void *w, char **env, struct body_src *src,
		   const struct resp_stream *stream, struct request *req, struct response *resp)
{
	memset(req, 0, sizeof(*req));
	memset(resp, 0, sizeof(*resp));
	resp->stream = stream;
	req->env = env;
	if (req_read(req, resp, src_read, src) == 0)
		app->handle(w, req, resp);
	if (!resp->body)
		resp_error(resp, req, 500, NULL, "handler produced no response");
	log_debug("%s %s -> %d %s", req->method, req->path, resp->status, req->request_id);
}

static void write_fcgx(FCGX_Stream *out, const struct request *req, const struct response *resp)
{
	char head[RESP_MAX_HEADERS * RESP_HEADER_MAX + 512];
	int n = format_head(req, resp, head, sizeof(head));

	FCGX_PutStr(head, n, out);
	for (size_t off = 0; off < resp->body_len; off += SERVE_WRITE_CHUNK) {
		size_t k = resp->body_len - off < SERVE_WRITE_CHUNK ? resp->body_len - off
								    : SERVE_WRITE_CHUNK;
		FCGX_PutStr(resp->body + off, (int)k, out);
	}
}

/* 1 when this worker's peak resident set passed [api] max_rss_mb: one request made it grow
 * (a large page, a large body) and the memory stays with the process, so it is recycled.
 * getrusage is one system call, no file read, on every request. */
static int worker_too_big(const struct config *cfg)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ru.ru_maxrss / 1024 > cfg->api_max_rss_mb; /* ru_maxrss is in KiB */
}

/* Accept and serve until asked to stop, MAX requests are served (0: no limit), the worker grew
 * past [api] max_rss_mb, or (SUPERVISOR > 0) the supervisor is gone. */
static int worker_loop(const struct config *cfg, const struct serve_app *app, int listen_fd,
		       long max, pid_t supervisor)
{
	void *w;
	struct request req;
	struct response resp;
	FCGX_Request fr;
	sigset_t term, old;
	long served = 0;

	startup_signals(on_stop); /* no SA_RESTART: accept() must return EINTR */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigaddset(&term, SIGINT);
	/* SIGTERM is only delivered while waiting in accept(): an in-flight request finishes */
	sigprocmask(SIG_BLOCK, &term, &old);

	w = app->worker_new(cfg);
	if (!w || FCGX_InitRequest(&fr, listen_fd, FCGI_FAIL_ACCEPT_ON_INTR)) {
		log_error("worker: out of memory at start");
		app->worker_free(w);
		return 1;
	}
	while (!max || served < max) {
		int rc;

		sigprocmask(SIG_UNBLOCK, &term, NULL);
		rc = stop_requested ? -1 : FCGX_Accept_r(&fr);
		sigprocmask(SIG_BLOCK, &term, NULL);
		if (stop_requested)
			break;
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			log_error("worker: accept failed: %s", strerror(errno));
			break;
		}
		{
			struct body_src src = { fr.in };
			struct resp_stream stream = { fcgx_stream_write, fr.out, fr.ipcFd };
			handle(app, w, fr.envp, &src, &stream, &req, &resp);
			if (!resp.streamed)
				write_fcgx(fr.out, &req, &resp);
			req_release(&req);
			resp_release(&resp);
		}
		FCGX_Finish_r(&fr);
		served++;
		if (worker_too_big(cfg)) {
			log_warn("worker: peak RSS passed %ld MiB after %ld requests; recycling",
				 cfg->api_max_rss_mb, served);
			break;
		}
		if (supervisor > 0 && getppid() != supervisor) {
			log_warn("worker: the supervisor is gone; stopping");
			break;
		}
	}
	FCGX_Free(&fr, 0);
	app->worker_free(w);
	return 0;
}

int serve_fd0(const struct config *cfg, const struct serve_app *app)
{
	if (FCGX_Init())
		return 1;
	return worker_loop(cfg, app, 0, 0, 0);
}

int serve_cgi(const struct config *cfg, const struct serve_app *app)
{
	void *w;
	struct request req;
	struct response resp;
	struct body_src src = { NULL };
	struct resp_stream stream = { stdout_stream_write, NULL, -1 };
	char head[RESP_MAX_HEADERS * RESP_HEADER_MAX + 512];
	int n;

	w = app->worker_new(cfg);
	if (!w) {
		log_error("out of memory at start");
		return 1;
	}
	handle(app, w, environ, &src, &stream, &req, &resp);
	if (!resp.streamed) {
		n = format_head(&req, &resp, head, sizeof(head));
		fwrite(head, 1, (size_t)n, stdout);
		fwrite(resp.body, 1, resp.body_len, stdout);
	}
	fflush(stdout);
	req_release(&req);
	resp_release(&resp);
	app->worker_free(w);
	return 0;
}

int serve_started_by_server(void)
{
	if (FCGX_Init() == 0 && !FCGX_IsCGI())
		return SERVE_FASTCGI;
	return getenv("GATEWAY_INTERFACE") ? SERVE_CGI : 0;
}

/* ---- supervisor ---- */

static volatile sig_atomic_t child_exited;

static void on_child(int sig)
{
	(void)sig;
	child_exited = 1;
}

/* A worker keeps nothing of the operator's environment (which may hold credentials: the
 * configuration was read before the fork): the strings are wiped where they lie, so
 * /proc/PID/environ shows none of them either, and only SERVE_WORKER_PATH is set. */
static void scrub_environment(void)
{
	for (char **e = environ; e && *e; e++)
		explicit_bzero(*e, strlen(*e));
	clearenv();
	setenv("PATH", SERVE_WORKER_PATH, 1);
}

/* Fork a worker serving LISTEN_FD, or (LISTEN_FD < 0) the application's aux process; its
 * process name (ps, pgrep) is NAME. */
static pid_t spawn(const struct config *cfg, const struct serve_app *app, int listen_fd, long max,
		   const char *name)
{
	pid_t supervisor = getpid();
	pid_t pid = fork();

	if (pid == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGCHLD, &sa, NULL);
		scrub_environment();
		prctl(PR_SET_NAME, name);
		/* it keeps only what it opened as root (the listening socket) */
		if (privs_drop(cfg->api_user, "worker", "[api] user"))
			_exit(1);
		/* after the switch of user, which clears it: the worker gets SIGTERM (finish the
		 * request, then leave) when the supervisor dies; the supervisor may have died
		 * before this line, so check too */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != supervisor)
			_exit(1);
		if (listen_fd < 0) {
			/* the aux process starts with the signals of a new process: the supervisor
			 * blocks SIGTERM (and the rest) between its sigsuspend()s, and a blocked
			 * SIGTERM never stops the aux process (the supervisor then waits for it) */
			sigset_t none;
			sigaction(SIGTERM, &sa, NULL);
			sigaction(SIGINT, &sa, NULL);
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			_exit(app->aux_run(cfg));
		}
		_exit(worker_loop(cfg, app, listen_fd, max, supervisor));
	}
	if (pid < 0)
		log_error("supervisor: fork: %s", strerror(errno));
	return pid;
}

/* A socket address is a unix socket path, or HOST:PORT for FastCGI over TCP (libfcgi's own
 * syntax; scripts/cluster.sh puts API hosts behind one nginx that way). */
static int is_tcp_address(const char *addr)
{
	return addr[0] != '/' && strchr(addr, ':') != NULL;
}

/* Give the unix socket PATH, which this process has just bound, to GROUP: through a descriptor
 * of the path itself (O_PATH | O_NOFOLLOW), which must still be a socket this user owns, never
 * by name: a path swapped for a symlink after the bind would otherwise hand its target (any
 * file, when the supervisor is root) to the group. 0, or -1 logged. */
static int socket_group(const char *path, const char *group)
{
	struct group *g = getgrnam(group);
	struct stat st;
	int pfd, ret = -1;

	if (!g) {
		log_error("cannot give %s to group %s: no such group", path, group);
		return -1;
	}
	pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0) {
		log_error("cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(pfd, &st) || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		log_error("%s is no longer the socket just bound (replaced since): not serving it",
			  path);
		goto out;
	}
	if (fchownat(pfd, "", (uid_t)-1, g->gr_gid, AT_EMPTY_PATH)) {
		log_error("cannot give %s to group %s: %s", path, group, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	close(pfd);
	return ret;
}

/* Bind the FastCGI socket PATH (a unix path with the configured group and mode, or HOST:PORT).
 * The mode is set by the umask the bind creates the socket under, so nothing changes a mode by
 * name afterwards. The fd, or -1. */
static int bind_socket(const struct config *cfg, const char *path)
{
	int fd, tcp = is_tcp_address(path);
	mode_t old_umask;

	if (!tcp)
		unlink(path);
	old_umask = umask(~(mode_t)cfg->api_socket_mode & 0777);
	fd = FCGX_OpenSocket(path, SERVE_BACKLOG);
	umask(old_umask);
	if (fd < 0) {
		log_error("cannot bind %s: %s", path, strerror(errno));
		return -1;
	}
	if (!tcp && cfg->api_socket_group[0] && socket_group(path, cfg->api_socket_group)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A set of workers on one socket: the API's, and the long polls' ([api] poll_socket). */
struct pool {
	const char *name; /* the workers' process name */
	const char *socket;
	int fd, n;
	pid_t *pids;
};

/* The slot of P whose worker PID was (now free), or -1 when PID was none of P's. */
static int pool_reap(struct pool *p, pid_t pid)
{
	for (int i = 0; i < p->n; i++)
		if (p->pids[i] == pid) {
			p->pids[i] = 0;
			return i;
		}
	return -1;
}

static int pool_left(const struct pool *p)
{
	int left = 0;

	for (int i = 0; i < p->n; i++)
		left += p->pids[i] > 0;
	return left;
}

static void pool_signal(const struct pool *p, int sig)
{
	for (int i = 0; i < p->n; i++)
		if (p->pids[i] > 0)
			kill(p->pids[i], sig);
}

/* Before a respawn: more than SERVE_RESPAWN_BURST in a SERVE_RESPAWN_WINDOW_S window slow it
 * down. Returns 1. */
static int respawn_throttle(time_t *window, int *burst)
{
	if (time(NULL) - *window >= SERVE_RESPAWN_WINDOW_S) {
		*window = time(NULL);
		*burst = 0;
	}
	if (++*burst > SERVE_RESPAWN_BURST) {
		log_error("workers die too fast; slowing down");
		sleep(1);
	}
	return 1;
}

int serve_supervisor(const struct config *cfg, const struct serve_app *app)
{
	struct pool pools[SERVE_POOLS] = {
		{ SERVE_WORKER_NAME, cfg->api_socket, -1, config_api_workers(cfg), NULL },
		{ SERVE_POLL_WORKER_NAME, cfg->api_poll_socket, -1, cfg->api_poll_workers, NULL }
	};
	int npools = cfg->api_poll_socket[0] ? 2 : 1, burst = 0, ret = 1;
	int aux = app->aux_run && app->aux_enabled && app->aux_enabled(cfg);
	pid_t aux_pid = 0;
	struct sigaction sa;
	sigset_t mask, old;
	time_t window = time(NULL);

	if (FCGX_Init())
		return 1;
	/* before the fork: what every worker shares */
	if (app->init && app->init(cfg))
		return 1;
	for (int k = 0; k < npools; k++) {
		pools[k].pids = calloc((size_t)pools[k].n, sizeof(pid_t));
		pools[k].fd = pools[k].pids ? bind_socket(cfg, pools[k].socket) : -1;
		if (pools[k].fd < 0)
			goto out;
	}

	startup_signals(on_stop);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);

	for (int k = 0; k < npools; k++) {
		int alive = 0;
		for (int i = 0; i < pools[k].n; i++) {
			pools[k].pids[i] =
				spawn(cfg, app, pools[k].fd, cfg->api_max_requests, pools[k].name);
			alive += pools[k].pids[i] > 0;
		}
		log_info("supervisor: %d workers on %s (backend %s)", alive, pools[k].socket,
			 cfg->backend);
	}
	if (aux)
		aux_pid = spawn(cfg, app, -1, 0, app->aux_name);

	while (!stop_requested) {
		pid_t pid;
		int status;

		sigsuspend(&old); /* wait for SIGCHLD or SIGTERM with both unblocked */
		child_exited = 0;
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (pid == aux_pid) {
				log_warn("%s %d exited (status %d); restarting", app->aux_name,
					 (int)pid, status);
				aux_pid = 0;
				if (respawn_throttle(&window, &burst) && !stop_requested)
					aux_pid = spawn(cfg, app, -1, 0, app->aux_name);
				continue;
			}
			for (int k = 0; k < npools; k++) {
				struct pool *p = &pools[k];
				int i = pool_reap(p, pid);

				if (i < 0)
					continue;
				if (WIFSIGNALED(status))
					log_warn("worker %d killed by signal %d; restarting",
						 (int)pid, WTERMSIG(status));
				if (stop_requested)
					break;
				respawn_throttle(&window, &burst);
				p->pids[i] = spawn(cfg, app, p->fd, cfg->api_max_requests, p->name);
			}
		}
	}

	log_info("supervisor: stopping");
	for (int k = 0; k < npools; k++)
		pool_signal(&pools[k], SIGTERM);
	if (aux_pid > 0) { /* it holds no request: it leaves at once */
		kill(aux_pid, SIGTERM);
		waitpid(aux_pid, NULL, 0);
	}
	for (time_t deadline = time(NULL) + SERVE_STOP_GRACE_S;;) {
		int left = 0;
		pid_t pid;
		while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
			for (int k = 0; k < npools && pool_reap(&pools[k], pid) < 0; k++)
				;
		for (int k = 0; k < npools; k++)
			left += pool_left(&pools[k]);
		if (!left)
			break;
		if (time(NULL) >= deadline)
			for (int k = 0; k < npools; k++)
				pool_signal(&pools[k], SIGKILL);
		clock_sleep_ms(20);
	}
	ret = 0;
	log_info("supervisor: stopped");
out:
	for (int k = 0; k < npools; k++) {
		if (pools[k].fd >= 0) {
			close(pools[k].fd);
			if (!is_tcp_address(pools[k].socket))
				unlink(pools[k].socket);
		}
		free(pools[k].pids);
	}
	return ret;
}
