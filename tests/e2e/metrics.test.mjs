// GET /metrics on the HTTP listener: the Prometheus exposition, behind the bearer token, clean
// under promtool, and scraped by a real Prometheus server whose PromQL sees the calls; and
// `--metrics HOST:PORT`, a listener of its own for a server that speaks MCP over stdio.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN } from './harness.mjs';
import { startHttpServer, writeConfig, rawExchange, post, RawConnection, INITIALIZE } from './http_harness.mjs';

const TOKEN = 'metrics-test-token-0123456789abcdef';
const auth = { Authorization: `Bearer ${TOKEN}` };

function getMetrics(port, headers = auth) {
  return rawExchange(port, `GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}Connection: close\r\n\r\n`);
}

async function call(port, id, tool, code) {
  const r = await rawExchange(port, post(port, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: { code } } }, { ...auth, 'MCP-Protocol-Version': '2025-11-25' }));
  assert.equal(r.status, 200, r.body);
  return r;
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test('/metrics counts calls and requests, needs the token, and passes promtool', async () => {
  const config = writeConfig({ http: { tokens: [{ name: 'ops', token: TOKEN }] } });
  const server = await startHttpServer(['--http', '127.0.0.1:0', '--http-stateless', '--config', config]);
  try {
    assert.equal((await getMetrics(server.port, {})).status, 401, 'no token, no metrics');
    assert.equal((await getMetrics(server.port, { Authorization: 'Bearer wrong' })).status, 401);
    await call(server.port, 1, 'search', 'async () => 1 + 1');
    await call(server.port, 2, 'search', 'async () => { throw new Error("x"); }');
    await call(server.port, 3, 'execute', "async () => { try { await fetch('http://elsewhere.test/'); } catch {} return 1; }");
    const r = await getMetrics(server.port);
    assert.equal(r.status, 200);
    assert.match(r.headers['content-type'], /^text\/plain; version=0\.0\.4/);
    const text = r.body;
    assert.match(text, /^codemode_tool_calls_total\{outcome="ok",tool="search"\} 1$/m);
    assert.match(text, /^codemode_tool_calls_total\{outcome="runtime",tool="search"\} 1$/m);
    assert.match(text, /^codemode_tool_calls_total\{outcome="ok",tool="execute"\} 1$/m);
    assert.match(text, /^codemode_gateway_refusals_total\{reason="origin"\} 1$/m);
    assert.match(text, /^codemode_tool_call_duration_seconds_count\{tool="search"\} 2$/m);
    assert.match(text, /^codemode_sandbox_processes_started_total [1-9]/m);
    assert.match(text, /^codemode_tool_calls_running 0$/m);
    assert.ok(!text.includes('elsewhere.test'), 'a URL the code chose is no label');
    assert.ok(!text.includes(TOKEN));
    const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(promtool.error, undefined, 'promtool (Debian prometheus) is installed by scripts/setup --tests');
    assert.equal(promtool.status, 0, `promtool check metrics:\n${promtool.stdout}${promtool.stderr}`);
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});

test('a real Prometheus server scrapes /metrics and its PromQL sees the calls', async () => {
  const config = writeConfig({ http: { tokens: [{ name: 'ops', token: TOKEN }] } });
  const server = await startHttpServer(['--http', '127.0.0.1:0', '--http-stateless', '--config', config]);
  const dir = mkdtempSync(join(tmpdir(), 'codemode-prometheus-'));
  writeFileSync(join(dir, 'token'), TOKEN);
  writeFileSync(join(dir, 'prometheus.yml'), [
    'global: { scrape_interval: 1s, scrape_timeout: 1s }',
    'scrape_configs:',
    '  - job_name: codemode',
    `    authorization: { credentials_file: ${join(dir, 'token')} }`,
    `    static_configs: [ { targets: ['127.0.0.1:${server.port}'] } ]`,
    '',
  ].join('\n'));
  const port = await freePort();
  const prometheus = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  prometheus.stderr.on('data', (d) => { log += d; });
  try {
    for (let i = 0; i < 5; i++) await call(server.port, 10 + i, 'search', 'async () => 1');
    const deadline = Date.now() + 30000;
    let seen = null;
    while (Date.now() < deadline) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent('sum(codemode_tool_calls_total{tool="search",outcome="ok"})')}`);
        const body = await res.json();
        if (body.status === 'success' && body.data.result.length) {
          seen = Number(body.data.result[0].value[1]);
          if (seen >= 5) break;
        }
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(seen, 5, `PromQL saw ${seen}; prometheus log:\n${log.slice(-2000)}`);
  } finally {
    prometheus.kill('SIGTERM');
    server.proc.kill('SIGTERM');
    await server.exited;
  }
});

// A stdio server with --metrics: the SDK client over stdin/stdout, the scrape on its own port.
async function stdioWithMetrics(args = []) {
  const transport = new StdioClientTransport({ command: BIN, args: ['--metrics', '127.0.0.1:0', ...args], stderr: 'pipe' });
  let log = '';
  let found;
  const url = new Promise((resolve) => { found = resolve; });
  transport.stderr.on('data', (d) => {
    log += d;
    const m = /metrics on (http:\/\/127\.0\.0\.1:(\d+)\/metrics)/.exec(log);
    if (m) found({ url: m[1], port: Number(m[2]) });
  });
  const client = new Client({ name: 'codemode-e2e', version: '1.0.0' });
  await client.connect(transport);
  const where = await Promise.race([url, new Promise((_, reject) => setTimeout(() => reject(new Error(`no "metrics on" line:\n${log}`)), 10000))]);
  return { client, ...where, log: () => log };
}

function rawGet(port, target, extra = '') {
  return rawExchange(port, `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n${extra}\r\n`);
}

test('--metrics serves a stdio server\'s metrics on a listener of its own, without a token', async () => {
  const { client, url, port } = await stdioWithMetrics();
  try {
    for (let i = 0; i < 3; i++) {
      const r = await client.callTool({ name: 'search', arguments: { code: 'async () => Object.keys(spec.paths).length' } });
      assert.equal(r.isError, undefined, JSON.stringify(r));
    }
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    assert.match(text, /^codemode_tool_calls_total\{outcome="ok",tool="search"\} 3$/m);
    assert.match(text, /^codemode_sandbox_processes_started_total [1-9]/m);
    const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    assert.equal(promtool.status, 0, `promtool check metrics:\n${promtool.stdout}${promtool.stderr}`);
    // Only GET /metrics, and Host must be loopback on a loopback bind (DNS rebinding).
    assert.equal((await rawGet(port, '/metrics?x=1')).status, 200, 'a query string is ignored');
    assert.equal((await rawGet(port, '/mcp')).status, 404);
    const post = await rawExchange(port, `POST /metrics HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 0\r\n\r\n`);
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET');
    assert.equal((await rawExchange(port, `GET /metrics HTTP/1.1\r\nHost: rebound.example:${port}\r\n\r\n`)).status, 403);
  } finally {
    await client.close();
  }
});

test('hostile clients of the --metrics port cost a bounded amount and never a call', async () => {
  const { client, url, port, log } = await stdioWithMetrics();
  const idle = [];
  try {
    // An oversized header block is refused; a body on GET is refused.
    const big = await rawGet(port, '/metrics', `X-Junk: ${'a'.repeat(9000)}\r\n`);
    assert.equal(big.status, 431);
    const body = await rawExchange(port, `GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 5\r\n\r\nhello`);
    assert.equal(body.status, 400);
    // Forty connections that send nothing: past the bound of 16 they are closed at once, the
    // rest at the exchange timeout (5 s); a tool call meanwhile is answered as usual.
    for (let i = 0; i < 40; i++) idle.push(new RawConnection(port));
    const started = Date.now();
    const r = await client.callTool({ name: 'search', arguments: { code: 'async () => 1 + 1' } });
    assert.equal(r.content[0].text, '2');
    assert.ok(Date.now() - started < 3000, `a call took ${Date.now() - started} ms while the metrics port was flooded`);
    await Promise.all(idle.map((c) => c.closedByServer(9000)));
    const res = await fetch(url);
    assert.equal(res.status, 200, 'the listener serves again once the idle connections are gone');
    assert.match(await res.text(), /^codemode_tool_calls_total\{outcome="ok",tool="search"\} 1$/m);
    assert.ok(!log().includes('a'.repeat(100)), 'what a client sent is not logged');
  } finally {
    for (const c of idle) c.destroy();
    await client.close();
  }
});

test('--metrics on a port already taken: exit 2 with the reason', async () => {
  const blocker = createServer();
  await new Promise((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = blocker.address();
    const r = spawnSync(BIN, ['--metrics', `127.0.0.1:${port}`], { input: '', encoding: 'utf8', timeout: 20000 });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`metrics: 127\\.0\\.0\\.1:${port}: Address already in use`));
    assert.equal(r.stdout, '', 'nothing but protocol messages on stdout');
  } finally {
    await new Promise((resolve) => blocker.close(resolve));
  }
});
