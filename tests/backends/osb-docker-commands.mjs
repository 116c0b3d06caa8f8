// The tiny command vocabulary the OpenSandbox and Docker protocol fakes "run" (they never
// execute anything real): fake-opensandbox.mjs (execd receives a shell command line, parsed
// with shellSplit) and fake-docker.mjs (exec receives argv).
//
//   sh -c 'exit N'          exit status N
//   echo ARGS...            ARGS joined by spaces, newline
//   printenv NAME           the value of NAME from the request's environment (exit 1 if unset)
//   pwd                     the working directory
//   seq A B                 A..B, one per line (output sent in several chunks)
//   mkdir -p DIR            creates DIR (remembered per sandbox)
//   apt-get|cargo|gem|go|npm|pip install ...   "installed ..." (exit 0); an argument containing
//                           "fail-install" makes it print an error on stderr and exit 1; with an
//                           egress policy in force, the manager's registry must be allowed
// Anything else: exit 127 and a violation (a test sent a command the fake does not know).

export const MANAGERS = {
	'apt-get': 'apt',
	cargo: 'cargo',
	gem: 'gem',
	go: 'go',
	npm: 'npm',
	pip: 'pip',
};

const REGISTRY = {
	pip: 'pypi.org',
	npm: 'registry.npmjs.org',
	cargo: 'crates.io',
	gem: 'rubygems.org',
	go: 'proxy.golang.org',
	apt: 'deb.debian.org',
};

// Split a POSIX shell command line into words: '...' literal, "..." with \" \\ \$ \` escapes,
// a backslash outside quotes escapes the next character, unquoted blanks separate. A character
// a real shell would treat specially ($ ` * ? ; | & < > ( ) [ ] { } ~ # !) outside quotes is
// refused: the driver must quote it. Returns {words} or {error}.
export function shellSplit(line) {
	const words = [];
	let cur = null;
	let i = 0;
	while (i < line.length) {
		const c = line[i];
		if (c === ' ' || c === '\t' || c === '\n') {
			if (cur !== null) words.push(cur);
			cur = null;
			i++;
		} else if (c === "'") {
			const end = line.indexOf("'", i + 1);
			if (end < 0) return { error: 'unterminated single quote' };
			cur = (cur ?? '') + line.slice(i + 1, end);
			i = end + 1;
		} else if (c === '"') {
			cur = cur ?? '';
			i++;
			for (;;) {
				if (i >= line.length) return { error: 'unterminated double quote' };
				const d = line[i];
				if (d === '"') break;
				if (d === '\\' && '"\\$`'.includes(line[i + 1])) {
					cur += line[i + 1];
					i += 2;
					continue;
				}
				if (d === '$' || d === '`') return { error: `unescaped ${d} inside double quotes` };
				cur += d;
				i++;
			}
			i++;
		} else if (c === '\\') {
			if (i + 1 >= line.length) return { error: 'trailing backslash' };
			cur = (cur ?? '') + line[i + 1];
			i += 2;
		} else if ('$`*?;|&<>()[]{}~#!'.includes(c)) {
			return { error: `unquoted shell character ${JSON.stringify(c)}` };
		} else {
			cur = (cur ?? '') + c;
			i++;
		}
	}
	if (cur !== null) words.push(cur);
	return { words };
}

// Run ARGV. ctx: {sandbox (id, for the record), env: {NAME: value}, cwd, dirs: Set,
// allowed(host) -> bool, or null when no egress policy applies, installs: [] (appended)}.
// Returns {out: [[stream, text]...], exit, violation?}; stream is 'stdout' or 'stderr'.
export function runArgv(argv, ctx) {
	const out = [];
	const say = (text, stream = 'stdout') => out.push([stream, text]);
	const [cmd, ...args] = argv;
	if (cmd === 'sh' && args[0] === '-c' && args.length === 2 && /^exit [0-9]+$/.test(args[1])) {
		return { out, exit: Number(args[1].slice(5)) };
	}
	// the reconciler's check that each needed manager exists (reconciler/provision.c,
	// check_managers): every manager's program is present in the fake's image
	if (cmd === 'sh' && args[0] === '-c' && /^for m do command -v /.test(args[1] || '')) {
		for (const prog of args.slice(3)) if (!(prog in MANAGERS)) say(prog + '\n');
		return { out, exit: 0 };
	}
	if (cmd === 'apt-get' && args.length === 1 && args[0] === 'update') {
		return { out, exit: 0 };
	}
	// docker's driver hands /workspace to the sandbox user in a container it just created
	if (cmd === 'chown' && args.length === 2) {
		return { out, exit: 0 };
	}
	if (cmd === 'echo') {
		say(args.join(' ') + '\n');
		return { out, exit: 0 };
	}
	if (cmd === 'printenv' && args.length === 1) {
		if (!(args[0] in ctx.env)) return { out, exit: 1 };
		say(ctx.env[args[0]] + '\n');
		return { out, exit: 0 };
	}
	if (cmd === 'pwd' && !args.length) {
		say(ctx.cwd + '\n');
		return { out, exit: 0 };
	}
	if (cmd === 'seq' && args.length === 2 && /^[0-9]+$/.test(args[0] + args[1])) {
		let chunk = '';
		for (let n = Number(args[0]); n <= Number(args[1]); n++) {
			chunk += n + '\n';
			if (chunk.length > 300) {
				say(chunk);
				chunk = '';
			}
		}
		if (chunk) say(chunk);
		return { out, exit: 0 };
	}
	if (cmd === 'mkdir' && args[0] === '-p' && args.length === 2 && args[1].startsWith('/')) {
		ctx.dirs.add(args[1]);
		return { out, exit: 0 };
	}
	if (cmd in MANAGERS && args[0] === 'install') {
		const manager = MANAGERS[cmd];
		const packages = args.slice(1).filter((a) => !a.startsWith('-') && !a.startsWith('/'));
		ctx.installs.push({ sandbox: ctx.sandbox, manager, argv });
		let violation;
		if (ctx.allowed && !ctx.allowed(REGISTRY[manager])) {
			violation = `${manager} install while ${REGISTRY[manager]} is not allowed by the egress policy`;
		}
		if (argv.some((a) => a.includes('fail-install'))) {
			say(`E: ${manager}: could not install ${packages.join(' ')}\n`, 'stderr');
			return { out, exit: 1, violation };
		}
		say(`installed ${packages.join(' ')}\n`);
		return { out, exit: 0, violation };
	}
	say(`fake: command not supported: ${JSON.stringify(argv)}\n`, 'stderr');
	return { out, exit: 127, violation: `unsupported command ${JSON.stringify(argv)}` };
}
