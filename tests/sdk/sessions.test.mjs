// Sessions API through the UNCHANGED official SDK (@anthropic-ai/sdk, version pinned in
// package.json). Run with tests/sdk/run.sh; needs TERRARIUM_URL and TERRARIUM_KEY, optionally
// TERRARIUM_KEY2 (a key of another workspace: enables the isolation test) and
// TERRARIUM_URL_opensandbox (a deployment whose sandbox backend is opensandbox, same database and
// key: enables the packages + limited networking scenario; skipped when unset).
//
// What the SDK does, read from node_modules/@anthropic-ai/sdk (1.14.0),
// resources/beta/sessions/sessions.{js,d.ts}:
//
// - client.beta.sessions.create(params) POST /v1/sessions; .retrieve(id) GET /v1/sessions/{id};
//   .update(id, params) POST /v1/sessions/{id}; .list(params) GET /v1/sessions ->
//   PagePromise<BidirectionalPageCursor<BetaManagedAgentsSession>>; .delete(id) DELETE
//   /v1/sessions/{id} -> {id, type: 'session_deleted'}; .archive(id) POST
//   /v1/sessions/{id}/archive with no body. Every method adds
//   `anthropic-beta: managed-agents-2026-04-01`; `betas` and `workspace_id` params become headers,
//   everything else is the body (create, update) or the query (list).
// - `agent` on create: an agent id string (pins the latest version) or
//   {type: 'agent', id, version?}. Update: `metadata` (per-key patch, null deletes), `title`,
//   `agent: {mcp_servers}` (full replacement).
// - BidirectionalPageCursor (core/pagination.js): response `{data, next_page, prev_page}`; the
//   next page repeats the original query plus `page=<next_page>`; iteration stops when
//   next_page is falsy. prev_page is only kept, never followed by auto-pagination.
// - BetaManagedAgentsSession's required keys: id, type, agent, archived_at, budget, created_at,
//   environment_id, metadata, outcome_evaluations, resources, stats, status, title, updated_at,
//   usage, vault_ids (deployment_id is optional). This service adds `provisioning`; the SDK passes
//   unknown keys through (it does not validate responses).
// - Typed errors keyed on `${status} ${error.details.error_code}` (core/error-classes.js):
//   '404 environment_not_found' -> BetaEnvironmentNotFoundError, '400 environment_archived' ->
//   BetaEnvironmentArchivedError, '400 invalid_metadata' -> BetaInvalidMetadataError; otherwise
//   the status class (409 -> ConflictError). The SDK retries 409 unless `x-should-retry: false`.

import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import { KEY, KEY2, REQ_ID, RFC3339_UTC, URL_, creator, name, rejects } from './lib.mjs';
import Anthropic, { APIError, BadRequestError, ConflictError, NotFoundError } from '@anthropic-ai/sdk';
import {
  BetaEnvironmentArchivedError,
  BetaEnvironmentNotFoundError,
  BetaInvalidMetadataError,
} from '@anthropic-ai/sdk/resources/beta/environments';

const URL_OPENSANDBOX = process.env.TERRARIUM_URL_opensandbox || process.env.TERRARIUM_URL_OPENSANDBOX || '';

const SESN_ID = /^sesn_[0-9A-Za-z]{24}$/;
const SESSION_KEYS = [
  'agent', 'archived_at', 'budget', 'created_at', 'environment_id', 'id', 'metadata',
  'outcome_evaluations', 'provisioning', 'resources', 'stats', 'status', 'title', 'type',
  'updated_at', 'usage', 'vault_ids',
].sort();
const SNAPSHOT_KEYS = [
  'description', 'execution_identity', 'id', 'mcp_servers', 'model', 'multiagent', 'name', 'skills',
  'system', 'tools', 'type', 'version',
].sort();
const MCP_DOCS = { type: 'url', name: 'docs', url: 'https://mcp.example.com/sse' };

// The client the contract is about: nothing but baseURL and apiKey.
const client = new Anthropic({ baseURL: URL_, apiKey: KEY });

// A client that records every request it sends (method, URL) in `calls`.
function recording(baseURL = URL_, key = KEY) {
  const calls = [];
  const c = new Anthropic({
    baseURL,
    apiKey: key,
    fetch: async (url, init = {}) => {
      calls.push({ url: new URL(String(url)), method: init.method || 'GET' });
      return fetch(url, init);
    },
  });
  return { client: c, calls };
}


