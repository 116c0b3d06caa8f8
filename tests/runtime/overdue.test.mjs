// A self_hosted session whose client never answers (docs/runner.md, Self-hosted sessions):
// tests/runtime/run.sh runs this file alone with one runner whose [runner]
// tool_result_timeout_seconds is RUNTIME_RESULT_TIMEOUT_S (2). The session waits with
// requires_action; once the timeout has passed the runner takes it up again, answers the model
// with an error result saying no result came, and the turn ends idle end_turn.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  assertConsistent, blockText, cleanup, client, idleWith, listEvents, mkAgent, mkEnv, mkSession,
  modelRequests, resultsSeen, resultText, say, script, text, token, turn, use, watch,
} from './lib.mjs';

const TIMEOUT_S = Number(process.env.RUNTIME_RESULT_TIMEOUT_S || 0);
const c = client();
after(cleanup);

test('a result that never comes: after tool_result_timeout the model gets an error result', { skip: !TIMEOUT_S && 'RUNTIME_RESULT_TIMEOUT_S not set' }, async () => {
  const T = token('overdue');
  const session = await mkSession(c, await mkAgent(c), await mkEnv(c, { type: 'self_hosted' }));
  await script(T, [use('bash', { command: 'echo never' }), say(`gave up ${T}`)]);
  const asked = await turn(c, session.id, text(`wait ${T}`), { until: (e) => e.type === 'session.status_idle' });
  const u = asked.find((e) => e.type === 'agent.tool_use');
  assert.deepEqual(asked.at(-1).stop_reason, { type: 'requires_action', event_ids: [u.id] });
  const t0 = Date.now();
  const rest = await watch(c, session.id, null, { until: idleWith('end_turn'), timeoutMs: (TIMEOUT_S + 15) * 1000 });
  const took = Date.now() - t0;
  assert.ok(took >= (TIMEOUT_S - 1) * 1000, `taken up after ${took} ms, before the timeout`);
  const r = rest.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === u.id);
  assert.ok(r, rest.map((e) => e.type).join(' '));
  assert.equal(r.is_error, true);
  assert.match(resultText(r), new RegExp(`no result arrived from the client within ${TIMEOUT_S} s`));
  assert.ok(rest.some((e) => e.type === 'agent.message' && resultText(e) === `gave up ${T}`));
  const seen = resultsSeen((await modelRequests(T)).at(-1)).get(u.id);
  assert.equal(seen.length, 1);
  assert.match(blockText(seen[0]), /no result arrived/);
  assertConsistent(await listEvents(c, session.id), 'overdue');
});
