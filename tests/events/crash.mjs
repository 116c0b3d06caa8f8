// Events written while processes are killed (tests/events/run.sh kills the tailer, nginx's
// workers and the API's workers with SIGKILL meanwhile).
//   SESSIONS sessions; on each, one sender loop and one watcher for SECONDS. A sender sends one
//   user.message at a time, its text and Idempotency-Key both "<tag>-<session>-<n>", retried
//   with the same key as the SDK retries (connection error, 408, 409, 429, 5xx) until it is
//   answered otherwise or RETRY_SECONDS pass. A watcher holds the session's stream and opens a
//   new one whenever it ends or cannot be opened (a client reconnecting).
//   Then, with nothing killed any more, every watcher opens a new stream and one more event is
//   sent to each session: each new stream must receive it (streams resume after a reconnect).
//   Then each session's log is listed whole.
// Prints one JSON line:
//   sent (sends answered 200), unanswered (sends that never got a 200), lost (answered but not
//   in the list), duplicated (texts listed more than once), stored_unanswered (unanswered texts
//   that are listed: at most `unanswered`), replayed (answers replayed by Idempotency-Key),
//   listed, answers_differ (a listed event differs from the answer that echoed it),
//   connections, reconnects, refused (stream opens answered other than 200, or failed),
//   frames, twice (one event twice on one connection), foreign (frames that are not an event
//   of the watched session), problems (badly framed), seen (of the events listed during the
//   load, how many some stream of their session carried), resumed (sessions whose new stream
//   received the last event), sessions.
// Environment: URL, KEY, SESSIONS (4), SECONDS (10), RETRY_SECONDS (30), RESUME_MS (10000).
import http from 'node:http';
import { request } from '../lib-http.mjs';
import { openStream } from './sse.mjs';

const { URL: BASE, KEY } = process.env;
const SESSIONS = Number(process.env.SESSIONS || 4);
const SECONDS = Number(process.env.SECONDS || 10);
const RETRY_SECONDS = Number(process.env.RETRY_SECONDS || 30);
const RESUME_MS = Number(process.env.RESUME_MS || 10000);
const RETRY_PAUSE_MS = 100;
const REOPEN_PAUSE_MS = 100;
const REQUEST_TIMEOUT_MS = 40000;
const LIST_LIMIT = 1000;
if (!BASE || !KEY) throw new Error('URL and KEY must be set');

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
const sdkRetries = (status) => status === 0 || status === 408 || status === 409 || status === 429 || status >= 500;
const call = (method, path, body, headers) =>
  request(BASE + path, { method, key: KEY, body, headers, timeoutMs: REQUEST_TIMEOUT_MS })
    .catch((e) => ({ status: 0, error: e.message }));
