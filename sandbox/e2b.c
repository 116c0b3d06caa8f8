/* The `e2b` backend, also registered as `cube`: CubeSandbox serves the same E2B API (and the
 * same in-sandbox daemon, envd) at its own URL, configured in [cube]
 * (TencentCloud/CubeSandbox CubeAPI/README.md: "E2B-compatible API Server ... point E2B_API_URL
 * and E2B_API_KEY to this service"; /sandboxes, /v2/sandboxes with metadata filter,
 * /sandboxes/:id, DELETE, /connect are listed as implemented).
 *
 * Control plane: the E2B REST API at [e2b] url (https://api.e2b.app), authenticated with
 * X-API-Key (e2b-dev/E2B spec/openapi.yml, securitySchemes.ApiKeyAuth). A sandbox is found
 * again by its metadata: the deterministic name is stored under E2B_META_KEY.
 *
 * Commands: envd's process service (e2b-dev/E2B spec/envd/process/process.proto, package
 * `process`, service `Process`), spoken over the Connect protocol with JSON messages: a
 * server-streaming POST /process.Process/Start answering start, data (base64 stdout/stderr),
 * keepalive and end (exit code) events. The daemon is reached the way the SDK reaches it
 * (e2b-dev/E2B packages/js-sdk/src/connectionConfig.ts getHost/getSandboxUrl, and
 * sandbox/index.ts): https://49983-<sandboxID>.<domain>, with the E2b-Sandbox-Id and
 * E2b-Sandbox-Port headers (what E2B's proxy routes on) and X-Access-Token: <envdAccessToken>.
 *
 * Where envd lives is derived from the configuration, with no extra key:
 *   domain = the `domain` the API returns for the sandbox (POST /sandboxes, /connect), or, when
 *            it returns none, the host[:port] of [e2b] url with a leading "api." removed (the
 *            SDK's own rule: apiUrl = https://api.<domain>);
 *   scheme = https, except http when the domain is a loopback name (localhost, *.localhost,
 *            127.0.0.1, [::1]), which no public certificate covers.
 * So a test fake at http://127.0.0.1:PORT answers `"domain": "localhost:PORT"` and receives the
 * envd calls at http://49983-<id>.localhost:PORT (libcurl resolves *.localhost to loopback
 * itself); tests/backends/fake-e2b.mjs routes them on the Host header.
 *
 * Lifetime: E2B kills a sandbox when its timeout passes (default 15 s in the spec, at most 1 h
 * on the Hobby tier), so sandboxes are created with autoPause (paused, not killed, at the
 * timeout) and every command first calls POST /sandboxes/{id}/connect, which resumes a paused
 * sandbox, extends the timeout and returns the envd address and access token. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "../common/strbuf.h"
#include "backend.h"
#include "http.h"
#include "remote.h"

#define E2B_META_KEY "terrarium_sandbox"	  /* metadata key holding the deterministic name */
#define E2B_DEPLOYMENT_KEY "terrarium_deployment" /* metadata key holding sbx.deployment */
#define E2B_LIST_PAGE "100"			  /* GET /v2/sandboxes limit: the spec's maximum */
#define E2B_DEFAULT_TEMPLATE "base"	 /* the SDK's default template (sandbox/index.ts) */
#define E2B_ENVD_PORT 49983		 /* ConnectionConfig.envdPort */
#define E2B_TTL_S 3600			 /* sandbox timeout asked for: the Hobby tier's cap */
#define E2B_WORKDIR "/home/user"	 /* the template user's home (defaultUsername) */
#define E2B_RUN_AS_ROOT "Basic cm9vdDo=" /* HTTP Basic "root:": installs need root (apt-get) */
#define E2B_KEEPALIVE_S 50		 /* KEEPALIVE_PING_INTERVAL_SEC in connectionConfig.ts */
#define E2B_RUN_GRACE_S 30		 /* HTTP time past the command's own limit */
#define E2B_FRAME_MAX (4u << 20)	 /* largest Connect message accepted from envd */
#define E2B_DOMAIN_MAX 256
#define E2B_TOKEN_MAX 1024
#define E2B_STATUS_MAX 128
#define E2B_ERR_BODY_MAX 4096 /* response bytes kept for non-streamed calls */

