// The sandbox processes of the real binary: what the kernel says about them, and a SIGKILL in
// the middle of a call costing that call only.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, readlinkSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { RawServer, SOURCE_DIR, BIN, run, childrenOf } from './harness.mjs';

function status(pid) {
  const fields = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const [key, ...rest] = line.split(':');
    if (rest.length) fields[key] = rest.join(':').trim();
  }
  return fields;
}

// User CPU ticks a process has used (field 14 of /proc/PID/stat).
function cpuTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[11]);
  } catch {
    return -1;  // gone
  }
}

async function until(what, predicate, ms = 10000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = predicate();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('--sandbox-report names the layers this machine allows', async () => {
  const { code, stdout, stderr } = await run(['--sandbox-report']);
  assert.equal(code, 0, stderr);
  assert.match(stdout, /^Isolation layers of a sandbox process on this machine:\n/);
  for (const layer of ['process', 'namespaces', 'rlimits', 'address space', 'empty root', 'no_new_privs', 'seccomp']) {
    assert.match(stdout, new RegExp(`^  ${layer}: (on|off|partial)`, 'm'), layer);
  }
  assert.match(stdout, /^ {2}seccomp: on/m);
});

describe('sandbox processes of a running server', () => {
  let server;
  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'codemode-proc-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      upstreams: [{ origin: 'http://127.0.0.1:9', headers: { Authorization: 'Bearer ${PROC_SECRET}' } }],
      limits: { cpu_ms: 20000, wall_ms: 20000 },
    }));
    server = new RawServer(['--config', config], { PROC_SECRET: 'proc-secret-never-in-a-child' });
    await server.initialize();
  });
  after(async () => { await server.close(); });

  const call = (id, code) => server.request({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'search', arguments: { code } } }, 30000);

  test('a spare process is the pinned node running the addon, locked down, with no environment but TZ', async () => {
    // Ready means locked down: a process that is still starting has no filter yet.
    const pids = await until('the sandbox processes, ready', () => {
      const found = childrenOf(server.proc.pid);
      return found.length >= 1 && found.every((pid) => status(pid).Seccomp === '2') && found;
    });
    for (const pid of pids) {
      const s = status(pid);
      assert.equal(s.Seccomp, '2', `seccomp filter mode in ${pid}`);
      assert.equal(s.NoNewPrivs, '1');
      let environ;
      try { environ = readFileSync(`/proc/${pid}/environ`, 'utf8'); } catch { environ = ''; }
      // The daemon's environment (PROC_SECRET, NODE_OPTIONS, ...) stays in the daemon: the process
      // gets its time zone by name, and nothing else.
      // (The sanitizer build also gives node its sanitizer runtime: cmake/NodeEngine.cmake.)
      const variables = environ.split('\0').filter(Boolean)
        .filter((v) => !(process.env.CODEMODE_SANITIZED === '1' && /^(LD_PRELOAD|ASAN_OPTIONS|UBSAN_OPTIONS)=/.test(v)));
      assert.equal(variables.length, 1, environ);
      assert.match(variables[0], /^TZ=[A-Za-z0-9_+\-\/]+$/, 'the daemon environment stays in the daemon');
      // The program is the engine beside the daemon's binary: the pinned node, and our addon.
      const engine = join(dirname(BIN), 'engine');
      assert.equal(readlinkSync(`/proc/${pid}/exe`), realpathSync(join(engine, 'node')));
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(1, -1);
      const boot = argv.indexOf('-e');
      assert.ok(boot > 0, argv.join(' '));
      assert.deepEqual(argv.slice(boot + 2), [join(engine, 'codemode_isolate.node'), '--namespaces=all']);
      // Only the engine's own options before the script: nothing that opens an inspector, loads
      // a module or changes the heap limits the isolates set for themselves.
      for (const option of argv.slice(0, boot)) {
        assert.match(option, /^--[a-z0-9-]+(=\d+)?$/, option);
        assert.doesNotMatch(option, /inspect|require|import|loader|max-old-space|max-semi-space|expose|allow-natives/, option);
      }
      assert.ok(argv.includes('--disable-sigusr1'), 'SIGUSR1 cannot open an inspector');
    }
  });

  test('SIGKILL to the process running a call is that call\'s error; the next call is served', async () => {
    const before = await until('the sandbox processes', () => {
      const found = childrenOf(server.proc.pid);
      return found.length >= 1 && found;
    });
    const start = Object.fromEntries(before.map((pid) => [pid, cpuTicks(pid)]));
    const pending = call(1, 'async () => { for (;;) {} }');
    // The process whose CPU time climbs is the one running the call.
    const busy = await until('the busy process', () => before.find((pid) => cpuTicks(pid) > start[pid] + 5));
    process.kill(busy, 'SIGKILL');
    const reply = await pending;
    assert.equal(reply.result.isError, true);
    assert.equal(reply.result.content[0].text, 'runtime: the sandbox process was killed by SIGKILL during the call; it was replaced');

    const next = await call(2, 'async () => Object.keys(spec.paths).length');
    assert.equal(next.result.content[0].text, '11');
    const after = await until('a replacement process', () => {
      const found = childrenOf(server.proc.pid);
      return found.length >= 1 && !found.includes(busy) && found;
    });
    assert.ok(!after.includes(busy));
    assert.match(server.stderr, new RegExp(`sandbox: process ${busy} ended after a call: runtime: the sandbox process was killed by SIGKILL`));
    assert.ok(!server.stderr.includes('proc-secret-never-in-a-child'));
  });
});

