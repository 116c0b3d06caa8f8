// A scripted fake of the Anthropic Messages API (POST /v1/messages), for the runner's tests and
// for a demo without a model key. Node 20, no dependencies. README.md (beside this file) is the
// manual: options, what a request is checked for, and the control API a test scripts it with.
//
//   node fake-model.mjs [--port N] [--key KEY | --key-file PATH] [--port-file PATH]
//                       [--default-rules on|off]
//
// Listens on 127.0.0.1 (port 0: any); prints "listening PORT" and writes PORT to --port-file.
// Each request gets, in this order: the next step of a scripted queue whose `match` occurs in
// its body, else the next step of the global queue, else the first rule whose `when` holds
// (a test's rules, then the default ones), else a short text reply. It answers at once unless
// a step says otherwise.
import crypto from 'node:crypto';
import http from 'node:http';
import { crashed, fakeOptions, listenLoopback, readBody, sendJson } from '../backends/fake-http.mjs';

const opts = fakeOptions('fake-model', { '--default-rules': ['defaultRules', 'on'] }, { keyOptional: true });

const REQUESTS_MAX = 10000; // requests kept for /__fake/requests (the oldest go first)
const TEXT_CHUNK = 16; // characters per text_delta and thinking_delta
const JSON_CHUNK = 7; // characters per input_json_delta
const SIGNING_KEY = crypto.randomBytes(32); // thinking signatures: only this fake's verify
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const TOOL_ID = /^[a-zA-Z0-9_-]+$/;
const REQUEST_FIELDS = new Set(['model', 'messages', 'max_tokens', 'system', 'tools', 'tool_choice',
  'stream', 'temperature', 'top_p', 'top_k', 'stop_sequences', 'metadata', 'thinking',
  'service_tier', 'container', 'mcp_servers', 'context_management']);
// the API's error type for a status, and its message when a step gives none
const ERROR_TYPES = {
  400: 'invalid_request_error', 401: 'authentication_error', 402: 'billing_error',
  403: 'permission_error', 404: 'not_found_error', 413: 'request_too_large',
  429: 'rate_limit_error', 500: 'api_error', 504: 'timeout_error', 529: 'overloaded_error',
};
const ERROR_MESSAGES = {
  overloaded_error: 'Overloaded', api_error: 'Internal server error',
  rate_limit_error: 'Number of request tokens has exceeded your per-minute rate limit',
};
const STEP_KEYS = new Set(['text', 'thinking', 'redacted_thinking', 'tool_use', 'content',
  'stop_reason', 'usage', 'status', 'error', 'headers', 'retry_after', 'delay_ms', 'hang_ms',
  'stall_ms', 'ping_every_ms', 'event_delay_ms', 'cut_after', 'stream_error', 'linger_ms', 'json',
  'repeat']);
const WHEN_KEYS = new Set(['last_user_text', 'last_user_regex', 'tool_result',
  'tool_result_contains', 'contains', 'system_contains', 'tool', 'stream']);

// The demo's rules: "run: CMD" in the last user message calls bash with CMD (when the request
// offers bash); a tool's result comes back as the reply's text.
const DEFAULT_RULES = [
  { name: 'tool-result', when: { tool_result: true }, reply: { text: '{{tool_result}}' } },
  { name: 'run', when: { last_user_regex: 'run: ([^\\n]+)', tool: 'bash' },
    reply: { tool_use: { name: 'bash', input: { command: '{{1}}' } } } },
];
const FALLBACK = { text: 'fake model: say "run: <command>" and I run it with bash' };

const queues = new Map(); // match ('' for the global queue) -> steps
let rules = []; // a test's rules, before the default ones
let requests = [];
let violations = [];
let seq = 0;
let connSeq = 0;

const isObj = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const newId = (prefix) => prefix + crypto.randomBytes(12).toString('base64url').replace(/[-_]/g, 'x');
const sign = (thinking) => 'fake-sig-' + crypto.createHmac('sha256', SIGNING_KEY).update(thinking).digest('base64');
const redactedFor = (nonce) => `${nonce}.${crypto.createHmac('sha256', SIGNING_KEY).update(nonce).digest('base64url')}`;
const redactedData = () => redactedFor(crypto.randomBytes(12).toString('base64url'));
const redactedValid = (d) => typeof d === 'string' && redactedFor(d.split('.')[0]) === d;

