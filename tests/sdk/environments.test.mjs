// Environments API through the UNCHANGED official SDK (@anthropic-ai/sdk, version pinned in
// package.json). Run with tests/sdk/run.sh; needs TERRARIUM_URL and TERRARIUM_KEY, optionally
// TERRARIUM_KEY2 (a key of another workspace), TERRARIUM_BACKEND (the sandbox backend behind
// TERRARIUM_URL, default "local"), TERRARIUM_URL_docker / TERRARIUM_URL_opensandbox (deployments
// with those backends, same key) and TERRARIUM_HAS_SESSIONS=1 (enables the session tests).
//
// What the SDK does, read from node_modules/@anthropic-ai/sdk (1.14.0):
//
// - Auth (client.js: apiKeyAuth / bearerAuth / validateHeaders): `apiKey` is sent as
//   `Authorization: Bearer <key>`, NOT as x-api-key; `authToken` is also `Authorization: Bearer`.
//   No x-api-key header is ever produced by the SDK itself. To send only `x-api-key`, pass
//   `apiKey` (so no credential chain runs) and `defaultHeaders: {'x-api-key': K, Authorization:
//   null}`: a null header is removed (internal/headers.js buildHeaders) and validateHeaders()
//   accepts a request that carries x-api-key. Passing no credential at all (apiKey: null) starts
//   the default credential chain (profiles, OIDC), so it is avoided here.
// - Headers sent on every call (client.js buildHeaders): `anthropic-version: 2026-10-21`,
//   `Accept: application/json`, `User-Agent: Anthropic/JS 1.14.0`, `X-Stainless-*`. Every
//   environments method adds `anthropic-beta: <betas...>,managed-agents-2026-04-01`
//   (resources/beta/environments/environments.js) and `anthropic-workspace-id` from the
//   `workspace_id` param. No `?beta=true` query is added (`__qualifiers` is only read by middleware).
//   `archive()` is a POST with no body and no content-type.
// - Methods (resources/beta/environments/environments.d.ts): client.beta.environments.create(params),
//   .retrieve(id), .update(id, params), .list(params) -> PagePromise<PageCursor<BetaEnvironment>>,
//   .delete(id) -> {id, type: 'environment_deleted'}, .archive(id).
// - Typed errors (core/error-classes.js ERROR_CODE_CLASSES, client.js makeStatusError): the key is
//   `${status} ${body.error.details.error_code}`; both must match exactly, else the plain status
//   class (core/error.js APIError.generate: 400 BadRequestError, 401 AuthenticationError, 403
//   PermissionDeniedError, 404 NotFoundError, 409 ConflictError, 413 ContentTooLargeError, 422
//   UnprocessableEntityError, 429 RateLimitError, >=500 InternalServerError). Environment ones,
//   exported from '@anthropic-ai/sdk/resources/beta/environments' (and as Anthropic.Beta.*):
//     '400 environment_archived'        -> BetaEnvironmentArchivedError  extends BadRequestError
//     '400 invalid_metadata'            -> BetaInvalidMetadataError      extends BadRequestError
//     '400 invalid_config_type_change'  -> BetaInvalidConfigTypeChangeError (not used: seed 000
//                                          allows type changes)
//     '404 environment_not_found'       -> BetaEnvironmentNotFoundError  extends NotFoundError
//     '403 environment_create_disabled' / '403 environment_update_disabled' (not used)
//   APIError fields (core/error.d.ts): status, headers, error (the JSON body), requestID (the
//   `request-id` response header), apiMessage (error.message), type (error.type), errorCode
//   (error.details.error_code), details.
// - Success bodies get a non-enumerable `_request_id` (internal/parse.js addResponseIDs), only
//   when the content-type is application/json (otherwise the body is returned as text).
// - Retries (client.js shouldRetry): `x-should-retry: true|false` is obeyed first; otherwise
//   408, 409, 429 and >= 500 are retried (maxRetries default 2), honouring retry-after(-ms).
// - Pagination (core/pagination.js PageCursor): response `{data, next_page}`; the next request
//   repeats the original query (limit, include_archived) plus `page=<next_page>`; iteration stops
//   when next_page is falsy (null, missing or ""). PageCursor does NOT stop on an empty `data`,
//   so a server returning `data: []` with a non-null next_page would loop forever.
// - `fetch` is a supported client option (client.js: `this.fetch = options.fetch ?? default`);
//   it is used below to count and inspect the requests actually sent.

import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BETA, KEY, KEY2, REQ_ID, RFC3339_UTC, RUN, URL_, name, rejects } from './lib.mjs';
import Anthropic, {
  APIError,
  AuthenticationError,
  BadRequestError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  UnprocessableEntityError,
} from '@anthropic-ai/sdk';
import {
  BetaEnvironmentArchivedError,
  BetaEnvironmentNotFoundError,
  BetaInvalidMetadataError,
} from '@anthropic-ai/sdk/resources/beta/environments';

const BACKEND = process.env.TERRARIUM_BACKEND || 'local';
const HAS_SESSIONS = !!process.env.TERRARIUM_HAS_SESSIONS;

