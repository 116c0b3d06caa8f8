// The turns of tests/mcp-turn/run.sh, through the UNCHANGED official SDK (@anthropic-ai/sdk 1.14,
// installed in tests/sdk/node_modules): vaults and their credentials, agents with an MCP server
// and its mcp_toolset, sessions with vault_ids, and their events (send, stream, list), while the
// runner calls the MCP test server (tests/mcp/server.mjs) for the scripted fake model
// (tests/fake-model).
//
//   node tests/mcp-turn/turn.mjs main          every scenario but the kill
//   node tests/mcp-turn/turn.mjs kill-start    a call that hangs: its state to MCP_TURN_STATE
//   node tests/mcp-turn/turn.mjs kill-finish   after run.sh killed the runner and started one
//   node tests/mcp-turn/turn.mjs local         a runner without [runner] mcp_local_addresses
//
// Environment: TERRARIUM_URL, TERRARIUM_KEY; MCP_URL (the MCP server), MCP_DEAD_URL (an MCP URL
// nothing listens on), FAKE_URL (the fake model), MCP_TOKEN (the bearer the server wants) and
// MCP_WRONG_TOKEN (another), given to this process only, MCP_TURN_TAG (a word of this run), MCP_TURN_STATE (a file: what the
// subcommands share), MCP_CALL_TIMEOUT_S (the runner's [runner] mcp_call_timeout_seconds).
// Prints "ok - ..." / "not ok - ..." lines (run.sh counts them); exits 1 only when the script
// itself failed.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '../sdk/node_modules/@anthropic-ai/sdk/index.mjs';

const env = (n) => {
  if (!process.env[n]) throw new Error(`${n} must be set`);
  return process.env[n];
};
const URL_ = env('TERRARIUM_URL');
const MCP_URL = env('MCP_URL');
const DEAD_URL = env('MCP_DEAD_URL');
const FAKE_URL = env('FAKE_URL');
const TOKEN = env('MCP_TOKEN');
const TAG = env('MCP_TURN_TAG');
const STATE = env('MCP_TURN_STATE');
const CALL_TIMEOUT_S = Number(env('MCP_CALL_TIMEOUT_S'));
const AUTH_URL = `${MCP_URL}/mcp-auth`;
const WRONG_TOKEN = env('MCP_WRONG_TOKEN');
const TURN_WAIT_MS = 60000; // a turn reaches its idle within this (the kill: a lease and a claim)
const SERVER = 'calc'; // the MCP server's name in the agent
const TOOL = (t) => `mcp__${SERVER}__${t}`; // the name the model is offered (docs/runner.md)
const UNKNOWN_OUTCOME = 'may or may not have run'; // runner/turn.c TURN_UNKNOWN_OUTCOME

// Every answer's text but the streams' (read whole by the SDK's own fetch): the secret must be
// in none of them.
const answers = [];
async function recordingFetch(url, init) {
  const res = await fetch(url, init);
  if (!String(url).includes('/events/stream')) answers.push(`${init?.method ?? 'GET'} ${url}: ${await res.clone().text()}`);
  return res;
}
const client = new Anthropic({ baseURL: URL_, apiKey: env('TERRARIUM_KEY'), fetch: recordingFetch, maxRetries: 0 });

// ---- output ----

let failures = 0;
function check(name, fn) {
  try {
    fn();
    console.log(`ok - ${name}`);
    return true;
  } catch (e) {
    failures++;
    console.log(`not ok - ${name}: ${String(e.message).split('\n').slice(0, 6).join(' | ')}`);
    return false;
  }
}

// ---- the fakes ----