function violation(rec, what) {
  violations.push(`request ${rec.seq}: ${what}`);
}

// ---- what a request must look like (the Messages API's own checks) ----

function checkSystem(system) {
  if (system === undefined || typeof system === 'string') return null;
  if (!Array.isArray(system)) return 'system: Input should be a valid string or list';
  for (const [i, b] of system.entries()) {
    if (!isObj(b) || b.type !== 'text') return `system.${i}.type: Input should be 'text'`;
    if (typeof b.text !== 'string' || !b.text) return `system.${i}.text: text content blocks must be non-empty`;
  }
  return null;
}

function checkTools(tools, choice) {
  const names = new Set();
  if (tools !== undefined && !Array.isArray(tools)) return 'tools: Input should be a valid list';
  for (const [i, t] of (tools ?? []).entries()) {
    const at = `tools.${i}`;
    if (!isObj(t)) return `${at}: Input should be a valid dictionary`;
    if (typeof t.name !== 'string' || !TOOL_NAME.test(t.name)) return `${at}.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
    if (t.type === undefined || t.type === 'custom') {
      for (const k of Object.keys(t)) {
        if (!['type', 'name', 'description', 'input_schema', 'cache_control'].includes(k)) return `${at}.custom.${k}: Extra inputs are not permitted`;
      }
      if (!isObj(t.input_schema)) return `${at}.custom.input_schema: Field required`;
      if (t.input_schema.type !== 'object') return `${at}.custom.input_schema.type: Input should be 'object'`;
      if (t.description !== undefined && typeof t.description !== 'string') return `${at}.custom.description: Input should be a valid string`;
    }
    if (names.has(t.name)) return 'tools: Tool names must be unique.';
    names.add(t.name);
  }
  if (choice === undefined) return null;
  if (!isObj(choice) || !['auto', 'any', 'tool', 'none'].includes(choice.type)) return "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'";
  if (choice.type === 'tool' && !names.has(choice.name)) return `tool_choice.name: tool '${choice.name}' is not in tools`;
  return null;
}

function checkThinking(thinking, maxTokens) {
  if (thinking === undefined) return null;
  if (!isObj(thinking) || !['enabled', 'disabled'].includes(thinking.type)) return "thinking.type: Input should be 'enabled' or 'disabled'";
  if (thinking.type === 'disabled') return null;
  if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (thinking.budget_tokens >= maxTokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
  return null;
}

const BLOCK_KEYS = {
  text: ['text', 'cache_control', 'citations'],
  image: ['source', 'cache_control'],
  document: ['source', 'cache_control', 'title', 'context', 'citations'],
  thinking: ['thinking', 'signature'],
  redacted_thinking: ['data'],
  tool_use: ['id', 'name', 'input', 'cache_control'],
  tool_result: ['tool_use_id', 'content', 'is_error', 'cache_control'],
};
const ASSISTANT_ONLY = new Set(['thinking', 'redacted_thinking', 'tool_use']);
const USER_ONLY = new Set(['tool_result', 'image', 'document']);

function checkBlock(b, at, role) {
  if (!isObj(b) || typeof b.type !== 'string') return `${at}: Input should be a content block with a type`;
  const keys = BLOCK_KEYS[b.type];
  if (!keys) return `${at}.type: Input tag '${b.type}' found using 'type' does not match any of the expected tags`;
  for (const k of Object.keys(b)) if (k !== 'type' && !keys.includes(k)) return `${at}.${b.type}.${k}: Extra inputs are not permitted`;
  if ((ASSISTANT_ONLY.has(b.type) && role !== 'assistant') || (USER_ONLY.has(b.type) && role !== 'user')) {
    return `${at}: \`${b.type}\` blocks are not allowed in \`${role}\` messages`;
  }
  switch (b.type) {
    case 'text':
      if (typeof b.text !== 'string' || !b.text) return `${at}.text: text content blocks must be non-empty`;
      break;
    case 'image': case 'document':
      if (!isObj(b.source)) return `${at}.${b.type}.source: Field required`;
      break;
    case 'thinking':
      if (typeof b.thinking !== 'string' || typeof b.signature !== 'string') return `${at}.thinking: thinking and signature are required`;
      if (b.signature !== sign(b.thinking)) return `${at}: Invalid \`signature\` in \`thinking\` block`;
      break;
    case 'redacted_thinking':
      if (!redactedValid(b.data)) return `${at}: Invalid \`data\` in \`redacted_thinking\` block`;
      break;
    case 'tool_use':
      if (typeof b.id !== 'string' || !TOOL_ID.test(b.id)) return `${at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
      if (typeof b.name !== 'string' || !TOOL_NAME.test(b.name)) return `${at}.tool_use.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
      if (!isObj(b.input)) return `${at}.tool_use.input: Input should be a valid dictionary`;
      break;
    case 'tool_result':
      if (typeof b.tool_use_id !== 'string' || !TOOL_ID.test(b.tool_use_id)) return `${at}.tool_result.tool_use_id: Field required`;
      if (b.is_error !== undefined && typeof b.is_error !== 'boolean') return `${at}.tool_result.is_error: Input should be a valid boolean`;
      if (b.content !== undefined && typeof b.content !== 'string') {
        if (!Array.isArray(b.content)) return `${at}.tool_result.content: Input should be a valid string or list`;
        for (const [k, c] of b.content.entries()) {
          if (!isObj(c) || !['text', 'image', 'document'].includes(c.type)) return `${at}.tool_result.content.${k}.type: Input should be 'text', 'image' or 'document'`;
          if (c.type === 'text' && (typeof c.text !== 'string' || !c.text)) return `${at}.tool_result.content.${k}.text: text content blocks must be non-empty`;
        }
      }
      break;
    default:
      break;
  }
  return null;
}

