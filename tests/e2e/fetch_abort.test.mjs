// An AbortSignal reaches the host: a fetch the code gives up on is stopped in the daemon too. The
// upstream holds /hold/… for good, and sees its connection closed when the code's signal aborts
// or the call ends with the fetch in flight (long before the call's 30 s wall limit would close
// it); the call returns promptly, the ledger says aborted, and the next call is served.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR, run } from './harness.mjs';

const SLOWER = process.env.CODEMODE_SANITIZED === '1' ? 3 : 1;

// /hold/… never answers; each held request is noted with a promise of its connection's close.
// /sync?after=URL answers once a request for URL is held (so the code knows it left). /ok answers
// at once.
async function startUpstream() {
  const server = createServer((req, res) => {
    if (req.url.startsWith('/hold')) {
      const closed = new Promise((resolve) => req.socket.once('close', resolve));
      server.held.push({ url: req.url, closed });
      server.emit('held', req.url);
      return;
    }
    if (req.url.startsWith('/sync')) {
      const after = new URL(req.url, 'http://x').searchParams.get('after');
      const answer = () => { res.writeHead(200); res.end(); };
      if (server.held.some((h) => h.url === after)) return answer();
      const onHeld = (url) => { if (url === after) { server.off('held', onHeld); answer(); } };
      return server.on('held', onHeld);
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: true }));
  });
  server.held = [];
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

// `promise`, or a failure naming `what` after `ms` (the bound on an event, not a wait for it).
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe('an aborted fetch is stopped in the host', () => {
  let upstream, client, config;
  before(async () => {
    upstream = await startUpstream();
    const dir = mkdtempSync(join(tmpdir(), 'codemode-abort-'));
    config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      upstreams: [{ origin: `http://127.0.0.1:${upstream.address().port}` }],
      limits: { wall_ms: 30000 },
      audit: { sqlite: 'audit.db' },
    }));
    client = new Client({ name: 'fetch-abort-e2e', version: '1' });
    const transport = new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'ignore' });
    await client.connect(transport);
  });
  after(async () => {
    await client?.close();
    upstream.closeAllConnections();
    upstream.close();
  });

  const execute = (code) => client.callTool({ name: 'execute', arguments: { code } });

  test('AbortSignal.timeout: the call returns, the upstream connection closes, the next call is served', async () => {
    const started = Date.now();
    const r = await execute(`async () => {
      try { await fetch('/hold/timeout', { signal: AbortSignal.timeout(150) }); return 'answered'; }
      catch (e) { return e.name; }
    }`);
    assert.equal(r.isError, undefined, r.content[0].text);
    assert.equal(r.structuredContent.result, 'TimeoutError');
    assert.ok(Date.now() - started < 1500 * SLOWER, `the call took ${Date.now() - started} ms`);
    const held = upstream.held.find((h) => h.url === '/hold/timeout');
    assert.ok(held, 'the request reached the upstream');
    await within(held.closed, 5000 * SLOWER, 'the upstream connection closed');
    const record = r.structuredContent.requests.find((q) => q.path === '/hold/timeout');
    assert.equal(record.error, "runtime: aborted by the code's AbortSignal before its response");
    const next = await execute("async () => (await fetch('/ok')).json()");
    assert.equal(next.isError, undefined, next.content[0].text);
    assert.deepEqual(next.structuredContent.result, { ok: true });
  });

  test('controller.abort() once the request is on the wire', async () => {
    const r = await execute(`async () => {
      const controller = new AbortController();
      const pending = fetch('/hold/controller', { signal: controller.signal });
      setTimeout(() => controller.abort(), 100);
      try { await pending; return 'answered'; } catch (e) { return e.name; }
    }`);
    assert.equal(r.structuredContent.result, 'AbortError', r.content[0].text);
    const held = upstream.held.find((h) => h.url === '/hold/controller');
    assert.ok(held, 'the request reached the upstream');
    await within(held.closed, 5000 * SLOWER, 'the upstream connection closed');
    const next = await execute("async () => (await fetch('/ok')).status");
    assert.equal(next.structuredContent.result, 200, next.content[0].text);
  });

  test('the call ending with a fetch left behind stops it', async () => {
    const left = await execute(`async () => {
      fetch('/hold/left').catch(() => {});
      await fetch('/sync?after=/hold/left');
      return 'done';
    }`);
    assert.equal(left.structuredContent.result, 'done', left.content[0].text);
    const behind = upstream.held.find((h) => h.url === '/hold/left');
    // Well before the gateway's own deadline (the wall limit, 30 s) would close it.
    await within(behind.closed, 5000 * SLOWER, 'the upstream connection closed after the call');
    // The ledger says what the call saw: no answer before it ended.
    const record = left.structuredContent.requests.find((q) => q.path === '/hold/left');
    assert.equal(record.status, 0);
    assert.equal(record.error, undefined);
    const next = await execute("async () => (await fetch('/ok')).status");
    assert.equal(next.structuredContent.result, 200, next.content[0].text);
  });

  test('the client cancelling the call stops its fetch', async () => {
    const reached = once(upstream, 'held');
    const controller = new AbortController();
    const call = client.callTool({ name: 'execute', arguments: { code: "async () => (await fetch('/hold/cancel')).status" } },
      undefined, { signal: controller.signal });
    await within(reached, 5000 * SLOWER, 'the request reached the upstream');
    controller.abort();
    await assert.rejects(call);
    const held = upstream.held.find((h) => h.url === '/hold/cancel');
    await within(held.closed, 5000 * SLOWER, 'the upstream connection closed after the cancel');
    const next = await execute("async () => (await fetch('/ok')).status");
    assert.equal(next.structuredContent.result, 200, next.content[0].text);
  });

  test('the audit trail records each stopped request as aborted', async () => {
    await client.close();  // the trail is complete once the server has stopped
    client = null;
    const r = await run(['audit', '--config', config, 'query', '--kind', 'request']);
    assert.equal(r.code, 0, r.stderr);
    const requests = r.stdout.trim().split('\n').map((line) => JSON.parse(line));
    for (const path of ['/hold/timeout', '/hold/controller', '/hold/left', '/hold/cancel']) {
      const record = requests.find((q) => q.path === path);
      assert.ok(record, `no record of ${path}`);
      assert.match(record.refusal, /^runtime: request to http:\/\/127\.0\.0\.1:\d+ aborted/, path);
      assert.equal(record.status, 0);
    }
  });
});
