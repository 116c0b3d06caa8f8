/* The `opensandbox` backend: OpenSandbox's lifecycle API creates and removes sandboxes, execd
 * (inside each sandbox, reached through an endpoint the lifecycle API hands out) runs commands,
 * and the egress sidecar (likewise) holds the allowlist. The only backend that enforces a
 * limited network policy.
 *
 * Protocol sources (checked, not assumed):
 *  - lifecycle: alibaba/OpenSandbox specs/sandbox-lifecycle.yml (also the newer copy in
 *    opensandbox-group/OpenSandbox specs/sandbox-lifecycle.yml)
 *  - execd: opensandbox-group/OpenSandbox specs/execd-api.yaml (RunCommandRequest with timeout
 *    and envs); the event framing and exit code from alibaba/OpenSandbox
 *    components/execd/pkg/web/controller/sse.go and components/execd/pkg/runtime/command.go;
 *    the client side from alibaba/OpenSandbox
 *    sdks/sandbox/python/src/opensandbox/sync/adapters/command_adapter.py
 *  - egress sidecar: alibaba/OpenSandbox specs/egress-api.yaml
 *
 * Where the specs differ from the summary:
 *  - POST /v1/sandboxes also requires `timeout` (60..86400 s, the sandbox's lifetime) and
 *    `resourceLimits` in alibaba/OpenSandbox's spec; both are sent (OSB_TTL_S, OSB_CPU/OSB_MEMORY).
 *  - execd's `timeout` is in milliseconds.
 *  - the endpoint answer is {endpoint, headers}; `endpoint` has no scheme
 *    ("host/sandboxes/ID/port/N"), and its `headers` (the execd token X-EXECD-ACCESS-TOKEN,
 *    the sidecar's OPENSANDBOX-EGRESS-AUTH) must be sent on every call to it.
 *  - those headers are ALL an endpoint call carries, never OPEN-SANDBOX-API-KEY, even when the
 *    endpoint is the lifecycle server's own proxy (use_server_proxy=true): the proxy
 *    (alibaba/OpenSandbox server/src/api/proxy.py) forwards every header but host, hop-by-hop
 *    ones, authorization and cookie to the port inside the sandbox, where whatever listens
 *    there (the tenant's code, once it replaced execd) would read a key that lists, runs
 *    commands in and deletes every sandbox of the deployment. The proxy route needs no key
 *    (server/src/middleware/auth.py exempts it since alibaba/OpenSandbox#250); a server that
 *    asks for one there answers 401, reported as such (docs/sandbox.md).
 *  - execd writes each event as a bare JSON object followed by a blank line (no "data:" field);
 *    the SDK accepts both forms, and so does this driver.
 *  - an `error` event carries the exit status as a decimal string in error.evalue; a command
 *    that could not start has a message there instead. Success ends with execution_complete.
 *  - GET /policy answers {status, mode, enforcementMode, policy: {defaultAction, egress}}; PATCH
 *    and DELETE need at least one item, so an empty difference sends nothing.
 *  - the newest execd spec also accepts `argv` instead of `command`; older execd builds only
 *    know `command` (run with bash -c), so the driver sends a quoted command line (sh_join). */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/strbuf.h"
#include "backend.h"
#include "http.h"
#include "remote.h"

#define OSB_API_KEY_HEADER "OPEN-SANDBOX-API-KEY"
#define OSB_NAME_KEY "terrarium.name"		  /* metadata key carrying the deterministic name */
#define OSB_DEPLOYMENT_KEY "terrarium.deployment" /* metadata key carrying sbx.deployment */
/* the states of a sandbox not on its way out, as list_page's STATES (lifecycle spec) */
#define OSB_LIVE_STATES "&state=Pending&state=Running&state=Pausing&state=Paused&state=Failed"
#define OSB_EXECD_PORT 44772
#define OSB_EGRESS_PORT 18080
#define OSB_TTL_S 86400 /* the spec's maximum sandbox lifetime */
#define OSB_CPU "1"
#define OSB_MEMORY "2Gi"
#define OSB_WORKDIR SBX_WORKSPACE
#define OSB_READY_TIMEOUT_S 300 /* Pending -> Running */
#define OSB_POLL_FIRST_MS 200
#define OSB_POLL_MAX_MS 2000
#define OSB_LIST_PAGE_SIZE 50
#define OSB_EXEC_SLACK_S 30	    /* HTTP time beyond the command's own limit */
#define OSB_SETUP_TIMEOUT_S 60	    /* mkdir of the workdir */
#define OSB_SSE_LINE_MAX (8u << 20) /* one event; execd sends output line by line */
#define OSB_EP_HEADERS 8
#define OSB_HEADER_LINE_MAX 1024
#define OSB_ENV_MAX 64
#define OSB_COMMAND_ID_MAX 128 /* execd's command id (its "init" event) */

