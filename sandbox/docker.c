/* The `docker` backend: one container per sandbox through the Docker Engine API on its unix
 * socket. The container is named after the session (create-or-attach by name), labelled as
 * terrarium's, has no network unless the policy is unrestricted (sbx_spec.share_net), and
 * runs `tail -f /dev/null` so commands can be exec'd into it. No egress allowlist: limited
 * networking is refused at admission.
 *
 * Confinement (docs/docker.md): never privileged; every capability dropped but the few apt
 * and dpkg need as the container's root (DOCKER_CAP_ADD), no-new-privileges, pids and memory
 * limits; commands run as DOCKER_SANDBOX_USER unless the run asks for root (sbx_exec.as_root:
 * apt).
 * On the default bridge a sandbox reaches the outside but not services bound to the host's
 * loopback. [sandbox] ca_bundle is bind-mounted read-only at DOCKER_CA_PATH and named by the
 * usual variables (DOCKER_CA_VARS). Package cache entries are images DOCKER_CACHE_REPO:KEY
 * committed from a provisioned container.
 *
 * Protocol source: moby/moby api/swagger.yaml (operations ContainerCreate, ContainerInspect,
 * ContainerStart, ContainerExec, ExecStart, ExecInspect, ContainerDelete, ImageCreate, and the
 * "Stream format" section of ContainerAttach for the multiplexed exec output). Paths carry no
 * version prefix, so the daemon's own API version answers; put one in [docker] url
 * ("http://localhost/v1.43") to pin it. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../common/clock.h"
#include "../common/crypto.h"
#include "backend.h"
#include "http.h"
#include "remote.h"

#define DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"
#define DOCKER_NAME_PREFIX "terrarium-"
#define DOCKER_LABEL_SESSION "terrarium.session"
#define DOCKER_LABEL_MANAGED "terrarium.managed"
#define DOCKER_LABEL_DEPLOYMENT "terrarium.deployment" /* sbx.deployment: whose sandbox */
#define DOCKER_WORKDIR SBX_WORKSPACE
#define DOCKER_NAME_MAX 200
#define DOCKER_EXEC_SLACK_S 30	  /* HTTP time beyond the command's own limit */
#define DOCKER_PULL_TIMEOUT_S 900 /* pulling the image on first use */
#define DOCKER_PULL_BODY_MAX (1u << 20)
#define DOCKER_INSPECT_POLLS 20 /* exec inspect while the stream's end races the exit */
#define DOCKER_INSPECT_POLL_MS 100
#define DOCKER_SANDBOX_USER "1000:1000" /* the default image's `sandbox` user */
#define DOCKER_ROOT_USER "0:0"
#define DOCKER_PIDS_LIMIT 1024
#define DOCKER_MEMORY_LIMIT (4LL << 30) /* bytes; swap is not added to it */
#define DOCKER_CA_PATH "/etc/terrarium/ca-bundle.crt"
#define DOCKER_CACHE_REPO "terrarium-cache"
#define DOCKER_LABEL_CACHE "terrarium.cache"
#define DOCKER_COMMIT_TIMEOUT_S 600
#define DOCKER_ENV_MAX 64
/* Every command's exec carries DOCKER_MARK_VAR=<random hex> in its environment, so that a
 * second exec (the Engine has no exec kill) can find and kill what the first started when its
 * time limit passes or the watch says stop: every process of the user whose environment holds
 * the mark, a few passes to catch what forked meanwhile. A process that drops the variable
 * escapes it and lives until the container goes. */
#define DOCKER_MARK_VAR "TERRARIUM_EXEC"
#define DOCKER_MARK_BYTES 16
#define DOCKER_KILL_TIMEOUT_S 30
#define DOCKER_KILL_SCRIPT                                                                         \
	"for i in 1 2 3; do for p in /proc/[0-9]*; do tr '\\0' '\\n' <\"$p/environ\" 2>/dev/null " \
	"| "                                                                                       \
	"grep -qx \"$1\" && kill -9 \"${p#/proc/}\" 2>/dev/null; done; done; exit 0"
/* The container's main process: hands /workspace to the sandbox user (an image of one's own may
 * have it root's, as WorkingDir makes it; the default image and cache images have it so already:
 * then nothing changes), then idles so that commands can be exec'd. Done by pid 1 as the
 * container starts, not by an exec of its own (three Engine calls and a process per create). */
#define DOCKER_ENTRYPOINT                                                                          \
	"chown " DOCKER_SANDBOX_USER " " DOCKER_WORKDIR " 2>/dev/null; exec tail -f /dev/null"