async function retried(method, path, body, headers) {
  const giveUp = Date.now() + RETRY_SECONDS * 1000;
  for (;;) {
    const r = await call(method, path, body, headers);
    if (!sdkRetries(r.status) || Date.now() > giveUp) return r;
    await sleep(RETRY_PAUSE_MS);
  }
}
async function must(method, path, body) {
  const r = await retried(method, path, body);
  if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.text || r.error}`);
  return r.json;
}

const tag = `crash-${Date.now().toString(36)}`;
const agent = await must('POST', '/v1/agents', { name: tag, model: 'claude-sonnet-4-5' });
const env = await must('POST', '/v1/environments', { name: tag });
const sessions = [];
for (let i = 0; i < SESSIONS; i++) {
  sessions.push({ id: (await must('POST', '/v1/sessions', { agent: agent.id, environment_id: env.id })).id, i });
}

const httpAgent = new http.Agent({ keepAlive: false });
const streamUrl = (s) => `${BASE}/v1/sessions/${s.id}/events/stream`;
let connections = 0, refused = 0, stop = false;
const conns = []; // every stream that opened: {session, s}

async function watcher(s) {
  while (!stop) {
    let st;
    try {
      st = await openStream(streamUrl(s), KEY, { agent: httpAgent });
    } catch {
      refused++;
      await sleep(REOPEN_PAUSE_MS);
      continue;
    }
    if (st.status !== 200) {
      refused++;
      await st.done;
      await sleep(REOPEN_PAUSE_MS);
      continue;
    }
    connections++;
    conns.push({ session: s, s: st });
    s.current = st;
    await Promise.race([st.done, until(() => stop)]);
  }
}
async function until(cond) {
  while (!cond()) await sleep(50);
}

const answered = new Map(); // text -> the echoed event
const unanswered = new Set();
let replayed = 0;
async function sender(s) {
  for (let n = 0; !stop; n++) {
    const text = `${tag}-${s.i}-${n}`;
    const r = await retried('POST', `/v1/sessions/${s.id}/events`,
      { events: [{ type: 'user.message', content: [{ type: 'text', text }] }] }, { 'idempotency-key': text });
    if (r.status === 200) {
      answered.set(text, r.json.data[0]);
      if (r.headers['idempotent-replayed']) replayed++;
    } else {
      unanswered.add(text);
    }
  }
}

const watchers = sessions.map(watcher);
await sleep(500); // the first streams are open
process.stdout.write('STARTED\n');
const senders = sessions.map(sender);
await sleep(SECONDS * 1000);
stop = true;
await Promise.all(senders);
await Promise.all(conns.map((c) => c.s.close()));
await Promise.all(watchers);

// ---- resume: a new stream per session sees a new event ----
const fresh = await Promise.all(sessions.map(async (s) => {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      const st = await openStream(streamUrl(s), KEY, { agent: httpAgent });
      if (st.status === 200) return st;
      await st.done;
    } catch { /* opened again below */ }
    await sleep(REOPEN_PAUSE_MS);
  }
  return null;
}));
const last = [];
for (const s of sessions) {
  last.push((await must('POST', `/v1/sessions/${s.id}/events`,
    { events: [{ type: 'user.define_outcome', description: 'resume', rubric: { type: 'text', content: 'x' } }] })).data[0].id);
}
const resumedBy = () => fresh.filter((st, i) => st && st.events.some((f) => f.json.id === last[i])).length;
const t = Date.now();
while (Date.now() - t < RESUME_MS && resumedBy() < sessions.length) await sleep(50);
const resumed = resumedBy();
await Promise.all(fresh.map((st) => st && st.close()));
httpAgent.destroy();

// ---- the log ----
const listed = new Map(); // session id -> events
for (const s of sessions) {
  const all = [];
  let page = null;
  do {
    const q = `limit=${LIST_LIMIT}${page ? `&page=${encodeURIComponent(page)}` : ''}`;
    const r = await must('GET', `/v1/sessions/${s.id}/events?${q}`);
    all.push(...r.data);
    page = r.next_page;
  } while (page);
  listed.set(s.id, all);
}
const texts = new Map(); // text -> times listed
const byId = new Map();
for (const [sid, evs] of listed) {
  for (const e of evs) {
    byId.set(e.id, { session: sid, e });
    if (e.type === 'user.message') {
      const text = e.content[0].text;
      texts.set(text, (texts.get(text) || 0) + 1);
    }
  }
}
let lost = 0, answersDiffer = 0;
for (const [text, echo] of answered) {
  const l = byId.get(echo.id);
  if (!l) lost++;
  else if (l.e.content[0].text !== text) answersDiffer++;
}
const duplicated = [...texts.values()].filter((n) => n > 1).length;
const storedUnanswered = [...unanswered].filter((t) => texts.has(t)).length;

let frames = 0, twice = 0, foreign = 0;
const problems = [];
const carried = new Set();
for (const c of conns) {
  const ids = new Set();
  for (const f of c.s.events) {
    frames++;
    if (ids.has(f.json.id)) twice++;
    ids.add(f.json.id);
    const l = byId.get(f.json.id);
    if (!l || l.session !== c.session.id) foreign++;
    else carried.add(f.json.id);
  }
  problems.push(...c.s.problems);
}
const duringLoad = [...byId.keys()].filter((id) => !last.includes(id)).length;
console.log(JSON.stringify({
  sessions: sessions.length, sent: answered.size, unanswered: unanswered.size, lost, duplicated,
  stored_unanswered: storedUnanswered, replayed, listed: byId.size, answers_differ: answersDiffer,
  connections, reconnects: connections - sessions.length, refused, frames, twice, foreign,
  problems: problems.slice(0, 5), seen: `${carried.size}/${duringLoad}`, resumed,
}));