async function getJson(url, init) {
  const r = await fetch(url, init);
  if (!r.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${r.status} ${await r.text()}`);
  return r.json();
}
const post = (url, body) =>
  getJson(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) });
// The fake model's next requests whose body holds MATCH get STEPS, in order.
const script = (match, steps) => post(`${FAKE_URL}/__fake/script`, { match, steps });
const modelRequests = async (match) =>
  (await getJson(`${FAKE_URL}/__fake/requests`)).requests.filter((r) => JSON.stringify(r.body).includes(match));
const serverLog = async () => (await getJson(`${MCP_URL}/__log`)).log;
const calls = (log, pred) => log.filter((e) => e.event === 'tools/call' && pred(e));
const offered = (req) => (req.body.tools ?? []).map((t) => t.name);
const lastResults = (req) =>
  (req.body.messages.at(-1).content ?? []).filter((b) => b.type === 'tool_result');
const textOf = (content) => (content ?? []).map((b) => (typeof b === 'string' ? b : b.text ?? '')).join('');

// ---- the API ----

async function until(cond, what, ms = TURN_WAIT_MS) {
  const t0 = Date.now();
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}
async function listEvents(id) {
  const out = [];
  for await (const e of client.beta.sessions.events.list(id, { limit: 1000 })) out.push(e);
  return out;
}
// The session's events once its last status is idle with stop reason REASON (after AFTER events).
async function idle(id, reason, after = 0) {
  return until(async () => {
    const evs = await listEvents(id);
    const last = evs.filter((e) => e.type.startsWith('session.status_')).at(-1);
    return evs.length > after && last?.type === 'session.status_idle' && last.stop_reason?.type === reason
      ? evs
      : null;
  }, `session ${id} idle with ${reason}`);
}
// A stream of session ID read in the background (the events as they come).
async function watch(id) {
  const stream = await client.beta.sessions.events.stream(id);
  const w = { events: [], error: null };
  w.done = (async () => {
    try {
      for await (const ev of stream) w.events.push(ev);
    } catch (e) {
      if (e.name !== 'AbortError' && !/abort/i.test(String(e.message))) w.error = e;
    }
  })();
  w.until = (pred, what) => until(() => pred(w.events), what);
  w.close = async () => {
    stream.controller.abort();
    await w.done;
  };
  return w;
}
const message = (text) => ({ type: 'user.message', content: [{ type: 'text', text }] });
const send = (id, ...events) => client.beta.sessions.events.send(id, { events });
const ofType = (evs, type) => evs.filter((e) => e.type === type);
// The results the log holds for tool use USE (any kind: the right one is checked).
const resultsOf = (evs, use) =>
  evs.filter((e) => use && e.type.startsWith('agent.') && (e.mcp_tool_use_id === use.id || e.tool_use_id === use.id));
const idleReason = (e) => e.type === 'session.status_idle' && e.stop_reason?.type;

// What every scenario shares, made once (kill-start keeps it for kill-finish in STATE).
async function setup() {
  const vault = await client.beta.vaults.create({ display_name: `mcp-turn-${TAG}`, metadata: { run: TAG } });
  const cred = await client.beta.vaults.credentials.create(vault.id, {
    display_name: `calc-${TAG}`,
    auth: { type: 'static_bearer', token: TOKEN, mcp_server_url: AUTH_URL },
  });
  const wrong = await client.beta.vaults.create({ display_name: `mcp-turn-badcred-${TAG}` });
  await client.beta.vaults.credentials.create(wrong.id, {
    auth: { type: 'static_bearer', token: WRONG_TOKEN, mcp_server_url: AUTH_URL },
  });
  const environment = await client.beta.environments.create({ name: `mcp-turn-${TAG}` });
  const agent = await client.beta.agents.create({
    name: `mcp-turn-${TAG}`,
    model: 'claude-sonnet-4-5',
    mcp_servers: [{ type: 'url', name: SERVER, url: AUTH_URL }],
    tools: [
      // add: the default permission (always_ask); hang and echo_auth run without a confirmation
      {
        type: 'mcp_toolset',
        mcp_server_name: SERVER,
        configs: ['hang', 'echo_auth'].map((name) => ({ name, permission_policy: { type: 'always_allow' } })),
      },
      { type: 'agent_toolset_20260401' },
    ],
  });
  const dead = await client.beta.agents.create({
    name: `mcp-turn-dead-${TAG}`,
    model: 'claude-sonnet-4-5',
    mcp_servers: [{ type: 'url', name: 'gone', url: DEAD_URL }],
    tools: [{ type: 'mcp_toolset', mcp_server_name: 'gone' }],
  });
  return { vault: vault.id, cred: cred.id, wrong: wrong.id, environment: environment.id, agent: agent.id, dead: dead.id };
}
async function session(ids, { agent = ids.agent, vaults = [ids.vault] } = {}) {
  const s = await client.beta.sessions.create({ agent, environment_id: ids.environment, vault_ids: vaults });
  return s.id;
}

// A turn: the server's log emptied, the fake model scripted for WORD, a new session (OPTS as
// session's), a user.message holding WORD sent. The session's id.
async function start(ids, word, steps, opts) {
  await post(`${MCP_URL}/__reset`);
  await script(word, steps);
  const id = await session(ids, opts);
  await send(id, message(`${word}: go`));
  return id;
}
const hasSecret = (text) => text.includes(TOKEN) || text.includes(WRONG_TOKEN);

// ---- the scenarios ----

// allow: agent.mcp_tool_use (ask) -> requires_action -> allow -> agent.mcp_tool_result (the
// sum) -> agent.message -> end_turn; the stream carries what the list holds.
async function allow(ids) {
  const word = `allow-${TAG}`;
  await post(`${MCP_URL}/__reset`);
  await script(word, [{ tool_use: { name: TOOL('add'), input: { a: 2, b: 3 } } }, { text: 'the sum is {{tool_result}}' }]);
  const id = await session(ids);
  const w = await watch(id);
  await send(id, message(`${word}: add 2 and 3`));
  await w.until((evs) => evs.some((e) => idleReason(e) === 'requires_action'), 'requires_action on the stream');
  let evs = await listEvents(id);
  const use = ofType(evs, 'agent.mcp_tool_use')[0];
  check('allow: agent.mcp_tool_use add of calc with its input, evaluated_permission ask', () => {
    assert.ok(use, `no agent.mcp_tool_use in ${evs.map((e) => e.type)}`);
    assert.deepEqual({ name: use.name, server: use.mcp_server_name, input: use.input, perm: use.evaluated_permission },
      { name: 'add', server: SERVER, input: { a: 2, b: 3 }, perm: 'ask' });
  });
  check('allow: the session waits: idle, requires_action naming the tool use', () => {
    assert.deepEqual(evs.at(-1).stop_reason, { type: 'requires_action', event_ids: [use.id] });
  });
  let log = await serverLog();
  check('allow: no tools/call before the confirmation', () => assert.equal(calls(log, () => true).length, 0));
  let reqs = await modelRequests(word);
  check("allow: the model was offered the server's tools (mcp__calc__add, ...) beside bash", () => {
    const names = offered(reqs[0]);
    for (const n of [TOOL('add'), TOOL('hang'), 'bash']) assert.ok(names.includes(n), `${n} not in ${names}`);
  });
  const n = evs.length;
  await send(id, { type: 'user.tool_confirmation', tool_use_id: use.id, result: 'allow' });
  evs = await idle(id, 'end_turn', n);
  const results = resultsOf(evs, use);
  check('allow: one agent.mcp_tool_result for the use: the sum, 5, not an error', () => {
    assert.deepEqual(results.map((e) => e.type), ['agent.mcp_tool_result']);
    assert.deepEqual(results[0].content, [{ type: 'text', text: '5' }]);
    assert.equal(results[0].is_error, false);
  });
  check("allow: use, confirmation, result, the model's agent.message, idle end_turn, in that order", () => {
    const ids_ = evs.map((e) => e.id);
    const msg = ofType(evs, 'agent.message').at(-1);
    const conf = ofType(evs, 'user.tool_confirmation')[0];
    assert.ok(msg && conf);
    assert.ok(ids_.indexOf(use.id) < ids_.indexOf(conf.id) && ids_.indexOf(conf.id) < ids_.indexOf(results[0].id) &&
      ids_.indexOf(results[0].id) < ids_.indexOf(msg.id), evs.map((e) => e.type).join(' '));
    assert.equal(textOf(msg.content), 'the sum is 5');
    assert.equal(idleReason(evs.at(-1)), 'end_turn');
  });
  log = await serverLog();
  check('allow: the server ran add once, every request with the right bearer', () => {
    assert.equal(calls(log, (e) => e.tool === 'add').length, 1);
    const http = log.filter((e) => e.http);
    assert.ok(http.length > 0);
    assert.deepEqual([...new Set(http.map((e) => `${e.route} ${e.auth}`))], ['/mcp-auth right']);
  });
  reqs = await modelRequests(word);
  check("allow: the model's next request holds the tool_result 5 for its tool_use", () => {
    assert.equal(reqs.length, 2);
    const r = lastResults(reqs[1]);
    assert.equal(r.length, 1);
    assert.equal(r[0].tool_use_id, use.id);
    assert.equal(textOf(r[0].content), '5');
    assert.notEqual(r[0].is_error, true);
  });
  await w.until((s) => s.some((e) => e.id === evs.at(-1).id), 'the last event on the stream').catch(() => {});
  await w.close();
  check('allow: the stream carried the events of the list, in order', () => {
    assert.equal(w.error, null);
    assert.deepEqual(w.events.map((e) => e.id), evs.slice(evs.length - w.events.length).map((e) => e.id));
    assert.ok(w.events.some((e) => e.type === 'agent.mcp_tool_result'));
  });
  return id;
}

// deny: the model gets an error result with the deny_message; the server sees no call.
async function deny(ids) {
  const word = `deny-${TAG}`;
  const why = `no sums today (${TAG})`;
  const id = await start(ids, word, [{ tool_use: { name: TOOL('add'), input: { a: 40, b: 2 } } }, { text: 'told: {{tool_result}}' }]);
  let evs = await idle(id, 'requires_action');
  const use = ofType(evs, 'agent.mcp_tool_use')[0];
  check('deny: agent.mcp_tool_use asks, the session waits', () => {
    assert.equal(use?.evaluated_permission, 'ask');
    assert.deepEqual(evs.at(-1).stop_reason.event_ids, [use.id]);
  });
  await send(id, { type: 'user.tool_confirmation', tool_use_id: use.id, result: 'deny', deny_message: why });
  evs = await idle(id, 'end_turn', evs.length);
  const results = resultsOf(evs, use);
  check('deny: one agent.mcp_tool_result for the use: an error with the deny_message', () => {
    assert.deepEqual(results.map((e) => e.type), ['agent.mcp_tool_result']);
    assert.equal(results[0].mcp_tool_use_id, use.id);
    assert.equal(results[0].is_error, true);
    assert.equal(textOf(results[0].content), why);
  });
  const reqs = await modelRequests(word);
  check("deny: the model's next request holds an error tool_result with the deny_message", () => {
    assert.equal(reqs.length, 2);
    const r = lastResults(reqs[1]);
    assert.equal(r.length, 1);
    assert.equal(r[0].tool_use_id, use.id);
    assert.equal(r[0].is_error, true);
    assert.equal(textOf(r[0].content), why);
  });
  check('deny: then agent.message and idle end_turn', () => {
    assert.equal(textOf(ofType(evs, 'agent.message').at(-1)?.content), `told: ${why}`);
  });
  const log = await serverLog();
  check('deny: the MCP server saw no tools/call', () => {
    assert.ok(log.some((e) => e.event === 'tools/list'), 'not even a tools/list: the server was not opened');
    assert.equal(calls(log, () => true).length, 0);
  });
  return id;
}

// A server that cannot be used: a session.error of TYPE naming SERVER_NAME, the model asked
// without its tools, the turn ends with the model's answer.
async function unusable(ids, label, opts, type, serverName, logCheck) {
  const word = `${label.replace(/ /g, '-')}-${TAG}`;
  const id = await start(ids, word, [{ text: `answered without ${serverName}` }], opts);
  const evs = await idle(id, 'end_turn');
  const errs = ofType(evs, 'session.error');
  check(`${label}: session.error ${type} naming ${serverName}, before the model's request`, () => {
    assert.equal(errs.length, 1, JSON.stringify(errs));
    assert.equal(errs[0].error.type, type);
    assert.equal(errs[0].error.mcp_server_name, serverName);
    assert.ok(errs[0].error.message.includes(serverName), errs[0].error.message);
    const types = evs.map((e) => e.type);
    assert.ok(types.indexOf('session.error') < types.indexOf('span.model_request_start'), types.join(' '));
  });
  const reqs = await modelRequests(word);
  check(`${label}: the turn goes on without the server's tools: the model's answer, idle end_turn`, () => {
    assert.equal(reqs.length, 1);
    assert.ok(!offered(reqs[0]).some((n) => n.startsWith(`mcp__${serverName}__`)), offered(reqs[0]).join(' '));
    assert.equal(textOf(ofType(evs, 'agent.message').at(-1)?.content), `answered without ${serverName}`);
  });
  if (logCheck) {
    const log = await serverLog();
    check(`${label}: the server answered 401 to what it got`, () => logCheck(log));
  }
  return id;
}
const authLog = (auth) => (log) => {
  const http = log.filter((e) => e.http);
  assert.ok(http.length > 0, 'no request reached the server');
  assert.deepEqual([...new Set(http.map((e) => `${e.route} ${e.auth} ${e.status}`))], [`/mcp-auth ${auth} 401`]);
};

