// Agents API through the UNCHANGED official SDK (@anthropic-ai/sdk, version pinned in
// package.json). Run with tests/sdk/run.sh; needs TERRARIUM_URL and TERRARIUM_KEY, optionally
// TERRARIUM_KEY2 (a key of another workspace: enables the isolation test).
//
// What the SDK does, read from node_modules/@anthropic-ai/sdk (1.14.0),
// resources/beta/agents/{agents,versions}.{js,d.ts}:
//
// - client.beta.agents.create(params) POST /v1/agents; .retrieve(id, {version?}) GET
//   /v1/agents/{id}?version=N; .update(id, params) POST /v1/agents/{id} (`version` in the body is
//   optional optimistic concurrency: "When supplied, the request fails if it does not match the
//   server's current version"); .list({limit, page, include_archived, 'created_at[gte]',
//   'created_at[lte]'}) -> PageCursor; .archive(id) POST /v1/agents/{id}/archive with no body;
//   .versions.list(id) GET /v1/agents/{id}/versions -> PageCursor of agents. Every method adds
//   `anthropic-beta: managed-agents-2026-04-01`.
// - BetaManagedAgentsAgent's keys: id, type 'agent', name, description, system, model (a
//   ModelConfig object {id, effort?, speed?, inference_geo?}), mcp_servers, tools, skills,
//   execution_identity, multiagent, metadata, version, created_at, updated_at, archived_at.
// - No agent-specific error codes exist; `400 invalid_metadata` maps to BetaInvalidMetadataError
//   whatever the resource (core/error-classes.js keys on status + code only).

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic, { BadRequestError, ConflictError, NotFoundError } from '@anthropic-ai/sdk';
import { BetaInvalidMetadataError } from '@anthropic-ai/sdk/resources/beta/environments';
import { BETA, KEY, KEY2, RFC3339_UTC, URL_, name } from './lib.mjs';

const AGENT_ID = /^agent_[0-9A-Za-z]{24}$/;
const AGENT_KEYS = [
  'archived_at', 'created_at', 'description', 'execution_identity', 'id', 'mcp_servers', 'metadata',
  'model', 'multiagent', 'name', 'skills', 'system', 'tools', 'type', 'updated_at', 'version',
].sort();
const MCP = { type: 'url', name: 'docs', url: 'https://mcp.example.com/sse' };

// The client the contract is about: nothing but baseURL and apiKey.
const client = new Anthropic({ baseURL: URL_, apiKey: KEY });

// A client that records every request it sends (URL, method, headers) in `calls`.
function recording() {
  const calls = [];
  const c = new Anthropic({
    baseURL: URL_,
    apiKey: KEY,
    fetch: async (url, init = {}) => {
      calls.push({ url: new URL(String(url)), method: init.method || 'GET', headers: new Headers(init.headers) });
      return fetch(url, init);
    },
  });
  return { client: c, calls };
}

const created = []; // agent ids archived in after()

async function mkagent(params = {}, c = client) {
  const agent = await c.beta.agents.create({ name: name('agent'), model: 'claude-opus-5-5', ...params });
  created.push(agent.id);
  return agent;
}

// Every required field of BetaManagedAgentsAgent, with its type.
function assertAgentShape(a) {
  assert.deepEqual(Object.keys(a).sort(), AGENT_KEYS);
  assert.equal(a.type, 'agent');
  assert.match(a.id, AGENT_ID);
  assert.equal(typeof a.name, 'string');
  assert.ok(a.description === null || typeof a.description === 'string');
  assert.ok(a.system === null || typeof a.system === 'string');
  assert.equal(typeof a.model, 'object');
  assert.equal(typeof a.model.id, 'string');
  assert.ok(['low', 'medium', 'high', 'xhigh', 'max'].includes(a.model.effort?.type), `effort ${JSON.stringify(a.model.effort)}`);
  assert.ok(Array.isArray(a.mcp_servers));
  for (const s of a.mcp_servers) assert.deepEqual(Object.keys(s).sort(), ['name', 'type', 'url']);
  assert.ok(Array.isArray(a.tools));
  assert.ok(Array.isArray(a.skills));
  assert.ok(['service_account', 'aws_role'].includes(a.execution_identity?.type));
  assert.ok(a.multiagent === null || typeof a.multiagent === 'object');
  assert.equal(typeof a.metadata, 'object');
  assert.ok(Number.isInteger(a.version) && a.version >= 1, `version ${a.version}`);
  assert.match(a.created_at, RFC3339_UTC);
  assert.match(a.updated_at, RFC3339_UTC);
  assert.ok(Date.parse(a.updated_at) >= Date.parse(a.created_at));
  assert.ok(a.archived_at === null || RFC3339_UTC.test(a.archived_at), `archived_at ${a.archived_at}`);
}

