// GET /metrics on the HTTP listener: the Prometheus exposition, behind the bearer token, clean
// under promtool, and scraped by a real Prometheus server whose PromQL sees the calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpServer, writeConfig, rawExchange, post, INITIALIZE } from './http_harness.mjs';

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