/* Where execd or the egress sidecar of one sandbox answers, and the headers (per-sandbox
 * tokens) its calls carry: nothing else, never the API key (above). */
struct osb_endpoint {
	int have;
	char url[HTTP_URL_MAX];
	char headers[OSB_EP_HEADERS][OSB_HEADER_LINE_MAX];
	int nheaders;
};

struct osb {
	struct http_client http;
	pthread_mutex_t lock;	     /* the endpoint cache below, shared by every thread */
	char ep_sandbox[SBX_ID_MAX]; /* whose endpoints are cached */
	struct osb_endpoint execd, egress;
};
_Static_assert(offsetof(struct osb, http) == 0, "sbx_http_close frees the state from its client");

static struct osb *osb_of(struct sbx *s)
{
	return s->priv;
}

int osb_open(struct sbx *s, char *err, size_t errsz)
{
	if (!s->remote->image[0]) {
		snprintf(err, errsz, "opensandbox: [opensandbox] image is not set");
		return -1;
	}
	/* lifecycle spec: securitySchemes.apiKeyAuth, header OPEN-SANDBOX-API-KEY */
	if (!sbx_http_open(s, s->remote, sizeof(struct osb), OSB_API_KEY_HEADER, "", err, errsz))
		return -1;
	/* a zeroed mutex is not initialised; it is never destroyed (sbx_http_close frees the
	 * state, and a default mutex holds nothing) */
	pthread_mutex_init(&osb_of(s)->lock, NULL);
	return 0;
}

static const char *state_of(json_t *sandbox)
{
	return json_string_value(json_object_get(json_object_get(sandbox, "status"), "state"));
}

/* GET /v1/sandboxes/{id}/endpoints/{port}?use_server_proxy=true (lifecycle spec:
 * paths./sandboxes/{sandboxId}/endpoints/{port}, schema Endpoint {endpoint, headers}). */