const ENV_ID = /^env_[0-9A-Za-z]{24}$/;
const ENV_KEYS = [
  'archived_at', 'config', 'created_at', 'description', 'id', 'metadata', 'name', 'type', 'updated_at',
];
const EMPTY_PACKAGES = { type: 'packages', apt: [], cargo: [], gem: [], go: [], npm: [], pip: [] };
const DEFAULT_CLOUD = { type: 'cloud', networking: { type: 'unrestricted' }, packages: EMPTY_PACKAGES };

// The client the contract is about: nothing but baseURL and apiKey (sends Authorization: Bearer).
const client = new Anthropic({ baseURL: URL_, apiKey: KEY });

// A client that records every request it sends (URL, method, headers) in `calls`.
function recording(opts = {}) {
  const calls = [];
  const c = new Anthropic({
    baseURL: URL_,
    apiKey: KEY,
    ...opts,
    fetch: async (url, init = {}) => {
      calls.push({ url: new URL(String(url)), method: init.method || 'GET', headers: new Headers(init.headers) });
      return fetch(url, init);
    },
  });
  return { client: c, calls };
}

// Sends only `x-api-key` (and the older anthropic-version value curl examples use).
function xApiKeyClient(key, extra = {}) {
  return new Anthropic({
    baseURL: URL_,
    apiKey: key,
    defaultHeaders: { 'x-api-key': key, Authorization: null, 'anthropic-version': '2023-06-01' },
    ...extra,
  });
}

const created = []; // [client, id] pairs deleted in after()
async function mkenv(params, c = client) {
  const env = await c.beta.environments.create(params);
  created.push([c, env.id]);
  return env;
}

// Checks the shape every environment object must have (per BetaEnvironment in the .d.ts and
// docs/api.md: exactly these keys, `scope` only when set).
function assertEnvShape(env) {
  assert.equal(env.type, 'environment');
  assert.match(env.id, ENV_ID);
  const keys = Object.keys(env).filter((k) => k !== 'scope').sort();
  assert.deepEqual(keys, ENV_KEYS);
  if ('scope' in env) assert.ok(['account', 'organization'].includes(env.scope), `scope ${env.scope}`);
  assert.equal(typeof env.name, 'string');
  assert.ok(env.description === null || typeof env.description === 'string');
  assert.equal(typeof env.metadata, 'object');
  assert.ok(env.metadata !== null && !Array.isArray(env.metadata));
  for (const v of Object.values(env.metadata)) assert.equal(typeof v, 'string');
  assert.match(env.created_at, RFC3339_UTC);
  assert.match(env.updated_at, RFC3339_UTC);
  assert.ok(Date.parse(env.updated_at) >= Date.parse(env.created_at));
  assert.ok(env.archived_at === null || RFC3339_UTC.test(env.archived_at), `archived_at ${env.archived_at}`);
  if (env.config.type === 'cloud') {
    assert.deepEqual(Object.keys(env.config).sort(), ['networking', 'packages', 'type']);
    const n = env.config.networking;
    if (n.type === 'unrestricted') assert.deepEqual(n, { type: 'unrestricted' });
    else {
      assert.equal(n.type, 'limited');
      assert.deepEqual(Object.keys(n).sort(), ['allow_mcp_servers', 'allow_package_managers', 'allowed_hosts', 'type']);
      assert.ok(Array.isArray(n.allowed_hosts));
      assert.equal(typeof n.allow_mcp_servers, 'boolean');
      assert.equal(typeof n.allow_package_managers, 'boolean');
    }
    assert.deepEqual(Object.keys(env.config.packages).sort(), ['apt', 'cargo', 'gem', 'go', 'npm', 'pip', 'type']);
    assert.equal(env.config.packages.type, 'packages');
    for (const m of ['apt', 'cargo', 'gem', 'go', 'npm', 'pip']) assert.ok(Array.isArray(env.config.packages[m]), m);
  } else {
    assert.deepEqual(env.config, { type: 'self_hosted' });
  }
  // Objects returned by a call carry the response's request-id (non-enumerable); list items don't.
  if ('_request_id' in env) assert.match(String(env._request_id), REQ_ID);
}

// Iterates the auto-paginated list until `pred(seen)` holds or the list ends.
async function collect(c, params, stop = () => false) {
  const out = [];
  for await (const env of c.beta.environments.list(params)) {
    out.push(env);
    if (stop(out)) break;
  }
  return out;
}

after(async () => {
  for (const [c, id] of created) {
    try {
      await c.beta.environments.delete(id);
    } catch (e) {
      if (!(e instanceof NotFoundError) && !(e instanceof ConflictError)) throw e;
    }
  }
});

