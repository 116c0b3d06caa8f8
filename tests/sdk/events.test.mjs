// Session events (docs/api.md §7) through the UNCHANGED official SDK (@anthropic-ai/sdk 1.14):
// client.beta.sessions.events.send / list / stream. Run with tests/sdk/run.sh; needs
// TERRARIUM_URL and TERRARIUM_KEY; TERRARIUM_KEY2 (a key of another workspace) enables the
// isolation test; TERRARIUM_RUN (the stack's runtime directory: its MariaDB socket
// RUN/mysql.sock) enables the answers' tests, which write the agent's events into the log with
// SQL (nothing else writes them yet).
//
// What the SDK does, read from node_modules/@anthropic-ai/sdk (1.14.0),
// resources/beta/sessions/events.js and core/streaming.js:
// - events.send(id, {events}) POST /v1/sessions/{id}/events -> {data:[...]}.
// - events.list(id, {limit, page, order, types, 'created_at[gte]', ...}) GET .../events ->
//   PageCursor: {data, next_page}; the next page repeats the query plus page=<next_page>; the
//   iteration stops when next_page is null. `types: [a, b]` goes out as types[]=a&types[]=b
//   (percent-encoded brackets).
// - events.stream(id, {event_deltas}) GET .../events/stream -> Stream of the frames' JSON; a
//   frame without `event:` is dropped, `event: ping` is skipped, `event: error` throws.
//   stream.controller.abort() ends it without an error.
// - The SDK sends no Idempotency-Key of its own: the tests set the header.

import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic, { BadRequestError, NotFoundError, UnprocessableEntityError } from '@anthropic-ai/sdk';
import { KEY, KEY2, RFC3339_UTC, URL_, name, rejects } from './lib.mjs';

const RUNDIR = process.env.TERRARIUM_RUN || '';
const NO_SQL = !RUNDIR && 'TERRARIUM_RUN not set (the agent events are written with SQL)';
// A shared host's mod_fcgid keeps its default FcgidOutputBufferSize (server configuration, out of
// a user's reach): a stream's frames reach the client only past that buffer (docs/hosting.md).
const BUFFERED = !!process.env.TERRARIUM_STREAMS_BUFFERED &&
  "the web server buffers FastCGI answers (a shared host's mod_fcgid): no stream's frames arrive in time";
const SEVT_ID = /^sevt_[0-9A-Za-z]{24}$/;
const WAIT_MS = 10000;       // an event reaches a stream within this (tailer: 20 ms a read)
const QUIET_MS = 500;        // nothing more arrives on a stream within this
const PAGE_EVENTS = 2500;    // the pagination walks (issue 24)
const SEND_MAX = 50;         // events in one send (docs/api.md §7)
const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

const client = new Anthropic({ baseURL: URL_, apiKey: KEY });

// What after() cleans up, best effort.
const made = { sessions: [], environments: [], agents: [], watchers: [] };
after(async () => {
  for (const w of made.watchers) await w.close().catch(() => {});
  for (const id of made.sessions) await client.beta.sessions.delete(id).catch(() => {});
  for (const id of made.environments) await client.beta.environments.delete(id).catch(() => {});
  for (const id of made.agents) await client.beta.agents.archive(id).catch(() => {});
});

let agentId;
const envIds = {};
// A new session of a cloud (default) or self_hosted environment.
async function mksession(type = 'cloud') {
  if (!agentId) {
    const a = await client.beta.agents.create({ name: name('ev-agent'), model: 'claude-opus-5-5' });
    made.agents.push(a.id);
    agentId = a.id;
  }
  if (!envIds[type]) {
    const e = await client.beta.environments.create({ name: name(`ev-${type}`), config: { type } });
    made.environments.push(e.id);
    envIds[type] = e.id;
  }
  const s = await client.beta.sessions.create({ agent: agentId, environment_id: envIds[type] });
  made.sessions.push(s.id);
  return s.id;
}

