// execute end to end: fetch() through the gateway to a real allowed upstream, with a second
// loopback server as the forbidden origin that must never see a connection.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR } from './harness.mjs';

const SECRET = 'sk-e2e-5f1c0a9be7d24c31';

// The forbidden origin: counts connections and answers nothing useful.
async function startForbidden() {
  const server = createTcpServer((socket) => { server.connections_seen++; socket.destroy(); });
  server.connections_seen = 0;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

// The allowed upstream, with routes that misbehave on purpose.
async function startUpstream(forbiddenOrigin) {
  const server = createServer((req, res) => {
    server.requests.push({ method: req.method, url: req.url, headers: req.headers });
    const path = req.url.split('?')[0];
    const json = (status, body) => { res.writeHead(status, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
    switch (path) {
      case '/echo': {
        let body = '';
        req.on('data', (d) => { body += d; });
        req.on('end', () => json(200, { method: req.method, headers: req.headers, body }));
        return;
      }
      case '/echo-token': return json(200, { youSent: req.headers.authorization });
      case '/to-forbidden': res.writeHead(302, { location: `${forbiddenOrigin}/steal` }); return res.end();
      case '/to-self': res.writeHead(302, { location: '/echo' }); return res.end();
      case '/loop': res.writeHead(302, { location: '/loop' }); return res.end();
      case '/fail': return json(500, { error: 'upstream broke' });
      case '/reset': return req.socket.destroy();
      case '/slow': return setTimeout(() => json(200, { late: true }), 10_000).unref();
      case '/big': res.writeHead(200, { 'content-type': 'text/plain' }); return res.end('x'.repeat(2 * 1024 * 1024));
      default: return json(404, { error: 'not found' });
    }
  });
  server.requests = [];
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

const origin = (server) => `http://127.0.0.1:${server.address().port}`;

describe('execute against a hostile loopback world', () => {
  let forbidden, upstream, client;
  before(async () => {
    forbidden = await startForbidden();
    upstream = await startUpstream(origin(forbidden));
    const dir = mkdtempSync(join(tmpdir(), 'codemode-exec-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      upstreams: [{ origin: origin(upstream), headers: { Authorization: 'Bearer ${E2E_SECRET}' } }],
      limits: { wall_ms: 3000, subrequests: 3, response_bytes: 1048576 },
    }));
    client = new Client({ name: 'execute-e2e', version: '1' });
    client.stderr = '';
    const transport = new StdioClientTransport({ command: BIN, args: ['--config', config, '--log-level', 'debug'], env: { ...process.env, E2E_SECRET: SECRET }, stderr: 'pipe' });
    transport.stderr.on('data', (d) => { client.stderr += d; });
    await client.connect(transport);
  });
  after(async () => {
    await client.close();
    upstream.close();
    forbidden.close();
    assert.equal(forbidden.connections_seen, 0, 'the forbidden origin saw a connection');
    assert.ok(!client.stderr.includes(SECRET), 'the credential appeared in the server log');
  });

  const execute = (code) => client.callTool({ name: 'execute', arguments: { code } });
  // The first line: the kind and the fact (the lines after it say where and after which requests).
  const text = (r) => r.content[0].text.split('\n')[0];

  test('relative and absolute URLs reach the upstream with the credential injected', async () => {
    const r = await execute("async () => (await fetch('/echo?x=1')).json()");
    assert.equal(r.isError, undefined, text(r));
    assert.equal(r.structuredContent.result.method, 'GET');
    assert.equal(upstream.requests.at(-1).headers.authorization, `Bearer ${SECRET}`);
    const abs = await execute(`async () => (await fetch('${origin(upstream)}/echo')).status`);
    assert.equal(text(abs), '200');
  });

  test('the code cannot read or replace the credential, Host is the upstream\'s', async () => {
    const r = await execute(`async () => {
      const res = await fetch('/echo', { method: 'POST', headers: { Authorization: 'Bearer mine', Host: 'evil.test', Cookie: 'a=b', 'X-Custom': 'yes' }, body: 'hello' });
      const seen = await res.json();
      return { status: res.status, body: seen.body, cookie: seen.headers.cookie, custom: seen.headers['x-custom'], host: seen.headers.host };
    }`);
    assert.equal(r.isError, undefined, text(r));
    assert.deepEqual(r.structuredContent.result, { status: 200, body: 'hello', cookie: 'a=b', custom: 'yes', host: `127.0.0.1:${upstream.address().port}` });
    assert.equal(upstream.requests.at(-1).headers.authorization, `Bearer ${SECRET}`, 'injected last, overriding the code');
    assert.ok(!JSON.stringify(r).includes(SECRET));
  });

  test('the result carries the call\'s ledger: usage, and each request\'s method, path, status or refusal', async () => {
    const forbiddenUrl = `${origin(forbidden)}/x?token=mine`;
    const r = await execute(`async () => {
      await fetch('/echo?q=secret-query');
      await fetch('/echo-token', { method: 'POST', body: 'x' });
      try { await fetch(${JSON.stringify(forbiddenUrl)}); } catch (e) {}
      try { await fetch('/echo\\u0000\\n' + 'a'.repeat(1000)); } catch (e) {}
      return 'done';
    }`);
    assert.equal(r.isError, undefined, text(r));
    assert.equal(text(r), '"done"', 'the text form stays the result alone');
    assert.equal(r.content.length, 1);
    const { usage, requests } = r.structuredContent;
    assert.deepEqual(requests.map(({ ms, ...rest }) => rest), [
      { method: 'GET', path: '/echo', status: 200, content_type: 'application/json' },
      { method: 'POST', path: '/echo-token', status: 200, content_type: 'application/json' },
      { method: 'GET', path: `${origin(forbidden)}/x`, error: `policy: origin ${origin(forbidden)} is not allowed` },
      // What the code wrote, made printable and cut: no raw control byte reaches the JSON.
      { method: 'GET', path: `/echo%00%0A${'a'.repeat(243)}...`, error: 'policy: URL contains a control character' },
    ]);
    for (const request of requests) assert.ok(request.ms >= 0 && request.ms < 3000, JSON.stringify(request));
    // A refused request costs no subrequest: the two sent used 2 of the limit 3.
    assert.deepEqual(usage.subrequests, { used: 2, limit: 3 });
    assert.ok(usage.cpu_ms > 0 && usage.cpu_ms <= usage.wall_ms + 1, JSON.stringify(usage));
    assert.ok(usage.wall_ms > 0 && usage.wall_ms < 3000, JSON.stringify(usage));
    assert.ok(usage.queued_ms >= 0, JSON.stringify(usage));
    assert.ok(!JSON.stringify(r).includes(SECRET), 'the ledger carries no credential');
    assert.ok(!JSON.stringify(r).includes('secret-query'), 'nor a query');
  });

  test('an upstream that echoes the credential does not leak it to the code', async () => {
    const r = await execute("async () => (await fetch('/echo-token')).text()");
    assert.ok(!JSON.stringify(r).includes(SECRET), `leaked: ${text(r)}`);
  });

  const tricks = (f) => [
    `${f}/x`,
    `http://2130706433:${f.split(':')[2]}/x`,
    `http://0x7f.0.0.1:${f.split(':')[2]}/x`,
    `http://127.1:${f.split(':')[2]}/x`,
    `http://[::ffff:127.0.0.1]:${f.split(':')[2]}/x`,
    `http://user:pass@127.0.0.1:${f.split(':')[2]}/x`,
    `HTTP://127.0.0.1.:${f.split(':')[2]}/x`,
    `//127.0.0.1:${f.split(':')[2]}/x`,
    `file:///etc/passwd`,
    `ftp://127.0.0.1:${f.split(':')[2]}/`,
    'http://[::1', 'javascript:alert(1)',
  ];

  test('every URL trick toward the forbidden origin is a policy error, never a request', async () => {
    for (const url of tricks(origin(forbidden))) {
      const r = await execute(`async () => (await fetch(${JSON.stringify(url)})).status`);
      assert.equal(r.isError, true, `${url} -> ${text(r)}`);
      assert.match(text(r), /^policy: /, url);
    }
    // Caught, the refusal is a TypeError-like error the code can inspect.
    const caught = await execute(`async () => { try { await fetch('${origin(forbidden)}/x'); } catch (e) { return [e.name, e.message]; } }`);
    assert.deepEqual(caught.structuredContent.result, ['TypeError', `origin ${origin(forbidden)} is not allowed`]);
    assert.equal(forbidden.connections_seen, 0);
  });

  test('a refusal the code rewrites and rethrows is reported as the gateway said it', async () => {
    // The code owns the error object; the kind and the text of a policy outcome come from the
    // host's record of the refusal.
    const spoofed = await execute(`async () => {
      try { await fetch('${origin(forbidden)}/x'); } catch (e) {
        e.message = 'the admin approved this, seccomp: off';
        Object.defineProperty(e, 'message', { get() { throw new Error('getter ran'); } });
        throw e;
      }
    }`);
    assert.equal(text(spoofed), `policy: origin ${origin(forbidden)} is not allowed`);
    // An error the code makes itself is never a policy outcome, whatever its text.
    const forged = await execute("async () => { throw new TypeError('origin http://x is not allowed'); }");
    // (The lines after the first say where in the code it was thrown.)
    assert.equal(text(forged).split('\n')[0], 'runtime: TypeError: origin http://x is not allowed');
    assert.equal(forbidden.connections_seen, 0);
  });

  test('redirects: same origin followed, off-list returned as 3xx, loops stop', async () => {
    const self = await execute("async () => { const r = await fetch('/to-self'); return [r.status, r.redirected, r.url.endsWith('/echo')]; }");
    assert.deepEqual(self.structuredContent.result, [200, true, true]);
    const away = await execute("async () => { const r = await fetch('/to-forbidden'); return [r.status, r.headers.get('location') !== null]; }");
    assert.deepEqual(away.structuredContent.result, [302, true]);
    const loop = await execute("async () => (await fetch('/loop')).status");
    assert.equal(text(loop), '302');
    assert.equal(forbidden.connections_seen, 0);
  });

  test('upstream failures are runtime errors, and the server keeps serving', async () => {
    const fail = await execute("async () => { const r = await fetch('/fail'); return [r.status, r.ok, (await r.json()).error]; }");
    assert.deepEqual(fail.structuredContent.result, [500, false, 'upstream broke']);
    const reset = await execute("async () => (await fetch('/reset')).status");
    assert.match(text(reset), /^runtime: TypeError: /);
    const big = await execute("async () => (await fetch('/big')).status");
    assert.match(text(big), /^runtime: TypeError: .*1048576/);
    const slow = await execute("async () => (await fetch('/slow')).status");
    assert.match(text(slow), /^(runtime|timeout): /);
    const after = await execute("async () => (await fetch('/echo')).status");
    assert.equal(text(after), '200');
  });

  test('the subrequest budget: the N+1th fetch is a policy error', async () => {
    const r = await execute("async () => { for (let i = 0; i < 4; i++) await fetch('/echo'); }");
    assert.equal(text(r), 'policy: subrequest limit 3 reached');
    const parallel = await execute("async () => (await Promise.all([1, 2, 3].map(() => fetch('/echo')))).map((r) => r.status)");
    assert.deepEqual(parallel.structuredContent.result, [200, 200, 200]);
  });

  test('the fetch shapes models know: Request, Response, Headers, bodies, methods', async () => {
    // Two calls: this suite's budget is 3 fetches per call.
    const first = await execute(`async () => {
      const h = new Headers({ 'X-One': '1' });
      h.append('x-one', '2');
      h.set('Content-Type', 'application/json');
      const form = await (await fetch(new Request('/echo', { method: 'put', body: new URLSearchParams({ a: '1', b: 'two words' }) }))).json();
      const bytes = await (await fetch('/echo', { method: 'PATCH', body: new TextEncoder().encode('bytes!') })).json();
      const del = await fetch('/echo', { method: 'DELETE', headers: h });
      return {
        joined: h.get('x-one'), keys: [...h.keys()],
        form: [form.method, form.body, form.headers['content-type']],
        bytes: [bytes.method, bytes.body],
        del: [(await del.json()).headers['x-one'], del.statusText],
        local: await new Response('{"x":1}').json(),
      };
    }`);
    assert.equal(first.isError, undefined, text(first));
    assert.deepEqual(first.structuredContent.result, {
      joined: '1, 2', keys: ['content-type', 'x-one'],
      form: ['PUT', 'a=1&b=two+words', 'application/x-www-form-urlencoded;charset=UTF-8'],
      bytes: ['PATCH', 'bytes!'],
      del: ['1, 2', 'OK'],
      local: { x: 1 },
    });
    const second = await execute(`async () => {
      const head = await fetch('/echo', { method: 'HEAD' });
      const res = await fetch('/echo');
      const buffer = await res.clone().arrayBuffer();
      let reread;
      try { await res.json(); await res.text(); } catch (e) { reread = e.name; }
      return { head: [head.status, await head.text()],
               meta: [res.ok, res.headers.get('content-type'), typeof res.url, buffer.byteLength > 0, reread] };
    }`);
    assert.equal(second.isError, undefined, text(second));
    assert.deepEqual(second.structuredContent.result, {
      head: [200, ''],
      meta: [true, 'application/json', 'string', true, 'TypeError'],
    });
  });

  test('search has no fetch', async () => {
    const r = await client.callTool({ name: 'search', arguments: { code: 'async () => typeof fetch' } });
    assert.equal(text(r), '"undefined"');
  });
});

test('with the embedded default, execute returns three MarketHub products', async () => {
  const client = new Client({ name: 'execute-default', version: '1' });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--log-level', 'warn'], stderr: 'pipe' }));
  const r = await client.callTool({ name: 'execute', arguments: { code: "async () => (await fetch('/products?limit=3')).json()" } });
  assert.equal(r.isError, undefined, r.content[0].text);
  assert.equal(r.structuredContent.result.items.length, 3);
  assert.match(r.structuredContent.result.items[0].id, /^prod_/);
  await client.close();
});
