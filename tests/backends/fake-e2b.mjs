// Protocol fake of the E2B API and of envd, the daemon inside each sandbox (also used for
// CubeSandbox, which speaks the same protocol, at another port). Node 20, no dependencies.
//
//   node fake-e2b.mjs [--port N] [--key-file PATH | --key KEY] [--port-file PATH]
//                     [--create-delay-ms MS]
//
// --create-delay-ms: POST /sandboxes answers after MS milliseconds, and the sandbox exists
// (listed, deletable) only from then on: a slow create, as a VM's (tests/reconciler/run.sh
// deletes a session while its sandbox is being created).
//
// Listens on 127.0.0.1 (port 0: any); prints "listening PORT" and writes PORT to --port-file.
// One port serves both planes:
//   - the API (e2b-dev/E2B spec/openapi.yml), X-API-Key required:
//       GET  /v2/sandboxes?metadata=..&state=..&limit=..&nextToken=..   GET /sandboxes?metadata=..
//       POST /sandboxes                           GET /sandboxes/{id}
//       POST /sandboxes/{id}/connect              DELETE /sandboxes/{id}
//     Sandboxes answer "domain": "localhost:PORT", so the driver derives envd's address as
//     http://49983-<id>.localhost:PORT (sandbox/e2b.c explains the rule);
//   - envd, recognised by that Host header: Connect protocol, JSON messages
//     (e2b-dev/E2B spec/envd/process/process.proto):
//       POST /process.Process/Start        server streaming, enveloped messages
//       POST /process.Process/SendSignal   unary
//     The commands are interpreted by fake-argv.mjs, nothing runs.
// Every request is checked (method, path, headers, auth, body shape, sandbox state); each
// problem is recorded as a violation. Test hooks, outside both protocols:
//   GET  /__fake/log          {"violations": [...], "requests": [...], "sandboxes": [...],
//                              "processes": [{pid, argv, state: running|exited|killed}]}
//   POST /__fake/pause/{id}   pause a sandbox, as its timeout would with autoPause
//   POST /__fake/create-error {"message": M}: every later POST /sandboxes answers 400 with M
//                             (as a daemon refusing a create names a host path); "" ends it
import http from 'node:http';
import crypto from 'node:crypto';
import { run } from './fake-argv.mjs';
import { checkShape, crashed, fakeOptions, jsonBody, listenLoopback, readBody, sendJson } from './fake-http.mjs';

const ENVD_PORT = 49983;
const opts = fakeOptions('fake-e2b', { '--create-delay-ms': ['createDelayMs', '0'] });
let createError = '';

const sandboxes = new Map();   // id -> sandbox
const violations = [];
const requests = [];
const processes = new Map();   // pid -> {pid, argv, state, killed}
let port = 0;
let nextPid = 100;

function violation(req, what) {
  violations.push(`${req.method} ${req.url} (${req.headers.host}): ${what}`);
}

const send = sendJson;

function apiError(res, status, message) {
  send(res, status, { code: status, message });
}

function sandboxView(sb) {
  // Sandbox (POST /sandboxes, /connect)
  return {
    templateID: sb.templateID, sandboxID: sb.id, clientID: 'fake-client',
    envdVersion: '0.2.4', envdAccessToken: sb.secure ? sb.token : undefined,
    domain: `localhost:${port}`,
  };
}

function listedView(sb) {
  // ListedSandbox (GET /v2/sandboxes)
  return {
    templateID: sb.templateID, sandboxID: sb.id, clientID: 'fake-client',
    startedAt: sb.startedAt, endAt: sb.endAt, cpuCount: 2, memoryMB: 512, diskSizeMB: 1024,
    metadata: sb.metadata, state: sb.state, envdVersion: '0.2.4',
  };
}

// metadata query: "k=v&k2=v2", each key and value URL-encoded (the parameter itself was
// decoded once by URLSearchParams)
function parseMetadata(req, value) {
  const out = {};
  if (value === null) return out;
  for (const pair of value.split('&')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) {
      violation(req, `metadata filter '${value}' is not key=value pairs`);
      return null;
    }
    try {
      out[decodeURIComponent(pair.slice(0, eq))] = decodeURIComponent(pair.slice(eq + 1));
    } catch {
      violation(req, `metadata filter '${value}' is not URL-encoded`);
      return null;
    }
  }
  return out;
}

function matches(sb, meta) {
  return Object.entries(meta).every(([k, v]) => sb.metadata[k] === v);
}

