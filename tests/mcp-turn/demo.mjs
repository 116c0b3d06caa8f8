// The README's walk-through of MCP servers and vaults ("MCP servers and vault credentials"),
// through the official SDK: a vault holding an MCP server's bearer, an agent with that server's
// mcp_toolset, a session with the vault; a user.message makes the (fake) model call the server's
// adding tool, the tool use is confirmed, the result and the model's answer follow. Prints one
// line per event of the turn. tests/mcp-turn/run.sh runs it against its own servers.
//
//   KEY=$(cat var/api-key) MCP_TOKEN=demo-secret node tests/mcp-turn/demo.mjs
//
// Environment: KEY (an API key), MCP_TOKEN (the bearer the MCP server wants), URL (the API,
// default http://127.0.0.1:8080), MCP_URL (tests/mcp/server.mjs, default
// http://127.0.0.1:8091), MODEL_URL (tests/fake-model/fake-model.mjs, default
// http://127.0.0.1:8090: the runner's [model] base_url).
import Anthropic from '../sdk/node_modules/@anthropic-ai/sdk/index.mjs';

const URL = process.env.URL ?? 'http://127.0.0.1:8080';
const MCP_URL = process.env.MCP_URL ?? 'http://127.0.0.1:8091';
const MODEL_URL = process.env.MODEL_URL ?? 'http://127.0.0.1:8090';
const { KEY, MCP_TOKEN } = process.env;
if (!KEY || !MCP_TOKEN) throw new Error('KEY and MCP_TOKEN must be set');
const client = new Anthropic({ baseURL: URL, apiKey: KEY });
const server = `${MCP_URL}/mcp-auth`; // the route that wants the bearer

// 1. a vault, and the server's bearer in it (sealed; never shown again)
const vault = await client.beta.vaults.create({ display_name: 'demo' });
await client.beta.vaults.credentials.create(vault.id, {
  auth: { type: 'static_bearer', token: MCP_TOKEN, mcp_server_url: server },
});
// 2. an agent with the server and its tools (always_ask unless configured otherwise)
const agent = await client.beta.agents.create({
  name: 'calculator',
  model: 'claude-sonnet-4-5',
  mcp_servers: [{ type: 'url', name: 'calc', url: server }],
  tools: [{ type: 'mcp_toolset', mcp_server_name: 'calc' }],
});
// 3. a session with the vault
const environment = await client.beta.environments.create({ name: 'demo' });
const session = await client.beta.sessions.create({
  agent: agent.id,
  environment_id: environment.id,
  vault_ids: [vault.id],
});
// 4. the fake model's script (a real model needs none): the server's add tool, then an answer
const word = `demo-${session.id}`;
const scripted = await fetch(`${MODEL_URL}/__fake/script`, {
  method: 'POST',
  body: JSON.stringify({
    match: word,
    steps: [{ tool_use: { name: 'mcp__calc__add', input: { a: 2, b: 3 } } }, { text: 'the sum is {{tool_result}}' }],
  }),
});
if (!scripted.ok) throw new Error(`the fake model's script: ${scripted.status} ${await scripted.text()}`);
// 5. a user.message; each tool use that asks is allowed; the turn is watched to its end
const stream = await client.beta.sessions.events.stream(session.id);
await client.beta.sessions.events.send(session.id, {
  events: [{ type: 'user.message', content: [{ type: 'text', text: `${word}: what is 2 + 3?` }] }],
});
const text = (content) => (content ?? []).map((b) => b.text ?? `[${b.type}]`).join('');
for await (const e of stream) {
  if (e.type === 'agent.mcp_tool_use')
    console.log(e.type, e.mcp_server_name, e.name, JSON.stringify(e.input), e.evaluated_permission);
  else if (e.type === 'agent.mcp_tool_result') console.log(e.type, text(e.content), e.is_error ? 'error' : 'ok');
  else if (e.type === 'agent.message') console.log(e.type, text(e.content));
  else if (e.type === 'session.error') console.log(e.type, e.error.type, e.error.message);
  else if (e.type === 'session.status_idle') console.log(e.type, e.stop_reason.type);
  if (e.type === 'session.status_idle' && e.stop_reason.type === 'requires_action') {
    await client.beta.sessions.events.send(session.id, {
      events: e.stop_reason.event_ids.map((id) => ({ type: 'user.tool_confirmation', tool_use_id: id, result: 'allow' })),
    });
  }
  if (e.type === 'session.status_idle' && e.stop_reason.type !== 'requires_action') break;
}
stream.controller.abort();