struct e2b {
	struct http_client http;
	char domain[E2B_DOMAIN_MAX]; /* derived from [section] url: fallback sandbox domain */
};
_Static_assert(offsetof(struct e2b, http) == 0, "sbx_http_close frees the state from its client");

/* The address and credential of one sandbox's envd, from POST /sandboxes/{id}/connect. */
struct envd {
	char base[HTTP_URL_MAX];
	char token[E2B_TOKEN_MAX];
};

static int loopback_domain(const char *domain)
{
	size_t h = domain[0] == '[' ? strcspn(domain, "]") + 1 : strcspn(domain, ":");
	static const char suffix[] = ".localhost";
	size_t sl = sizeof(suffix) - 1;

	return (h == 9 && !strncmp(domain, "localhost", 9)) ||
	       (h > sl && !strncmp(domain + h - sl, suffix, sl)) ||
	       (h == 9 && !strncmp(domain, "127.0.0.1", 9)) ||
	       (h == 5 && !strncmp(domain, "[::1]", 5));
}

/* host[:port] of URL with a leading "api." removed, into OUT. */
static void domain_from_url(const char *url, char *out, size_t outsz)
{
	const char *p = strstr(url, "://");
	size_t n;

	p = p ? p + 3 : url;
	n = strcspn(p, "/?#");
	if (n > 4 && !strncmp(p, "api.", 4))
		p += 4, n -= 4;
	if (n >= outsz)
		n = 0;
	memcpy(out, p, n);
	out[n] = '\0';
}

int e2b_open(struct sbx *s, char *err, size_t errsz)
{
	/* e2b-dev/E2B spec/openapi.yml: securitySchemes ApiKeyAuth, header X-API-Key */
	struct e2b *e = sbx_http_open(s, s->remote, sizeof(*e), "X-API-Key", "", err, errsz);

	if (!e)
		return -1;
	domain_from_url(e->http.base, e->domain, sizeof(e->domain));
	return 0;
}

void e2b_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	(void)s;
	(void)id;
	snprintf(out, outsz, "%s", E2B_WORKDIR);
}

/* One page of GET /v2/sandboxes?metadata=KEY=VALUE&state=running,paused[&limit=N][&nextToken=T]:
 * the answer (a JSON array), or NULL with ERR set; the X-Next-Token of a page that has a next one
 * into NEXT ("" on the last). Parameters (e2b-dev/E2B spec/openapi.yml): `metadata`, "Metadata
 * query used to filter the sandboxes (e.g. "user=abc&app=prod"). Each key and values must be URL
 * encoded"; `state` (array, style form, explode false): running and paused ones; `limit` (at
 * most 100) and `nextToken`, the X-Next-Token header of the page before. The SDK encodes each key
 * and value, joins them, and the whole value is encoded again as a query parameter:
 * packages/js-sdk/src/sandbox/sandboxApi.ts SandboxPaginator.nextItems; the server unescapes the
 * value, splits on & and =, and unescapes each part: e2b-dev/infra packages/api sandboxes list
 * handler, parseFilters. */
