// What the SDK cannot send: oversize lines, partial lines at EOF, CRLF, signals.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RawServer } from './harness.mjs';

test('a 10 MB line is refused with -32600 and the server keeps serving', async () => {
  const server = new RawServer();
  await server.initialize();
  const huge = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: { name: 'search', arguments: { code: 'x'.repeat(10 * 1024 * 1024) } } });
  server.send(huge);
  const reply = await server.next(10000);
  assert.equal(reply.id, null);
  assert.equal(reply.error.code, -32600);
  assert.match(reply.error.message, /exceeds \d+ bytes and was dropped/);
  assert.deepEqual(await server.request({ jsonrpc: '2.0', id: 2, method: 'ping' }), { jsonrpc: '2.0', id: 2, result: {} });
  assert.deepEqual(await server.close(), { code: 0, signal: null });
});

test('CRLF line endings and blank lines are accepted', async () => {
  const server = new RawServer();
  server.proc.stdin.write('\r\n\n{"jsonrpc":"2.0","id":"a","method":"ping"}\r\n');
  assert.deepEqual(await server.next(), { jsonrpc: '2.0', id: 'a', result: {} });
  assert.deepEqual(await server.close(), { code: 0, signal: null });
});

test('a last line without a newline is still answered before exit', async () => {
  const server = new RawServer();
  server.proc.stdin.end('{"jsonrpc":"2.0","id":7,"method":"ping"}');
  const [code] = await server.exited;
  assert.equal(code, 0);
  assert.deepEqual(server.lines.map((l) => JSON.parse(l)), [{ jsonrpc: '2.0', id: 7, result: {} }]);
});

test('stdin EOF with calls in flight drains them and exits 0', async () => {
  const server = new RawServer();
  await server.initialize();
  for (let i = 1; i <= 5; i++) {
    server.sendJson({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'search', arguments: { code: `async () => ${i}` } } });
  }
  assert.deepEqual(await server.close(), { code: 0, signal: null });
  const ids = server.lines.map((l) => JSON.parse(l).id).sort();
  assert.deepEqual(ids, [1, 2, 3, 4, 5], 'every call answered before exit');
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  test(`${signal} stops the server with exit 0`, async () => {
    const server = new RawServer();
    await server.initialize();
    server.kill(signal);
    const [code, sig] = await server.exited;
    assert.deepEqual({ code, sig }, { code: 0, sig: null });
    assert.match(server.stderr, new RegExp(signal));
  });
}

test('stdout carries only JSON-RPC messages, logs go to stderr', async () => {
  const server = new RawServer(['--log-level', 'debug']);
  await server.initialize();
  server.send('not json at all');
  server.sendJson({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
  server.sendJson({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'search', arguments: { code: 'async () => 1' } } });
  await server.close();
  assert.ok(server.stderr.length > 0, 'debug logs were written to stderr');
  // initialize (consumed), parse error, tools/list, tools/call
  assert.equal(server.lines.length, 3);
  for (const line of server.lines) {
    const message = JSON.parse(line);
    assert.equal(message.jsonrpc, '2.0');
    assert.ok('result' in message || 'error' in message);
  }
});