// what the tests create, deleted after them (lib.mjs)
const { mkagent, mkenv, mksession } = creator(client);

// Every required key of BetaManagedAgentsSession (plus `provisioning`), with its type.
function assertSessionShape(s) {
  assert.deepEqual(Object.keys(s).sort(), SESSION_KEYS);
  assert.equal(s.type, 'session');
  assert.match(s.id, SESN_ID);
  assert.deepEqual(Object.keys(s.agent).sort(), SNAPSHOT_KEYS);
  assert.equal(s.agent.type, 'agent');
  assert.equal(typeof s.agent.version, 'number');
  assert.ok(Array.isArray(s.agent.mcp_servers));
  assert.ok(['idle', 'running', 'rescheduling', 'terminated'].includes(s.status), `status ${s.status}`);
  assert.ok(s.title === null || typeof s.title === 'string');
  assert.equal(typeof s.metadata, 'object');
  for (const v of Object.values(s.metadata)) assert.equal(typeof v, 'string');
  assert.match(s.created_at, RFC3339_UTC);
  assert.match(s.updated_at, RFC3339_UTC);
  assert.ok(s.archived_at === null || RFC3339_UTC.test(s.archived_at));
  assert.deepEqual(s.resources, []);
  assert.deepEqual(s.vault_ids, []);
  assert.deepEqual(s.outcome_evaluations, []);
  assert.deepEqual(s.stats, {});
  assert.deepEqual(s.usage, {});
  assert.equal(s.budget, null);
  const p = s.provisioning;
  assert.deepEqual(Object.keys(p).sort(), ['attempts', 'environment_revision', 'last_error', 'next_attempt_at', 'status']);
  assert.ok(['pending', 'provisioning', 'ready', 'failed', 'not_required'].includes(p.status), `provisioning ${p.status}`);
  assert.ok(Number.isInteger(p.environment_revision) && p.environment_revision >= 1);
  assert.ok(Number.isInteger(p.attempts) && p.attempts >= 0);
  if ('_request_id' in s) assert.match(String(s._request_id), REQ_ID);
}

// The "done when": agent with an MCP server, environment with packages and limited
// networking, a session pending provisioning that keeps the configuration it captured, and an
// environment delete refused (409, not retried) until the session is gone.
async function doneWhen(baseURL, envConfig) {
  const c = new Anthropic({ baseURL, apiKey: KEY });
  const agent = await mkagent({ mcp_servers: [MCP_DOCS] }, c);
  const env = await mkenv({ config: envConfig }, c);
  const sess = await mksession({ agent: agent.id, environment_id: env.id, title: 'done when' }, c);
  assertSessionShape(sess);
  assert.equal(sess.environment_id, env.id);
  assert.equal(sess.status, 'idle');
  assert.deepEqual(sess.agent.mcp_servers, [MCP_DOCS]);
  assert.equal(sess.provisioning.status, 'pending');
  assert.equal(sess.provisioning.environment_revision, 1);
  assert.equal(sess.provisioning.attempts, 0);
  assert.equal(sess.provisioning.last_error, null);

  // Updating the environment afterwards changes only sessions created afterwards.
  const upd = await c.beta.environments.update(env.id, { description: 'changed after the session' });
  assert.equal(upd.description, 'changed after the session');
  const again = await c.beta.sessions.retrieve(sess.id);
  assert.equal(again.provisioning.environment_revision, 1, 'the session keeps the captured revision');
  assert.equal(again.provisioning.status, 'pending');

  // Deleting the environment: 409, exactly one HTTP request (x-should-retry: false obeyed).
  const { client: rc, calls } = recording(baseURL);
  const err = await rejects(rc.beta.environments.delete(env.id), ConflictError, { status: 409, type: 'conflict_error' });
  assert.equal(calls.length, 1, `the 409 is not retried (requests: ${calls.length})`);
  assert.equal(calls[0].method, 'DELETE');
  assert.match(err.apiMessage, /\b1 session\b/, 'the message names how many sessions');
  assert.ok((await c.beta.environments.retrieve(env.id)).id === env.id, 'the environment is still there');

  const sdel = await c.beta.sessions.delete(sess.id);
  assert.deepEqual({ ...sdel }, { id: sess.id, type: 'session_deleted' });
  const del = await c.beta.environments.delete(env.id);
  assert.deepEqual({ ...del }, { id: env.id, type: 'environment_deleted' });
  await rejects(c.beta.environments.retrieve(env.id), BetaEnvironmentNotFoundError, { status: 404, code: 'environment_not_found' });
}

