// The official SDK's EnvironmentWorker, unchanged, as a customer runs it on a worker machine:
// polls a self_hosted environment's work queue with its environment key and runs each
// session's tools in WORKDIR (tests/runtime/selfhosted.test.mjs starts it; Node 22: the SDK's
// agent toolset needs fs.glob).
//
//   TERRARIUM_URL ENV_ID ENV_KEY WORKDIR [MAX_IDLE_MS] [LEASE_TTL_S] node worker.mjs
//
// LEASE_TTL_S asks the heartbeats for that lease (desired_ttl_seconds, which the worker's own
// heartbeats leave to the server's default of 60 s), so that a killed worker's item comes back
// within the test's time. The SDK's log goes to stdout as JSON lines; SIGTERM aborts the run.
// Exit status: 0 after SIGTERM, 2 when the run ended with an error (printed as "stopped: ...").
import Anthropic from '@anthropic-ai/sdk';

const { TERRARIUM_URL, ENV_ID, ENV_KEY, WORKDIR, MAX_IDLE_MS, LEASE_TTL_S } = process.env;
for (const [k, v] of Object.entries({ TERRARIUM_URL, ENV_ID, ENV_KEY, WORKDIR })) {
  if (!v) {
    console.error(`worker: ${k} must be set`);
    process.exit(2);
  }
}

const line = (level) => (message, fields) => console.log(JSON.stringify({ level, message, ...fields }));
const ttlFetch = (url, init) => {
  const u = new URL(String(url));
  if (LEASE_TTL_S && /\/work\/[^/]+\/heartbeat$/.test(u.pathname) && !u.searchParams.has('desired_ttl_seconds')) {
    u.searchParams.set('desired_ttl_seconds', LEASE_TTL_S);
  }
  return fetch(u, init);
};
const client = new Anthropic({
  baseURL: TERRARIUM_URL,
  apiKey: null,
  authToken: ENV_KEY,
  fetch: ttlFetch,
  logLevel: 'info',
  logger: { debug: () => {}, info: line('info'), warn: line('warn'), error: line('error') },
});
const ctrl = new AbortController();
process.on('SIGTERM', () => ctrl.abort());

const worker = client.beta.environments.work.worker({
  environmentId: ENV_ID,
  environmentKey: ENV_KEY,
  workdir: WORKDIR,
  ...(MAX_IDLE_MS ? { maxIdleMs: Number(MAX_IDLE_MS) } : {}),
});
try {
  await worker.run(ctrl.signal);
  console.log(JSON.stringify({ level: 'info', message: 'stopped: aborted' }));
  process.exit(0);
} catch (e) {
  if (ctrl.signal.aborted) process.exit(0);
  console.log(JSON.stringify({ level: 'error', message: `stopped: ${e.constructor.name} ${e.status ?? ''} ${e.message}` }));
  process.exit(2);
}
