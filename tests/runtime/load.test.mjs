// Many sessions at once (backend local): tests/runtime/run.sh runs this file while two runners
// of the local backend claim turns from the same database.
//
//   50 sessions, each a turn of two bash calls and a reply, all sent at once: every turn ends
//   idle end_turn with its reply; each call ran exactly once (its line in the sandbox's log
//   file, read on this host); per session the model's requests never overlap in time (two
//   runners running one turn would ask the model at once) and the model saw one result per
//   tool use.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import {
  assertConsistent, assertModelSawOneResultEach, cleanup, client, idleWith, listEvents, mkAgent,
  mkEnv, mkSession, modelRequests, resultText, say, script, text, token, turn, use,
} from './lib.mjs';

const SESSIONS = Number(process.env.RUNTIME_LOAD_SESSIONS || 50);
const c = client();
after(cleanup);

test(`${SESSIONS} sessions at once, two runners: every turn completes, nothing runs twice`, async () => {
  const agent = await mkAgent(c);
  const env = await mkEnv(c);
  const sessions = await Promise.all(Array.from({ length: SESSIONS }, async (_, i) => {
    const T = token(`load${i}`);
    const s = await mkSession(c, agent, env);
    // each model answer takes a while (a pause after every event): a turn run twice at once
    // would show as overlapping requests
    await script(T, [
      use('bash', { command: `echo a-${T} >> runs.log; wc -l < runs.log` }, { event_delay_ms: 5 }),
      use('bash', { command: `echo b-${T} >> runs.log; pwd` }, { event_delay_ms: 5 }),
      say(`done ${T}`, { event_delay_ms: 5 }),
    ]);
    return { T, s };
  }));
  const t0 = Date.now();
  const turns = await Promise.all(sessions.map(({ T, s }) =>
    turn(c, s.id, text(`count ${T}`), { until: idleWith('end_turn'), timeoutMs: 120000 })));
  const took = Date.now() - t0;
  const all = await modelRequests(null);
  for (const [i, { T, s }] of sessions.entries()) {
    const evs = turns[i];
    const what = `session ${i} (${s.id})`;
    assert.equal(resultText(evs.find((e) => e.type === 'agent.message') || {}), `done ${T}`, `${what}: ${evs.map((e) => e.type)}`);
    assertConsistent(await listEvents(c, s.id), what);
    const results = evs.filter((e) => e.type === 'agent.tool_result');
    assert.equal(results.length, 2, what);
    const workdir = resultText(results[1]).trim();
    assert.equal(fs.readFileSync(`${workdir}/runs.log`, 'utf8'), `a-${T}\nb-${T}\n`, `${what}: each call ran once`);
    const reqs = all.filter((r) => JSON.stringify(r.body).includes(T)).sort((a, b) => a.started_ms - b.started_ms);
    assert.equal(reqs.length, 3, `${what}: three model requests`);
    for (let k = 1; k < reqs.length; k++) {
      assert.ok(reqs[k].started_ms >= reqs[k - 1].ended_ms, `${what}: request ${reqs[k].seq} started before ${reqs[k - 1].seq} ended`);
    }
    assertModelSawOneResultEach(reqs.at(-1), what);
  }
  console.log(`# ${SESSIONS} turns of 2 tool calls and 3 model requests each: ${took} ms`);
});