describe('done when', () => {
  test('opensandbox: packages + limited networking, pending, captured revision, 409 until the session is deleted',
    { skip: !URL_OPENSANDBOX && 'TERRARIUM_URL_opensandbox not set' }, async () => {
      await doneWhen(URL_OPENSANDBOX, {
        type: 'cloud',
        packages: { pip: ['requests'] },
        networking: { type: 'limited', allowed_hosts: ['api.example.com'], allow_mcp_servers: true },
      });
    });

  test('default cloud environment: same lifecycle on TERRARIUM_URL', async () => {
    await doneWhen(URL_, { type: 'cloud' });
  });

  test('a session created after an environment update captures the new revision', async () => {
    const agent = await mkagent();
    const env = await mkenv();
    const s1 = await mksession({ agent: agent.id, environment_id: env.id });
    await client.beta.environments.update(env.id, { metadata: { rev: '2' } });
    const s2 = await mksession({ agent: agent.id, environment_id: env.id });
    assert.equal(s2.provisioning.environment_revision, 2);
    assert.equal((await client.beta.sessions.retrieve(s1.id)).provisioning.environment_revision, 1);
  });

  test('a self-hosted environment needs no provisioning', async () => {
    const agent = await mkagent();
    const env = await mkenv({ config: { type: 'self_hosted' } });
    const s = await mksession({ agent: agent.id, environment_id: env.id });
    assertSessionShape(s);
    assert.equal(s.provisioning.status, 'not_required');
  });
});

describe('create', () => {
  test('an agent id pins the latest version; {type, id, version} pins that version', async () => {
    const agent = await mkagent({ description: 'v1' });
    const v2 = await client.beta.agents.update(agent.id, { description: 'v2' });
    assert.equal(v2.version, 2);
    const env = await mkenv();
    const latest = await mksession({ agent: agent.id, environment_id: env.id });
    assert.equal(latest.agent.version, 2);
    assert.equal(latest.agent.description, 'v2');
    const pinned = await mksession({ agent: { type: 'agent', id: agent.id, version: 1 }, environment_id: env.id });
    assert.equal(pinned.agent.version, 1);
    assert.equal(pinned.agent.description, 'v1');
    await client.beta.agents.update(agent.id, { description: 'v3' });
    assert.equal((await client.beta.sessions.retrieve(latest.id)).agent.version, 2, 'the snapshot does not move');
  });

  test('errors map to the SDK classes and are not retried', async () => {
    const agent = await mkagent();
    const env = await mkenv();
    const { client: rc, calls } = recording();
    await rejects(rc.beta.sessions.create({ agent: agent.id, environment_id: 'env_000000000000000000000000' }),
      BetaEnvironmentNotFoundError, { status: 404, type: 'not_found_error', code: 'environment_not_found' });
    await rejects(rc.beta.sessions.create({ agent: 'agent_000000000000000000000000', environment_id: env.id }),
      NotFoundError, { status: 404, type: 'not_found_error' });
    const meta = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await rejects(rc.beta.sessions.create({ agent: agent.id, environment_id: env.id, metadata: meta }),
      BetaInvalidMetadataError, { status: 400, code: 'invalid_metadata' });
    const long = await rejects(rc.beta.sessions.create({ agent: agent.id, environment_id: env.id, title: 'x'.repeat(501) }),
      BadRequestError, { status: 400, type: 'invalid_request_error' });
    assert.match(long.apiMessage, /title/);
    await rc.beta.environments.archive(env.id);
    await rejects(rc.beta.sessions.create({ agent: agent.id, environment_id: env.id }),
      BetaEnvironmentArchivedError, { status: 400, code: 'environment_archived' });
    assert.equal(calls.filter((c) => c.url.pathname.endsWith('/v1/sessions')).length, 5, 'one request per refused create');
  });

  test('title and metadata are stored', async () => {
    const agent = await mkagent();
    const env = await mkenv();
    const s = await mksession({ agent: agent.id, environment_id: env.id, title: 'Order #1234', metadata: { team: 'data' } });
    assertSessionShape(s);
    assert.equal(s.title, 'Order #1234');
    assert.deepEqual(s.metadata, { team: 'data' });
    const got = await client.beta.sessions.retrieve(s.id);
    assert.deepEqual(got, s);
  });
});

