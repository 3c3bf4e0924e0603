// What watching costs: the same calls against a server with the audit trail (SQLite), traces
// exported over OTLP/HTTP to a local receiver and a Prometheus-style scrape of /metrics every
// second, and against the same server with none of them, alternated slice by slice in one run.
//
//   node bench/observe.mjs [--calls N] [--rounds R] [--concurrency 1,8] [--workloads hello,execute]
//                          [--no-tracing]
//
// Each slice is one bench/cpu.mjs run (its own server, warmed, then N calls timed on one MCP
// session over HTTP): `hello` is search `1 + 1`, `execute` one fetch to the MarketHub fixture
// (a process of its own, as an upstream is). Prints, per workload and concurrency, the median
// over rounds of calls/s, client p50/p99 and CPU ms per call of the server's tree, plain and
// observed, and the difference.
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir, loadavg } from 'node:os';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const bin = process.env.CODEMODE_BIN ?? join(root, 'build/codemode-mcp');
const fixtureBin = process.env.MARKETHUB_FIXTURE_BIN ?? join(root, 'build/fixtures/markethub/markethub-fixture');
const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback;
};
const calls = Number(opt('calls', 2000));
const rounds = Number(opt('rounds', 3));
const concurrencies = String(opt('concurrency', '1,8')).split(',').map(Number);
const workloadNames = String(opt('workloads', 'hello,execute')).split(',');

// The upstream.
const token = 'bench-observe-token-0123456789';
const fixture = spawn(fixtureBin, ['--port', '0', '--token', token], { stdio: ['ignore', 'pipe', 'inherit'] });
const [line] = await once(createInterface({ input: fixture.stdout }), 'line');
const origin = /^listening on (http:\/\/\S+)$/.exec(line)?.[1];
if (!origin) throw new Error(`unexpected fixture output: ${line}`);

// The OTLP/HTTP receiver: takes every export, counts spans, answers 200 at once.
let exports = 0;
let spans = 0;
const receiver = createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', () => {
    exports++;
    try {
      for (const rs of JSON.parse(body).resourceSpans ?? []) {
        for (const ss of rs.scopeSpans ?? []) spans += (ss.spans ?? []).length;
      }
    } catch { /* counted as an export all the same */ }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
});
await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const otlp = `http://127.0.0.1:${receiver.address().port}/v1/traces`;

const dir = mkdtempSync(join(tmpdir(), 'codemode-observe-'));
let configs = 0;
function configFor(observed) {
  const config = {
    openapi: join(root, 'fixtures/markethub/openapi.json'),
    upstreams: [{ origin, headers: { Authorization: `Bearer ${token}` } }],
  };
  if (observed) {
    config.audit = { sqlite: join(dir, `audit-${++configs}.db`) };
    if (!argv.includes('--no-tracing')) config.tracing = { otlp };
  }
  const file = join(dir, `config-${++configs}.json`);
  writeFileSync(file, JSON.stringify(config));
  return file;
}

const workloads = {
  hello: ['--tool', 'search', '--code', 'async () => 1 + 1'],
  execute: ['--tool', 'execute', '--code', "async () => (await fetch('/products?limit=3')).status"],
};

// One bench/cpu.mjs slice; its figures. Asynchronous: this process is the OTLP receiver, which
// must keep answering while the slice runs (a blocked receiver is a collector that never
// answers, whose exports the server gives up on after 5 s).
async function slice(workload, concurrency, observed) {
  const args = [join(here, 'cpu.mjs'), '--calls', String(calls), '--concurrency', String(concurrency),
    '--config', configFor(observed), ...workloads[workload], ...(observed ? ['--scrape-ms', '1000'] : [])];
  const { stdout: out } = await promisify(execFile)(process.execPath, args, { encoding: 'utf8', env: { ...process.env, CODEMODE_BIN: bin } });
  const rate = /calls\/s (\d+); p50 ms: client ([\d.]+) \(p99 ([\d.]+)/.exec(out);
  const cpu = /daemon ([\d.]+) user \+ ([\d.]+) system; sandbox processes ([\d.]+) \+ ([\d.]+)/.exec(out);
  if (!rate || !cpu) throw new Error(`unexpected bench/cpu.mjs output:\n${out}`);
  return {
    rate: Number(rate[1]), p50: Number(rate[2]), p99: Number(rate[3]),
    cpu: Number(cpu[1]) + Number(cpu[2]) + Number(cpu[3]) + Number(cpu[4]),
  };
}

console.log(`bench/observe: ${calls} calls per slice, ${rounds} rounds; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}; ${bin}`);
const cells = new Map();
for (let round = 0; round < rounds; round++) {
  for (const workload of workloadNames) {
    for (const c of concurrencies) {
      const order = round % 2 ? [true, false] : [false, true];
      for (const observed of order) {
        const key = `${workload}|${c}|${observed}`;
        if (!cells.has(key)) cells.set(key, []);
        cells.get(key).push(await slice(workload, c, observed));
      }
    }
  }
  console.log(`round ${round + 1}/${rounds} done; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const pick = (key, field) => median(cells.get(key).map((r) => r[field]));
console.log('\n| workload | in flight | calls/s plain → observed | p50 ms | p99 ms | CPU ms/call (server tree) |');
console.log('|---|---|---|---|---|---|');
for (const workload of workloadNames) {
  for (const c of concurrencies) {
    const p = `${workload}|${c}|false`;
    const o = `${workload}|${c}|true`;
    const change = ((pick(o, 'rate') / pick(p, 'rate') - 1) * 100).toFixed(1);
    console.log(`| ${workload} | ${c} | ${pick(p, 'rate')} → ${pick(o, 'rate')} (${change} %) | ` +
      `${pick(p, 'p50').toFixed(2)} → ${pick(o, 'p50').toFixed(2)} | ${pick(p, 'p99').toFixed(2)} → ${pick(o, 'p99').toFixed(2)} | ` +
      `${pick(p, 'cpu').toFixed(2)} → ${pick(o, 'cpu').toFixed(2)} |`);
  }
}
console.log(`\nthe receiver took ${exports} OTLP exports holding ${spans} spans`);
fixture.kill('SIGTERM');
receiver.close();
