/* The `daytona` backend: Daytona's sandbox API and its toolbox, at [daytona] url (the SDK's
 * default is https://app.daytona.io/api: daytonaio/daytona libs/sdk-typescript/src/Daytona.ts;
 * the API serves everything under the global prefix /api), authenticated with
 * "Authorization: Bearer <API key>" (same file: baseOptions.headers; apps/api
 * apps/api/src/sandbox/controllers/sandbox.controller.ts: @ApiBearerAuth). Paths below are in
 * daytonaio/daytona.
 *
 * A sandbox is found again by a label carrying the deterministic name. Commands go through the
 * toolbox's execute call, on Daytona's toolbox proxy with the sandbox's own token and never the
 * API key (toolbox(), below). The call takes one command string and does NOT hand it to a
 * shell: the daemon splits it with its own tokenizer (apps/daemon/pkg/toolbox/process/execute/
 * execute.go parseCommand: ' and " toggle quoting, only ' ' separates, no escapes, empty tokens
 * dropped) and execs the parts. argv is therefore quoted with quote.h (valid for that tokenizer
 * and for a POSIX shell alike), prefixed with `env NAME=VALUE...` since the call has no
 * environment field, and run without any shell.
 *
 * Daytona stops an idle sandbox after its auto-stop interval (15 minutes by default), so every
 * command first makes sure the sandbox is started, starting it again when it was stopped or
 * archived, within a bounded wait. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "backend.h"
#include "http.h"
#include "quote.h"
#include "remote.h"

#define DAYTONA_LABEL "terrarium_sandbox" /* label key holding the deterministic name */
#define DAYTONA_DEPLOYMENT_LABEL "terrarium_deployment" /* label key holding sbx.deployment */
#define DAYTONA_WORKDIR                                                                            \
	"/home/daytona"		 /* the sandbox user's home (libs/sdk-typescript/                  \
				  * src/Process.ts examples: cd /home/daytona) */
#define DAYTONA_START_WAIT_S 180 /* bound on waiting for `started` */
#define DAYTONA_POLL_FIRST_MS 100
#define DAYTONA_POLL_MAX_MS 2000
#define DAYTONA_RUN_GRACE_S 30	       /* HTTP time past the command's own limit */
#define DAYTONA_CMD_MAX (256u * 1024)  /* the command string, quoted */
#define DAYTONA_ARGS_MAX 512	       /* env + assignments + argv */
#define DAYTONA_ERR_BODY_MAX 4096      /* response bytes kept for lifecycle calls */
#define DAYTONA_ANSWER_MAX (32u << 20) /* execute answers read in full, at most */
#define DAYTONA_STATE_MAX 64
#define DAYTONA_TOOLBOX_PORT 2280 /* the daemon's toolbox, inside the sandbox */
/* the sandbox's own token on the toolbox proxy (apps/proxy/pkg/proxy/proxy.go,
 * SANDBOX_AUTH_KEY_HEADER) */
#define DAYTONA_TOKEN_HEADER "X-Daytona-Preview-Token"
#define DAYTONA_TOKEN_LINE_MAX 1024

struct daytona {
	struct http_client http;
	char tb_sandbox[SBX_ID_MAX];		/* whose toolbox is cached below */
	char tb_url[HTTP_URL_MAX];		/* "<toolbox proxy URL>/<sandbox id>" */
	char tb_header[DAYTONA_TOKEN_LINE_MAX]; /* DAYTONA_TOKEN_HEADER ": <token>" */
};
_Static_assert(offsetof(struct daytona, http) == 0,
	       "sbx_http_close frees the state from its client");

int daytona_open(struct sbx *s, char *err, size_t errsz)
{
	/* Authorization: Bearer <apiKey> (libs/sdk-typescript/src/Daytona.ts, constructor) */
	if (!sbx_http_open(s, s->remote, sizeof(struct daytona), "Authorization", "Bearer ", err,
			   errsz))
		return -1;
	return 0;
}

void daytona_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	(void)s;
	(void)id;
	snprintf(out, outsz, "%s", DAYTONA_WORKDIR);
}