static json_t *list_page(struct sbx *s, const char *key, const char *value, const char *token,
			 char *next, size_t nextsz, char *err, size_t errsz)
{
	static const long ok[] = { 200, 0 };
	struct e2b *e = s->priv;
	char pair[SBX_ID_MAX * 3 + 64], ekey[64], val[SBX_ID_MAX * 3], q[sizeof(pair) * 3];
	char etoken[E2B_TOKEN_MAX * 3], path[sizeof(q) + sizeof(etoken) + 128];
	struct http_request rq = { .method = "GET", .path = path, .keep_headers = 1 };
	struct http_response rs;
	json_t *list = NULL;

	if (http_escape(key, ekey, sizeof(ekey)) || http_escape(value, val, sizeof(val)) ||
	    snprintf(pair, sizeof(pair), "%s=%s", ekey, val) >= (int)sizeof(pair) ||
	    http_escape(pair, q, sizeof(q)) || http_escape(token, etoken, sizeof(etoken))) {
		snprintf(err, errsz, "%s: sandbox name is too long", s->ops->name);
		return NULL;
	}
	snprintf(path, sizeof(path), "/v2/sandboxes?metadata=%s&state=running,paused%s%s%s", q,
		 next ? "&limit=" E2B_LIST_PAGE : "", *token ? "&nextToken=" : "", etoken);
	if (http_expect(&e->http, &rq, ok, &rs, err, errsz))
		goto out;
	list = http_json(&rs);
	if (!json_is_array(list)) {
		snprintf(err, errsz, "GET /v2/sandboxes: answer is not a JSON array");
		json_decref(list);
		list = NULL;
		goto out;
	}
	if (next && http_header(&rs, "X-Next-Token", next, nextsz))
		next[0] = '\0';
out:
	http_response_release(&rs);
	return list;
}

/* ListedSandbox {sandboxID, metadata} (e2b-dev/E2B spec/openapi.yml); the list asks for running
 * and paused ones only. */
static const struct remote_tags e2b_tags = { "metadata", E2B_META_KEY, "sandboxID", NULL };

/* Find the sandbox whose metadata carries NAME (remote_find_fn). */
static int e2b_find(struct sbx *s, const char *name, char *id, size_t idsz, char *err, size_t errsz)
{
	return remote_find_in(s, list_page(s, E2B_META_KEY, name, "", NULL, 0, err, errsz),
			      &e2b_tags, name, id, idsz, err, errsz);
}

/* This deployment's sandboxes (metadata E2B_DEPLOYMENT_KEY), running or paused, page after page
 * (X-Next-Token) up to MAX. */
int e2b_list(struct sbx *s, struct sbx_listed *out, int max, int *n, char *err, size_t errsz)
{
	char token[E2B_TOKEN_MAX] = "";

	if (sbx_list_start(s, n, err, errsz))
		return -1;
	do {
		json_t *list = list_page(s, E2B_DEPLOYMENT_KEY, s->deployment, token, token,
					 sizeof(token), err, errsz),
		       *it;
		size_t i;

		if (!list)
			return -1;
		if (!json_array_size(list))
			token[0] = '\0';
		json_array_foreach (list, i, it) {
			json_t *meta = json_object_get(it, "metadata");
			const char *sid = json_string_value(json_object_get(it, "sandboxID"));

			sbx_list_add(s, out, max, n,
				     sid && remote_valid_id(sid, SBX_ID_MAX) ? sid : NULL,
				     json_string_value(json_object_get(meta, E2B_META_KEY)),
				     json_string_value(json_object_get(meta, E2B_DEPLOYMENT_KEY)));
		}
		json_decref(list);
	} while (token[0] && *n < max);
	return 0;
}

