// The newcomer's path (issue 37, item 8): what someone trying the server for the first time
// meets before any tool call: a port already taken says why, and the start-up log names where
// `execute` goes and which headers it injects, never their values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, SOURCE_DIR } from './harness.mjs';

test('a port already in use is named as such, not "Success"', async () => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  try {
    const { code, stderr } = await run(['--http', `127.0.0.1:${taken.address().port}`]);
    assert.equal(code, 2);
    assert.match(stderr, /cannot bind http:\/\/127\.0\.0\.1:\d+\/mcp: Address already in use \(another process listens there/);
    assert.doesNotMatch(stderr, /Success/);
  } finally {
    taken.close();
  }
});

test('the start-up log names where execute goes and what it injects, never a value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-newcomer-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    upstreams: [{ origin: 'http://127.0.0.1:9', base_path: '/api', headers: { 'X-Key': '${NEWCOMER_KEY}' },
                  query: { api_key: '${NEWCOMER_KEY}' } },
                { origin: 'https://other.example', basic: { user: 'u', password: '${NEWCOMER_KEY}' } }],
  }));
  const secret = 'newcomer-secret-51c0';
  const { stderr } = await run(['--config', config], { env: { NEWCOMER_KEY: secret } });
  assert.match(stderr, /execute may call http:\/\/127\.0\.0\.1:9; relative URLs go to http:\/\/127\.0\.0\.1:9\/api\/ \(upstreams\[0\]\.base_path\); injects X-Key, \?api_key/);
  assert.match(stderr, /execute may call https:\/\/other\.example; injects Authorization/);
  assert.ok(!stderr.includes(secret));

  writeFileSync(config, JSON.stringify({ openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json') }));
  const none = await run(['--config', config]);
  assert.match(none.stderr, /warning no upstreams: every execute request is refused; add "upstreams": \[\{"origin": "https:\/\/api\.example\.com"\}\] to the config/);
});

test('the start-up log warns when the upstreams look unlike the description\'s servers', async () => {
  // MarketHub's description names one server, http://127.0.0.1:8788, with no base path.
  const dir = mkdtempSync(join(tmpdir(), 'codemode-newcomer-'));
  const config = join(dir, 'config.json');
  const openapi = join(SOURCE_DIR, 'fixtures/markethub/openapi.json');
  writeFileSync(config, JSON.stringify({ openapi, upstreams: [{ origin: 'http://127.0.0.1:9', base_path: '/api' }] }));
  const unlike = await run(['--config', config]);
  assert.match(unlike.stderr, /warning upstreams: http:\/\/127\.0\.0\.1:9 is not among the description's servers \(http:\/\/127\.0\.0\.1:8788\); the code is told to use relative URLs/);
  assert.match(unlike.stderr, /warning upstreams\[0\]\.base_path: \/api is not the path of the description's servers \(\/\); relative URLs go under \/api/);

  writeFileSync(config, JSON.stringify({ openapi, upstreams: [{ origin: 'http://127.0.0.1:8788' }] }));
  const alike = await run(['--config', config]);
  assert.match(alike.stderr, /execute may call http:\/\/127\.0\.0\.1:8788/);
  assert.doesNotMatch(alike.stderr, /servers/);

  // The built-in demo serves on a port of its own: it does not warn.
  const demo = await run([]);
  assert.doesNotMatch(demo.stderr, /warning/);
});

test('the MCP Inspector on localhost may connect with the default config', async () => {
  const { spawn } = await import('node:child_process');
  const { BIN } = await import('./harness.mjs');
  const proc = spawn(BIN, ['--http', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    let stderr = '';
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line: ${stderr}`)), 20000);
      proc.stderr.on('data', (d) => {
        stderr += d;
        const match = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
        if (match) { clearTimeout(timer); resolve(match[1]); }
      });
    });
    const initialize = (origin) => fetch(url, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
                             params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'inspector', version: '1' } } }),
    });
    assert.equal((await initialize('http://localhost:6274')).status, 200);
    const refused = await initialize('http://localhost:3000');
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /http\.allowed_origins/);
  } finally {
    proc.kill('SIGTERM');
    await once(proc, 'exit');
  }
});

test('the SDK client\'s optional GET stream is refused without an info line', async () => {
  const { startHttpServer } = await import('./http_harness.mjs');
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const server = await startHttpServer(['--http', '127.0.0.1:0', '--log-level', 'debug']);
  const client = new Client({ name: 'newcomer-e2e', version: '1' });
  try {
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    // The SDK opens its GET stream after initialize; the refusal is logged at debug.
    await server.waitFor(/debug http 405 from [^\n]*: method not allowed: \/mcp takes POST, DELETE/);
    assert.doesNotMatch(server.stderr, /info http 405/);
    // Another method is still worth an info line.
    const put = await fetch(server.url, { method: 'PUT' });
    assert.equal(put.status, 405);
    await server.waitFor(/info http 405 from [^\n]*: method not allowed/);
  } finally {
    await client.close();
    await server.stop();
  }
});

test('a config\'s name is the server\'s name to its client, so two instances tell apart', async () => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const { BIN } = await import('./harness.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'codemode-newcomer-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ name: 'stripe-test', openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json') }));
  const client = new Client({ name: 'newcomer-e2e', version: '1' });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'ignore' }));
  try {
    assert.equal(client.getServerVersion().name, 'stripe-test');
  } finally {
    await client.close();
  }
});

test('the README\'s own-API config starts as written', async () => {
  const { readFileSync } = await import('node:fs');
  const readme = readFileSync(join(SOURCE_DIR, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Connect a client'), readme.indexOf('## Command line'));
  const block = [...section.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes('"openapi"'));
  assert.ok(block, 'the section shows a config');
  const dir = mkdtempSync(join(tmpdir(), 'codemode-newcomer-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, block.replace('/path/to/openapi.json', join(SOURCE_DIR, 'fixtures/markethub/openapi.json')));
  const { code, stderr } = await run(['--config', config], { env: { API_TOKEN: 'readme-token-0123456789' } });
  assert.equal(code, 0, stderr);
  assert.match(stderr, /execute may call https:\/\/api\.example\.com; relative URLs go to https:\/\/api\.example\.com\/; injects Authorization/);
});

test('a refused call\'s log line says which request and why', async () => {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const { BIN } = await import('./harness.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'codemode-newcomer-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
                                         upstreams: [{ origin: 'http://127.0.0.1:9' }] }));
  const transport = new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'pipe' });
  let stderr = '';
  transport.stderr.on('data', (d) => { stderr += d; });
  const client = new Client({ name: 'newcomer-e2e', version: '1' });
  await client.connect(transport);
  try {
    const r = await client.callTool({ name: 'execute', arguments: { code: "async () => (await fetch('https://api.stripe.com/v1/balance')).status" } });
    assert.equal(r.isError, true);
  } finally {
    await client.close();
  }
  assert.match(stderr, /info tools\/call execute id=\d+: policy \(origin https:\/\/api\.stripe\.com is not allowed\) in /);
});
