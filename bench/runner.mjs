// The client side of scripts/bench-runner.sh: sessions driven through the API while their
// streams are watched, against the fake model (tests/fake-model/fake-model.mjs). Every session has
// its stream open (nginx's nchan) from its start; a turn is over when its session.status_idle
// frame came.
//   MODE=status  SAMPLES user.messages, one at a time, round robin over SESSIONS sessions (the
//                agent has no tools; the fake answers with a short text): for each, the time from
//                just before the send to the receipt of the session.status_running frame it
//                caused, and the send's own answer time; the next is sent once the turn is idle.
//                Prints {samples, missed, p50_ms, p99_ms, max_ms, send_p50_ms, send_p99_ms,
//                sessions}.
//   MODE=turns   SESSIONS sessions of an agent with the toolset (every tool always_allow). With
//                WARM=1 each first runs a turn "run: true" (the fake's default rule: one bash
//                call; it provisions the session's sandbox). Then each session's next requests
//                get the fake's scripted STEPS (a JSON array of steps, matched by a token unique
//                to the session, which its user.message carries) and the sessions run one turn
//                each: all at once (CONCURRENT=1) or one after another. Prints {sessions,
//                tokens, wall_ms, done, missed, errors}: wall_ms from the first send to the last
//                idle frame; errors: turns whose idle frame's stop reason was not end_turn.
// Environment: URL, KEY, FAKE (the fake model's base URL), MODE, SESSIONS, SAMPLES, STEPS,
//   WARM, CONCURRENT, ENV_CONFIG (the environment's config JSON, default cloud), WAIT_MS (a
//   turn's limit, default 60000).
import http from 'node:http';
import { request } from '../tests/lib-http.mjs';
import { openStream } from '../tests/events/sse.mjs';

const { URL: BASE, KEY, FAKE, MODE } = process.env;
const SESSIONS = Number(process.env.SESSIONS || 10);
const SAMPLES = Number(process.env.SAMPLES || 200);
const WAIT_MS = Number(process.env.WAIT_MS || 60000);
const REQUEST_TIMEOUT_MS = 30000;
const OPEN_CONCURRENCY = 50;
if (!BASE || !KEY || !FAKE || !MODE) throw new Error('URL, KEY, FAKE and MODE must be set');

const api = async (method, path, body) => {
  const r = await request(BASE + path, { method, key: KEY, body, timeoutMs: REQUEST_TIMEOUT_MS });
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
};
const fake = async (path, body) => {
  const r = await fetch(FAKE + path, { method: 'POST', body: JSON.stringify(body) });
  if (r.status !== 200) throw new Error(`fake ${path}: ${r.status} ${await r.text()}`);
};
const quantile = (xs, q) => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)];
};
const ms = (x) => (x === null ? null : Math.round(x * 100) / 100);
const message = (text) => ({ events: [{ type: 'user.message', content: [{ type: 'text', text }] }] });

const tag = `bench-runner-${Date.now().toString(36)}`;
const tools = MODE === 'turns'
  ? [{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'always_allow' } } }]
  : [];
const agent = await api('POST', '/v1/agents', { name: tag, model: 'claude-sonnet-4-5', tools });
const envConfig = process.env.ENV_CONFIG ? JSON.parse(process.env.ENV_CONFIG) : undefined;
const env = await api('POST', '/v1/environments', { name: tag, ...(envConfig ? { config: envConfig } : {}) });

