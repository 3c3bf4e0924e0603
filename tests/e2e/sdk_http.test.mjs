// The official MCP TypeScript SDK client over Streamable HTTP, stateful and stateless.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHttpServer, writeConfig } from './http_harness.mjs';

async function connect(url, headers = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'codemode-e2e-http', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// The same checks in both modes: the demo API, search and execute through the real gateway.
function describeMode(name, args, expectSession) {
  describe(name, () => {
    let server;
    let client;
    let transport;
    before(async () => {
      server = await startHttpServer(args);
      ({ client, transport } = await connect(server.url));
    });
    after(async () => {
      await client?.close();
      assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.stderr);
    });

    test('initialize negotiates 2025-11-25 and reports the tools capability', () => {
      assert.equal(client.getServerVersion().name, 'codemode-mcp');
      assert.ok(client.getServerCapabilities().tools);
      assert.equal(transport.protocolVersion, '2025-11-25');
      if (expectSession) assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
      else assert.equal(transport.sessionId, undefined);
    });

    test('listTools declares search and execute', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['search', 'execute']);
    });

    test('search runs against the spec', async () => {
      const result = await client.callTool({
        name: 'search', arguments: { code: 'async () => Object.keys(spec.paths).length' },
      });
      assert.equal(result.isError, undefined);
      assert.equal(result.structuredContent.result, 11);
    });

    test('execute reaches the demo API through the gateway', async () => {
      const result = await client.callTool({
        name: 'execute',
        arguments: { code: 'async () => { const r = await fetch("/products?limit=2"); return { status: r.status, n: (await r.json()).items.length }; }' },
      });
      assert.deepEqual(result.structuredContent.result, { status: 200, n: 2 }, result.content[0].text);
    });

    test('tool failures are results, protocol errors are errors, and the client keeps going', async () => {
      const failed = await client.callTool({ name: 'search', arguments: { code: 'async () => { throw new TypeError("nope") }' } });
      assert.equal(failed.isError, true);
      assert.equal(failed.content[0].text.split('\n')[0], 'runtime: TypeError: nope');
      await assert.rejects(client.callTool({ name: 'eval', arguments: { code: '1' } }), (err) => err.code === -32602);
      await client.ping();
    });

    test('concurrent calls each get their own answer', async () => {
      const results = await Promise.all(Array.from({ length: 12 }, (_, i) =>
        client.callTool({ name: 'search', arguments: { code: `async () => ${i}` } })));
      assert.deepEqual(results.map((r) => r.structuredContent.result), Array.from({ length: 12 }, (_, i) => i));
    });
  });
}

describeMode('stateful (default)', ['--http', ':0'], true);
describeMode('stateless (--http-stateless)', ['--http', ':0', '--http-stateless'], false);

describe('stateful session end', () => {
  test('terminateSession ends the session: its id is then unknown', async () => {
    const server = await startHttpServer(['--http', ':0']);
    try {
      const { client, transport } = await connect(server.url);
      const id = transport.sessionId;
      await transport.terminateSession();
      const response = await fetch(server.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': id },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
      assert.equal(response.status, 404);
      await client.close();
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  });
});

describe('bearer tokens with the SDK', () => {
  test('the right token connects; a wrong one is refused with 401', async () => {
    const token = 'sdk-token-0123456789abcdef';
    const server = await startHttpServer(['--http', ':0', '--config', writeConfig({ http: { bearer_tokens: [token] } })]);
    try {
      const { client } = await connect(server.url, { Authorization: `Bearer ${token}` });
      assert.equal((await client.listTools()).tools.length, 2);
      await client.close();
      await assert.rejects(connect(server.url, { Authorization: 'Bearer wrong-token-0123456789' }),
        (err) => err.code === 401 && /unauthorized: a valid bearer token is required/.test(err.message));
      assert.ok(!server.stderr.includes(token), 'the token is never logged');
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null });
    }
  });
});