describe('auth and headers', () => {
  test('apiKey is sent as Authorization: Bearer and accepted', async () => {
    const { client: c, calls } = recording();
    const env = await mkenv({ name: name('auth-bearer') }, c);
    assertEnvShape(env);
    assert.equal(calls.length, 1);
    const h = calls[0].headers;
    assert.equal(h.get('authorization'), `Bearer ${KEY}`);
    assert.equal(h.get('x-api-key'), null);
    assert.equal(h.get('anthropic-version'), '2026-10-21');
    assert.ok(h.get('anthropic-beta').split(',').map((s) => s.trim()).includes(BETA));
    assert.equal(calls[0].url.pathname.replace(/\/+/g, '/').endsWith('/v1/environments'), true);
  });

  test('authToken is also sent as Authorization: Bearer and accepted', async () => {
    const { client: c, calls } = recording({ apiKey: undefined, authToken: KEY });
    const env = await mkenv({ name: name('auth-token') }, c);
    assertEnvShape(env);
    assert.equal(calls[0].headers.get('authorization'), `Bearer ${KEY}`);
    assert.equal(calls[0].headers.get('x-api-key'), null);
  });

  test('x-api-key alone (anthropic-version 2023-06-01) is accepted', async () => {
    const calls = [];
    const c = xApiKeyClient(KEY, {
      fetch: async (url, init) => {
        calls.push(new Headers(init.headers));
        return fetch(url, init);
      },
    });
    const env = await mkenv({ name: name('auth-xapikey') }, c);
    assertEnvShape(env);
    const again = await c.beta.environments.retrieve(env.id);
    assert.equal(again.id, env.id);
    assert.equal(calls[0].get('x-api-key'), KEY);
    assert.equal(calls[0].get('authorization'), null);
    assert.equal(calls[0].get('anthropic-version'), '2023-06-01');
  });

  test('a bad key is an AuthenticationError (Bearer and x-api-key)', async () => {
    const bad = new Anthropic({ baseURL: URL_, apiKey: `${KEY}-not-a-key` });
    const e1 = await rejects(bad.beta.environments.list(), AuthenticationError, { status: 401, type: 'authentication_error' });
    assert.equal(e1.errorCode, null);
    await rejects(xApiKeyClient('sk-terrarium-bogus').beta.environments.create({ name: name('nope') }),
      AuthenticationError, { status: 401, type: 'authentication_error' });
  });

  test('a missing key is an AuthenticationError', async () => {
    const none = new Anthropic({ baseURL: URL_, apiKey: 'unused', defaultHeaders: { Authorization: null } });
    await rejects(none.beta.environments.list(), AuthenticationError, { status: 401, type: 'authentication_error' });
  });

  test('missing anthropic-beta is a 400 naming the header', async () => {
    const err = await rejects(
      client.beta.environments.list({}, { headers: { 'anthropic-beta': null } }),
      BadRequestError, { status: 400, type: 'invalid_request_error' });
    assert.match(err.apiMessage, /anthropic-beta/);
  });

  test('unknown beta values and ?beta=true are ignored', async () => {
    const env = await mkenv({ name: name('betas'), betas: ['some-future-beta-2099-01-01'] });
    const got = await client.beta.environments.retrieve(env.id, {}, { query: { beta: 'true' } });
    assert.equal(got.id, env.id);
  });

  test('a non-matching anthropic-workspace-id is a PermissionDeniedError', async () => {
    await rejects(client.beta.environments.list({ workspace_id: 'wrkspc_terrariumNoSuchWorkspace0' }),
      PermissionDeniedError, { status: 403, type: 'permission_error' });
  });

  test('success responses carry request-id and application/json', async () => {
    const env = await mkenv({ name: name('reqid') });
    const { data, response, request_id } = await client.beta.environments.retrieve(env.id).withResponse();
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type'), /^application\/json/);
    assert.match(request_id, REQ_ID);
    assert.equal(data._request_id, request_id);
  });
});