/* What the container's root keeps: apt downloads as _apt (SETUID/SETGID), dpkg writes into
 * directories of other owners and sets owners and modes (CHOWN, DAC_OVERRIDE, FOWNER, FSETID).
 * No NET_RAW, MKNOD, SYS_*, SETFCAP, ... The unprivileged user has none of them. */
static const char *const docker_cap_add[] = { "CHOWN",	"DAC_OVERRIDE", "FOWNER", "FSETID",
					      "SETUID", "SETGID",	NULL };
/* The variables that name the CA bundle, for the tools that read one each. */
static const char *const docker_ca_vars[] = { "SSL_CERT_FILE",	   "NODE_EXTRA_CA_CERTS",
					      "PIP_CERT",	   "REQUESTS_CA_BUNDLE",
					      "CARGO_HTTP_CAINFO", "GIT_SSL_CAINFO",
					      "CURL_CA_BUNDLE",	   NULL };

struct docker {
	struct http_client http;
};
_Static_assert(offsetof(struct docker, http) == 0,
	       "sbx_http_close frees the state from its client");

static struct docker *docker_of(struct sbx *s)
{
	return s->priv;
}

int docker_open(struct sbx *s, char *err, size_t errsz)
{
	struct remote_conf rc = *s->remote;

	if (!rc.image[0]) {
		snprintf(err, errsz, "docker: [docker] image is not set");
		return -1;
	}
	if (!rc.socket[0] && !rc.url[0])
		snprintf(rc.socket, sizeof(rc.socket), "%s", DOCKER_DEFAULT_SOCKET);
	/* the Engine's socket has no credential; an api_key_file would be ignored */
	if (!sbx_http_open(s, &rc, sizeof(struct docker), NULL, NULL, err, errsz))
		return -1;
	if (rc.socket[0])
		snprintf(s->control_socket, sizeof(s->control_socket), "%s", rc.socket);
	return 0;
}

/* The container name of sandbox NAME; -1 when NAME cannot be one ([a-zA-Z0-9][a-zA-Z0-9_.-]*). */
static int container_name(const char *name, char *out, size_t outsz)
{
	int n;
	if (!*name ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
		    strlen(name))
		return -1;
	n = snprintf(out, outsz, "%s%s", DOCKER_NAME_PREFIX, name);
	return n < 0 || (size_t)n >= outsz || n > DOCKER_NAME_MAX ? -1 : 0;
}

/* A container id or name as a path segment. */
static int path_ref(const char *ref, char *out, size_t outsz)
{
	if (!*ref || http_escape(ref, out, outsz))
		return -1;
	return 0;
}

/* PREFIX + REF (a container or image id or name, as path_ref escapes it) + SUFFIX into PATH: 0,
 * or -1 with ERR set when REF is empty or the path does not fit. */
static int ref_path(const char *prefix, const char *ref, const char *suffix, char *path,
		    size_t pathsz, char *err, size_t errsz)
{
	char eref[CONFIG_STR_MAX * 3];
	int n;

	if (path_ref(ref, eref, sizeof(eref)) ||
	    (n = snprintf(path, pathsz, "%s%s%s", prefix, eref, suffix)) < 0 ||
	    (size_t)n >= pathsz) {
		snprintf(err, errsz, "docker: invalid or too long reference");
		return -1;
	}
	return 0;
}

/* GET /containers/{name}/json (ContainerInspect): its Id when it carries our label for NAME,
 * and the image it was created from (Config.Image) into IMAGE when IMAGE is not NULL. */
static int inspect_owned(struct docker *d, const char *cname, const char *name, char *id,
			 size_t idsz, char *image, size_t imagesz, char *err, size_t errsz)
{
	char path[HTTP_URL_MAX];
	json_t *root;
	const char *cid, *label;
	int ret = -1;

	snprintf(path, sizeof(path), "/containers/%s/json", cname);
	if (!(root = http_get_json(&d->http, path, err, errsz)))
		return -1;
	cid = json_string_value(json_object_get(root, "Id"));
	label = json_string_value(json_object_get(
		json_object_get(json_object_get(root, "Config"), "Labels"), DOCKER_LABEL_SESSION));
	if (!cid || !*cid || strlen(cid) >= idsz) {
		snprintf(err, errsz, "docker: inspect %s: answer has no usable Id", cname);
		goto out;
	}
	if (!label || strcmp(label, name)) {
		snprintf(err, errsz,
			 "docker: container %s exists but is not terrarium's sandbox %s", cname,
			 name);
		goto out;
	}
	strcpy(id, cid);
	if (image) {
		const char *from = json_string_value(
			json_object_get(json_object_get(root, "Config"), "Image"));
		snprintf(image, imagesz, "%s", from ? from : "");
	}
	ret = 0;
out:
	json_decref(root);
	return ret;
}

