// Protocol fake of Daytona's sandbox API and toolbox execute call. Node 20, no dependencies.
//
//   node fake-daytona.mjs [--port N] [--key-file PATH | --key KEY] [--port-file PATH]
//                         [--list-shape array|items] [--exit-field exitCode|code]
//
// Listens on 127.0.0.1 (port 0: any); prints "listening PORT" and writes PORT to --port-file.
// The driver's [daytona] url is http://127.0.0.1:PORT/api. Calls, each with
// "Authorization: Bearer KEY" (daytonaio/daytona apps/api/src/sandbox/controllers/
// sandbox.controller.ts, toolbox.deprecated.controller.ts, dto/*.ts):
//   GET    /api/sandbox?labels=<JSON>     Sandbox[] (--list-shape items: {items: Sandbox[]},
//                                        the page newer servers answer)
//   POST   /api/sandbox                   CreateSandbox -> 200 Sandbox, state "starting"
//                                        (started after the first GET: the driver must wait)
//   GET    /api/sandbox/{id}              Sandbox, 404 when missing
//   POST   /api/sandbox/{id}/start        only for a stopped or archived sandbox
//   DELETE /api/sandbox/{id}              200, 404 when missing
//   GET    /api/sandbox/{id}/toolbox-proxy-url
//                                        {url: "http://127.0.0.1:PORT/toolbox"}: the toolbox
//                                        proxy (apps/proxy), served by this fake too
//   GET    /api/sandbox/{id}/ports/{port}/preview-url
//                                        {sandboxId, url, token}: the sandbox's own token
//   POST   /api/toolbox/{id}/toolbox/process/execute
//                                        the API's own toolbox route (deprecated), which
//                                        passes every header through the runner to the
//                                        daemon, Authorization included
// and on the toolbox proxy, with "X-Daytona-Preview-Token: TOKEN" (the sandbox's) or the bearer,
// which the proxy checks and removes (apps/proxy/pkg/proxy/auth.go), passing the rest on:
//   POST   /toolbox/{id}/process/execute  the same execute
// Execute: ExecuteRequest {command, cwd?, timeout?} -> 200 {exitCode, result} (--exit-field
// code: the older daemons' {code, result}); 408 past the timeout. The daemon listens inside the
// sandbox: the API key among the headers it receives is a violation (the key opens every
// sandbox of the organization), the log's inside {calls, keySeen} counts what it received.
// The command string is split exactly as the daemon splits it (apps/daemon/pkg/toolbox/process/
// execute/execute.go parseCommand: no shell) and interpreted by fake-argv.mjs; nothing runs.
// Every request is checked (method, path, auth, body shape, sandbox state) and each problem
// recorded as a violation. Test hooks, outside the protocol:
//   GET  /__fake/log         {"violations": [...], "requests": [...], "sandboxes": [...],
//                             "inside": {calls, keySeen}}
//   POST /__fake/stop/{id}   stop a sandbox, as its auto-stop interval would
import http from 'node:http';
import crypto from 'node:crypto';
import { run } from './fake-argv.mjs';
import { checkShape, crashed, fakeOptions, jsonBody, listenLoopback, sendJson } from './fake-http.mjs';

const opts = fakeOptions('fake-daytona', {
  '--list-shape': ['listShape', 'array'],
  '--exit-field': ['exitField', 'exitCode'],
});

const sandboxes = new Map();
const violations = [];
const requests = [];
const inside = { calls: 0, keySeen: 0 };
const TOOLBOX_PORT = 2280;
const TOKEN_HEADER = 'x-daytona-preview-token';
let port = 0;

function violation(req, what) {
  violations.push(`${req.method} ${req.url}: ${what}`);
}

const send = sendJson;

// NestJS's error body
function nestError(res, status, message) {
  const error = { 400: 'Bad Request', 401: 'Unauthorized', 404: 'Not Found', 405: 'Method Not Allowed',
    408: 'Request Timeout' }[status] || 'Error';
  send(res, status, { statusCode: status, message, error });
}

function view(sb) {
  // Sandbox (dto/sandbox.dto.ts)
  return {
    id: sb.id, organizationId: 'fake-org', snapshot: sb.snapshot, user: 'daytona', env: {},
    labels: sb.labels, public: false, target: 'us', cpu: 1, gpu: 0, memory: 1, disk: 3,
    state: sb.state, errorReason: undefined, autoStopInterval: 15, autoArchiveInterval: 10080,
    autoDeleteInterval: -1, createdAt: sb.createdAt, updatedAt: new Date().toISOString(),
    daemonVersion: '0.1.0',
  };
}

// parseCommand of the daemon: ' and " toggle quoting, only ' ' separates, no escapes, empty
// tokens dropped
function parseCommand(command) {
  const args = [];
  let cur = '';
  let quote = '';
  for (const r of command) {
    if (r === '"' || r === "'") {
      if (!quote) quote = r;
      else if (quote === r) quote = '';
      else cur += r;
    } else if (r === ' ' && !quote) {
      if (cur.length) {
        args.push(cur);
        cur = '';
      }
    } else {
      cur += r;
    }
  }
  if (cur.length) args.push(cur);
  return args;
}