describe('create and retrieve', () => {
  test('default config: cloud, unrestricted, six empty package lists', async () => {
    const env = await mkenv({ name: name('default') });
    assertEnvShape(env);
    assert.equal(env.name, name('default'));
    assert.equal(env.description, null);
    assert.deepEqual(env.metadata, {});
    assert.deepEqual(env.config, DEFAULT_CLOUD);
    assert.equal(env.archived_at, null);
    assert.equal(env.created_at, env.updated_at);
    assert.ok(!('scope' in env));
    assert.ok(Math.abs(Date.parse(env.created_at) - Date.now()) < 10 * 60 * 1000, 'created_at is about now');

    const got = await client.beta.environments.retrieve(env.id);
    assertEnvShape(got);
    assert.deepEqual({ ...got }, { ...env });
  });

  test('config null and config {type: cloud} also give the defaults', async () => {
    const a = await mkenv({ name: name('cfg-null'), config: null });
    assert.deepEqual(a.config, DEFAULT_CLOUD);
    const b = await mkenv({ name: name('cfg-cloud'), config: { type: 'cloud' } });
    assert.deepEqual(b.config, DEFAULT_CLOUD);
    const c = await mkenv({ name: name('cfg-unres'), config: { type: 'cloud', networking: { type: 'unrestricted' } } });
    assert.deepEqual(c.config, DEFAULT_CLOUD);
  });

  test('seed 000 body: description and metadata round-trip (UTF-8 too)', async () => {
    const env = await mkenv({
      name: name('local-✓-環境'),
      description: 'Default analysis environment — ünïcödé 🌱',
      metadata: { team: 'data', 'ключ': 'значение 🌿' },
      config: { type: 'cloud' },
    });
    assertEnvShape(env);
    assert.equal(env.name, name('local-✓-環境'));
    assert.equal(env.description, 'Default analysis environment — ünïcödé 🌱');
    assert.deepEqual(env.metadata, { team: 'data', 'ключ': 'значение 🌿' });
    const got = await client.beta.environments.retrieve(env.id);
    assert.deepEqual({ ...got }, { ...env });
  });

  test('empty and null package lists are accepted and shown as []', async () => {
    const env = await mkenv({
      name: name('pkgs-empty'),
      config: { type: 'cloud', packages: { type: 'packages', pip: [], npm: null } },
    });
    assert.deepEqual(env.config, DEFAULT_CLOUD);
  });

  test('non-empty packages: 422 on the local backend, stored elsewhere', async () => {
    const params = {
      name: name('data-analysis'),
      description: 'pip and npm packages',
      metadata: { suite: RUN },
      config: {
        type: 'cloud',
        packages: { pip: ['pandas', 'numpy', 'scikit-learn'], npm: ['express'] },
        networking: { type: 'unrestricted' },
      },
    };
    if (BACKEND === 'local') {
      await rejects(client.beta.environments.create(params), UnprocessableEntityError,
        { status: 422, type: 'invalid_request_error' });
      return;
    }
    const env = await mkenv(params);
    assertEnvShape(env);
    assert.deepEqual(env.config.packages,
      { ...EMPTY_PACKAGES, pip: ['pandas', 'numpy', 'scikit-learn'], npm: ['express'] });
  });

  test('limited networking: 422 unless the backend is opensandbox', async () => {
    const params = {
      name: name('api-access'),
      config: {
        type: 'cloud',
        networking: { type: 'limited', allowed_hosts: ['API.Example.com', '*.assets.example.com'], allow_mcp_servers: true },
      },
    };
    if (BACKEND !== 'opensandbox') {
      await rejects(client.beta.environments.create(params), UnprocessableEntityError,
        { status: 422, type: 'invalid_request_error' });
      return;
    }
    const env = await mkenv(params);
    assertEnvShape(env);
    assert.deepEqual(env.config.networking, {
      type: 'limited',
      allowed_hosts: ['api.example.com', '*.assets.example.com'],
      allow_mcp_servers: true,
      allow_package_managers: false,
    });
  });

  test('self_hosted with scope; scope with cloud is a 400', async () => {
    const env = await mkenv({ name: name('self-hosted'), config: { type: 'self_hosted' }, scope: 'account' });
    assertEnvShape(env);
    assert.deepEqual(env.config, { type: 'self_hosted' });
    assert.equal(env.scope, 'account');
    const plain = await mkenv({ name: name('self-hosted-noscope'), config: { type: 'self_hosted' } });
    assert.ok(!('scope' in plain));
    await rejects(client.beta.environments.create({ name: name('cloud-scope'), scope: 'organization' }),
      BadRequestError, { status: 400, type: 'invalid_request_error' });
  });

  test('invalid create bodies are 400s naming the field', async () => {
    let e = await rejects(client.beta.environments.create({}), BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /name/);
    e = await rejects(client.beta.environments.create({ name: '' }), BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /name/);
    e = await rejects(client.beta.environments.create({ name: 'x'.repeat(257) }), BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /name/);
    e = await rejects(client.beta.environments.create({ name: name('d'), description: 'd'.repeat(1025) }),
      BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /description/);
    e = await rejects(client.beta.environments.create({ name: name('unknown'), bogus_field: 1 }),
      BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /bogus_field/);
    e = await rejects(client.beta.environments.create({ name: name('unknown2'), config: { type: 'cloud', nope: true } }),
      BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /nope/);
  });

  test('boundary lengths are accepted (name 256, description 1024, metadata 16/64/512)', async () => {
    const md = {};
    for (let i = 0; i < 15; i++) md[`k${i}`] = 'v';
    md['k'.repeat(64)] = 'v'.repeat(512);
    const env = await mkenv({ name: 'n'.repeat(256), description: 'd'.repeat(1024), metadata: md });
    assert.equal(env.name.length, 256);
    assert.equal(env.description.length, 1024);
    assert.deepEqual(env.metadata, md);
  });

  test('metadata with 17 keys is a BetaInvalidMetadataError', async () => {
    const md = {};
    for (let i = 0; i < 17; i++) md[`key${i}`] = `value${i}`;
    const err = await rejects(client.beta.environments.create({ name: name('md17'), metadata: md }),
      BetaInvalidMetadataError, { status: 400, type: 'invalid_request_error', code: 'invalid_metadata' });
    assert.ok(err instanceof BadRequestError);
    assert.deepEqual(err.details, { error_code: 'invalid_metadata' });
  });

  test('metadata key of 65 characters or value of 513 is a BetaInvalidMetadataError', async () => {
    await rejects(client.beta.environments.create({ name: name('mdkey'), metadata: { ['k'.repeat(65)]: 'v' } }),
      BetaInvalidMetadataError, { status: 400, code: 'invalid_metadata' });
    await rejects(client.beta.environments.create({ name: name('mdval'), metadata: { k: 'v'.repeat(513) } }),
      BetaInvalidMetadataError, { status: 400, code: 'invalid_metadata' });
  });

  test('an unknown id is a NotFoundError', async () => {
    const err = await rejects(client.beta.environments.retrieve('env_000000000000000000000000'),
      NotFoundError, { status: 404, type: 'not_found_error' });
    // An error_code is optional here; if present it must be the one the SDK maps.
    if (err.errorCode !== null) {
      assert.equal(err.errorCode, 'environment_not_found');
      assert.ok(err instanceof BetaEnvironmentNotFoundError);
    }
    await rejects(client.beta.environments.retrieve('not-an-env-id'), NotFoundError, { status: 404 });
  });
});

