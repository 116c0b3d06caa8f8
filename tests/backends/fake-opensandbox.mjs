#!/usr/bin/env node
// A protocol fake of OpenSandbox for the driver tests: the lifecycle API, execd and the egress
// sidecar in one loopback HTTP server (Node 20, no dependencies). Execd and the sidecar are
// reached the way the lifecycle server's proxy exposes them: the endpoint call answers
// "127.0.0.1:PORT/v1/sandboxes/ID/proxy/{44772|18080}" with the header the service requires.
// The proxy is upstream's (alibaba/OpenSandbox server/src/api/proxy.py, auth.py): its route
// needs no API key, and it hands execd and the sidecar, which listen INSIDE the sandbox, every
// request header but host, the hop-by-hop ones (and those Connection names), authorization and
// cookie. What they receive is all a tenant's own listener on those ports would: the API key
// arriving there is a violation (the key would open every tenant's sandboxes).
//
// Every request is checked against the protocol (alibaba/OpenSandbox specs/sandbox-lifecycle.yml,
// specs/egress-api.yaml; opensandbox-group/OpenSandbox specs/execd-api.yaml): method and path,
// the API key (OPEN-SANDBOX-API-KEY), the execd token (X-EXECD-ACCESS-TOKEN), the sidecar token
// (OPENSANDBOX-EGRESS-AUTH), the body's shape. Anything unexpected is recorded as a violation
// (and answered 400/401/404). GET /__fake/log returns
//   {calls: [{method, path, status}], violations: [string], policies: {sandboxId: [[host...]...]},
//    inside: {calls: N, keySeen: N} (requests execd and the sidecar received, and those of them
//    carrying the API key in any header),
//    initialPolicies: {sandboxId: [host...]|null}, installs: [{sandbox, manager, argv}],
//    created: [{id, ...the create request body}], sandboxes: [{id, name, state}],
//    processes: [{pid (the command id), argv, state: running|exited|killed}]}
// where policies holds the sidecar's allowed hosts (sorted) after every PATCH or DELETE.
//
// Behaviour worth knowing: the first list call answers 503 once (the client must retry); a
// created sandbox is Pending until its first GET; deleted sandboxes stay listed as Terminated;
// execd answers events as bare JSON objects separated by blank lines, as execd does, with a ping
// event in between. Commands: tests/backends/osb-docker-commands.mjs; an install of a package
// slow-N takes N seconds first, unless DELETE /command?id= (execd's interruptCommand) ends it.
//
// Usage: node fake-opensandbox.mjs --port-file PATH --api-key-file PATH [--port N]
import { createServer } from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { listenLoopback, loggedRequest, longArgs, sendJson, strictJson } from './fake-http.mjs';
import { runArgv, shellSplit } from './osb-docker-commands.mjs';

const args = longArgs();
const API_KEY = readFileSync(args['api-key-file'], 'utf8').trim();
const EXECD_PORT = 44772;
const EGRESS_PORT = 18080;
const CREATE_KEYS = ['image', 'timeout', 'resourceLimits', 'env', 'metadata', 'entrypoint', 'networkPolicy',
	'volumes', 'extensions', 'platform', 'secureAccess', 'snapshotId', 'lifecycle'];
const COMMAND_KEYS = ['command', 'argv', 'cwd', 'background', 'timeout', 'uid', 'gid', 'envs'];

const log = { calls: [], violations: [], policies: {}, initialPolicies: {}, installs: [], created: [], processes: [], inside: { calls: 0, keySeen: 0 } };
// What upstream's proxy never forwards (RFC 7230 hop-by-hop, then its SENSITIVE_HEADERS).
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade'];
const NOT_FORWARDED = ['host', 'authorization', 'cookie'];
const sandboxes = new Map();
let port = 0;
let listCalls = 0;

const violation = (msg) => {
	log.violations.push(msg);
	process.stderr.write(`fake-opensandbox: violation: ${msg}\n`);
};
const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isStrMap = (v) => isObj(v) && Object.values(v).every((x) => typeof x === 'string');

const send = sendJson;

function fail(res, status, msg) {
	violation(msg);
	send(res, status, { code: 'FAKE_VIOLATION', message: msg });
}