describe('update, archive, delete', () => {
  let agent;
  let env;
  before(async () => {
    agent = await mkagent({ mcp_servers: [MCP_DOCS] });
    env = await mkenv();
  });

  test('metadata patch, title set and cleared, agent.mcp_servers replaced', async () => {
    const s = await mksession({ agent: agent.id, environment_id: env.id, metadata: { a: '1', b: '2', c: '3' } });
    const u1 = await client.beta.sessions.update(s.id, { metadata: { a: null, b: '', c: '3x', d: '4' }, title: 'first' });
    assertSessionShape(u1);
    assert.deepEqual(u1.metadata, { c: '3x', d: '4' });
    assert.equal(u1.title, 'first');
    assert.ok(u1.updated_at > s.updated_at, 'updated_at moves on a change');

    const servers = [
      { type: 'url', name: 'tickets', url: 'https://tickets.example.com/mcp' },
      { type: 'url', name: 'wiki', url: 'http://10.0.0.5:8080/mcp' },
    ];
    const u2 = await client.beta.sessions.update(s.id, { agent: { mcp_servers: servers } });
    assert.deepEqual(u2.agent.mcp_servers, servers, 'full replacement');
    assert.equal(u2.title, 'first', 'omitted title is kept');
    assert.deepEqual(u2.metadata, { c: '3x', d: '4' }, 'omitted metadata is kept');
    assert.deepEqual((await client.beta.agents.retrieve(agent.id)).mcp_servers, [MCP_DOCS], 'the agent itself is unchanged');

    const u3 = await client.beta.sessions.update(s.id, { title: null, agent: { mcp_servers: [] } });
    assert.equal(u3.title, null);
    assert.deepEqual(u3.agent.mcp_servers, []);
    const same = await client.beta.sessions.update(s.id, {});
    assert.equal(same.updated_at, u3.updated_at, '{} changes nothing');

    const bad = await rejects(client.beta.sessions.update(s.id, {
      agent: { mcp_servers: [{ type: 'url', name: 'x', url: 'ftp://files.example.com' }] },
    }), BadRequestError, { status: 400 });
    assert.match(bad.apiMessage, /agent\.mcp_servers\[0\]\.url/);
    const meta = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`k${i}`, 'v']));
    await rejects(client.beta.sessions.update(s.id, { metadata: meta }), BetaInvalidMetadataError,
      { status: 400, code: 'invalid_metadata' });
  });

  test('archive is idempotent; an archived session is readable, refuses updates, can be deleted', async () => {
    const s = await mksession({ agent: agent.id, environment_id: env.id });
    const a1 = await client.beta.sessions.archive(s.id);
    assertSessionShape(a1);
    assert.match(a1.archived_at, RFC3339_UTC);
    const a2 = await client.beta.sessions.archive(s.id);
    assert.equal(a2.archived_at, a1.archived_at);
    assert.equal((await client.beta.sessions.retrieve(s.id)).archived_at, a1.archived_at);
    await rejects(client.beta.sessions.update(s.id, { title: 'x' }), BadRequestError, { status: 400 });
    const del = await client.beta.sessions.delete(s.id);
    assert.deepEqual({ ...del }, { id: s.id, type: 'session_deleted' });
  });

  test('delete answers session_deleted, then 404 everywhere', async () => {
    const s = await mksession({ agent: agent.id, environment_id: env.id });
    const del = await client.beta.sessions.delete(s.id);
    assert.equal(del.id, s.id);
    assert.equal(del.type, 'session_deleted');
    assert.match(String(del._request_id), REQ_ID);
    await rejects(client.beta.sessions.retrieve(s.id), NotFoundError, { status: 404, type: 'not_found_error' });
    await rejects(client.beta.sessions.delete(s.id), NotFoundError, { status: 404 });
    await rejects(client.beta.sessions.update(s.id, { title: 'x' }), NotFoundError, { status: 404 });
    await rejects(client.beta.sessions.archive(s.id), NotFoundError, { status: 404 });
  });

  test('another workspace sees nothing', { skip: !KEY2 && 'TERRARIUM_KEY2 not set' }, async () => {
    const s = await mksession({ agent: agent.id, environment_id: env.id });
    const other = new Anthropic({ baseURL: URL_, apiKey: KEY2 });
    await rejects(other.beta.sessions.retrieve(s.id), NotFoundError, { status: 404 });
    await rejects(other.beta.sessions.delete(s.id), NotFoundError, { status: 404 });
    await rejects(other.beta.sessions.create({ agent: agent.id, environment_id: env.id }), NotFoundError, { status: 404 });
    const seen = [];
    for await (const x of other.beta.sessions.list({ agent_id: agent.id })) seen.push(x.id);
    assert.deepEqual(seen, []);
  });
});

