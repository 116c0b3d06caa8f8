// Vaults and their credentials through the UNCHANGED official SDK (@anthropic-ai/sdk, version
// pinned in package.json). Run with tests/sdk/run.sh; needs TERRARIUM_URL and TERRARIUM_KEY,
// optionally TERRARIUM_KEY2 (a key of another workspace: enables the isolation tests).
//
// What the SDK does, read from node_modules/@anthropic-ai/sdk (1.14.0),
// resources/beta/vaults/{vaults,credentials}.{js,d.ts}:
//
// - client.beta.vaults.create(params) POST /v1/vaults; .retrieve(id) GET /v1/vaults/{id};
//   .update(id, params) POST /v1/vaults/{id}; .list(params) GET /v1/vaults ->
//   PagePromise<PageCursor<BetaManagedAgentsVault>> (query include_archived, limit, page);
//   .delete(id) DELETE /v1/vaults/{id} -> {id, type: 'vault_deleted'}; .archive(id) POST
//   /v1/vaults/{id}/archive with no body.
// - client.beta.vaults.credentials.create(vaultID, params) POST /v1/vaults/{id}/credentials;
//   .retrieve(credID, {vault_id}), .update(credID, {vault_id, ...body}), .delete(credID,
//   {vault_id}) -> {id, type: 'vault_credential_deleted'}, .archive(credID, {vault_id}) on
//   /v1/vaults/{vault_id}/credentials/{credID}[/archive]; .list(vaultID, params) ->
//   PageCursor<BetaManagedAgentsCredential>.
// - PageCursor (core/pagination.js): `{data, next_page}`; the next page repeats the query plus
//   `page=<next_page>`; iteration stops when next_page is falsy.
// - BetaManagedAgentsVault: id, type 'vault', display_name, metadata, created_at, updated_at,
//   archived_at. BetaManagedAgentsCredential: id, type 'vault_credential', vault_id, auth,
//   metadata, created_at, updated_at, archived_at, display_name (optional, nullable); a
//   static_bearer credential's auth is BetaManagedAgentsStaticBearerAuthResponse
//   {type: 'static_bearer', mcp_server_url}: "Sensitive fields are never returned".
// - Create params for static_bearer: auth {type, token, mcp_server_url}; update params: auth
//   {type, token?} ("The mcp_server_url is immutable"), display_name, metadata (a patch).
// - Sessions: create takes vault_ids (string[]); the session object shows them.

import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { KEY, KEY2, RFC3339_UTC, URL_, creator, name, rejects } from './lib.mjs';
import Anthropic, { BadRequestError, ConflictError, NotFoundError } from '@anthropic-ai/sdk';
import { BetaInvalidMetadataError } from '@anthropic-ai/sdk/resources/beta/environments';

const VLT_ID = /^vlt_[0-9A-Za-z]{24}$/;
const VCRD_ID = /^vcrd_[0-9A-Za-z]{24}$/;
const VAULT_KEYS = ['archived_at', 'created_at', 'display_name', 'id', 'metadata', 'type', 'updated_at'];
const CRED_KEYS = [
  'archived_at', 'auth', 'created_at', 'display_name', 'id', 'metadata', 'type', 'updated_at', 'vault_id',
];
const MCP_URL = 'https://mcp.example.com/mcp';

