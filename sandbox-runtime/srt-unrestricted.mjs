#!/usr/bin/env node
// `srt --settings FILE -- COMMAND [ARG...]` for terrarium's `unrestricted` networking
// (sandbox/srt.c runs it; docs/srt.md).
//
// srt's command line has no setting for "every host": network.allowedDomains refuses "*" and
// an empty list means no network. sandbox-runtime's documented way to decide the destinations
// no rule decides is the ask callback of SandboxManager.initialize (its README, "As a
// library"); here it allows them, except this host: `localhost` names, and address literals
// that the proxy's resolved-address check would refuse for a name (loopback, unspecified,
// link-local, multicast, metadata, this host's own addresses). The check itself exempts
// literals and `localhost`, which the allow list decides, so the callback must not pass them.
// Names are still dialled through that check. Everything else is what the srt command does
// with a settings file: the same loader and validation, the same bubblewrap wrap with the
// network namespace removed, the same proxies.
import { spawn } from 'node:child_process';
import { isIP } from 'node:net';
import { constants } from 'node:os';
import { SandboxManager } from '@anthropic-ai/sandbox-runtime';
import { isLoopbackName } from '@anthropic-ai/sandbox-runtime/dist/sandbox/address.js';
import { canonicalizeHost } from '@anthropic-ai/sandbox-runtime/dist/sandbox/parent-proxy.js';
import { createResolvedAddressGuard } from '@anthropic-ai/sandbox-runtime/dist/sandbox/resolved-address-guard.js';
import { loadConfig } from '@anthropic-ai/sandbox-runtime/dist/utils/config-loader.js';
import { quote } from '@anthropic-ai/sandbox-runtime/dist/utils/shell-quote.js';

// a name that is no loopback name: the guard then judges an address as if a name resolved to it
const PROBE_NAME = 'literal.invalid';

const args = process.argv.slice(2);
if (args.length < 4 || args[0] !== '--settings' || args[2] !== '--') {
	console.error('usage: srt-unrestricted.mjs --settings FILE -- COMMAND [ARG...]');
	process.exit(2);
}
const loaded = loadConfig(args[1]);
if (loaded.kind !== 'ok') {
	console.error(`srt-unrestricted: ${args[1]}: ${loaded.reason ?? loaded.kind}`);
	process.exit(1);
}
const guard = createResolvedAddressGuard(loaded.config.network);

async function ask({ host, port }) {
	const canonical = canonicalizeHost(host) ?? host;
	const address = canonical.replace(/^\[(.*)\]$/, '$1');
	if (isLoopbackName(canonical))
		return { allow: false, reason: 'this host is not reachable from the sandbox' };
	if (isIP(address) && !guard.permits(PROBE_NAME, address, port))
		return { allow: false, reason: 'this address is not reachable from the sandbox' };
	return true;
}

await SandboxManager.initialize(loaded.config, ask);
const child = spawn(await SandboxManager.wrapWithSandbox(quote(args.slice(3))), {
	shell: true,
	stdio: 'inherit',
});
for (const signal of ['SIGINT', 'SIGTERM'])
	process.on(signal, () => child.kill(signal));
child.on('error', (error) => {
	console.error(`srt-unrestricted: ${error.message}`);
	process.exit(1);
});
child.on('exit', (code, signal) => {
	SandboxManager.cleanupAfterCommand();
	process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
});
