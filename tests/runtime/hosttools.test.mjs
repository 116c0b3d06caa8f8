// The local backend without [runner] host_tools (docs/runner.md "The sandbox"): its commands
// would be host processes of the runner's account, so the runner answers every built-in tool
// use with an error result naming the setting and runs nothing. tests/runtime/run.sh runs it
// with one runner of the local API's configuration with host_tools = 0.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  cleanup, client, idleWith, mkAgent, mkEnv, mkSession, RUN, resultText, say, script, text, token,
  turn, use,
} from './lib.mjs';

const c = client();
after(cleanup);

test('local without host_tools: the tool use gets an error result naming it, nothing runs', async () => {
  const T = token('hosttools');
  const marker = path.join(RUN, `host-tools-${T}`);
  const session = await mkSession(c, await mkAgent(c), await mkEnv(c));
  await script(T, [use('bash', { command: `touch ${marker}` }), say(`done ${T}`)]);
  const evs = await turn(c, session.id, text(`try ${T}`), { until: idleWith('end_turn') });
  const u = evs.find((e) => e.type === 'agent.tool_use');
  const r = evs.find((e) => e.type === 'agent.tool_result' && e.tool_use_id === u?.id);
  assert.ok(r, `a result for the tool use: ${evs.map((e) => e.type)}`);
  assert.equal(r.is_error, true);
  assert.match(resultText(r), /\[runner\] host_tools/);
  assert.equal(fs.existsSync(marker), false, 'the command did not run on the host');
});
