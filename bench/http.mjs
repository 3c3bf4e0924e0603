// codemode-mcp over Streamable HTTP: `search` at concurrency 1, 8 and 32, and the server's
// RSS under that load.
//
//   node bench/http.mjs [--calls N]
//
// Each lane is one MCP client: its own session (initialize), its own keep-alive connection.
// The server limits requests in flight per client address to 16, as a shared agent host would
// be; lanes therefore spread over 127.0.0.1-127.0.0.4 (all loopback), like separate agents.
import { once } from 'node:events';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { startServer, post } from './mcp_http.mjs';
import { Lane } from './lane.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.CODEMODE_BIN ?? join(root, 'build/codemode-mcp');
const argv = process.argv.slice(2);
const calls = Number(argv[argv.indexOf('--calls') + 1] || 1000) || 1000;
const require = createRequire(import.meta.url);
const githubSpec = require.resolve('@octokit/openapi/generated/api.github.com.json');

async function lane(index, url, code, count, latencies, errors) {
  const lane = new Lane(url, `127.0.0.${1 + (index % 4)}`);
  const init = await post(lane, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  const session = init.session;
  await post(lane, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const r = await post(lane, { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'search', arguments: { code } } }, session);
    latencies.push(performance.now() - t0);
    if (r.status !== 200 || r.body.includes('"isError":true')) errors.push(r.status);
  }
  lane.close();
}

const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const dir = mkdtempSync(join(tmpdir(), 'codemode-bench-http-'));
writeFileSync(join(dir, 'github.json'), JSON.stringify({ openapi: githubSpec, limits: { cpu_ms: 5000 } }));
const workloads = [
  { name: 'search hello (MarketHub)', args: [], code: 'async () => 1 + 1' },
  { name: 'search paths (GitHub REST)', args: ['--config', join(dir, 'github.json')],
    code: "async () => Object.keys(spec.paths).filter(p => p.startsWith('/repos/{owner}/{repo}/pulls'))" },
];

console.log(`codemode-mcp HTTP bench: ${calls} calls per row; ${cpus().length} CPUs; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('| workload | concurrency | p50 ms | p99 ms | calls/s | errors | server RSS MB (peak) |');
console.log('|---|---|---|---|---|---|---|');
for (const workload of workloads) {
  const { proc, url } = await startServer(bin, workload.args);
  for (const concurrency of [1, 8, 32]) {
    const latencies = [];
    const errors = [];
    let peak = rss(proc.pid);
    const sampler = setInterval(() => { peak = Math.max(peak, rss(proc.pid)); }, 50);
    const started = performance.now();
    const per = Math.ceil(calls / concurrency);
    await Promise.all(Array.from({ length: concurrency }, (_, i) => lane(i, url, workload.code, per, latencies, errors)));
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    latencies.sort((a, b) => a - b);
    console.log(`| ${workload.name} | ${concurrency} | ${pct(latencies, 50).toFixed(2)} | ${pct(latencies, 99).toFixed(2)} | ${(latencies.length / seconds).toFixed(0)} | ${errors.length} | ${peak.toFixed(0)} |`);
  }
  proc.kill('SIGTERM');
  await once(proc, 'exit');
}
