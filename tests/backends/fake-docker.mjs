#!/usr/bin/env node
// A protocol fake of the Docker Engine API on a unix socket, for the docker driver's tests
// (Node 20, no dependencies). Implements what the driver uses, checked against moby/moby
// api/swagger.yaml: ContainerCreate (POST /containers/create?name=), ContainerInspect
// (GET /containers/{id}/json), ContainerStart (POST /containers/{id}/start: 204, 304 when
// running), ContainerExec (POST /containers/{id}/exec), ExecStart (POST /exec/{id}/start: the
// multiplexed stream, 8-byte frame headers {type, 0, 0, 0, big-endian uint32 size}), ExecInspect
// (GET /exec/{id}/json), ContainerDelete (DELETE /containers/{id}?force=true), ImageCreate
// (POST /images/create?fromImage=), ContainerList (GET /containers/json?all=&limit=&filters=
// with `label` filters "key" or "key=value", all of which must match; the newest first).
// Paths may carry a /v1.NN version prefix.
//
// Every request is checked (method, path, query, body shape); anything else is recorded as a
// violation and answered 400/404. No image is present at start: the first create answers 404
// "No such image" and the driver must pull. GET /__fake/log returns
//   {calls: [{method, path, status}], violations: [string], installs: [...],
//    created: [{id, name, image, labels, networkMode}] (every container ever created),
//    containers: [{id, name, labels, networkMode, running}] (those that exist now)}
// Commands: tests/backends/osb-docker-commands.mjs.
//
// Usage: node fake-docker.mjs --socket PATH
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { loggedRequest, longArgs, sendJson, strictJson } from './fake-http.mjs';
import { runArgv } from './osb-docker-commands.mjs';

const args = longArgs();
const CREATE_KEYS = ['Image', 'Entrypoint', 'Cmd', 'WorkingDir', 'Tty', 'OpenStdin', 'Labels', 'HostConfig', 'Env', 'User',
	'AttachStdin', 'AttachStdout', 'AttachStderr', 'StdinOnce', 'Hostname'];
const HOST_KEYS = ['NetworkMode', 'Init', 'AutoRemove', 'Memory', 'MemorySwap', 'NanoCpus', 'PidsLimit', 'CapDrop', 'CapAdd',
	'SecurityOpt', 'ReadonlyRootfs', 'Privileged', 'Binds'];
const EXEC_KEYS = ['AttachStdin', 'AttachStdout', 'AttachStderr', 'Tty', 'Cmd', 'Env', 'WorkingDir', 'User', 'Privileged', 'DetachKeys'];

const log = { calls: [], violations: [], installs: [], created: [] };
const containers = new Map(); // id -> container
const execs = new Map();
const images = new Set();

const violation = (msg) => {
	log.violations.push(msg);
	process.stderr.write(`fake-docker: violation: ${msg}\n`);
};
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isStrArray = (v) => Array.isArray(v) && v.every((x) => typeof x === 'string');

const send = sendJson;

function fail(res, status, msg) {
	violation(msg);
	send(res, status, { message: `fake: ${msg}` });
}

function find(ref) {
	return containers.get(ref) || [...containers.values()].find((c) => c.name === ref || c.name === `/${ref}`);
}

function onlyQuery(url, allowed, res, what) {
	for (const k of url.searchParams.keys()) {
		if (!allowed.includes(k)) {
			fail(res, 400, `${what}: unexpected query parameter ${k}`);
			return false;
		}
	}
	return true;
}

function frame(type, text) {
	const payload = Buffer.from(text);
	const header = Buffer.alloc(8);
	header[0] = type;
	header.writeUInt32BE(payload.length, 4);
	return Buffer.concat([header, payload]);
}