function checkMessages(messages, thinkingOn) {
  if (!Array.isArray(messages)) return 'messages: Field required';
  if (!messages.length) return 'messages: at least one message is required';
  const toolUses = new Set();
  let previous = null; // tool_use ids of the previous assistant message
  for (const [i, m] of messages.entries()) {
    const at = `messages.${i}`;
    if (!isObj(m)) return `${at}: Input should be a valid dictionary`;
    for (const k of Object.keys(m)) if (k !== 'role' && k !== 'content') return `${at}.${k}: Extra inputs are not permitted`;
    if (m.role !== 'user' && m.role !== 'assistant') return `${at}.role: Input should be 'user' or 'assistant'`;
    if (i === 0 && m.role !== 'user') return 'messages: first message must use the "user" role';
    if (i > 0 && messages[i - 1].role === m.role) return `messages: roles must alternate between "user" and "assistant", but found multiple "${m.role}" roles in a row`;
    const finalAssistant = i === messages.length - 1 && m.role === 'assistant';
    if (typeof m.content !== 'string' && !Array.isArray(m.content)) return `${at}.content: Input should be a valid string or list`;
    if (!m.content.length && !finalAssistant) return `${at}: all messages must have non-empty content except for the optional final assistant message`;
    const blocks = typeof m.content === 'string' ? [] : m.content;
    for (const [j, b] of blocks.entries()) {
      const e = checkBlock(b, `${at}.content.${j}`, m.role);
      if (e) return e;
    }
    if (m.role === 'assistant') {
      const ids = [];
      for (const [j, b] of blocks.entries()) {
        if (b.type !== 'tool_use') continue;
        if (toolUses.has(b.id)) return `${at}.content.${j}: \`tool_use\` ids must be unique`;
        toolUses.add(b.id);
        ids.push(b.id);
      }
      const next = messages[i + 1];
      const answered = new Set(next && Array.isArray(next.content)
        ? next.content.filter((b) => isObj(b) && b.type === 'tool_result').map((b) => b.tool_use_id) : []);
      const missing = ids.filter((id) => !answered.has(id));
      if (missing.length) {
        return `messages.${next ? i + 1 : i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
      previous = new Set(ids);
    } else {
      const seen = new Set();
      let other = false;
      for (const [j, b] of blocks.entries()) {
        if (b.type !== 'tool_result') {
          other = true;
          continue;
        }
        if (other) return `${at}.content.${j}: \`tool_result\` blocks must come first in the content array, before any other content`;
        if (!previous || !previous.has(b.tool_use_id)) return `${at}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
        if (seen.has(b.tool_use_id)) return `${at}.content.${j}: each \`tool_use\` must have a single result. Found multiple \`tool_result\` blocks with id: ${b.tool_use_id}`;
        seen.add(b.tool_use_id);
      }
      previous = null;
    }
  }
  // with thinking on, the assistant message of a tool loop in progress starts with its thinking
  const last = messages.length - 1;
  const a = messages[last - 1];
  if (thinkingOn && messages[last].role === 'user' && a && Array.isArray(a.content) &&
      a.content.some((b) => b.type === 'tool_use') &&
      !['thinking', 'redacted_thinking'].includes(a.content[0].type)) {
    return `messages.${last - 1}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${a.content[0].type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks).`;
  }
  return null;
}