// hang: the call times out after [runner] mcp_call_timeout_seconds; the model gets an error
// result saying so, the server a cancel; the turn ends.
async function hang(ids) {
  const word = `hang-${TAG}`;
  const t0 = Date.now();
  const id = await start(ids, word, [{ tool_use: { name: TOOL('hang'), input: { tag: word } } }, { text: 'after: {{tool_result}}' }]);
  const evs = await idle(id, 'end_turn');
  const ms = Date.now() - t0;
  const use = ofType(evs, 'agent.mcp_tool_use')[0];
  const results = resultsOf(evs, use);
  check('hang: always_allow: the call runs without a confirmation', () => {
    assert.equal(use?.evaluated_permission, 'allow');
    assert.ok(!evs.some((e) => idleReason(e) === 'requires_action'));
  });
  // runner/turn.c names the server and the tool before runner/mcp.c's words
  const said = `MCP server '${SERVER}', tool 'hang': no answer from the server within ${CALL_TIMEOUT_S * 1000} ms`;
  check(`hang: an error result saying no answer came within ${CALL_TIMEOUT_S} s (${ms} ms)`, () => {
    assert.deepEqual(results.map((e) => e.type), ['agent.mcp_tool_result']);
    assert.equal(results[0].is_error, true);
    assert.equal(textOf(results[0].content), said);
    assert.ok(ms >= CALL_TIMEOUT_S * 1000 && ms < CALL_TIMEOUT_S * 1000 + 20000, `${ms} ms`);
  });
  check('hang: the turn ends: the model answered the error, idle end_turn', () => {
    assert.equal(textOf(ofType(evs, 'agent.message').at(-1)?.content), `after: ${said}`);
    assert.equal(idleReason(evs.at(-1)), 'end_turn');
  });
  const log = await until(async () => {
    const l = await serverLog();
    return l.some((e) => e.event === 'aborted') ? l : null;
  }, 'the cancel at the server', 5000).catch(() => serverLog());
  check('hang: the server got one call and its cancel (notifications/cancelled)', () => {
    const c = calls(log, (e) => e.tool === 'hang' && e.args?.tag === word);
    assert.equal(c.length, 1);
    assert.ok(log.some((e) => e.event === 'aborted' && e.id === c[0].id), JSON.stringify(log.slice(-4)));
  });
  return id;
}

