// An MCP server built on the official TypeScript SDK (@modelcontextprotocol/sdk, its low-level
// Server and StreamableHTTPServerTransport), for the runner's MCP client tests
// (tests/mcp/run.sh, tests/mcp/test_mcp_client.c). See tests/mcp/README.md.
//
//   node tests/mcp/server.mjs [--port N] [--port-file PATH] [--token TOKEN]
//
// Listens on 127.0.0.1 (port 0: any free one), prints `listening PORT`, writes PORT to
// --port-file. SIGTERM stops it.
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';

import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const PORT = Number(opt('--port', '0'));
const PORT_FILE = opt('--port-file', '');
const TOKEN = opt('--token', 'secret-token');
const PAGE_SIZE = 2; // tools/list answers this many tools a page (the client follows nextCursor)
const MAX_BODY = 1 << 20;

// A 1x1 PNG.
const PIXEL =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

const num = { type: 'number' };
const TOOLS = [
  {
    name: 'add',
    description: 'Adds two numbers',
    inputSchema: { type: 'object', properties: { a: num, b: num }, required: ['a', 'b'] },
  },
  { name: 'fail', description: 'Always fails (isError)', inputSchema: { type: 'object' } },
  { name: 'hang', description: 'Never answers (until cancelled)', inputSchema: { type: 'object' } },
  {
    name: 'huge',
    description: 'Returns BYTES bytes of text (two-byte characters)',
    inputSchema: { type: 'object', properties: { bytes: { type: 'integer' } } },
  },
  { name: 'progress', description: 'Notifies, then answers', inputSchema: { type: 'object' } },
  { name: 'image', description: 'Returns an image and text', inputSchema: { type: 'object' } },
  { name: 'echo_auth', description: 'Returns the Authorization it got', inputSchema: { type: 'object' } },
  { name: 'naming.test/é', title: 'A tool whose name the model cannot take', inputSchema: { type: 'object' } },
];

const log = []; // what the tests read: GET /__log
const record = (entry) => log.push({ seq: log.length + 1, at: Date.now(), ...entry });

function makeServer(route) {
  const server = new Server(
    { name: 'terrarium-test-mcp', version: '1.0.0' },
    { capabilities: { tools: {}, logging: {} } },
  );
  server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    const again = { ...TOOLS[0], inputSchema: { type: 'object' } }; // the first, another schema
    const tools = route === '/mcp-dup' ? [...TOOLS, again] : TOOLS;
    const start = request.params?.cursor ? Number(request.params.cursor.replace(/^page-/, '')) : 0;
    if (!Number.isInteger(start) || start < 0 || start > tools.length)
      throw new McpError(ErrorCode.InvalidParams, `bad cursor ${request.params.cursor}`);
    const end = start + PAGE_SIZE;
    record({ route, event: 'tools/list', cursor: request.params?.cursor ?? null });
    return {
      tools: tools.slice(start, end),
      ...(end < tools.length ? { nextCursor: `page-${end}` } : {}),
    };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: a = {} } = request.params;
    record({ route, event: 'tools/call', tool: name, id: extra.requestId, args: a });
    switch (name) {
      case 'add':
        if (typeof a.a !== 'number' || typeof a.b !== 'number')
          throw new McpError(ErrorCode.InvalidParams, 'add: a and b must be numbers');
        return { content: [{ type: 'text', text: String(a.a + a.b) }] };
      case 'fail':
        return { content: [{ type: 'text', text: 'the tool failed on purpose' }], isError: true };
      case 'hang':
        return new Promise((resolve) => {
          extra.signal.addEventListener('abort', () => {
            record({ route, event: 'aborted', id: extra.requestId, reason: String(extra.signal.reason) });
            resolve({ content: [{ type: 'text', text: 'too late' }] });
          });
        });
      case 'huge':
        return { content: [{ type: 'text', text: 'é'.repeat(Math.floor((a.bytes ?? 1000000) / 2)) }] };
      case 'progress':
        for (let i = 1; i <= 3; i++) {
          await extra.sendNotification({
            method: 'notifications/message',
            params: { level: 'info', data: `step ${i}` },
          });
          await new Promise((r) => setTimeout(r, 20));
        }
        return { content: [{ type: 'text', text: 'done after 3 notes' }] };
      case 'image':
        return {
          content: [
            { type: 'image', data: PIXEL, mimeType: 'image/png' },
            { type: 'text', text: 'a pixel' },
          ],
        };
      case 'echo_auth':
        return {
          content: [{ type: 'text', text: `you sent: ${extra.requestInfo?.headers?.authorization ?? '(none)'}` }],
        };
      case 'naming.test/é':
        return { structuredContent: { named: true } };
      default:
        throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
  });
  return server;
}