async function api(req, res, url) {
  if (req.headers['x-api-key'] !== opts.key) {
    violation(req, req.headers['x-api-key'] ? 'wrong X-API-Key' : 'X-API-Key missing');
    return apiError(res, 401, 'Invalid API key');
  }
  if (req.headers.authorization) violation(req, 'Authorization header sent to the API');
  const path = url.pathname;
  let m;

  if (path === '/v2/sandboxes' || path === '/sandboxes') {
    if (req.method === 'GET') {
      const known = path === '/v2/sandboxes'
        ? ['metadata', 'state', 'limit', 'nextToken'] : ['metadata'];
      for (const k of url.searchParams.keys())
        if (!known.includes(k)) violation(req, `unknown query parameter '${k}'`);
      const meta = parseMetadata(req, url.searchParams.get('metadata'));
      if (meta === null) return apiError(res, 400, 'bad metadata');
      let states = ['running'];
      if (path === '/v2/sandboxes') {
        states = ['running', 'paused'];
        const st = url.searchParams.get('state');
        if (st !== null) {
          states = st.split(',');
          for (const s of states)
            if (s !== 'running' && s !== 'paused') violation(req, `unknown state '${s}'`);
        }
      }
      const list = [...sandboxes.values()].filter((sb) => states.includes(sb.state) &&
        matches(sb, meta));
      if (path === '/sandboxes') return send(res, 200, list.map(listedView));
      // pages: limit (1..100, default 100), nextToken = the X-Next-Token of the page before
      // (here an offset; opaque to clients)
      const limit = Number(url.searchParams.get('limit') ?? 100);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100) violation(req, `limit ${limit} is not 1..100`);
      const token = url.searchParams.get('nextToken');
      const from = token === null ? 0 : Number(token);
      if (token !== null && !/^[0-9]+$/.test(token)) violation(req, `nextToken '${token}' was never handed out`);
      const page = list.slice(from, from + limit);
      return send(res, 200, page.map(listedView),
        from + limit < list.length ? { 'X-Next-Token': String(from + limit) } : {});
    }
    if (req.method === 'POST' && path === '/sandboxes') {
      const b = await jsonBody(req, violation);
      if (!checkShape(violation, req, 'NewSandbox', b, {
        templateID: 'string', timeout: 'int', autoPause: 'boolean', secure: 'boolean',
        allow_internet_access: 'boolean', network: 'object', metadata: 'strmap',
        envVars: 'strmap', mcp: 'object',
      }, ['templateID'])) return apiError(res, 400, 'bad request');
      if (!b.templateID) violation(req, 'templateID is empty');
      if (createError) return apiError(res, 400, createError);
      if (Number(opts.createDelayMs) > 0)
        await new Promise((resolve) => setTimeout(resolve, Number(opts.createDelayMs)));
      const id = 'i' + crypto.randomBytes(9).toString('hex');
      const now = Date.now();
      const timeout = b.timeout ?? 15;
      const sb = {
        id, templateID: b.templateID, metadata: b.metadata || {}, state: 'running',
        token: crypto.randomBytes(16).toString('hex'), secure: b.secure ?? false,
        autoPause: !!b.autoPause, allowInternet: b.allow_internet_access ?? true,
        startedAt: new Date(now).toISOString(), endAt: new Date(now + timeout * 1000).toISOString(),
        installed: [],
      };
      sandboxes.set(id, sb);
      return send(res, 201, sandboxView(sb));
    }
    violation(req, 'method not allowed');
    return apiError(res, 405, 'method not allowed');
  }
  if ((m = /^\/sandboxes\/([^/]+)(\/connect)?$/.exec(path))) {
    const id = decodeURIComponent(m[1]);
    const sb = sandboxes.get(id);
    if (url.search) violation(req, `unexpected query '${url.search}'`);
    if (m[2]) {
      if (req.method !== 'POST') {
        violation(req, 'method not allowed');
        return apiError(res, 405, 'method not allowed');
      }
      const b = await jsonBody(req, violation);
      if (!checkShape(violation, req, 'ConnectSandbox', b, { timeout: 'int' }, ['timeout']))
        return apiError(res, 400, 'bad request');
      if (!sb) return apiError(res, 404, `sandbox ${id} not found`);
      const resumed = sb.state === 'paused';
      sb.state = 'running';
      sb.endAt = new Date(Math.max(Date.parse(sb.endAt), Date.now() + b.timeout * 1000))
        .toISOString();
      return send(res, resumed ? 201 : 200, sandboxView(sb));
    }
    if (req.method === 'GET') {
      if (!sb) return apiError(res, 404, `sandbox ${id} not found`);
      return send(res, 200, { ...listedView(sb), envdAccessToken: sb.token,
        domain: `localhost:${port}` });
    }
    if (req.method === 'DELETE') {
      if (!sb) return apiError(res, 404, `sandbox ${id} not found`);
      sandboxes.delete(id);
      res.writeHead(204);
      return res.end();
    }
    violation(req, 'method not allowed');
    return apiError(res, 405, 'method not allowed');
  }
  violation(req, 'no such API path');
  return apiError(res, 404, 'not found');
}