int e2b_create(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
	       size_t errsz)
{
	const char *name = spec->name;
	static const long ok[] = { 201, 200, 0 };
	struct e2b *e = s->priv;
	const char *tpl = s->remote->image[0] ? s->remote->image : E2B_DEFAULT_TEMPLATE;
	struct http_request rq = {
		.method = "POST", .path = "/sandboxes", .no_retry = 1, .body_max = E2B_ERR_BODY_MAX
	};
	json_t *body;
	int found, ret;

	found = e2b_find(s, name, id, idsz, err, errsz);
	if (found)
		return found < 0 ? -1 : 0;
	/* POST /sandboxes, NewSandbox {templateID (required), timeout (s), autoPause, secure,
	 * allow_internet_access, metadata}, answering 201 Sandbox {sandboxID, domain,
	 * envdAccessToken, ...} (e2b-dev/E2B spec/openapi.yml). Not retried: a create that timed
	 * out may still have happened, and the next attempt finds it by its metadata. */
	body = json_pack("{s:s, s:I, s:b, s:b, s:b, s:{s:s}}", "templateID", tpl, "timeout",
			 (json_int_t)E2B_TTL_S, "autoPause", 1, "secure", 1,
			 "allow_internet_access", spec->share_net ? 1 : 0, "metadata", E2B_META_KEY,
			 name);
	if (body && s->deployment[0])
		json_object_set_new(json_object_get(body, "metadata"), E2B_DEPLOYMENT_KEY,
				    json_string(s->deployment));
	if (!body) {
		snprintf(err, errsz, "%s: request could not be built", s->ops->name);
		return -1;
	}
	rq.body = body;
	ret = remote_create(&e->http, &rq, ok, "sandboxID", id, idsz, err, errsz);
	json_decref(body);
	return ret;
}

/* X is a sandbox id, or the name its metadata carries (remote_destroy). DELETE
 * /sandboxes/{sandboxID}: 204 killed, 404 not found (e2b-dev/E2B spec/openapi.yml). */
int e2b_destroy(struct sbx *s, const char *x, char *err, size_t errsz)
{
	return remote_destroy(s, x, e2b_find, "/sandboxes/", E2B_ERR_BODY_MAX, err, errsz);
}

/* Resume-or-keep sandbox ID and learn its envd address and token. 0, -1 (ERR set). */
static int e2b_connect(struct sbx *s, const char *id, struct envd *ev, char *err, size_t errsz)
{
	static const long ok[] = { 200, 201, 0 };
	struct e2b *e = s->priv;
	char path[64 + SBX_ID_MAX], domain[E2B_DOMAIN_MAX];
	struct http_request rq = { .method = "POST", .path = path, .body_max = E2B_ERR_BODY_MAX };
	struct http_response rs;
	json_t *body = json_pack("{s:I}", "timeout", (json_int_t)E2B_TTL_S), *sb = NULL;
	int ret = -1, n;

	if (!body) {
		snprintf(err, errsz, "%s: request could not be built", s->ops->name);
		return -1;
	}
	/* POST /sandboxes/{sandboxID}/connect, ConnectSandbox {timeout (required)}: "Returns
	 * sandbox details. If the sandbox is paused, it will be resumed. TTL is only extended."
	 * 200 already running / 201 resumed, body Sandbox {domain, envdAccessToken, ...}
	 * (e2b-dev/E2B spec/openapi.yml) */
	snprintf(path, sizeof(path), "/sandboxes/%s/connect", id);
	rq.body = body;
	if (http_expect(&e->http, &rq, ok, &rs, err, errsz))
		goto out;
	sb = http_json(&rs);
	if (!json_is_object(sb)) {
		snprintf(err, errsz, "POST /sandboxes/{id}/connect: answer is not a JSON object");
		goto out;
	}
	if (http_json_str(sb, "domain", domain, sizeof(domain)) || !domain[0])
		strcpy(domain, e->domain);
	if (!domain[0] || strspn(domain, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					 "0123456789-.:[]") != strlen(domain)) {
		snprintf(err, errsz, "%s: no usable sandbox domain", s->ops->name);
		goto out;
	}
	n = snprintf(ev->base, sizeof(ev->base), "%s://%d-%s.%s",
		     loopback_domain(domain) ? "http" : "https", E2B_ENVD_PORT, id, domain);
	if (n < 0 || (size_t)n >= sizeof(ev->base)) {
		snprintf(err, errsz, "%s: envd address is too long", s->ops->name);
		goto out;
	}
	/* envdAccessToken is absent when the sandbox was created with secure false */
	if (http_json_str(sb, "envdAccessToken", ev->token, sizeof(ev->token)))
		ev->token[0] = '\0';
	if (strpbrk(ev->token, "\r\n")) {
		snprintf(err, errsz, "%s: malformed envd access token", s->ops->name);
		goto out;
	}
	ret = 0;
out:
	json_decref(body);
	json_decref(sb);
	http_response_release(&rs);
	return ret;
}

