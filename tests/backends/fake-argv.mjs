// The tiny "operating system" behind the E2B and Daytona protocol fakes (fake-e2b.mjs,
// fake-daytona.mjs): nothing is executed, argv is interpreted. The commands the conformance
// suite and the reconciler send:
//
//   sh -c 'exit N'            exit status N (sh -c 'true' / 'false' too); any other script is
//                             split on blanks and run as argv
//   true, false               exit 0 / 1
//   echo ARG...               the arguments joined by one space, newline
//   printenv [NAME]           NAME's value (exit 1 when unset), or every NAME=VALUE line
//   env [NAME=VALUE...] [CMD] assignments then CMD (or the environment when no CMD); an
//                             unknown CMD is env's error, exit 127
//   pwd                       the working directory the request gave
//   seq [FIRST] LAST          the numbers, one per line
//   sleep SECONDS             waits (the request's time limit applies)
//   fake-bytes N              N bytes of output ("0123456789" repeated)
//   apt-get install -y ..., cargo install ..., gem install ..., go install ...,
//   npm install ..., pip install ...
//                             package-manager commands: "installed <pkg>" per package, exit 0;
//                             a package whose name starts with "fail" makes it exit 100;
//                             one named slow-N takes N seconds (exit 137, not installed, when
//                             proc.killed is set meanwhile: the fake's SendSignal)
//   apt-get update            exit 0 (the reconciler fetches package lists before apt installs)
//   sh -c 'for m do command -v "$m" ...' sh PROG...
//                             the reconciler's check that each needed manager exists
//                             (provision.c check_managers): prints the PROGs that are not a
//                             package manager above, one per line
//   anything else             not found (each fake reports it the way its service does)
//
// run() resolves to { code, out (Buffer), notFound, timedOut }. PROC ({killed}) is the process's
// record, which a fake's kill marks.

const MANAGERS = new Set(['apt-get', 'cargo', 'gem', 'go', 'npm', 'pip']);

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function run(argv, { env = {}, cwd = '/', timeoutMs = 0, installed = [], proc = {} } = {}) {
  const out = [];
  const say = (s) => out.push(Buffer.from(s));
  const done = (code, extra = {}) => ({ code, out: Buffer.concat(out), notFound: false,
    timedOut: false, ...extra });
  const [cmd, ...args] = argv;

  switch (cmd) {
    case 'sh':
    case 'bash': {
      if (args[0] !== '-c' || args.length < 2) return done(2);
      const script = args[1].trim();
      const m = /^exit\s+(\d+)$/.exec(script);
      if (m) return done(Number(m[1]) & 255);
      if (script === 'exit') return done(0);
      if (/^for m do command -v /.test(script)) {
        for (const prog of args.slice(3)) if (!MANAGERS.has(prog)) say(prog + '\n');
        return done(0);
      }
      return run(script.split(/\s+/), { env, cwd, timeoutMs, installed, proc });
    }
    case 'true':
      return done(0);
    case 'false':
      return done(1);
    case 'echo':
      say(args.join(' ') + '\n');
      return done(0);
    case 'printenv':
      if (args.length === 0) {
        for (const [k, v] of Object.entries(env)) say(`${k}=${v}\n`);
        return done(0);
      }
      if (!(args[0] in env)) return done(1);
      say(env[args[0]] + '\n');
      return done(0);
    case 'env': {
      const e = { ...env };
      let i = 0;
      for (; i < args.length && /^[^=]+=/.test(args[i]); i++) {
        const eq = args[i].indexOf('=');
        e[args[i].slice(0, eq)] = args[i].slice(eq + 1);
      }
      if (i === args.length) {
        for (const [k, v] of Object.entries(e)) say(`${k}=${v}\n`);
        return done(0);
      }
      const r = await run(args.slice(i), { env: e, cwd, timeoutMs, installed, proc });
      // env itself ran: a missing command is its error and its exit status 127
      if (r.notFound)
        return { code: 127, out: Buffer.from(`env: '${args[i]}': No such file or directory\n`),
          notFound: false, timedOut: false };
      return r;
    }
    case 'pwd':
      say(cwd + '\n');
      return done(0);
    case 'seq': {
      const nums = args.map(Number);
      if (!nums.length || nums.some((n) => !Number.isInteger(n))) return done(1);
      const [first, last] = nums.length === 1 ? [1, nums[0]] : nums;
      let s = '';
      for (let i = first; i <= last; i++) s += `${i}\n`;
      say(s);
      return done(0);
    }
    case 'fake-bytes': {
      const n = Number(args[0]);
      if (!Number.isInteger(n) || n < 0 || n > 64 << 20) return done(1);
      say('0123456789'.repeat(Math.ceil(n / 10)).slice(0, n));
      return done(0);
    }
    case 'sleep': {
      const ms = Number(args[0]) * 1000;
      if (!(ms >= 0)) return done(1);
      if (timeoutMs > 0 && ms > timeoutMs) {
        await sleep(timeoutMs);
        return done(137, { timedOut: true });
      }
      await sleep(ms);
      return done(0);
    }
    default:
      if (cmd === 'apt-get' && args.length === 1 && args[0] === 'update') return done(0);
      if (MANAGERS.has(cmd) && args[0] === 'install') {
        // the install options of common/packages.c's table; these take a
        // value: pip --target, cargo --root, gem --install-dir, npm --prefix
        const pkgs = [];
        for (let i = 1; i < args.length; i++) {
          if (['--target', '--root', '--install-dir', '--prefix'].includes(args[i])) i++;
          else if (!args[i].startsWith('-')) pkgs.push(args[i]);
        }
        for (const p of pkgs) {
          if (p.startsWith('fail')) {
            say(`E: Unable to locate package ${p}\n`);
            return done(100);
          }
          const slow = /^slow-(\d+)$/.exec(p);
          for (let t = 0; slow && t < Number(slow[1]) * 1000 && !proc.killed; t += 100) await sleep(100);
          if (proc.killed) return done(137);
          say(`installed ${p}\n`);
          installed.push(`${cmd} ${p}`);
        }
        return done(0);
      }
      return { code: 127, out: Buffer.alloc(0), notFound: true, timedOut: false };
  }
}