describe('update', () => {
  test('metadata is patched per key: string upserts, null and "" delete', async () => {
    const env = await mkenv({ name: name('upd-md'), metadata: { a: '1', b: '2', c: '3', keep: 'k' } });
    const upd = await client.beta.environments.update(env.id, { metadata: { a: 'x', b: null, c: '', d: '4' } });
    assertEnvShape(upd);
    assert.deepEqual(upd.metadata, { a: 'x', keep: 'k', d: '4' });
    assert.equal(upd.name, env.name);
    assert.equal(upd.created_at, env.created_at);
    assert.ok(Date.parse(upd.updated_at) >= Date.parse(env.updated_at));
    const got = await client.beta.environments.retrieve(env.id);
    assert.deepEqual(got.metadata, { a: 'x', keep: 'k', d: '4' });
  });

  test('metadata limits apply to the merged result', async () => {
    const md = {};
    for (let i = 0; i < 16; i++) md[`k${i}`] = 'v';
    const env = await mkenv({ name: name('upd-md16'), metadata: md });
    await rejects(client.beta.environments.update(env.id, { metadata: { extra: 'v' } }),
      BetaInvalidMetadataError, { status: 400, code: 'invalid_metadata' });
    const upd = await client.beta.environments.update(env.id, { metadata: { k0: null, extra: 'v' } });
    assert.equal(Object.keys(upd.metadata).length, 16);
    assert.equal(upd.metadata.extra, 'v');
    assert.ok(!('k0' in upd.metadata));
  });

  test('description: null clears, "" is stored as "", omitted keeps', async () => {
    const env = await mkenv({ name: name('upd-desc'), description: 'something' });
    let upd = await client.beta.environments.update(env.id, { name: name('upd-desc-renamed') });
    assert.equal(upd.description, 'something');
    assert.equal(upd.name, name('upd-desc-renamed'));
    upd = await client.beta.environments.update(env.id, { description: null });
    assert.equal(upd.description, null);
    upd = await client.beta.environments.update(env.id, { description: '' });
    assert.equal(upd.description, '');
    assert.equal((await client.beta.environments.retrieve(env.id)).description, '');
  });

  test('{} changes nothing, updated_at included', async () => {
    const env = await mkenv({ name: name('upd-empty'), description: 'd', metadata: { a: 'b' } });
    await new Promise((r) => setTimeout(r, 1100)); // a change would show in a second-resolution updated_at
    const upd = await client.beta.environments.update(env.id, {});
    assertEnvShape(upd);
    assert.deepEqual({ ...upd }, { ...env });
    assert.equal(upd.updated_at, env.updated_at);
  });

  test('name null or empty is a 400', async () => {
    const env = await mkenv({ name: name('upd-name') });
    let e = await rejects(client.beta.environments.update(env.id, { name: null }), BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /name/);
    e = await rejects(client.beta.environments.update(env.id, { name: '' }), BadRequestError, { status: 400 });
    assert.match(e.apiMessage, /name/);
  });

  test('cloud config update keeps omitted parts; type may change (seed 000)', async () => {
    const env = await mkenv({ name: name('upd-cfg'), config: { type: 'cloud' } });
    let upd = await client.beta.environments.update(env.id, { config: { type: 'cloud' } });
    assert.deepEqual(upd.config, DEFAULT_CLOUD);
    upd = await client.beta.environments.update(env.id, { config: { type: 'self_hosted' }, scope: 'organization' });
    assert.deepEqual(upd.config, { type: 'self_hosted' });
    assert.equal(upd.scope, 'organization');
    upd = await client.beta.environments.update(env.id, { config: { type: 'cloud' } });
    assert.deepEqual(upd.config, DEFAULT_CLOUD);
    assert.ok(!('scope' in upd), 'changing to cloud clears scope');
    await rejects(client.beta.environments.update(env.id, { config: { type: 'cloud', networking: null } }),
      BadRequestError, { status: 400 });
    await rejects(client.beta.environments.update(env.id, { config: { type: 'cloud', packages: null } }),
      BadRequestError, { status: 400 });
  });

  test('an unknown id is a NotFoundError', async () => {
    await rejects(client.beta.environments.update('env_000000000000000000000000', { name: 'x' }),
      NotFoundError, { status: 404, type: 'not_found_error' });
  });
});