// Every token this file stores: no response body may ever hold one of them.
const tokens = [];
const token = (tag) => {
  const t = `tok_${tag}_${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
  tokens.push(t);
  return t;
};

// A client that keeps the raw text of every response body it receives, and counts requests.
function recording(key = KEY) {
  const bodies = [];
  const calls = [];
  const c = new Anthropic({
    baseURL: URL_,
    apiKey: key,
    fetch: async (url, init = {}) => {
      calls.push({ url: new URL(String(url)), method: init.method || 'GET' });
      const res = await fetch(url, init);
      bodies.push(await res.clone().text());
      return res;
    },
  });
  return { client: c, bodies, calls };
}

const rec = recording();
const client = rec.client;
const other = KEY2 ? recording(KEY2) : null;

// what the tests create, deleted after them (lib.mjs)
const { made, mkagent, mkenv, mkvault, mksession } = creator(client);

function bearer(url = MCP_URL, t = token('x')) {
  return { type: 'static_bearer', token: t, mcp_server_url: url };
}

async function mkcred(vaultId, params = {}, c = client) {
  return c.beta.vaults.credentials.create(vaultId, { auth: bearer(), ...params });
}

async function mksessionParts(c = client) {
  const agent = await mkagent({}, c);
  const env = await mkenv({ config: { type: 'self_hosted' } }, c);
  return { agent: agent.id, environment_id: env.id };
}

function assertVault(v) {
  assert.deepEqual(Object.keys(v).sort(), VAULT_KEYS);
  assert.equal(v.type, 'vault');
  assert.match(v.id, VLT_ID);
  assert.equal(typeof v.display_name, 'string');
  assert.equal(typeof v.metadata, 'object');
  assert.match(v.created_at, RFC3339_UTC);
  assert.match(v.updated_at, RFC3339_UTC);
  assert.ok(v.archived_at === null || RFC3339_UTC.test(v.archived_at));
}

// A credential shows what BetaManagedAgentsStaticBearerAuthResponse shows: never the token.
function assertCred(cr, vaultId, url = MCP_URL) {
  assert.deepEqual(Object.keys(cr).sort(), CRED_KEYS);
  assert.equal(cr.type, 'vault_credential');
  assert.match(cr.id, VCRD_ID);
  assert.equal(cr.vault_id, vaultId);
  assert.deepEqual(cr.auth, { type: 'static_bearer', mcp_server_url: url });
  assert.ok(cr.display_name === null || typeof cr.display_name === 'string');
  assert.match(cr.created_at, RFC3339_UTC);
  assert.match(cr.updated_at, RFC3339_UTC);
  assert.ok(cr.archived_at === null || RFC3339_UTC.test(cr.archived_at));
}

async function all(iter) {
  const out = [];
  for await (const x of iter) out.push(x);
  return out;
}

describe('vaults', () => {
  test('create, retrieve, update (metadata patch), list, archive, delete', async () => {
    const v = await mkvault({ display_name: 'Alice', metadata: { user: 'u1', drop: 'me' } });
    assertVault(v);
    assert.equal(v.display_name, 'Alice');
    assert.deepEqual(v.metadata, { user: 'u1', drop: 'me' });
    assert.equal(v.archived_at, null);
    assert.deepEqual({ ...(await client.beta.vaults.retrieve(v.id)) }, { ...v });

    const u = await client.beta.vaults.update(v.id, { display_name: 'Alice B', metadata: { drop: null, add: 'x' } });
    assertVault(u);
    assert.equal(u.display_name, 'Alice B');
    assert.deepEqual(u.metadata, { user: 'u1', add: 'x' });
    assert.ok(u.updated_at > v.updated_at);
    const same = await client.beta.vaults.update(v.id, {});
    assert.equal(same.updated_at, u.updated_at, '{} changes nothing');

    const listed = await all(client.beta.vaults.list());
    assert.ok(listed.some((x) => x.id === v.id));
    listed.forEach(assertVault);

    const a = await client.beta.vaults.archive(v.id);
    assertVault(a);
    assert.match(a.archived_at, RFC3339_UTC);
    const again = await client.beta.vaults.archive(v.id);
    assert.equal(again.archived_at, a.archived_at, 'archiving twice changes nothing');
    assert.ok(!(await all(client.beta.vaults.list())).some((x) => x.id === v.id), 'archived: left out');
    assert.ok((await all(client.beta.vaults.list({ include_archived: true }))).some((x) => x.id === v.id));
    await rejects(client.beta.vaults.update(v.id, { display_name: 'n' }), BadRequestError, { status: 400 });

    const d = await client.beta.vaults.delete(v.id);
    assert.deepEqual({ ...d }, { id: v.id, type: 'vault_deleted' });
    await rejects(client.beta.vaults.retrieve(v.id), NotFoundError, { status: 404, type: 'not_found_error' });
    await rejects(client.beta.vaults.delete(v.id), NotFoundError, { status: 404 });
  });

  test('refusals name the field', async () => {
    const cases = [
      [{}, "'display_name' is required"],
      [{ display_name: '' }, "'display_name'"],
      [{ display_name: 'x'.repeat(256) }, '1-255'],
      [{ display_name: 7 }, "'display_name'"],
      [{ display_name: 'x', colour: 'red' }, "unknown field 'colour'"],
    ];
    for (const [body, msg] of cases) {
      const err = await rejects(client.beta.vaults.create(body), BadRequestError, { status: 400 });
      assert.ok(err.apiMessage.includes(msg), `${JSON.stringify(body)}: ${err.apiMessage}`);
    }
    assertVault(await mkvault({ display_name: 'x'.repeat(255) }));
    const tooMany = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await rejects(client.beta.vaults.create({ display_name: 'm', metadata: tooMany }), BetaInvalidMetadataError,
      { status: 400, code: 'invalid_metadata' });
    const v = await mkvault();
    await rejects(client.beta.vaults.update(v.id, { display_name: null }), BadRequestError, { status: 400 });
    await rejects(client.beta.vaults.update(v.id, { metadata: { ['k'.repeat(65)]: 'v' } }), BetaInvalidMetadataError,
      { status: 400, code: 'invalid_metadata' });
    await rejects(client.beta.vaults.retrieve('vlt_nope'), NotFoundError, { status: 404 });
    await rejects(client.beta.vaults.retrieve('env_x'), NotFoundError, { status: 404 });
  });

  test('pages: limit 1 walks every vault once, newest first', async () => {
    const mine = [await mkvault(), await mkvault(), await mkvault()].map((v) => v.id);
    const seen = (await all(client.beta.vaults.list({ limit: 1 }))).map((v) => v.id);
    assert.equal(new Set(seen).size, seen.length, 'no vault twice');
    const order = mine.map((id) => seen.indexOf(id));
    assert.ok(order.every((i) => i >= 0), 'every vault listed');
    assert.deepEqual(order, [...order].sort((a, b) => b - a), 'newest first');
    const page = await client.beta.vaults.list({ limit: 1 });
    assert.equal(page.data.length, 1);
    assert.equal(typeof page.next_page, 'string');
  });

  test('Idempotency-Key: the same create twice makes one vault', async () => {
    const opts = { headers: { 'Idempotency-Key': `vault-${name('idem')}` } };
    const a = await client.beta.vaults.create({ display_name: 'idem' }, opts);
    made.vaults.push([client, a.id]);
    const b = await client.beta.vaults.create({ display_name: 'idem' }, opts);
    assert.equal(b.id, a.id);
  });
});

describe('credentials', () => {
  test('create, retrieve, update, list, archive, delete: the token is in no response', async () => {
    const v = await mkvault();
    const t1 = token('one');
    const before = rec.bodies.length;
    const c = await client.beta.vaults.credentials.create(v.id, {
      auth: bearer(MCP_URL, t1), display_name: 'GitHub', metadata: { k: 'v' },
    });
    assertCred(c, v.id);
    assert.equal(c.display_name, 'GitHub');
    assert.deepEqual(c.metadata, { k: 'v' });
    const r = await client.beta.vaults.credentials.retrieve(c.id, { vault_id: v.id });
    assert.deepEqual({ ...r }, { ...c });
    const listed = await all(client.beta.vaults.credentials.list(v.id));
    assert.deepEqual(listed.map((x) => x.id), [c.id]);
    listed.forEach((x) => assertCred(x, v.id));

    const t2 = token('two');
    const u = await client.beta.vaults.credentials.update(c.id, {
      vault_id: v.id, auth: { type: 'static_bearer', token: t2 }, display_name: null, metadata: { k: null, n: '1' },
    });
    assertCred(u, v.id);
    assert.equal(u.display_name, null);
    assert.deepEqual(u.metadata, { n: '1' });
    assert.ok(u.updated_at > c.updated_at, 'a new token is a change');
    const same = await client.beta.vaults.credentials.update(c.id, { vault_id: v.id, auth: { type: 'static_bearer' } });
    assert.equal(same.updated_at, u.updated_at, 'no token, no change');

    const a = await client.beta.vaults.credentials.archive(c.id, { vault_id: v.id });
    assertCred(a, v.id);
    assert.match(a.archived_at, RFC3339_UTC);
    assert.deepEqual((await all(client.beta.vaults.credentials.list(v.id))).map((x) => x.id), []);
    assert.deepEqual((await all(client.beta.vaults.credentials.list(v.id, { include_archived: true }))).map((x) => x.id),
      [c.id]);
    await rejects(client.beta.vaults.credentials.update(c.id, { vault_id: v.id, display_name: 'n' }), BadRequestError,
      { status: 400 });

    const d = await client.beta.vaults.credentials.delete(c.id, { vault_id: v.id });
    assert.deepEqual({ ...d }, { id: c.id, type: 'vault_credential_deleted' });
    await rejects(client.beta.vaults.credentials.retrieve(c.id, { vault_id: v.id }), NotFoundError, { status: 404 });

    const bodies = rec.bodies.slice(before);
    assert.ok(bodies.length >= 9, `responses recorded (${bodies.length})`);
    for (const body of bodies) {
      for (const t of [t1, t2]) assert.ok(!body.includes(t), `a response holds the token: ${body.slice(0, 200)}`);
      assert.ok(!/"token"/.test(body), `a response names a token field: ${body.slice(0, 200)}`);
    }
  });

  test('other auth types: 400 naming the type, nothing stored', async () => {
    const v = await mkvault();
    const bad = [
      [{ type: 'mcp_oauth', access_token: token('o'), mcp_server_url: MCP_URL }, "'mcp_oauth'"],
      [{ type: 'environment_variable', secret_name: 'X', secret_value: token('e'), networking: { type: 'unrestricted' } },
        "'environment_variable'"],
      [{ type: 'bogus', token: token('b'), mcp_server_url: MCP_URL }, "'bogus'"],
    ];
    for (const [auth, msg] of bad) {
      const err = await rejects(client.beta.vaults.credentials.create(v.id, { auth }), BadRequestError, { status: 400 });
      assert.ok(err.apiMessage.includes(msg) && err.apiMessage.includes("'auth.type'"), err.apiMessage);
      assert.ok(!tokens.some((t) => err.apiMessage.includes(t)), 'the message echoes no secret');
    }
    assert.deepEqual(await all(client.beta.vaults.credentials.list(v.id, { include_archived: true })), []);
  });

  test('malformed credentials: 400 naming the field, never echoing the token', async () => {
    const v = await mkvault();
    const secret = token('echo');
    const cases = [
      [{}, "'auth' is required"],
      [{ auth: 'x' }, "'auth' must be an object"],
      [{ auth: { token: secret, mcp_server_url: MCP_URL } }, "'auth.type' is required"],
      [{ auth: { type: 'static_bearer', mcp_server_url: MCP_URL } }, "'auth.token' is required"],
      [{ auth: { type: 'static_bearer', token: secret } }, "'auth.mcp_server_url' is required"],
      [{ auth: { type: 'static_bearer', token: '', mcp_server_url: MCP_URL } }, "'auth.token'"],
      [{ auth: { type: 'static_bearer', token: `${secret} x`, mcp_server_url: MCP_URL } }, "'auth.token'"],
      [{ auth: { type: 'static_bearer', token: `${secret}\n`, mcp_server_url: MCP_URL } }, "'auth.token'"],
      [{ auth: { type: 'static_bearer', token: 'x'.repeat(8193), mcp_server_url: MCP_URL } }, '8192'],
      [{ auth: { type: 'static_bearer', token: secret, mcp_server_url: 'ftp://x.example.com/' } },
        "'auth.mcp_server_url'"],
      [{ auth: { type: 'static_bearer', token: secret, mcp_server_url: 'https://u:p@x.example.com/' } },
        "'auth.mcp_server_url'"],
      [{ auth: { ...bearer(MCP_URL, secret), extra: 1 } }, "unknown field 'auth.extra'"],
      [{ auth: bearer(MCP_URL, secret), display_name: 'x'.repeat(256) }, "'display_name'"],
      [{ auth: bearer(MCP_URL, secret), colour: 1 }, "unknown field 'colour'"],
    ];
    for (const [body, msg] of cases) {
      const err = await rejects(client.beta.vaults.credentials.create(v.id, body), BadRequestError, { status: 400 });
      assert.ok(err.apiMessage.includes(msg), `${msg}: ${err.apiMessage}`);
      assert.ok(!err.apiMessage.includes(secret), `the token is echoed: ${err.apiMessage}`);
    }
    assertCred(await mkcred(v.id, { auth: bearer(MCP_URL, 'x'.repeat(8192)) }), v.id);
    const c = await mkcred(v.id, { auth: bearer('https://other.example.com/mcp') });
    for (const [body, msg] of [
      [{ auth: { type: 'static_bearer', mcp_server_url: 'https://evil.example.com/' } }, 'cannot be changed'],
      [{ auth: { type: 'mcp_oauth', access_token: secret } }, "'mcp_oauth'"],
      [{ auth: { type: 'static_bearer', token: `${secret} y` } }, "'auth.token'"],
      [{ display_name: 'x'.repeat(256) }, "'display_name'"],
    ]) {
      const err = await rejects(client.beta.vaults.credentials.update(c.id, { vault_id: v.id, ...body }), BadRequestError,
        { status: 400 });
      assert.ok(err.apiMessage.includes(msg), `${msg}: ${err.apiMessage}`);
      assert.ok(!err.apiMessage.includes(secret));
    }
  });

  test('one live credential per mcp_server_url (409, not retried), at most 20 per vault', async () => {
    const v = await mkvault();
    const first = await mkcred(v.id);
    const { client: once, calls } = recording();
    const err = await rejects(once.beta.vaults.credentials.create(v.id, { auth: bearer() }), ConflictError,
      { status: 409, type: 'conflict_error' });
    assert.equal(calls.length, 1, 'the 409 is not retried');
    assert.ok(err.apiMessage.includes(first.id), err.apiMessage);
    // archived: the URL is free again
    await client.beta.vaults.credentials.archive(first.id, { vault_id: v.id });
    const second = await mkcred(v.id);
    assert.notEqual(second.id, first.id);
    for (let i = 1; i < 20; i++) await mkcred(v.id, { auth: bearer(`https://mcp${i}.example.com/mcp`) });
    await rejects(client.beta.vaults.credentials.create(v.id, { auth: bearer('https://mcp99.example.com/mcp') }),
      ConflictError, { status: 409 });
    assert.equal((await all(client.beta.vaults.credentials.list(v.id, { limit: 3 }))).length, 20, 'pages of 3');
  });

  test('an archived vault archives its credentials and takes no new ones; a deleted vault takes them along',
    async () => {
      const v = await mkvault();
      const c = await mkcred(v.id);
      await client.beta.vaults.archive(v.id);
      const ca = await client.beta.vaults.credentials.retrieve(c.id, { vault_id: v.id });
      assert.match(ca.archived_at, RFC3339_UTC, 'the credential is archived with its vault');
      const err = await rejects(mkcred(v.id, { auth: bearer('https://new.example.com/') }), BadRequestError,
        { status: 400 });
      assert.match(err.apiMessage, /archived/);
      await client.beta.vaults.delete(v.id);
      await rejects(client.beta.vaults.credentials.retrieve(c.id, { vault_id: v.id }), NotFoundError, { status: 404 });
      await rejects(client.beta.vaults.credentials.list(v.id).then((p) => p.data), NotFoundError, { status: 404 });
    });

  test('a credential is found only under its own vault', async () => {
    const v1 = await mkvault();
    const v2 = await mkvault();
    const c = await mkcred(v1.id);
    await rejects(client.beta.vaults.credentials.retrieve(c.id, { vault_id: v2.id }), NotFoundError, { status: 404 });
    await rejects(client.beta.vaults.credentials.delete(c.id, { vault_id: v2.id }), NotFoundError, { status: 404 });
    assert.equal((await client.beta.vaults.credentials.retrieve(c.id, { vault_id: v1.id })).id, c.id);
  });

  test('Idempotency-Key: the same credential create twice stores one credential', async () => {
    const v = await mkvault();
    const opts = { headers: { 'Idempotency-Key': `cred-${name('idem')}` } };
    const body = { auth: bearer() };
    const a = await client.beta.vaults.credentials.create(v.id, body, opts);
    const b = await client.beta.vaults.credentials.create(v.id, body, opts);
    assert.equal(b.id, a.id);
    assert.equal((await all(client.beta.vaults.credentials.list(v.id))).length, 1);
  });
});