function view(sb, full) {
	const v = {
		id: sb.id,
		status: { state: sb.state, reason: sb.state.toLowerCase(), message: `fake ${sb.state}` },
		metadata: sb.metadata,
		entrypoint: sb.entrypoint,
		createdAt: sb.createdAt,
		expiresAt: sb.expiresAt,
	};
	if (full) v.image = { uri: sb.image };
	return v;
}

function allowed(sb) {
	return sb.policy.egress.filter((r) => r.action === 'allow').map((r) => r.target).sort();
}

function validateRules(rules, where) {
	if (!Array.isArray(rules)) return `${where} must be an array`;
	for (const r of rules) {
		if (!isObj(r) || Object.keys(r).some((k) => k !== 'action' && k !== 'target')) return `${where}: rule with unknown keys`;
		if (r.action !== 'allow' && r.action !== 'deny') return `${where}: action must be allow or deny`;
		if (typeof r.target !== 'string' || !r.target || /[\s/:]/.test(r.target)) return `${where}: target must be a host`;
	}
	return null;
}

function checkCreate(body) {
	if (!isObj(body)) return 'body must be an object';
	for (const k of Object.keys(body)) if (!CREATE_KEYS.includes(k)) return `unknown field ${k}`;
	if (!isObj(body.image) || typeof body.image.uri !== 'string' || !body.image.uri) return 'image.uri required';
	if (!Array.isArray(body.entrypoint) || !body.entrypoint.length || !body.entrypoint.every((x) => typeof x === 'string')) return 'entrypoint must be a non-empty array of strings';
	if (!Number.isInteger(body.timeout) || body.timeout < 60 || body.timeout > 86400) return 'timeout must be an integer in 60..86400';
	if (!isStrMap(body.resourceLimits)) return 'resourceLimits must map names to strings';
	if (body.metadata !== undefined && !isStrMap(body.metadata)) return 'metadata must map names to strings';
	if (body.env !== undefined && !isStrMap(body.env)) return 'env must map names to strings';
	if (body.networkPolicy !== undefined) {
		const np = body.networkPolicy;
		if (!isObj(np) || Object.keys(np).some((k) => k !== 'defaultAction' && k !== 'egress')) return 'networkPolicy: unknown keys';
		if (np.defaultAction !== undefined && np.defaultAction !== 'allow' && np.defaultAction !== 'deny') return 'networkPolicy.defaultAction must be allow or deny';
		if (np.egress !== undefined) {
			const e = validateRules(np.egress, 'networkPolicy.egress');
			if (e) return e;
		}
	}
	return null;
}

// "k=v&k2=v2" (each part URL-encoded once more, per the spec's example)
function parseMetadataFilter(value) {
	const want = {};
	for (const part of value.split('&')) {
		if (!part) continue;
		const eq = part.indexOf('=');
		if (eq <= 0) return null;
		want[decodeURIComponent(part.slice(0, eq))] = decodeURIComponent(part.slice(eq + 1));
	}
	return want;
}

function apiKeyOk(req, res) {
	const got = req.headers['open-sandbox-api-key'];
	if (got !== API_KEY) {
		fail(res, 401, `${req.method} ${req.url.split('?')[0]}: ${got === undefined ? 'missing' : 'wrong'} OPEN-SANDBOX-API-KEY`);
		return false;
	}
	return true;
}