// What the daemon inside sandbox ID receives: HEADERS (as forwarded to it); counted, and the API
// key among them is a violation.
function daemonSees(req, headers) {
  inside.calls++;
  const carrying = Object.entries(headers).filter(([, v]) => String(v).includes(opts.key)).map(([k]) => k);
  if (carrying.length) {
    inside.keySeen++;
    violation(req, `the API key reached the daemon inside the sandbox (header ${carrying.join(', ')})`);
  }
}

// The daemon's POST /process/execute for sandbox ID, reached with HEADERS.
async function execute(req, res, id, headers) {
  const sb = sandboxes.get(id);
  if (req.method !== 'POST') {
    violation(req, 'method not allowed');
    return nestError(res, 405, 'method not allowed');
  }
  const b = await jsonBody(req, violation);
  if (!checkShape(violation, req, 'ExecuteRequest', b, { command: 'string', cwd: 'string',
    timeout: 'int' }, ['command'])) return nestError(res, 400, 'bad request');
  if (!sb || sb.state === 'destroyed') return nestError(res, 404, `Sandbox with ID ${id} not found`);
  if (sb.state !== 'started') {
    violation(req, `execute while the sandbox is ${sb.state} (wait for started)`);
    return nestError(res, 400, 'Sandbox is not running');
  }
  daemonSees(req, headers);
  if (b.timeout === undefined) violation(req, 'no timeout: the daemon would use 10 seconds');
  const argv = parseCommand(b.command);
  if (!argv.length) return nestError(res, 400, 'empty command');
  const result = await run(argv, { env: {}, cwd: b.cwd || '/home/daytona',
    timeoutMs: (b.timeout || 0) * 1000, installed: sb.installed });
  if (result.timedOut)
    return nestError(res, 408, `Command execution timed out after ${b.timeout} seconds.`);
  if (result.notFound)
    return send(res, 200, { [opts.exitField]: -1,
      result: `exec: "${argv[0]}": executable file not found in $PATH` });
  return send(res, 200, { [opts.exitField]: result.code, result: result.out.toString('utf8') });
}

// The toolbox proxy (apps/proxy): /toolbox/{id}/{daemon path}, authenticated by the bearer or
// the sandbox's token, each removed once checked; the rest is passed on to the daemon.
async function toolboxProxy(req, res, url) {
  const m = /^\/toolbox\/([^/]+)(\/.*)$/.exec(url.pathname);
  const sb = m && sandboxes.get(decodeURIComponent(m[1]));
  const headers = { ...req.headers };
  if (!m) {
    violation(req, 'no such path');
    return nestError(res, 404, 'not found');
  }
  if (headers.authorization === `Bearer ${opts.key}`) {
    // the proxy removes it once checked, but only since daytonaio/daytona#4419: older ones
    // passed it on to the daemon
    violation(req, 'the API key sent to the toolbox proxy (older proxies pass it into the sandbox)');
    delete headers.authorization;
  } else if (sb && headers[TOKEN_HEADER] === sb.token) delete headers[TOKEN_HEADER];
  else {
    violation(req, 'toolbox proxy: neither the sandbox token nor the API key');
    return nestError(res, 401, 'Unauthorized');
  }
  if (m[2] !== '/process/execute') {
    violation(req, `toolbox path ${m[2]}`);
    return nestError(res, 404, 'not found');
  }
  return execute(req, res, decodeURIComponent(m[1]), headers);
}

