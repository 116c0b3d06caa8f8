// sse.mjs: session event streams over node:http for the stream tests and the streams benchmark
// (tests/events/*.mjs, scripts/bench-streams.sh), without the SDK: thousands of streams in one
// process, each on a connection of its own, with a receipt time per frame.
import http from 'node:http';

export const EVENT_ID = /^sevt_[0-9A-Za-z]{24}$/;

// The frames of an event-stream body (docs/api.md §7): blocks separated by a blank line; a
// block is a comment (every line starts with ':') or an event: `event: <type>`, an optional
// `id:` line (nchan numbers its messages), then one `data: <json>` whose JSON has that type and
// an event id. TEXT may end inside a block (a stream cut short): that part is left out.
// Returns {events: [{type, json}], comments, problems: [text]}.
export function parseFrames(text) {
  const out = { events: [], comments: 0, problems: [] };
  const blocks = text.replace(/\r\n/g, '\n').split('\n\n');
  blocks.pop(); // after the last blank line: nothing, or an unfinished block
  for (const block of blocks) {
    const lines = block.split('\n');
    if (lines.every((l) => l.startsWith(':'))) {
      out.comments++;
      continue;
    }
    const frame = parseEvent(lines);
    if (frame.problem) out.problems.push(`${frame.problem}: ${JSON.stringify(block).slice(0, 200)}`);
    else out.events.push(frame);
  }
  return out;
}

function parseEvent(lines) {
  const ev = /^event: (\S+)$/.exec(lines[0]);
  if (!ev) return { problem: 'a block that is neither a comment nor starts with event:' };
  let i = 1;
  if (lines[i] && /^id: \S+$/.test(lines[i])) i++;
  const data = /^data: (.*)$/.exec(lines[i] || '');
  if (!data || i + 1 !== lines.length) return { problem: 'an event without exactly one data: line after it' };
  if (ev[1] === 'ping' || ev[1] === 'error') return { problem: `an event named ${ev[1]}` };
  let json;
  try {
    json = JSON.parse(data[1]);
  } catch {
    return { problem: 'data that is not JSON' };
  }
  if (json.type !== ev[1]) return { problem: `event: ${ev[1]} carries type ${json.type}` };
  if (!EVENT_ID.test(json.id || '')) return { problem: 'an event without an event id' };
  return { type: ev[1], json };
}

// openStream(url, key, {agent, onEvent, timeoutMs}): GET url as the SDK does (x-api-key, the
// beta header, Accept: application/json). Resolves once the answer's headers came:
//   {status, headers, body (the text of a refusal), events: [{type, json, at}], ended, close()}
// `at` is performance.now() at the receipt; onEvent(frame) runs for each. `ended` turns true
// (and `done` resolves) when the server ends the stream or the connection drops.
// Rejects when the connection fails or no headers come within timeoutMs.
export function openStream(url, key, { agent, onEvent, timeoutMs = 30000 } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, {
      agent,
      headers: {
        'x-api-key': key,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': 'managed-agents-2026-04-01',
        accept: 'application/json',
      },
    }, (res) => {
      clearTimeout(timer);
      const s = { status: res.statusCode, headers: res.headers, body: '', events: [], ended: false, problems: [] };
      let buf = '';
      s.done = new Promise((done) => {
        const end = () => {
          if (!s.ended) {
            s.ended = true;
            done();
          }
        };
        res.on('end', end);
        res.on('close', end);
        res.on('error', end);
      });
      s.close = () => {
        req.destroy();
        return s.done;
      };
      res.setEncoding('utf8');
      res.on('data', (chunk) => {
        if (res.statusCode !== 200) {
          s.body += chunk;
          return;
        }
        buf += chunk;
        const cut = buf.lastIndexOf('\n\n');
        if (cut < 0) return;
        const at = performance.now();
        const parsed = parseFrames(buf.slice(0, cut + 2));
        buf = buf.slice(cut + 2);
        s.problems.push(...parsed.problems);
        for (const f of parsed.events) {
          const frame = { type: f.type, json: f.json, at };
          s.events.push(frame);
          if (onEvent) onEvent(frame);
        }
      });
      resolve(s);
    });
    const timer = setTimeout(() => req.destroy(new Error(`${url}: no headers in ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}