// collide: a custom tool named as the MCP tool would be: the MCP tool gets another name, and
// the model's history calls it by that name on every later request.
async function collide(ids) {
  const word = `collide-${TAG}`;
  const agent = await client.beta.agents.create({
    name: `mcp-turn-collide-${TAG}`,
    model: 'claude-sonnet-4-5',
    mcp_servers: [{ type: 'url', name: SERVER, url: AUTH_URL }],
    tools: [
      { type: 'custom', name: TOOL('add'), description: 'a custom tool', input_schema: { type: 'object' } },
      { type: 'mcp_toolset', mcp_server_name: SERVER, default_config: { permission_policy: { type: 'always_allow' } } },
    ],
  });
  // the first turn says what the MCP tool is offered as
  const id = await start(ids, word, [{ text: 'first' }], { agent: agent.id });
  let evs = await idle(id, 'end_turn');
  let reqs = await modelRequests(word);
  const other = offered(reqs[0]).find((n) => n.startsWith(`${TOOL('add')}_`));
  check(`collide: the MCP tool add is offered under another name than the custom tool's (${other})`, () => {
    assert.ok(other && offered(reqs[0]).includes(TOOL('add')), offered(reqs[0]).join(' '));
  });
  await script(word, [{ tool_use: { name: other, input: { a: 20, b: 22 } } }, { text: 'then {{tool_result}}' }]);
  await send(id, message(`${word}: again`));
  evs = await idle(id, 'end_turn', evs.length + 1);
  const use = ofType(evs, 'agent.mcp_tool_use')[0];
  check('collide: calling it is an MCP call of add (42)', () => {
    assert.equal(use?.name, 'add');
    assert.deepEqual(resultsOf(evs, use).map((e) => [e.type, textOf(e.content)]), [['agent.mcp_tool_result', '42']]);
  });
  reqs = await modelRequests(word);
  check("collide: the model's history calls it by the name it was offered, not the custom tool's", () => {
    const blocks = reqs.at(-1).body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []));
    const call = blocks.find((b) => b.type === 'tool_use' && b.id === use.id);
    assert.equal(call?.name, other);
  });
  return id;
}