// The request's problem, as the API's 400 message, or null.
function validate(b) {
  if (!isObj(b)) return 'body: Input should be a valid dictionary';
  for (const k of Object.keys(b)) if (!REQUEST_FIELDS.has(k)) return `${k}: Extra inputs are not permitted`;
  if (typeof b.model !== 'string' || !b.model) return 'model: Field required';
  if (b.max_tokens === undefined) return 'max_tokens: Field required';
  if (!Number.isInteger(b.max_tokens)) return 'max_tokens: Input should be a valid integer';
  if (b.max_tokens < 1) return 'max_tokens: Input should be greater than or equal to 1';
  if (b.stream !== undefined && typeof b.stream !== 'boolean') return 'stream: Input should be a valid boolean';
  if (b.metadata !== undefined && !isObj(b.metadata)) return 'metadata: Input should be a valid dictionary';
  return checkSystem(b.system) ?? checkTools(b.tools, b.tool_choice) ??
    checkThinking(b.thinking, b.max_tokens) ?? checkMessages(b.messages, b.thinking?.type === 'enabled');
}

// ---- choosing the reply ----

const textOf = (content) => (typeof content === 'string' ? content
  : Array.isArray(content) ? content.filter((b) => isObj(b) && b.type === 'text').map((b) => b.text).join('\n') : '');

// What rules and templates look at in a (valid) request.
function context(body) {
  const lastUser = [...body.messages].reverse().find((m) => m.role === 'user');
  const results = Array.isArray(lastUser.content) ? lastUser.content.filter((b) => b.type === 'tool_result') : [];
  return {
    last_user_text: textOf(lastUser.content),
    has_tool_result: results.length > 0,
    tool_result: results.map((b) => textOf(b.content)).join('\n') || '(no output)',
    system: typeof body.system === 'string' ? body.system : textOf(body.system),
    tools: (body.tools ?? []).map((t) => t.name),
    seq,
  };
}

// The captures of rule condition WHEN against a request ({} when it has none), or null.
function matches(when, body, raw, ctx) {
  const caps = {};
  if (when.last_user_text !== undefined && !ctx.last_user_text.includes(when.last_user_text)) return null;
  if (when.last_user_regex !== undefined) {
    const m = new RegExp(when.last_user_regex).exec(ctx.last_user_text);
    if (!m) return null;
    m.forEach((v, i) => { caps[String(i)] = v ?? ''; });
  }
  if (when.tool_result !== undefined && ctx.has_tool_result !== Boolean(when.tool_result)) return null;
  if (when.tool_result_contains !== undefined && !(ctx.has_tool_result && ctx.tool_result.includes(when.tool_result_contains))) return null;
  if (when.contains !== undefined && !raw.includes(when.contains)) return null;
  if (when.system_contains !== undefined && !ctx.system.includes(when.system_contains)) return null;
  if (when.tool !== undefined && !ctx.tools.includes(when.tool)) return null;
  if (when.stream !== undefined && Boolean(body.stream) !== Boolean(when.stream)) return null;
  return caps;
}

// VALUE with every "{{name}}" in its strings replaced by VARS[name] (unknown names stay).
function fill(value, vars) {
  if (typeof value === 'string') return value.replace(/\{\{(\w+)\}\}/g, (all, k) => (k in vars ? String(vars[k]) : all));
  if (Array.isArray(value)) return value.map((v) => fill(v, vars));
  if (isObj(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v, vars)]));
  return value;
}

// Take the next step of queue Q (a step with repeat > 1 stays for its next uses).
function take(q) {
  const step = q[0];
  if (step.repeat > 1) {
    step.repeat--;
    return { ...step, repeat: 1 };
  }
  q.shift();
  return step;
}

