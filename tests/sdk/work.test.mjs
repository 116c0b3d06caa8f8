// The self-hosted work queue (docs/api.md §6, docs/work-queue.md) through the UNCHANGED official SDK
// (@anthropic-ai/sdk 1.14.0): client.beta.environments.work.* and its WorkPoller, with
// `environmentKey` set to a key from `terrarium-api key create-environment`.
// Run by tests/work/run.sh (part of tests/e2e/run.sh). Needs TERRARIUM_URL, TERRARIUM_KEY,
// TERRARIUM_KEY2 (another workspace), TERRARIUM_CONFIG (the CLI's configuration) and
// TERRARIUM_RUN (where the stack's logs are: no token may appear in them).
//
// What the SDK does (node_modules/@anthropic-ai/sdk/lib/environments/poller.js, resources/beta/
// environments/work.js): WorkPoller polls GET .../work/poll with `Authorization: Bearer
// <environmentKey>`, `Anthropic-Worker-ID`, block_ms (default 999) and reclaim_older_than_ms;
// a 204 is null (then it sleeps 1-3 s, or returns when `drain`); it acks each item, yields it,
// and posts stop after the loop body (autoStop), ignoring 409. `412 heartbeat_precondition_failed`
// maps to BetaHeartbeatPreconditionFailedError (core/error-classes.js).

import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic, {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
} from '@anthropic-ai/sdk';
import { BetaHeartbeatPreconditionFailedError } from '@anthropic-ai/sdk/resources/beta/environments/work';
import { KEY, KEY2, RUN, URL_, requireEnv } from './lib.mjs';

requireEnv('TERRARIUM_KEY2', 'TERRARIUM_CONFIG', 'TERRARIUM_RUN');
const CONFIG = process.env.TERRARIUM_CONFIG;
const RUN_DIR = process.env.TERRARIUM_RUN;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD = process.env.BUILD_DIR ? path.resolve(ROOT, process.env.BUILD_DIR) : path.join(ROOT, 'build');
const CLI = path.join(BUILD, 'terrarium-api');
const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const WORK_ID = /^work_[0-9A-Za-z]{24}$/;
const WORK_KEYS = [
  'acknowledged_at', 'created_at', 'data', 'environment_id', 'id', 'latest_heartbeat_at',
  'metadata', 'secret', 'started_at', 'state', 'stop_requested_at', 'stopped_at', 'type',
].sort();

// the SDK retries 5xx and 409 unless told not to; a test must see the first answer
const client = new Anthropic({ baseURL: URL_, apiKey: KEY, maxRetries: 0 });
const other = new Anthropic({ baseURL: URL_, apiKey: KEY2, maxRetries: 0 });
const asKey = (k) => new Anthropic({ baseURL: URL_, apiKey: null, authToken: k, maxRetries: 0 });
const work = client.beta.environments.work;
const secrets = []; // every key and token this file saw: none may be logged

function cli(...args) {
  return cliInput(undefined, ...args);
}

