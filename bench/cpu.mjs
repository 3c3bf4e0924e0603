// Where one call's time and CPU go: the daemon, its sandbox processes, the client.
//
//   node bench/cpu.mjs [--calls N] [--concurrency C] [--tool search|execute] [--code CODE]
//                      [--gap MS] [--session-per-lane] [--config FILE] [--scrape-ms MS]
//
// Starts codemode-mcp on Streamable HTTP (the built-in MarketHub demo), warms up, then runs N
// calls over C lanes (keep-alive connections spread over 127.0.0.1-4, carrying one MCP session,
// or one session each with --session-per-lane), each lane pausing --gap ms after every answer (default 0: back to back).
// Prints calls/s; the client-side p50; the server's own time per call and the part of it
// spent inside the sandbox process (both from its info log: "ok in X ms (sandbox process Y
// ms)"); and CPU milliseconds per call of the daemon, of its sandbox processes (the live ones
// and those already reaped, from /proc) and of this client, user and system.
import { readFileSync, readdirSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { post } from './mcp_http.mjs';
import { Lane } from './lane.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const bin = process.env.CODEMODE_BIN ?? join(here, '..', 'build/codemode-mcp');
const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback;
};
const calls = Number(opt('calls', 3000));
const concurrency = Number(opt('concurrency', 8));
const tool = opt('tool', 'search');
const code = opt('code', tool === 'execute' ? "async () => (await fetch('/products?limit=3')).status" : 'async () => 1 + 1');
const gap = Number(opt('gap', 0));  // ms each lane waits after an answer: idle CPUs, cold caches
const scrapeMs = Number(opt('scrape-ms', 0));  // GET /metrics this often while timed, as Prometheus would
const TICKS = 100;  // USER_HZ: /proc reports CPU time in clock ticks

const server = [];
const inProcess = [];
const configArgs = opt('config') ? ['--config', opt('config')] : [];
const proc = spawn(bin, ['--http', '127.0.0.1:0', '--log-level', 'info', ...configArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
const url = await new Promise((resolve, reject) => {
  createInterface({ input: proc.stderr }).on('line', (line) => {
    const listening = /listening on (http:\/\/\S+)/.exec(line);
    if (listening) resolve(listening[1]);
    const total = /tools\/call .* in ([0-9.]+) ms/.exec(line);
    if (total) server.push(Number(total[1]));
    const inside = /sandbox process ([0-9.]+) ms/.exec(line);
    if (inside) inProcess.push(Number(inside[1]));
  });
  proc.on('exit', () => reject(new Error('server exited before listening')));
});

// utime, stime, and the reaped children's cutime, cstime (fields 14-17 of /proc/PID/stat).
function stat(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return { user: +fields[11], system: +fields[12], childUser: +fields[13], childSystem: +fields[14] };
}
function children(pid) {
  const out = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.push(...readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
    } catch { /* the thread ended */ }
  }
  return out;
}
function cpuNow() {
  const daemon = stat(proc.pid);
  let user = daemon.childUser, system = daemon.childSystem;
  for (const child of children(proc.pid)) {
    try {
      const s = stat(child);
      user += s.user;
      system += s.system;
    } catch { /* reaped meanwhile */ }
  }
  return { daemonUser: daemon.user, daemonSystem: daemon.system, sandboxUser: user, sandboxSystem: system };
}

// One MCP session for every lane, as one agent with several calls in flight has (one principal,
// so its calls share its sandbox processes); --session-per-lane gives each lane its own.
const sessionPerLane = argv.includes('--session-per-lane');
let nextId = 1;
let sharedSession = null;
async function openSession(lane) {
  const init = await post(lane, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench-cpu', version: '1' } } });
  await post(lane, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
  return init.session;
}
async function lane(index, count, latencies) {
  const lane = new Lane(url, `127.0.0.${1 + (index % 4)}`);
  const session = sessionPerLane ? await openSession(lane) : (sharedSession ??= openSession(lane));
  const init = { session: await session };
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const r = await post(lane, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: tool, arguments: { code } } }, init.session);
    latencies?.push(performance.now() - started);
    if (r.status !== 200 || r.body.includes('"isError":true')) throw new Error(`unexpected answer: ${r.status} ${r.body.slice(0, 200)}`);
    if (gap > 0 && latencies) await new Promise((resolve) => setTimeout(resolve, gap));
  }
  lane.close();
}

const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] : NaN;
};
const median = (values) => quantile(values, 0.5);

await Promise.all(Array.from({ length: concurrency }, (_, i) => lane(i, 20)));  // warm-up
server.length = 0;
inProcess.length = 0;
const latencies = [];
const before = cpuNow();
const clientBefore = process.cpuUsage();
const started = performance.now();
let scrapes = 0;
const scraper = scrapeMs > 0 && setInterval(() => {
  fetch(url.replace(/\/mcp$/, '/metrics')).then((r) => r.text()).then((t) => { if (t.includes('codemode_tool_calls_total')) scrapes++; }, () => {});
}, scrapeMs);
await Promise.all(Array.from({ length: concurrency }, (_, i) => lane(i, Math.ceil(calls / concurrency), latencies)));
const seconds = (performance.now() - started) / 1000;
if (scraper) clearInterval(scraper);
const client = process.cpuUsage(clientBefore);
const after = cpuNow();
await new Promise((r) => setTimeout(r, 100));  // the last log lines
const n = latencies.length;
const perCall = (ticks) => (ticks * 1000 / TICKS / n).toFixed(2);

console.log(`codemode-mcp cpu: ${n} ${tool} calls at concurrency ${concurrency}; ${cpus().length} CPUs; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
if (scrapeMs > 0) console.log(`metrics scraped ${scrapes} times`);
console.log(`calls/s ${(n / seconds).toFixed(0)}; p50 ms: client ${median(latencies).toFixed(2)} (p99 ${quantile(latencies, 0.99).toFixed(2)}, max ${Math.max(...latencies).toFixed(2)}), server ${median(server).toFixed(2)}, in the sandbox process ${median(inProcess).toFixed(2)}`);
console.log(`CPU ms per call: daemon ${perCall(after.daemonUser - before.daemonUser)} user + ${perCall(after.daemonSystem - before.daemonSystem)} system; ` +
  `sandbox processes ${perCall(after.sandboxUser - before.sandboxUser)} + ${perCall(after.sandboxSystem - before.sandboxSystem)}; ` +
  `client ${(client.user / 1000 / n).toFixed(2)} + ${(client.system / 1000 / n).toFixed(2)}`);
proc.kill('SIGTERM');