// echo: a server that echoes the Authorization it got: the model sees the bearer masked.
async function echo(ids) {
  const word = `echo-${TAG}`;
  const id = await start(ids, word, [{ tool_use: { name: TOOL('echo_auth'), input: {} } }, { text: 'echoed' }]);
  const evs = await idle(id, 'end_turn');
  const results = resultsOf(evs, ofType(evs, 'agent.mcp_tool_use')[0]);
  check('echo: the bearer the server got and echoed is masked in the result (Bearer ***)', () => {
    assert.deepEqual(results.map((e) => e.type), ['agent.mcp_tool_result']);
    assert.equal(textOf(results[0].content), 'you sent: Bearer ***');
  });
  const log = await serverLog();
  check('echo: ... though the server got the right one', () => {
    assert.equal(calls(log, (e) => e.tool === 'echo_auth').length, 1);
    assert.ok(log.filter((e) => e.http).every((e) => e.auth === 'right'));
  });
  return id;
}

// env: the bash tool's `env` in the session's sandbox shows no secret.
async function environment(ids) {
  const word = `env-${TAG}`;
  const id = await start(ids, word, [{ tool_use: { name: 'bash', input: { command: 'env' } } }, { text: 'env done' }]);
  const evs = await idle(id, 'end_turn');
  const out = textOf(ofType(evs, 'agent.tool_result')[0]?.content);
  check("env: the sandbox's environment was listed (PATH= in the bash tool's output)", () =>
    assert.match(out, /^PATH=/m, out.slice(0, 300)));
  check("env: no vault token in the sandbox's environment", () => assert.ok(!hasSecret(out)));
  return id;
}

