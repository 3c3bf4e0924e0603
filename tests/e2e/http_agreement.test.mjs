// Agreement: the same JSON-RPC calls over stdio and over Streamable HTTP get the same results.
// Both servers use one config and one standalone fixture, so even the tool descriptions (which
// name the upstream origin) are identical.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RawServer, startFixture } from './harness.mjs';
import { startHttpServer, writeConfig } from './http_harness.mjs';

const calls = [
  { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'agree', version: '1' } } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'ping' },
  { jsonrpc: '2.0', id: 3, method: 'tools/list' },
  { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'search', arguments: { code: 'async () => Object.entries(spec.paths).map(([p, o]) => [p, Object.keys(o)])' } } },
  { jsonrpc: '2.0', id: 'five', method: 'tools/call', params: { name: 'search', arguments: { code: 'async () => { console.log("hi"); return spec.components.schemas.Product; }' } } },
  { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'execute', arguments: { code: 'async () => (await fetch("/products?limit=3")).json()' } } },
  { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'execute', arguments: { code: 'async () => fetch("http://evil.test/")' } } },
  { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'search', arguments: { code: 'async () => {' } } },
  { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'search', arguments: {} } },
  { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'nope', arguments: { code: '1' } } },
  { jsonrpc: '2.0', id: 11, method: 'tools/call', params: {} },
  { jsonrpc: '2.0', id: 12, method: 'resources/list' },
];

let fixture;
let config;
const env = {};
before(async () => {
  fixture = await startFixture();
  env.AGREE_TOKEN = fixture.token;
  config = writeConfig({ upstreams: [{ origin: fixture.origin, headers: { Authorization: 'Bearer ${AGREE_TOKEN}' } }] });
});
after(async () => { await fixture.stop(); });

async function overStdio() {
  const server = new RawServer(['--config', config], env);
  const results = [];
  for (const message of calls) {
    server.sendJson(message);
    if ('id' in message) results.push(await server.next());
  }
  assert.deepEqual(await server.close(), { code: 0, signal: null });
  return results;
}

async function overHttp() {
  const server = await startHttpServer(['--http', ':0', '--config', config], env);
  const results = [];
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  try {
    for (const message of calls) {
      const response = await fetch(server.url, { method: 'POST', headers, body: JSON.stringify(message) });
      if (message.method === 'initialize') {
        headers['Mcp-Session-Id'] = response.headers.get('mcp-session-id');
        headers['MCP-Protocol-Version'] = '2025-06-18';
      }
      if ('id' in message) {
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('content-type'), 'application/json');
        results.push(await response.json());
      } else {
        assert.equal(response.status, 202);
        assert.equal(await response.text(), '');
      }
    }
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
  return results;
}

test('stdio and HTTP give the same JSON-RPC results for the same calls', async () => {
  const [stdio, http] = await Promise.all([overStdio(), overHttp()]);
  assert.equal(stdio.length, calls.filter((m) => 'id' in m).length);
  // The times in a result's usage and requests are measured, so they differ run to run.
  const timeless = (value) => JSON.parse(JSON.stringify(value, (key, v) => (/^(cpu_ms|wall_ms|queued_ms|ms)$/.test(key) ? 'time' : v)));
  for (const [i, result] of stdio.entries()) {
    assert.deepEqual(timeless(http[i]), timeless(result), `answer to ${JSON.stringify(calls.filter((m) => 'id' in m)[i])}`);
  }
  // The sequence exercised what it claims to: a result, a tool error, a protocol error.
  assert.equal(stdio[5].result.structuredContent.result.items.length, 3);
  assert.match(stdio[6].result.content[0].text, /^policy: /);
  assert.equal(stdio[9].error.code, -32602);
  assert.equal(stdio[11].error.code, -32601);
});
