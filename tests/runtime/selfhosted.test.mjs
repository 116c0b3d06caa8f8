// Self-hosted sessions end to end (docs/work-queue.md, docs/runner.md): the server runs the
// model, the official SDK's EnvironmentWorker (worker.mjs, Node 22, unchanged) runs the tools
// in its workdir. tests/runtime/run.sh runs it with the local runners.
//
//   toolset     bash, write, read, edit, glob, grep run in the worker's workdir (the files are
//               there, in no server sandbox); agent.tool_use -> user.tool_result, no
//               agent.tool_result; a second turn after the worker stopped the item gets a new
//               item and sees the files
//   always_ask  allow: the worker runs the tool once the confirmation comes, the turn resumes
//               with its result (not with the allow); deny: the worker never runs it, the model
//               gets the deny_message
//   two workers 20 sessions, two workers: every tool ran exactly once (a log file per session
//               in exactly one workdir), every turn ends idle end_turn
//   kill -9     a worker killed mid-tool: the item comes back (its lease ends) to another
//               worker, which runs the call; the session completes and the model saw one result
//               per tool use
//   rules       (no worker: the test answers) a result before the allow, after a deny, or
//               twice: 400 tool_use_not_approved, tool_use_denied, tool_use_already_answered;
//               the allow alone does not resume the turn
//   stopped     the item of a session waiting for its client is stopped: a session.error says
//               so, idle end_turn; the next message queues a new item and a worker answers
//   tokens      a poll's sessions token opens its session's events (send, list, stream) and
//               nothing of another session (404); a re-delivery makes it stale and a stop
//               revokes it (401)
//   revoked     the environment key revoked while a worker polls: the worker stops, saying why
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Anthropic, { AuthenticationError, BadRequestError, NotFoundError } from '@anthropic-ai/sdk';
import {
  BUILD, HERE, NODE22, RUN, TOOLSET_FILES, assertConsistent, assertModelSawOneResultEach,
  assertToolsetResults, blockText, cleanup, client, idleWith, listEvents, mkAgent, mkEnv,
  mkSession, modelRequests, resultsSeen, resultText, say, script, sleep, text, token,
  toolsetSteps, turn, until, urlOf, use, watch,
} from './lib.mjs';

const URL_ = urlOf('local');
const c = client(URL_);
const CONFIG = process.env.TERRARIUM_CONFIG;
const WORK_ROOT = fs.mkdtempSync(path.join(os.tmpdir(), 'terrarium-workers-'));
const asToken = (t) => new Anthropic({ baseURL: URL_, apiKey: null, authToken: t, maxRetries: 0 });
const cli = (input, ...args) =>
  execFileSync(path.join(BUILD, 'terrarium-api'), ['-c', CONFIG, ...args], { encoding: 'utf8', input }).trim();

const workers = [];
after(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await cleanup();
  fs.rmSync(WORK_ROOT, { recursive: true, force: true });
});

async function selfHostedEnv() {
  const env = await mkEnv(c, { type: 'self_hosted' });
  const key = cli(undefined, 'key', 'create-environment', env.id);
  assert.match(key, /^trmenv_/);
  return { env, key };
}

// An EnvironmentWorker process (its own process group: a kill -9 of the group takes its tools
// too) on ENV with KEY in a new workdir. Returns {dir, out(), exited, kill(sig)}.
function startWorker(env, key, { maxIdleMs = 300, leaseTtlS = '' } = {}) {
  const dir = fs.mkdtempSync(path.join(WORK_ROOT, 'w-'));
  let out = '';
  const child = spawn(NODE22, [path.join(HERE, 'worker.mjs')], {
    cwd: HERE,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: process.env.PATH, HOME: process.env.HOME, TERRARIUM_URL: URL_, ENV_ID: env.id, ENV_KEY: key,
      WORKDIR: dir, MAX_IDLE_MS: String(maxIdleMs), LEASE_TTL_S: String(leaseTtlS),
    },
  });
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  // 'close': the process exited and its output was all read
  const exited = new Promise((r) => child.on('close', (code, signal) => r({ code, signal })));
  const w = {
    dir,
    exited,
    out: () => out,
    kill: (sig = 'SIGTERM') => {
      try { process.kill(-child.pid, sig); } catch { /* gone */ }
      return exited;
    },
  };
  workers.push(w);
  return w;
}

// The tool uses and results of a self_hosted turn: agent.tool_use answered by user.tool_result.
function clientCalls(events) {
  const res = new Map(events.filter((e) => e.type === 'user.tool_result').map((e) => [e.tool_use_id, e]));
  return events.filter((e) => e.type === 'agent.tool_use').map((u) => ({ use: u, result: res.get(u.id) }));
}