// What the API answered, the events and the model's requests hold no token.
async function secrets(ids, sessions) {
  const v = await client.beta.vaults.retrieve(ids.vault);
  const c = await client.beta.vaults.credentials.retrieve(ids.cred, { vault_id: ids.vault });
  const vl = [];
  for await (const x of client.beta.vaults.list()) vl.push(x);
  const cl = [];
  for await (const x of client.beta.vaults.credentials.list(ids.vault)) cl.push(x);
  check('secrets: the credential shows its auth without the token', () => {
    assert.deepEqual(c.auth, { type: 'static_bearer', mcp_server_url: AUTH_URL });
    assert.ok(cl.some((x) => x.id === ids.cred) && vl.some((x) => x.id === v.id));
  });
  check(`secrets: no API answer holds a token (${answers.length} answers)`, () => {
    assert.ok(answers.some((a) => a.includes(`mcp-turn-${TAG}`)), 'the answers were not recorded');
    const bad = answers.filter(hasSecret);
    assert.equal(bad.length, 0, bad.map((a) => a.slice(0, 80)).join(' | '));
  });
  let n = 0;
  const bad = [];
  for (const id of sessions) {
    for (const e of await listEvents(id)) {
      n++;
      if (hasSecret(JSON.stringify(e))) bad.push(`${id} ${e.type}`);
    }
  }
  check(`secrets: no event holds a token (${n} events of ${sessions.length} sessions)`, () => assert.deepEqual(bad, []));
  const reqs = (await getJson(`${FAKE_URL}/__fake/requests`)).requests;
  check(`secrets: no request to the model holds a token (${reqs.length} requests)`, () => {
    assert.ok(reqs.length > 0);
    assert.equal(reqs.filter((r) => hasSecret(JSON.stringify(r))).length, 0);
  });
}