/* The headers of every envd call (SDK: sandbox/index.ts rpcTransport fetch, envd/rpc.ts
 * authenticationHeader): the sandbox routing headers, the access token, and the user as HTTP
 * Basic "name:" (envd: packages/envd/internal/permissions/authenticate.go in e2b-dev/infra
 * reads only the user name). Fills H from index *N; the strings live in the caller's buffers. */
struct envd_headers {
	char id[64 + SBX_ID_MAX];
	char port[64];
	char token[32 + E2B_TOKEN_MAX];
	char timeout[64];
	char keepalive[64];
};

static void envd_headers(const char *id, const struct envd *ev, long timeout_ms,
			 struct envd_headers *b, const char **h, int *n)
{
	snprintf(b->id, sizeof(b->id), "E2b-Sandbox-Id: %s", id);
	snprintf(b->port, sizeof(b->port), "E2b-Sandbox-Port: %d", E2B_ENVD_PORT);
	h[(*n)++] = b->id;
	h[(*n)++] = b->port;
	h[(*n)++] = "Authorization: " E2B_RUN_AS_ROOT;
	h[(*n)++] = "Connect-Protocol-Version: 1";
	if (ev->token[0]) {
		snprintf(b->token, sizeof(b->token), "X-Access-Token: %s", ev->token);
		h[(*n)++] = b->token;
	}
	if (timeout_ms > 0) {
		/* Connect: "connect-timeout-ms"; envd kills the process when it passes
		 * (e2b-dev/infra packages/envd/internal/services/process/start.go
		 * determineTimeoutFromHeader) */
		snprintf(b->timeout, sizeof(b->timeout), "Connect-Timeout-Ms: %ld", timeout_ms);
		snprintf(b->keepalive, sizeof(b->keepalive), "Keepalive-Ping-Interval: %d",
			 E2B_KEEPALIVE_S);
		h[(*n)++] = b->timeout;
		h[(*n)++] = b->keepalive;
	}
	h[*n] = NULL;
}

/* The state of one Start stream: enveloped messages are reassembled here. */
struct stream {
	struct out_tail *out;
	struct strbuf buf; /* at most one incomplete message */
	int bad;	   /* malformed stream: the transfer is aborted */
	char why[160];
	long long pid;
	int started, ended, exited, end_stream;
	long exit_code;
	char status[E2B_STATUS_MAX];
	char error_code[64]; /* EndStreamResponse.error.code */
	char error_msg[256];
};