// No server sandbox holds WORD: no directory of SESSION_ID under the sandbox root, no file
// mentioning WORD.
function assertInNoServerSandbox(sessionId, word) {
  const root = `${RUN}/sandboxes`;
  assert.ok(!fs.existsSync(`${root}/${sessionId}`), `no server sandbox for ${sessionId}`);
  let hits = '';
  try {
    hits = execFileSync('grep', ['-rl', '--', word, root], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch { /* grep: 1 = none found (or no root) */ }
  assert.equal(hits, '', `files in server sandboxes mention ${word}`);
}

describe('self_hosted', { concurrency: true }, () => {
  test('the worker runs bash, write, read, edit, glob, grep in its workdir; a second turn gets a new item', async () => {
    const T = token('shtools');
    const { env, key } = await selfHostedEnv();
    const session = await mkSession(c, await mkAgent(c), env);
    await script(T, [
      ...toolsetSteps(T),
      say(`done ${T}`),
    ]);
    const w = startWorker(env, key);
    const evs = await turn(c, session.id, text(`work ${T}`), { until: idleWith('end_turn'), timeoutMs: 60000 });
    const got = clientCalls(evs);
    assert.deepEqual(got.map((x) => x.use.name), ['bash', 'write', 'read', 'edit', 'glob', 'grep']);
    assert.ok(!evs.some((e) => e.type === 'agent.tool_result'), 'no built-in tool ran on the server');
    for (const { use: u, result } of got) {
      assert.equal(u.evaluated_permission, 'allow');
      assert.ok(result, `${u.name}: the worker answered`);
      assert.equal(result.is_error, false, `${u.name}: ${resultText(result)}`);
    }
    assertToolsetResults(got.map((x) => resultText(x.result)), T);
    for (const [f, content] of Object.entries(TOOLSET_FILES(T))) assert.equal(fs.readFileSync(`${w.dir}/${f}`, 'utf8'), content);
    assertInNoServerSandbox(session.id, T);
    assertModelSawOneResultEach((await modelRequests(T)).at(-1), 'self_hosted toolset');

    // the worker stops the item once the turn is over (maxIdleMs); the next message queues a
    // new one, which the same worker takes
    await until('the item is stopped', async () => {
      const items = (await c.beta.environments.work.list(env.id)).data;
      return items.length === 1 && items[0].state === 'stopped';
    }, { timeoutMs: 15000, everyMs: 200 });
    await script(T, [use('bash', { command: 'cat src/deep/w.txt' }), say(`again ${T}`)]);
    const again = await turn(c, session.id, text(`again ${T}`), { until: idleWith('end_turn'), timeoutMs: 60000 });
    const [r] = clientCalls(again);
    assert.equal(resultText(r.result).trim(), `hello ${T}\nedited ${T}`);
    assert.equal((await c.beta.environments.work.list(env.id)).data.length, 2, 'a new item for the second turn');
    assertConsistent(await listEvents(c, session.id), 'self_hosted toolset');
    await w.kill();
  });

  for (const verdict of ['allow', 'deny']) {
    test(`always_ask through the worker: ${verdict}`, async () => {
      const T = token(`shask${verdict}`);
      const { env, key } = await selfHostedEnv();
      const agent = await mkAgent(c, { tools: [{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'always_ask' } } }] });
      const session = await mkSession(c, agent, env);
      const file = `asked-${T}.txt`;
      await script(T, [use('write', { file_path: file, content: `written ${T}` }), say(`after ${T}`)]);
      const w = startWorker(env, key);
      const asked = await turn(c, session.id, text(`write ${T}`), { until: (e) => e.type === 'session.status_idle', timeoutMs: 30000 });
      const u = asked.find((e) => e.type === 'agent.tool_use');
      assert.equal(u.evaluated_permission, 'ask');
      assert.deepEqual(asked.at(-1).stop_reason, { type: 'requires_action', event_ids: [u.id] });
      await sleep(1000); // the worker has the call and holds it
      assert.ok(!fs.existsSync(`${w.dir}/${file}`), 'not run before the confirmation');
      const confirm = { type: 'user.tool_confirmation', tool_use_id: u.id, result: verdict };
      if (verdict === 'deny') confirm.deny_message = `refused ${T}`;
      const rest = await turn(c, session.id, confirm, { until: idleWith('end_turn'), timeoutMs: 30000 });
      const seen = resultsSeen((await modelRequests(T)).at(-1)).get(u.id);
      assert.equal(seen.length, 1, 'the model saw one result');
      if (verdict === 'allow') {
        assert.equal(fs.readFileSync(`${w.dir}/${file}`, 'utf8'), `written ${T}`);
        const result = rest.find((e) => e.type === 'user.tool_result' && e.tool_use_id === u.id);
        assert.ok(result, rest.map((e) => e.type).join(' '));
        // the allow does not resume the turn: the result does
        const iResult = rest.indexOf(result);
        const iRunning = rest.findIndex((e) => e.type === 'session.status_running');
        assert.ok(iRunning > iResult, `running (${iRunning}) after the result (${iResult}): ${rest.map((e) => e.type)}`);
        assert.equal(seen[0].is_error ?? false, false);
      } else {
        assert.ok(!fs.existsSync(`${w.dir}/${file}`), 'a denied call never runs');
        assert.ok(!rest.some((e) => e.type === 'user.tool_result'), 'the worker posted nothing');
        assert.equal(seen[0].is_error, true);
        assert.match(blockText(seen[0]), new RegExp(`refused ${T}`));
      }
      assertConsistent(await listEvents(c, session.id), `always_ask ${verdict}`);
      await w.kill();
    });
  }

  test('two workers, 20 sessions: every tool runs once', async () => {
    const N = 20;
    const { env, key } = await selfHostedEnv();
    const agent = await mkAgent(c);
    const sessions = await Promise.all(Array.from({ length: N }, async (_, i) => {
      const T = token(`shmany${i}`);
      const s = await mkSession(c, agent, env);
      await script(T, [
        use('bash', { command: `echo a >> runs-${T}.log` }),
        use('bash', { command: `echo b >> runs-${T}.log; cat runs-${T}.log` }),
        say(`done ${T}`),
      ]);
      return { T, s };
    }));
    const watching = sessions.map(({ T, s }) =>
      turn(c, s.id, text(`count ${T}`), { until: idleWith('end_turn'), timeoutMs: 120000 }));
    const ws = [startWorker(env, key), startWorker(env, key)];
    const turns = await Promise.all(watching);
    const perWorker = ws.map(() => 0);
    for (const [i, { T, s }] of sessions.entries()) {
      const what = `session ${i} (${s.id})`;
      assert.ok(turns[i].some((e) => e.type === 'agent.message' && resultText(e) === `done ${T}`), what);
      const where = ws.map((w) => `${w.dir}/runs-${T}.log`).filter((f) => fs.existsSync(f));
      assert.equal(where.length, 1, `${what}: one worker ran its tools`);
      assert.equal(fs.readFileSync(where[0], 'utf8'), 'a\nb\n', `${what}: each call ran once`);
      perWorker[ws.findIndex((w) => where[0].startsWith(w.dir))]++;
      assertConsistent(await listEvents(c, s.id), what);
      assertModelSawOneResultEach((await modelRequests(T)).at(-1), what);
    }
    assert.ok(perWorker.every((n) => n > 0), `both workers served sessions: ${perWorker}`);
    await Promise.all(ws.map((w) => w.kill()));
  });

  test('a worker killed -9 mid-tool: the item comes back, another worker completes the session', async () => {
    const T = token('shkill');
    const { env, key } = await selfHostedEnv();
    const session = await mkSession(c, await mkAgent(c), env);
    const LEASE_TTL_S = 10; // the shortest the API grants
    await script(T, [use('bash', { command: `echo start >> k-${T}.log; sleep 5; echo end >> k-${T}.log` }), say(`done ${T}`)]);
    const first = startWorker(env, key, { leaseTtlS: LEASE_TTL_S });
    const watching = turn(c, session.id, text(`slow ${T}`), { until: idleWith('end_turn'), timeoutMs: 60000 });
    await until('the tool started in the first worker', () => fs.existsSync(`${first.dir}/k-${T}.log`), { timeoutMs: 30000 });
    const { signal } = await first.kill('SIGKILL');
    assert.equal(signal, 'SIGKILL');
    const killedAt = Date.now();
    assert.ok(!fs.existsSync(`${first.dir}/k-${T}.log`) || !/end/.test(fs.readFileSync(`${first.dir}/k-${T}.log`, 'utf8')), 'killed mid-tool');
    const second = startWorker(env, key, { leaseTtlS: LEASE_TTL_S });
    const evs = await watching;
    const took = Date.now() - killedAt;
    // (the SDK's bash runs in a process group of its own: the killed worker's call may finish)
    assert.match(fs.readFileSync(`${first.dir}/k-${T}.log`, 'utf8'), /^start\n/);
    assert.equal(fs.readFileSync(`${second.dir}/k-${T}.log`, 'utf8'), 'start\nend\n', 'the second worker ran the call');
    assert.ok(took < (LEASE_TTL_S + 15) * 1000, `completed ${took} ms after the kill`);
    assert.ok(evs.some((e) => e.type === 'agent.message' && resultText(e) === `done ${T}`));
    const all = await listEvents(c, session.id);
    assertConsistent(all, 'after the kill');
    assert.equal(all.filter((e) => e.type === 'user.tool_result').length, 1);
    assertModelSawOneResultEach((await modelRequests(T)).at(-1), 'after the kill');
    const items = (await c.beta.environments.work.list(env.id)).data;
    assert.equal(items.length, 1, 'the same item, delivered again');
    await second.kill();
  });

  test('a result before the allow, after a deny, or twice: 400 with its error_code', async () => {
    const T = token('shrules');
    const { env } = await selfHostedEnv(); // no worker: this test is the client
    const agent = await mkAgent(c, { tools: [{ type: 'agent_toolset_20260401', default_config: { permission_policy: { type: 'always_ask' } } }] });
    const session = await mkSession(c, agent, env);
    await script(T, [
      { tool_use: [{ name: 'bash', input: { command: 'echo a' } }, { name: 'bash', input: { command: 'echo b' } }] },
      say(`after ${T}`),
    ]);
    const asked = await turn(c, session.id, text(`two ${T}`), { until: (e) => e.type === 'session.status_idle', timeoutMs: 30000 });
    const [a, b] = asked.filter((e) => e.type === 'agent.tool_use');
    assert.deepEqual(asked.at(-1).stop_reason, { type: 'requires_action', event_ids: [a.id, b.id] });
    const result = (u, t) => ({ type: 'user.tool_result', tool_use_id: u.id, content: [{ type: 'text', text: t }] });
    const refused = async (events, code) => {
      const e = await c.beta.sessions.events.send(session.id, { events }).then(() => null, (x) => x);
      assert.ok(e instanceof BadRequestError, `400 for ${code}, got ${e}`);
      assert.equal(e.errorCode, code);
    };
    await refused([result(a, 'early')], 'tool_use_not_approved');
    await c.beta.sessions.events.send(session.id, { events: [{ type: 'user.tool_confirmation', tool_use_id: b.id, result: 'deny', deny_message: `no ${T}` }] });
    await refused([result(b, 'anyway')], 'tool_use_denied');
    await c.beta.sessions.events.send(session.id, { events: [{ type: 'user.tool_confirmation', tool_use_id: a.id, result: 'allow' }] });
    assert.equal((await c.beta.sessions.retrieve(session.id)).status, 'idle', 'the allow does not resume the turn');
    const rest = await turn(c, session.id, result(a, `did a ${T}`), { until: idleWith('end_turn'), timeoutMs: 30000 });
    assert.ok(rest.some((e) => e.type === 'agent.message' && resultText(e) === `after ${T}`));
    await refused([result(a, 'again')], 'tool_use_already_answered');
    const seen = resultsSeen((await modelRequests(T)).at(-1));
    assert.equal(blockText(seen.get(a.id)[0]), `did a ${T}`);
    assert.match(blockText(seen.get(b.id)[0]), new RegExp(`no ${T}`));
    assertConsistent(await listEvents(c, session.id), 'result rules');
  });

  test('the item of a session waiting for its client is stopped: session.error, idle; the next message goes on', async () => {
    const T = token('shgone');
    const { env, key } = await selfHostedEnv();
    const session = await mkSession(c, await mkAgent(c), env);
    await script(T, [use('bash', { command: `echo ran-${T}` }), say(`resumed ${T}`)]);
    const asked = await turn(c, session.id, text(`run ${T}`), { until: (e) => e.type === 'session.status_idle', timeoutMs: 30000 });
    const u = asked.find((e) => e.type === 'agent.tool_use');
    assert.deepEqual(asked.at(-1).stop_reason, { type: 'requires_action', event_ids: [u.id] });
    const [item] = (await c.beta.environments.work.list(env.id)).data;
    const gone = await watch(c, session.id,
      () => c.beta.environments.work.stop(item.id, { environment_id: env.id, force: true }),
      { until: (e) => e.type === 'session.status_idle', timeoutMs: 10000 });
    const err = gone.find((e) => e.type === 'session.error');
    assert.ok(err, `a session.error: ${gone.map((e) => e.type)}`);
    assert.match(err.error.message, /work item stopped/);
    assert.deepEqual(gone.at(-1).stop_reason, { type: 'end_turn' });
    // the next message queues a new item; a worker takes it and answers the call
    const w = startWorker(env, key);
    const rest = await turn(c, session.id, text(`go on ${T}`), { until: idleWith('end_turn'), timeoutMs: 30000 });
    assert.ok(rest.some((e) => e.type === 'user.tool_result' && e.tool_use_id === u.id), rest.map((e) => e.type).join(' '));
    assert.ok(rest.some((e) => e.type === 'agent.message' && resultText(e) === `resumed ${T}`));
    assert.equal((await c.beta.environments.work.list(env.id)).data.length, 2);
    assertModelSawOneResultEach((await modelRequests(T)).at(-1), 'after the stop');
    await w.kill();
  });

  test('a sessions token opens its session\'s events only; stale and revoked tokens are refused', async () => {
    const { env, key } = await selfHostedEnv();
    const agent = await mkAgent(c);
    const mine = await mkSession(c, agent, env);
    const other = await mkSession(c, agent, env);
    const foreignEnv = await selfHostedEnv();
    const foreign = await mkSession(c, agent, foreignEnv.env);
    const wk = asToken(key).beta.environments.work;
    const decode = (s) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8')).sessions_token;
    const d1 = await wk.poll(env.id, { reclaim_older_than_ms: 200 });
    assert.equal(d1.data.id, mine.id);
    const t1 = asToken(decode(d1.secret));
    const T = token('shtoken');
    await script(T, [say(`hello ${T}`)]);
    // its session: list, send, stream
    assert.ok(Array.isArray((await t1.beta.sessions.events.list(mine.id)).data));
    const seen = await watch(t1, mine.id, () => t1.beta.sessions.events.send(mine.id, { events: [text(`by token ${T}`)] }),
      { until: idleWith('end_turn'), timeoutMs: 20000 });
    assert.equal(seen.result.data[0].type, 'user.message');
    assert.ok(seen.some((e) => e.type === 'agent.message'), 'the token streams its session');
    // another session of the same environment, one of another environment: 404
    for (const s of [other, foreign]) {
      await assert.rejects(t1.beta.sessions.events.list(s.id), NotFoundError);
      await assert.rejects(t1.beta.sessions.events.send(s.id, { events: [text('no')] }), NotFoundError);
      await assert.rejects(t1.beta.sessions.events.stream(s.id), NotFoundError);
    }
    await assert.rejects(t1.beta.agents.list(), NotFoundError);
    // delivered again (never acknowledged): the first token is stale
    await sleep(250);
    const d2 = await wk.poll(env.id, { reclaim_older_than_ms: 200 });
    assert.equal(d2.id, d1.id);
    const t2 = asToken(decode(d2.secret));
    await assert.rejects(t1.beta.sessions.events.list(mine.id), AuthenticationError);
    await assert.rejects(t1.beta.sessions.events.send(mine.id, { events: [text('stale')] }), AuthenticationError);
    await assert.rejects(t1.beta.sessions.events.stream(mine.id), AuthenticationError);
    assert.ok(Array.isArray((await t2.beta.sessions.events.list(mine.id)).data));
    // stopped: revoked
    await t2.beta.environments.work.stop(d2.id, { environment_id: env.id, force: true });
    await assert.rejects(t2.beta.sessions.events.list(mine.id), AuthenticationError);
    await assert.rejects(t2.beta.sessions.events.send(mine.id, { events: [text('late')] }), AuthenticationError);
  });

  test('the environment key revoked while a worker polls: the worker stops, saying why', async () => {
    const { env, key } = await selfHostedEnv();
    const w = startWorker(env, key);
    await until('the worker polls', () => /idle; polling for work/.test(w.out()), { timeoutMs: 15000 });
    cli(`${key}\n`, 'key', 'revoke');
    const t0 = Date.now();
    const timeout = sleep(15000).then(() => 'timeout');
    const end = await Promise.race([w.exited, timeout]);
    assert.notEqual(end, 'timeout', `the worker still runs 15 s after the revocation: ${w.out().slice(-500)}`);
    assert.equal(end.code, 2, w.out().slice(-500));
    assert.match(w.out(), /poll failed permanently/);
    assert.match(w.out(), /stopped: \w+Error (401|404)/);
    console.log(`# the worker stopped ${Date.now() - t0} ms after the revocation`);
  });
});