/* Sandbox states (apps/api/src/sandbox/enums/sandbox-state.enum.ts) a sandbox never leaves
 * for `started` by itself or by a start call. */
static int dead_state(const char *st)
{
	return !strcmp(st, "error") || !strcmp(st, "build_failed") || !strcmp(st, "destroyed") ||
	       !strcmp(st, "destroying");
}

/* The sandboxes whose label KEY is VALUE: a new reference to their array, or NULL with ERR. */
static json_t *label_list(struct sbx *s, const char *key, const char *value, char *err,
			  size_t errsz)
{
	struct daytona *d = s->priv;
	char q[SBX_ID_MAX * 6 + 128], path[sizeof(q) + 64];
	json_t *labels = json_pack("{s:s}", key, value), *ans = NULL, *list = NULL;
	char *ltext = labels ? json_dumps(labels, JSON_COMPACT) : NULL;

	if (!ltext || http_escape(ltext, q, sizeof(q))) {
		snprintf(err, errsz, "daytona: sandbox name is too long");
		goto out;
	}
	/* GET /sandbox?labels=<JSON-encoded labels> "List all sandboxes", 200 Sandbox[]
	 * (apps/api/src/sandbox/controllers/sandbox.controller.ts listSandboxes; errored and
	 * deleted ones are left out unless includeErroredDeleted). Newer servers answer the same
	 * call with a page {items: Sandbox[], ...} (the SDK's Daytona.list reads
	 * response.data.items), so both shapes are read. */
	snprintf(path, sizeof(path), "/sandbox?labels=%s", q);
	if (!(ans = http_get_json(&d->http, path, err, errsz)))
		goto out;
	list = json_is_array(ans) ? ans : json_object_get(ans, "items");
	if (!json_is_array(list)) {
		snprintf(err, errsz, "GET /sandbox: answer is not a list of sandboxes");
		list = NULL;
		goto out;
	}
	json_incref(list);
out:
	free(ltext);
	json_decref(labels);
	json_decref(ans);
	return list;
}

/* A listed sandbox in a state it never leaves for `started` (remote_tags.gone). */
static int daytona_gone(json_t *item)
{
	const char *state = json_string_value(json_object_get(item, "state"));
	return state && dead_state(state);
}

/* Sandbox {id, labels, state} (apps/api/src/sandbox/dto/sandbox.dto.ts) */
static const struct remote_tags daytona_tags = { "labels", DAYTONA_LABEL, "id", daytona_gone };

/* Find the live sandbox labelled NAME (remote_find_fn). */
static int daytona_find(struct sbx *s, const char *name, char *id, size_t idsz, char *err,
			size_t errsz)
{
	return remote_find_in(s, label_list(s, DAYTONA_LABEL, name, err, errsz), &daytona_tags,
			      name, id, idsz, err, errsz);
}

/* This deployment's sandboxes (label DAYTONA_DEPLOYMENT_LABEL) not being or already destroyed,
 * up to MAX (one list call: the server answers every match). */
int daytona_list(struct sbx *s, struct sbx_listed *out, int max, int *n, char *err, size_t errsz)
{
	json_t *list, *it;
	size_t i;

	if (sbx_list_start(s, n, err, errsz))
		return -1;
	if (!(list = label_list(s, DAYTONA_DEPLOYMENT_LABEL, s->deployment, err, errsz)))
		return -1;
	json_array_foreach (list, i, it) {
		json_t *labels = json_object_get(it, "labels");
		const char *state = json_string_value(json_object_get(it, "state"));
		const char *sid = json_string_value(json_object_get(it, "id"));

		if (state && (!strcmp(state, "destroyed") || !strcmp(state, "destroying")))
			continue;
		sbx_list_add(s, out, max, n, sid && remote_valid_id(sid, SBX_ID_MAX) ? sid : NULL,
			     json_string_value(json_object_get(labels, DAYTONA_LABEL)),
			     json_string_value(json_object_get(labels, DAYTONA_DEPLOYMENT_LABEL)));
	}
	json_decref(list);
	return 0;
}

