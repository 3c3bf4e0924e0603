// Hostile or careless upstreams through the real binary: two MCP clients share one codemode-mcp
// over HTTP, and with it the gateway's keep-alive pool; what one upstream answer does must not
// reach the other client, nor carry the configured credential to either.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHttpServer, writeConfig } from './http_harness.mjs';

const TOKEN = 'Bearer e2e-hostile-secret-0123456789';
const SECRET_WORD = 'e2e-hostile-secret-0123456789';

let upstream;
let server;
const clients = [];

// /private/WHO: 103 Early Hints first (as node's writeEarlyHints, nginx and CDNs send them), then
// the 200 with WHO's private body once the connection carries its next request, or after 300 ms.
// A client that takes the 103 as the answer pools the connection, and the next request on it,
// possibly another client's, reads WHO's 200.
// /reflect: a same-origin 302 whose Location carries the Authorization header it received.
function startUpstream() {
  const waiting = new Map();  // socket -> sends the held 200
  const http = createServer((req, res) => {
    waiting.get(req.socket)?.();
    if (req.url.startsWith('/private/')) {
      const who = req.url.slice('/private/'.length);
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      const send = () => {
        waiting.delete(req.socket);
        clearTimeout(timer);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ owner: who, note: `private to ${who}` }));
      };
      const timer = setTimeout(send, 300);
      waiting.set(req.socket, send);
    } else if (req.url === '/public') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ owner: 'public' }));
    } else if (req.url === '/reflect') {
      res.writeHead(302, { location: `/landed?auth=${encodeURIComponent(req.headers.authorization)}` });
      res.end();
    } else if (req.url.startsWith('/landed')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('landed');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  http.keepAliveTimeout = 10000;
  http.listen(0, '127.0.0.1');
  return http;
}

async function connect(url) {
  const client = new Client({ name: 'gateway-hostile-e2e', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

async function execute(client, code) {
  const result = await client.callTool({ name: 'execute', arguments: { code } });
  assert.equal(result.isError, undefined, result.content[0].text);
  return result.structuredContent.result;
}

before(async () => {
  upstream = startUpstream();
  await once(upstream, 'listening');
  const origin = `http://127.0.0.1:${upstream.address().port}`;
  const config = writeConfig({ upstreams: [{ origin, headers: { Authorization: TOKEN } }] });
  server = await startHttpServer(['--http', ':0', '--config', config]);
});

after(async () => {
  for (const client of clients) await client.close();
  if (server) assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.stderr);
  upstream?.closeAllConnections();
  upstream?.close();
});

test('a credential reflected into a same-origin redirect does not reach response.url', async () => {
  const client = await connect(server.url);
  const r = await execute(client,
    "async () => { const r = await fetch('/reflect'); return { status: r.status, url: r.url, redirected: r.redirected }; }");
  assert.equal(r.status, 200);
  assert.equal(r.redirected, true);
  assert.ok(!decodeURIComponent(r.url).includes(SECRET_WORD), r.url);
  assert.match(r.url, /\/landed\?auth=/);
  assert.ok(decodeURIComponent(r.url).includes('[redacted]'), r.url);
});

test('an upstream that sends 103 Early Hints: each client gets its own response', async () => {
  const alice = await connect(server.url);
  const bob = await connect(server.url);
  const read = (path) => `async () => { const r = await fetch('${path}'); return { status: r.status, body: await r.text() }; }`;
  for (let round = 0; round < 2; round++) {
    const mine = await execute(alice, read('/private/alice'));
    const theirs = await execute(bob, read('/public'));
    assert.deepEqual({ mine, theirs }, {
      mine: { status: 200, body: JSON.stringify({ owner: 'alice', note: 'private to alice' }) },
      theirs: { status: 200, body: JSON.stringify({ owner: 'public' }) },
    });
  }
});
