// Progress notifications (MCP basic/utilities/progress) for a tools/call that carries
// `_meta.progressToken`: about one a second while it runs, over stdio as lines and over HTTP as
// events of an SSE stream that ends with the response. Without a token nothing changes.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BIN } from './harness.mjs';
import { startHttpServer, RawConnection, post, rawExchange, INITIALIZE } from './http_harness.mjs';

const SLOW = 'async () => { await new Promise(r => setTimeout(r, 2500)); return 1; }';

async function callWithProgress(client) {
  const progress = [];
  const result = await client.callTool({ name: 'search', arguments: { code: SLOW } }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  return { result, progress };
}

function checkProgress({ result, progress }) {
  assert.equal(result.isError, undefined);
  assert.equal(result.structuredContent.result, 1);
  assert.ok(progress.length >= 2, JSON.stringify(progress));
  progress.forEach((p, i) => {
    assert.equal(p.progress, i + 1);
    assert.equal(p.total, undefined);
    assert.equal(p.message, `running for ${i + 1} s`);
  });
}

describe('over stdio with the official SDK', () => {
  let client;
  before(async () => {
    client = new Client({ name: 'codemode-e2e-progress', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: BIN, args: [], stderr: 'pipe' }));
  });
  after(async () => { await client.close(); });

  test('onprogress hears increasing progress, then the result', async () => {
    checkProgress(await callWithProgress(client));
  });

  test('a quick call without onprogress is answered as before', async () => {
    const result = await client.callTool({ name: 'search', arguments: { code: 'async () => 2' } });
    assert.equal(result.structuredContent.result, 2);
  });
});

describe('over Streamable HTTP with the official SDK', () => {
  let server;
  let client;
  before(async () => {
    server = await startHttpServer();
    client = new Client({ name: 'codemode-e2e-progress', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
  });
  after(async () => {
    await client?.close();
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.stderr);
  });

  test('onprogress hears increasing progress, then the result', async () => {
    checkProgress(await callWithProgress(client));
  });
});

// A chunked body as its chunks' concatenation, once the last chunk has come; null before.
function dechunk(buffer) {
  let text = buffer.toString('utf8');
  let body = '';
  for (;;) {
    const eol = text.indexOf('\r\n');
    if (eol < 0) return null;
    const size = parseInt(text.slice(0, eol), 16);
    if (size === 0) return text.startsWith('0\r\n\r\n', 0) ? { body, rest: text.slice(eol + 4) } : null;
    if (text.length < eol + 2 + size + 2) return null;
    body += text.slice(eol + 2, eol + 2 + size);
    text = text.slice(eol + 2 + size + 2);
  }
}

async function until(connection, check, ms = 15000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (connection.closed) throw new Error(`closed early: ${connection.buffer}`);
    if (Date.now() > deadline) throw new Error(`timed out: ${connection.buffer}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const slowCall = (id, token, ms = 2500) => ({
  jsonrpc: '2.0', id, method: 'tools/call',
  params: {
    name: 'search',
    ...(token === undefined ? {} : { _meta: { progressToken: token } }),
    arguments: { code: `async () => { await new Promise(r => setTimeout(r, ${ms})); return 1; }` },
  },
});

describe('raw HTTP', () => {
  let server;
  let headers;
  before(async () => {
    server = await startHttpServer();
    const init = await rawExchange(server.port, post(server.port, INITIALIZE));
    headers = { 'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-11-25' };
  });
  after(async () => {
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.stderr);
  });

  test('a call with a token is answered by an SSE stream: progress events, then the response', async () => {
    const connection = new RawConnection(server.port);
    try {
      connection.write(post(server.port, slowCall(1, 'p-1'), headers));
      const head = await until(connection, () => {
        const end = connection.buffer.indexOf('\r\n\r\n');
        return end < 0 ? null : { text: connection.buffer.subarray(0, end).toString(), end };
      });
      const lines = head.text.split('\r\n');
      assert.equal(lines[0], 'HTTP/1.1 200 OK');
      const fields = Object.fromEntries(lines.slice(1).map((l) => {
        const colon = l.indexOf(':');
        return [l.slice(0, colon).toLowerCase(), l.slice(colon + 1).trim()];
      }));
      assert.equal(fields['content-type'], 'text/event-stream');
      assert.equal(fields['cache-control'], 'no-cache');
      assert.equal(fields['transfer-encoding'], 'chunked');
      assert.equal(fields['content-length'], undefined);
      const { body, rest } = await until(connection, () => dechunk(connection.buffer.subarray(head.end + 4)));
      assert.equal(rest, '');
      const events = body.split('\n\n').filter((e) => e !== '');
      const messages = events.map((e) => {
        const match = /^event: message\ndata: (.*)$/.exec(e);
        assert.ok(match, e);
        return JSON.parse(match[1]);
      });
      assert.ok(messages.length >= 3, body);
      const notes = messages.slice(0, -1);
      notes.forEach((n, i) => {
        assert.deepEqual(n, {
          jsonrpc: '2.0', method: 'notifications/progress',
          params: { progressToken: 'p-1', progress: i + 1, message: `running for ${i + 1} s` },
        });
      });
      const answer = messages.at(-1);
      assert.equal(answer.id, 1);
      assert.equal(answer.result.structuredContent.result, 1);
      // Keep-alive: the connection serves the next request as before.
      connection.buffer = Buffer.alloc(0);
      const ping = await connection.exchange(post(server.port, { jsonrpc: '2.0', id: 2, method: 'ping' }, headers));
      assert.equal(ping.status, 200);
      assert.deepEqual(JSON.parse(ping.body), { jsonrpc: '2.0', id: 2, result: {} });
    } finally {
      connection.destroy();
    }
  });

  test('without a token, or from a JSON-only client, the answer is one JSON response as before', async () => {
    for (const [call, accept] of [[slowCall(3, undefined, 1300), undefined], [slowCall(4, 7, 1300), 'application/json']]) {
      const response = await rawExchange(server.port, post(server.port, call, { ...headers, ...(accept ? { Accept: accept } : {}) }));
      assert.equal(response.status, 200);
      assert.equal(response.headers['content-type'], 'application/json');
      assert.equal(response.headers['transfer-encoding'], undefined);
      const body = JSON.parse(response.body);
      assert.equal(body.id, call.id);
      assert.equal(body.result.structuredContent.result, 1);
    }
  });

  test('a client that hangs up mid-stream cancels the call', async () => {
    const connection = new RawConnection(server.port);
    connection.write(post(server.port, slowCall(5, 'p-5', 8000), headers));
    await until(connection, () => connection.buffer.includes('notifications/progress'));
    connection.destroy();
    await server.waitFor(/call 5 cancelled: the client went away/);
    await server.waitFor(/tools\/call search id=5: runtime in/);
  });
});