describe('sessions with vaults', () => {
  test('vault_ids are kept in order and shown; missing 404, archived 400, repeated or too many 400', async () => {
    const parts = await mksessionParts();
    const v1 = await mkvault();
    const v2 = await mkvault();
    await mkcred(v1.id);
    const s = await mksession({ ...parts, vault_ids: [v2.id, v1.id] });
    assert.deepEqual(s.vault_ids, [v2.id, v1.id]);
    assert.deepEqual((await client.beta.sessions.retrieve(s.id)).vault_ids, [v2.id, v1.id]);
    const plain = await mksession({ ...parts });
    assert.deepEqual(plain.vault_ids, []);

    let err = await rejects(client.beta.sessions.create({ ...parts, vault_ids: ['vlt_000000000000000000000000'] }),
      NotFoundError, { status: 404 });
    assert.ok(err.apiMessage.includes('vlt_000000000000000000000000'), err.apiMessage);
    err = await rejects(client.beta.sessions.create({ ...parts, vault_ids: [v1.id, v1.id] }), BadRequestError,
      { status: 400 });
    assert.ok(err.apiMessage.includes("'vault_ids[1]'"), err.apiMessage);
    err = await rejects(client.beta.sessions.create({ ...parts, vault_ids: Array.from({ length: 21 }, () => v1.id) }),
      BadRequestError, { status: 400 });
    assert.ok(err.apiMessage.includes('20'), err.apiMessage);
    await client.beta.vaults.archive(v2.id);
    err = await rejects(client.beta.sessions.create({ ...parts, vault_ids: [v1.id, v2.id] }), BadRequestError,
      { status: 400 });
    assert.ok(err.apiMessage.includes(v2.id) && err.apiMessage.includes('archived'), err.apiMessage);
    // the session made before keeps its vault ids
    assert.deepEqual((await client.beta.sessions.retrieve(s.id)).vault_ids, [v2.id, v1.id]);
  });
});