/* GET /sandbox/{id} into STATE. 0, 1 when the sandbox does not exist, -1 error. */
static int daytona_state(struct sbx *s, const char *id, char *state, size_t statesz, char *reason,
			 size_t reasonsz, char *err, size_t errsz)
{
	static const long ok[] = { 200, 404, 0 };
	struct daytona *d = s->priv;
	char path[64 + SBX_ID_MAX];
	struct http_request rq = { .method = "GET",
				   .path = path,
				   .body_max = DAYTONA_ERR_BODY_MAX };
	struct http_response rs;
	json_t *sb = NULL;
	const char *st, *why;
	int ret = -1;

	/* GET /sandbox/{sandboxId}: 200 Sandbox {id, state, errorReason, ...}; 404 when missing
	 * (apps/api/src/sandbox/controllers/sandbox.controller.ts getSandbox, guarded by
	 * SandboxAccessGuard; apps/api/src/sandbox/dto/sandbox.dto.ts) */
	snprintf(path, sizeof(path), "/sandbox/%s", id);
	if (http_expect(&d->http, &rq, ok, &rs, err, errsz))
		goto out;
	if (rs.status == 404) {
		ret = 1;
		goto out;
	}
	sb = http_json(&rs);
	st = json_string_value(json_object_get(sb, "state"));
	why = json_string_value(json_object_get(sb, "errorReason"));
	if (!st || strlen(st) >= statesz) {
		snprintf(err, errsz, "GET /sandbox/{id}: answer has no state");
		goto out;
	}
	strcpy(state, st);
	snprintf(reason, reasonsz, "%s", why ? why : "");
	ret = 0;
out:
	json_decref(sb);
	http_response_release(&rs);
	return ret;
}

/* POST /sandbox/{id}/start: 200 Sandbox, waiting up to 30 s for `started` itself
 * (apps/api/src/sandbox/controllers/sandbox.controller.ts startSandbox). */
static int daytona_start(struct sbx *s, const char *id, char *err, size_t errsz)
{
	static const long ok[] = { 200, 201, 204, 0 };
	struct daytona *d = s->priv;
	char path[64 + SBX_ID_MAX];

	snprintf(path, sizeof(path), "/sandbox/%s/start", id);
	return http_call(&d->http, "POST", path, ok, DAYTONA_ERR_BODY_MAX, err, errsz) ? 0 : -1;
}

/* Wait, at most DAYTONA_START_WAIT_S, until sandbox ID is `started`, starting it when it is
 * stopped or archived. 0, or -1 with ERR set. */
static int daytona_wait_started(struct sbx *s, const char *id, char *err, size_t errsz)
{
	char state[DAYTONA_STATE_MAX], reason[256];
	double deadline = clock_mono_s() + DAYTONA_START_WAIT_S;
	long delay = DAYTONA_POLL_FIRST_MS;
	int started = 0;

	for (;;) {
		int rc = daytona_state(s, id, state, sizeof(state), reason, sizeof(reason), err,
				       errsz);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			snprintf(err, errsz, "daytona: sandbox %s does not exist", id);
			return -1;
		}
		if (!strcmp(state, "started"))
			return 0;
		if (dead_state(state)) {
			snprintf(err, errsz, "daytona: sandbox %s is %s%s%s", id, state,
				 reason[0] ? ": " : "", reason);
			return -1;
		}
		if ((!strcmp(state, "stopped") || !strcmp(state, "archived")) && !started) {
			if (daytona_start(s, id, err, errsz))
				return -1;
			started = 1;
			continue;
		}
		if (clock_mono_s() + (double)delay / 1000.0 > deadline) {
			snprintf(err, errsz, "daytona: sandbox %s not started after %ds (state %s)",
				 id, DAYTONA_START_WAIT_S, state);
			return -1;
		}
		clock_sleep_ms(delay);
		delay = delay * 2 > DAYTONA_POLL_MAX_MS ? DAYTONA_POLL_MAX_MS : delay * 2;
	}
}

