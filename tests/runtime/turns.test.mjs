// A turn's loop on a cloud session (backend local), through the official SDK, against the
// fake model: tests/runtime/run.sh runs it with the local runners ([model] backoff_ms 100,
// backoff_cap_ms 400, idle_timeout_seconds 10, max_retries 6: the harness's operator.ini).
//
//   always_ask  a tool whose permission_policy is always_ask: agent.tool_use with
//               evaluated_permission "ask", idle requires_action naming it; allow runs it (the
//               file is there), deny does not (the file is not) and the model gets an error
//               result holding the deny_message
//   custom      a custom tool: agent.custom_tool_use, idle requires_action naming it,
//               user.custom_tool_result resumes the turn, the model sees the result
//   interrupts  during a model stream (kept alive by pings): idle end_turn within 2 s, the
//               request abandoned; with a message (one send, or two): idle end_turn, then
//               the message's turn runs, nothing left queued; while waiting for a custom tool:
//               the wait ends at once
//   queued      a user.message sent while a turn runs is taken by that turn (one idle)
//   parallel    two bash calls in one answer: both run, one user turn holds both results; a
//               built-in and a custom call: the built-in runs, the session waits for the other
//   529         five overloaded answers then a reply: rescheduled + session.error retrying five
//               times, then the reply, idle end_turn
//   exhausted   overloaded every time: session.error exhausted, idle retries_exhausted
//   idle        a stream silent past idle_timeout_seconds is abandoned and retried
//   refusal     a reply that stops with refusal: idle refusal with its stop_details (the
//               SDK's BetaManagedAgentsSessionRefusal), the text kept; the next turn runs
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertConsistent, assertModelSawOneResultEach, blockText, cleanup, client, idleWith, listEvents,
  mkAgent, mkEnv, mkSession, modelRequests, resultsSeen, resultText, say, script, text,
  token, turn, until, use, watch,
} from './lib.mjs';

const c = client();
after(cleanup);
const MAX_RETRIES = 6; // [model] max_retries: the default, which the harness keeps
const IDLE_TIMEOUT_S = 10; // [model] idle_timeout_seconds in the harness's operator.ini
// The turn resumed N times: session.status_running events but those that end a model retry's
// wait (after session.status_rescheduled: a loaded machine may make a retry happen anywhere).
const resumes = (evs) => evs.filter((e) => e.type.startsWith('session.status_'))
  .filter((e, i, st) => e.type === 'session.status_running' && st[i - 1]?.type !== 'session.status_rescheduled').length;
