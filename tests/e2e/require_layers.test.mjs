// --require-sandbox-layers / CODEMODE_REQUIRE_SANDBOX_LAYERS: a deployment that names the layers
// it needs refuses to start without them, saying which and why, and --healthcheck probes
// /healthz for a container HEALTHCHECK. A layer is taken away as Docker's default seccomp
// profile takes it: refuse_unshare runs the binary under a filter that makes unshare() fail, and
// every sandbox process inherits it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { BIN, RawServer, run } from './harness.mjs';
import { startHttpServer } from './http_harness.mjs';

const REFUSE_UNSHARE = process.env.REFUSE_UNSHARE_BIN;
if (!REFUSE_UNSHARE) throw new Error('REFUSE_UNSHARE_BIN must be set (ctest sets it)');

// Runs codemode-mcp under refuse_unshare to completion; resolves {code, stdout, stderr}.
async function runRefused(args, env = {}) {
  const proc = spawn(REFUSE_UNSHARE, [BIN, ...args], { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  proc.stdin.on('error', () => {});
  proc.stdin.end();
  const [code] = await once(proc, 'exit');
  return { code, stdout, stderr };
}

// The layer names of the report lines that say "on" on this machine, in option spelling.
async function layersOnHere() {
  const { code, stdout } = await run(['--sandbox-report']);
  assert.equal(code, 0);
  const names = { 'address space': 'address-space', 'empty root': 'empty-root', 'no_new_privs': 'no-new-privs' };
  return [...stdout.matchAll(/^ {2}([a-z_ ]+): on\b/gm)]
    .map((m) => names[m[1]] ?? m[1])
    .filter((name) => name !== 'jitless');
}

test('without unshare, requiring every layer refuses to start and names the missing ones', async () => {
  const { code, stdout, stderr } = await runRefused(['--require-sandbox-layers', 'all']);
  assert.equal(code, 1);
  assert.equal(stdout, '', 'nothing may reach the protocol channel');
  assert.match(stderr, /required sandbox layer is not on: namespaces: off \(unshare refused: Operation not permitted\)/);
  assert.match(stderr, /required sandbox layer is not on: empty root: off \(no mount namespace\)/);
  assert.match(stderr, /refusing to start .*--security-opt seccomp=deploy\/seccomp\.json/);
  // The layers that hold are not named as missing.
  assert.doesNotMatch(stderr, /not on: seccomp/);
});

test('the variable asks the same, and the flag overrides it', async () => {
  const refused = await runRefused([], { CODEMODE_REQUIRE_SANDBOX_LAYERS: 'namespaces' });
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /not on: namespaces: off \(unshare refused/);
  assert.doesNotMatch(refused.stderr, /empty root/);

  // --require-sandbox-layers none: the layer is off, logged as a warning, and the server serves.
  const proc = spawn(REFUSE_UNSHARE, [BIN, '--require-sandbox-layers', 'none', '--http', '127.0.0.1:0'],
    { env: { ...process.env, CODEMODE_REQUIRE_SANDBOX_LAYERS: 'all' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const exited = once(proc, 'exit');
  await new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      stderr += d;
      if (/listening on http/.test(stderr)) resolve();
    });
    proc.on('exit', (code) => reject(new Error(`exited ${code}:\n${stderr}`)));
  });
  proc.kill('SIGTERM');
  assert.equal((await exited)[0], 0);
});

test('--sandbox-report prints every layer, then fails when a required one is off', async () => {
  const { code, stdout, stderr } = await runRefused(['--sandbox-report', '--require-sandbox-layers', 'namespaces,seccomp']);
  assert.equal(code, 1);
  assert.match(stdout, /^ {2}namespaces: off \(unshare refused: Operation not permitted\)$/m);
  assert.match(stdout, /^ {2}seccomp: on/m);
  assert.match(stderr, /not on: namespaces: off/);
});

test('a bad layer list is a usage error before anything starts', async () => {
  const { code, stdout, stderr } = await run([], { env: { CODEMODE_REQUIRE_SANDBOX_LAYERS: 'seccomp,chroot' } });
  assert.equal(code, 2);
  assert.equal(stdout, '');
  assert.match(stderr, /CODEMODE_REQUIRE_SANDBOX_LAYERS: 'chroot' is not a sandbox layer/);
});

test('with the layers this machine gives, a server that requires them serves stdio', async () => {
  const here = await layersOnHere();
  assert.ok(here.includes('seccomp') && here.includes('process'), here.join(','));
  const server = new RawServer(['--require-sandbox-layers', here.join(',')]);
  const reply = await server.initialize();
  assert.equal(reply.id, 0);
  assert.ok(reply.result.serverInfo);
  const call = await server.request({
    jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'search', arguments: { code: 'async () => 6 * 7' } },
  });
  assert.equal(call.result.structuredContent?.result, 42, JSON.stringify(call));
  assert.deepEqual((await server.close()).code, 0);
});

test('--healthcheck exits 0 against a serving /healthz and 1 against nothing', async () => {
  const server = await startHttpServer(['--http', '127.0.0.1:0', '--http-stateless']);
  try {
    const healthy = await run(['--healthcheck', `127.0.0.1:${server.port}`]);
    assert.equal(healthy.code, 0, healthy.stdout + healthy.stderr);
    assert.equal(healthy.stdout, `healthy: http://127.0.0.1:${server.port}/healthz answered 200 ok\n`);
  } finally {
    await server.stop();
  }
  const gone = await run(['--healthcheck', `127.0.0.1:${server.port}`]);
  assert.equal(gone.code, 1);
  assert.match(gone.stdout, /^unhealthy: http:\/\/127\.0\.0\.1:\d+\/healthz: connect: Connection refused\n$/);
});