async function handle(req, res, url) {
  if (url.pathname.startsWith('/toolbox/')) return toolboxProxy(req, res, url);
  const auth = req.headers.authorization || '';
  if (auth !== `Bearer ${opts.key}`) {
    violation(req, auth ? 'wrong Authorization' : 'Authorization missing');
    return nestError(res, 401, 'Unauthorized');
  }
  if (req.headers['x-api-key']) violation(req, 'X-API-Key sent to Daytona');
  const path = url.pathname;
  let m;

  if (path === '/api/sandbox') {
    if (req.method === 'GET') {
      for (const k of url.searchParams.keys())
        if (!['labels', 'verbose', 'includeErroredDeleted'].includes(k))
          violation(req, `unknown query parameter '${k}'`);
      let labels = {};
      const q = url.searchParams.get('labels');
      if (q !== null) {
        try {
          labels = JSON.parse(q);
        } catch {
          violation(req, `labels '${q}' is not JSON`);
          return nestError(res, 400, 'bad labels');
        }
        checkShape(violation, req, 'labels', labels, Object.fromEntries(Object.keys(labels || {})
          .map((k) => [k, 'string'])));
      }
      const list = [...sandboxes.values()].filter((sb) =>
        !['destroyed', 'error', 'build_failed'].includes(sb.state) &&
        Object.entries(labels).every(([k, v]) => sb.labels[k] === v)).map(view);
      return send(res, 200, opts.listShape === 'items'
        ? { items: list, total: list.length, page: 1, totalPages: 1 } : list);
    }
    if (req.method === 'POST') {
      const b = await jsonBody(req, violation);
      if (!checkShape(violation, req, 'CreateSandbox', b, {
        snapshot: 'string', user: 'string', env: 'strmap', labels: 'strmap', public: 'boolean',
        class: 'string', target: 'string', cpu: 'int', gpu: 'int', memory: 'int', disk: 'int',
        autoStopInterval: 'int', autoArchiveInterval: 'int', autoDeleteInterval: 'number',
        volumes: 'array', buildInfo: 'object', networkBlockAll: 'boolean',
        networkAllowList: 'string',
      })) return nestError(res, 400, 'bad request');
      const id = crypto.randomUUID();
      const sb = { id, snapshot: b.snapshot || 'daytonaio/sandbox:latest', labels: b.labels || {},
        state: 'starting', networkBlockAll: !!b.networkBlockAll, createdAt: new Date().toISOString(),
        installed: [], token: crypto.randomBytes(12).toString('hex') };
      sandboxes.set(id, sb);
      return send(res, 200, view(sb));
    }
    violation(req, 'method not allowed');
    return nestError(res, 405, 'method not allowed');
  }
  if ((m = /^\/api\/sandbox\/([^/]+)(\/start)?$/.exec(path))) {
    const id = decodeURIComponent(m[1]);
    const sb = sandboxes.get(id);
    const live = sb && sb.state !== 'destroyed';
    if (m[2]) {
      if (req.method !== 'POST') {
        violation(req, 'method not allowed');
        return nestError(res, 405, 'method not allowed');
      }
      if (!live) return nestError(res, 404, `Sandbox with ID ${id} not found`);
      if (!['stopped', 'archived'].includes(sb.state)) {
        violation(req, `start of a sandbox that is ${sb.state}`);
        return nestError(res, 400, 'Sandbox is not in valid state');
      }
      sb.state = 'starting';
      return send(res, 200, view(sb));
    }
    if (req.method === 'GET') {
      if (!live) return nestError(res, 404, `Sandbox with ID ${id} not found`);
      const v = view(sb);
      if (sb.state === 'starting') sb.state = 'started'; // started by the next look
      return send(res, 200, v);
    }
    if (req.method === 'DELETE') {
      if (!live) return nestError(res, 404, `Sandbox with ID ${id} not found`);
      sb.state = 'destroyed';
      return send(res, 200);
    }
    violation(req, 'method not allowed');
    return nestError(res, 405, 'method not allowed');
  }
  if ((m = /^\/api\/sandbox\/([^/]+)\/toolbox-proxy-url$/.exec(path)) && req.method === 'GET') {
    const sb = sandboxes.get(decodeURIComponent(m[1]));
    if (!sb || sb.state === 'destroyed') return nestError(res, 404, `Sandbox with ID ${m[1]} not found`);
    return send(res, 200, { url: `http://127.0.0.1:${port}/toolbox` });
  }
  if ((m = /^\/api\/sandbox\/([^/]+)\/ports\/([0-9]+)\/preview-url$/.exec(path)) && req.method === 'GET') {
    const sb = sandboxes.get(decodeURIComponent(m[1]));
    if (!sb || sb.state === 'destroyed') return nestError(res, 404, `Sandbox with ID ${m[1]} not found`);
    if (Number(m[2]) !== TOOLBOX_PORT) violation(req, `preview URL of port ${m[2]}, not the toolbox's`);
    return send(res, 200, { sandboxId: sb.id, url: `http://${m[2]}-${sb.id}.proxy.localhost:${port}`, token: sb.token });
  }
  if ((m = /^\/api\/toolbox\/([^/]+)\/toolbox\/process\/execute$/.exec(path))) {
    // the API, then the runner, pass every header on (the runner removes only its own
    // X-Daytona-Authorization)
    return execute(req, res, decodeURIComponent(m[1]), { ...req.headers });
  }
  violation(req, 'no such path');
  return nestError(res, 404, 'not found');
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://fake');
  const entry = { method: req.method, path: url.pathname };
  requests.push(entry);
  res.on('finish', () => { entry.status = res.statusCode; });
  try {
    if (url.pathname === '/__fake/log' && req.method === 'GET')
      return send(res, 200, { violations, requests, inside, sandboxes: [...sandboxes.values()]
        .map((sb) => ({ ...view(sb), networkBlockAll: sb.networkBlockAll, installed: sb.installed })) });
    let m;
    if ((m = /^\/__fake\/stop\/([^/]+)$/.exec(url.pathname)) && req.method === 'POST') {
      const sb = sandboxes.get(m[1]);
      if (sb && sb.state !== 'destroyed') sb.state = 'stopped';
      return send(res, sb ? 200 : 404, {});
    }
    return await handle(req, res, url);
  } catch (e) {
    crashed(violation, req, res, e, { statusCode: 500, message: 'fake error' });
  }
});

listenLoopback(server, opts, (p) => { port = p; });