/* POST /images/create?fromImage=IMAGE (ImageCreate): 200 with a JSON progress stream whose
 * failure shows as an {"error": ...} object inside it. */
static int pull_image(struct docker *d, const char *image, char *err, size_t errsz)
{
	static const long ok[] = { 200, 0 };
	char path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	int ret = -1;

	if (ref_path("/images/create?fromImage=", image, "", path, sizeof(path), err, errsz))
		return -1;
	rq = http_req("POST", path, NULL);
	rq.timeout_s = DOCKER_PULL_TIMEOUT_S;
	rq.body_max = DOCKER_PULL_BODY_MAX;
	if (!http_expect(&d->http, &rq, ok, &rs, err, errsz)) {
		if (strstr(rs.body, "\"error\""))
			http_error(&d->http, &rq, &rs, err, errsz);
		else
			ret = 0;
	}
	http_response_release(&rs);
	return ret;
}

static int is_ca_var(const char *entry)
{
	for (int i = 0; docker_ca_vars[i]; i++) {
		size_t n = strlen(docker_ca_vars[i]);
		if (!strncmp(entry, docker_ca_vars[i], n) && entry[n] == '=')
			return 1;
	}
	return 0;
}

/* The environment of the container: the caller's (SPEC->env), then the CA variables when a
 * bundle is mounted (they win over the caller's, which name host paths), and pip's consent to
 * install beside Debian's packages (PEP 668) in this throwaway system. */
static json_t *container_env(struct sbx *s, const struct sbx_spec *spec)
{
	const char *ca = s->cfg->sandbox_ca_bundle;
	json_t *env = json_array();
	char entry[CONFIG_STR_MAX];

	for (int i = 0; spec->env && spec->env[i] && i < DOCKER_ENV_MAX; i++)
		if (!*ca || !is_ca_var(spec->env[i]))
			json_array_append_new(env, json_string(spec->env[i]));
	for (int i = 0; *ca && docker_ca_vars[i]; i++) {
		snprintf(entry, sizeof(entry), "%s=%s", docker_ca_vars[i], DOCKER_CA_PATH);
		json_array_append_new(env, json_string(entry));
	}
	json_array_append_new(env, json_string("PIP_BREAK_SYSTEM_PACKAGES=1"));
	return env;
}

/* ContainerCreate's body for sandbox SPEC->name. New reference, or NULL. */
static json_t *container_spec(struct sbx *s, const struct sbx_spec *spec)
{
	const char *ca = s->cfg->sandbox_ca_bundle;
	json_t *caps = json_array(), *binds = json_array(), *host, *labels;
	char bind[CONFIG_STR_MAX * 2];

	for (int i = 0; docker_cap_add[i]; i++)
		json_array_append_new(caps, json_string(docker_cap_add[i]));
	if (*ca) {
		snprintf(bind, sizeof(bind), "%s:%s:ro", ca, DOCKER_CA_PATH);
		json_array_append_new(binds, json_string(bind));
	}
	host = json_pack("{s:s, s:b, s:b, s:[s], s:o, s:[s], s:I, s:I, s:I, s:o}", "NetworkMode",
			 spec->share_net ? "bridge" : "none", "Init", 1, "Privileged", 0, "CapDrop",
			 "ALL", "CapAdd", caps, "SecurityOpt", "no-new-privileges", "PidsLimit",
			 (json_int_t)DOCKER_PIDS_LIMIT, "Memory", (json_int_t)DOCKER_MEMORY_LIMIT,
			 "MemorySwap", (json_int_t)DOCKER_MEMORY_LIMIT, "Binds", binds);
	labels = json_pack("{s:s, s:s}", DOCKER_LABEL_SESSION, spec->name, DOCKER_LABEL_MANAGED,
			   "true");
	if (!host || !labels) {
		json_decref(host);
		json_decref(labels);
		return NULL;
	}
	if (s->deployment[0])
		json_object_set_new(labels, DOCKER_LABEL_DEPLOYMENT, json_string(s->deployment));
	/* no User: the Engine gives an exec as root the capabilities above only when the
	 * container's user is root; commands choose theirs (exec_create). pid 1 (docker-init, then
	 * DOCKER_ENTRYPOINT) runs as that capability-poor root and does nothing else. */
	return json_pack("{s:s, s:[s,s,s], s:s, s:o, s:b, s:b, s:o, s:o}", "Image",
			 spec->from ? spec->from : s->remote->image, "Entrypoint", "sh", "-c",
			 DOCKER_ENTRYPOINT, "WorkingDir", DOCKER_WORKDIR, "Env",
			 container_env(s, spec), "Tty", 0, "OpenStdin", 0, "Labels", labels,
			 "HostConfig", host);
}

