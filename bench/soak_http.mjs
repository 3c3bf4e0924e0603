// codemode-mcp under sustained mixed load: does memory stay flat?
//
//   node bench/soak_http.mjs [--seconds 600] [--concurrency 32]
//
// Serves the built-in MarketHub demo over Streamable HTTP and keeps `concurrency` lanes (one
// MCP session and keep-alive connection each, spread over 127.0.0.1-4) busy with a mix of
// calls: search hello, a search over the paths, execute with one fetch, code that throws, and
// code that runs into the 50 ms CPU limit. Every 30 s it prints the RSS of the server and of its
// sandbox processes (the whole tree), and at the end the least-squares trend of the tree's RSS
// after the first minute, in MB per minute (and of its PSS, which counts a page the processes
// share once): over every sample, and over the samples with the
// usual number of sandbox processes (a sample taken while a successor runs beside the process
// it replaces holds one process more; that is a moment of the replacement, not growth).
import { readFileSync, readdirSync } from 'node:fs';
import { once } from 'node:events';
import { cpus, loadavg } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, post } from './mcp_http.mjs';
import { Lane } from './lane.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const bin = process.env.CODEMODE_BIN ?? join(here, '..', 'build/codemode-mcp');
const option = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const seconds = option('seconds', 600);
const concurrency = option('concurrency', 32);

const mix = [
  ['search', 'async () => 1 + 1', false],
  ['search', "async () => Object.keys(spec.paths).filter(p => p.includes('orders'))", false],
  ['execute', "async () => (await fetch('/products?limit=3')).status", false],
  ['search', 'async () => { throw new Error("planned") }', true],
  ['search', 'async () => { for (;;) {} }', true],
];

const { proc, url } = await startServer(bin);

const rssOf = (pid) => {
  try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024; } catch { return 0; }
};
// Proportional set size: each shared page (libnode's code, mapped by every sandbox process)
// counted once over the processes that map it, so the sum is what the tree really holds.
const pssOf = (pid) => {
  try { return Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))[1]) / 1024; } catch { return 0; }
};
const childrenOf = (pid) => readdirSync(`/proc/${pid}/task`).flatMap((t) =>
  readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number));
const treeRss = () => {
  const kids = childrenOf(proc.pid);
  return {
    server: rssOf(proc.pid), processes: kids.reduce((sum, pid) => sum + rssOf(pid), 0), count: kids.length,
    pss: pssOf(proc.pid) + kids.reduce((sum, pid) => sum + pssOf(pid), 0),
  };
};

let calls = 0;
let wrong = 0;
const wrongSeen = new Map();  // what the unexpected answers said, and how often
const deadline = Date.now() + seconds * 1000;
async function lane(index) {
  const lane = new Lane(url, `127.0.0.${1 + (index % 4)}`);
  const init = await post(lane, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } } });
  await post(lane, { jsonrpc: '2.0', method: 'notifications/initialized' }, init.session);
  for (let i = 0; Date.now() < deadline; i++) {
    const [name, code, fails] = mix[(index + i) % mix.length];
    const r = await post(lane, { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name, arguments: { code } } }, init.session);
    calls++;
    if (r.status !== 200 || r.body.includes('"isError":true') !== fails) {
      wrong++;
      const text = /"text":"((?:[^"\\]|\\.)*)"/.exec(r.body)?.[1] ?? r.body;
      const key = `${name} \`${code}\`: HTTP ${r.status} ${text.slice(0, 160)}`;
      wrongSeen.set(key, (wrongSeen.get(key) ?? 0) + 1);
    }
  }
  lane.close();
}

console.log(`codemode-mcp soak: ${seconds} s at c=${concurrency}, mixed calls; ${cpus().length} CPUs; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('| minute | calls | server RSS MB | sandbox processes RSS MB (count) | tree MB | tree PSS MB |');
console.log('|---|---|---|---|---|---|');
const samples = [];
const pssSamples = [];
const started = Date.now();
const sampler = setInterval(() => {
  const t = (Date.now() - started) / 60000;
  const r = treeRss();
  samples.push([t, r.server + r.processes, r.count]);
  pssSamples.push([t, r.pss, r.count]);
  console.log(`| ${t.toFixed(1)} | ${calls} | ${r.server.toFixed(1)} | ${r.processes.toFixed(1)} (${r.count}) | ${(r.server + r.processes).toFixed(1)} | ${r.pss.toFixed(1)} |`);
}, 30000);
await Promise.all(Array.from({ length: concurrency }, (_, i) => lane(i)));
clearInterval(sampler);

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
function trend(points) {
  const mt = mean(points.map(([t]) => t));
  const mr = mean(points.map(([, r]) => r));
  return points.reduce((s, [t, r]) => s + (t - mt) * (r - mr), 0) / points.reduce((s, [t]) => s + (t - mt) ** 2, 0);
}
const late = samples.filter(([t]) => t >= 1);
const range = (points) => `${Math.min(...points.map(([, r]) => r)).toFixed(1)}–${Math.max(...points.map(([, r]) => r)).toFixed(1)} MB`;
console.log(`\n${calls} calls, ${wrong} answers not as expected, ${(calls / seconds).toFixed(0)} calls/s`);
for (const [what, n] of wrongSeen) console.log(`  ${n} × ${what}`);
if (late.length < 2) {
  console.log('too short for a trend (it needs two samples after the first minute)');
} else {
  // The usual number of sandbox processes: the most frequent count (the first seen, on a tie).
  const frequency = new Map();
  for (const [, , count] of late) frequency.set(count, (frequency.get(count) ?? 0) + 1);
  const usual = [...frequency].reduce((best, next) => (next[1] > best[1] ? next : best))[0];
  const steady = late.filter(([, , count]) => count === usual);
  console.log(`tree RSS trend after the first minute: ${trend(late).toFixed(2)} MB/min over all ${late.length} samples (${range(late)}); ` +
    `${trend(steady).toFixed(2)} MB/min over the ${steady.length} with ${usual} sandbox processes (${range(steady)})`);
  const latePss = pssSamples.filter(([t]) => t >= 1);
  console.log(`tree PSS trend after the first minute: ${trend(latePss).toFixed(2)} MB/min (${range(latePss)})`);
}
proc.kill('SIGTERM');
await once(proc, 'exit');