function lifecycle(req, res, url, text) {
	const parts = url.pathname.split('/').filter(Boolean); // v1 sandboxes [id [endpoints port]]
	if (!apiKeyOk(req, res)) return;
	if (parts.length === 2 && req.method === 'POST') {
		const body = strictJson(req, text, res, fail);
		if (body === undefined) return;
		const problem = checkCreate(body);
		if (problem) return fail(res, 400, `POST /v1/sandboxes: ${problem}`);
		const id = 'sbx-' + randomBytes(6).toString('hex');
		const np = body.networkPolicy;
		const sb = {
			id, image: body.image.uri, metadata: body.metadata || {}, entrypoint: body.entrypoint,
			state: 'Pending', createdAt: new Date().toISOString(),
			expiresAt: new Date(Date.now() + body.timeout * 1000).toISOString(),
			// no networkPolicy: no sidecar (allow-all)
			sidecar: np !== undefined && Object.keys(np).length > 0,
			policy: { defaultAction: np?.defaultAction || 'deny', egress: [...(np?.egress || [])] },
			execdToken: randomBytes(12).toString('hex'), egressToken: randomBytes(12).toString('hex'),
			dirs: new Set(['/', '/tmp']),
		};
		sandboxes.set(id, sb);
		log.created.push({ id, ...body });
		log.initialPolicies[id] = sb.sidecar ? allowed(sb) : null;
		return send(res, 202, view(sb, false));
	}
	if (parts.length === 2 && req.method === 'GET') {
		for (const k of url.searchParams.keys()) {
			if (!['state', 'metadata', 'page', 'pageSize'].includes(k)) return fail(res, 400, `GET /v1/sandboxes: unknown query parameter ${k}`);
		}
		if (listCalls++ === 0) return send(res, 503, { code: 'UNAVAILABLE', message: 'fake: first list call fails once' });
		const want = url.searchParams.has('metadata') ? parseMetadataFilter(url.searchParams.get('metadata')) : {};
		if (!want) return fail(res, 400, 'GET /v1/sandboxes: metadata filter is not key=value pairs');
		const states = url.searchParams.getAll('state');
		const items = [...sandboxes.values()]
			.filter((sb) => Object.entries(want).every(([k, v]) => sb.metadata[k] === v))
			.filter((sb) => !states.length || states.includes(sb.state))
			.map((sb) => view(sb, true));
		const pageSize = Number(url.searchParams.get('pageSize') || 20);
		const page = Number(url.searchParams.get('page') || 1);
		if (!Number.isInteger(page) || page < 1 || !Number.isInteger(pageSize) || pageSize < 1) return fail(res, 400, 'GET /v1/sandboxes: page and pageSize must be integers >= 1');
		return send(res, 200, {
			items: items.slice((page - 1) * pageSize, page * pageSize),
			pagination: { page, pageSize, totalItems: items.length, totalPages: Math.ceil(items.length / pageSize), hasNextPage: items.length > page * pageSize },
		});
	}
	const sb = sandboxes.get(decodeURIComponent(parts[2] || ''));
	if (parts.length === 3 && (req.method === 'GET' || req.method === 'DELETE')) {
		if (url.search) return fail(res, 400, `${req.method} /v1/sandboxes/{id}: unexpected query`);
		if (!sb || sb.state === 'Terminated') return send(res, 404, { code: 'NOT_FOUND', message: 'sandbox not found' });
		if (req.method === 'DELETE') {
			sb.state = 'Terminated';
			return send(res, 204);
		}
		const v = view(sb, true);
		if (sb.state === 'Pending') sb.state = 'Running'; // Running from the next poll on
		return send(res, 200, v);
	}
	if (parts.length === 5 && parts[3] === 'endpoints' && req.method === 'GET') {
		if (url.searchParams.get('use_server_proxy') !== 'true') violation(`GET endpoints without use_server_proxy=true`);
		if (!sb || sb.state === 'Terminated') return send(res, 404, { code: 'NOT_FOUND', message: 'sandbox not found' });
		if (sb.state !== 'Running') violation(`endpoint asked for sandbox ${sb.id} in state ${sb.state}`);
		const p = Number(parts[4]);
		if (p === EXECD_PORT) {
			return send(res, 200, { endpoint: `127.0.0.1:${port}/v1/sandboxes/${sb.id}/proxy/${EXECD_PORT}`, headers: { 'X-EXECD-ACCESS-TOKEN': sb.execdToken } });
		}
		if (p === EGRESS_PORT) {
			return send(res, 200, { endpoint: `127.0.0.1:${port}/v1/sandboxes/${sb.id}/proxy/${EGRESS_PORT}`, headers: { 'OPENSANDBOX-EGRESS-AUTH': sb.egressToken } });
		}
		return fail(res, 404, `endpoint for unexpected port ${parts[4]}`);
	}
	return fail(res, 404, `unknown lifecycle call ${req.method} ${url.pathname}`);
}