static void on_message(struct stream *st, const char *msg, size_t len, int end)
{
	json_t *m = json_loadb(msg, len, 0, NULL), *ev, *x;

	if (!json_is_object(m)) {
		st->bad = 1;
		snprintf(st->why, sizeof(st->why), "envd sent a message that is not JSON");
		goto out;
	}
	if (end) {
		/* EndStreamResponse {error?: {code, message}, metadata?} (Connect protocol) */
		json_t *e = json_object_get(m, "error");
		st->end_stream = 1;
		if (json_is_object(e)) {
			http_json_str(e, "code", st->error_code, sizeof(st->error_code));
			if (http_json_str(e, "message", st->error_msg, sizeof(st->error_msg)))
				st->error_msg[0] = '\0';
			if (!st->error_code[0])
				strcpy(st->error_code, "unknown");
		}
		goto out;
	}
	/* StartResponse {event: ProcessEvent {start | data | end | keepalive}} in proto3 JSON:
	 * lowerCamelCase names, zero values omitted (exitCode 0 is absent) */
	ev = json_object_get(m, "event");
	if ((x = json_object_get(ev, "start"))) {
		st->started = 1;
		st->pid = json_integer_value(json_object_get(x, "pid"));
	} else if ((x = json_object_get(ev, "data"))) {
		const char *b = json_string_value(json_object_get(x, "stdout"));
		if (!b)
			b = json_string_value(json_object_get(x, "stderr"));
		if (!b)
			b = json_string_value(json_object_get(x, "pty"));
		if (b) {
			size_t blen = strlen(b), cap = blen / 4 * 3 + 3;
			unsigned char *dec = malloc(cap);
			long n = dec ? base64_decode(b, blen, dec, cap) : -1;
			if (n < 0) {
				st->bad = 1;
				snprintf(st->why, sizeof(st->why), "envd sent malformed output");
			} else {
				out_tail_put(st->out, (const char *)dec, (size_t)n);
			}
			free(dec);
		}
	} else if ((x = json_object_get(ev, "end"))) {
		json_t *code = json_object_get(x, "exitCode");
		st->ended = 1;
		st->exit_code = json_is_integer(code) ? (long)json_integer_value(code) : 0;
		st->exited = json_is_true(json_object_get(x, "exited"));
		if (http_json_str(x, "status", st->status, sizeof(st->status)))
			st->status[0] = '\0';
	}
	/* keepalive: nothing to do */
out:
	json_decref(m);
}

/* http_data_fn: split the response body into Connect envelopes (flags, 4-byte big-endian
 * length, message) and handle each complete one. */
static int on_stream(void *arg, const char *data, size_t n)
{
	struct stream *st = arg;
	size_t off = 0;

	/* what is buffered is at most one incomplete message (<= E2B_FRAME_MAX + 5 bytes) */
	if (strbuf_add(&st->buf, data, n)) {
		st->bad = 1;
		snprintf(st->why, sizeof(st->why), "out of memory reading envd's stream");
		return 1;
	}
	while (st->buf.len - off >= 5) {
		const unsigned char *h = (const unsigned char *)st->buf.buf + off;
		size_t mlen = (size_t)h[1] << 24 | (size_t)h[2] << 16 | (size_t)h[3] << 8 | h[4];
		if (mlen > E2B_FRAME_MAX) {
			st->bad = 1;
			snprintf(st->why, sizeof(st->why),
				 "envd message of %zu bytes is over the cap", mlen);
			return 1;
		}
		if (h[0] & 1) {
			st->bad = 1;
			snprintf(st->why, sizeof(st->why), "envd sent a compressed message");
			return 1;
		}
		if (st->buf.len - off - 5 < mlen)
			break;
		on_message(st, st->buf.buf + off + 5, mlen, h[0] & 2);
		off += 5 + mlen;
		if (st->bad)
			return 1;
	}
	strbuf_remove(&st->buf, 0, off);
	return 0;
}

/* Best effort after a client-side timeout: envd keeps a process whose request went away
 * (start.go: "We do not want the command to be killed if the request context is cancelled"),
 * so kill it: unary POST /process.Process/SendSignal {process: {pid}, signal: SIGNAL_SIGKILL}
 * (process.proto; the SDK's Commands.kill). */
static void e2b_kill(struct sbx *s, const char *id, const struct envd *ev, long long pid)
{
	struct e2b *e = s->priv;
	char url[HTTP_URL_MAX + 64], err[SBX_ERR_MAX];
	struct envd_headers hb;
	struct http_request rq = { .method = "POST",
				   .path = url,
				   .no_auth = 1,
				   .no_retry = 1,
				   .body_max = E2B_ERR_BODY_MAX };
	struct http_response rs;
	int n = 0;

	rq.body = json_pack("{s:{s:I}, s:s}", "process", "pid", (json_int_t)pid, "signal",
			    "SIGNAL_SIGKILL");
	if (!rq.body)
		return;
	snprintf(url, sizeof(url), "%s/process.Process/SendSignal", ev->base);
	envd_headers(id, ev, 0, &hb, rq.headers, &n);
	http_do(&e->http, &rq, &rs, err, sizeof(err));
	http_response_release(&rs);
	json_decref(rq.body);
}

