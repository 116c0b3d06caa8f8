// Races "create a session" against "delete the environment" and against "archive the
// environment", each from its own connection, ROUNDS times. A session must never be created for
// an environment that is gone or that was archived before the session committed, and every 200
// the clients saw must correspond to a stored row. Then races two updates of one environment
// and an update against its archive: every 200 shows the object as its own update left it, and
// an update is either applied before the archive or refused as archived.
//
// Env: TERRARIUM_URL, TERRARIUM_KEY; ROUNDS (default 200); UPDATE_ROUNDS (the update races,
// default 50: an answer built outside the write's transaction failed most rounds). Prints
// "N passed, N failed".
import assert from 'node:assert/strict';
import http from 'node:http';
import { request } from '../lib-http.mjs';

const URL_BASE = process.env.TERRARIUM_URL;
const KEY = process.env.TERRARIUM_KEY;
const ROUNDS = Number(process.env.ROUNDS || 200);
const UPDATE_ROUNDS = Number(process.env.UPDATE_ROUNDS || 50);
const TIMEOUT_MS = 30000;
if (!URL_BASE || !KEY) {
  console.error('race: TERRARIUM_URL and TERRARIUM_KEY are required');
  process.exit(2);
}

// Two clients: each its own keep-alive agent with one socket, so the two requests of a round
// travel on different connections and can reach different workers.
const clients = [new http.Agent({ keepAlive: true, maxSockets: 1 }), new http.Agent({ keepAlive: true, maxSockets: 1 })];

function call(client, method, path, body) {
  return request(URL_BASE + path, { method, key: KEY, body, agent: clients[client], timeoutMs: TIMEOUT_MS });
}

let passed = 0;
const failures = [];
function check(name, fn) {
  try { fn(); passed++; } catch (e) { failures.push(`${name}: ${e.message}`); }
}

const agent = await call(0, 'POST', '/v1/agents', { name: 'race-agent', model: 'claude-sonnet-4-5' });
assert.equal(agent.status, 200, agent.text);

async function round(i, kind) {
  const env = await call(0, 'POST', '/v1/environments', { name: `race-${kind}-${i}` });
  assert.equal(env.status, 200, env.text);
  const envId = env.json.id;
  const [sess, op] = await Promise.all([
    call(0, 'POST', '/v1/sessions', { agent: agent.json.id, environment_id: envId }),
    kind === 'delete'
      ? call(1, 'DELETE', `/v1/environments/${envId}`)
      : call(1, 'POST', `/v1/environments/${envId}/archive`),
  ]);
  const label = `${kind} round ${i}`;
  outcomes[kind][sess.status === 200 ? 'session' : 'env']++;
  check(`${label}: statuses`, () => {
    assert.ok([200, 400, 404].includes(sess.status), `session create answered ${sess.status}: ${sess.text}`);
    assert.ok([200, 409].includes(op.status), `${kind} answered ${op.status}: ${op.text}`);
  });
  if (sess.status === 200) {
    const sid = sess.json.id;
    const got = await call(0, 'GET', `/v1/sessions/${sid}`);
    check(`${label}: the created session is stored`, () => assert.equal(got.status, 200, got.text));
    const envNow = await call(0, 'GET', `/v1/environments/${envId}`);
    if (kind === 'delete') {
      check(`${label}: environment survives its session`, () => {
        assert.equal(op.status, 409, 'delete succeeded although a session was created');
        assert.equal(envNow.status, 200, envNow.text);
      });
    } else {
      check(`${label}: session committed before the archive`, () => {
        assert.equal(op.status, 200, op.text);
        assert.ok(envNow.json.archived_at, 'environment not archived');
        assert.ok(sess.json.created_at < envNow.json.archived_at,
          `session created at ${sess.json.created_at}, environment archived at ${envNow.json.archived_at}`);
      });
    }
    const del = await call(0, 'DELETE', `/v1/sessions/${sid}`);
    check(`${label}: session delete`, () => assert.equal(del.status, 200, del.text));
  } else {
    check(`${label}: refusal matches the race`, () => {
      if (kind === 'delete') {
        assert.equal(op.status, 200, `session refused (${sess.status}) but delete answered ${op.status}`);
        assert.equal(sess.status, 404, sess.text);
      } else {
        assert.equal(sess.status, 400, sess.text);
        assert.equal(sess.json.error.details.error_code, 'environment_archived');
      }
    });
  }
  if (kind === 'archive' || op.status === 409) await call(0, 'DELETE', `/v1/environments/${envId}`);
}

// Two updates of one environment, then an update against the archive of another.
async function updateRound(i) {
  const label = `update round ${i}`;
  const env = await call(0, 'POST', '/v1/environments', { name: `race-update-${i}`, description: 'before' });
  assert.equal(env.status, 200, env.text);
  const envId = env.json.id;
  const mine = [`by client 0 in round ${i}`, `by client 1 in round ${i}`];
  const both = await Promise.all(mine.map((d, c) => call(c, 'POST', `/v1/environments/${envId}`, { description: d })));
  both.forEach((u, c) => check(`${label}: update ${c} answers what it wrote`, () => {
    assert.equal(u.status, 200, u.text);
    assert.equal(u.json.description, mine[c]);
  }));
  const after = await call(0, 'GET', `/v1/environments/${envId}`);
  check(`${label}: one of the two is stored`, () => assert.ok(mine.includes(after.json.description), after.text));
  const [upd, arch] = await Promise.all([
    call(0, 'POST', `/v1/environments/${envId}`, { name: `race-update-${i}-renamed` }),
    call(1, 'POST', `/v1/environments/${envId}/archive`),
  ]);
  const stored = await call(0, 'GET', `/v1/environments/${envId}`);
  outcomes.update[upd.status === 200 ? 'update' : 'archive']++;
  check(`${label}: update against archive`, () => {
    assert.equal(arch.status, 200, arch.text);
    assert.ok(stored.json.archived_at, stored.text);
    if (upd.status === 200) {
      assert.equal(upd.json.archived_at, null, upd.text);
      assert.equal(stored.json.name, `race-update-${i}-renamed`);
    } else {
      assert.equal(upd.status, 400, upd.text);
      assert.equal(upd.json.error.details.error_code, 'environment_archived');
      assert.equal(stored.json.name, `race-update-${i}`);
    }
  });
  await call(0, 'DELETE', `/v1/environments/${envId}`);
}

const outcomes = { delete: { session: 0, env: 0 }, archive: { session: 0, env: 0 },
  update: { update: 0, archive: 0 } };
for (const kind of ['delete', 'archive']) {
  for (let i = 0; i < ROUNDS; i++) await round(i, kind);
}
for (let i = 0; i < UPDATE_ROUNDS; i++) await updateRound(i);
for (const c of clients) c.destroy();
for (const f of failures.slice(0, 20)) console.log(`not ok - ${f}`);
console.log(`race: ${ROUNDS} rounds each (updates: ${UPDATE_ROUNDS}); session first / environment first: ` +
  `delete ${outcomes.delete.session}/${outcomes.delete.env}, archive ${outcomes.archive.session}/${outcomes.archive.env}; ` +
  `update first / archive first: ${outcomes.update.update}/${outcomes.update.archive}`);
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