describe('list', () => {
  const mine = [];
  before(async () => {
    for (let i = 0; i < 5; i++) {
      mine.push(await mkenv({ name: name(`page-${i}`), metadata: { suite: RUN, idx: String(i) } }));
    }
  });

  test('auto-pagination with limit 2 walks several pages, newest first', async () => {
    const { client: c, calls } = recording();
    const want = new Set(mine.map((e) => e.id));
    const seen = [];
    const all = await collect(c, { limit: 2 }, (out) => {
      const last = out[out.length - 1];
      if (want.has(last.id)) seen.push(last);
      return seen.length === want.size;
    });
    assert.equal(seen.length, 5, 'all five environments were listed');
    for (const e of all) assertEnvShape(e);
    assert.equal(new Set(all.map((e) => e.id)).size, all.length, 'no environment appears twice');
    // Newest first: created_at never increases; creation order breaks ties when timestamps differ.
    for (let i = 1; i < all.length; i++) {
      assert.ok(Date.parse(all[i - 1].created_at) >= Date.parse(all[i].created_at), `order at ${i}`);
    }
    const pos = (e) => seen.findIndex((s) => s.id === e.id);
    for (let i = 0; i < mine.length; i++) {
      for (let j = i + 1; j < mine.length; j++) {
        if (mine[i].created_at !== mine[j].created_at) assert.ok(pos(mine[j]) < pos(mine[i]), 'newer first');
      }
    }
    const lists = calls.filter((k) => k.method === 'GET' && /\/v1\/environments$/.test(k.url.pathname));
    assert.ok(lists.length >= 3, `at least 3 pages fetched, got ${lists.length}`);
    assert.equal(lists[0].url.searchParams.get('page'), null);
    for (const k of lists) assert.equal(k.url.searchParams.get('limit'), '2');
    for (const k of lists.slice(1)) assert.ok(k.url.searchParams.get('page'), 'later pages send page=<cursor>');
  });

  test('pages hold at most `limit` items; next_page is a string until the last page', async () => {
    let page = await client.beta.environments.list({ limit: 2 });
    assert.ok(Array.isArray(page.data));
    assert.equal(page.data.length, 2);
    assert.equal(typeof page.next_page, 'string');
    assert.ok(page.hasNextPage());
    page = await page.getNextPage();
    assert.ok(page.data.length >= 1 && page.data.length <= 2);
    assert.deepEqual(Object.keys(page.body).sort(), ['data', 'next_page']);
  });

  test('the last page has next_page null', async () => {
    const page = await client.beta.environments.list({ limit: 1000 });
    if (page.data.length < 1000) {
      assert.equal(page.next_page, null);
      assert.equal(page.hasNextPage(), false);
    }
    const ids = page.data.map((e) => e.id);
    for (const e of mine) assert.ok(ids.includes(e.id));
  });

  test('archived environments are listed only with include_archived=true', async () => {
    const victim = mine[2];
    await client.beta.environments.archive(victim.id);
    const plain = (await collect(client, { limit: 1000 })).map((e) => e.id);
    assert.ok(!plain.includes(victim.id), 'hidden by default');
    assert.ok(plain.includes(mine[1].id) && plain.includes(mine[3].id));
    const { client: c, calls } = recording();
    const withArchived = await collect(c, { limit: 1000, include_archived: true });
    const hit = withArchived.find((e) => e.id === victim.id);
    assert.ok(hit, 'listed with include_archived=true');
    assert.match(hit.archived_at, RFC3339_UTC);
    assert.equal(calls[0].url.searchParams.get('include_archived'), 'true');
    const off = (await collect(client, { limit: 1000, include_archived: false })).map((e) => e.id);
    assert.ok(!off.includes(victim.id));
  });

  test('limit out of range, forged cursors and cross-filter cursors are 400s', async () => {
    for (const limit of [0, 1001, -1]) {
      await rejects(client.beta.environments.list({ limit }), BadRequestError, { status: 400, type: 'invalid_request_error' });
    }
    await rejects(client.beta.environments.list({}, { query: { limit: 'ten' } }), BadRequestError, { status: 400 });
    await rejects(client.beta.environments.list({ page: 'forged-cursor' }), BadRequestError, { status: 400 });
    const first = await client.beta.environments.list({ limit: 1 });
    assert.ok(first.next_page);
    await rejects(client.beta.environments.list({ limit: 1, include_archived: true, page: first.next_page }),
      BadRequestError, { status: 400 });
    const tampered = first.next_page.slice(0, -2) + (first.next_page.endsWith('AA') ? 'BB' : 'AA');
    await rejects(client.beta.environments.list({ limit: 1, page: tampered }), BadRequestError, { status: 400 });
  });

  test('limit 1 and limit 1000 are accepted; default page size is at most 100', async () => {
    assert.equal((await client.beta.environments.list({ limit: 1 })).data.length, 1);
    await client.beta.environments.list({ limit: 1000 });
    assert.ok((await client.beta.environments.list()).data.length <= 100);
  });
});