describe('list', () => {
  const N = 5;
  let agent;
  let ids; // creation order
  before(async () => {
    agent = await mkagent();
    const env = await mkenv();
    ids = [];
    for (let i = 0; i < N; i++) ids.push((await mksession({ agent: agent.id, environment_id: env.id, title: `s${i}` })).id);
  });

  test('auto-pagination follows next_page over several pages (newest first)', async () => {
    const { client: rc, calls } = recording();
    const seen = [];
    for await (const s of rc.beta.sessions.list({ agent_id: agent.id, limit: 2 })) {
      assertSessionShape(s);
      seen.push(s.id);
    }
    assert.deepEqual(seen, [...ids].reverse());
    assert.equal(calls.length, 3, 'pages of 2, 2 and 1');
    for (const c of calls.slice(1)) {
      assert.equal(c.url.searchParams.get('agent_id'), agent.id, 'the filter is repeated');
      assert.equal(c.url.searchParams.get('limit'), '2');
      assert.ok(c.url.searchParams.get('page'));
    }
  });

  test('page objects: data, next_page, prev_page null; getNextPage', async () => {
    const page = await client.beta.sessions.list({ agent_id: agent.id, limit: 2, order: 'asc' });
    assert.deepEqual(page.data.map((s) => s.id), ids.slice(0, 2));
    assert.equal(typeof page.next_page, 'string');
    assert.equal(page.prev_page, null);
    assert.ok(page.hasNextPage());
    const p2 = await page.getNextPage();
    assert.deepEqual(p2.data.map((s) => s.id), ids.slice(2, 4));
    const p3 = await p2.getNextPage();
    assert.deepEqual(p3.data.map((s) => s.id), ids.slice(4));
    assert.equal(p3.next_page, null);
    assert.ok(!p3.hasNextPage());
  });

  test('order asc over all pages; include_archived', async () => {
    const asc = [];
    for await (const s of client.beta.sessions.list({ agent_id: agent.id, limit: 2, order: 'asc' })) asc.push(s.id);
    assert.deepEqual(asc, ids);
    await client.beta.sessions.archive(ids[1]);
    const live = [];
    for await (const s of client.beta.sessions.list({ agent_id: agent.id, limit: 2, order: 'asc' })) live.push(s.id);
    assert.deepEqual(live, ids.filter((_, i) => i !== 1), 'archived sessions are hidden by default');
    const all = [];
    for await (const s of client.beta.sessions.list({ agent_id: agent.id, limit: 2, order: 'asc', include_archived: true })) {
      all.push(s.id);
    }
    assert.deepEqual(all, ids);
  });

  test('a cursor is bound to its filter; a forged cursor is refused', async () => {
    const page = await client.beta.sessions.list({ agent_id: agent.id, limit: 1 });
    const err = await rejects(client.beta.sessions.list({ agent_id: agent.id, limit: 1, order: 'asc', page: page.next_page }),
      BadRequestError, { status: 400 });
    assert.match(err.apiMessage, /page/);
    await rejects(client.beta.sessions.list({ page: 'forged' }), BadRequestError, { status: 400 });
    await rejects(client.beta.sessions.list({ limit: 0 }), BadRequestError, { status: 400 });
  });
});
