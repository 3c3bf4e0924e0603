// What sandbox.jitless costs: the same calls against a server with V8's JIT and one without,
// side by side, in alternating rounds (raw stdio, client-side time per call, after warm-up).
//
//   node bench/jitless.mjs [--calls N] [--rounds R]      (defaults: 100 calls, 3 rounds)
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = process.env.CODEMODE_BIN ?? join(root, 'build/codemode-mcp');
const option = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = option('calls', 100);
const rounds = option('rounds', 3);
// MarketHub's document, with CPU to spare so that the slower mode is measured, not stopped.
const config = join(mkdtempSync(join(tmpdir(), 'codemode-jitless-bench-')), 'config.json');
writeFileSync(config, JSON.stringify({
  openapi: join(root, 'fixtures/markethub/openapi.json'), limits: { cpu_ms: 5000, wall_ms: 20000 },
}));

const workloads = [
  { name: 'search hello', code: 'async () => 1 + 1' },
  { name: 'search paths', code: "async () => Object.keys(spec.paths).filter(p => p.includes('orders'))" },
  { name: 'loop 2e5', code: 'async () => { let n = 0; for (let i = 0; i < 200000; i++) n = (n * 31 + i) % 1000003; return n; }' },
  { name: 'loop 3e6', code: 'async () => { let s = 0; for (let i = 0; i < 3e6; i++) s += i % 7; return s; }' },
  { name: 'sort 2e4 strings', code: "async () => Array.from({ length: 20000 }, (_, i) => String((i * 7919) % 20000)).sort().slice(0, 3)" },
];

async function measure(args) {
  const server = spawn(bin, ['--config', config, '--log-level', 'warn', ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = new Map();
  createInterface({ input: server.stdout }).on('line', (line) => {
    const message = JSON.parse(line);
    waiting.get(message.id)?.(message);
  });
  let id = 0;
  const call = (method, params) => new Promise((resolve) => {
    waiting.set(++id, resolve);
    server.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
  await call('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  const p50s = {};
  for (const { name, code } of workloads) {
    const times = [];
    for (let i = 0; i < calls + 10; i++) {
      const start = process.hrtime.bigint();
      const reply = await call('tools/call', { name: 'search', arguments: { code } });
      if (reply.result.isError) throw new Error(`${name}: ${reply.result.content[0].text}`);
      if (i >= 10) times.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    times.sort((a, b) => a - b);
    p50s[name] = times[Math.floor(times.length / 2)];
  }
  server.stdin.end();
  return p50s;
}

const results = { jit: [], jitless: [] };
for (let round = 0; round < rounds; round++) {
  results.jit.push(await measure([]));
  results.jitless.push(await measure(['--jitless']));
}
console.log(`| workload (p50 ms per call, ${rounds} rounds of ${calls}) | JIT | jitless | jitless / JIT |`);
console.log('|---|---|---|---|');
for (const { name } of workloads) {
  const jit = results.jit.map((r) => r[name]);
  const off = results.jitless.map((r) => r[name]);
  const mid = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;  // the rounds' mean
  console.log(`| ${name} | ${jit.map((x) => x.toFixed(2)).join(', ')} | ${off.map((x) => x.toFixed(2)).join(', ')} | ${(mid(off) / mid(jit)).toFixed(2)}× |`);
}
