// The sandbox through the real MCP path: search results, limits, concurrency, cancellation.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, RawServer } from './harness.mjs';

describe('search over the MarketHub spec', () => {
  let client;
  before(async () => {
    client = new Client({ name: 'sandbox-e2e', version: '1' });
    await client.connect(new StdioClientTransport({ command: BIN, args: ['--log-level', 'warn'], stderr: 'pipe' }));
  });
  after(async () => { await client.close(); });

  const search = (code) => client.callTool({ name: 'search', arguments: { code } });

  test('finds endpoints, with $refs resolved', async () => {
    const r = await search("async () => Object.entries(spec.paths).filter(([p]) => p.includes('orders')).map(([p, ops]) => [p, Object.keys(ops)])");
    assert.equal(r.isError, undefined);
    const found = r.structuredContent.result;
    assert.deepEqual(found.map(([p]) => p).sort(), ['/orders', '/orders/{orderId}', '/orders/{orderId}/cancel']);
    const body = await search("async () => JSON.stringify(spec.paths['/orders'].post.requestBody)");
    assert.ok(!body.structuredContent.result.includes('$ref'), 'refs are resolved');
    assert.match(body.structuredContent.result, /customer_id/);
  });

  test('console output comes back in logs, never on stdout', async () => {
    const r = await search("async () => { console.log('paths:', Object.keys(spec.paths).length); console.error({ a: 1 }); return 'done'; }");
    assert.equal(r.content[0].text, '"done"');
    assert.equal(r.structuredContent.logs.length, 2);
    assert.match(r.structuredContent.logs[0], /^paths: \d+$/);
    assert.match(r.content[1].text, /^console:\npaths: /);
  });

  test('each error kind has its prefix', async () => {
    const cases = [
      ['async () => { throw new RangeError("nope"); }', 'runtime: RangeError: nope'],
      ['async () => (', /^compile: SyntaxError: /],
      ['}', /^compile: SyntaxError: /],
      ['async () => 1); globalThis.smuggled = 1; (async () => 2', /^compile: /],
      ['async () => { while (true) {} }', 'timeout: cpu limit 50 ms exceeded'],
      ['async () => { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }', /^(memory: heap limit 64 MB exceeded|timeout: cpu limit 50 ms exceeded)$/],
      ['async () => new ArrayBuffer(2 ** 30)', /^(memory|runtime): /],
      ['async () => eval("1")', /^runtime: EvalError: /],
      ['async () => typeof process + typeof require + typeof WebAssembly', null],
    ];
    for (const [code, expected] of cases) {
      const r = await search(code);
      if (expected === null) {
        assert.equal(r.content[0].text, '"undefinedundefinedundefined"');
        continue;
      }
      assert.equal(r.isError, true, code);
      // The first line is the kind and the message; later lines say where and what to do.
      const first = r.content[0].text.split('\n')[0];
      if (typeof expected === 'string') assert.equal(first, expected, code);
      else assert.match(first, expected, code);
      assert.equal(first, `${r.structuredContent.error.type}: ${r.structuredContent.error.message}`);
    }
  });

  test('a large result is cut with a marker', async () => {
    const r = await search("async () => 'x'.repeat(20000)");
    assert.equal(r.isError, undefined);
    // Cut as it is serialised: still JSON, the string marked inside, the typed value kept.
    const [json, note] = r.content[0].text.split('\n');
    assert.match(JSON.parse(json), /^x+…\[cut: \d+ more characters\]$/);
    assert.match(note, /^…\[cut: the result is longer than result_chars \(12000 characters\)/);
    assert.equal(r.structuredContent.result, JSON.parse(json));
    assert.ok(r.structuredContent.cut.shown_chars <= 12000);
  });

  test('undefined, BigInt and functions do not break the result', async () => {
    assert.equal((await search('async () => undefined')).content[0].text, 'null');
    assert.equal((await search('async () => ({ n: 10n, f() {} })')).content[0].text, '{"n":"10"}');
    const cyclic = await search('async () => { const a = {}; a.a = a; return a; }');
    assert.match(cyclic.content[0].text, /^runtime: result is not JSON-serialisable/);
  });

  test('a call cannot leave anything behind for the next one', async () => {
    await search("async () => { spec.paths = {}; Object.prototype.x = 1; globalThis.y = 2; return 1; }");
    const r = await search('async () => [Object.keys(spec.paths).length > 0, ({}).x, typeof y]');
    assert.equal(r.content[0].text, '[true,null,"undefined"]');
  });
});

test('slow calls run beside fast ones; cancellation sends no result', async () => {
  const server = new RawServer(['--log-level', 'warn']);
  await server.initialize();
  const call = (id, code) => server.sendJson({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'search', arguments: { code } } });
  call('slow', 'async () => { await new Promise((r) => setTimeout(r, 1500)); return "slow"; }');
  call('doomed', 'async () => { await new Promise((r) => setTimeout(r, 1500)); return "doomed"; }');
  const t0 = Date.now();
  server.sendJson({ jsonrpc: '2.0', id: 'ping', method: 'ping' });
  assert.deepEqual(await server.next(), { jsonrpc: '2.0', id: 'ping', result: {} });
  assert.ok(Date.now() - t0 < 1000, 'ping answered while the slow calls wait');
  server.sendJson({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'doomed', reason: 'test' } });
  call('fast', 'async () => "fast"');
  const fast = await server.next();
  assert.equal(fast.id, 'fast');
  const slow = await server.next(5000);
  assert.equal(slow.id, 'slow');
  assert.equal(slow.result.content[0].text, '"slow"');
  // The cancelled call never answers; the server still serves.
  assert.deepEqual(await server.request({ jsonrpc: '2.0', id: 'after', method: 'ping' }), { jsonrpc: '2.0', id: 'after', result: {} });
  assert.deepEqual(await server.close(), { code: 0, signal: null });
  assert.deepEqual(server.lines, []);
});

test('the SDK client can abort a running call', async () => {
  const client = new Client({ name: 'abort', version: '1' });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--log-level', 'warn'], stderr: 'pipe' }));
  const controller = new AbortController();
  const pending = client.callTool({ name: 'search', arguments: { code: 'async () => new Promise((r) => setTimeout(r, 5000))' } },
    undefined, { signal: controller.signal });
  setTimeout(() => controller.abort('changed my mind'), 100);
  await assert.rejects(pending);
  const r = await client.callTool({ name: 'search', arguments: { code: 'async () => "still serving"' } });
  assert.equal(r.content[0].text, '"still serving"');
  await client.close();
});

test('SIGTERM while a call runs: the call finishes, then exit 0', async () => {
  const server = new RawServer(['--log-level', 'info']);
  await server.initialize();
  server.sendJson({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: { code: 'async () => { await new Promise((r) => setTimeout(r, 300)); return "finished"; }' } } });
  await new Promise((r) => setTimeout(r, 50));
  server.kill('SIGTERM');
  const [code] = await server.exited;
  assert.equal(code, 0);
  assert.equal(JSON.parse(server.lines[0]).result.content[0].text, '"finished"');
});