const LOOKUP = { type: 'custom', name: 'lookup', description: 'looks things up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } };
const isIdle = (e) => e.type === 'session.status_idle';

// The answer of a later bash call in the same session: does FILE exist in the sandbox?
async function fileState(session, T, file) {
  await script(T, [use('bash', { command: `test -e ${file} && echo present || echo absent` }), say(`checked ${T}`)]);
  const evs = await turn(c, session.id, text(`check ${T}`), { until: idleWith('end_turn') });
  return resultText(evs.find((e) => e.type === 'agent.tool_result')).trim();
}

describe('turns', { concurrency: true }, () => {
  for (const verdict of ['allow', 'deny']) {
    test(`always_ask: ${verdict}`, async () => {
      const T = token(`ask${verdict}`);
      const agent = await mkAgent(c, {
        tools: [{ type: 'agent_toolset_20260401', configs: [{ name: 'write', permission_policy: { type: 'always_ask' } }] }],
      });
      const session = await mkSession(c, agent, await mkEnv(c));
      const file = `asked-${T}.txt`;
      await script(T, [use('write', { file_path: file, content: 'written' }), say(`after the write ${T}`)]);
      const asked = await turn(c, session.id, text(`write ${T}`), { until: (e) => e.type === 'session.status_idle' });
      const use_ = asked.find((e) => e.type === 'agent.tool_use');
      assert.equal(use_.evaluated_permission, 'ask');
      const idle = asked.at(-1);
      assert.deepEqual(idle.stop_reason, { type: 'requires_action', event_ids: [use_.id] });
      assert.equal((await c.beta.sessions.retrieve(session.id)).status, 'idle');

      const confirm = { type: 'user.tool_confirmation', tool_use_id: use_.id, result: verdict };
      if (verdict === 'deny') confirm.deny_message = `not now ${T}`;
      const rest = await turn(c, session.id, confirm, { until: idleWith('end_turn') });
      const result = rest.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === use_.id);
      assert.ok(result, `a result for the tool use: ${rest.map((e) => e.type)}`);
      const seen = resultsSeen((await modelRequests(T)).at(-1)).get(use_.id);
      assert.equal(seen.length, 1);
      if (verdict === 'allow') {
        assert.equal(result.is_error, false, resultText(result));
        assert.equal(await fileState(session, T, file), 'present');
      } else {
        assert.equal(result.is_error, true);
        assert.equal(resultText(result), `not now ${T}`);
        assert.equal(seen[0].is_error, true);
        assert.match(blockText(seen[0]), new RegExp(`not now ${T}`), 'the deny_message reached the model');
        assert.equal(await fileState(session, T, file), 'absent');
      }
      assertConsistent(await listEvents(c, session.id), verdict);
    });
  }

  test('a custom tool: requires_action, user.custom_tool_result resumes, the model sees the result', async () => {
    const T = token('custom');
    const agent = await mkAgent(c, { tools: [LOOKUP] });
    const session = await mkSession(c, agent, await mkEnv(c));
    await script(T, [use('lookup', { q: T }), say('the answer was {{tool_result}}')]);
    const asked = await turn(c, session.id, text(`look up ${T}`), { until: (e) => e.type === 'session.status_idle' });
    const u = asked.find((e) => e.type === 'agent.custom_tool_use');
    assert.ok(u, asked.map((e) => e.type).join(' '));
    assert.deepEqual(u.input, { q: T });
    assert.ok(!asked.some((e) => e.type === 'agent.tool_use'));
    assert.deepEqual(asked.at(-1).stop_reason, { type: 'requires_action', event_ids: [u.id] });
    const rest = await turn(c, session.id, {
      type: 'user.custom_tool_result', custom_tool_use_id: u.id, content: [{ type: 'text', text: `found ${T}` }],
    }, { until: idleWith('end_turn') });
    assert.equal(resumes(rest), 1, 'resumed once');
    const msg = rest.find((e) => e.type === 'agent.message');
    assert.equal(resultText(msg), `the answer was found ${T}`);
    const last = (await modelRequests(T)).at(-1);
    assertModelSawOneResultEach(last, 'custom');
    assert.equal(blockText(resultsSeen(last).get(u.id)[0]), `found ${T}`);
  });

  test('a refusal: idle refusal with stop_details, the next message runs a turn', async () => {
    const T = token('refusal');
    const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
    await script(T, [say(`I cannot ${T}`, { stop_reason: 'refusal' }), say(`fine ${T}`)]);
    const evs = await turn(c, session.id, text(`ask ${T}`), { until: isIdle });
    const idle = evs.at(-1);
    assert.deepEqual(idle.stop_reason, { type: 'refusal' });
    assert.deepEqual(idle.stop_details, { type: 'refusal', category: null, explanation: null });
    assert.equal(resultText(evs.find((e) => e.type === 'agent.message')), `I cannot ${T}`);
    const next = await turn(c, session.id, text(`again ${T}`), { until: isIdle });
    assert.deepEqual(next.at(-1).stop_reason, { type: 'end_turn' });
    assert.equal(next.at(-1).stop_details, null);
    assert.equal(resultText(next.find((e) => e.type === 'agent.message')), `fine ${T}`);
  });

  test('an interrupt during a model stream ends it at once: idle end_turn, no reply', async () => {
    const T = token('intmodel');
    const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
    // alive but slow: pings every 300 ms, so the idle timeout does not end it
    await script(T, [say(`never ${T}`, { stall_ms: 60000, ping_every_ms: 300 })]);
    await turn(c, session.id, text(`think ${T}`), { until: (e) => e.type === 'span.model_request_start' });
    let sent = 0;
    const evs = await watch(c, session.id, async () => {
      await c.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] });
      sent = Date.now();
    }, { until: (e) => e.type === 'session.status_idle', timeoutMs: 10000 });
    const took = Date.now() - sent;
    assert.deepEqual(evs.at(-1).stop_reason, { type: 'end_turn' });
    assert.ok(!evs.some((e) => e.type === 'agent.message'));
    // (the runner asks every 100-200 ms; the rest is a loaded machine's database and stream)
    assert.ok(took < 5000, `idle ${took} ms after the interrupt, the answer would take 60 s`);
    const [req] = await modelRequests(T);
    await until('the model request is abandoned', async () => (await modelRequests(T))[0].ended_ms !== null, { timeoutMs: 2000 });
    assert.equal(req.complete, false);
  });

  // docs/api.md §7: the interrupt processes what was queued before it; a message sent with it
  // or after it starts the next turn once the interrupted one is idle (it must not stay queued)
  for (const how of ['one send', 'two sends']) {
    test(`an interrupt, then a message (${how}): idle end_turn, then the message's turn runs`, async () => {
      const T = token(`intmsg${how.length}`);
      const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
      await script(T, [say(`never ${T}`, { stall_ms: 60000, ping_every_ms: 300 }), say(`after ${T}`)]);
      await turn(c, session.id, text(`think ${T}`), { until: (e) => e.type === 'span.model_request_start' });
      const interrupt = { type: 'user.interrupt' }, instead = text(`instead ${T}`);
      let answered = false;
      const evs = await watch(c, session.id, async () => {
        if (how === 'one send') {
          await c.beta.sessions.events.send(session.id, { events: [interrupt, instead] });
        } else {
          await c.beta.sessions.events.send(session.id, { events: [interrupt] });
          await c.beta.sessions.events.send(session.id, { events: [instead] });
        }
      }, {
        until: (e) => (answered ||= e.type === 'agent.message' && resultText(e) === `after ${T}`) && isIdle(e),
        timeoutMs: 20000,
      });
      assert.ok(!evs.some((e) => e.type === 'agent.message' && resultText(e) === `never ${T}`));
      assert.deepEqual(evs.at(-1).stop_reason, { type: 'end_turn' });
      const all = await listEvents(c, session.id);
      const queued = all.filter((e) => e.processed_at === null).map((e) => e.type);
      assert.deepEqual(queued, [], 'nothing is left queued');
      const reqs = await modelRequests(T);
      assert.equal(reqs.length, 2, 'the interrupted request, then the message\'s');
      assert.ok(JSON.stringify(reqs[1].body).includes(`instead ${T}`), 'the model got the message');
      assertConsistent(all, `interrupt, then a message (${how})`);
    });
  }

  test('an interrupt while waiting for a custom tool ends the wait at once; the session goes on', async () => {
    const T = token('intwait');
    const agent = await mkAgent(c, { tools: [LOOKUP] });
    const session = await mkSession(c, agent, await mkEnv(c));
    await script(T, [use('lookup', { q: T })]);
    const asked = await turn(c, session.id, text(`look ${T}`), { until: isIdle });
    const u = asked.find((e) => e.type === 'agent.custom_tool_use');
    assert.equal(asked.at(-1).stop_reason.type, 'requires_action');
    const evs = await turn(c, session.id, { type: 'user.interrupt' }, { until: isIdle, timeoutMs: 10000 });
    assert.deepEqual(evs.at(-1).stop_reason, { type: 'end_turn' });
    // the next message: the call still wants its answer (the runner waits for it again), or
    // the model goes on; either way the model ends up with one result for it
    await script(T, [say(`next ${T}`)]);
    let next = await turn(c, session.id, text(`again ${T}`), { until: isIdle });
    if (next.at(-1).stop_reason?.type === 'requires_action') {
      assert.deepEqual(next.at(-1).stop_reason.event_ids, [u.id]);
      next = await turn(c, session.id, { type: 'user.custom_tool_result', custom_tool_use_id: u.id, content: [{ type: 'text', text: 'late' }] }, { until: isIdle });
    }
    assert.deepEqual(next.at(-1).stop_reason, { type: 'end_turn' });
    assert.ok(next.some((e) => e.type === 'agent.message' && resultText(e) === `next ${T}`), next.map((e) => e.type).join(' '));
    assertModelSawOneResultEach((await modelRequests(T)).at(-1), 'after the interrupted wait');
  });

  test('a message sent while a turn runs is taken by that turn: one idle at the end', async () => {
    const T = token('queued');
    const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
    await script(T, [use('bash', { command: 'sleep 3; echo slept' }), say(`first ${T}`), say(`second ${T}`)]);
    const evs = await watch(c, session.id, async () => {
      await c.beta.sessions.events.send(session.id, { events: [text(`one ${T}`)] });
      await until('the bash call runs', async () => (await listEvents(c, session.id)).some((e) => e.type === 'agent.tool_use'), { everyMs: 100 });
      const q = await c.beta.sessions.events.send(session.id, { events: [text(`two ${T}`)] });
      assert.equal(q.data[0].processed_at, null, 'queued while the turn runs');
    }, { until: (e) => isIdle(e) && e.stop_reason?.type === 'end_turn' });
    assert.equal(evs.filter((e) => e.type === 'session.status_idle').length, 1, evs.map((e) => e.type).join(' '));
    assert.deepEqual(evs.filter((e) => e.type === 'agent.message').map(resultText), [`first ${T}`, `second ${T}`]);
    const last = (await modelRequests(T)).at(-1);
    assert.match(JSON.stringify(last.body.messages.at(-1)), new RegExp(`two ${T}`), 'the model got the queued message');
  });

  test('two tool calls in one answer: both run, one user turn with both results', async () => {
    const T = token('parallel');
    const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
    await script(T, [
      { tool_use: [{ name: 'bash', input: { command: `echo one-${T}` } }, { name: 'bash', input: { command: `echo two-${T}` } }] },
      say(`both ${T}`),
    ]);
    const evs = await turn(c, session.id, text(`two ${T}`), { until: idleWith('end_turn') });
    assert.deepEqual(evs.filter((e) => e.type === 'agent.tool_result').map((e) => resultText(e).trim()), [`one-${T}`, `two-${T}`]);
    const last = (await modelRequests(T)).at(-1);
    assert.equal(assertModelSawOneResultEach(last, 'parallel').length, 2);
  });

  test('a built-in and a custom call in one answer: the built-in runs, the wait is for the custom one', async () => {
    const T = token('mixed');
    const agent = await mkAgent(c, { tools: [{ type: 'agent_toolset_20260401' }, LOOKUP] });
    const session = await mkSession(c, agent, await mkEnv(c));
    await script(T, [
      { tool_use: [{ name: 'bash', input: { command: `echo built-in-${T}` } }, { name: 'lookup', input: { q: T } }] },
      say(`mixed ${T}`),
    ]);
    const asked = await turn(c, session.id, text(`mix ${T}`), { until: (e) => e.type === 'session.status_idle' });
    const custom = asked.find((e) => e.type === 'agent.custom_tool_use');
    assert.deepEqual(asked.at(-1).stop_reason, { type: 'requires_action', event_ids: [custom.id] });
    assert.equal(resultText(asked.find((e) => e.type === 'agent.tool_result')).trim(), `built-in-${T}`);
    const rest = await turn(c, session.id, {
      type: 'user.custom_tool_result', custom_tool_use_id: custom.id, content: [{ type: 'text', text: 'custom answer' }],
    }, { until: idleWith('end_turn') });
    assert.ok(rest.some((e) => e.type === 'agent.message' && resultText(e) === `mixed ${T}`));
    const last = (await modelRequests(T)).at(-1);
    assert.equal(assertModelSawOneResultEach(last, 'mixed').length, 2);
    assertConsistent(await listEvents(c, session.id), 'mixed');
  });

  test('529 five times, then a reply: rescheduled and retrying each time, then end_turn', async () => {
    const T = token('overloaded');
    const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
    await script(T, [{ status: 529, repeat: 5 }, say(`finally ${T}`)]);
    const evs = await turn(c, session.id, text(`hello ${T}`), { until: idleWith('end_turn') });
    const errors = evs.filter((e) => e.type === 'session.error');
    assert.equal(errors.length, 5, evs.map((e) => e.type).join(' '));
    for (const e of errors) {
      assert.equal(e.error.type, 'model_overloaded_error');
      assert.equal(e.error.retry_status.type, 'retrying');
    }
    assert.equal(evs.filter((e) => e.type === 'session.status_rescheduled').length, 5);
    assert.equal(resultText(evs.find((e) => e.type === 'agent.message')), `finally ${T}`);
    assert.equal((await modelRequests(T)).length, 6);
  });

  test('529 every time: session.error exhausted, idle retries_exhausted', async () => {
    const T = token('exhausted');
    const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
    await script(T, [{ status: 529, repeat: MAX_RETRIES + 1 }]);
    const evs = await turn(c, session.id, text(`hello ${T}`), { until: idleWith('retries_exhausted') });
    const errors = evs.filter((e) => e.type === 'session.error');
    assert.deepEqual(errors.map((e) => e.error.retry_status.type), [...Array(MAX_RETRIES).fill('retrying'), 'exhausted']);
    assert.ok(!evs.some((e) => e.type === 'agent.message'));
    assert.equal((await modelRequests(T)).length, MAX_RETRIES + 1);
    assert.equal((await c.beta.sessions.retrieve(session.id)).status, 'idle');
  });

  test('a stream silent past idle_timeout_seconds is abandoned and retried', async () => {
    const T = token('silent');
    const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
    await script(T, [say(`too late ${T}`, { hang_ms: 60000 }), say(`fresh ${T}`)]);
    const t0 = Date.now();
    const evs = await turn(c, session.id, text(`hello ${T}`), { until: idleWith('end_turn'), timeoutMs: 45000 });
    const took = Date.now() - t0;
    const errors = evs.filter((e) => e.type === 'session.error');
    assert.equal(errors.length, 1, evs.map((e) => e.type).join(' '));
    assert.equal(errors[0].error.retry_status.type, 'retrying');
    const msgs = evs.filter((e) => e.type === 'agent.message').map(resultText);
    assert.deepEqual(msgs, [`fresh ${T}`]);
    const reqs = await modelRequests(T);
    assert.equal(reqs.length, 2);
    assert.equal(reqs[0].complete, false, 'the silent answer was abandoned');
    assert.ok(took >= IDLE_TIMEOUT_S * 1000 && took < 40000, `retried after the ${IDLE_TIMEOUT_S} s idle timeout, not the 60 s silence (${took} ms)`);
  });
});