// -> {step, source}
function choose(body, raw) {
  const ctx = context(body);
  for (const [match, q] of queues) {
    if (match && q.length && raw.includes(match)) return { step: fill(take(q), ctx), source: `script:${match}` };
  }
  const global = queues.get('');
  if (global?.length) return { step: fill(take(global), ctx), source: 'script' };
  const all = [...rules, ...(opts.defaultRules === 'off' ? [] : DEFAULT_RULES)];
  for (const r of all) {
    const caps = matches(r.when, body, raw, ctx);
    if (!caps) continue;
    if (r.times !== undefined && --r.times <= 0) rules = rules.filter((x) => x !== r);
    return { step: fill(r.reply, { ...ctx, ...caps }), source: `rule:${r.name ?? all.indexOf(r)}` };
  }
  return { step: fill(FALLBACK, ctx), source: 'fallback' };
}

// ---- answering ----

// The reply's content blocks, complete (ids, signatures).
function contentOf(step) {
  const blocks = [];
  if (step.thinking !== undefined) blocks.push({ type: 'thinking', thinking: step.thinking });
  if (step.redacted_thinking) blocks.push({ type: 'redacted_thinking' });
  if (step.content) blocks.push(...step.content);
  if (step.text !== undefined) blocks.push({ type: 'text', text: step.text });
  for (const t of [].concat(step.tool_use ?? [])) blocks.push({ type: 'tool_use', ...t });
  return blocks.map((b) => {
    switch (b.type) {
      case 'thinking': return { type: 'thinking', thinking: b.thinking, signature: b.signature ?? sign(b.thinking) };
      case 'redacted_thinking': return { type: 'redacted_thinking', data: b.data ?? redactedData() };
      case 'tool_use': return { type: 'tool_use', id: b.id ?? newId('toolu_'), name: b.name, input: b.input ?? {} };
      default: return b;
    }
  });
}

function messageOf(body, raw, step) {
  const content = contentOf(step);
  return {
    id: newId('msg_'),
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: step.stop_reason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: {
      input_tokens: Math.ceil(raw.length / 4),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: Math.max(1, Math.ceil(JSON.stringify(content).length / 4)),
      ...(step.usage ?? {}),
    },
  };
}

function apiError(res, rec, status, type, message, headers = {}) {
  rec.reply = `error ${status} ${type}`;
  sendJson(res, status, { type: 'error', error: { type, message }, request_id: rec.requestId },
    { 'request-id': rec.requestId, ...headers });
}

const chunks = (s, n) => {
  const cps = Array.from(s); // never split a surrogate pair
  const out = [];
  for (let i = 0; i < cps.length; i += n) out.push(cps.slice(i, i + n).join(''));
  return out;
};

function blockStart(b) {
  switch (b.type) {
    case 'text': return { type: 'text', text: '' };
    case 'thinking': return { type: 'thinking', thinking: '', signature: '' };
    case 'tool_use': return { type: 'tool_use', id: b.id, name: b.name, input: {} };
    default: return b;
  }
}

function blockDeltas(b) {
  switch (b.type) {
    case 'text': return chunks(b.text, TEXT_CHUNK).map((text) => ({ type: 'text_delta', text }));
    case 'thinking': return [...chunks(b.thinking, TEXT_CHUNK).map((thinking) => ({ type: 'thinking_delta', thinking })),
      { type: 'signature_delta', signature: b.signature }];
    case 'tool_use': return ['', ...chunks(JSON.stringify(b.input), JSON_CHUNK)]
      .map((partial_json) => ({ type: 'input_json_delta', partial_json }));
    default: return [];
  }
}

const GONE = Symbol('client gone');

// The message as the API streams it, with the step's hangs, stalls, cut and error.
async function stream(res, msg, step, rec) {
  let sent = 0;
  const send = async (type, data) => {
    if (res.destroyed) throw GONE;
    if (step.cut_after !== undefined && sent >= step.cut_after) {
      rec.reply += ` cut after ${sent} events`;
      res.socket?.destroy();
      throw GONE;
    }
    res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
    sent++;
    if (step.event_delay_ms) await sleep(step.event_delay_ms);
  };
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache',
    'request-id': rec.requestId, ...(step.headers ?? {}) });
  try {
    await send('message_start', { type: 'message_start',
      message: { ...msg, content: [], stop_reason: null, usage: { ...msg.usage, output_tokens: 1 } } });
    await send('ping', { type: 'ping' });
    if (step.hang_ms) await sleep(step.hang_ms);
    for (const end = Date.now() + (step.stall_ms ?? 0); Date.now() < end;) {
      await sleep(Math.min(step.ping_every_ms ?? 1000, end - Date.now()));
      await send('ping', { type: 'ping' });
    }
    for (const [index, b] of msg.content.entries()) {
      await send('content_block_start', { type: 'content_block_start', index, content_block: blockStart(b) });
      for (const delta of blockDeltas(b)) await send('content_block_delta', { type: 'content_block_delta', index, delta });
      await send('content_block_stop', { type: 'content_block_stop', index });
    }
    if (step.stream_error) {
      const type = step.stream_error.type ?? 'overloaded_error';
      await send('error', { type: 'error', error: { type, message: step.stream_error.message ?? ERROR_MESSAGES[type] ?? type } });
    } else {
      await send('message_delta', { type: 'message_delta', delta: { stop_reason: msg.stop_reason, stop_sequence: null },
        usage: { output_tokens: msg.usage.output_tokens } });
      await send('message_stop', { type: 'message_stop' });
    }
    if (step.linger_ms) await sleep(step.linger_ms);
    res.end();
  } catch (e) {
    if (e !== GONE) throw e;
  }
}