// Anonymous executable mappings of a process: where V8 puts the machine code its JIT makes.
function anonymousExecutableMappings(pid) {
  return readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')
    .filter((line) => /^\S+ ..x/.test(line) && line.trim().split(/\s+/).length < 6);
}

test('sandbox.jitless and --jitless: processes hold no executable memory of their own, and calls still run', async () => {
  // A hot loop, so that a JIT would compile it; the default server shows the test can fail.
  // Short enough for the embedded default's 50 ms of CPU without the JIT, on a busy machine.
  const hot = 'async () => { let s = 0; for (let i = 0; i < 3e5; i++) s += i % 7; return s; }';
  const counts = { false: [], true: [] };
  const configWith = (extra) => {
    const file = join(mkdtempSync(join(tmpdir(), 'codemode-jitless-')), 'config.json');
    writeFileSync(file, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      limits: { cpu_ms: 20000, wall_ms: 20000 }, ...extra,
    }));
    return file;
  };
  const variants = [
    { jitless: false, args: ['--config', configWith({})] },
    { jitless: true, args: ['--config', configWith({ sandbox: { jitless: true } })] },
    { jitless: true, args: ['--jitless'] },  // the embedded default, from the command line
  ];
  for (const { jitless, args } of variants) {
    const server = new RawServer(args);
    try {
      await server.initialize();
      for (let id = 1; id <= 2; id++) {
        const reply = await server.request({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'search', arguments: { code: hot } } }, 30000);
        assert.equal(reply.result.content[0].text, '899997');
      }
      const pids = await until('the sandbox processes', () => {
        const found = childrenOf(server.proc.pid);
        // The process that ran the calls, and the spare started after it.
        return found.length === 2 && found.every((pid) => status(pid).Seccomp === '2') && found;
      });
      counts[jitless].push(...pids.map((pid) => anonymousExecutableMappings(pid).length));
      assert.match(server.stderr, jitless ? /sandbox layer jitless: on/ : /sandbox layer jitless: no/);
    } finally {
      assert.deepEqual(await server.close(), { code: 0, signal: null });
    }
  }
  // With the JIT the process that ran the hot calls holds machine code (the spare beside it ran
  // only its warm-up, which V8 never compiles).
  assert.ok(counts[false].some((n) => n > 0), `with the JIT: ${counts[false]}`);
  assert.deepEqual(counts[true], counts[true].map(() => 0), 'with sandbox.jitless');
});