// The request as the proxy forwards it into sandbox SB's port PORT: the same method, URL and
// body, the headers upstream's proxy keeps. Counted and checked as what a listener inside sees.
function forwarded(req, sb, port) {
	const drop = new Set([...HOP_BY_HOP, ...NOT_FORWARDED,
		...(req.headers.connection || '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean)]);
	const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !drop.has(k.toLowerCase())));
	const carrying = Object.entries(headers).filter(([, v]) => String(v).includes(API_KEY)).map(([k]) => k);
	log.inside.calls++;
	if (carrying.length) {
		log.inside.keySeen++;
		violation(`${req.method} ${req.url.split('?')[0]}: the API key reached port ${port} inside sandbox ${sb.id} (header ${carrying.join(', ')})`);
	}
	return { method: req.method, url: req.url, headers };
}

async function execd(req, res, sb, rest, text, url) {
	if (req.headers['x-execd-access-token'] !== sb.execdToken) return fail(res, 401, `execd ${rest}: missing or wrong X-EXECD-ACCESS-TOKEN`);
	if (rest === '/command' && req.method === 'DELETE') {
		// interruptCommand: DELETE /command?id=ID
		const p = log.processes.find((c) => c.pid === url.searchParams.get('id'));
		if (!p) return fail(res, 404, `DELETE /command: no command ${url.searchParams.get('id')}`);
		if (p.state === 'running') p.killed = true;
		return send(res, 200, {});
	}
	if (rest !== '/command' || req.method !== 'POST') return fail(res, 404, `unknown execd call ${req.method} ${rest}`);
	const body = strictJson(req, text, res, fail);
	if (body === undefined) return;
	if (!isObj(body)) return fail(res, 400, 'POST /command: body must be an object');
	for (const k of Object.keys(body)) if (!COMMAND_KEYS.includes(k)) return fail(res, 400, `POST /command: unknown field ${k}`);
	if (typeof body.command !== 'string' || !body.command) return fail(res, 400, 'POST /command: command must be a non-empty string');
	if (body.cwd !== undefined && typeof body.cwd !== 'string') return fail(res, 400, 'POST /command: cwd must be a string');
	if (body.timeout !== undefined && (!Number.isInteger(body.timeout) || body.timeout < 1000)) return fail(res, 400, 'POST /command: timeout must be an integer number of milliseconds');
	if (body.envs !== undefined && !isStrMap(body.envs)) return fail(res, 400, 'POST /command: envs must map names to strings');
	if (body.background) return fail(res, 400, 'POST /command: background commands are not expected');
	if (sb.state !== 'Running') violation(`command sent to sandbox ${sb.id} in state ${sb.state}`);
	const split = shellSplit(body.command);
	res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
	const event = (e) => res.write(JSON.stringify({ ...e, timestamp: Date.now() }) + '\n\n');
	const proc = { pid: 'cmd-' + randomBytes(4).toString('hex'), argv: split.words || [], state: 'running', killed: false };
	log.processes.push(proc);
	event({ type: 'init', text: proc.pid });
	if (split.error) {
		violation(`POST /command: command line ${JSON.stringify(body.command)}: ${split.error}`);
		event({ type: 'error', error: { ename: 'CommandExecError', evalue: '2', traceback: [split.error] } });
		proc.state = 'exited';
		return res.end();
	}
	const cwd = body.cwd ?? '/';
	if (!sb.dirs.has(cwd)) {
		// what execd does when cmd.Start fails: an error whose evalue is a message
		event({ type: 'error', error: { ename: 'CommandExecError', evalue: `chdir ${cwd}: no such file or directory`, traceback: [] } });
		proc.state = 'exited';
		return res.end();
	}
	const slow = (split.words || []).map((w) => /^slow-(\d+)$/.exec(w)).find(Boolean);
	for (let t = 0; slow && t < Number(slow[1]) * 1000 && !proc.killed; t += 100) await new Promise((r) => setTimeout(r, 100));
	if (proc.killed) {
		proc.state = 'killed';
		return res.end();
	}
	proc.state = 'exited';
	const r = runArgv(split.words, {
		sandbox: sb.id, env: body.envs || {}, cwd, dirs: sb.dirs, installs: log.installs,
		allowed: sb.sidecar ? (h) => allowed(sb).includes(h) : null,
	});
	if (r.violation) violation(r.violation);
	r.out.forEach(([stream, t], i) => {
		event({ type: stream, text: t });
		if (i === 0) event({ type: 'ping', text: 'pong' });
	});
	if (r.exit) event({ type: 'error', error: { ename: 'CommandExecError', evalue: String(r.exit), traceback: [`exit status ${r.exit}`] } });
	else event({ type: 'execution_complete', execution_time: 1 });
	res.end();
}

function egress(req, res, sb, rest, text) {
	if (req.headers['opensandbox-egress-auth'] !== sb.egressToken) return fail(res, 401, `egress ${rest}: missing or wrong OPENSANDBOX-EGRESS-AUTH`);
	if (rest !== '/policy') return fail(res, 404, `unknown egress call ${req.method} ${rest}`);
	if (!sb.sidecar) {
		violation(`egress call to sandbox ${sb.id}, created without a network policy (no sidecar)`);
		return send(res, 502, { code: 'BAD_GATEWAY', message: 'no egress sidecar' });
	}
	const status = { status: 'ok', mode: sb.policy.defaultAction === 'deny' ? 'deny_all' : 'allow_all', enforcementMode: 'dns' };
	if (req.method === 'GET') return send(res, 200, { ...status, policy: { defaultAction: sb.policy.defaultAction, egress: sb.policy.egress } });
	const body = strictJson(req, text, res, fail);
	if (body === undefined) return;
	if (!Array.isArray(body) || !body.length) return fail(res, 400, `${req.method} /policy: body must be a non-empty array`);
	if (req.method === 'PATCH') {
		const problem = validateRules(body, 'PATCH /policy');
		if (problem) return fail(res, 400, problem);
		// merge: incoming rules first, the first of a target wins, existing ones of other targets stay
		const seen = new Set();
		const incoming = body.filter((r) => (seen.has(r.target) ? false : seen.add(r.target)));
		sb.policy.egress = [...incoming, ...sb.policy.egress.filter((r) => !seen.has(r.target))];
	} else if (req.method === 'DELETE') {
		if (!body.every((t) => typeof t === 'string' && t)) return fail(res, 400, 'DELETE /policy: items must be host strings');
		sb.policy.egress = sb.policy.egress.filter((r) => !body.includes(r.target));
	} else {
		return fail(res, 404, `unknown egress call ${req.method} /policy`);
	}
	(log.policies[sb.id] ||= []).push(allowed(sb));
	return send(res, 200, status);
}

const server = createServer(async (req, res) => {
	const { text, url } = await loggedRequest(req, res, log);
	if (req.method === 'GET' && url.pathname === '/__fake/log') {
		return send(res, 200, { ...log, sandboxes: [...sandboxes.values()].map((sb) => ({ id: sb.id, name: sb.metadata['terrarium.name'], state: sb.state })) });
	}
	const proxy = url.pathname.match(/^\/v1\/sandboxes\/([^/]+)\/proxy\/([0-9]+)(\/.*)?$/);
	if (proxy) {
		const sb = sandboxes.get(decodeURIComponent(proxy[1]));
		if (!sb || sb.state === 'Terminated') return fail(res, 404, `proxy call to unknown sandbox ${proxy[1]}`);
		// upstream's route needs no API key; execd and the sidecar see the forwarded request only
		if (Number(proxy[2]) === EXECD_PORT) return execd(forwarded(req, sb, EXECD_PORT), res, sb, proxy[3] || '/', text, url);
		if (Number(proxy[2]) === EGRESS_PORT) return egress(forwarded(req, sb, EGRESS_PORT), res, sb, proxy[3] || '/', text);
		return fail(res, 404, `proxy call to unexpected port ${proxy[2]}`);
	}
	if (url.pathname === '/v1/sandboxes' || url.pathname.startsWith('/v1/sandboxes/')) return lifecycle(req, res, url, text);
	return fail(res, 404, `unknown call ${req.method} ${url.pathname}`);
});

listenLoopback(server, { port: Number(args.port || 0), readyFile: args['port-file'] || '' }, (p) => {
	port = p;
});
