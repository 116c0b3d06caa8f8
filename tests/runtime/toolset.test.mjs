// The agent toolset in a cloud session's sandbox, on the backend RUNTIME_BACKEND (local, bwrap,
// srt, docker): tests/runtime/run.sh runs this file once per backend, with that backend's
// runner only (a runner runs the turns of every session of the database in its own backend).
//
//   toolset     one turn: bash, write, read, edit, glob, grep (the fake model calls them); the
//               results as the SDK's tools give them; a second turn sees the first's files
//               (bash, read) and bash's working directory (cd in one call, pwd in the next)
//   background  a bash call that leaves a job holding its output (`sleep 300 &`) is answered
//               when its shell is done, with its output and its working directory kept; the
//               next call runs (and, but on docker, sees no process of the job)
//   interrupt   (local, bwrap: the tool is a host process) user.interrupt during `sleep 30`:
//               the sleep is gone within ~1 s, the call's result says it was aborted, the
//               session idle end_turn; the next turn runs and the model sees that result
//   packages    (bwrap, docker) an environment with npm is-number: the first turn provisions it
//               and bash uses it
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  alive, BACKEND, assertConsistent, assertModelSawOneResultEach, assertToolsetResults, blockText, cleanup,
  client, idleWith, listEvents, mkAgent, mkEnv, mkSession, modelRequests, processesWith, resultsById,
  resultsSeen, resultText, say, script, text, token, toolsetSteps, turn, until, use, watch,
} from './lib.mjs';

const c = client();
after(cleanup);

// The tool uses of EVENTS with their results, in order: [{name, input, result, is_error}].
function calls(events) {
  const results = resultsById(events);
  return events
    .filter((e) => e.type === 'agent.tool_use')
    .map((u) => {
      const r = (results.get(u.id) || [])[0];
      return { name: u.name, input: u.input, result: r ? resultText(r) : undefined, is_error: r?.is_error };
    });
}

// A call answered "provisioning failed": fail with the session's provisioning.last_error.
async function explainProvisioning(session, call) {
  if (call?.is_error && /provisioning/.test(call.result)) {
    const p = (await c.beta.sessions.retrieve(session.id)).provisioning;
    assert.fail(`${call.result}: ${JSON.stringify(p)}`);
  }
}