describe('another workspace', { skip: !KEY2 && 'TERRARIUM_KEY2 not set' }, () => {
  test("another workspace's vault and credentials answer 404 on every route", async () => {
    const v = await mkvault();
    const c = await mkcred(v.id);
    const o = other.client;
    await rejects(o.beta.vaults.retrieve(v.id), NotFoundError, { status: 404 });
    await rejects(o.beta.vaults.update(v.id, { display_name: 'x' }), NotFoundError, { status: 404 });
    await rejects(o.beta.vaults.archive(v.id), NotFoundError, { status: 404 });
    await rejects(o.beta.vaults.delete(v.id), NotFoundError, { status: 404 });
    assert.ok(!(await all(o.beta.vaults.list({ include_archived: true }))).some((x) => x.id === v.id));
    await rejects(o.beta.vaults.credentials.create(v.id, { auth: bearer('https://o.example.com/') }), NotFoundError,
      { status: 404 });
    await rejects(o.beta.vaults.credentials.list(v.id).then((p) => p.data), NotFoundError, { status: 404 });
    await rejects(o.beta.vaults.credentials.retrieve(c.id, { vault_id: v.id }), NotFoundError, { status: 404 });
    await rejects(o.beta.vaults.credentials.update(c.id, { vault_id: v.id, auth: { type: 'static_bearer', token: token('o') } }),
      NotFoundError, { status: 404 });
    await rejects(o.beta.vaults.credentials.archive(c.id, { vault_id: v.id }), NotFoundError, { status: 404 });
    await rejects(o.beta.vaults.credentials.delete(c.id, { vault_id: v.id }), NotFoundError, { status: 404 });
    // untouched
    const still = await client.beta.vaults.credentials.retrieve(c.id, { vault_id: v.id });
    assert.equal(still.archived_at, null);
    assert.equal((await client.beta.vaults.retrieve(v.id)).archived_at, null);
  });

  test("a session of another workspace cannot use the vault: 404 naming it", async () => {
    const v = await mkvault();
    const parts = await mksessionParts(other.client);
    const err = await rejects(other.client.beta.sessions.create({ ...parts, vault_ids: [v.id] }), NotFoundError,
      { status: 404 });
    assert.ok(err.apiMessage.includes(v.id), err.apiMessage);
  });
});

test('no response of this file held a token', () => {
  const bodies = [...rec.bodies, ...(other ? other.bodies : [])];
  assert.ok(tokens.length > 10 && bodies.length > 50);
  for (const body of bodies) for (const t of tokens) assert.ok(!body.includes(t), `a response holds ${t}`);
});