// the CLI with INPUT on stdin (`key revoke` reads the key there, never from its arguments)
function cliInput(input, ...args) {
  return execFileSync(CLI, ['-c', CONFIG, ...args], { encoding: 'utf8', input }).trim();
}
function envKey(envId) {
  const k = cli('key', 'create-environment', envId);
  assert.match(k, /^trmenv_[0-9A-Za-z]{40}$/);
  secrets.push(k);
  return k;
}
function decodeSecret(s) {
  const payload = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  assert.match(payload.sessions_token, /^trmst_[0-9A-Za-z]{40}$/);
  assert.equal(payload.api_base_url, URL_);
  secrets.push(payload.sessions_token);
  return payload.sessions_token;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let agentId;
async function selfHosted(c = client, tag = 'q') {
  const env = await c.beta.environments.create({ name: `work-${tag}-${RUN}`, config: { type: 'self_hosted' } });
  return env.id;
}
async function session(envId, c = client) {
  const s = await c.beta.sessions.create({ agent: agentId, environment_id: envId });
  return s.id;
}
async function stats(envId) {
  const s = await work.stats(envId);
  assert.equal(s.type, 'work_queue_stats');
  return s;
}
// the item of SESSION, read with the workspace key
async function itemOf(envId, sessionId) {
  for await (const w of work.list(envId)) if (w.data.id === sessionId) return w;
  return null;
}

before(async () => {
  const agent = await client.beta.agents.create({ name: `work-${RUN}`, model: 'claude-sonnet-4-5' });
  agentId = agent.id;
});

describe('queueing and the object', () => {
  test('a session of a self_hosted environment queues one item; a cloud one none', async () => {
    const envId = await selfHosted();
    const s = await session(envId);
    const page = await work.list(envId);
    assert.equal(page.data.length, 1);
    const w = page.data[0];
    assert.deepEqual(Object.keys(w).sort(), WORK_KEYS);
    assert.match(w.id, WORK_ID);
    assert.equal(w.type, 'work');
    assert.equal(w.environment_id, envId);
    assert.deepEqual(w.data, { type: 'session', id: s });
    assert.equal(w.state, 'queued');
    assert.deepEqual(w.metadata, {});
    assert.equal(w.secret, null);
    assert.match(w.created_at, RFC3339_UTC);
    for (const k of ['acknowledged_at', 'started_at', 'latest_heartbeat_at', 'stop_requested_at', 'stopped_at'])
      assert.equal(w[k], null, k);
    const got = await work.retrieve(w.id, { environment_id: envId });
    assert.deepEqual(got, w);

    const cloud = await client.beta.environments.create({ name: `work-cloud-${RUN}` });
    await session(cloud.id);
    await assert.rejects(work.list(cloud.id), (e) => e instanceof BadRequestError && /self_hosted/.test(e.message));
    await assert.rejects(work.poll(cloud.id), BadRequestError);
    await assert.rejects(work.stats(cloud.id), BadRequestError);
  });

  test('metadata: per-key patch, null deletes, limits', async () => {
    const envId = await selfHosted();
    await session(envId);
    const [w] = (await work.list(envId)).data;
    let u = await work.update(w.id, { environment_id: envId, metadata: { a: '1', b: '2' } });
    assert.deepEqual(u.metadata, { a: '1', b: '2' });
    u = await work.update(w.id, { environment_id: envId, metadata: { a: null, c: '3' } });
    assert.deepEqual(u.metadata, { b: '2', c: '3' });
    await assert.rejects(
      work.update(w.id, { environment_id: envId, metadata: { ['k'.repeat(65)]: 'v' } }),
      (e) => e.status === 400 && e.errorCode === 'invalid_metadata',
    );
  });

  test('list pages newest first', async () => {
    const envId = await selfHosted();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await session(envId));
    const seen = [];
    for await (const w of work.list(envId, { limit: 2 })) seen.push(w.data.id);
    assert.deepEqual(seen, ids.reverse());
  });
});

describe('WorkPoller with an environment key', () => {
  test('2 pollers drain 50 sessions concurrently: each item once, acknowledged, auto-stopped', async () => {
    const envId = await selfHosted();
    const key = envKey(envId);
    const sessions = [];
    for (let i = 0; i < 50; i++) sessions.push(await session(envId));
    assert.equal((await stats(envId)).depth, 50);

    const drain = async (name) => {
      const got = [];
      const poller = work.poller({ environmentId: envId, environmentKey: key, drain: true, workerId: name });
      for await (const w of poller) {
        // the poll's answer is yielded (state queued, secret set) after the ack
        assert.equal(w.state, 'queued');
        assert.equal((await work.retrieve(w.id, { environment_id: envId })).state, 'starting', 'acknowledged');
        got.push(w);
        await sleep(5); // the loop body: another poller gets a turn
      }
      return got;
    };
    const [a, b] = await Promise.all([drain('poller-a'), drain('poller-b')]);
    const all = [...a, ...b];
    assert.ok(a.length > 0 && b.length > 0, `both pollers took work (${a.length} + ${b.length})`);
    assert.equal(all.length, 50, 'every item yielded once');
    assert.equal(new Set(all.map((w) => w.id)).size, 50, 'no item yielded twice');
    assert.deepEqual(all.map((w) => w.data.id).sort(), [...sessions].sort());
    for (const w of all) assert.ok(w.secret, 'a poll response carries the secret');
    for await (const w of work.list(envId)) {
      assert.equal(w.state, 'stopped', `${w.id} auto-stopped`);
      assert.match(w.acknowledged_at, RFC3339_UTC);
      assert.match(w.stopped_at, RFC3339_UTC);
    }
    const s = await stats(envId);
    assert.deepEqual([s.depth, s.pending, s.oldest_queued_at], [0, 0, null]);
    assert.equal(s.workers_polling, 2);
  });

  test('an item queued while a poll is blocked reaches it before block_ms ends', async (t) => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    const t0 = Date.now();
    const polled = wk.poll(envId, { block_ms: 999 });
    await sleep(150);
    const s = await session(envId);
    const created = Date.now() - t0;
    const w = await polled;
    const elapsed = Date.now() - t0;
    assert.equal(w?.data.id, s);
    // without a wake-up the poll would answer after its 999 ms; when the create itself was that
    // slow (an overloaded machine) the timing proves nothing
    if (created < 600)
      assert.ok(elapsed < 900, `woken by the queueing, not at the end of block_ms (${elapsed} ms; created at ${created} ms)`);
    else t.diagnostic(`create took until ${created} ms: timing not checked`);
    assert.equal(await wk.poll(envId, { block_ms: 50 }), null, 'an empty queue answers 204 (null)');
  });
});