describe(BACKEND, { concurrency: true }, () => {
  test(`bash, write, read, edit, glob, grep in the sandbox; a second turn sees the files and the cwd`, async () => {
    const T = token('toolset');
    const agent = await mkAgent(c);
    const session = await mkSession(c, agent, await mkEnv(c));
    await script(T, [
      ...toolsetSteps(T),
      use('bash', { command: 'cd src/deep' }),
      say(`first turn done ${T}`),
    ]);
    const first = await turn(c, session.id, text(`do the work ${T}`), { until: idleWith('end_turn'), timeoutMs: 120000 });
    const got = calls(first);
    await explainProvisioning(session, got[0]);
    assert.deepEqual(got.map((x) => x.name), ['bash', 'write', 'read', 'edit', 'glob', 'grep', 'bash']);
    for (const x of got) assert.equal(x.is_error, false, `${x.name} ${JSON.stringify(x.input)}: ${x.result}`);
    assertToolsetResults(got.map((x) => x.result), T);
    assert.ok(first.some((e) => e.type === 'agent.message' && resultText(e) === `first turn done ${T}`));
    assertConsistent(first, 'first turn');

    await script(T, [
      use('bash', { command: 'pwd; cat w.txt' }),
      use('read', { file_path: 'src/notes.txt' }),
      use('bash', { command: 'ls ..' }),
      say(`second turn done ${T}`),
    ]);
    const second = await turn(c, session.id, text(`look again ${T}`), { until: idleWith('end_turn') });
    const again = calls(second);
    assert.deepEqual(again.map((x) => x.name), ['bash', 'read', 'bash']);
    for (const x of again) assert.equal(x.is_error, false, `${x.name}: ${x.result}`);
    const [pwd, ...cat] = again[0].result.split('\n');
    assert.match(pwd, /\/src\/deep$/, 'bash kept the working directory of the first turn');
    assert.equal(cat.join('\n').trim(), `hello ${T}\nedited ${T}`, 'the edit of the first turn is there');
    assert.match(again[1].result, new RegExp(`beta ${T}`), 'read is relative to the workdir, not bash\'s cwd');
    assert.match(again[2].result, /notes\.txt/);
    const all = await listEvents(c, session.id);
    assertConsistent(all, 'both turns');
    const last = (await modelRequests(T)).at(-1);
    assert.equal(assertModelSawOneResultEach(last, 'toolset').length, 10);
  });

  // far below the call's timeout_ms: the job's 300 s, or the time limit, would be over it
  const BACKGROUND_PROMPT_MS = 15000;
  test(`bash leaving a background job is answered when its shell is done; the next call runs`, async () => {
    const T = token('background');
    const secs = `300.${Math.floor(Math.random() * 1e6)}`; // unique among the processes
    const agent = await mkAgent(c);
    const session = await mkSession(c, agent, await mkEnv(c));
    await script(T, [
      use('bash', { command: `mkdir -p bg && cd bg; sleep ${secs} & echo started ${T}`, timeout_ms: 60000 }),
      use('bash', { command: `pwd; echo after ${T}` }),
      // the job's processes the next call sees (the pattern does not match its own text)
      use('bash', { command: `grep -l '${secs.replace('.', '[.]')}' /proc/[0-9]*/cmdline 2>/dev/null | wc -l` }),
      say(`done ${T}`),
    ]);
    const evs = await turn(c, session.id, text(`background ${T}`), { until: idleWith('end_turn'), timeoutMs: 180000 });
    const got = calls(evs);
    await explainProvisioning(session, got[0]);
    assert.deepEqual(got.slice(0, 2).map((x) => [x.name, x.is_error, x.result]), [
      ['bash', false, `started ${T}`],
      ['bash', false, got[1].result.replace(/\n.*$/s, '') + `\nafter ${T}`],
    ]);
    // docs/runner.md: on local, bwrap and srt the job ends with its call
    console.log(`# ${BACKEND}: the job's processes seen by the next call: ${got[2].result}`);
    if (BACKEND !== 'docker') assert.equal(got[2].result.trim(), '0', 'the job ended with its call');
    assert.match(got[1].result, /\/bg\nafter /, 'the first call\'s working directory was kept');
    const uses = evs.filter((e) => e.type === 'agent.tool_use');
    const results = resultsById(evs);
    const took = Date.parse(results.get(uses[0].id)[0].processed_at) - Date.parse(uses[0].processed_at);
    console.log(`# ${BACKEND}: the call leaving a background job took ${took} ms`);
    assert.ok(took < BACKGROUND_PROMPT_MS, `the call took ${took} ms`);
  });

  const HOST_PROCESSES = ['local', 'bwrap'];
// docs/runner.md: the turn asks about an interrupt every 100-200 ms and kills the tool's process
// group; the rest is the database and a loaded machine
const INTERRUPT_MAX_MS = 1500;
  test(`an interrupt during sleep 30 kills it within a second; idle end_turn`, { skip: !HOST_PROCESSES.includes(BACKEND) && `${BACKEND}: the tool is not a host process` }, async () => {
    const T = token('interrupt');
    const arg = `30.${Math.floor(Math.random() * 1e6)}`; // unique among the host's processes
    const agent = await mkAgent(c);
    const session = await mkSession(c, agent, await mkEnv(c));
    await script(T, [use('bash', { command: `echo started; sleep ${arg}; echo slept` })]);
    const started = await turn(c, session.id, text(`sleep ${T}`), { until: (e) => e.type === 'agent.tool_use' });
    const u = started.find((e) => e.type === 'agent.tool_use');
    const procs = await until('the sleep runs', () => processesWith(arg).then((p) => p.length && p), { timeoutMs: 15000 });
    const pids = procs.map((l) => Number(l.split(/\s+/)[0]));
    // from the moment the API took the interrupt to the moment the sleep's process is gone
    let sent = 0;
    let gone;
    const evs = await watch(c, session.id, async () => {
      await c.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] });
      sent = Date.now();
      gone = until('the sleep is gone', () => pids.every((p) => !alive(p)), { timeoutMs: 5000, everyMs: 10 })
        .then(() => Date.now() - sent);
    }, { until: idleWith('end_turn'), timeoutMs: 10000 });
    gone = await gone;
    console.log(`# ${BACKEND}: the sleep was gone ${gone} ms after the interrupt`);
    assert.ok(gone <= INTERRUPT_MAX_MS, `the sleep was gone ${gone} ms after the interrupt (want ~1 s)`);
    assert.deepEqual(await processesWith(arg), []);
    assert.ok(!evs.some((e) => e.type === 'agent.message'), 'the model was not asked again');
    // the SDK's bash tool answers an aborted call so, not as an outcome nobody recorded
    const aborted = evs.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id);
    assert.ok(aborted, `a result for the interrupted call: ${evs.map((e) => e.type)}`);
    assert.equal(aborted.is_error, true);
    assert.equal(resultText(aborted), 'bash: This operation was aborted');
    // the next turn runs, and the model sees a result for the interrupted call
    await script(T, [say(`after ${T}`)]);
    const next = await turn(c, session.id, text(`again ${T}`), { until: idleWith('end_turn') });
    assert.ok(next.some((e) => e.type === 'agent.message' && resultText(e) === `after ${T}`), `next turn: ${next.map((e) => e.type)}`);
    const last = (await modelRequests(T)).at(-1);
    assertModelSawOneResultEach(last, 'after the interrupt');
    assert.equal(blockText(resultsSeen(last).get(u.id)[0]), 'bash: This operation was aborted');
  });

  const PACKAGES = ['bwrap', 'docker'];
  test(`the first turn provisions the environment's npm package, bash uses it`, { skip: !PACKAGES.includes(BACKEND) && `${BACKEND}: packages are tested on bwrap and docker` }, async () => {
    const T = token('packages');
    const agent = await mkAgent(c);
    const env = await mkEnv(c, { type: 'cloud', networking: { type: 'unrestricted' }, packages: { npm: ['is-number@7.0.0'] } });
    const session = await mkSession(c, agent, env);
    assert.notEqual((await c.beta.sessions.retrieve(session.id)).provisioning?.status, 'ready');
    await script(T, [use('bash', { command: `node -e "console.log('is-number', require('is-number')(7), '${T}')"` }), say(`done ${T}`)]);
    const evs = await turn(c, session.id, text(`use it ${T}`), { until: idleWith('end_turn'), timeoutMs: 180000 });
    const [r] = calls(evs);
    await explainProvisioning(session, r);
    assert.equal(r.is_error, false, r.result);
    assert.equal(r.result.trim(), `is-number true ${T}`);
    assert.equal((await c.beta.sessions.retrieve(session.id)).provisioning?.status, 'ready');
  });
});