async function rejects(promise, cls, needle) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e?.constructor?.name}: ${e?.message}`);
    if (needle) assert.ok(String(e.error?.error?.message).includes(needle), `message ${e.error?.error?.message} lacks ${needle}`);
    return true;
  });
}

before(async () => {
  // fail fast with a clear message when the server is not there
  await client.beta.agents.list({ limit: 1 });
});

after(async () => {
  for (const id of created) {
    try {
      await client.beta.agents.archive(id);
    } catch {
      // already gone or another workspace's: nothing to clean up
    }
  }
});

describe('create and retrieve', () => {
  test('create with an MCP server: every required field, defaults filled in', async () => {
    const { client: c, calls } = recording();
    const a = await mkagent({
      description: 'answers questions',
      mcp_servers: [MCP],
      tools: [{ type: 'mcp_toolset', mcp_server_name: 'docs' }],
      metadata: { team: 'sdk' },
    }, c);
    assertAgentShape(a);
    assert.equal(a.version, 1);
    assert.equal(a.name, name('agent'));
    assert.deepEqual(a.mcp_servers, [MCP]);
    assert.deepEqual(a.tools, [{ type: 'mcp_toolset', mcp_server_name: 'docs' }]);
    assert.deepEqual(a.model, { id: 'claude-opus-5-5', effort: { type: 'high' }, speed: 'standard' });
    assert.deepEqual(a.execution_identity, { type: 'service_account' });
    assert.equal(a.multiagent, null);
    assert.deepEqual(a.skills, []);
    assert.equal(a.system, null);
    assert.equal(a.archived_at, null);
    assert.equal(a.created_at, a.updated_at);
    assert.equal(calls.length, 1);
    assert.ok(calls[0].headers.get('anthropic-beta').split(',').includes(BETA));
  });

  test('retrieve returns the created object', async () => {
    const a = await mkagent({ model: { id: 'claude-sonnet-5', effort: 'low' }, system: 'Be brief.' });
    const got = await client.beta.agents.retrieve(a.id);
    assertAgentShape(got);
    assert.deepEqual({ ...got }, { ...a });
    assert.deepEqual(got.model, { id: 'claude-sonnet-5', effort: { type: 'low' }, speed: 'standard' });
  });

  test('invalid bodies are 400s naming the field', async () => {
    await rejects(client.beta.agents.create({ name: name('x') }), BadRequestError, "'model'");
    await rejects(client.beta.agents.create({ model: 'm' }), BadRequestError, "'name'");
    await rejects(client.beta.agents.create({
      name: name('dup'), model: 'm', mcp_servers: [MCP, { ...MCP, url: 'https://other.example.com' }],
    }), BadRequestError, 'mcp_servers[1].name');
    await rejects(client.beta.agents.create({
      name: name('url'), model: 'm', mcp_servers: [{ ...MCP, url: 'ftp://mcp.example.com' }],
    }), BadRequestError, 'mcp_servers[0].url');
    await rejects(client.beta.agents.create({ name: name('x'), model: 'm', colour: 'red' }), BadRequestError, "'colour'");
  });

  test('metadata over the limits is a BetaInvalidMetadataError', async () => {
    const metadata = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await rejects(client.beta.agents.create({ name: name('meta'), model: 'm', metadata }), BetaInvalidMetadataError, 'metadata');
  });

  test('an unknown id is a NotFoundError', async () => {
    await rejects(client.beta.agents.retrieve('agent_000000000000000000000000'), NotFoundError);
  });

  test('another workspace cannot see the agent', { skip: !KEY2 && 'TERRARIUM_KEY2 not set' }, async () => {
    const a = await mkagent();
    const other = new Anthropic({ baseURL: URL_, apiKey: KEY2 });
    await rejects(other.beta.agents.retrieve(a.id), NotFoundError);
    await rejects(other.beta.agents.update(a.id, { name: 'stolen' }), NotFoundError);
  });
});

describe('update', () => {
  test('an update writes version 2; the old version stays retrievable', async () => {
    const a = await mkagent({ mcp_servers: [MCP] });
    const b = await client.beta.agents.update(a.id, { version: 1, description: 'second', metadata: { k: 'v' } });
    assertAgentShape(b);
    assert.equal(b.id, a.id);
    assert.equal(b.version, 2);
    assert.equal(b.description, 'second');
    assert.deepEqual(b.metadata, { k: 'v' });
    assert.deepEqual(b.mcp_servers, [MCP]);
    assert.equal(b.created_at, a.created_at);
    const v1 = await client.beta.agents.retrieve(a.id, { version: 1 });
    assert.equal(v1.version, 1);
    assert.equal(v1.description, null);
    const latest = await client.beta.agents.retrieve(a.id);
    assert.equal(latest.version, 2);
  });

  test('{} and a no-op update create no version', async () => {
    const a = await mkagent({ description: 'same' });
    const b = await client.beta.agents.update(a.id, {});
    assert.equal(b.version, 1);
    assert.equal(b.updated_at, a.updated_at);
    const c = await client.beta.agents.update(a.id, { description: 'same', name: a.name, version: 1 });
    assert.equal(c.version, 1);
  });

  test('a stale version is a ConflictError and is not retried', async () => {
    const a = await mkagent();
    await client.beta.agents.update(a.id, { system: 'v2' });
    const { client: c, calls } = recording();
    await rejects(c.beta.agents.update(a.id, { version: 1, system: 'lost' }), ConflictError, "'version' 1");
    assert.equal(calls.length, 1, 'x-should-retry: false must stop the SDK retrying the 409');
    assert.equal((await client.beta.agents.retrieve(a.id)).system, 'v2');
  });

  test('name null is a 400; mcp_servers null clears', async () => {
    const a = await mkagent({ mcp_servers: [MCP] });
    await rejects(client.beta.agents.update(a.id, { name: null }), BadRequestError, "'name'");
    const b = await client.beta.agents.update(a.id, { mcp_servers: null });
    assert.deepEqual(b.mcp_servers, []);
    assert.equal(b.version, 2);
  });

  test('versions.list walks every version newest first', async () => {
    const a = await mkagent();
    await client.beta.agents.update(a.id, { description: 'two' });
    await client.beta.agents.update(a.id, { description: 'three' });
    const versions = [];
    for await (const v of client.beta.agents.versions.list(a.id, { limit: 2 })) {
      assert.equal(v.id, a.id);
      versions.push(v.version);
    }
    assert.deepEqual(versions, [3, 2, 1]);
  });
});

describe('list', () => {
  test('auto-pagination walks every page newest first and stops on next_page null', async () => {
    const first = await mkagent();
    const second = await mkagent();
    const third = await mkagent();
    const { client: c, calls } = recording();
    const seen = [];
    for await (const a of c.beta.agents.list({ limit: 1, 'created_at[gte]': first.created_at })) {
      assertAgentShape(a);
      seen.push(a.id);
    }
    // other agents may be created concurrently in the same workspace: ours keep their order
    const ours = seen.filter((id) => [first.id, second.id, third.id].includes(id));
    assert.deepEqual(ours, [third.id, second.id, first.id]);
    assert.equal(new Set(seen).size, seen.length, 'no agent twice');
    assert.equal(calls.length, seen.length, 'one request per page of one; no request after next_page null');
    assert.ok(calls.slice(1).every((r) => r.url.searchParams.get('page')), 'later pages carry the cursor');
  });

  test('a page is at most `limit` long and carries next_page until the last', async () => {
    const a = await mkagent();
    await mkagent();
    const page = await client.beta.agents.list({ limit: 1, 'created_at[gte]': a.created_at });
    assert.equal(page.data.length, 1);
    assert.equal(typeof page.next_page, 'string');
    assert.ok(page.hasNextPage());
  });

  test('limit out of range is a 400', async () => {
    await rejects(client.beta.agents.list({ limit: 0 }), BadRequestError, "'limit'");
    await rejects(client.beta.agents.list({ limit: 1001 }), BadRequestError, "'limit'");
  });
});

describe('archive', () => {
  test('archive sets archived_at, is idempotent, keeps the agent readable and out of default lists', async () => {
    const a = await mkagent();
    const { client: c, calls } = recording();
    const archived = await c.beta.agents.archive(a.id);
    assertAgentShape(archived);
    assert.match(archived.archived_at, RFC3339_UTC);
    assert.equal(archived.version, 1);
    assert.equal(calls[0].method, 'POST');
    const again = await client.beta.agents.archive(a.id);
    assert.equal(again.archived_at, archived.archived_at);
    const got = await client.beta.agents.retrieve(a.id);
    assert.equal(got.archived_at, archived.archived_at);

    const live = [];
    for await (const x of client.beta.agents.list({ 'created_at[gte]': a.created_at })) live.push(x.id);
    assert.ok(!live.includes(a.id), 'archived agents are hidden by default');
    const all = [];
    for await (const x of client.beta.agents.list({ 'created_at[gte]': a.created_at, include_archived: true })) all.push(x.id);
    assert.ok(all.includes(a.id), 'include_archived shows them');
  });

  test('an archived agent cannot be updated', async () => {
    const a = await mkagent();
    await client.beta.agents.archive(a.id);
    await rejects(client.beta.agents.update(a.id, { description: 'x' }), BadRequestError, 'archived');
  });
});