int daytona_create(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
		   size_t errsz)
{
	const char *name = spec->name;
	static const long ok[] = { 200, 201, 0 };
	struct daytona *d = s->priv;
	struct http_request rq = { .method = "POST",
				   .path = "/sandbox",
				   .no_retry = 1,
				   .body_max = DAYTONA_ERR_BODY_MAX };
	json_t *body;
	int found, ret;

	found = daytona_find(s, name, id, idsz, err, errsz);
	if (found < 0)
		return -1;
	if (found)
		return daytona_wait_started(s, id, err, errsz);
	/* POST /sandbox, CreateSandbox {snapshot?, labels, ...}, 200 Sandbox {id, state}
	 * (apps/api/src/sandbox/dto/create-sandbox.dto.ts; apps/api/src/sandbox/controllers/
	 * sandbox.controller.ts createSandbox:
	 * @HttpCode(200)); networkBlockAll when the policy is not unrestricted (CreateSandbox
	 * field the SDK sends: libs/sdk-typescript/src/Daytona.ts). Not retried: the next attempt
	 * finds a sandbox whose create timed out by its label. */
	body = json_pack("{s:{s:s}}", "labels", DAYTONA_LABEL, name);
	if (body && s->deployment[0])
		json_object_set_new(json_object_get(body, "labels"), DAYTONA_DEPLOYMENT_LABEL,
				    json_string(s->deployment));
	if (body && s->remote->image[0])
		json_object_set_new(body, "snapshot", json_string(s->remote->image));
	if (body && !spec->share_net)
		json_object_set_new(body, "networkBlockAll", json_true());
	if (!body) {
		snprintf(err, errsz, "daytona: request could not be built");
		return -1;
	}
	rq.body = body;
	ret = remote_create(&d->http, &rq, ok, "id", id, idsz, err, errsz);
	json_decref(body);
	return ret ? -1 : daytona_wait_started(s, id, err, errsz);
}

/* X is a sandbox id, or the name its label carries (remote_destroy). DELETE /sandbox/{sandboxId}:
 * 200 "Sandbox has been deleted"; 404 from the access guard when it does not exist
 * (apps/api/src/sandbox/controllers/sandbox.controller.ts deleteSandbox). */
int daytona_destroy(struct sbx *s, const char *x, char *err, size_t errsz)
{
	return remote_destroy(s, x, daytona_find, "/sandbox/", DAYTONA_ERR_BODY_MAX, err, errsz);
}

/* The command string: `env NAME=VALUE... argv...`, every element quoted (quote.h). New string,
 * caller frees; NULL with WHY set when it cannot be expressed. */
static char *command_line(char *const argv[], char *const envp[], char *why, size_t whysz)
{
	const char *all[DAYTONA_ARGS_MAX + 1];
	char *out;
	int n = 0;

	all[n++] = "env";
	for (int i = 0; envp && envp[i]; i++) {
		if (!strchr(envp[i], '=') || envp[i][0] == '=')
			continue;
		if (n >= DAYTONA_ARGS_MAX) {
			snprintf(why, whysz, "daytona: too many arguments");
			return NULL;
		}
		all[n++] = envp[i];
	}
	/* env would read a first word holding '=' as one more assignment */
	if (!argv[0] || !argv[0][0] || strchr(argv[0], '=') || argv[0][0] == '-') {
		snprintf(why, whysz, "daytona: command name cannot be passed through env");
		return NULL;
	}
	for (int i = 0; argv[i]; i++) {
		/* the daemon's tokenizer drops empty tokens: an empty argument cannot be sent */
		if (!argv[i][0]) {
			snprintf(why, whysz,
				 "daytona: argument %d is empty, which the toolbox "
				 "cannot pass",
				 i);
			return NULL;
		}
		if (n >= DAYTONA_ARGS_MAX) {
			snprintf(why, whysz, "daytona: too many arguments");
			return NULL;
		}
		all[n++] = argv[i];
	}
	all[n] = NULL;
	out = malloc(DAYTONA_CMD_MAX);
	if (!out || sbx_quote_argv((char *const *)all, out, DAYTONA_CMD_MAX)) {
		free(out);
		snprintf(why, whysz, "daytona: command line is longer than %u bytes",
			 DAYTONA_CMD_MAX);
		return NULL;
	}
	return out;
}