async function answer(res, body, raw, step, rec) {
  if (step.delay_ms) await sleep(step.delay_ms);
  if (res.destroyed) return;
  const headers = { ...(step.headers ?? {}) };
  if (step.retry_after !== undefined) headers['retry-after'] = String(step.retry_after);
  if (step.status !== undefined && step.status !== 200) {
    const type = step.error?.type ?? ERROR_TYPES[step.status] ?? (step.status >= 500 ? 'api_error' : 'invalid_request_error');
    return apiError(res, rec, step.status, type, step.error?.message ?? ERROR_MESSAGES[type] ?? type, headers);
  }
  const msg = messageOf(body, raw, { ...step, headers });
  rec.reply = msg.content.map((b) => b.type).join(',') || '(empty)';
  if (!body.stream || step.json) return sendJson(res, 200, msg, { 'request-id': rec.requestId, ...headers });
  return stream(res, msg, { ...step, headers }, rec);
}

// ---- the control API (tests) ----

function checkStep(step, at) {
  if (!isObj(step)) throw new Error(`${at}: a step is an object`);
  for (const k of Object.keys(step)) if (!STEP_KEYS.has(k)) throw new Error(`${at}: unknown field '${k}'`);
  for (const k of ['delay_ms', 'hang_ms', 'stall_ms', 'ping_every_ms', 'event_delay_ms', 'cut_after', 'linger_ms', 'repeat']) {
    if (step[k] !== undefined && !(Number.isInteger(step[k]) && step[k] >= 0)) throw new Error(`${at}.${k}: a whole number >= 0`);
  }
  if (step.ping_every_ms === 0) throw new Error(`${at}.ping_every_ms: at least 1`);
  if (step.status !== undefined && !(Number.isInteger(step.status) && step.status >= 200 && step.status <= 599)) throw new Error(`${at}.status: an HTTP status`);
  for (const t of [].concat(step.tool_use ?? [])) {
    if (!isObj(t) || typeof t.name !== 'string') throw new Error(`${at}.tool_use: {name, input?, id?}`);
  }
}

function checkRule(r, at) {
  if (!isObj(r) || !isObj(r.when) || !isObj(r.reply)) throw new Error(`${at}: a rule is {when, reply, times?, name?}`);
  for (const k of Object.keys(r.when)) if (!WHEN_KEYS.has(k)) throw new Error(`${at}.when: unknown condition '${k}'`);
  if (r.when.last_user_regex !== undefined) new RegExp(r.when.last_user_regex); // throws when malformed
  checkStep(r.reply, `${at}.reply`);
}

function reset() {
  queues.clear();
  rules = [];
  requests = [];
  violations = [];
}