// A session with its stream open: frames counted by type, waiters woken by each frame.
const httpAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
async function watched() {
  const s = { id: (await api('POST', '/v1/sessions', { agent: agent.id, environment_id: env.id })).id };
  s.frames = [];
  s.waiters = [];
  s.stream = await openStream(`${BASE}/v1/sessions/${s.id}/events/stream`, KEY, {
    agent: httpAgent,
    onEvent: (f) => {
      s.frames.push(f);
      for (const w of s.waiters.splice(0)) w();
    },
  });
  if (s.stream.status !== 200) throw new Error(`stream ${s.id}: ${s.stream.status} ${s.stream.body}`);
  return s;
}
const count = (s, type) => s.frames.filter((f) => f.type === type).length;
// The N-th (from 1) frame of TYPE on S, or null when none came within WAIT_MS.
function nth(s, type, n) {
  return new Promise((resolve) => {
    let timer = null;
    const look = () => {
      const f = s.frames.filter((x) => x.type === type)[n - 1];
      if (!f) return s.waiters.push(look);
      clearTimeout(timer);
      resolve(f);
    };
    timer = setTimeout(() => {
      s.waiters = s.waiters.filter((w) => w !== look);
      resolve(null);
    }, WAIT_MS);
    look();
  });
}

const sessions = [];
for (let i = 0; i < SESSIONS; i += OPEN_CONCURRENCY) {
  sessions.push(...await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, SESSIONS - i) }, watched)));
}
const closeAll = async () => {
  await Promise.all(sessions.map((s) => s.stream.close()));
  httpAgent.destroy();
};

// One turn of S started by TEXT: resolves to its idle frame (null: none within WAIT_MS).
async function turn(s, text) {
  const idle = count(s, 'session.status_idle');
  await api('POST', `/v1/sessions/${s.id}/events`, message(text));
  return nth(s, 'session.status_idle', idle + 1);
}

if (MODE === 'status') {
  const lat = [], send = [];
  let missed = 0;
  for (let i = 0; i < SAMPLES; i++) {
    const s = sessions[i % sessions.length];
    const running = count(s, 'session.status_running'), idle = count(s, 'session.status_idle');
    const t0 = performance.now();
    await api('POST', `/v1/sessions/${s.id}/events`, message(`${tag} status ${i}`));
    send.push(performance.now() - t0);
    const f = await nth(s, 'session.status_running', running + 1);
    if (f) lat.push(f.at - t0);
    else missed++;
    if (!(await nth(s, 'session.status_idle', idle + 1))) missed++;
  }
  await closeAll();
  console.log(JSON.stringify({
    samples: SAMPLES, missed, p50_ms: ms(quantile(lat, 0.5)), p99_ms: ms(quantile(lat, 0.99)),
    max_ms: ms(quantile(lat, 1)), send_p50_ms: ms(quantile(send, 0.5)), send_p99_ms: ms(quantile(send, 0.99)),
    sessions: sessions.map((s) => s.id),
  }));
} else if (MODE === 'turns') {
  const steps = JSON.parse(process.env.STEPS || '[]');
  let missed = 0, errors = 0;
  const check = (f) => {
    if (!f) missed++;
    else if (f.json.stop_reason?.type !== 'end_turn') errors++;
  };
  if (process.env.WARM === '1') (await Promise.all(sessions.map((s) => turn(s, 'run: true')))).forEach(check);
  // a token is never part of another's (the fake matches substrings)
  const tokens = sessions.map((s, i) => `${tag}.${i}.`);
  for (const [i, t] of tokens.entries()) await fake('/__fake/script', { match: t, steps });
  const t0 = performance.now();
  let done;
  if (process.env.CONCURRENT === '1') {
    done = await Promise.all(sessions.map((s, i) => turn(s, `${tokens[i]} go`)));
  } else {
    done = [];
    for (const [i, s] of sessions.entries()) done.push(await turn(s, `${tokens[i]} go`));
  }
  const last = Math.max(...done.map((f) => (f ? f.at : 0)));
  done.forEach(check);
  await closeAll();
  console.log(JSON.stringify({
    sessions: sessions.map((s) => s.id), tokens, wall_ms: ms(last - t0),
    done: done.filter(Boolean).length, missed, errors,
  }));
} else {
  throw new Error(`MODE: status or turns, not ${MODE}`);
}