describe('states and leases', () => {
  test('stats are exact at each step', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    let s = await stats(envId);
    assert.deepEqual(s, { type: 'work_queue_stats', depth: 0, pending: 0, oldest_queued_at: null, workers_polling: null });
    const s1 = await session(envId);
    await sleep(2);
    const s2 = await session(envId);
    const first = await itemOf(envId, s1);
    const second = await itemOf(envId, s2);
    s = await stats(envId);
    assert.deepEqual([s.depth, s.pending, s.oldest_queued_at, s.workers_polling], [2, 0, first.created_at, null]);

    const w1 = await wk.poll(envId, { 'Anthropic-Worker-ID': 'stats-a' });
    assert.equal(w1.id, first.id, 'the oldest item first');
    s = await stats(envId);
    assert.deepEqual([s.depth, s.pending, s.oldest_queued_at, s.workers_polling], [1, 1, first.created_at, 1]);

    await wk.ack(w1.id, { environment_id: envId });
    s = await stats(envId);
    assert.deepEqual([s.depth, s.pending, s.oldest_queued_at], [1, 0, second.created_at]);

    const hb = await wk.heartbeat(w1.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' });
    assert.equal(hb.state, 'active');
    s = await stats(envId);
    assert.deepEqual([s.depth, s.pending], [1, 0]);

    const w2 = await wk.poll(envId, { 'Anthropic-Worker-ID': 'stats-b' });
    assert.equal(w2.id, second.id);
    s = await stats(envId);
    assert.deepEqual([s.depth, s.pending, s.oldest_queued_at, s.workers_polling], [0, 1, second.created_at, 2]);

    await wk.stop(w2.id, { environment_id: envId });
    await wk.stop(w1.id, { environment_id: envId, force: true });
    s = await stats(envId);
    assert.deepEqual([s.depth, s.pending, s.oldest_queued_at], [0, 0, null]);
  });

  test('an unacknowledged delivery is delivered again after reclaim_older_than_ms; the first token is revoked', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    const s = await session(envId);
    const d1 = await wk.poll(envId, { reclaim_older_than_ms: 400 });
    assert.equal(d1.data.id, s);
    const t1 = decodeSecret(d1.secret);
    assert.equal((await asKey(t1).beta.sessions.retrieve(s)).id, s, 'the sessions token opens its session');
    assert.equal(await wk.poll(envId, { reclaim_older_than_ms: 400 }), null, 'not yet: delivered 0 ms ago');
    assert.deepEqual([(await stats(envId)).depth, (await stats(envId)).pending], [0, 1]);
    await sleep(450);
    const d2 = await wk.poll(envId, { reclaim_older_than_ms: 400 });
    assert.equal(d2?.id, d1.id, 're-delivered');
    const t2 = decodeSecret(d2.secret);
    assert.notEqual(t2, t1);
    await assert.rejects(asKey(t1).beta.sessions.retrieve(s), AuthenticationError, 'a re-delivery revokes the earlier token');
    assert.equal((await asKey(t2).beta.sessions.retrieve(s)).id, s);
    // the WorkPoller reclaims too
    await sleep(450);
    const poller = work.poller({ environmentId: envId, environmentKey: (await envKey(envId)), drain: true, reclaimOlderThanMs: 400 });
    const got = [];
    for await (const w of poller) got.push(w.id);
    assert.deepEqual(got, [d1.id]);
  });

  test('heartbeats: NO_HEARTBEAT claims, the previous value extends, a stale one raises BetaHeartbeatPreconditionFailedError', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    await session(envId);
    const w = await wk.poll(envId);
    await assert.rejects(wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' }),
      (e) => e instanceof BetaHeartbeatPreconditionFailedError && e.details.current_state.state === 'queued',
      'no lease before the ack');
    const acked = await wk.ack(w.id, { environment_id: envId });
    assert.equal(acked.state, 'starting');
    assert.match(acked.acknowledged_at, RFC3339_UTC);
    await assert.rejects(wk.ack(w.id, { environment_id: envId }), ConflictError, 'acknowledged once');
    const h1 = await wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT', desired_ttl_seconds: 5 });
    assert.deepEqual([h1.type, h1.state, h1.lease_extended, h1.ttl_seconds], ['work_heartbeat', 'active', true, 10]);
    assert.match(h1.last_heartbeat, RFC3339_UTC);
    const h2 = await wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: h1.last_heartbeat, desired_ttl_seconds: 9999 });
    assert.equal(h2.ttl_seconds, 600, 'clamped to 600');
    assert.ok(h2.last_heartbeat > h1.last_heartbeat);
    const err = await wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: h1.last_heartbeat }).catch((e) => e);
    assert.ok(err instanceof BetaHeartbeatPreconditionFailedError, `stale heartbeat: ${err}`);
    assert.equal(err.status, 412);
    assert.equal(err.errorCode, 'heartbeat_precondition_failed');
    assert.deepEqual(err.details.current_state, { last_heartbeat: h2.last_heartbeat, lease_extended: false, state: 'active', ttl_seconds: 600 });
    const item = await work.retrieve(w.id, { environment_id: envId });
    assert.equal(item.latest_heartbeat_at, h2.last_heartbeat);
    assert.equal(item.started_at, h1.last_heartbeat);
    await assert.rejects(wk.heartbeat(w.id, { environment_id: envId, desired_ttl_seconds: -1 }), BadRequestError);
  });

  test('a lease that expires gives the item back to the queue', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    await session(envId);
    const w = await wk.poll(envId);
    await wk.ack(w.id, { environment_id: envId });
    const h = await wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT', desired_ttl_seconds: 10 });
    assert.equal(h.ttl_seconds, 10);
    assert.equal(await wk.poll(envId), null, 'leased: not deliverable');
    // a blocked poll wakes when the lease expires (10 s is the shortest TTL): poll until then
    let again = null;
    const deadline = Date.now() + 14000;
    while (!again && Date.now() < deadline) again = await wk.poll(envId, { block_ms: 999 });
    assert.equal(again?.id, w.id, 'delivered again after the lease expired');
    assert.equal(again.state, 'queued');
    assert.equal(again.latest_heartbeat_at, null);
    await assert.rejects(wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: h.last_heartbeat }),
      BetaHeartbeatPreconditionFailedError, 'the old lease holder is told');
  });

  test('stop and force-stop from every state', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    // an item of a fresh session in STATE ('queued' undelivered, 'delivered', 'starting', 'active', 'stopping')
    const make = async (state) => {
      const s = await session(envId);
      const w = await itemOf(envId, s);
      if (state === 'queued') return w.id;
      let got;
      do got = await wk.poll(envId); while (got && got.id !== w.id && (await wk.stop(got.id, { environment_id: envId, force: true })));
      assert.equal(got.id, w.id);
      if (state === 'delivered') return w.id;
      await wk.ack(w.id, { environment_id: envId });
      if (state === 'starting') return w.id;
      await wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' });
      if (state === 'active') return w.id;
      assert.equal((await wk.stop(w.id, { environment_id: envId })).state, 'stopping');
      return w.id;
    };
    const expect = {
      queued: ['stopped', 'stopped'],
      delivered: ['stopped', 'stopped'],
      starting: ['stopped', 'stopped'],
      active: ['stopping', 'stopped'],
      stopping: ['stopping', 'stopped'],
    };
    for (const [state, [plain, forced]] of Object.entries(expect)) {
      for (const force of [false, true]) {
        const id = await make(state);
        const r = await wk.stop(id, { environment_id: envId, force });
        assert.equal(r.state, force ? forced : plain, `${state} + stop(force=${force})`);
        assert.match(r.stop_requested_at, RFC3339_UTC);
        if (r.state === 'stopped') {
          assert.match(r.stopped_at, RFC3339_UTC);
          await assert.rejects(wk.stop(id, { environment_id: envId }), ConflictError, 'stopped: 409');
          await assert.rejects(wk.stop(id, { environment_id: envId, force: true }), ConflictError);
        } else {
          const hb = await wk.heartbeat(id, { environment_id: envId, expected_last_heartbeat: 'anything' });
          assert.deepEqual([hb.state, hb.lease_extended], ['stopping', false], 'a stopping heartbeat tells the worker to stop');
          assert.equal((await wk.stop(id, { environment_id: envId, force: true })).state, 'stopped');
        }
      }
    }
    const s = await stats(envId);
    assert.deepEqual([s.depth, s.pending], [0, 0]);
  });

  test('archiving or deleting the session requests the stop', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    const queuedS = await session(envId);
    await client.beta.sessions.archive(queuedS);
    assert.equal((await itemOf(envId, queuedS)).state, 'stopped');
    const activeS = await session(envId);
    const w = await wk.poll(envId);
    assert.equal(w.data.id, activeS);
    await wk.ack(w.id, { environment_id: envId });
    await wk.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' });
    await client.beta.sessions.delete(activeS);
    const it = await itemOf(envId, activeS);
    assert.equal(it.state, 'stopping');
    assert.match(it.stop_requested_at, RFC3339_UTC);
  });

  test('block_ms 0 and 1000, bad reclaim_older_than_ms and worker ids: 400 naming the parameter', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    for (const block_ms of [0, 1000, -1]) {
      await assert.rejects(wk.poll(envId, { block_ms }), (e) => e instanceof BadRequestError && /'block_ms'/.test(e.message));
    }
    await assert.rejects(wk.poll(envId, { reclaim_older_than_ms: 0 }), (e) => e instanceof BadRequestError && /'reclaim_older_than_ms'/.test(e.message));
    await assert.rejects(wk.poll(envId, { 'Anthropic-Worker-ID': 'x'.repeat(129) }), (e) => e instanceof BadRequestError && /anthropic-worker-id/.test(e.message));
  });
});

