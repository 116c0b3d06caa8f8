// Many streams held at once, then events delivered to them (tests/events/run.sh, the 1,000
// streams check; scripts/bench-streams.sh, the streams figures).
//   SESSIONS sessions (a new agent and cloud environment), WATCHERS streams on each, opened
//   OPEN_CONCURRENCY at a time on connections of their own (http.Agent without keep-alive);
//   once all answered 200 it prints "READY <streams>" on stdout and holds them HOLD_S seconds
//   (HOLD_S=-1: until SIGTERM or SIGINT, then it closes them and exits 0 without delivering);
//   then ROUNDS rounds of one event (user.define_outcome) sent to each session in turn. Each
//   delivery's latency: from the send's answer (the event has committed) to a watcher's receipt
//   of it (0 when the stream had it before the answer came); every watcher must get every event
//   of its session within DELIVER_MS.
// Prints one JSON line: {streams, opened, refused, open_ms, ended_early, sends, deliveries,
//   missed, foreign, problems, p50_ms, p99_ms, max_ms}; foreign: frames of another session's
//   events (or unknown ids), problems: frames not framed as docs/api.md §7 says.
// Environment: URL, KEY, SESSIONS (100), WATCHERS (10), HOLD_S (0), ROUNDS (1),
//   OPEN_CONCURRENCY (50), DELIVER_MS (10000).
import http from 'node:http';
import { request } from '../lib-http.mjs';
import { openStream } from './sse.mjs';

const { URL: BASE, KEY } = process.env;
const SESSIONS = Number(process.env.SESSIONS || 100);
const WATCHERS = Number(process.env.WATCHERS || 10);
const HOLD_S = Number(process.env.HOLD_S || 0);
const ROUNDS = Number(process.env.ROUNDS || 1);
const OPEN_CONCURRENCY = Number(process.env.OPEN_CONCURRENCY || 50);
const DELIVER_MS = Number(process.env.DELIVER_MS || 10000);
const REQUEST_TIMEOUT_MS = 30000;
if (!BASE || !KEY) throw new Error('URL and KEY must be set');

const api = async (method, path, body) => {
  const r = await request(BASE + path, { method, key: KEY, body, timeoutMs: REQUEST_TIMEOUT_MS });
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
};
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const quantile = (xs, q) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
};

const tag = `streams-${Date.now().toString(36)}`;
const agent = await api('POST', '/v1/agents', { name: tag, model: 'claude-sonnet-4-5' });
const env = await api('POST', '/v1/environments', { name: tag });
const sessions = [];
for (let i = 0; i < SESSIONS; i++) {
  sessions.push((await api('POST', '/v1/sessions', { agent: agent.id, environment_id: env.id })).id);
}

// ---- open ----
const httpAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const streams = [];
for (const s of sessions) for (let w = 0; w < WATCHERS; w++) streams.push({ session: s });
let refused = 0;
const t0 = performance.now();
for (let i = 0; i < streams.length; i += OPEN_CONCURRENCY) {
  await Promise.all(streams.slice(i, i + OPEN_CONCURRENCY).map(async (st) => {
    try {
      st.at = new Map(); // event id -> receipt time
      st.s = await openStream(`${BASE}/v1/sessions/${st.session}/events/stream`, KEY, {
        agent: httpAgent, onEvent: (f) => st.at.has(f.json.id) || st.at.set(f.json.id, f.at),
      });
      if (st.s.status !== 200) {
        refused++;
        process.stderr.write(`stream refused: ${st.s.status} ${st.s.body.slice(0, 200)}\n`);
      }
    } catch (e) {
      refused++;
      process.stderr.write(`stream failed: ${e.message}\n`);
    }
  }));
}
const openMs = Math.round(performance.now() - t0);
const opened = streams.filter((st) => st.s && st.s.status === 200);
process.stdout.write(`READY ${opened.length}\n`);

const closeAll = async () => {
  await Promise.all(streams.map((st) => st.s && st.s.close()));
  httpAgent.destroy();
};
if (HOLD_S < 0) {
  await new Promise((ok) => {
    process.once('SIGTERM', ok);
    process.once('SIGINT', ok);
  });
  await closeAll();
  process.exit(0);
}
await sleep(HOLD_S * 1000);
const endedEarly = opened.filter((st) => st.s.ended).length;

// ---- deliver ----
const latencies = [];
const expected = new Map(); // event id -> {session, answered}
let sends = 0;
for (let r = 0; r < ROUNDS; r++) {
  for (const s of sessions) {
    const a = await api('POST', `/v1/sessions/${s}/events`, {
      events: [{ type: 'user.define_outcome', description: `round ${r}`, rubric: { type: 'text', content: 'x' } }],
    });
    expected.set(a.data[0].id, { session: s, answered: performance.now() });
    sends++;
  }
}
const bySession = new Map(sessions.map((s) => [s, []]));
for (const [id, e] of expected) bySession.get(e.session).push(id);
const pending = () => opened.reduce((n, st) => n + bySession.get(st.session).filter((id) => !st.at.has(id)).length, 0);
const deadline = performance.now() + DELIVER_MS;
while (performance.now() < deadline && pending() > 0) await sleep(100);

let deliveries = 0, missed = 0, foreign = 0;
const problems = [];
for (const st of opened) {
  for (const id of bySession.get(st.session)) {
    if (!st.at.has(id)) {
      missed++;
      continue;
    }
    deliveries++;
    latencies.push(Math.max(0, st.at.get(id) - expected.get(id).answered));
  }
  for (const id of st.at.keys()) {
    const e = expected.get(id);
    if (!e || e.session !== st.session) foreign++;
  }
  problems.push(...st.s.problems);
}
await closeAll();
const ms = (x) => (x === null ? null : Math.round(x * 10) / 10);
console.log(JSON.stringify({
  streams: streams.length, opened: opened.length, refused, open_ms: openMs, ended_early: endedEarly,
  sends, deliveries, missed, foreign, problems: problems.slice(0, 5),
  p50_ms: ms(quantile(latencies, 0.5)), p99_ms: ms(quantile(latencies, 0.99)), max_ms: ms(quantile(latencies, 1)),
}));