const text = (t) => ({ type: 'text', text: t });
const message = (t) => ({ type: 'user.message', content: [text(t)] });
const outcome = (d) => ({ type: 'user.define_outcome', description: d, rubric: { type: 'text', content: 'all good' } });
const send = (id, events, opts) => client.beta.sessions.events.send(id, { events }, opts);

async function listAll(id, params = {}, c = client) {
  const out = [];
  for await (const e of c.beta.sessions.events.list(id, params)) out.push(e);
  return out;
}

async function until(cond, what, ms = WAIT_MS) {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(10);
  }
}

// A stream of session ID read in the background: .events as they come, .ended once the server
// ended it, .until(pred) waits for pred(events), .close() aborts it.
async function watch(id, c = client, params) {
  const stream = await c.beta.sessions.events.stream(id, params);
  const w = { events: [], ended: false, error: null };
  w.done = (async () => {
    try {
      for await (const ev of stream) w.events.push(ev);
    } catch (e) {
      w.error = e;
    } finally {
      w.ended = true;
    }
  })();
  w.close = async () => {
    stream.controller.abort();
    await w.done;
  };
  w.until = (pred, what) => until(() => pred(w.events), what);
  made.watchers.push(w);
  return w;
}

function assertEvent(e) {
  assert.match(e.id, SEVT_ID);
  assert.equal(typeof e.type, 'string');
  assert.ok(e.processed_at === null || RFC3339_UTC.test(e.processed_at), `processed_at ${e.processed_at}`);
}

// ---- SQL: the agent's side of the log (the runner of the next issue writes it) ----