/* Where sandbox ID's toolbox answers, and how: the toolbox proxy's URL for it (GET
 * /sandbox/{id}/toolbox-proxy-url -> ToolboxProxyUrl {url}, apps/api/src/sandbox/controllers/
 * sandbox.controller.ts getToolboxProxyUrl; the SDKs call "<url>/<sandboxId>/<toolbox path>")
 * and the sandbox's own token (GET /sandbox/{id}/ports/2280/preview-url -> PortPreviewUrl {url,
 * token}, getPortPreviewUrl), which the proxy accepts in DAYTONA_TOKEN_HEADER and removes
 * (apps/proxy/pkg/proxy/auth.go Authenticate). Toolbox calls carry that token and never the API
 * key: the API's own toolbox route (/toolbox/{id}/toolbox/..., toolbox.deprecated.controller.ts)
 * passes every request header, Authorization included, through the runner to the daemon inside
 * the sandbox (docs/sandbox.md), and proxies before daytonaio/daytona#4419 did the same with a
 * bearer. Cached for the last sandbox used. 0, or -1 with ERR set. */
static int toolbox(struct sbx *s, const char *id, char *err, size_t errsz)
{
	struct daytona *d = s->priv;
	char path[96 + SBX_ID_MAX], base[HTTP_URL_MAX];
	json_t *ans;
	const char *v;
	size_t n;
	int ret = -1;

	if (!strcmp(d->tb_sandbox, id))
		return 0;
	d->tb_sandbox[0] = '\0';
	snprintf(path, sizeof(path), "/sandbox/%s/toolbox-proxy-url", id);
	if (!(ans = http_get_json(&d->http, path, err, errsz))) {
		n = strlen(err);
		snprintf(err + n, errsz - n,
			 " (commands go through Daytona's toolbox proxy only: the API's toolbox "
			 "route would pass the API key into the sandbox, docs/sandbox.md)");
		return -1;
	}
	v = json_string_value(json_object_get(ans, "url"));
	if (!v || (strncmp(v, "http://", 7) && strncmp(v, "https://", 8)) ||
	    strlen(v) >= sizeof(base)) {
		snprintf(err, errsz, "daytona: GET %s: no http(s) url in the answer", path);
		goto out;
	}
	strcpy(base, v);
	for (n = strlen(base); n && base[n - 1] == '/'; n--)
		base[n - 1] = '\0';
	if (snprintf(d->tb_url, sizeof(d->tb_url), "%s/%s", base, id) >= (int)sizeof(d->tb_url)) {
		snprintf(err, errsz, "daytona: the toolbox URL is too long");
		goto out;
	}
	json_decref(ans);
	snprintf(path, sizeof(path), "/sandbox/%s/ports/%d/preview-url", id, DAYTONA_TOOLBOX_PORT);
	if (!(ans = http_get_json(&d->http, path, err, errsz)))
		return -1;
	v = json_string_value(json_object_get(ans, "token"));
	if (!v || !*v || strpbrk(v, "\r\n") ||
	    snprintf(d->tb_header, sizeof(d->tb_header), "%s: %s", DAYTONA_TOKEN_HEADER, v) >=
		    (int)sizeof(d->tb_header)) {
		snprintf(err, errsz, "daytona: GET %s: no usable token in the answer", path);
		goto out;
	}
	snprintf(d->tb_sandbox, sizeof(d->tb_sandbox), "%s", id);
	ret = 0;
out:
	json_decref(ans);
	return ret;
}

