// What the HTTP protocol fakes (fake-*.mjs) share: command-line options, request bodies, JSON
// answers, and the shape checks that record violations. Node 20, no dependencies.
import fs from 'node:fs';

// Parse --port N, --key KEY, --key-file/--api-key-file PATH, --ready-file/--port-file PATH and
// the fake's own EXTRA options ({'--list-shape': ['listShape', 'array']}: name -> [field,
// default]). Exits 2 on an unknown option or a missing key (unless KEYOPTIONAL).
export function fakeOptions(name, extra = {}, { keyOptional = false } = {}) {
  const opts = { port: 0, key: '', readyFile: '' };
  for (const [field, def] of Object.values(extra)) opts[field] = def;
  for (let i = 2; i < process.argv.length; i++) {
    const a = process.argv[i];
    const v = process.argv[++i];
    if (a === '--port') opts.port = Number(v);
    else if (a === '--key') opts.key = v;
    else if (a === '--key-file' || a === '--api-key-file') opts.key = fs.readFileSync(v, 'utf8').trim();
    else if (a === '--ready-file' || a === '--port-file') opts.readyFile = v;
    else if (a in extra) opts[extra[a][0]] = v;
    else {
      console.error(`${name}: unknown option ${a}`);
      process.exit(2);
    }
  }
  if (!opts.key && !keyOptional) {
    console.error(`${name}: --key or --key-file is required`);
    process.exit(2);
  }
  return opts;
}

// Write PORT to FILE atomically: a waiter never reads it half written.
export function writePortFile(file, port) {
  fs.writeFileSync(`${file}.tmp`, `${port}\n`);
  fs.renameSync(`${file}.tmp`, file);
}

// Listen on 127.0.0.1:opts.port (0: a free port). Once bound: ONPORT(port), the port written to
// opts.readyFile when one is given, "listening PORT" on stdout. SIGTERM or SIGINT closes the
// server and exits 0.
export function listenLoopback(server, opts, onPort = () => {}) {
  server.listen(opts.port, '127.0.0.1', () => {
    const port = server.address().port;
    onPort(port);
    if (opts.readyFile) writePortFile(opts.readyFile, port);
    console.log(`listening ${port}`);
  });
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)));
}

// A request handler threw E: its stack goes to VIOLATION(req, what); the answer is a 500 with
// ERROR_BODY, or only ended when it had begun.
export function crashed(violation, req, res, e, errorBody) {
  violation(req, `fake crashed: ${e.stack}`);
  if (!res.headersSent) sendJson(res, 500, errorBody);
  else res.end();
}

// What the Docker and OpenSandbox fakes do first with a request: read its body as text and its
// URL; once answered, the call goes to LOG.calls as {method, path, status} (but GET
// /__fake/log, the log's own reads). -> {text, url}
export async function loggedRequest(req, res, log) {
  const text = (await readBody(req)).toString('utf8');
  const url = new URL(req.url, 'http://fake');
  res.on('finish', () => {
    if (url.pathname !== '/__fake/log') log.calls.push({ method: req.method, path: url.pathname, status: res.statusCode });
  });
  return { text, url };
}

export function readBody(req) { // -> Buffer
  return new Promise((resolve) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

// Answer STATUS with BODY as JSON (no body and no content type when BODY is undefined).
export function sendJson(res, status, body, headers = {}) {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { ...(text ? { 'content-type': 'application/json' } : {}), ...headers });
  res.end(text);
}

// The request's body as JSON; a content type other than application/json or a body that is not
// JSON is reported through VIOLATION(req, what) (undefined is returned for the latter).
export async function jsonBody(req, violation) {
  const raw = await readBody(req);
  const ct = (req.headers['content-type'] || '').split(';')[0].trim();
  if (ct !== 'application/json') violation(req, `Content-Type is '${ct}', not application/json`);
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    violation(req, 'body is not JSON');
    return undefined;
  }
}

const isObj = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const TYPES = {
  int: (v) => Number.isInteger(v) && v >= 0,
  strmap: (v) => isObj(v) && Object.values(v).every((x) => typeof x === 'string'),
  strarray: (v) => Array.isArray(v) && v.every((x) => typeof x === 'string'),
  array: (v) => Array.isArray(v),
  object: isObj,
};

// Check OBJ's keys against ALLOWED {key: type} (a typeof name, or one of TYPES); REQUIRED keys
// must be there. Each problem goes to VIOLATION(req, what); true when there was none.
export function checkShape(violation, req, where, obj, allowed, required = []) {
  if (!isObj(obj)) {
    violation(req, `${where} is not a JSON object`);
    return false;
  }
  let ok = true;
  for (const k of Object.keys(obj)) {
    if (!(k in allowed)) {
      violation(req, `${where}: unknown field '${k}'`);
      ok = false;
      continue;
    }
    const t = allowed[k];
    if (!(TYPES[t] ? TYPES[t](obj[k]) : typeof obj[k] === t)) {
      violation(req, `${where}: field '${k}' must be ${t}`);
      ok = false;
    }
  }
  for (const k of required) {
    if (!(k in obj)) {
      violation(req, `${where}: required field '${k}' is missing`);
      ok = false;
    }
  }
  return ok;
}

// The strict body check of the Docker and OpenSandbox fakes: TEXT must be JSON sent as
// application/json, else FAIL(res, 400, message) answers and undefined is returned.
export function strictJson(req, text, res, fail) {
  if (!(req.headers['content-type'] || '').startsWith('application/json')) {
    fail(res, 400, `${req.method} ${req.url}: body without content-type application/json`);
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    fail(res, 400, `${req.method} ${req.url}: body is not JSON`);
    return undefined;
  }
}

// --name value pairs of the command line, as {name: value}
export function longArgs() {
  return Object.fromEntries(process.argv.slice(2).reduce(
    (acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
}
