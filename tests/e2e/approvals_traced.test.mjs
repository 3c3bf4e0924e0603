// Approvals of traced calls, through the real binary (issue 34, finding 11). A traced call's
// requests carry the host's `traceparent` (a new span id per request); that header is the
// server's, not the code's, so it is neither shown in the question nor part of what an answer
// approves: a 2026-07-28 retry finds its approval, and a session's question shows only what the
// code set. Traced both ways: the client's `_meta.traceparent`, and `tracing` in the config (a
// new trace per call). An upstream records every request and the trace headers it carries; a
// loopback collector takes the spans.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { BIN } from './harness.mjs';
import { startHttpServer, writeConfig, rawExchange, post } from './http_harness.mjs';

const TOKEN = 'alice-traced-token-0123456789abcdef';
const KEY = 'b2'.repeat(32);

let upstream;
let collector;
let config;
let server;

// Records (method, path, body, traceparent) of every request; answers 201 (GET: 200).
async function recordingUpstream() {
  const seen = [];
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, path: req.url, body, traceparent: req.headers.traceparent });
      res.writeHead(req.method === 'GET' ? 200 : 201, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return { seen, origin: `http://127.0.0.1:${http.address().port}`, close: () => new Promise((r) => http.close(r)) };
}

// An OTLP/HTTP collector that takes everything.
async function startCollector() {
  const http = createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json' }); res.end('{}'); });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  return { url: `http://127.0.0.1:${http.address().port}/v1/traces`, close: () => new Promise((r) => http.close(r)) };
}

before(async () => {
  upstream = await recordingUpstream();
  collector = await startCollector();
  config = writeConfig({
    upstreams: [{ origin: upstream.origin }],
    http: { tokens: [{ name: 'alice', token: TOKEN }] },
    policy: { approve: { operations: ['createOrder'] }, approval_timeout_ms: 60000, approval_key: KEY },
    tracing: { otlp: collector.url },
  });
  server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config]);
});
after(async () => {
  await server.stop();
  await upstream.close();
  await collector.close();
});

// A traceparent as a client makes one: a new span id for every request it sends.
const traceparent = (trace) => `00-${trace}-${randomBytes(8).toString('hex')}-01`;

let nextId = 0;
// One 2026-07-28 tools/call of execute; `meta`: more of params._meta. Resolves with the result.
async function call(code, extra = {}, meta = {}) {
  const id = ++nextId;
  const message = {
    jsonrpc: '2.0', id, method: 'tools/call',
    params: {
      name: 'execute', arguments: { code }, ...extra,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
        'io.modelcontextprotocol/clientInfo': { name: 'traced-e2e', version: '1' },
        ...meta,
      },
    },
  };
  const response = await rawExchange(server.port, post(server.port, message, {
    Authorization: `Bearer ${TOKEN}`, 'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': 'tools/call', 'Mcp-Name': 'execute',
  }));
  const body = JSON.parse(response.body);
  assert.equal(body.id, id, response.body);
  return body.result;
}

const approveAll = (result) =>
  Object.fromEntries(Object.keys(result.inputRequests).map((key) => [key, { action: 'accept' }]));

const posted = (marker) => upstream.seen.filter((r) => r.method === 'POST' && r.body.includes(marker));

// One write, asked about, approved, sent once: the retry finds its approval although the host's
// traceparent on the request is new in every round.
async function approvedOnce(marker, meta) {
  const code = `async () => (await fetch('/orders', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"order":"${marker}"}' })).status`;
  const first = await call(code, {}, meta());
  assert.equal(first.resultType, 'input_required', JSON.stringify(first));
  const message = Object.values(first.inputRequests)[0].params.message;
  assert.match(message, new RegExp(`\\{"order":"${marker}"\\}`));
  assert.doesNotMatch(message, /traceparent|tracestate/i, 'the host\'s trace headers are not the code\'s');
  const second = await call(code, { requestState: first.requestState, inputResponses: approveAll(first) }, meta());
  // On 7d258f9 this asked again, for ever: the digest held the round's own span id.
  assert.equal(second.resultType, 'complete', JSON.stringify(second));
  assert.equal(second.content[0].text, '201');
  const sent = posted(marker);
  assert.equal(sent.length, 1, 'sent once');
  assert.match(sent[0].traceparent ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/, 'still passed on upstream');
}

test('a call traced by the client\'s _meta.traceparent: the approval completes', async () => {
  const trace = randomBytes(16).toString('hex');
  await approvedOnce('M', () => ({ traceparent: traceparent(trace) }));
  assert.equal(posted('M')[0].traceparent.slice(3, 35), trace);
});

test('a call traced because the config has tracing: the approval completes', async () => {
  await approvedOnce('T', () => ({}));
});

test('a session\'s question shows only the headers the code set', async () => {
  const client = new Client({ name: 'traced-e2e', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: 'accept' };
  });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'pipe' }));
  try {
    const result = await client.callTool({
      name: 'execute',
      arguments: { code: "async () => (await fetch('/orders', { method: 'POST', headers: { 'x-tenant': 't1' }, body: '{\"order\":\"S\"}' })).status" },
    });
    assert.equal(result.content[0].text, '201', JSON.stringify(result));
    assert.equal(asked.length, 1);
    assert.match(asked[0], /Headers:\nx-tenant: t1/);
    assert.doesNotMatch(asked[0], /traceparent|tracestate/i);
    assert.ok(posted('"S"')[0].traceparent, 'the request itself is traced');
  } finally {
    await client.close();
  }
});