int daytona_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	long timeout_s = ex->timeout_s;
	struct daytona *d = s->priv;
	char err[SBX_ERR_MAX * 2], url[HTTP_URL_MAX + 32];
	struct http_request rq = { .method = "POST", .path = url, .no_retry = 1, .no_auth = 1 };
	struct http_response rs = { 0 };
	struct out_tail tail;
	json_t *body = NULL, *ans = NULL, *code;
	const char *result;
	char *cmd = NULL;
	double t0;
	int ret = -1;

	/* ex->share_net changes nothing: the sandbox's network was set when it was created */
	memset(res, 0, sizeof(*res));
	out_tail_init(&tail, ex->output_max);
	if (!remote_valid_id(id, SBX_ID_MAX)) {
		proc_result_fail(res, "daytona: invalid sandbox id");
		return -1;
	}
	cmd = command_line(ex->argv, ex->envp, err, sizeof(err));
	if (!cmd) {
		proc_result_fail(res, err);
		return -1;
	}
	if (daytona_wait_started(s, id, err, sizeof(err)) || toolbox(s, id, err, sizeof(err))) {
		proc_result_fail(res, err);
		goto out;
	}
	/* POST <toolbox>/process/execute, ExecuteRequest {command, cwd?, timeout? (seconds; 10
	 * when absent)} -> 200 ExecuteResponse {exitCode, result (stdout and stderr together)}
	 * (the daemon's route, apps/daemon/pkg/toolbox/process/execute/execute.go; the request
	 * and answer as apps/api/src/sandbox/dto/toolbox.deprecated.dto.ts states them), with the
	 * sandbox's token only (toolbox()). Daemons before the rename answered {code, result}
	 * (apps/daemon/pkg/toolbox/process/types.go); both are read. On its timeout the daemon
	 * kills the process group and answers 408 (apps/daemon/pkg/toolbox/process/execute/
	 * execute.go). Never retried: a command must not run twice. */
	body = json_pack("{s:s, s:s, s:I}", "command", cmd, "cwd", DAYTONA_WORKDIR, "timeout",
			 (json_int_t)timeout_s);
	if (!body) {
		proc_result_fail(res, "daytona: the command could not be encoded");
		goto out;
	}
	snprintf(url, sizeof(url), "%s/process/execute", d->tb_url);
	rq.headers[0] = d->tb_header;
	rq.body = body;
	rq.timeout_s = timeout_s + DAYTONA_RUN_GRACE_S;
	/* the answer holds the whole output (the daemon keeps all of it): read it in full up to a
	 * cap, then keep the tail like any other driver */
	rq.body_max = ex->output_max * 6 + 65536 > DAYTONA_ANSWER_MAX ? ex->output_max * 6 + 65536
								      : DAYTONA_ANSWER_MAX;
	t0 = clock_mono_s();
	if (http_do(&d->http, &rq, &rs, err, sizeof(err))) {
		if (rs.stopped) {
			/* the call ends; the daemon's execute has no kill: its timeout ends it */
			proc_result_killed(res, 0, 1);
			ret = 0;
		} else if (rs.timed_out || clock_mono_s() - t0 >= (double)timeout_s) {
			proc_result_killed(res, 1, 0);
			ret = 0;
		} else {
			d->tb_sandbox[0] = '\0'; /* ask where the toolbox is again next time */
			proc_result_fail(res, err);
		}
		goto out;
	}
	if (rs.status == 408) {
		proc_result_killed(res, 1, 0);
		ret = 0;
		goto out;
	}
	if (rs.status != 200) {
		d->tb_sandbox[0] = '\0';
		http_error(&d->http, &rq, &rs, err, sizeof(err));
		proc_result_fail(res, err);
		goto out;
	}
	ans = http_json(&rs);
	code = json_object_get(ans, "exitCode");
	if (!json_is_integer(code))
		code = json_object_get(ans, "code");
	result = json_string_value(json_object_get(ans, "result"));
	if (!json_is_integer(code)) {
		proc_result_fail(res, rs.truncated ? "daytona: execute answer over the size cap "
						     "(the command's output is too large)"
						   : "daytona: execute answer has no exit code");
		goto out;
	}
	if (json_integer_value(code) == -1) {
		/* the daemon's answer when the command could not be started (result says why) */
		snprintf(err, sizeof(err), "daytona: the command could not be started: %.300s",
			 result ? result : "");
		proc_result_fail(res, err);
		goto out;
	}
	if (result)
		out_tail_put(&tail, result, json_string_length(json_object_get(ans, "result")));
	res->exit_code = (int)json_integer_value(code);
	ret = 0;
out:
	if (ret == 0)
		out_tail_finish(&tail, res);
	out_tail_release(&tail);
	json_decref(body);
	json_decref(ans);
	free(cmd);
	http_response_release(&rs);
	return ret;
}
