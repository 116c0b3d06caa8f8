// A bounded load generator for the fault tests: CONCURRENCY loops for SECONDS, each request on
// a keep-alive connection, every outcome recorded.
//   node load.mjs create URL KEY SECONDS CONCURRENCY OUT.json TAG
//     POST /v1/environments named TAG-<n>; OUT lists {name, status, id, at, retry, type} per
//     request (retry: the x-should-retry header; type: the error type of a JSON error)
//   node load.mjs keyed URL KEY SECONDS CONCURRENCY OUT.json TAG
//     POST /v1/environments named TAG-<n> with Idempotency-Key TAG-<n>, each retried with the
//     same key as the SDK retries (connection error, 408, 409, 429, 5xx) until it answers
//     otherwise or RETRY_SECONDS pass; OUT lists {name, status, id, attempts, replayed}
//   node load.mjs randkey URL - SECONDS CONCURRENCY OUT.json PATH
//     GET PATH, each request with a new random key; OUT lists {status}
//   node load.mjs get URL KEY SECONDS CONCURRENCY OUT.json PATH
//     GET PATH; OUT lists {at (epoch ms when it ended), status, ms, retry, retryAfter, type}
import fs from 'node:fs';
import http from 'node:http';
import { request as apiRequest } from '../lib-http.mjs';

const [mode, base, key, seconds, concurrency, out, arg] = process.argv.slice(2);
const REQUEST_TIMEOUT_MS = 40000; // longer than nginx's 30 s: a hang shows as a client timeout
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(concurrency) });

const RETRY_SECONDS = 30; // longer than a request may take: a key still refused then is stuck
const RETRY_PAUSE_MS = 100;
const sdkRetries = (status) => status === 0 || status === 408 || status === 409 || status === 429 || status >= 500;

// Every outcome is a result: a connection error or a timeout is status 0 with its message.
function request(method, path, body, extra = {}) {
  const started = Date.now();
  return apiRequest(base + path, { method, key, body, headers: extra, agent, timeoutMs: REQUEST_TIMEOUT_MS })
    .catch((e) => ({ status: 0, ms: Date.now() - started, error: e.message }));
}

const start = Date.now();
const deadline = start + Number(seconds) * 1000;
const results = [];
let n = 0;

async function loop() {
  while (Date.now() < deadline) {
    if (mode === 'keyed') {
      const name = `${arg}-${n++}`;
      const giveUp = Date.now() + RETRY_SECONDS * 1000;
      let r, attempts = 0;
      for (;;) {
        attempts++;
        r = await request('POST', '/v1/environments', { name }, { 'idempotency-key': name });
        if (!sdkRetries(r.status) || Date.now() > giveUp) break;
        await new Promise((ok) => setTimeout(ok, RETRY_PAUSE_MS));
      }
      results.push({
        name, status: r.status, id: r.json && r.json.id, attempts,
        replayed: !!(r.headers && r.headers['idempotent-replayed']),
      });
    } else if (mode === 'randkey') {
      const r = await request('GET', arg, undefined, { 'x-api-key': `trm_${Math.random().toString(36).slice(2)}${n++}` });
      results.push({ status: r.status });
    } else if (mode === 'create') {
      const name = `${arg}-${n++}`;
      const r = await request('POST', '/v1/environments', { name });
      results.push({
        name, status: r.status, id: r.json && r.json.id, error: r.error, at: Date.now(),
        retry: r.headers && r.headers['x-should-retry'],
        type: r.json && r.json.error && r.json.error.type,
      });
    } else {
      const r = await request('GET', arg);
      results.push({
        at: Date.now(), status: r.status, ms: r.ms,
        retry: r.headers && r.headers['x-should-retry'],
        retryAfter: r.headers && r.headers['retry-after'],
        type: r.json && r.json.error && r.json.error.type,
        error: r.error,
      });
      if (r.status !== 200) await new Promise((ok) => setTimeout(ok, 20));
    }
  }
}
await Promise.all(Array.from({ length: Number(concurrency) }, loop));
agent.destroy();
fs.writeFileSync(out, JSON.stringify(results));
console.log(`${mode}: ${results.length} requests in ${seconds}s`);
