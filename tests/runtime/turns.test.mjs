// A turn's loop on a cloud session (backend local), through the official SDK, against the
// fake model: tests/runtime/run.sh runs it with the local runners ([model] backoff_ms 100,
// backoff_cap_ms 400, idle_timeout_seconds 2, max_retries 6: the harness's operator.ini).
//
//   always_ask  a tool whose permission_policy is always_ask: agent.tool_use with
//               evaluated_permission "ask", idle requires_action naming it; allow runs it (the
//               file is there), deny does not (the file is not) and the model gets an error
//               result holding the deny_message
//   custom      a custom tool: agent.custom_tool_use, idle requires_action naming it,
//               user.custom_tool_result resumes the turn, the model sees the result
//   529         five overloaded answers then a reply: rescheduled + session.error retrying five
//               times, then the reply, idle end_turn
//   exhausted   overloaded every time: session.error exhausted, idle retries_exhausted
//   idle        a stream silent past idle_timeout_seconds is abandoned and retried
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertConsistent, assertModelSawOneResultEach, blockText, cleanup, client, idleWith, listEvents,
  mkAgent, mkEnv, mkSession, modelRequests, resultsSeen, resultText, say, script, text, token,
  turn, use,
} from './lib.mjs';

const c = client();
after(cleanup);
const MAX_RETRIES = 6; // [model] max_retries: the default, which the harness keeps

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
    const agent = await mkAgent(c, {
      tools: [{ type: 'custom', name: 'lookup', description: 'looks things up', input_schema: { type: 'object', properties: { q: { type: 'string' } } } }],
    });
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
    assert.equal(rest.filter((e) => e.type === 'session.status_running').length, 1, 'resumed once');
    const msg = rest.find((e) => e.type === 'agent.message');
    assert.equal(resultText(msg), `the answer was found ${T}`);
    const last = (await modelRequests(T)).at(-1);
    assertModelSawOneResultEach(last, 'custom');
    assert.equal(blockText(resultsSeen(last).get(u.id)[0]), `found ${T}`);
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
    await script(T, [say(`too late ${T}`, { hang_ms: 8000 }), say(`fresh ${T}`)]);
    const t0 = Date.now();
    const evs = await turn(c, session.id, text(`hello ${T}`), { until: idleWith('end_turn'), timeoutMs: 20000 });
    const took = Date.now() - t0;
    const errors = evs.filter((e) => e.type === 'session.error');
    assert.equal(errors.length, 1, evs.map((e) => e.type).join(' '));
    assert.equal(errors[0].error.retry_status.type, 'retrying');
    const msgs = evs.filter((e) => e.type === 'agent.message').map(resultText);
    assert.deepEqual(msgs, [`fresh ${T}`]);
    const reqs = await modelRequests(T);
    assert.equal(reqs.length, 2);
    assert.equal(reqs[0].complete, false, 'the silent answer was abandoned');
    assert.ok(took < 7000, `retried after the 2 s idle timeout, not the 8 s silence (${took} ms)`);
  });
});