describe('keys', () => {
  test('an environment key opens only its environment\'s work routes', async () => {
    const envA = await selfHosted();
    const envB = await selfHosted();
    const keyA = envKey(envA);
    const a = asKey(keyA);
    await session(envB);
    await assert.rejects(a.beta.environments.work.poll(envB), (e) => e instanceof NotFoundError && e.errorCode === 'environment_not_found');
    await assert.rejects(a.beta.environments.work.stats(envB), NotFoundError);
    await assert.rejects(a.beta.environments.work.list(envB), NotFoundError);
    await assert.rejects(a.beta.environments.list(), NotFoundError);
    await assert.rejects(a.beta.environments.retrieve(envA), NotFoundError);
    await assert.rejects(a.beta.sessions.list(), NotFoundError);
    // another workspace's environment
    const envOther = await selfHosted(other, 'other');
    await assert.rejects(a.beta.environments.work.stats(envOther), NotFoundError);
    const keyOther = envKey(envOther);
    await assert.rejects(asKey(keyOther).beta.environments.work.stats(envA), NotFoundError);
    // revoked: 401
    assert.equal((await a.beta.environments.work.stats(envA)).type, 'work_queue_stats');
    cliInput(`${keyA}\n`, 'key', 'revoke');
    await assert.rejects(a.beta.environments.work.stats(envA), AuthenticationError);
    await assert.rejects(a.beta.environments.work.poll(envA), AuthenticationError);
    // the CLI refuses cloud and unknown environments
    const cloud = await client.beta.environments.create({ name: `work-cloud-key-${RUN}` });
    assert.throws(() => cli('key', 'create-environment', cloud.id));
    assert.throws(() => cli('key', 'create-environment', 'env_000000000000000000000000'));
  });

  test('a sessions token: its item and its session only, until the item stops', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    const s = await session(envId);
    const otherS = await session(envId);
    const w = await wk.poll(envId);
    assert.equal(w.data.id, s);
    const token = decodeSecret(w.secret);
    const t = asKey(token);
    assert.equal((await t.beta.sessions.retrieve(s)).id, s);
    await assert.rejects(t.beta.sessions.retrieve(otherS), NotFoundError);
    await assert.rejects(t.beta.sessions.list(), NotFoundError);
    await assert.rejects(t.beta.environments.work.poll(envId), NotFoundError, 'a token does not poll');
    await assert.rejects(t.beta.environments.work.stats(envId), NotFoundError);
    const otherItem = await itemOf(envId, otherS);
    await assert.rejects(t.beta.environments.work.retrieve(otherItem.id, { environment_id: envId }), NotFoundError);
    assert.equal((await t.beta.environments.work.retrieve(w.id, { environment_id: envId })).id, w.id);
    await t.beta.environments.work.ack(w.id, { environment_id: envId });
    await t.beta.environments.work.heartbeat(w.id, { environment_id: envId, expected_last_heartbeat: 'NO_HEARTBEAT' });
    assert.equal((await t.beta.environments.work.stop(w.id, { environment_id: envId, force: true })).state, 'stopped');
    await assert.rejects(t.beta.sessions.retrieve(s), AuthenticationError, 'stopped: the token is revoked');
    await assert.rejects(t.beta.environments.work.retrieve(w.id, { environment_id: envId }), AuthenticationError);
  });
});