/* POST /containers/create?name=CNAME (ContainerCreate) of SPEC: 201 {Id}, 409 when the name is
 * taken, 404 when the image is missing. Returns the status, 0 on a transport failure. */
static long create_container(struct sbx *s, const struct sbx_spec *spec, const char *cname,
			     char *id, size_t idsz, char *err, size_t errsz)
{
	static const long ok[] = { 201, 409, 0 };
	struct docker *d = docker_of(s);
	char path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	json_t *body;
	long status;

	body = container_spec(s, spec);
	if (!body) {
		snprintf(err, errsz, "docker: request could not be built");
		return 0;
	}
	snprintf(path, sizeof(path), "/containers/create?name=%s", cname);
	rq = http_req("POST", path, body);
	http_expect(&d->http, &rq, ok, &rs, err, errsz); /* ERR set unless 201 or 409 */
	status = rs.status;
	if (status == 201 && http_answer_str(&d->http, &rq, &rs, "Id", id, idsz, err, errsz))
		status = 0;
	json_decref(body);
	http_response_release(&rs);
	return status;
}

/* METHOD PREFIX + REF + SUFFIX (ref_path), without a body: the answer's status when it is one
 * of OK (0-terminated), else 0 with ERR set (the Engine's message, or why the call failed). */
static long call_ref(struct docker *d, const char *method, const char *prefix, const char *ref,
		     const char *suffix, const long *ok, char *err, size_t errsz)
{
	char path[HTTP_URL_MAX];

	if (ref_path(prefix, ref, suffix, path, sizeof(path), err, errsz))
		return 0;
	return http_call(&d->http, method, path, ok, 0, err, errsz);
}

/* POST /containers/{id}/start (ContainerStart): 204 started, 304 already running. */
static int start_container(struct docker *d, const char *id, char *err, size_t errsz)
{
	static const long ok[] = { 204, 304, 0 };
	return call_ref(d, "POST", "/containers/", id, "/start", ok, err, errsz) ? 0 : -1;
}

static int delete_container(struct docker *d, const char *ref, char *err, size_t errsz);

int docker_create(struct sbx *s, const struct sbx_spec *spec, char *id, size_t idsz, char *err,
		  size_t errsz)
{
	struct docker *d = docker_of(s);
	char cname[CONFIG_STR_MAX], image[CONFIG_STR_MAX] = "";
	long status;

	if (container_name(spec->name, cname, sizeof(cname))) {
		snprintf(err, errsz, "docker: invalid sandbox name");
		return -1;
	}
	status = create_container(s, spec, cname, id, idsz, err, errsz);
	if (status == 404) {
		/* the image is not on this host yet */
		if (pull_image(d, s->remote->image, err, errsz))
			return -1;
		status = create_container(s, spec, cname, id, idsz, err, errsz);
	}
	if (status == 409 &&
	    inspect_owned(d, cname, spec->name, id, idsz, image, sizeof(image), err, errsz))
		return -1;
	if (status == 409 && spec->from && strcmp(image, spec->from)) {
		/* left by an attempt that recorded nothing, from another image than the cache
		 * entry this one starts from: replaced, so what the caller skips is there */
		if (delete_container(d, id, err, errsz) < 0)
			return -1;
		status = create_container(s, spec, cname, id, idsz, err, errsz);
		if (status != 201)
			return -1;
	}
	if (status != 201 && status != 409)
		return -1;
	if (spec->defer_start)
		return 0; /* docker_start, once the caller has bound the sandbox */
	return start_container(d, id, err, errsz);
}

int docker_start(struct sbx *s, const char *id, char *err, size_t errsz)
{
	return start_container(docker_of(s), id, err, errsz);
}

/* ---- exec ---- */

/* The multiplexed stream (ContainerAttach, "Stream format"): frames of an 8-byte header
 * {STREAM_TYPE, 0, 0, 0, SIZE1..SIZE4 (big-endian uint32)} and SIZE payload bytes; type 1 is
 * stdout, 2 stderr (0, stdin, is written on stdout). */
struct demux {
	struct out_tail *out;
	unsigned char header[8];
	size_t hlen;	    /* header bytes collected */
	unsigned long left; /* payload bytes still to come in this frame */
	int bad;
};

static int demux_data(void *arg, const char *data, size_t n)
{
	struct demux *m = arg;
	size_t i = 0;

	while (i < n) {
		if (m->left) {
			size_t k = n - i < m->left ? n - i : m->left;
			out_tail_put(m->out, data + i, k);
			m->left -= k;
			i += k;
			continue;
		}
		m->header[m->hlen++] = (unsigned char)data[i++];
		if (m->hlen < 8)
			continue;
		m->hlen = 0;
		if (m->header[0] > 2 || m->header[1] || m->header[2] || m->header[3]) {
			m->bad = 1;
			return 1;
		}
		m->left = (unsigned long)m->header[4] << 24 | (unsigned long)m->header[5] << 16 |
			  (unsigned long)m->header[6] << 8 | (unsigned long)m->header[7];
	}
	return 0;
}

