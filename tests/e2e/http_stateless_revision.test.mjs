// MCP 2026-07-28 beside 2025-11-25 in one process (docs/mcp-2026-07-28.md): the tools agree
// across eras, tools/list carries its caching hints in a deterministic order, a client that
// hangs up cancels its call, and over stdio a `_meta` request needs no initialize. The exact
// bytes of every refusal are in tests/http_transcripts/2026-07-28.txt.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RawServer } from './harness.mjs';
import { startHttpServer, rawExchange, post, provesServing, INITIALIZE, hangUpDuring } from './http_harness.mjs';

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
};

function modern(id, method, params = {}) {
  const message = { jsonrpc: '2.0', id, method, params: { ...params, _meta: META } };
  const headers = { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method };
  if (params.name) headers['Mcp-Name'] = params.name;
  return [message, headers];
}

test('tools/list (2026-07-28): the 2025 tools, in a fixed order, with resultType and caching hints', async () => {
  const server = await startHttpServer();
  try {
    const lists = [];
    for (const id of [1, 2]) {
      const response = await rawExchange(server.port, post(server.port, ...modern(id, 'tools/list')));
      assert.equal(response.status, 200, response.body);
      assert.equal(response.headers['mcp-session-id'], undefined);
      lists.push(JSON.parse(response.body).result);
    }
    const [result] = lists;
    assert.deepEqual(lists[1], result);
    assert.equal(result.resultType, 'complete');
    assert.equal(result.ttlMs, 300000);
    assert.equal(result.cacheScope, 'public');
    assert.equal(result._meta['io.modelcontextprotocol/serverInfo'].name, 'codemode-mcp');
    assert.deepEqual(result.tools.map((t) => t.name), ['search', 'execute']);

    const init = await rawExchange(server.port, post(server.port, INITIALIZE));
    const legacy = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, {
      'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-11-25',
    }));
    const legacyResult = JSON.parse(legacy.body).result;
    assert.deepEqual(result.tools, legacyResult.tools);
    assert.equal(legacyResult.resultType, undefined);  // 2025 results stay as they were
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('a 2026-07-28 client that disconnects during tools/call cancels it', async () => {
  const server = await startHttpServer();
  try {
    const code = 'async () => { await new Promise(r => setTimeout(r, 8000)); return 1; }';
    const [message, headers] = modern(7, 'tools/call', { name: 'search', arguments: { code } });
    await hangUpDuring(server, post(server.port, message, headers), 7);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('stdio: a _meta request is served statelessly, before and after initialize', async () => {
  const server = new RawServer();
  try {
    const discover = await server.request(modern(1, 'server/discover')[0]);
    assert.equal(discover.result.resultType, 'complete');
    assert.deepEqual(discover.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26']);
    const unsupported = await server.request({
      jsonrpc: '2.0', id: 2, method: 'tools/list',
      params: { _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } },
    });
    assert.equal(unsupported.error.code, -32022);
    assert.deepEqual(unsupported.error.data.supported, discover.result.supportedVersions);
    const missing = await server.request({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    assert.equal(missing.error.code, -32602);
    // The 2025 lifecycle is untouched by the stateless requests: initialize still starts it.
    assert.equal((await server.request({ jsonrpc: '2.0', id: 4, method: 'tools/list' })).error.code, -32600);
    assert.equal((await server.initialize()).result.protocolVersion, '2025-11-25');
    const call = await server.request(modern(5, 'tools/call', { name: 'search', arguments: { code: 'async () => 6 * 7' } })[0]);
    assert.equal(call.result.structuredContent.result, 42);
    assert.equal(call.result.resultType, 'complete');
    const legacy = await server.request({ jsonrpc: '2.0', id: 6, method: 'tools/call',
      params: { name: 'search', arguments: { code: 'async () => 1' } } });
    assert.equal(legacy.result.resultType, undefined);
  } finally {
    assert.deepEqual(await server.close(), { code: 0, signal: null });
  }
});
