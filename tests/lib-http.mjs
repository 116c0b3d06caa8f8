// lib-http.mjs: one request to the API over node:http, for the test scripts that drive it without
// the SDK (tests/faults/load.mjs, tests/race/race.mjs).
import http from 'node:http';

// request(url, {method, key, body, headers, agent, timeoutMs}): METHOD url with `x-api-key: key`,
// the version and beta headers, then `headers` (which win), and `body` as JSON when given.
// Resolves to {status, ms, json, text, headers} once the answer is read (json: null when the
// body is not JSON); rejects on a connection error, or when no answer came in timeoutMs.
export function request(url, { method = 'GET', key, body, headers = {}, agent, timeoutMs } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const started = Date.now();
    const req = http.request(url, {
      method,
      agent,
      timeout: timeoutMs,
      headers: {
        'x-api-key': key,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'managed-agents-2026-04-01',
        ...headers,
        ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON: the caller sees json === null */ }
        resolve({ status: res.statusCode, ms: Date.now() - started, json, text, headers: res.headers });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out`)));
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}