// ---- the kill, in two halves (run.sh kills the runner between them) ----

async function killStart() {
  const ids = await setup();
  const word = `kill-${TAG}`;
  const id = await start(ids, word, [{ tool_use: { name: TOOL('hang'), input: { tag: word } } }, { text: 'after the restart: {{tool_result}}' }]);
  await until(async () => calls(await serverLog(), (e) => e.args?.tag === word).length > 0, 'the call at the server');
  writeFileSync(STATE, JSON.stringify({ ids, id, word }));
  check('kill: the call is running at the server', () => {});
}

async function killFinish() {
  const { ids, id, word } = JSON.parse(readFileSync(STATE, 'utf8'));
  const evs = await idle(id, 'end_turn');
  const use = ofType(evs, 'agent.mcp_tool_use')[0];
  const results = resultsOf(evs, use);
  check('kill: the next runner ended the turn: one agent.mcp_tool_result, an error: the outcome is unknown', () => {
    assert.deepEqual(results.map((e) => e.type), ['agent.mcp_tool_result']);
    assert.equal(results[0].is_error, true);
    assert.ok(textOf(results[0].content).includes(UNKNOWN_OUTCOME), textOf(results[0].content));
  });
  const log = await serverLog();
  check('kill: the call was not made again (the server counted one call of its tag)', () =>
    assert.equal(calls(log, (e) => e.args?.tag === word).length, 1));
  const reqs = await modelRequests(word);
  check("kill: the model's next request says the outcome is unknown; its answer ends the turn", () => {
    const r = lastResults(reqs.at(-1));
    assert.equal(r.length, 1);
    assert.equal(r[0].tool_use_id, use.id);
    assert.equal(r[0].is_error, true);
    assert.ok(textOf(r[0].content).includes(UNKNOWN_OUTCOME));
    assert.ok(textOf(ofType(evs, 'agent.message').at(-1)?.content).startsWith('after the restart: '));
  });
  await secrets(ids, [id]);
}

// ---- a runner that refuses this machine's addresses (the MCP server is on loopback) ----

async function local() {
  const ids = await setup();
  const id = await unusable(ids, 'local address', {}, 'mcp_connection_failed_error', SERVER);
  const err = ofType(await listEvents(id), 'session.error')[0]?.error;
  check("local address: the error names the address and [runner] mcp_local_addresses", () => {
    assert.match(err.message, /127\.0\.0\.1/);
    assert.match(err.message, /mcp_local_addresses/);
  });
  const log = await serverLog();
  check('local address: nothing reached the server', () => assert.deepEqual(log.filter((e) => e.http), []));
}

async function main() {
  const ids = await setup();
  const sessions = [];
  sessions.push(await allow(ids));
  sessions.push(await deny(ids));
  sessions.push(await unusable(ids, 'wrong credential', { vaults: [ids.wrong] }, 'mcp_authentication_failed_error', SERVER, authLog('wrong')));
  sessions.push(await unusable(ids, 'no credential', { vaults: [] }, 'mcp_authentication_failed_error', SERVER, authLog('none')));
  sessions.push(await unusable(ids, 'unreachable', { agent: ids.dead, vaults: [ids.vault] }, 'mcp_connection_failed_error', 'gone'));
  sessions.push(await hang(ids));
  sessions.push(await echo(ids));
  sessions.push(await collide(ids));
  sessions.push(await environment(ids));
  await secrets(ids, sessions);
}

const commands = { main, 'kill-start': killStart, 'kill-finish': killFinish, local };
const cmd = commands[process.argv[2]];
if (!cmd) {
  console.error(`usage: turn.mjs ${Object.keys(commands).join('|')}`);
  process.exit(2);
}
try {
  await cmd();
} catch (e) {
  console.log(`not ok - ${process.argv[2]}: ${e.stack ?? e}`);
  process.exit(1);
}
