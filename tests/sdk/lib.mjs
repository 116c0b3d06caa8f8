// What the SDK suites share (environments, sessions, agents, work).
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { APIError } from '@anthropic-ai/sdk';

// Throws unless every variable in NAMES is set (and not empty), naming the missing ones.
export function requireEnv(...names) {
  const missing = names.filter((n) => !process.env[n]);
  if (missing.length) throw new Error(`${missing.join(', ')} must be set`);
}

// What every suite needs (tests/sdk/run.sh, tests/work/run.sh pass it): the API's base URL and
// a key; TERRARIUM_KEY2 is a key of another workspace ('' when not given).
requireEnv('TERRARIUM_URL', 'TERRARIUM_KEY');
export const URL_ = process.env.TERRARIUM_URL;
export const KEY = process.env.TERRARIUM_KEY;
export const KEY2 = process.env.TERRARIUM_KEY2 || '';
// A tag of this run, in the names of what the suites create.
export const RUN = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
export const name = (s) => `sdk-${RUN}-${s}`;
export const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const BETA = 'managed-agents-2026-04-01';
export const REQ_ID = /^req_[0-9A-Za-z]{24}$/;

// Awaits a promise that must reject with an SDK APIError of class `cls`, checks the error
// envelope, `request-id` and `x-should-retry`, and returns the error.
export async function rejects(promise, cls, { status, type, code } = {}) {
  let err;
  try {
    await promise;
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${cls.name}, but the call succeeded`);
  if (!(err instanceof cls)) {
    throw new assert.AssertionError({
      message: `expected ${cls.name}, got ${err?.constructor?.name}: ${err?.message}`,
      actual: err?.constructor?.name,
      expected: cls.name,
    });
  }
  assert.ok(err instanceof APIError);
  if (status !== undefined) assert.equal(err.status, status);
  if (type !== undefined) assert.equal(err.type, type);
  if (code !== undefined) assert.equal(err.errorCode, code);
  assert.match(String(err.requestID), REQ_ID, 'request-id header on the error');
  assert.equal(err.error?.type, 'error', 'error envelope type');
  assert.equal(err.error?.request_id, err.requestID, 'request_id in the body matches the header');
  assert.equal(typeof err.apiMessage, 'string');
  assert.ok(err.apiMessage.length > 0, 'error.message is not empty');
  assert.match(err.headers.get('content-type') || '', /^application\/json/);
  if (err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
    assert.equal(err.headers.get('x-should-retry'), 'false', `x-should-retry on ${err.status}`);
  }
  if (err.errorCode === null) assert.ok(!err.error.error.details, 'details only when an error_code applies');
  return err;
}

// What a suite creates through CLIENT (or the client passed last), and deletes after its tests,
// best effort: sessions first (they hold their environments), then environments, vaults, and
// agents (archived: agents cannot be deleted). `made.<kind>` holds [client, id] pairs; push
// what is created another way.
export function creator(client) {
  const made = { sessions: [], environments: [], vaults: [], agents: [] };
  const keep = (kind, c, o) => {
    made[kind].push([c, o.id]);
    return o;
  };
  after(async () => {
    for (const [c, id] of made.sessions) await c.beta.sessions.delete(id).catch(() => {});
    for (const [c, id] of made.environments) await c.beta.environments.delete(id).catch(() => {});
    for (const [c, id] of made.vaults) await c.beta.vaults.delete(id).catch(() => {});
    for (const [c, id] of made.agents) await c.beta.agents.archive(id).catch(() => {});
  });
  return {
    made,
    mkagent: async (params = {}, c = client) =>
      keep('agents', c, await c.beta.agents.create({ name: name('agent'), model: 'claude-opus-5-5', ...params })),
    mkenv: async (params = {}, c = client) =>
      keep('environments', c, await c.beta.environments.create({ name: name('env'), ...params })),
    mkvault: async (params = {}, c = client) =>
      keep('vaults', c, await c.beta.vaults.create({ display_name: name('vault'), ...params })),
    mksession: async (params, c = client) => keep('sessions', c, await c.beta.sessions.create(params)),
  };
}