describe('races', () => {
  test('a session deleted while its item is being polled', async () => {
    const envId = await selfHosted();
    const wk = asKey(envKey(envId)).beta.environments.work;
    let delivered = 0;
    for (let i = 0; i < 30; i++) {
      const s = await session(envId);
      const [w] = await Promise.all([wk.poll(envId, { block_ms: 100 }), client.beta.sessions.delete(s)]);
      const item = await itemOf(envId, s);
      assert.equal(item.state, 'stopped', `round ${i}`);
      await assert.rejects(client.beta.sessions.retrieve(s), NotFoundError);
      if (w) {
        delivered++;
        assert.equal(w.id, item.id);
        await assert.rejects(asKey(decodeSecret(w.secret)).beta.sessions.retrieve(s), AuthenticationError);
      }
    }
    const st = await stats(envId);
    assert.deepEqual([st.depth, st.pending], [0, 0]);
    console.log(`# ${delivered} of 30 polls got the item before the delete`);
  });

  test('two pollers polling the same single item 200 times: one delivery each time', async () => {
    const envId = await selfHosted();
    const key = envKey(envId);
    const p1 = asKey(key).beta.environments.work;
    const p2 = asKey(key).beta.environments.work;
    for (let i = 0; i < 200; i++) {
      const s = await session(envId);
      const got = (await Promise.all([p1.poll(envId), p2.poll(envId)])).filter(Boolean);
      assert.equal(got.length, 1, `round ${i}: one delivery`);
      assert.equal(got[0].data.id, s);
      await p1.stop(got[0].id, { environment_id: envId, force: true });
    }
  });
});

describe('secrets', () => {
  test('keys and tokens never appear in the logs', () => {
    assert.ok(secrets.length > 10, `${secrets.length} secrets seen`);
    const logs = readdirSync(RUN_DIR).filter((f) => f.endsWith('.log')).map((f) => path.join(RUN_DIR, f));
    assert.ok(logs.length > 0);
    for (const f of logs) {
      if (!statSync(f).isFile()) continue;
      const text = readFileSync(f, 'utf8');
      for (const s of secrets) assert.ok(!text.includes(s), `${path.basename(f)} holds a secret`);
    }
  });
});