describe('archive and delete', () => {
  test('archive sets archived_at, is idempotent and leaves the environment readable', async () => {
    const env = await mkenv({ name: name('archive'), metadata: { a: 'b' } });
    const { client: c, calls } = recording();
    const a1 = await c.beta.environments.archive(env.id);
    assertEnvShape(a1);
    assert.match(a1.archived_at, RFC3339_UTC);
    assert.equal(calls[0].method, 'POST');
    assert.equal(calls[0].headers.get('content-type'), null, 'archive is sent without a body');
    const a2 = await client.beta.environments.archive(env.id);
    assert.deepEqual({ ...a2 }, { ...a1 }, 'archiving again returns it unchanged');
    const got = await client.beta.environments.retrieve(env.id);
    assert.equal(got.archived_at, a1.archived_at);
    assert.deepEqual(got.metadata, { a: 'b' });
  });

  test('updating an archived environment is a BetaEnvironmentArchivedError, not retried', async () => {
    const env = await mkenv({ name: name('archived-upd') });
    await client.beta.environments.archive(env.id);
    const { client: c, calls } = recording();
    const err = await rejects(c.beta.environments.update(env.id, { name: 'renamed' }), BetaEnvironmentArchivedError,
      { status: 400, type: 'invalid_request_error', code: 'environment_archived' });
    assert.ok(err instanceof BadRequestError);
    assert.deepEqual(err.details, { error_code: 'environment_archived' });
    assert.equal(calls.length, 1, 'a deterministic 4xx is not retried');
    assert.equal(err.headers.get('x-should-retry'), 'false');
    // Archived environments are read-only: a metadata patch is refused the same way.
    await rejects(client.beta.environments.update(env.id, { metadata: { x: 'y' } }), BetaEnvironmentArchivedError,
      { status: 400, code: 'environment_archived' });
    assert.equal((await client.beta.environments.retrieve(env.id)).name, env.name);
  });

  test('deterministic 4xx responses are sent once with x-should-retry: false', async () => {
    const { client: c, calls } = recording();
    const md = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    await rejects(c.beta.environments.create({ name: name('retry'), metadata: md }), BetaInvalidMetadataError);
    await rejects(c.beta.environments.retrieve('env_000000000000000000000000'), NotFoundError);
    await rejects(c.beta.environments.list({ limit: 0 }), BadRequestError);
    assert.equal(calls.length, 3);
  });

  test('delete returns environment_deleted; afterwards everything is a NotFoundError', async () => {
    const env = await mkenv({ name: name('delete') });
    const del = await client.beta.environments.delete(env.id);
    assert.deepEqual({ ...del }, { id: env.id, type: 'environment_deleted' });
    assert.match(del._request_id, REQ_ID);
    await rejects(client.beta.environments.retrieve(env.id), NotFoundError, { status: 404, type: 'not_found_error' });
    await rejects(client.beta.environments.update(env.id, { name: 'x' }), NotFoundError, { status: 404 });
    await rejects(client.beta.environments.archive(env.id), NotFoundError, { status: 404 });
    await rejects(client.beta.environments.delete(env.id), NotFoundError, { status: 404 });
    const ids = (await collect(client, { limit: 1000, include_archived: true })).map((e) => e.id);
    assert.ok(!ids.includes(env.id));
  });

  test('an archived environment can be deleted', async () => {
    const env = await mkenv({ name: name('archive-delete') });
    await client.beta.environments.archive(env.id);
    const del = await client.beta.environments.delete(env.id);
    assert.equal(del.type, 'environment_deleted');
  });
});

describe('workspaces', { skip: !KEY2 && 'TERRARIUM_KEY2 not set' }, () => {
  test('another workspace cannot see, change or delete an environment', async () => {
    const other = new Anthropic({ baseURL: URL_, apiKey: KEY2 });
    const env = await mkenv({ name: name('ws') });
    await rejects(other.beta.environments.retrieve(env.id), NotFoundError, { status: 404 });
    await rejects(other.beta.environments.update(env.id, { name: 'stolen' }), NotFoundError, { status: 404 });
    await rejects(other.beta.environments.archive(env.id), NotFoundError, { status: 404 });
    await rejects(other.beta.environments.delete(env.id), NotFoundError, { status: 404 });
    const ids = (await collect(other, { limit: 1000, include_archived: true })).map((e) => e.id);
    assert.ok(!ids.includes(env.id));
    const theirs = await mkenv({ name: name('ws-theirs') }, other);
    await rejects(client.beta.environments.retrieve(theirs.id), NotFoundError, { status: 404 });
    const got = await client.beta.environments.retrieve(env.id);
    assert.equal(got.name, env.name);
  });

  test('a cursor from one workspace is not honoured in another', async () => {
    const other = new Anthropic({ baseURL: URL_, apiKey: KEY2 });
    await mkenv({ name: name('ws-c1') });
    await mkenv({ name: name('ws-c2') });
    const first = await client.beta.environments.list({ limit: 1 });
    assert.ok(first.next_page);
    let leaked = [];
    try {
      leaked = (await other.beta.environments.list({ limit: 1, page: first.next_page })).data;
    } catch (e) {
      assert.ok(e instanceof BadRequestError, `expected a 400 or a list of the other workspace, got ${e}`);
    }
    const mineIds = new Set((await collect(client, { limit: 1000, include_archived: true })).map((e) => e.id));
    for (const e of leaked) assert.ok(!mineIds.has(e.id), 'no environment of another workspace leaks');
  });
});