function handle(req, res, url, text) {
	const path = url.pathname.replace(/^\/v1\.[0-9]+/, '');
	let m;
	if (req.method === 'POST' && path === '/images/create') {
		if (!onlyQuery(url, ['fromImage', 'tag', 'platform'], res, 'ImageCreate')) return;
		const image = url.searchParams.get('fromImage');
		if (!image) return fail(res, 400, 'ImageCreate without fromImage');
		images.add(url.searchParams.get('tag') ? `${image}:${url.searchParams.get('tag')}` : image);
		res.writeHead(200, { 'content-type': 'application/json' });
		res.write(JSON.stringify({ status: `Pulling from ${image}` }) + '\r\n');
		res.end(JSON.stringify({ status: `Status: Downloaded newer image for ${image}` }) + '\r\n');
		return;
	}
	if (req.method === 'POST' && path === '/containers/create') {
		if (!onlyQuery(url, ['name', 'platform'], res, 'ContainerCreate')) return;
		const name = url.searchParams.get('name');
		if (!name || !/^\/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$/.test(name)) return fail(res, 400, `ContainerCreate: bad or missing name ${name}`);
		const body = strictJson(req, text, res, fail);
		if (body === undefined) return;
		if (!isObj(body)) return fail(res, 400, 'ContainerCreate: body must be an object');
		for (const k of Object.keys(body)) if (!CREATE_KEYS.includes(k)) return fail(res, 400, `ContainerCreate: unknown field ${k}`);
		if (typeof body.Image !== 'string' || !body.Image) return fail(res, 400, 'ContainerCreate: Image required');
		if (body.Entrypoint !== undefined && !isStrArray(body.Entrypoint)) return fail(res, 400, 'ContainerCreate: Entrypoint must be an array of strings');
		if (body.Labels !== undefined && !(isObj(body.Labels) && Object.values(body.Labels).every((v) => typeof v === 'string'))) return fail(res, 400, 'ContainerCreate: Labels must map names to strings');
		const hc = body.HostConfig || {};
		if (!isObj(hc)) return fail(res, 400, 'ContainerCreate: HostConfig must be an object');
		for (const k of Object.keys(hc)) if (!HOST_KEYS.includes(k)) return fail(res, 400, `ContainerCreate: unknown HostConfig field ${k}`);
		if (hc.NetworkMode !== undefined && !['none', 'bridge', 'host'].includes(hc.NetworkMode)) return fail(res, 400, `ContainerCreate: unexpected NetworkMode ${hc.NetworkMode}`);
		if (body.Tty) violation('ContainerCreate: Tty true would make exec output unframed');
		const clean = name.replace(/^\//, '');
		if (find(clean)) return send(res, 409, { message: `Conflict. The container name "/${clean}" is already in use by container "${find(clean).id}". You have to remove (or rename) that container to be able to reuse that name.` });
		if (!images.has(body.Image)) return send(res, 404, { message: `No such image: ${body.Image}` });
		const id = randomBytes(32).toString('hex');
		log.created.push({ id, name: `/${clean}`, image: body.Image, labels: body.Labels || {}, networkMode: hc.NetworkMode || 'bridge' });
		containers.set(id, {
			id, name: `/${clean}`, image: body.Image, labels: body.Labels || {}, workdir: body.WorkingDir || '/',
			networkMode: hc.NetworkMode || 'bridge', running: false, dirs: new Set(['/', body.WorkingDir || '/']),
			entrypoint: body.Entrypoint,
		});
		return send(res, 201, { Id: id, Warnings: [] });
	}
	if (path === '/containers/json' && req.method === 'GET') {
		if (!onlyQuery(url, ['all', 'limit', 'size', 'filters'], res, 'ContainerList')) return;
		let filters = {};
		try {
			filters = JSON.parse(url.searchParams.get('filters') || '{}');
		} catch {
			return fail(res, 400, 'ContainerList: filters is not JSON');
		}
		if (!isObj(filters) || Object.keys(filters).some((k) => k !== 'label') || (filters.label !== undefined && !isStrArray(filters.label))) {
			return fail(res, 400, `ContainerList: unexpected filters ${JSON.stringify(filters)}`);
		}
		const limit = Number(url.searchParams.get('limit') || -1);
		const all = ['1', 'true'].includes(url.searchParams.get('all'));
		const match = (c) => (filters.label || []).every((f) => {
			const eq = f.indexOf('=');
			return eq < 0 ? f in c.labels : c.labels[f.slice(0, eq)] === f.slice(eq + 1);
		});
		let list = [...containers.values()].reverse().filter((c) => (all || c.running) && match(c));
		if (limit > 0) list = list.slice(0, limit);
		return send(res, 200, list.map((c) => ({
			Id: c.id, Names: [c.name], Image: c.image, Labels: c.labels,
			State: c.running ? 'running' : 'created', HostConfig: { NetworkMode: c.networkMode },
		})));
	}
	if ((m = path.match(/^\/containers\/([^/]+)\/json$/)) && req.method === 'GET') {
		if (!onlyQuery(url, ['size'], res, 'ContainerInspect')) return;
		const c = find(decodeURIComponent(m[1]));
		if (!c) return send(res, 404, { message: `No such container: ${m[1]}` });
		return send(res, 200, {
			Id: c.id, Name: c.name, Image: c.image,
			State: { Status: c.running ? 'running' : 'created', Running: c.running, Paused: false, ExitCode: 0 },
			Config: { Image: c.image, Labels: c.labels, WorkingDir: c.workdir, Entrypoint: c.entrypoint, Tty: false },
			HostConfig: { NetworkMode: c.networkMode },
		});
	}
	if ((m = path.match(/^\/containers\/([^/]+)\/start$/)) && req.method === 'POST') {
		if (!onlyQuery(url, ['detachKeys'], res, 'ContainerStart')) return;
		const c = find(decodeURIComponent(m[1]));
		if (!c) return send(res, 404, { message: `No such container: ${m[1]}` });
		if (c.running) return send(res, 304);
		c.running = true;
		return send(res, 204);
	}
	if ((m = path.match(/^\/containers\/([^/]+)\/exec$/)) && req.method === 'POST') {
		if (!onlyQuery(url, [], res, 'ContainerExec')) return;
		const c = find(decodeURIComponent(m[1]));
		if (!c) return send(res, 404, { message: `No such container: ${m[1]}` });
		const body = strictJson(req, text, res, fail);
		if (body === undefined) return;
		if (!isObj(body)) return fail(res, 400, 'ContainerExec: body must be an object');
		for (const k of Object.keys(body)) if (!EXEC_KEYS.includes(k)) return fail(res, 400, `ContainerExec: unknown field ${k}`);
		if (!isStrArray(body.Cmd) || !body.Cmd.length) return fail(res, 400, 'ContainerExec: Cmd must be a non-empty array of strings');
		if (body.Env !== undefined && !(isStrArray(body.Env) && body.Env.every((e) => /^[^=]+=/.test(e)))) return fail(res, 400, 'ContainerExec: Env must be NAME=VALUE strings');
		if (body.AttachStdout !== true || body.AttachStderr !== true) violation('ContainerExec: output not attached');
		if (body.Tty) violation('ContainerExec: Tty true would make the output unframed');
		if (!c.running) return send(res, 409, { message: `Container ${c.id} is not running` });
		const id = randomBytes(32).toString('hex');
		execs.set(id, { id, container: c, cmd: body.Cmd, env: body.Env || [], workdir: body.WorkingDir || c.workdir, started: false, exitCode: null });
		return send(res, 201, { Id: id });
	}
	if ((m = path.match(/^\/exec\/([^/]+)\/start$/)) && req.method === 'POST') {
		if (!onlyQuery(url, [], res, 'ExecStart')) return;
		const e = execs.get(decodeURIComponent(m[1]));
		if (!e) return send(res, 404, { message: 'No such exec instance' });
		const body = strictJson(req, text, res, fail);
		if (body === undefined) return;
		if (!isObj(body) || Object.keys(body).some((k) => !['Detach', 'Tty', 'ConsoleSize'].includes(k))) return fail(res, 400, 'ExecStart: body must be {Detach, Tty}');
		if (body.Detach !== false || body.Tty !== false) violation('ExecStart: expected Detach false and Tty false');
		if (e.started) return fail(res, 409, 'ExecStart: exec started twice');
		e.started = true;
		const env = Object.fromEntries(e.env.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)]));
		const r = runArgv(e.cmd, { sandbox: e.container.id, env, cwd: e.workdir, dirs: e.container.dirs, installs: log.installs, allowed: null });
		if (r.violation) violation(r.violation);
		e.exitCode = r.exit;
		res.writeHead(200, { 'content-type': 'application/vnd.docker.multiplexed-stream' });
		for (const [stream, t] of r.out) {
			// split each chunk in two writes to exercise frame reassembly in the client
			const f = frame(stream === 'stdout' ? 1 : 2, t);
			res.write(f.subarray(0, 5));
			res.write(f.subarray(5));
		}
		res.end();
		return;
	}
	if ((m = path.match(/^\/exec\/([^/]+)\/json$/)) && req.method === 'GET') {
		const e = execs.get(decodeURIComponent(m[1]));
		if (!e) return send(res, 404, { message: 'No such exec instance' });
		if (!e.started) violation('ExecInspect before ExecStart');
		return send(res, 200, { ID: e.id, Running: false, ExitCode: e.exitCode, ContainerID: e.container.id, ProcessConfig: { entrypoint: e.cmd[0], arguments: e.cmd.slice(1) } });
	}
	if ((m = path.match(/^\/containers\/([^/]+)$/)) && req.method === 'DELETE') {
		if (!onlyQuery(url, ['force', 'v', 'link'], res, 'ContainerDelete')) return;
		if (url.searchParams.get('force') !== 'true') violation('ContainerDelete without force=true');
		const c = find(decodeURIComponent(m[1]));
		if (!c) return send(res, 404, { message: `No such container: ${m[1]}` });
		containers.delete(c.id);
		return send(res, 204);
	}
	return fail(res, 404, `unknown call ${req.method} ${url.pathname}`);
}

const server = createServer(async (req, res) => {
	const { text, url } = await loggedRequest(req, res, log);
	if (req.method === 'GET' && url.pathname === '/__fake/log') {
		return send(res, 200, {
			...log,
			containers: [...containers.values()].map((c) => ({ id: c.id, name: c.name, labels: c.labels, networkMode: c.networkMode, running: c.running })),
		});
	}
	handle(req, res, url, text);
});

try {
	unlinkSync(args.socket);
} catch {}
server.listen(args.socket, () => process.stdout.write(`fake-docker listening on ${args.socket}\n`));
for (const sig of ['SIGTERM', 'SIGINT']) {
	process.on(sig, () => {
		try {
			unlinkSync(args.socket);
		} catch {}
		process.exit(0);
	});
}