/* 128 + the signal named in an end event's status ("signal: killed"), as a shell reports it;
 * -1 when the status names none we know. */
static int signal_status(const char *status)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "hangup", 1 },	    { "interrupt", 2 },	 { "quit", 3 },
		     { "aborted", 6 },	    { "killed", 9 },	 { "segmentation fault", 11 },
		     { "broken pipe", 13 }, { "terminated", 15 } };

	if (strncmp(status, "signal: ", 8))
		return -1;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!strcmp(status + 8, sigs[i].name))
			return 128 + sigs[i].sig;
	return -1;
}

/* The Start call's body for EX: StartRequest {process: ProcessConfig {cmd, args, envs, cwd},
 * stdin} (process.proto), argv as cmd + args, no shell, stdin false as the SDK sends it
 * (Commands.start), in one Connect envelope: flags 0, big-endian length
 * (connectrpc/connectrpc.com docs/protocol.md, Streaming-Request). A new buffer of *LEN bytes
 * (caller frees), or NULL when it cannot be encoded. */
static char *start_frame(const struct sbx_exec *ex, size_t *len)
{
	json_t *args = json_array(), *envs = json_object(), *req;
	char *text, *frame = NULL;
	size_t tlen = 0;

	req = json_pack("{s:{s:s, s:o, s:o, s:s}, s:b}", "process", "cmd", ex->argv[0], "args",
			args, "envs", envs, "cwd", E2B_WORKDIR, "stdin", 0);
	for (int i = 1; req && ex->argv[i]; i++)
		json_array_append_new(args, json_string(ex->argv[i]));
	for (int i = 0; req && ex->envp && ex->envp[i]; i++) {
		const char *v = ex->envp[i], *eq = strchr(v, '=');
		char k[256];
		if (!eq || eq == v || (size_t)(eq - v) >= sizeof(k))
			continue;
		memcpy(k, v, (size_t)(eq - v));
		k[eq - v] = '\0';
		json_object_set_new(envs, k, json_string(eq + 1));
	}
	text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (text && (tlen = strlen(text)) <= E2B_FRAME_MAX && (frame = malloc(tlen + 5))) {
		frame[0] = 0;
		frame[1] = (char)(tlen >> 24 & 0xff);
		frame[2] = (char)(tlen >> 16 & 0xff);
		frame[3] = (char)(tlen >> 8 & 0xff);
		frame[4] = (char)(tlen & 0xff);
		memcpy(frame + 5, text, tlen);
		*len = tlen + 5;
	}
	free(text);
	return frame;
}

/* One command's Start call: envd's address, the request, its answer and the stream read. */
struct start_call {
	struct envd ev;
	struct envd_headers hb;
	char url[HTTP_URL_MAX + 64];
	struct http_request rq;
	struct http_response rs;
	struct stream st;
	double t0;
	char err[SBX_ERR_MAX * 2];
};

/* RES from the Start call C that http_do ended with RC (the command started at c->t0, limited
 * to EX's time). The process is killed through envd when the call ended before it did (the
 * watch's stop: outside the watch). 0 when the command ran or was killed, -1 when it could not
 * run (RES says why). */
static int start_outcome(struct sbx *s, const char *id, const struct sbx_exec *ex,
			 struct start_call *c, int rc, struct proc_result *res)
{
	struct e2b *e = s->priv;
	struct stream *st = &c->st;
	int stopped = rc && !st->ended && c->rs.stopped;
	int timed_out = rc && !st->ended && !stopped &&
			(c->rs.timed_out || clock_mono_s() - c->t0 >= (double)ex->timeout_s);