const sessions = new Map(); // session id -> transport

function rpcError(res, status, code, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function readBody(req) {
  let size = 0;
  const chunks = [];
  for await (const c of req) {
    size += c.length;
    if (size > MAX_BODY) throw new Error('body too large');
    chunks.push(c);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? JSON.parse(text) : undefined;
}

// An MCP endpoint: JSON answers (enableJsonResponse) or SSE; stateless: no session ids.
async function mcp(route, req, res, body, { json, stateless }) {
  if (stateless) {
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: json });
    const server = makeServer(route);
    res.on('close', () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    return transport.handleRequest(req, res, body);
  }
  const sid = req.headers['mcp-session-id'];
  let transport = sid ? sessions.get(sid) : undefined;
  if (sid && !transport) return rpcError(res, 404, -32001, 'Session not found');
  if (!transport) {
    if (req.method !== 'POST' || !isInitializeRequest(body))
      return rpcError(res, 400, -32000, 'Bad Request: No valid session ID provided');
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await makeServer(route).connect(transport);
  }
  return transport.handleRequest(req, res, body);
}

const ROUTES = {
  '/mcp': { json: false },
  '/mcp-json': { json: true },
  '/mcp-auth': { json: false, auth: true },
  '/mcp-auth-echo': { json: false, auth: true, echo: true },
  '/mcp-stateless': { json: true, stateless: true },
  '/mcp-dup': { json: true },
};

async function handle(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1');
  const route = url.pathname;
  if (route === '/__log' && req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ log }));
  }
  if (route === '/__reset' && req.method === 'POST') {
    log.length = 0;
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end('{}');
  }
  if (route === '/__drop' && req.method === 'POST') { // forget every session (as a restart does)
    const all = [...sessions.values()];
    sessions.clear();
    for (const t of all) await t.close();
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ dropped: all.length }));
  }
  const body = req.method === 'POST' ? await readBody(req) : undefined;
  const auth = req.headers.authorization;
  const entry = {
    route,
    http: req.method,
    rpc: body?.method ?? (body && 'id' in body ? 'response' : null),
    id: body?.id ?? null,
    params: body?.method === 'notifications/cancelled' ? body.params : undefined,
    session: req.headers['mcp-session-id'] ?? null,
    protocol: req.headers['mcp-protocol-version'] ?? null,
    auth: auth === undefined ? 'none' : auth === `Bearer ${TOKEN}` ? 'right' : 'wrong',
    accept: req.headers.accept ?? null,
    contentType: req.headers['content-type'] ?? null,
  };
  // recorded when the answer ends or the client leaves (status null: left before the end)
  res.on('close', () => record({ ...entry, status: res.writableFinished ? res.statusCode : null }));
  if (route === '/mcp-stall') return; // reads the request, never answers
  if (route === '/mcp-old') { // answers initialize with a protocol version no one speaks
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({
      jsonrpc: '2.0',
      id: body?.id ?? null,
      result: { protocolVersion: '1999-01-01', capabilities: {}, serverInfo: { name: 'old', version: '0' } },
    }));
  }
  const r = ROUTES[route];
  if (!r) return rpcError(res, 404, -32000, `no route ${route}`);
  if (r.auth && entry.auth !== 'right') {
    res.setHeader('www-authenticate', 'Bearer error="invalid_token"');
    if (r.echo) return rpcError(res, 401, -32001, `invalid token: ${auth}`);
    return rpcError(res, 401, -32001, entry.auth === 'none' ? 'a bearer token is required' : 'invalid token');
  }
  return mcp(route, req, res, body, r);
}

const httpServer = http.createServer((req, res) => {
  handle(req, res).catch((e) => {
    console.error(`error: ${req.method} ${req.url}: ${e.stack ?? e}`);
    if (!res.headersSent) rpcError(res, 500, -32603, String(e.message ?? e));
    else res.end();
  });
});
httpServer.listen(PORT, '127.0.0.1', () => {
  const port = httpServer.address().port;
  if (PORT_FILE) writeFileSync(PORT_FILE, `${port}\n`);
  console.log(`listening ${port}`);
});
process.on('SIGTERM', () => {
  for (const t of sessions.values()) t.close();
  httpServer.closeAllConnections?.();
  httpServer.close(() => process.exit(0));
});
