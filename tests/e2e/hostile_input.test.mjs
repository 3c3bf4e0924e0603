// Hostile JSON-RPC through the real binary (issue 20): messages nested deep enough to overflow a
// recursive copy, duplicate keys that mean one thing to a proxy and another to us, and a stdio
// peer that stops reading while HTTP clients share the server. After each, the server serves on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { BIN, RawServer } from './harness.mjs';
import { post, provesServing, rawExchange, startHttpServer, writeConfig } from './http_harness.mjs';

// A tools/call whose params nest `depth` objects deep: ~600 KB for the review's 100,000.
function deepCall(id, depth) {
  return `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}}`;
}

const DUPLICATE_METHOD =
  '{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{},"method":"tools/call"}';

test('stdio: a message nested 100,000 deep is refused with its id and the server serves on', async () => {
  const server = new RawServer();
  await server.initialize();
  server.send(deepCall(3, 100_000));
  const reply = await server.next(10000);
  assert.equal(reply.id, 3);
  assert.equal(reply.error.code, -32600);
  assert.equal(reply.error.message, 'invalid request: the message nests deeper than 128 levels');
  // Arrays too, and no id read before the fault.
  server.send(`{"jsonrpc":"2.0","params":${'['.repeat(200_000)}`);
  assert.deepEqual((await server.next(10000)).error.code, -32600);
  assert.deepEqual(await server.request({ jsonrpc: '2.0', id: 4, method: 'ping' }), { jsonrpc: '2.0', id: 4, result: {} });
  assert.deepEqual(await server.close(), { code: 0, signal: null });
});

test('stdio: a duplicate "method" is refused, neither reading of it runs', async () => {
  const server = new RawServer();
  await server.initialize();
  server.send(DUPLICATE_METHOD);
  const reply = await server.next();
  assert.deepEqual(reply, {
    jsonrpc: '2.0', id: 5,
    error: { code: -32600, message: 'invalid request: duplicate key "method" (a message must name each member once)' },
  });
  assert.deepEqual(await server.request({ jsonrpc: '2.0', id: 6, method: 'ping' }), { jsonrpc: '2.0', id: 6, result: {} });
  assert.deepEqual(await server.close(), { code: 0, signal: null });
});

test('http: one deep POST does not take the daemon down, nor does a duplicate key', async () => {
  const server = await startHttpServer();
  try {
    const deep = await rawExchange(server.port, post(server.port, deepCall(9, 100_000)));
    assert.equal(deep.status, 400);
    assert.equal(JSON.parse(deep.body).error.code, -32600);
    assert.equal(JSON.parse(deep.body).id, 9);
    const duplicate = await rawExchange(server.port, post(server.port, DUPLICATE_METHOD));
    assert.equal(duplicate.status, 400);
    assert.match(JSON.parse(duplicate.body).error.message, /duplicate key "method"/);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('--http --stdio: a stdio peer that stops reading stdout never holds up HTTP clients', async () => {
  // stdout is a pipe nobody reads: node reads a child's stdout only once someone listens.
  const proc = spawn(BIN, ['--http', ':0', '--stdio'], { stdio: ['pipe', 'pipe', 'pipe'] });
  proc.stdin.on('error', () => {});
  let stderr = '';
  const exited = once(proc, 'exit');
  const listening = new Promise((resolve, reject) => {
    proc.stderr.on('data', (d) => {
      stderr += d;
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(stderr);
      if (match) resolve(Number(match[1]));
    });
    proc.on('exit', (code) => reject(new Error(`exited ${code}:\n${stderr}`)));
  });
  const port = await listening;
  // ~4 MB of answers, far more than the pipe and node's buffer hold: tools/list (7 KB each),
  // which needs no sandbox, so the HTTP calls below wait for nothing but the I/O thread.
  proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mute', version: '1' } } }) + '\n');
  for (let i = 1; i <= 600; i++) {
    proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/list' }) + '\n');
  }
  await new Promise((resolve) => proc.stdin.write('', resolve));
  try {
    // Three HTTP clients, one after another, each answered as if stdio did not exist.
    for (let i = 0; i < 3; i++) await provesServing(port);
  } finally {
    // The queue the peer never read is given up after a few seconds; a server whose I/O thread
    // is stuck in write() never gets to its signal handler, and is killed after 15 s.
    proc.kill('SIGTERM');
    let timer;
    const late = new Promise((resolve) => { timer = setTimeout(() => { proc.kill('SIGKILL'); resolve(); }, 15000); });
    const [code, signal] = await Promise.race([exited, late.then(() => exited)]);
    clearTimeout(timer);
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, stderr);
  }
});

test('stdio: a client that leaves 16 MiB of answers unread is treated as gone, and the server exits 0', async () => {
  // stdout is a pipe nobody reads; ~4 MB per answer (the text and its structured copy), so 5
  // answers fill the 16 MiB; 10 calls, few enough to run at once quickly in the sanitizer build
  // too.
  const config = writeConfig({ limits: { result_chars: 2000000 } });
  const proc = spawn(BIN, ['--config', config], { stdio: ['pipe', 'pipe', 'pipe'] });
  proc.stdin.on('error', () => {});
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = once(proc, 'exit');
  proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mute', version: '1' } } }) + '\n');
  for (let i = 1; i <= 10; i++) {
    proc.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: i, method: 'tools/call',
      params: { name: 'search', arguments: { code: `async () => "${i}".padEnd(1900000, "x")` } } }) + '\n');
  }
  // stdin stays open: only the overflow can end the server.
  let timer;
  const late = new Promise((resolve) => { timer = setTimeout(() => { proc.kill('SIGKILL'); resolve(); }, 60000); });
  const [code, signal] = await Promise.race([exited, late.then(() => exited)]);
  clearTimeout(timer);
  proc.stdin.destroy();
  assert.deepEqual({ code, signal }, { code: 0, signal: null }, stderr.slice(-2000));
  assert.match(stderr, /stdout: the stdio client has left \d+ bytes of answers unread/);
  assert.equal((stderr.match(/stdout is gone; stdio answers are lost/g) ?? []).length, 1, 'one warning, not one per message');
  assert.match(stderr, /stdout is gone: finishing running calls/);
});