	if (stopped || timed_out) {
		/* a stop (the kill goes outside the watch, which said stop already), or our own
		 * limit (envd's should have fired first): make sure it is dead */
		struct http_watch_ctx watch = http_watch_enter(stopped ? NULL : ex->watch);
		if (st->started)
			e2b_kill(s, id, &c->ev, st->pid);
		http_watch_leave(watch);
		proc_result_killed(res, timed_out, stopped);
		return 0;
	}
	if (rc && !st->ended) {
		if (st->bad)
			snprintf(c->err, sizeof(c->err), "POST /process.Process/Start: %s",
				 st->why);
		proc_result_fail(res, c->err);
		return -1;
	}
	if (c->rs.status != 200) {
		http_error(&e->http, &c->rq, &c->rs, c->err, sizeof(c->err));
		proc_result_fail(res, c->err);
		return -1;
	}
	if (!strcmp(st->error_code, "deadline_exceeded")) {
		/* envd's deadline (Connect-Timeout-Ms) passed: it killed the process */
		proc_result_killed(res, 1, 0);
		if (st->ended && st->exit_code > 0)
			res->exit_code = (int)st->exit_code;
		return 0;
	}
	if (!st->ended) {
		if (st->error_code[0])
			snprintf(c->err, sizeof(c->err), "envd: %s%s%s", st->error_code,
				 st->error_msg[0] ? ": " : "", st->error_msg);
		else
			snprintf(c->err, sizeof(c->err),
				 "envd: the stream ended without an end event");
		/* not started at all (e.g. no such executable: invalid_argument) or cut short */
		proc_result_fail(res, c->err);
		return -1;
	}
	res->exit_code = (int)st->exit_code;
	if (!st->exited || st->exit_code < 0) {
		int sig = signal_status(st->status);
		if (sig > 0)
			res->exit_code = sig;
	}
	return 0;
}

int e2b_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	struct e2b *e = s->priv;
	struct start_call *c = calloc(1, sizeof(*c));
	struct out_tail tail;
	char *frame = NULL;
	size_t flen = 0;
	int n = 0, ret = -1, rc;

	/* ex->share_net changes nothing: the sandbox's network was set when it was created */
	memset(res, 0, sizeof(*res));
	out_tail_init(&tail, ex->output_max);
	if (!c || !ex->argv[0] || !remote_valid_id(id, SBX_ID_MAX)) {
		proc_result_fail(res,
				 c ? "e2b: invalid command or sandbox id" : "e2b: out of memory");
		goto out;
	}
	c->st.out = &tail;
	if (e2b_connect(s, id, &c->ev, c->err, sizeof(c->err))) {
		proc_result_fail(res, c->err);
		goto out;
	}
	if (!(frame = start_frame(ex, &flen))) {
		proc_result_fail(res, "e2b: the command could not be encoded");
		goto out;
	}
	c->rq = (struct http_request){ .method = "POST",
				       .path = c->url,
				       .no_auth = 1,
				       .no_retry = 1,
				       .content_type = "application/connect+json",
				       .body_max = E2B_ERR_BODY_MAX,
				       .raw_body = frame,
				       .raw_len = flen,
				       .timeout_s = ex->timeout_s + E2B_RUN_GRACE_S,
				       .on_data = on_stream,
				       .on_data_arg = &c->st };
	snprintf(c->url, sizeof(c->url), "%s/process.Process/Start", c->ev.base);
	envd_headers(id, &c->ev, ex->timeout_s * 1000L, &c->hb, c->rq.headers, &n);
	c->t0 = clock_mono_s();
	rc = http_do(&e->http, &c->rq, &c->rs, c->err, sizeof(c->err));
	ret = start_outcome(s, id, ex, c, rc, res);
out:
	if (ret == 0)
		out_tail_finish(&tail, res);
	out_tail_release(&tail);
	if (c) {
		strbuf_release(&c->st.buf);
		http_response_release(&c->rs);
	}
	free(c);
	free(frame);
	return ret;
}
