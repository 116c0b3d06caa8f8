/* The `docker` backend: one container per sandbox through the Docker Engine API on its unix
 * socket. The container is named after the session (create-or-attach by name), labelled as
 * terrarium's, has no network unless the policy is unrestricted (sbx.create_share_net), and
 * runs `tail -f /dev/null` so commands can be exec'd into it. No egress allowlist: limited
 * networking is refused at admission.
 *
 * Protocol source: moby/moby api/swagger.yaml (operations ContainerCreate, ContainerInspect,
 * ContainerStart, ContainerExec, ExecStart, ExecInspect, ContainerDelete, ImageCreate, and the
 * "Stream format" section of ContainerAttach for the multiplexed exec output). Paths carry no
 * version prefix, so the daemon's own API version answers; put one in [docker] url
 * ("http://localhost/v1.43") to pin it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "http.h"
#include "remote.h"

#define DOCKER_DEFAULT_SOCKET "/var/run/docker.sock"
#define DOCKER_NAME_PREFIX "terrarium-"
#define DOCKER_LABEL_SESSION "terrarium.session"
#define DOCKER_LABEL_MANAGED "terrarium.managed"
#define DOCKER_WORKDIR "/workspace"
#define DOCKER_NAME_MAX 200
#define DOCKER_EXEC_SLACK_S 30     /* HTTP time beyond the command's own limit */
#define DOCKER_PULL_TIMEOUT_S 900  /* pulling the image on first use */
#define DOCKER_PULL_BODY_MAX (1u << 20)
#define DOCKER_INSPECT_POLLS 20    /* exec inspect while the stream's end races the exit */
#define DOCKER_INSPECT_POLL_MS 100

struct docker {
	struct http_client http;
};

static struct docker *docker_of(struct sbx *s)
{
	return s->priv;
}

static struct http_request req(const char *method, const char *path, json_t *body)
{
	struct http_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.method = method;
	rq.path = path;
	rq.body = body;
	return rq;
}

static int docker_open(struct sbx *s, char *err, size_t errsz)
{
	struct remote_conf rc = *s->remote;
	struct docker *d;

	if (!rc.image[0]) {
		snprintf(err, errsz, "docker: [docker] image is not set");
		return -1;
	}
	if (!rc.socket[0] && !rc.url[0])
		snprintf(rc.socket, sizeof(rc.socket), "%s", DOCKER_DEFAULT_SOCKET);
	d = calloc(1, sizeof(*d));
	if (!d) {
		snprintf(err, errsz, "docker: out of memory");
		return -1;
	}
	/* the Engine's socket has no credential; an api_key_file would be ignored */
	if (http_init(&d->http, "docker", &rc, err, errsz)) {
		free(d);
		return -1;
	}
	s->priv = d;
	return 0;
}

static void docker_close(struct sbx *s)
{
	struct docker *d = docker_of(s);
	if (!d)
		return;
	http_release(&d->http);
	free(d);
	s->priv = NULL;
}