// Backends that admit what the local one refuses; set by the harness when those deployments run.
for (const backend of ['docker', 'opensandbox']) {
  const url = process.env[`TERRARIUM_URL_${backend}`];
  describe(`backend ${backend}`, { skip: !url && `TERRARIUM_URL_${backend} not set` }, () => {
    const c = url && new Anthropic({ baseURL: url, apiKey: KEY });
    test('packages are accepted and stored', async () => {
      const env = await mkenv({
        name: name(`data-analysis-${backend}`),
        config: { type: 'cloud', packages: { pip: ['pandas', 'numpy', 'scikit-learn'], npm: ['express'] }, networking: { type: 'unrestricted' } },
      }, c);
      assertEnvShape(env);
      assert.deepEqual(env.config.packages, { ...EMPTY_PACKAGES, pip: ['pandas', 'numpy', 'scikit-learn'], npm: ['express'] });
      const upd = await c.beta.environments.update(env.id, { config: { type: 'cloud', packages: { apt: ['graphviz'] } } });
      assert.deepEqual(upd.config.packages, { ...EMPTY_PACKAGES, apt: ['graphviz'] }, 'a packages object replaces all six lists');
      assert.deepEqual(upd.config.networking, { type: 'unrestricted' });
    });
    test(`limited networking is ${backend === 'opensandbox' ? 'accepted' : 'a 422'}`, async () => {
      const params = {
        name: name(`api-access-${backend}`),
        config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['api.example.com'], allow_mcp_servers: true, allow_package_managers: true } },
      };
      if (backend !== 'opensandbox') {
        await rejects(c.beta.environments.create(params), UnprocessableEntityError, { status: 422 });
        return;
      }
      const env = await mkenv(params, c);
      assert.deepEqual(env.config.networking, params.config.networking);
      const upd = await c.beta.environments.update(env.id, {
        config: { type: 'cloud', networking: { type: 'limited', allowed_hosts: ['*.Example.org'] } },
      });
      assert.deepEqual(upd.config.networking, {
        type: 'limited', allowed_hosts: ['*.example.org'], allow_mcp_servers: true, allow_package_managers: true,
      }, 'omitted limited fields keep their values');
      // Packages with limited networking are accepted even without allow_package_managers (seed 000).
      const both = await mkenv({
        name: name(`limited-pkgs-${backend}`),
        config: { type: 'cloud', packages: { pip: ['requests'] }, networking: { type: 'limited', allowed_hosts: ['api.example.com'] } },
      }, c);
      assert.equal(both.config.networking.allow_package_managers, false);
      assert.deepEqual(both.config.packages.pip, ['requests']);
    });
  });
}

describe('sessions', { skip: !(client.beta.sessions && HAS_SESSIONS) && 'TERRARIUM_HAS_SESSIONS not set' }, () => {
  test('deleting a referenced environment is a 409 that is not retried; archived refuses sessions', async () => {
    const env = await mkenv({ name: name('sess-env') });
    const agent = await client.beta.agents.create({ name: name('sess-agent'), model: 'claude-sonnet-4-5' });
    const sess = await client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
    assert.match(sess.id, /^sesn_/);
    assert.equal(sess.environment_id, env.id);

    const { client: c, calls } = recording();
    const err = await rejects(c.beta.environments.delete(env.id), ConflictError, { status: 409, type: 'conflict_error' });
    assert.equal(calls.length, 1, 'the 409 is not retried');
    assert.equal(err.headers.get('x-should-retry'), 'false');
    assert.match(err.apiMessage, /\b1\b/, 'the message names how many sessions');

    await client.beta.environments.archive(env.id);
    await rejects(client.beta.sessions.create({ agent: agent.id, environment_id: env.id }), BetaEnvironmentArchivedError,
      { status: 400, code: 'environment_archived' });
    await rejects(client.beta.sessions.create({ agent: agent.id, environment_id: 'env_000000000000000000000000' }),
      NotFoundError, { status: 404 });
    const still = await client.beta.sessions.retrieve(sess.id);
    assert.equal(still.environment_id, env.id);

    const sdel = await client.beta.sessions.delete(sess.id);
    assert.equal(sdel.type, 'session_deleted');
    const del = await client.beta.environments.delete(env.id);
    assert.equal(del.type, 'environment_deleted');
    await client.beta.agents.archive(agent.id);
  });
});
