// Several APIs and approvals (MCP 2026-07-28, multi round-trip requests), with raw requests to the
// real binary: two APIs that ask before a write, configured with the same approval_key (a copied
// config). The requestState one API's call hands out never answers for the other's writes: sent
// to the other API's path it is refused, and nothing is written there.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { startHttpServer, writeConfig, rawExchange, post } from './http_harness.mjs';
import { SOURCE_DIR } from './harness.mjs';

const MARKETHUB = join(SOURCE_DIR, 'fixtures/markethub/openapi.json');
const TOKEN = 'alice-apis-approvals-0123456789abcdef';
const KEY = 'c3'.repeat(32);

async function recordingUpstream() {
  const seen = [];
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, path: req.url, body });
      res.writeHead(req.method === 'GET' ? 200 : 201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ n: seen.length }));
    });
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  return { seen, origin: `http://127.0.0.1:${http.address().port}`, close: () => new Promise((r) => http.close(r)) };
}

const upstreams = {};
let server;

before(async () => {
  upstreams.a = await recordingUpstream();
  upstreams.b = await recordingUpstream();
  const api = (name) => ({
    openapi: MARKETHUB,
    upstreams: [{ origin: upstreams[name].origin }],
    policy: { approve: { operations: ['createOrder'] }, approval_key: KEY },
  });
  const config = writeConfig({
    openapi: undefined,
    apis: { a: api('a'), b: api('b') },
    http: { tokens: [{ name: 'alice', token: TOKEN }] },
  });
  server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config]);
});
after(async () => {
  await server.stop();
  await upstreams.a.close();
  await upstreams.b.close();
});

let nextId = 0;
// One 2026-07-28 tools/call of execute at API `api`'s path; resolves with the JSON-RPC response.
async function call(api, code, extra = {}) {
  const id = ++nextId;
  const message = {
    jsonrpc: '2.0', id, method: 'tools/call',
    params: {
      name: 'execute', arguments: { code }, ...extra,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
        'io.modelcontextprotocol/clientInfo': { name: 'apis-approvals-e2e', version: '1' },
      },
    },
  };
  const bytes = post(server.port, message, {
    Authorization: `Bearer ${TOKEN}`, 'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': 'tools/call', 'Mcp-Name': 'execute',
  }).replace('POST /mcp ', `POST /mcp/${api} `);
  const response = await rawExchange(server.port, bytes);
  assert.equal(response.status, 200, response.body);
  const body = JSON.parse(response.body);
  assert.equal(body.id, id);
  return body;
}

const WRITE = `async () => (await fetch('/orders', { method: 'POST', body: '{"order":"A"}' })).status`;
const posts = (api) => upstreams[api].seen.filter((r) => r.method === 'POST');
const acceptAll = (result) =>
  Object.fromEntries(Object.keys(result.inputRequests).map((key) => [key, { action: 'accept' }]));

test('API a\'s approval, sent to API b, is refused there and writes nothing', async () => {
  const asked = (await call('a', WRITE)).result;
  assert.equal(asked.resultType, 'input_required');
  assert.equal(posts('a').length, 0);

  const elsewhere = await call('b', WRITE, { requestState: asked.requestState, inputResponses: acceptAll(asked) });
  assert.equal(elsewhere.error?.code, -32602, JSON.stringify(elsewhere));
  assert.match(elsewhere.error.message, /requestState was issued for another API/);
  assert.equal(posts('b').length, 0, 'nothing written at b');

  // At its own API the same answer is still good (a refusal elsewhere did not spend it).
  const done = (await call('a', WRITE, { requestState: asked.requestState, inputResponses: acceptAll(asked) })).result;
  assert.equal(done.resultType, 'complete');
  assert.equal(JSON.parse(done.content[0].text), 201);
  assert.deepEqual(posts('a').map((r) => r.body), ['{"order":"A"}']);
  assert.equal(posts('b').length, 0);
});