static void docker_workdir(struct sbx *s, const char *id, char *out, size_t outsz)
{
	(void)s;
	(void)id;
	snprintf(out, outsz, "%s", DOCKER_WORKDIR);
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

/* GET /containers/{name}/json (ContainerInspect): its Id when it carries our label for NAME. */
static int inspect_owned(struct docker *d, const char *cname, const char *name, char *id,
			 size_t idsz, char *err, size_t errsz)
{
	char path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	json_t *root = NULL;
	const char *cid, *label;
	int ret = -1;

	snprintf(path, sizeof(path), "/containers/%s/json", cname);
	rq = req("GET", path, NULL);
	if (http_do(&d->http, &rq, &rs, err, errsz))
		goto out;
	if (rs.status != 200) {
		http_error(&d->http, &rq, &rs, err, errsz);
		goto out;
	}
	root = http_json(&rs);
	cid = json_string_value(json_object_get(root, "Id"));
	label = json_string_value(json_object_get(
		json_object_get(json_object_get(root, "Config"), "Labels"), DOCKER_LABEL_SESSION));
	if (!cid || !*cid || strlen(cid) >= idsz) {
		snprintf(err, errsz, "docker: inspect %s: answer has no usable Id", cname);
		goto out;
	}
	if (!label || strcmp(label, name)) {
		snprintf(err, errsz, "docker: container %s exists but is not terrarium's sandbox %s",
			 cname, name);
		goto out;
	}
	strcpy(id, cid);
	ret = 0;
out:
	json_decref(root);
	http_response_release(&rs);
	return ret;
}

/* POST /images/create?fromImage=IMAGE (ImageCreate): 200 with a JSON progress stream whose
 * failure shows as an {"error": ...} object inside it. */
static int pull_image(struct docker *d, const char *image, char *err, size_t errsz)
{
	char eimage[CONFIG_STR_MAX * 3], path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	int ret = -1;

	if (http_escape(image, eimage, sizeof(eimage))) {
		snprintf(err, errsz, "docker: image name is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/images/create?fromImage=%s", eimage);
	rq = req("POST", path, NULL);
	rq.timeout_s = DOCKER_PULL_TIMEOUT_S;
	rq.body_max = DOCKER_PULL_BODY_MAX;
	if (http_do(&d->http, &rq, &rs, err, errsz))
		goto out;
	if (rs.status != 200 || strstr(rs.body, "\"error\"")) {
		http_error(&d->http, &rq, &rs, err, errsz);
		goto out;
	}
	ret = 0;
out:
	http_response_release(&rs);
	return ret;
}

/* POST /containers/create?name=NAME (ContainerCreate): 201 {Id}, 409 when the name is taken,
 * 404 when the image is missing. Returns the status, 0 on a transport failure. */
static long create_container(struct sbx *s, const char *cname, const char *name, char *id,
			     size_t idsz, char *err, size_t errsz)
{
	struct docker *d = docker_of(s);
	char path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	json_t *body, *root = NULL;
	const char *cid;
	long status = 0;

	body = json_pack("{s:s, s:[s,s,s], s:s, s:b, s:b, s:{s:s, s:s}, s:{s:s, s:b}}",
			 "Image", s->remote->image,
			 "Entrypoint", "tail", "-f", "/dev/null",
			 "WorkingDir", DOCKER_WORKDIR,
			 "Tty", 0,
			 "OpenStdin", 0,
			 "Labels", DOCKER_LABEL_SESSION, name, DOCKER_LABEL_MANAGED, "true",
			 "HostConfig", "NetworkMode", s->create_share_net ? "bridge" : "none",
			 "Init", 1);
	if (!body) {
		snprintf(err, errsz, "docker: request could not be built");
		return 0;
	}
	snprintf(path, sizeof(path), "/containers/create?name=%s", cname);
	rq = req("POST", path, body);
	if (http_do(&d->http, &rq, &rs, err, errsz))
		goto out;
	status = rs.status;
	if (status == 201) {
		root = http_json(&rs);
		cid = json_string_value(json_object_get(root, "Id"));
		if (!cid || !*cid || strlen(cid) >= idsz) {
			snprintf(err, errsz, "docker: create %s: answer has no usable Id", cname);
			status = 0;
		} else {
			strcpy(id, cid);
		}
	} else if (status != 409) {
		http_error(&d->http, &rq, &rs, err, errsz);
	}
out:
	json_decref(body);
	json_decref(root);
	http_response_release(&rs);
	return status;
}

/* POST /containers/{id}/start (ContainerStart): 204 started, 304 already running. */
static int start_container(struct docker *d, const char *id, char *err, size_t errsz)
{
	char ref[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	int ret = -1;

	if (path_ref(id, ref, sizeof(ref))) {
		snprintf(err, errsz, "docker: invalid container id");
		return -1;
	}
	snprintf(path, sizeof(path), "/containers/%s/start", ref);
	rq = req("POST", path, NULL);
	if (http_do(&d->http, &rq, &rs, err, errsz))
		goto out;
	if (rs.status == 204 || rs.status == 304)
		ret = 0;
	else
		http_error(&d->http, &rq, &rs, err, errsz);
out:
	http_response_release(&rs);
	return ret;
}

static int docker_create(struct sbx *s, const char *name, char *id, size_t idsz, char *err,
			 size_t errsz)
{
	struct docker *d = docker_of(s);
	char cname[CONFIG_STR_MAX];
	long status;

	if (container_name(name, cname, sizeof(cname))) {
		snprintf(err, errsz, "docker: invalid sandbox name");
		return -1;
	}
	status = create_container(s, cname, name, id, idsz, err, errsz);
	if (status == 404) {
		/* the image is not on this host yet */
		if (pull_image(d, s->remote->image, err, errsz))
			return -1;
		status = create_container(s, cname, name, id, idsz, err, errsz);
	}
	if (status == 409 && inspect_owned(d, cname, name, id, idsz, err, errsz))
		return -1;
	if (status != 201 && status != 409)
		return -1;
	return start_container(d, id, err, errsz);
}

/* ---- exec ---- */

/* The multiplexed stream (ContainerAttach, "Stream format"): frames of an 8-byte header
 * {STREAM_TYPE, 0, 0, 0, SIZE1..SIZE4 (big-endian uint32)} and SIZE payload bytes; type 1 is
 * stdout, 2 stderr (0, stdin, is written on stdout). */
struct demux {
	struct out_tail *out;
	unsigned char header[8];
	size_t hlen;      /* header bytes collected */
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

/* POST /containers/{id}/exec (ContainerExec): 201 {Id}. */
static int exec_create(struct docker *d, const char *id, char *const argv[], char *const envp[],
		       char *execid, size_t execidsz, char *err, size_t errsz)
{
	char ref[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	json_t *body, *cmd = json_array(), *env = json_array(), *root = NULL;
	const char *eid;
	int ret = -1;

	memset(&rs, 0, sizeof(rs));
	for (int i = 0; argv[i]; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	for (int i = 0; envp && envp[i]; i++)
		json_array_append_new(env, json_string(envp[i]));
	body = json_pack("{s:b, s:b, s:b, s:b, s:o, s:o, s:s}", "AttachStdin", 0, "AttachStdout", 1,
			 "AttachStderr", 1, "Tty", 0, "Cmd", cmd, "Env", env, "WorkingDir",
			 DOCKER_WORKDIR);
	if (!body || path_ref(id, ref, sizeof(ref))) {
		snprintf(err, errsz, "docker: exec request could not be built");
		goto out;
	}
	snprintf(path, sizeof(path), "/containers/%s/exec", ref);
	rq = req("POST", path, body);
	if (http_do(&d->http, &rq, &rs, err, errsz))
		goto out;
	if (rs.status != 201) {
		http_error(&d->http, &rq, &rs, err, errsz);
		goto out;
	}
	root = http_json(&rs);
	eid = json_string_value(json_object_get(root, "Id"));
	if (!eid || !*eid || strlen(eid) >= execidsz) {
		snprintf(err, errsz, "docker: exec create: answer has no usable Id");
		goto out;
	}
	strcpy(execid, eid);
	ret = 0;
out:
	json_decref(body);
	json_decref(root);
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
		struct http_request rq = req("GET", path, NULL);
		struct http_response rs;
		json_t *root;
		json_t *running, *exit_code;

		if (http_do(&d->http, &rq, &rs, err, errsz)) {
			http_response_release(&rs);
			return -1;
		}
		if (rs.status != 200) {
			http_error(&d->http, &rq, &rs, err, errsz);
			http_response_release(&rs);
			return -1;
		}
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
		struct timespec ts = { 0, DOCKER_INSPECT_POLL_MS * 1000000L };
		nanosleep(&ts, NULL);
	}
	snprintf(err, errsz, "docker: exec %.12s still running after its output ended", execid);
	return -1;
}

static int docker_run(struct sbx *s, const char *id, int share_net, char *const argv[],
		      char *const envp[], long timeout_s, struct proc_result *res)
{
	struct docker *d = docker_of(s);
	char execid[SBX_ID_MAX], ref[SBX_ID_MAX * 3], path[HTTP_URL_MAX], err[SBX_ERR_MAX];
	struct http_request rq;
	struct http_response rs;
	struct out_tail out;
	struct demux m;
	json_t *body = NULL;
	int code = -1, ret = -1, rc;

	(void)share_net; /* the container's network was chosen at create */
	memset(res, 0, sizeof(*res));
	memset(&rs, 0, sizeof(rs));
	memset(&m, 0, sizeof(m));
	out_tail_init(&out, (size_t)s->cfg->output_max);
	m.out = &out;
	if (!argv || !argv[0]) {
		proc_result_fail(res, "docker: empty command");
		goto out;
	}
	if (exec_create(d, id, argv, envp, execid, sizeof(execid), err, sizeof(err))) {
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
	rq = req("POST", path, body);
	rq.no_retry = 1; /* a command must not run twice */
	rq.on_data = demux_data;
	rq.on_data_arg = &m;
	rq.timeout_s = timeout_s + DOCKER_EXEC_SLACK_S;
	rc = http_do(&d->http, &rq, &rs, err, sizeof(err));
	if (rc && rs.timed_out) {
		/* the Engine has no exec kill: the process may outlive this call */
		out_tail_finish(&out, res);
		res->timed_out = 1;
		res->exit_code = 128 + 9;
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

/* DELETE /containers/{ref}?force=true&v=true (ContainerDelete): 204, 404 = no such container.
 * 0 deleted, 1 not found, -1 error. */
static int delete_container(struct docker *d, const char *ref, char *err, size_t errsz)
{
	char eref[SBX_ID_MAX * 3], path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	int ret = -1;

	if (path_ref(ref, eref, sizeof(eref))) {
		snprintf(err, errsz, "docker: invalid container id");
		return -1;
	}
	snprintf(path, sizeof(path), "/containers/%s?force=true&v=true", eref);
	rq = req("DELETE", path, NULL);
	if (http_do(&d->http, &rq, &rs, err, errsz))
		goto out;
	if (rs.status == 204 || rs.status == 200)
		ret = 0;
	else if (rs.status == 404)
		ret = 1;
	else
		http_error(&d->http, &rq, &rs, err, errsz);
out:
	http_response_release(&rs);
	return ret;
}

static int full_id(const char *id)
{
	return strlen(id) == 64 && strspn(id, "0123456789abcdef") == 64;
}

/* ID is the container id create returned, or the sandbox name when none was recorded. A name
 * is never sent as is (the Engine also matches id prefixes and other people's names): it goes
 * through "terrarium-NAME", whose label must name it, and the container is removed by its Id. */
static int docker_destroy(struct sbx *s, const char *id, char *err, size_t errsz)
{
	struct docker *d = docker_of(s);
	char cname[CONFIG_STR_MAX], cid[SBX_ID_MAX], path[HTTP_URL_MAX];
	struct http_request rq;
	struct http_response rs;
	int rc;

	if (full_id(id))
		return delete_container(d, id, err, errsz) < 0 ? -1 : 0;
	if (container_name(id, cname, sizeof(cname))) {
		snprintf(err, errsz, "docker: invalid sandbox id");
		return -1;
	}
	snprintf(path, sizeof(path), "/containers/%s/json", cname);
	rq = req("GET", path, NULL);
	if (http_do(&d->http, &rq, &rs, err, errsz)) {
		http_response_release(&rs);
		return -1;
	}
	rc = (int)rs.status;
	http_response_release(&rs);
	if (rc == 404)
		return 0; /* never created, or already removed */
	if (inspect_owned(d, cname, id, cid, sizeof(cid), err, errsz))
		return -1;
	return delete_container(d, cid, err, errsz) < 0 ? -1 : 0;
}

const struct sandbox_backend sbx_docker = {
	.name = "docker",
	.open = docker_open,
	.close = docker_close,
	.create = docker_create,
	.workdir = docker_workdir,
	.run = docker_run,
	.set_egress = NULL,
	.destroy = docker_destroy,
};