// One Connect envelope: flags, big-endian length, JSON.
function envelope(flags, obj) {
  const json = Buffer.from(JSON.stringify(obj));
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(json.length, 1);
  return Buffer.concat([head, json]);
}

function connectError(res, status, code, message) {
  send(res, status, { code, message });
}

async function envd(req, res, url, id) {
  const sb = sandboxes.get(id);
  const h = req.headers;
  if (!sb) {
    violation(req, `envd call for unknown sandbox ${id}`);
    res.writeHead(502);
    return res.end('sandbox not found');
  }
  if (sb.state !== 'running') {
    violation(req, `envd call while the sandbox is ${sb.state} (connect first)`);
    res.writeHead(502);
    return res.end('sandbox paused');
  }
  if (h['x-api-key']) violation(req, 'the API key was sent to envd (inside the sandbox)');
  if (h['e2b-sandbox-id'] !== id) violation(req, `E2b-Sandbox-Id '${h['e2b-sandbox-id']}' is not ${id}`);
  if (h['e2b-sandbox-port'] !== String(ENVD_PORT)) violation(req, 'E2b-Sandbox-Port is not 49983');
  if (sb.secure && h['x-access-token'] !== sb.token) {
    violation(req, 'X-Access-Token missing or wrong');
    return connectError(res, 401, 'unauthenticated', 'invalid access token');
  }
  if (h['connect-protocol-version'] !== '1') violation(req, 'Connect-Protocol-Version is not 1');
  const auth = /^Basic ([A-Za-z0-9+/=]+)$/.exec(h.authorization || '');
  const user = auth ? Buffer.from(auth[1], 'base64').toString('utf8') : null;
  if (h.authorization && !(user === 'root:' || user === 'user:'))
    violation(req, `Authorization is not Basic for a known user ('${h.authorization}')`);
  if (req.method !== 'POST') {
    violation(req, 'envd RPCs are POST');
    return connectError(res, 405, 'unimplemented', 'method not allowed');
  }
  const raw = await readBody(req);
  const ct = (h['content-type'] || '').split(';')[0].trim();

  if (url.pathname === '/process.Process/SendSignal') {
    if (ct !== 'application/json') violation(req, `unary Content-Type is '${ct}'`);
    let b;
    try {
      b = JSON.parse(raw.toString('utf8'));
    } catch {
      violation(req, 'SendSignalRequest is not JSON');
      return connectError(res, 400, 'invalid_argument', 'bad json');
    }
    if (checkShape(violation, req, 'SendSignalRequest', b, { process: 'object', signal: 'string' },
      ['process', 'signal'])) {
      checkShape(violation, req, 'ProcessSelector', b.process, { pid: 'int', tag: 'string' });
      if (!['SIGNAL_SIGKILL', 'SIGNAL_SIGTERM'].includes(b.signal))
        violation(req, `unknown signal '${b.signal}'`);
      const p = processes.get(b.process && b.process.pid);
      if (p && p.state === 'running') p.killed = true;
    }
    return send(res, 200, {});
  }
  if (url.pathname !== '/process.Process/Start') {
    violation(req, 'no such envd procedure');
    return connectError(res, 404, 'unimplemented', 'not found');
  }
  if (ct !== 'application/connect+json') {
    violation(req, `streaming Content-Type is '${ct}', not application/connect+json`);
    return connectError(res, 415, 'unknown', 'unsupported content type');
  }
  // exactly one enveloped message, uncompressed
  if (raw.length < 5 || raw[0] !== 0 || raw.readUInt32BE(1) !== raw.length - 5) {
    violation(req, 'request is not exactly one uncompressed Connect envelope');
    return connectError(res, 400, 'invalid_argument', 'bad envelope');
  }
  let msg;
  try {
    msg = JSON.parse(raw.subarray(5).toString('utf8'));
  } catch {
    violation(req, 'StartRequest is not JSON');
    return connectError(res, 400, 'invalid_argument', 'bad json');
  }
  if (!checkShape(violation, req, 'StartRequest', msg, { process: 'object', pty: 'object', tag: 'string',
    stdin: 'boolean' }, ['process']) ||
    !checkShape(violation, req, 'ProcessConfig', msg.process, { cmd: 'string', args: 'strarray',
      envs: 'strmap', cwd: 'string' }, ['cmd']))
    return connectError(res, 400, 'invalid_argument', 'bad request');
  if (!msg.process.cmd) violation(req, 'ProcessConfig.cmd is empty');
  if (msg.pty) violation(req, 'a PTY was asked for');
  let timeoutMs = 0;
  if (h['connect-timeout-ms'] !== undefined) {
    if (!/^[1-9][0-9]{0,9}$/.test(h['connect-timeout-ms']))
      violation(req, `Connect-Timeout-Ms '${h['connect-timeout-ms']}' is not 1-10 digits`);
    timeoutMs = Number(h['connect-timeout-ms']);
  }
  const argv = [msg.process.cmd, ...(msg.process.args || [])];
  const pid = nextPid++;
  const started = Date.now();
  const proc = { pid, argv, state: 'running', killed: false };
  processes.set(pid, proc);
  const resultP = run(argv, { env: msg.process.envs || {}, cwd: msg.process.cwd || '/home/user',
    timeoutMs, installed: sb.installed, proc }).then((r) => {
    proc.state = proc.killed ? 'killed' : 'exited';
    return r;
  });
  // a command still running after a moment has its start event sent, as envd does at once
  let result = await Promise.race([resultP, new Promise((r) => setTimeout(r, 200, null))]);
  res.writeHead(200, { 'Content-Type': 'application/connect+json' });
  if (result && result.notFound) {
    // envd answers a failed start with an error and no events (start.go: CodeInvalidArgument)
    res.end(envelope(2, { error: { code: 'invalid_argument',
      message: `exec: "${argv[0]}": executable file not found in $PATH` } }));
    return;
  }
  res.write(envelope(0, { event: { start: { pid } } }));
  if (!result) result = await resultP;
  for (let off = 0; off < result.out.length; off += 32768) {
    const chunk = result.out.subarray(off, off + 32768);
    // alternate stdout/stderr to exercise both
    const key = (off / 32768) % 2 ? 'stderr' : 'stdout';
    res.write(envelope(0, { event: { data: { [key]: chunk.toString('base64') } } }));
  }
  if (result.timedOut) {
    res.end(envelope(2, { error: { code: 'deadline_exceeded',
      message: `deadline exceeded after ${Date.now() - started} ms` } }));
    return;
  }
  res.write(envelope(0, { event: { keepalive: {} } }));
  // proto3 JSON leaves zero values out: exitCode 0 is absent
  const end = { exited: true, status: `exit status ${result.code}` };
  if (result.code) end.exitCode = result.code;
  res.write(envelope(0, { event: { end } }));
  res.end(envelope(2, {}));
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://fake');
  const host = (req.headers.host || '').toLowerCase();
  const entry = { method: req.method, path: url.pathname, host };
  requests.push(entry);
  res.on('finish', () => { entry.status = res.statusCode; });
  try {
    if (url.pathname === '/__fake/log' && req.method === 'GET')
      return send(res, 200, { violations, requests, processes: [...processes.values()],
        sandboxes: [...sandboxes.values()].map((sb) => ({ ...listedView(sb),
          autoPause: sb.autoPause, allowInternet: sb.allowInternet, installed: sb.installed })) });
    let m;
    if ((m = /^\/__fake\/pause\/([^/]+)$/.exec(url.pathname)) && req.method === 'POST') {
      const sb = sandboxes.get(m[1]);
      if (sb) sb.state = 'paused';
      return send(res, sb ? 200 : 404, {});
    }
    if (url.pathname === '/__fake/create-error' && req.method === 'POST') {
      const b = await jsonBody(req, violation);
      createError = typeof b?.message === 'string' ? b.message : '';
      return send(res, 200, {});
    }
    const envdHost = new RegExp(`^${ENVD_PORT}-([a-z0-9._-]+)\\.localhost(:\\d+)?$`).exec(host);
    if (envdHost) return await envd(req, res, url, envdHost[1]);
    if (host.startsWith(`${ENVD_PORT}-`)) {
      violation(req, `envd host '${host}' is not <port>-<id>.localhost`);
      res.writeHead(502);
      return res.end();
    }
    return await api(req, res, url);
  } catch (e) {
    crashed(violation, req, res, e, { code: 500, message: 'fake error' });
  }
});

listenLoopback(server, opts, (p) => { port = p; });
