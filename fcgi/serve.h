/* Serving modes of the API binary. */
#ifndef TERRARIUM_SERVE_H
#define TERRARIUM_SERVE_H

#include "../common/config.h"
#include "../http/http.h"

#define SERVE_BACKLOG 1024
#define SERVE_STOP_GRACE_S 10	 /* SIGTERM -> wait this long for in-flight requests */
#define SERVE_RESPAWN_WINDOW_S 1 /* more than SERVE_RESPAWN_BURST deaths in this window... */
#define SERVE_RESPAWN_BURST 20	 /* ...slow respawning down */
#define SERVE_WRITE_CHUNK 65536
#define SERVE_WORKER_PATH "/usr/bin:/bin" /* the only environment variable a worker has */
#define SERVE_POOLS 2			  /* [api] socket and [api] poll_socket */
#define SERVE_WORKER_NAME "terrarium-api" /* process names of the two pools' workers */
#define SERVE_POLL_WORKER_NAME "terrarium-poll"

/* What the served application provides (registered by main: fcgi/ knows nothing of it). */
struct serve_app {
	/* In the supervisor before the first fork (state the workers share; it may read what
	 * the workers, once they gave up root, cannot); 0, or -1 to stop serving (logged by the
	 * application). NULL: nothing. */
	int (*init)(const struct config *cfg);
	/* A worker's state for CFG (borrowed; outlives it), or NULL when out of memory. */
	void *(*worker_new)(const struct config *cfg);
	void (*worker_free)(void *worker); /* NULL is fine */
	/* Answer REQ (parsed) into RESP; always leaves a complete response. */
	void (*handle)(void *worker, struct request *req, struct response *resp);
	/* Optional: a process the supervisor keeps running beside its workers, as their user
	 * and with their environment, restarted when it exits, stopped with them (the event
	 * tailer). aux_enabled says whether CFG wants it; aux_run is its body and exit status;
	 * aux_name its process name. NULL: none. */
	int (*aux_enabled)(const struct config *cfg);
	int (*aux_run)(const struct config *cfg);
	const char *aux_name;
};

/* Supervisor: bind cfg->api_socket (and cfg->api_poll_socket when set, with its own
 * api_poll_workers), prefork workers on each, restart and recycle them, stop gracefully on
 * SIGTERM/SIGINT. Returns the process exit status. */
int serve_supervisor(const struct config *cfg, const struct serve_app *app);

/* One worker loop on the listening socket already on fd 0 (spawn-fcgi, mod_fcgid). */
int serve_fd0(const struct config *cfg, const struct serve_app *app);

/* Serve one request as plain CGI from the environment and stdin to stdout. */
int serve_cgi(const struct config *cfg, const struct serve_app *app);

enum { SERVE_FASTCGI = 1, SERVE_CGI = 2 };

/* SERVE_FASTCGI when fd 0 is a listening socket, SERVE_CGI when a web server started us as CGI
 * (GATEWAY_INTERFACE set), else 0 (started from a shell). */
int serve_started_by_server(void);

#endif