/* POST /containers/{id}/exec (ContainerExec) of EX's command: 201 {Id}; 409 when the container
 * is not running (after an Engine restart): started, then asked once more. MARK (or NULL) goes
 * into the environment (DOCKER_MARK_VAR). */
static int exec_create(struct sbx *s, const char *id, const struct sbx_exec *ex, const char *mark,
		       char *execid, size_t execidsz, char *err, size_t errsz)
{
	static const long created[] = { 201, 0 }, created_or_stopped[] = { 201, 409, 0 };
	struct docker *d = docker_of(s);
	int started = 0;
	char ref[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	json_t *body, *cmd = json_array(), *env = json_array();
	int ret = -1;

	memset(&rs, 0, sizeof(rs));
	for (int i = 0; ex->argv[i]; i++)
		json_array_append_new(cmd, json_string(ex->argv[i]));
	/* the container's CA variables name its mounted bundle; the caller's name host paths */
	for (int i = 0; ex->envp && ex->envp[i]; i++)
		if (!s->cfg->sandbox_ca_bundle[0] || !is_ca_var(ex->envp[i]))
			json_array_append_new(env, json_string(ex->envp[i]));
	if (mark)
		json_array_append_new(env, json_string(mark));
	body = json_pack("{s:b, s:b, s:b, s:b, s:o, s:o, s:s, s:s}", "AttachStdin", 0,
			 "AttachStdout", 1, "AttachStderr", 1, "Tty", 0, "Cmd", cmd, "Env", env,
			 "WorkingDir", DOCKER_WORKDIR, "User",
			 ex->as_root ? DOCKER_ROOT_USER : DOCKER_SANDBOX_USER);
	if (!body || path_ref(id, ref, sizeof(ref))) {
		snprintf(err, errsz, "docker: exec request could not be built");
		goto out;
	}
	snprintf(path, sizeof(path), "/containers/%s/exec", ref);
again:
	rq = http_req("POST", path, body);
	if (http_expect(&d->http, &rq, started ? created : created_or_stopped, &rs, err, errsz))
		goto out;
	if (rs.status == 409) {
		http_response_release(&rs);
		started = 1;
		if (start_container(d, id, err, errsz))
			goto out;
		goto again;
	}
	if (http_answer_str(&d->http, &rq, &rs, "Id", execid, execidsz, err, errsz))
		goto out;
	ret = 0;
out:
	json_decref(body);
	http_response_release(&rs);
	return ret;
}

/* GET /exec/{id}/json (ExecInspect): ExitCode once Running is false. */
static int exec_inspect(struct docker *d, const char *execid, int *code, char *err, size_t errsz)
{
	char ref[SBX_ID_MAX * 3], path[HTTP_URL_MAX];

	if (path_ref(execid, ref, sizeof(ref))) {
		snprintf(err, errsz, "docker: invalid exec id");
		return -1;
	}
	snprintf(path, sizeof(path), "/exec/%s/json", ref);
	for (int i = 0; i < DOCKER_INSPECT_POLLS; i++) {
		static const long ok[] = { 200, 0 };
		struct http_request rq = { .method = "GET", .path = path };
		struct http_response rs;
		json_t *root, *running, *exit_code;

		if (http_expect(&d->http, &rq, ok, &rs, err, errsz)) {
			http_response_release(&rs);
			return -1;
		}
		/* an answer that does not parse is not an exit code yet: asked again */
		root = http_json(&rs);
		http_response_release(&rs);
		running = json_object_get(root, "Running");
		exit_code = json_object_get(root, "ExitCode");
		if (!json_is_true(running) && json_is_integer(exit_code)) {
			*code = (int)json_integer_value(exit_code);
			json_decref(root);
			return 0;
		}
		json_decref(root);
		clock_sleep_ms(DOCKER_INSPECT_POLL_MS);
	}
	snprintf(err, errsz, "docker: exec %.12s still running after its output ended", execid);
	return -1;
}

static int docker_exec(struct sbx *s, const char *id, const struct sbx_exec *ex, const char *mark,
		       struct proc_result *res);

/* Kill what EX's exec, marked MARK, started (DOCKER_MARK_VAR), by a second exec as the same
 * user, outside the watch (it said stop already, or the time limit passed). */
static void exec_kill(struct sbx *s, const char *id, const struct sbx_exec *ex, const char *mark)
{
	const char *argv[] = { "sh", "-c", DOCKER_KILL_SCRIPT, "sh", mark, NULL };
	struct sbx_exec killer = { .argv = (char *const *)argv,
				   .as_root = ex->as_root,
				   .timeout_s = DOCKER_KILL_TIMEOUT_S,
				   .output_max = ex->output_max };
	struct http_watch_ctx watch = http_watch_enter(NULL);
	struct proc_result res;

	docker_exec(s, id, &killer, NULL, &res);
	proc_result_release(&res);
	http_watch_leave(watch);
}

/* Run EX's command in container ID as docker_run does, its exec marked with MARK when not NULL
 * (then killed when its time limit passes or the watch says stop). */
static int docker_exec(struct sbx *s, const char *id, const struct sbx_exec *ex, const char *mark,
		       struct proc_result *res)
{
	struct docker *d = docker_of(s);
	char execid[SBX_ID_MAX], ref[SBX_ID_MAX * 3], path[HTTP_URL_MAX], err[SBX_ERR_MAX];
	struct http_request rq;
	struct http_response rs;
	struct out_tail out;
	struct demux m;
	json_t *body = NULL;
	int code = -1, ret = -1, rc;

	memset(res, 0, sizeof(*res));
	memset(&rs, 0, sizeof(rs));
	memset(&m, 0, sizeof(m));
	out_tail_init(&out, ex->output_max);
	m.out = &out;
	if (!ex->argv || !ex->argv[0]) {
		proc_result_fail(res, "docker: empty command");
		goto out;
	}
	if (exec_create(s, id, ex, mark, execid, sizeof(execid), err, sizeof(err))) {
		proc_result_fail(res, err);
		goto out;
	}
	/* POST /exec/{id}/start (ExecStart) {Detach: false, Tty: false}: 200, then the
	 * multiplexed stream until the process ends */
	body = json_pack("{s:b, s:b}", "Detach", 0, "Tty", 0);
	if (!body || path_ref(execid, ref, sizeof(ref))) {
		proc_result_fail(res, "docker: exec start request could not be built");
		goto out;
	}
	snprintf(path, sizeof(path), "/exec/%s/start", ref);
	rq = http_req("POST", path, body);
	rq.no_retry = 1; /* a command must not run twice */
	rq.on_data = demux_data;
	rq.on_data_arg = &m;
	rq.timeout_s = ex->timeout_s + DOCKER_EXEC_SLACK_S;
	rc = http_do(&d->http, &rq, &rs, err, sizeof(err));
	if (rc && (rs.timed_out || rs.stopped)) {
		if (mark)
			exec_kill(s, id, ex, mark);
		out_tail_finish(&out, res);
		proc_result_killed(res, rs.timed_out, rs.stopped);
		ret = 0;
		goto out;
	}
	if (rc) {
		proc_result_fail(res, m.bad ? "docker: malformed exec output stream" : err);
		goto out;
	}
	if (rs.status != 200 && rs.status != 101) {
		http_error(&d->http, &rq, &rs, err, sizeof(err));
		proc_result_fail(res, err);
		goto out;
	}
	if (exec_inspect(d, execid, &code, err, sizeof(err))) {
		proc_result_fail(res, err);
		goto out;
	}
	out_tail_finish(&out, res);
	res->exit_code = code;
	ret = 0;
out:
	json_decref(body);
	out_tail_release(&out);
	http_response_release(&rs);
	return ret;
}

int docker_run(struct sbx *s, const char *id, const struct sbx_exec *ex, struct proc_result *res)
{
	unsigned char r[DOCKER_MARK_BYTES];
	char mark[sizeof(DOCKER_MARK_VAR) + 2 * DOCKER_MARK_BYTES + 1];
	int n = snprintf(mark, sizeof(mark), "%s=", DOCKER_MARK_VAR);

	/* ex->share_net changes nothing: the container's network was chosen at create */
	if (random_bytes(r, sizeof(r))) {
		memset(res, 0, sizeof(*res));
		proc_result_fail(res, "docker: no randomness for the exec's mark");
		return -1;
	}
	for (size_t i = 0; i < sizeof(r); i++)
		n += snprintf(mark + n, sizeof(mark) - (size_t)n, "%02x", r[i]);
	return docker_exec(s, id, ex, mark, res);
}

/* DELETE /containers/{ref}?force=true&v=true (ContainerDelete): 204, 404 = no such container.
 * 0 deleted, 1 not found, -1 error. */
static int delete_container(struct docker *d, const char *ref, char *err, size_t errsz)
{
	static const long ok[] = { 204, 200, 404, 0 };
	long st = call_ref(d, "DELETE", "/containers/", ref, "?force=true&v=true", ok, err, errsz);
	return !st ? -1 : st == 404;
}

static int full_id(const char *id)
{
	return strlen(id) == 64 && strspn(id, "0123456789abcdef") == 64;
}

/* ID is the container id create returned, or the sandbox name when none was recorded. A name
 * is never sent as is (the Engine also matches id prefixes and other people's names): it goes
 * through "terrarium-NAME", whose label must name it, and the container is removed by its Id. */
int docker_destroy(struct sbx *s, const char *id, char *err, size_t errsz)
{
	static const long found[] = { 200, 404, 0 };
	struct docker *d = docker_of(s);
	char cname[CONFIG_STR_MAX], cid[SBX_ID_MAX];

	if (full_id(id))
		return delete_container(d, id, err, errsz) < 0 ? -1 : 0;
	if (container_name(id, cname, sizeof(cname))) {
		snprintf(err, errsz, "docker: invalid sandbox id");
		return -1;
	}
	switch (call_ref(d, "GET", "/containers/", cname, "/json", found, err, errsz)) {
	case 0:
		return -1;
	case 404:
		return 0; /* never created, or already removed */
	}
	if (inspect_owned(d, cname, id, cid, sizeof(cid), NULL, 0, err, errsz))
		return -1;
	return delete_container(d, cid, err, errsz) < 0 ? -1 : 0;
}

/* GET /containers/{id}/json (ContainerInspect): 200 exists (running or not), 404 gone. */
int docker_exists(struct sbx *s, const char *id, char *err, size_t errsz)
{
	static const long ok[] = { 200, 404, 0 };
	long st = call_ref(docker_of(s), "GET", "/containers/", id, "/json", ok, err, errsz);
	return !st ? -1 : st == 200;
}

/* GET /containers/json?all=1&limit=MAX&filters={"label":[managed, deployment]} (ContainerList:
 * label filters must all match; running or not; the newest first): this deployment's
 * containers, each by its Id and the session of its terrarium.session label. */
int docker_list(struct sbx *s, struct sbx_listed *out, int max, int *n, char *err, size_t errsz)
{
	char filters[HTTP_URL_MAX / 4], efilters[HTTP_URL_MAX / 2], path[HTTP_URL_MAX];
	json_t *root, *c;
	size_t i;

	if (sbx_list_start(s, n, err, errsz))
		return -1;
	snprintf(filters, sizeof(filters), "{\"label\":[\"%s=true\",\"%s=%s\"]}",
		 DOCKER_LABEL_MANAGED, DOCKER_LABEL_DEPLOYMENT, s->deployment);
	if (http_escape(filters, efilters, sizeof(efilters))) {
		snprintf(err, errsz, "docker: list filter is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/containers/json?all=1&limit=%d&filters=%s", max, efilters);
	root = http_get_json(&docker_of(s)->http, path, err, errsz);
	if (!root)
		return -1;
	if (!json_is_array(root)) {
		snprintf(err, errsz, "docker: GET /containers/json: answer is not an array");
		json_decref(root);
		return -1;
	}
	json_array_foreach (root, i, c) {
		json_t *labels = json_object_get(c, "Labels");
		const char *cid = json_string_value(json_object_get(c, "Id"));

		sbx_list_add(s, out, max, n, cid && full_id(cid) ? cid : NULL,
			     json_string_value(json_object_get(labels, DOCKER_LABEL_SESSION)),
			     json_string_value(json_object_get(labels, DOCKER_LABEL_DEPLOYMENT)));
	}
	json_decref(root);
	return 0;
}

/* ---- package cache: images DOCKER_CACHE_REPO:KEY ---- */

static int cache_ref(const char *key, char *ref, size_t refsz)
{
	int n;
	if (strlen(key) != 64 || strspn(key, "0123456789abcdef") != 64)
		return -1;
	n = snprintf(ref, refsz, "%s:%s", DOCKER_CACHE_REPO, key);
	return n < 0 || (size_t)n >= refsz ? -1 : 0;
}

/* GET /images/{name}/json (ImageInspect): the image's Id into ID (may be NULL). 1 present, 0
 * absent, -1 error. */
static int image_id(struct docker *d, const char *name, char *id, size_t idsz, char *err,
		    size_t errsz)
{
	static const long ok[] = { 200, 404, 0 };
	char path[HTTP_URL_MAX], scratch[SBX_ID_MAX];
	struct http_request rq;
	struct http_response rs;
	int ret = -1;

	if (ref_path("/images/", name, "/json", path, sizeof(path), err, errsz))
		return -1;
	if (!id)
		id = scratch, idsz = sizeof(scratch);
	rq = http_req("GET", path, NULL);
	if (!http_expect(&d->http, &rq, ok, &rs, err, errsz)) {
		if (rs.status == 404)
			ret = 0;
		else if (!http_answer_str(&d->http, &rq, &rs, "Id", id, idsz, err, errsz))
			ret = 1;
	}
	http_response_release(&rs);
	return ret;
}

/* DELETE /images/{name} (ImageDelete), never forced: 0 removed or absent, 1 in use (409), -1. */
static int image_delete(struct docker *d, const char *name, char *err, size_t errsz)
{
	static const long ok[] = { 200, 404, 409, 0 };
	long st = call_ref(d, "DELETE", "/images/", name, "", ok, err, errsz);
	return !st ? -1 : st == 409;
}

int docker_cache_lookup(struct sbx *s, const char *key, char *ref, size_t refsz, char *err,
			size_t errsz)
{
	if (cache_ref(key, ref, refsz)) {
		snprintf(err, errsz, "docker: invalid cache key");
		return -1;
	}
	return image_id(docker_of(s), ref, NULL, 0, err, errsz);
}

/* GET /images/json?filters={"dangling":["true"],"label":["terrarium.cache=KEY"]}
 * (ImageList): images of entry KEY that lost their tag to a later commit go (never forced: one
 * a sandbox still runs from stays until a later store). */
static void delete_untagged(struct docker *d, const char *key)
{
	char filters[HTTP_URL_MAX / 4], efilters[HTTP_URL_MAX / 2], path[HTTP_URL_MAX];
	char err[SBX_ERR_MAX];
	json_t *root, *img;
	size_t i;

	snprintf(filters, sizeof(filters), "{\"dangling\":[\"true\"],\"label\":[\"%s=%s\"]}",
		 DOCKER_LABEL_CACHE, key);
	if (http_escape(filters, efilters, sizeof(efilters)))
		return;
	snprintf(path, sizeof(path), "/images/json?filters=%s", efilters);
	root = http_get_json(&d->http, path, err, sizeof(err)); /* NULL: nothing to delete */
	json_array_foreach (root, i, img) {
		const char *iid = json_string_value(json_object_get(img, "Id"));
		if (iid)
			image_delete(d, iid, err, sizeof(err));
	}
	json_decref(root);
}

/* POST /commit?container=ID&repo=R&tag=KEY (ImageCommit): the Engine builds the image, then
 * moves the tag to it in one step, so two reconcilers committing one key leave the tag on one
 * whole image; the loser's image, left untagged, is removed here. */
int docker_cache_store(struct sbx *s, const char *id, const char *key, char *err, size_t errsz)
{
	static const long ok[] = { 201, 200, 0 };
	struct docker *d = docker_of(s);
	char ref[CONFIG_STR_MAX], cref[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	char mine[SBX_ID_MAX] = "", tagged[SBX_ID_MAX] = "";
	struct http_request rq;
	struct http_response rs;
	json_t *body;
	int ret = -1;

	if (cache_ref(key, ref, sizeof(ref)) || path_ref(id, cref, sizeof(cref))) {
		snprintf(err, errsz, "docker: invalid cache key or container id");
		return -1;
	}
	if (image_id(d, ref, NULL, 0, err, errsz) == 1)
		return 0; /* stored already (by another reconciler, or an earlier attempt) */
	body = json_pack("{s:{s:s, s:s}}", "Labels", DOCKER_LABEL_MANAGED, "true",
			 DOCKER_LABEL_CACHE, key);
	snprintf(path, sizeof(path), "/commit?container=%s&repo=%s&tag=%s&pause=true", cref,
		 DOCKER_CACHE_REPO, key);
	rq = http_req("POST", path, body);
	rq.timeout_s = DOCKER_COMMIT_TIMEOUT_S;
	if (http_expect(&d->http, &rq, ok, &rs, err, errsz) ||
	    http_answer_str(&d->http, &rq, &rs, "Id", mine, sizeof(mine), err, errsz))
		goto out;
	ret = 0;
	if (image_id(d, ref, tagged, sizeof(tagged), err, errsz) == 1 && strcmp(tagged, mine))
		image_delete(d, mine, err, errsz); /* another reconciler's commit won the tag */
	else
		delete_untagged(d,
				key); /* an earlier commit of the key this one took the tag from */
out:
	json_decref(body);
	http_response_release(&rs);
	return ret;
}

int docker_cache_remove(struct sbx *s, const char *key, char *err, size_t errsz)
{
	char ref[CONFIG_STR_MAX];

	if (cache_ref(key, ref, sizeof(ref))) {
		snprintf(err, errsz, "docker: invalid cache key");
		return -1;
	}
	return image_delete(docker_of(s), ref, err, errsz);
}