function sql(query) {
  return execFileSync('mariadb', ['--no-defaults', `--socket=${RUNDIR}/mysql.sock`,
    `--user=${userInfo().username}`, '--batch', '-N', 'terrarium', '-e', query], { encoding: 'utf8' }).trim();
}
const q = (s) => `'${String(s).replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
function newEventId() {
  const b = randomBytes(24);
  return 'sevt_' + [...b].map((x) => ID_CHARS[x % ID_CHARS.length]).join('');
}
// Append an agent event (body without id and processed_at) to SESSION's log at its next
// position, as the runner would; returns its id.
function agentEvent(session, body) {
  const id = newEventId();
  const json = JSON.stringify({ type: body.type, ...body });
  sql(`START TRANSACTION;
    UPDATE sessions SET event_pos = event_pos + 1 WHERE id = ${q(session)};
    INSERT INTO session_events (id, session_id, ord, type, ref_id, processed_at, created_at, body)
      SELECT ${q(id)}, id, event_pos, ${q(body.type)}, NULL, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), ${q(json)}
      FROM sessions WHERE id = ${q(session)};
    COMMIT;`);
  return id;
}
const toolUse = (permission) => ({ type: 'agent.tool_use', name: 'bash', input: { command: 'true' }, evaluated_permission: permission });
const customUse = () => ({ type: 'agent.custom_tool_use', name: 'lookup', input: {} });
const mcpUse = (permission) => ({ type: 'agent.mcp_tool_use', name: 'search', mcp_server_name: 'docs', input: {}, evaluated_permission: permission });
const confirm = (id, result, extra = {}) => ({ type: 'user.tool_confirmation', tool_use_id: id, result, ...extra });
const toolResult = (id) => ({ type: 'user.tool_result', tool_use_id: id, content: [text('ok')] });
const customResult = (id) => ({ type: 'user.custom_tool_result', custom_tool_use_id: id, content: [text('ok')] });

// A send that must be refused with 400 (never 409: the SDK retries it), naming FIELD in its
// message, with error_code CODE when given (else none).
async function refused(session, events, field, code = null, body) {
  const err = await rejects(client.beta.sessions.events.send(session, body ?? { events }), BadRequestError,
    { status: 400, type: 'invalid_request_error', code });
  assert.ok(err.apiMessage.includes(field), `message names ${field}: ${err.apiMessage}`);
  return err;
}

// ---- round trip, echo, queue ----

describe('send, list, stream', () => {
  test('events round trip: the echo is what list returns', async () => {
    const s = await mksession();
    const blocks = [
      text('hello'),
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'notes' }, title: 'n', context: null },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
    ];
    const sent = await send(s, [{ type: 'user.message', content: blocks }, outcome('done')]);
    assert.equal(sent.data.length, 2);
    sent.data.forEach(assertEvent);
    assert.deepEqual(sent.data[0].content, blocks);
    assert.equal(sent.data[0].type, 'user.message');
    assert.match(sent.data[0].processed_at, RFC3339_UTC, 'a user.message on an idle session is processed');
    assert.match(sent.data[1].outcome_id, /^outc_/);
    assert.equal(sent.data[1].max_iterations, 3, 'the default max_iterations is stored');
    const listed = await listAll(s);
    assert.deepEqual(listed.map((e) => e.type), ['user.message', 'session.status_running', 'user.define_outcome']);
    assert.deepEqual(listed[0], sent.data[0]);
    assert.deepEqual(listed[2], sent.data[1]);
    assert.equal((await client.beta.sessions.retrieve(s)).status, 'running');
  });

  test('a stream opened before the send receives the echo: user.message, then session.status_running', { skip: BUFFERED }, async () => {
    const s = await mksession();
    const w = await watch(s);
    const sent = await send(s, [message('echo me')]);
    await w.until((ev) => ev.length >= 2, 'two events on the stream');
    await sleep(QUIET_MS);
    assert.deepEqual(w.events.map((e) => e.type), ['user.message', 'session.status_running']);
    assert.deepEqual(w.events[0], sent.data[0]);
    const listed = await listAll(s);
    assert.deepEqual(w.events, listed, 'the stream carries the events as list shows them');
    assert.equal(w.ended, false, 'the stream stays open');
    await w.close();
    assert.equal(w.error, null);
  });

  test('no replay: a stream starts after the latest event', { skip: BUFFERED }, async () => {
    const s = await mksession();
    await send(s, [message('before the stream')]);
    // the tailer has published them (a stream opened within its interval of a commit may
    // still get that event: clients de-duplicate by id, docs/api.md §7)
    await sleep(QUIET_MS);
    const w = await watch(s);
    const later = await send(s, [outcome('after')]);
    await w.until((ev) => ev.length >= 1, 'the later event');
    await sleep(QUIET_MS);
    assert.deepEqual(w.events, later.data);
    await w.close();
  });

  test('a second user.message is queued (processed_at null) and listed last', { skip: BUFFERED }, async () => {
    const s = await mksession();
    const w = await watch(s);
    await send(s, [message('first')]);
    const second = await send(s, [message('second')]);
    assert.equal(second.data[0].processed_at, null);
    const third = await send(s, [outcome('processed at once')]);
    assert.match(third.data[0].processed_at, RFC3339_UTC);
    const listed = await listAll(s);
    assert.deepEqual(listed.map((e) => e.type),
      ['user.message', 'session.status_running', 'user.define_outcome', 'user.message']);
    assert.deepEqual(listed.at(-1), second.data[0]);
    const desc = await listAll(s, { order: 'desc' });
    assert.deepEqual(desc, [...listed].reverse());
    await w.until((ev) => ev.length >= 4, 'four events');
    assert.equal(w.events[2].id, second.data[0].id, 'the stream echoes the queued message when it is sent');
    assert.equal(w.events[2].processed_at, null);
    await w.close();
  });

  test('event_deltas[] is accepted; any other stream parameter is refused', { skip: BUFFERED }, async () => {
    const s = await mksession();
    const w = await watch(s, client, { event_deltas: ['agent.message', 'agent.thinking'] });
    await send(s, [outcome('x')]);
    await w.until((ev) => ev.length >= 1, 'an event');
    await w.close();
    await rejects(client.beta.sessions.events.stream(s, { event_deltas: ['user.message'] }), BadRequestError, { status: 400 });
    await rejects(client.beta.sessions.events.stream(s, { nope: 1 }), BadRequestError, { status: 400 });
  });

  test('Idempotency-Key: the same answer again, appended once', async () => {
    const s = await mksession();
    const key = `ev-idem-${randomBytes(8).toString('hex')}`;
    const opts = { headers: { 'Idempotency-Key': key } };
    const a = await send(s, [message('once'), outcome('once')], opts);
    const { data: b, response } = await send(s, [message('once'), outcome('once')], opts).withResponse();
    assert.deepEqual(b.data, a.data);
    assert.equal(response.headers.get('idempotent-replayed'), 'true');
    const listed = await listAll(s);
    assert.equal(listed.filter((e) => e.type === 'user.message').length, 1);
    assert.equal(listed.filter((e) => e.type === 'user.define_outcome').length, 1);
    // another body under the same key is refused, not appended
    await rejects(send(s, [message('other')], opts), UnprocessableEntityError,
      { status: 422, code: 'idempotency_key_reused' });
    assert.equal((await listAll(s)).length, listed.length);
  });
});

// ---- pagination ----

describe('list', () => {
  test(`pagination walks of ${PAGE_EVENTS} events, both orders, no gaps, no duplicates`, async () => {
    const s = await mksession();
    const sentIds = [];
    const queued = new Set();
    // 49 messages and an interrupt in batches 4, 14, ... 44 (an interrupt takes the queued
    // messages out of the queue: processed and queued events mix), 50 messages in the others
    for (let b = 0; b < PAGE_EVENTS / SEND_MAX; b++) {
      const events = [];
      for (let i = 0; i < SEND_MAX; i++) {
        events.push(b % 10 === 4 && i === SEND_MAX - 1 ? { type: 'user.interrupt' } : message(`p-${b}-${i}`));
      }
      const r = await send(s, events);
      assert.equal(r.data.length, SEND_MAX);
      r.data.forEach((e, i) => {
        assert.equal(e.type, events[i].type);
        sentIds.push(e.id);
        if (e.processed_at === null) queued.add(e.id);
        if (e.type === 'user.interrupt') queued.clear();
      });
    }
    assert.equal(new Set(sentIds).size, PAGE_EVENTS, 'every send answered new ids');

    const walk = async (params) => {
      let page = await client.beta.sessions.events.list(s, params);
      const ids = [];
      let pages = 1;
      const all = [...page.data];
      while (page.hasNextPage()) {
        page = await page.getNextPage();
        pages++;
        all.push(...page.data);
        assert.ok(page.data.length <= params.limit);
      }
      assert.equal(page.next_page, null, 'the last page says next_page: null');
      for (const e of all) ids.push(e.id);
      return { all, ids, pages };
    };
    const asc = await walk({ limit: 100 });
    const desc = await walk({ limit: 100, order: 'desc' });
    const big = await walk({ limit: 1000 });
    const small = await walk({ limit: 7, order: 'desc' });
    assert.equal(new Set(asc.ids).size, asc.ids.length, 'no duplicates (asc)');
    assert.equal(new Set(desc.ids).size, desc.ids.length, 'no duplicates (desc)');
    const extra = asc.all.filter((e) => !sentIds.includes(e.id));
    assert.deepEqual(extra.map((e) => e.type), ['session.status_running'], 'besides what was sent: one status event');
    assert.equal(asc.ids.length, PAGE_EVENTS + 1, 'no gaps');
    assert.equal(asc.pages, Math.ceil((PAGE_EVENTS + 1) / 100));
    assert.deepEqual(desc.ids, [...asc.ids].reverse(), 'desc is asc reversed');
    assert.deepEqual(big.ids, asc.ids, 'pages of 1000 walk the same order');
    assert.deepEqual(small.ids, desc.ids, 'pages of 7 (desc) walk the same order');
    // queued messages (the ones after the last interrupt) come last, in the order sent
    const tail = asc.all.slice(-queued.size);
    assert.ok(queued.size > 0);
    assert.deepEqual(tail.map((e) => e.id), sentIds.filter((id) => queued.has(id)));
    assert.ok(tail.every((e) => e.processed_at === null));
    assert.ok(asc.all.slice(0, -queued.size).every((e) => e.processed_at !== null), 'processed events first');
    // the SDK's own auto-pagination agrees
    assert.deepEqual((await listAll(s, { limit: 250 })).map((e) => e.id), asc.ids);
  });

  test('types[] (repeated) filters, also across pages', async () => {
    const s = await mksession();
    const m1 = (await send(s, [message('m1')])).data[0];
    const o = (await send(s, [outcome('o')])).data[0];
    const m2 = (await send(s, [message('m2')])).data[0];
    const intr = (await send(s, [{ type: 'user.interrupt' }])).data[0];
    const calls = [];
    const rc = new Anthropic({
      baseURL: URL_, apiKey: KEY,
      fetch: async (url, init) => { calls.push(new URL(String(url))); return fetch(url, init); },
    });
    const got = await listAll(s, { types: ['user.message', 'user.interrupt'], limit: 1 }, rc);
    assert.deepEqual(got.map((e) => e.id).sort(), [m1.id, m2.id, intr.id].sort());
    assert.equal(calls.length, 3, 'three pages of one');
    assert.deepEqual(calls[0].searchParams.getAll('types[]'), ['user.message', 'user.interrupt'], 'types[] repeated');
    assert.ok(calls[1].searchParams.get('page'), 'the next page carries its cursor');
    assert.deepEqual((await listAll(s, { types: ['user.define_outcome'] })).map((e) => e.id), [o.id]);
    const status = await listAll(s, { types: ['session.status_running'] });
    assert.equal(status.length, 1);
    assert.deepEqual(await listAll(s, { types: ['agent.message'] }), []);
  });

  test('created_at[gt|gte|lt|lte] filter on processed_at', async () => {
    const s = await mksession();
    const batches = [];
    for (let b = 0; b < 3; b++) {
      batches.push((await send(s, [outcome(`b${b}-0`), outcome(`b${b}-1`)])).data);
      await sleep(20);
    }
    const at = batches.map((b) => b[0].processed_at);
    const ids = (...bs) => bs.flatMap((b) => batches[b].map((e) => e.id));
    const got = async (params) => (await listAll(s, params)).map((e) => e.id);
    assert.ok(at[0] < at[1] && at[1] < at[2], `distinct times ${at}`);
    assert.deepEqual(await got({ 'created_at[gte]': at[1], 'created_at[lt]': at[2] }), ids(1));
    assert.deepEqual(await got({ 'created_at[gte]': at[1] }), ids(1, 2));
    assert.deepEqual(await got({ 'created_at[gt]': at[1] }), ids(2));
    assert.deepEqual(await got({ 'created_at[lt]': at[1] }), ids(0));
    assert.deepEqual(await got({ 'created_at[lte]': at[1] }), ids(0, 1));
    assert.deepEqual(await got({ 'created_at[gte]': at[1], 'created_at[lt]': at[2], order: 'desc', limit: 1 }),
      ids(1).reverse());
    await rejects(client.beta.sessions.events.list(s, { 'created_at[gte]': 'yesterday' }), BadRequestError, { status: 400 });
  });

  test('an unknown query parameter is refused', async () => {
    const s = await mksession();
    const err = await rejects(client.beta.sessions.events.list(s, { colour: 'red' }), BadRequestError, { status: 400 });
    assert.match(err.apiMessage, /colour/);
  });
});

// ---- refusals ----

describe('malformed events: 400 naming the field, nothing stored', () => {
  test('shapes and placement', async () => {
    const s = await mksession();
    await send(s, [message('the only one')]);
    const before = await listAll(s);
    const img = (source) => ({ type: 'user.message', content: [{ type: 'image', source }] });
    await refused(s, [{ type: 'user.nope' }], 'events[0].type');
    await refused(s, [{ type: 'agent.message', content: [text('x')] }], 'events[0].type');
    await refused(s, [{ content: [text('x')] }], 'events[0].type');
    await refused(s, [{ type: 'user.message' }], 'events[0].content');
    await refused(s, [{ type: 'user.message', content: [] }], 'events[0].content');
    await refused(s, [{ type: 'user.message', content: [{ type: 'video' }] }], 'events[0].content[0].type');
    await refused(s, [{ type: 'user.message', content: [{ type: 'text' }] }], 'events[0].content[0].text');
    await refused(s, [img({ type: 'ftp', url: 'x' })], 'events[0].content[0].source.type');
    await refused(s, [img({ type: 'base64', media_type: 'image/bmp', data: 'x' })], 'events[0].content[0].source.media_type');
    await refused(s, [img({ type: 'url' })], 'events[0].content[0].source.url');
    await refused(s, [message('ok'), { type: 'user.message', content: 'not an array' }], 'events[1].content');
    await refused(s, [{ ...message('x'), colour: 'red' }], 'events[0].colour');
    await refused(s, [confirm(newEventId(), 'allow', { deny_message: 'no' })], 'events[0].deny_message');
    await refused(s, [confirm(newEventId(), 'maybe')], 'events[0].result');
    await refused(s, [{ type: 'user.tool_confirmation', result: 'allow' }], 'events[0].tool_use_id');
    await refused(s, [{ type: 'user.custom_tool_result' }], 'events[0].custom_tool_use_id');
    await refused(s, [{ type: 'user.define_outcome', description: 'd' }], 'events[0].rubric');
    await refused(s, [{ ...outcome('d'), max_iterations: 0 }], 'events[0].max_iterations');
    const sys = { type: 'system.message', content: [text('be brief')] };
    await refused(s, [sys, message('x')], 'events[0]');
    await refused(s, [sys], 'events[0]');
    await refused(s, [{ type: 'user.interrupt' }, sys], 'events[1]');
    await refused(s, [message('x'), sys, sys], 'events[1]');
    await refused(s, [], 'events');
    await refused(s, Array.from({ length: SEND_MAX + 1 }, (_, i) => message(`m${i}`)), 'events');
    await refused(s, null, 'events', null, {});
    await refused(s, null, 'events', null, { events: 'x' });
    await refused(s, null, 'extra', null, { events: [message('x')], extra: 1 });
    // a system.message directly after a message, result or custom result is fine
    assert.equal((await send(s, [message('then'), sys])).data.length, 2);
    const after = await listAll(s);
    assert.deepEqual(after.slice(0, before.length), before, 'nothing a refusal touched changed');
    assert.equal(after.length, before.length + 2, 'nothing refused was stored');
  });

  test('archived and terminated sessions take no events', async () => {
    const s = await mksession();
    await client.beta.sessions.archive(s);
    await refused(s, [message('x')], s, 'session_archived');
  });

  test('a terminated session takes no events', { skip: NO_SQL }, async () => {
    const s = await mksession();
    sql(`UPDATE sessions SET status = 'terminated' WHERE id = ${q(s)}`);
    await refused(s, [message('x')], s, 'session_terminated');
  });
});

describe('answers are checked against the log (agent events written with SQL)', { skip: NO_SQL }, () => {
  test('cloud: confirmations and custom results; unknown, twice, not asked, not self-hosted', async () => {
    const s = await mksession('cloud');
    await send(s, [message('go')]);
    const ask = agentEvent(s, toolUse('ask'));
    const allowed = agentEvent(s, toolUse('allow'));
    const custom = agentEvent(s, customUse());
    const mcp = agentEvent(s, mcpUse('ask'));
    const before = (await listAll(s)).length;
    await refused(s, [customResult(newEventId())], 'events[0].custom_tool_use_id', 'tool_use_not_found');
    await refused(s, [confirm(newEventId(), 'allow')], 'events[0].tool_use_id', 'tool_use_not_found');
    await refused(s, [confirm('not-an-id', 'allow')], 'events[0].tool_use_id', 'tool_use_not_found');
    await refused(s, [toolResult(allowed)], 'events[0]', 'tool_result_not_self_hosted');
    await refused(s, [confirm(allowed, 'allow')], 'events[0].tool_use_id', 'tool_use_not_awaiting_confirmation');
    await refused(s, [confirm(custom, 'allow')], 'events[0].tool_use_id', 'tool_use_not_awaiting_confirmation');
    await refused(s, [customResult(ask)], 'events[0].custom_tool_use_id', 'tool_use_not_found');
    // a good answer with a bad one: neither is stored
    await refused(s, [customResult(custom), customResult(newEventId())], 'events[1].custom_tool_use_id', 'tool_use_not_found');
    assert.equal((await listAll(s)).length, before, 'refused answers are not stored');

    const r = await send(s, [confirm(ask, 'allow'), customResult(custom), confirm(mcp, 'deny', { deny_message: 'not now' })]);
    assert.deepEqual(r.data.map((e) => e.type), ['user.tool_confirmation', 'user.custom_tool_result', 'user.tool_confirmation']);
    await refused(s, [customResult(custom)], 'events[0].custom_tool_use_id', 'tool_use_already_answered');
    await refused(s, [confirm(ask, 'allow')], 'events[0].tool_use_id', 'tool_use_not_awaiting_confirmation');
    await refused(s, [confirm(mcp, 'allow')], 'events[0].tool_use_id', 'tool_use_not_awaiting_confirmation');
    // the same answer twice in one request: the second is refused, the first not stored
    const custom2 = agentEvent(s, customUse());
    await refused(s, [customResult(custom2), customResult(custom2)], 'events[1].custom_tool_use_id', 'tool_use_already_answered');
    assert.equal((await send(s, [customResult(custom2)])).data.length, 1);
    // a system.message directly after a custom result is fine; after a confirmation it is not
    const custom3 = agentEvent(s, customUse());
    const sys = { type: 'system.message', content: [text('be brief')] };
    await refused(s, [confirm(agentEvent(s, toolUse('ask')), 'allow'), sys], 'events[1]');
    assert.equal((await send(s, [customResult(custom3), sys])).data.length, 2);
  });

  test('self_hosted: results, result before approval, after a denial, twice', async () => {
    const s = await mksession('self_hosted');
    await send(s, [message('go')]);
    const plain = agentEvent(s, toolUse('allow'));
    const ask = agentEvent(s, toolUse('ask'));
    const denied = agentEvent(s, toolUse('ask'));
    const noPerm = agentEvent(s, { type: 'agent.tool_use', name: 'read', input: {} });
    assert.equal((await send(s, [toolResult(plain)])).data[0].tool_use_id, plain);
    await refused(s, [toolResult(plain)], 'events[0].tool_use_id', 'tool_use_already_answered');
    await refused(s, [toolResult(ask)], 'events[0].tool_use_id', 'tool_use_not_approved');
    await send(s, [confirm(ask, 'allow')]);
    await refused(s, [confirm(ask, 'allow')], 'events[0].tool_use_id', 'tool_use_not_awaiting_confirmation');
    await send(s, [toolResult(ask)]);
    await send(s, [confirm(denied, 'deny', { deny_message: 'no' })]);
    await refused(s, [toolResult(denied)], 'events[0].tool_use_id', 'tool_use_denied');
    await refused(s, [toolResult(newEventId())], 'events[0].tool_use_id', 'tool_use_not_found');
    // a missing evaluated_permission means allow; a system.message may follow a result
    await send(s, [toolResult(noPerm), { type: 'system.message', content: [text('go on')] }]);
  });

  test('the last answer a requires_action waited for resumes the turn; fewer re-announce the idle', async () => {
    const s = await mksession('self_hosted');
    const a = agentEvent(s, toolUse('allow'));
    const b = agentEvent(s, customUse());
    sql(`UPDATE sessions SET status = 'idle', turn_pending = 0, blocking = ${q(JSON.stringify([a, b]))} WHERE id = ${q(s)}`);
    const w = await watch(s);
    // the rows written with SQL reach the stream through the tailer's next look: a watcher that
    // came first gets them live, before anything written after them; what this test watches is
    // what came after them
    const lead = (ev) => {
      let i = 0;
      while (i < ev.length && (ev[i].id === a || ev[i].id === b)) i++;
      return i;
    };
    const after = (ev) => ev.slice(lead(ev));
    await send(s, [toolResult(a)]);
    await w.until((ev) => after(ev).length >= 2, 'the result and an idle');
    assert.equal(after(w.events)[1].type, 'session.status_idle');
    assert.deepEqual(after(w.events)[1].stop_reason, { type: 'requires_action', event_ids: [b] });
    assert.equal((await client.beta.sessions.retrieve(s)).status, 'idle');
    await send(s, [customResult(b)]);
    await w.until((ev) => after(ev).length >= 4, 'the custom result and session.status_running');
    assert.deepEqual(after(w.events).slice(2).map((e) => e.type), ['user.custom_tool_result', 'session.status_running']);
    assert.equal((await client.beta.sessions.retrieve(s)).status, 'running');
    assert.deepEqual((await listAll(s)).slice(-4), after(w.events));
    const early = w.events.slice(0, lead(w.events)).map((e) => e.id);
    assert.equal(new Set(early).size, early.length, `a and b at most once each: ${early}`);
    await w.close();
  });
});

// ---- isolation, deletion ----

describe('isolation and deletion', () => {
  test('another workspace: 404 on send, list and stream', { skip: !KEY2 && 'TERRARIUM_KEY2 not set' }, async () => {
    const s = await mksession();
    const other = new Anthropic({ baseURL: URL_, apiKey: KEY2 });
    await rejects(other.beta.sessions.events.send(s, { events: [message('x')] }), NotFoundError, { status: 404 });
    await rejects(other.beta.sessions.events.list(s), NotFoundError, { status: 404 });
    await rejects(other.beta.sessions.events.stream(s), NotFoundError, { status: 404 });
    await rejects(client.beta.sessions.events.stream('sesn_000000000000000000000000'), NotFoundError, { status: 404 });
    assert.deepEqual(await listAll(s), [], 'nothing was stored');
  });

  test("a watcher of session A never sees B's events", { skip: BUFFERED }, async () => {
    const a = await mksession();
    const b = await mksession();
    const wa = await watch(a);
    const wb = await watch(b);
    const bIds = [];
    for (let i = 0; i < 4; i++) {
      for (const e of (await send(b, Array.from({ length: 5 }, (_, k) => message(`b-${i}-${k}`)))).data) bIds.push(e.id);
    }
    const aSent = (await send(a, [outcome('only a')])).data[0];
    await wa.until((ev) => ev.some((e) => e.id === aSent.id), "A's event");
    await wb.until((ev) => bIds.every((id) => ev.some((e) => e.id === id)), "B's events");
    await sleep(QUIET_MS);
    assert.deepEqual(wa.events.map((e) => e.id), [aSent.id]);
    assert.ok(wb.events.every((e) => e.id !== aSent.id));
    await wa.close();
    await wb.close();
  });

  test('deleting a session while it streams: session.deleted, then the stream ends', { skip: BUFFERED }, async () => {
    const s = await mksession();
    const other = await mksession();
    const w = await watch(s);
    const w2 = await watch(s);
    const wOther = await watch(other);
    await send(s, [outcome('before the delete')]);
    await w.until((ev) => ev.length >= 1, 'the first event');
    // a worker-held stream reads its session's log every [stream] poll_ms: the delete drops the
    // log, so the second watcher must have read the event before it
    await w2.until((ev) => ev.length >= 1, 'the first event on the second stream');
    await client.beta.sessions.delete(s);
    await until(() => w.ended && w2.ended, 'both streams to end');
    assert.equal(w.error, null, `the stream ended without an error (${w.error})`);
    assert.deepEqual(w.events.map((e) => e.type), ['user.define_outcome', 'session.deleted']);
    assertEvent(w.events[1]);
    assert.deepEqual(w2.events.map((e) => e.type), ['user.define_outcome', 'session.deleted']);
    assert.equal(wOther.ended, false, "another session's stream goes on");
    await rejects(client.beta.sessions.events.list(s), NotFoundError, { status: 404 });
    await rejects(client.beta.sessions.events.stream(s), NotFoundError, { status: 404 });
    await wOther.close();
  });
});