static int fetch_endpoint(struct osb *o, const char *id, int port, struct osb_endpoint *ep,
			  char *err, size_t errsz)
{
	char eid[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	json_t *root = NULL, *headers;
	const char *endpoint, *name;
	json_t *value;
	int ret = -1;

	memset(ep, 0, sizeof(*ep));
	if (http_escape(id, eid, sizeof(eid))) {
		snprintf(err, errsz, "opensandbox: sandbox id is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/endpoints/%d?use_server_proxy=true", eid,
		 port);
	if (!(root = http_get_json(&o->http, path, err, errsz)))
		goto out;
	endpoint = json_string_value(json_object_get(root, "endpoint"));
	if (!endpoint || !*endpoint) {
		snprintf(err, errsz, "opensandbox: GET %.*s: no endpoint in the answer",
			 (int)strcspn(path, "?"), path);
		goto out;
	}
	/* the spec's endpoint has no scheme; use the lifecycle URL's */
	if (strstr(endpoint, "://"))
		snprintf(ep->url, sizeof(ep->url), "%s", endpoint);
	else
		snprintf(ep->url, sizeof(ep->url), "%s://%s",
			 !strncmp(o->http.base, "https://", 8) ? "https" : "http", endpoint);
	if (strncmp(ep->url, "http://", 7) && strncmp(ep->url, "https://", 8)) {
		snprintf(err, errsz, "opensandbox: endpoint for port %d is not an http(s) URL",
			 port);
		goto out;
	}
	while (strlen(ep->url) && ep->url[strlen(ep->url) - 1] == '/')
		ep->url[strlen(ep->url) - 1] = '\0';
	headers = json_object_get(root, "headers");
	json_object_foreach (headers, name, value) {
		const char *v = json_string_value(value);
		int n;
		if (!v || ep->nheaders >= OSB_EP_HEADERS || strpbrk(name, "\r\n:") ||
		    strpbrk(v, "\r\n")) {
			snprintf(err, errsz, "opensandbox: endpoint for port %d: unusable header",
				 port);
			goto out;
		}
		n = snprintf(ep->headers[ep->nheaders], OSB_HEADER_LINE_MAX, "%s: %s", name, v);
		if (n < 0 || n >= OSB_HEADER_LINE_MAX) {
			snprintf(err, errsz, "opensandbox: endpoint for port %d: header too long",
				 port);
			goto out;
		}
		ep->nheaders++;
	}
	ep->have = 1;
	ret = 0;
out:
	json_decref(root);
	return ret;
}

/* The execd or egress endpoint of sandbox ID, cached for the last sandbox used, copied into OUT
 * (the cache is every thread's). OUT, or NULL with ERR set. */
static struct osb_endpoint *endpoint(struct osb *o, const char *id, int port,
				     struct osb_endpoint *out, char *err, size_t errsz)
{
	struct osb_endpoint *ep = port == OSB_EXECD_PORT ? &o->execd : &o->egress;
	int rc = 0;

	pthread_mutex_lock(&o->lock);
	if (strcmp(o->ep_sandbox, id)) {
		memset(&o->execd, 0, sizeof(o->execd));
		memset(&o->egress, 0, sizeof(o->egress));
		snprintf(o->ep_sandbox, sizeof(o->ep_sandbox), "%s", id);
	}
	if (!ep->have)
		rc = fetch_endpoint(o, id, port, ep, err, errsz);
	if (!rc)
		*out = *ep;
	pthread_mutex_unlock(&o->lock);
	return rc ? NULL : out;
}

/* Forget the cached endpoints when they are sandbox ID's (it moved or is gone). */
static void endpoint_forget(struct osb *o, const char *id)
{
	pthread_mutex_lock(&o->lock);
	if (!id || !strcmp(o->ep_sandbox, id))
		o->ep_sandbox[0] = '\0';
	pthread_mutex_unlock(&o->lock);
}

/* A request to endpoint EP: its URL + PATH and its headers, without the API key, whatever origin
 * the URL has (a port inside the sandbox, or the lifecycle server's proxy to it). */
static int ep_request(const struct osb_endpoint *ep, struct http_request *rq, const char *method,
		      const char *path, json_t *body, char *url, size_t urlsz)
{
	int n = snprintf(url, urlsz, "%s%s", ep->url, path);
	if (n < 0 || (size_t)n >= urlsz)
		return -1;
	*rq = http_req(method, url, body);
	for (int i = 0; i < ep->nheaders; i++)
		rq->headers[i] = ep->headers[i];
	rq->no_auth = 1;
	return 0;
}

/* ERR of an endpoint call the server refused for want of a credential: say that the one it may
 * want is never sent there. */
static void ep_refused(long status, char *err, size_t errsz)
{
	size_t n = strlen(err);

	if ((status == 401 || status == 403) && n < errsz)
		snprintf(err + n, errsz - n,
			 " (an endpoint call carries only the endpoint's own headers, never the "
			 "API key: a server whose proxy asks for the key is not supported, "
			 "docs/sandbox.md)");
}

/* ---- commands (execd POST /command, server-sent events) ---- */

struct sse {
	struct out_tail *out;
	struct strbuf line; /* the line read so far */
	int have_exit, exit_code, complete, start_failed, too_long;
	char message[256];
	char command_id[OSB_COMMAND_ID_MAX]; /* from the "init" event, for an interrupt */
};

static void sse_event(struct sse *e, const char *line, size_t len)
{
	json_t *ev, *error;
	const char *type, *text;

	if (!len || line[0] == ':')
		return;
	if (len >= 5 && !strncmp(line, "data:", 5)) {
		line += 5, len -= 5;
		if (len && *line == ' ')
			line++, len--;
	} else if (line[0] != '{') {
		return; /* event:, id:, retry: fields carry nothing this driver needs */
	}
	ev = json_loadb(line, len, 0, NULL);
	type = json_string_value(json_object_get(ev, "type"));
	if (!type) {
		json_decref(ev);
		return;
	}
	if (!strcmp(type, "stdout") || !strcmp(type, "stderr")) {
		text = json_string_value(json_object_get(ev, "text"));
		if (text)
			out_tail_put(e->out, text, strlen(text));
	} else if (!strcmp(type, "error")) {
		const char *evalue, *ename;
		char *end;
		long code;
		error = json_object_get(ev, "error");
		evalue = json_string_value(json_object_get(error, "evalue"));
		ename = json_string_value(json_object_get(error, "ename"));
		code = evalue ? strtol(evalue, &end, 10) : 0;
		if (evalue && *evalue && !*end && code >= -1 && code <= 255) {
			e->have_exit = 1;
			e->exit_code = (int)code;
		} else {
			e->start_failed = 1;
			snprintf(e->message, sizeof(e->message), "%s: %s", ename ? ename : "error",
				 evalue ? evalue : "(no detail)");
		}
	} else if (!strcmp(type, "execution_complete")) {
		e->complete = 1;
	} else if (!strcmp(type, "init")) {
		text = json_string_value(json_object_get(ev, "text"));
		if (text && strlen(text) < sizeof(e->command_id))
			strcpy(e->command_id, text);
	}
	json_decref(ev);
}

static int sse_data(void *arg, const char *data, size_t n)
{
	struct sse *e = arg;

	for (size_t i = 0; i < n; i++) {
		if (data[i] == '\n') {
			size_t len = e->line.len;
			if (len && e->line.buf[len - 1] == '\r')
				len--;
			sse_event(e, strbuf_str(&e->line), len);
			strbuf_reset(&e->line);
			continue;
		}
		if (e->line.len + 2 > OSB_SSE_LINE_MAX) {
			e->too_long = 1;
			return 1;
		}
		if (strbuf_addch(&e->line, data[i]))
			return 1;
	}
	return 0;
}

/* {command, cwd, timeout (ms), envs} (execd spec: components.schemas.RunCommandRequest) */
static json_t *command_body(const char *command, const char *cwd, long timeout_s,
			    char *const envp[])
{
	json_t *envs = json_object(), *body;

	for (int i = 0; envp && envp[i] && i < OSB_ENV_MAX; i++) {
		const char *eq = strchr(envp[i], '=');
		char name[256];
		size_t n;
		if (!eq || (n = (size_t)(eq - envp[i])) == 0 || n >= sizeof(name))
			continue;
		memcpy(name, envp[i], n);
		name[n] = '\0';
		json_object_set_new(envs, name, json_string(eq + 1));
	}
	body = json_pack("{s:s}", "command", command);
	if (cwd)
		json_object_set_new(body, "cwd", json_string(cwd));
	if (timeout_s > 0)
		json_object_set_new(body, "timeout", json_integer((json_int_t)timeout_s * 1000));
	if (json_object_size(envs))
		json_object_set(body, "envs", envs);
	json_decref(envs);
	return body;
}

/* DELETE /command?id=ID (execd's interruptCommand): the command the watch stopped is
 * signalled, outside the watch (it said stop already). */
static void interrupt_command(struct sbx *s, struct osb_endpoint *ep, const char *command_id)
{
	struct http_watch_ctx watch;
	char id[OSB_COMMAND_ID_MAX * 3], path[OSB_COMMAND_ID_MAX * 3 + 16], url[HTTP_URL_MAX * 2];
	char err[SBX_ERR_MAX];
	struct http_request rq;
	struct http_response rs;

	if (http_escape(command_id, id, sizeof(id)))
		return;
	snprintf(path, sizeof(path), "/command?id=%s", id);
	if (ep_request(ep, &rq, "DELETE", path, NULL, url, sizeof(url)))
		return;
	watch = http_watch_enter(NULL);
	http_do(&osb_of(s)->http, &rq, &rs, err, sizeof(err));
	http_response_release(&rs);
	http_watch_leave(watch);
}

/* Run COMMAND (a shell command line) in sandbox ID through execd, keeping OUT_MAX bytes of its
 * output. 0 when it ran (RES holds its status and output tail), -1 when it could not
 * (RES->output says why). */
static int exec_command(struct sbx *s, const char *id, const char *command, const char *cwd,
			char *const envp[], long timeout_s, size_t out_max, struct proc_result *res)
{
	struct osb *o = osb_of(s);
	struct osb_endpoint epbuf, *ep;
	struct http_request rq;
	struct http_response rs;
	struct out_tail out;
	struct sse e;
	char url[HTTP_URL_MAX * 2], err[SBX_ERR_MAX];
	json_t *body;
	double t0 = clock_mono_s();
	int ret = -1, rc;

	memset(res, 0, sizeof(*res));
	memset(&e, 0, sizeof(e));
	memset(&rs, 0, sizeof(rs));
	out_tail_init(&out, out_max);
	e.out = &out;
	ep = endpoint(o, id, OSB_EXECD_PORT, &epbuf, err, sizeof(err));
	if (!ep) {
		proc_result_fail(res, err);
		goto out_free;
	}
	body = command_body(command, cwd, timeout_s, envp);
	if (!body || ep_request(ep, &rq, "POST", "/command", body, url, sizeof(url))) {
		json_decref(body);
		proc_result_fail(res, "opensandbox: execd request could not be built");
		goto out_free;
	}
	rq.on_data = sse_data;
	rq.on_data_arg = &e;
	rq.no_retry = 1; /* a command must not run twice */
	rq.timeout_s = timeout_s + OSB_EXEC_SLACK_S;
	rq.body_max = HTTP_ERROR_BODY_MAX * 4;
	rc = http_do(&o->http, &rq, &rs, err, sizeof(err));
	json_decref(body);
	if (e.line.len) /* a last event without its newline */
		sse_event(&e, e.line.buf, e.line.len);
	if (rc && (rs.timed_out || rs.stopped)) {
		/* execd ends the command at the time limit it was given; a stop interrupts it */
		if (rs.stopped && e.command_id[0])
			interrupt_command(s, ep, e.command_id);
		out_tail_finish(&out, res);
		proc_result_killed(res, rs.timed_out, rs.stopped);
		ret = 0;
		goto out_free;
	}
	if (rc) {
		/* the endpoint may have moved (sandbox restarted): ask again next time */
		endpoint_forget(o, NULL);
		proc_result_fail(res, e.too_long ? "opensandbox: execd event exceeds the line limit"
						 : err);
		goto out_free;
	}
	if (rs.status != 200) {
		http_error(&o->http, &rq, &rs, err, sizeof(err));
		ep_refused(rs.status, err, sizeof(err));
		proc_result_fail(res, err);
		goto out_free;
	}
	if (e.start_failed) {
		snprintf(err, sizeof(err), "opensandbox: command could not run: %s", e.message);
		http_scrub(&o->http, err, sizeof(err));
		proc_result_fail(res, err);
		goto out_free;
	}
	if (!e.have_exit && !e.complete) {
		proc_result_fail(res, "opensandbox: execd stream ended without a result");
		goto out_free;
	}
	out_tail_finish(&out, res);
	if (e.have_exit && e.exit_code < 0) {
		/* killed by a signal (Go's ExitCode() is -1): execd's timeout, or another kill */
		proc_result_killed(res, clock_mono_s() - t0 >= (double)timeout_s - 1, 0);
	} else {
		res->exit_code = e.have_exit ? e.exit_code : 0;
	}
	ret = 0;
out_free:
	out_tail_release(&out);
	strbuf_release(&e.line);
	http_response_release(&rs);
	return ret;
}

int osb_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	char *command = sh_join(ex->argv);
	int rc;

	/* ex->share_net changes nothing: the egress sidecar enforces the policy for every process
	 * (as_root too: execd runs commands as the image's user) */
	if (!command) {
		memset(res, 0, sizeof(*res));
		proc_result_fail(res, "opensandbox: empty command");
		return -1;
	}
	rc = exec_command(s, id, command, OSB_WORKDIR, ex->envp, ex->timeout_s, ex->output_max,
			  res);
	free(command);
	return rc;
}

/* ---- lifecycle ---- */

/* One page of GET /v1/sandboxes?metadata=KEY=VALUE[&state=...]&page=PAGE&pageSize=N (lifecycle
 * spec: paths./sandboxes.get; the filter is "key=value" pairs joined by '&', URL-encoded as one
 * value, as the Python SDK's list_sandboxes builds it; repeated states are ORed). STATES: ""
 * or "&state=A&state=B". The answer (its items an array), or NULL with ERR set. */
static json_t *list_page(struct osb *o, const char *key, const char *value, const char *states,
			 int page, char *err, size_t errsz)
{
	char evalue[SBX_ID_MAX * 3], filter[SBX_ID_MAX * 3 + 64], efilter[sizeof(filter) * 3];
	char path[HTTP_URL_MAX];
	json_t *root;

	/* the spec's example encodes each value, then the whole "k=v&k=v" string once more */
	if (http_escape(value, evalue, sizeof(evalue)) ||
	    snprintf(filter, sizeof(filter), "%s=%s", key, evalue) >= (int)sizeof(filter) ||
	    http_escape(filter, efilter, sizeof(efilter)) ||
	    snprintf(path, sizeof(path), "/v1/sandboxes?metadata=%s%s&page=%d&pageSize=%d", efilter,
		     states, page, OSB_LIST_PAGE_SIZE) >= (int)sizeof(path)) {
		snprintf(err, errsz, "opensandbox: sandbox name is too long");
		return NULL;
	}
	if (!(root = http_get_json(&o->http, path, err, errsz)))
		return NULL;
	if (!json_is_array(json_object_get(root, "items"))) {
		snprintf(err, errsz, "opensandbox: GET /v1/sandboxes: answer has no items");
		json_decref(root);
		return NULL;
	}
	return root;
}

/* The metadata value KEY of listed sandbox ITEM, or NULL. */
static const char *meta_of(json_t *item, const char *key)
{
	return json_string_value(json_object_get(json_object_get(item, "metadata"), key));
}

/* The first live sandbox carrying our name (list_page). 1 found (ID, STATE set), 0 none, -1. */
static int find_by_name(struct osb *o, const char *name, char *id, size_t idsz, char *state,
			size_t statesz, char *err, size_t errsz)
{
	json_t *root = list_page(o, OSB_NAME_KEY, name, "", 1, err, errsz), *item;
	size_t i;
	int ret = 0;

	if (!root)
		return -1;
	json_array_foreach (json_object_get(root, "items"), i, item) {
		const char *sid = json_string_value(json_object_get(item, "id"));
		const char *st = state_of(item);
		const char *tag = meta_of(item, OSB_NAME_KEY);
		/* a server that ignores the filter must not hand us someone else's sandbox */
		if (!sid || !st || !tag || strcmp(tag, name))
			continue;
		if (!strcmp(st, "Terminated") || !strcmp(st, "Stopping") || !strcmp(st, "Failed"))
			continue;
		if (strlen(sid) >= idsz || strlen(st) >= statesz) {
			snprintf(err, errsz, "opensandbox: sandbox id is too long");
			ret = -1;
			break;
		}
		strcpy(id, sid);
		strcpy(state, st);
		ret = 1;
		break;
	}
	json_decref(root);
	return ret;
}

/* This deployment's sandboxes not on their way out (OSB_LIVE_STATES), page after page while the
 * answer says another follows, up to MAX. */
int osb_list(struct sbx *s, struct sbx_listed *out, int max, int *n, char *err, size_t errsz)
{
	struct osb *o = osb_of(s);
	int more = 1;

	if (sbx_list_start(s, n, err, errsz))
		return -1;
	for (int page = 1; more && *n < max; page++) {
		json_t *root = list_page(o, OSB_DEPLOYMENT_KEY, s->deployment, OSB_LIVE_STATES,
					 page, err, errsz),
		       *item;
		size_t i;

		if (!root)
			return -1;
		more = json_is_true(json_object_get(json_object_get(root, "pagination"),
						    "hasNextPage")) &&
		       json_array_size(json_object_get(root, "items"));
		json_array_foreach (json_object_get(root, "items"), i, item)
			sbx_list_add(s, out, max, n, json_string_value(json_object_get(item, "id")),
				     meta_of(item, OSB_NAME_KEY),
				     meta_of(item, OSB_DEPLOYMENT_KEY));
		json_decref(root);
	}
	return 0;
}

/* Poll GET /v1/sandboxes/{id} until Running (lifecycle spec: Pending -> Running), at most
 * OSB_READY_TIMEOUT_S. */
static int wait_running(struct osb *o, const char *id, char *err, size_t errsz)
{
	char eid[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	double deadline = clock_mono_s() + OSB_READY_TIMEOUT_S;
	long delay = OSB_POLL_FIRST_MS;

	if (http_escape(id, eid, sizeof(eid))) {
		snprintf(err, errsz, "opensandbox: sandbox id is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", eid);
	for (;;) {
		json_t *root = http_get_json(&o->http, path, err, errsz);
		const char *st;
		int done = 0, failed = 0;

		if (!root)
			return -1;
		st = state_of(root);
		if (st && !strcmp(st, "Running")) {
			done = 1;
		} else if (!st || !strcmp(st, "Failed") || !strcmp(st, "Terminated") ||
			   !strcmp(st, "Stopping") || !strcmp(st, "Paused")) {
			const char *msg = json_string_value(
				json_object_get(json_object_get(root, "status"), "message"));
			snprintf(err, errsz, "opensandbox: sandbox %s is %s%s%.200s", id,
				 st ? st : "in no known state", msg ? ": " : "", msg ? msg : "");
			http_scrub(&o->http, err, errsz);
			failed = 1;
		}
		json_decref(root);
		if (done)
			return 0;
		if (failed)
			return -1;
		if (clock_mono_s() + (double)delay / 1000 > deadline) {
			snprintf(err, errsz,
				 "opensandbox: sandbox %s not Running after %ds (state %s)", id,
				 OSB_READY_TIMEOUT_S, st ? "Pending" : "unknown");
			return -1;
		}
		clock_sleep_ms(delay);
		delay = delay * 2 > OSB_POLL_MAX_MS ? OSB_POLL_MAX_MS : delay * 2;
	}
}

/* POST /v1/sandboxes (lifecycle spec: CreateSandboxRequest; 202 CreateSandboxResponse). A
 * limited sandbox starts deny-all (networkPolicy {defaultAction: deny, egress: []}), so the
 * sidecar exists and nothing leaves before set_egress; an unrestricted one gets no policy. */
static int create_sandbox(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz,
			  char *err, size_t errsz)
{
	static const long ok[] = { 202, 200, 201, 0 };
	struct osb *o = osb_of(s);
	struct http_request rq;
	struct http_response rs;
	json_t *body;
	int ret = -1;

	body = json_pack("{s:{s:s}, s:[s,s,s], s:{s:s}, s:i, s:{s:s, s:s}}", "image", "uri",
			 s->remote->image, "entrypoint", "tail", "-f", "/dev/null", "metadata",
			 OSB_NAME_KEY, spec->name, "timeout", OSB_TTL_S, "resourceLimits", "cpu",
			 OSB_CPU, "memory", OSB_MEMORY);
	if (!body) {
		snprintf(err, errsz, "opensandbox: request could not be built");
		return -1;
	}
	if (s->deployment[0])
		json_object_set_new(json_object_get(body, "metadata"), OSB_DEPLOYMENT_KEY,
				    json_string(s->deployment));
	if (!spec->share_net)
		json_object_set_new(body, "networkPolicy",
				    json_pack("{s:s, s:[]}", "defaultAction", "deny", "egress"));
	rq = http_req("POST", "/v1/sandboxes", body);
	/* a retried create could make a second sandbox; the caller's next attempt attaches by
	 * name instead */
	rq.no_retry = 1;
	if (!http_expect(&o->http, &rq, ok, &rs, err, errsz) &&
	    !http_answer_str(&o->http, &rq, &rs, "id", id, idsz, err, errsz))
		ret = 0;
	json_decref(body);
	http_response_release(&rs);
	return ret;
}

int osb_create(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
	       size_t errsz)
{
	struct osb *o = osb_of(s);
	struct proc_result res;
	char state[64];
	int found;

	found = find_by_name(o, spec->name, id, idsz, state, sizeof(state), err, errsz);
	if (found < 0)
		return -1;
	if (!found && create_sandbox(s, spec, id, idsz, err, errsz))
		return -1;
	if (wait_running(o, id, err, errsz))
		return -1;
	/* the working directory of every later command */
	if (exec_command(s, id, "mkdir -p " OSB_WORKDIR, NULL, NULL, OSB_SETUP_TIMEOUT_S,
			 (size_t)s->cfg->output_max, &res) ||
	    res.exit_code) {
		snprintf(err, errsz, "opensandbox: creating %s in sandbox %s: %.200s", OSB_WORKDIR,
			 id, res.output ? res.output : "failed");
		proc_result_release(&res);
		return -1;
	}
	proc_result_release(&res);
	return 0;
}

/* DELETE /v1/sandboxes/{id} (lifecycle spec: 204; 404 = already gone). 0 deleted, 1 not found,
 * -1 error. */
static int delete_sandbox(struct osb *o, const char *id, char *err, size_t errsz)
{
	static const long ok[] = { 204, 200, 202, 404, 0 };
	char eid[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	long st;

	if (http_escape(id, eid, sizeof(eid))) {
		snprintf(err, errsz, "opensandbox: sandbox id is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", eid);
	st = http_call(&o->http, "DELETE", path, ok, 0, err, errsz);
	return !st ? -1 : st == 404;
}

/* ID is the sandbox id, or, when the reconciler never recorded one, the deterministic name:
 * a 404 then looks the name up, so a sandbox made by a run that crashed before recording it
 * is not left behind. */
int osb_destroy(struct sbx *s, const char *id, char *err, size_t errsz)
{
	struct osb *o = osb_of(s);
	char found[SBX_ID_MAX], state[64];
	int rc = delete_sandbox(o, id, err, errsz);

	if (rc <= 0)
		goto done;
	/* a bounded number of rounds: each deletes one live sandbox of that name */
	for (int i = 0; i < 8; i++) {
		int f = find_by_name(o, id, found, sizeof(found), state, sizeof(state), err, errsz);
		if (f < 0)
			return -1;
		if (!f)
			break;
		if (delete_sandbox(o, found, err, errsz) < 0)
			return -1;
	}
	rc = 0;
done:
	endpoint_forget(o, id);
	return rc < 0 ? -1 : 0;
}

/* ---- egress (sidecar GET/PATCH/DELETE /policy, egress-api.yaml) ---- */

static int policy_call(struct osb *o, struct osb_endpoint *ep, const char *method, json_t *body,
		       json_t **answer, char *err, size_t errsz)
{
	static const long ok[] = { 200, 0 };
	struct http_request rq;
	struct http_response rs;
	char url[HTTP_URL_MAX * 2];
	int ret;

	if (ep_request(ep, &rq, method, "/policy", body, url, sizeof(url))) {
		snprintf(err, errsz, "opensandbox: egress URL is too long");
		return -1;
	}
	ret = http_expect(&o->http, &rq, ok, &rs, err, errsz);
	if (ret)
		ep_refused(rs.status, err, errsz);
	if (!ret && answer)
		*answer = http_json(&rs);
	http_response_release(&rs);
	return ret;
}

static int in_list(json_t *list, const char *host)
{
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v)
		if (json_is_string(v) && !strcmp(json_string_value(v), host))
			return 1;
	return 0;
}

/* Make the sidecar's allow rules exactly HOSTS: read the policy, PATCH the missing hosts, then
 * DELETE the extra ones (widen before narrowing, so nothing needed is ever cut off). */
int osb_set_egress(struct sbx *s, const char *id, json_t *hosts, char *err, size_t errsz)
{
	struct osb *o = osb_of(s);
	struct osb_endpoint epbuf, *ep = endpoint(o, id, OSB_EGRESS_PORT, &epbuf, err, errsz);
	json_t *current = NULL, *rules, *have = json_array(), *add = json_array(),
	       *del = json_array(), *rule, *v, *policy;
	const char *mode, *derived;
	size_t i;
	int ret = -1;

	if (!ep || !have || !add || !del)
		goto out;
	if (policy_call(o, ep, "GET", NULL, &current, err, errsz))
		goto out;
	/* egress spec, NetworkPolicy: a missing defaultAction means deny, but an empty policy
	 * means allow-all; PolicyStatusResponse.mode names the derived mode (e.g. deny_all) */
	policy = json_object_get(current, "policy");
	mode = json_string_value(json_object_get(policy, "defaultAction"));
	derived = json_string_value(json_object_get(current, "mode"));
	if (!json_is_object(policy) || (mode && strcmp(mode, "deny")) ||
	    (!mode && !json_object_get(policy, "egress")) ||
	    (derived && !strncmp(derived, "allow", 5))) {
		/* allow-all at startup (no policy) or allow-by-default: a list would not limit */
		snprintf(err, errsz, "opensandbox: sandbox %s egress is not deny-by-default (%s)",
			 id, mode ? mode : "no policy");
		goto out;
	}
	rules = json_object_get(json_object_get(current, "policy"), "egress");
	json_array_foreach (rules, i, rule) {
		const char *action = json_string_value(json_object_get(rule, "action"));
		const char *target = json_string_value(json_object_get(rule, "target"));
		if (action && target && !strcmp(action, "allow") && !in_list(have, target))
			json_array_append_new(have, json_string(target));
	}
	json_array_foreach (hosts, i, v)
		if (json_is_string(v) && !in_list(have, json_string_value(v)) &&
		    !in_list(add, json_string_value(v)))
			json_array_append_new(add, json_pack("{s:s, s:s}", "action", "allow",
							     "target", json_string_value(v)));
	json_array_foreach (have, i, v)
		if (!in_list(hosts, json_string_value(v)))
			json_array_append(del, v);
	if (json_array_size(add) && policy_call(o, ep, "PATCH", add, NULL, err, errsz))
		goto out;
	if (json_array_size(del) && policy_call(o, ep, "DELETE", del, NULL, err, errsz))
		goto out;
	ret = 0;
out:
	json_decref(current);
	json_decref(have);
	json_decref(add);
	json_decref(del);
	return ret;
}
