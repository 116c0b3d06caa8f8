// Wake-up latency of the work queue's long polls (scripts/bench-work.sh): POLLERS loops poll
// GET .../work/poll?block_ms=999 with the environment key while SESSIONS sessions are created
// one at a time (random gaps of 20-120 ms, so most arrive while every poll is blocked). For
// each session: the time from the create's response (its transaction has committed) to a poll
// response carrying its item. Delivered items are force-stopped so none is delivered again.
// Prints one JSON line: {n, p50_ms, p90_ms, p99_ms, max_ms, missed}.
// Environment: URL, KEY (workspace key), ENV_KEY, ENV_ID, AGENT_ID, POLLERS (8), SESSIONS (200).
const { URL: BASE, KEY, ENV_KEY, ENV_ID, AGENT_ID } = process.env;
const POLLERS = Number(process.env.POLLERS || 8);
const SESSIONS = Number(process.env.SESSIONS || 200);
const H = { 'anthropic-beta': 'managed-agents-2026-04-01', 'content-type': 'application/json' };
const created = new Map(); // session id -> time its create answered
const received = new Map(); // session id -> time a poll answered with it
let stop = false;

async function poller() {
  while (!stop) {
    const r = await fetch(`${BASE}/v1/environments/${ENV_ID}/work/poll?block_ms=999`, {
      headers: { ...H, authorization: `Bearer ${ENV_KEY}` },
    });
    if (r.status === 204) continue;
    const t = performance.now();
    if (r.status !== 200) throw new Error(`poll: ${r.status} ${await r.text()}`);
    const w = await r.json();
    received.set(w.data.id, t);
    await fetch(`${BASE}/v1/environments/${ENV_ID}/work/${w.id}/stop`, {
      method: 'POST', headers: { ...H, 'x-api-key': KEY }, body: '{"force":true}',
    });
  }
}

const pollers = Array.from({ length: POLLERS }, poller);
await new Promise((r) => setTimeout(r, 1500)); // every poller is blocked
for (let i = 0; i < SESSIONS; i++) {
  await new Promise((r) => setTimeout(r, 20 + Math.random() * 100));
  const r = await fetch(`${BASE}/v1/sessions`, {
    method: 'POST', headers: { ...H, 'x-api-key': KEY },
    body: JSON.stringify({ agent: AGENT_ID, environment_id: ENV_ID }),
  });
  const t = performance.now();
  if (r.status !== 200) throw new Error(`create: ${r.status} ${await r.text()}`);
  created.set((await r.json()).id, t);
}
await new Promise((r) => setTimeout(r, 1500));
stop = true;
await Promise.all(pollers);
const lat = [...created].filter(([id]) => received.has(id)).map(([id, t]) => Math.max(0, received.get(id) - t)).sort((a, b) => a - b);
const q = (p) => lat.length ? lat[Math.min(lat.length - 1, Math.ceil(p * lat.length) - 1)] : NaN;
console.log(JSON.stringify({ n: lat.length, p50_ms: +q(0.5).toFixed(2), p90_ms: +q(0.9).toFixed(2),
  p99_ms: +q(0.99).toFixed(2), max_ms: +(lat.at(-1) ?? NaN).toFixed(2), missed: created.size - lat.length }));
