// codemode-mcp benchmark: tool calls through the real MCP path (SDK client -> stdio -> server).
//
//   node bench/run.mjs [--calls N] [--seconds S] [--only NAME] [--jitless]
//
// For each workload it starts a fresh server, warms up, then runs the calls at concurrency 1
// and 2 and prints latency percentiles (client-side, per call), throughput, and how often the
// server's threads went to sleep per call (voluntary context switches of the daemon's process:
// each is a wake-up that a call waits for). The MarketHub workloads use the embedded default
// (its fixture API runs inside the server process, so its threads count too).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mkdtempSync, writeFileSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir, cpus, loadavg } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const bin = process.env.CODEMODE_BIN ?? join(root, 'build/codemode-mcp');
const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
  return acc;
}, []));
const calls = Number(args.calls ?? 500);
const only = args.only;
// --jitless: every server runs its isolates without V8's JIT (config sandbox.jitless).
const jitless = process.argv.includes('--jitless');

const require = createRequire(import.meta.url);
const githubSpec = require.resolve('@octokit/openapi/generated/api.github.com.json');

function configFor(spec) {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-bench-'));
  const file = join(dir, 'config.json');
  // Generous CPU so a workload measures cost, not the limit.
  writeFileSync(file, JSON.stringify({ openapi: spec, limits: { cpu_ms: 5000, wall_ms: 20000 } }));
  return ['--config', file, '--log-level', 'warn'];
}

const workloads = [
  { name: 'search hello (MarketHub)', args: ['--log-level', 'warn'], tool: 'search', code: 'async () => 1 + 1' },
  { name: 'search paths (MarketHub)', args: ['--log-level', 'warn'], tool: 'search',
    code: "async () => Object.keys(spec.paths).filter(p => p.includes('orders'))" },
  { name: 'search operation (MarketHub)', args: ['--log-level', 'warn'], tool: 'search',
    code: "async () => spec.paths['/orders'].post.requestBody" },
  // Code that computes rather than looks up: where V8's JIT (or --jitless's lack of it) shows.
  { name: 'search compute (MarketHub)', args: ['--log-level', 'warn'], tool: 'search',
    code: 'async () => { let n = 0; for (let i = 0; i < 200000; i++) n = (n * 31 + i) % 1000003; return n; }' },
  { name: 'execute 1 fetch (MarketHub)', args: ['--log-level', 'warn'], tool: 'execute',
    code: "async () => (await (await fetch('/products/prod_0001')).json()).name" },
  { name: 'execute 5 sequential fetches (MarketHub)', args: ['--log-level', 'warn'], tool: 'execute',
    code: "async () => { const names = []; for (const id of ['prod_0001', 'prod_0002', 'prod_0003', 'prod_0004', 'prod_0005']) names.push((await (await fetch('/products/' + id)).json()).name); return names; }" },
  { name: 'search paths (GitHub REST)', args: configFor(githubSpec), tool: 'search',
    code: "async () => Object.keys(spec.paths).filter(p => p.startsWith('/repos/{owner}/{repo}/pulls'))" },
  { name: 'search operation (GitHub REST)', args: configFor(githubSpec), tool: 'search',
    code: "async () => spec.paths['/repos/{owner}/{repo}/pulls'].get.parameters.map(p => p.name)" },
];

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// Voluntary context switches of all of a process's threads so far.
function sleepsOf(pid) {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(/\nvoluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${task}/status`, 'utf8'))[1]);
    } catch { /* the thread has exited */ }
  }
  return total;
}

async function measure(client, pid, workload, concurrency) {
  const latencies = [];
  const sleepsBefore = sleepsOf(pid);
  let next = 0;
  let errors = 0;
  const started = performance.now();
  async function lane() {
    while (next < calls) {
      next++;
      const t0 = performance.now();
      const result = await client.callTool({ name: workload.tool, arguments: { code: workload.code } });
      latencies.push(performance.now() - t0);
      if (result.isError) errors++;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  const seconds = (performance.now() - started) / 1000;
  const sleeps = (sleepsOf(pid) - sleepsBefore) / calls;
  latencies.sort((a, b) => a - b);
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), rate: calls / seconds, errors, sleeps };
}

function rssOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
  } catch { return NaN; }
}

console.log(`codemode-mcp bench: ${calls} calls per row; ${cpus().length} CPUs (${cpus()[0].model}); load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('| workload | concurrency | p50 ms | p99 ms | calls/s | errors | server RSS MB | server sleeps/call |');
console.log('|---|---|---|---|---|---|---|---|');
for (const workload of workloads) {
  if (only && !workload.name.includes(only)) continue;
  const serverArgs = jitless ? [...workload.args, '--jitless'] : workload.args;
  const transport = new StdioClientTransport({ command: bin, args: serverArgs, stderr: 'inherit' });
  const client = new Client({ name: 'codemode-bench', version: '1.0.0' });
  await client.connect(transport);
  const warm = await client.callTool({ name: workload.tool, arguments: { code: workload.code } });
  if (warm.isError) console.error(`${workload.name}: ${warm.content[0].text}`);
  for (let i = 0; i < 20; i++) await client.callTool({ name: workload.tool, arguments: { code: workload.code } });
  for (const concurrency of [1, 2]) {
    const r = await measure(client, transport.pid, workload, concurrency);
    console.log(`| ${workload.name} | ${concurrency} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${r.rate.toFixed(0)} | ${r.errors} | ${rssOf(transport.pid).toFixed(0)} | ${r.sleeps.toFixed(2)} |`);
  }
  await client.close();
}