async function control(req, res, url) {
  const route = `${req.method} ${url.pathname}`;
  const since = Number(url.searchParams.get('since') ?? 0);
  if (route === 'GET /__fake/requests') return sendJson(res, 200, { requests: requests.filter((r) => r.seq > since) });
  if (route === 'GET /__fake/log') return sendJson(res, 200, { violations, requests });
  if (route === 'GET /__fake/script') return sendJson(res, 200, { queues: Object.fromEntries(queues), rules });
  if (route === 'POST /__fake/reset') {
    reset();
    return sendJson(res, 200, {});
  }
  if (route !== 'POST /__fake/script' && route !== 'POST /__fake/rules') return sendJson(res, 404, { error: `no control route ${route}` });
  let doc;
  try {
    doc = JSON.parse((await readBody(req)).toString('utf8'));
    if (route === 'POST /__fake/script') {
      const { match = '', steps } = Array.isArray(doc) ? { steps: doc } : doc;
      if (typeof match !== 'string' || !Array.isArray(steps)) throw new Error('body: [steps] or {match?, steps}');
      steps.forEach((s, i) => checkStep(s, `steps.${i}`));
      if (!queues.has(match)) queues.set(match, []);
      queues.get(match).push(...steps.map((s) => ({ ...s })));
      return sendJson(res, 200, { match, queued: queues.get(match).length });
    }
    if (!isObj(doc) || !Array.isArray(doc.rules)) throw new Error('body: {rules, replace?}');
    doc.rules.forEach((r, i) => checkRule(r, `rules.${i}`));
    if (doc.replace) rules = [];
    rules.push(...doc.rules.map((r) => ({ ...r })));
    return sendJson(res, 200, { rules: rules.length });
  } catch (e) {
    return sendJson(res, 400, { error: e.message });
  }
}

// ---- the Messages API ----

const RECORDED_HEADERS = ['anthropic-version', 'anthropic-beta', 'content-type', 'accept', 'user-agent'];

function record(req, url, raw, startedMs) {
  const rec = {
    seq: ++seq,
    at: new Date().toISOString(),
    started_ms: startedMs,
    ended_ms: null,
    conn: req.socket.fakeConn,
    method: req.method,
    path: url.pathname,
    headers: Object.fromEntries(RECORDED_HEADERS.filter((h) => h in req.headers).map((h) => [h, req.headers[h]])),
    has_api_key: 'x-api-key' in req.headers, // never the key itself
    requestId: newId('req_'),
    body: raw,
    source: null,
    reply: null,
    status: null,
    complete: false,
  };
  try { rec.body = JSON.parse(raw); } catch { /* kept as text */ }
  requests.push(rec);
  if (requests.length > REQUESTS_MAX) requests.shift();
  return rec;
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://fake');
  if (url.pathname.startsWith('/__fake/')) return control(req, res, url);
  const startedMs = performance.now();
  const raw = (await readBody(req)).toString('utf8');
  const rec = record(req, url, raw, startedMs);
  res.on('close', () => {
    rec.ended_ms = performance.now();
    rec.status = res.statusCode;
    rec.complete = res.writableFinished;
  });
  if (req.method !== 'POST' || url.pathname !== '/v1/messages') {
    violation(rec, `${req.method} ${url.pathname}: not the Messages API`);
    return apiError(res, rec, 404, 'not_found_error', 'Not Found');
  }
  const key = req.headers['x-api-key'];
  if (opts.key && key !== opts.key) {
    violation(rec, key === undefined ? 'x-api-key missing' : 'wrong x-api-key');
    return apiError(res, rec, 401, 'authentication_error', key === undefined ? 'x-api-key header is required' : 'invalid x-api-key');
  }
  if (!req.headers['anthropic-version']) {
    violation(rec, 'anthropic-version missing');
    return apiError(res, rec, 400, 'invalid_request_error', 'anthropic-version: header is required');
  }
  if ((req.headers['content-type'] ?? '').split(';')[0].trim() !== 'application/json') {
    violation(rec, `content-type is '${req.headers['content-type'] ?? ''}'`);
    return apiError(res, rec, 400, 'invalid_request_error', 'content-type: must be application/json');
  }
  if (typeof rec.body === 'string') {
    violation(rec, 'body is not JSON');
    return apiError(res, rec, 400, 'invalid_request_error', 'There was an error parsing the body: not valid JSON');
  }
  const problem = validate(rec.body);
  if (problem) {
    violation(rec, problem);
    return apiError(res, rec, 400, 'invalid_request_error', problem);
  }
  const { step, source } = choose(rec.body, raw);
  rec.source = source;
  return answer(res, rec.body, raw, step, rec);
}

const server = http.createServer((req, res) => {
  handle(req, res).catch((e) => crashed((r, what) => violations.push(what), req, res, e,
    { type: 'error', error: { type: 'api_error', message: 'fake crashed' } }));
});
server.on('connection', (sock) => { sock.fakeConn = ++connSeq; });
server.keepAliveTimeout = 60000;
listenLoopback(server, opts);
