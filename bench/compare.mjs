// codemode-mcp side by side with its peers: workerd (Dynamic Worker Loader), isolated-vm, deno
// and node, each running the same code in a fresh isolate or process per call, in one sitting.
//
//   node bench/compare.mjs [--quick] [--calls N] [--rounds R] [--warmup W] [--concurrency 1,8,32]
//                          [--systems workerd,isolated-vm,deno,node] [--workloads hello,spec,...,io]
//                          [--io-concurrency 16,64,256] [--io-seconds S]
//                          [--ivm-spec parse|snapshot] [--session-per-lane] [--out FILE]
//
// Run it through bench/compare, which installs the peers (bench/peers/) and builds the binary.
// CODEMODE_BIN_BASELINE=PATH adds another build of codemode-mcp as one more peer (e.g. the build
// before an engine change), in the same sitting, in every workload (not beside the 2nd client).
//
// Every system sits behind one local IPC hop: codemode-mcp is driven over MCP (stdio with the SDK
// client at c=1, Streamable HTTP lanes at c=8/32, as bench/run.mjs and bench/http.mjs do); each
// peer is a small HTTP server on 127.0.0.1 (POST {code, workload} -> {ok, result}). Every HTTP
// lane, ours and the peers', is a bench/lane.mjs connection, so the client costs all alike.
// Interleaving: R rounds; in each round every workload x concurrency cell gives every system a
// slice of N/R calls in turn (system order rotates per round), so machine noise hits everyone
// alike. Latency is client-side per call; calls/s is calls over the summed wall time of the
// cell's slices; RSS is the peak, sampled every 20 ms, of the sum of VmRSS over the system's whole
// process tree (children from /proc/PID/task/*/children).
//
// The `io` workload (bench/io_rows.mjs) is measured apart, after the others, because it asks
// something else: code that awaits one fetch() of a local upstream answering after 200 ms
// (bench/slow_upstream.mjs, its own node process), at 16, 64 and 256 calls in flight. Each cell
// is one time-bounded row per system (--io-seconds), system order rotating per concurrency;
// codemode-mcp runs a server of its own on Streamable HTTP only, with the upstream in its config;
// two no-sandbox rows (the harness asking the upstream itself) show what the harness can drive;
// and one more row times a second codemode-mcp client's `execute` of `1 + 1` during the largest
// storm. It prints a table of its own.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { spawn, execFileSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import net from 'node:net';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, readdirSync, copyFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir, cpus, loadavg, totalmem } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { generateSpec } from './peers/gen-spec.mjs';
import { Lane } from './lane.mjs';
import { runIoRow, startOursHttp, directLaneSystem, directFetchSystem, peerIoSystem, treesOf, memAvailableMb, callTimeoutMs, pauseAfterErrorMs } from './io_rows.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const peersDir = join(here, 'peers');
const bin = process.env.CODEMODE_BIN ?? join(root, 'build/codemode-mcp');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback; };
const quick = flag('quick');
const sessionPerLane = flag('session-per-lane');
const calls = Number(opt('calls', quick ? 64 : 400));
const rounds = Number(opt('rounds', quick ? 2 : 4));
const warmup = Number(opt('warmup', quick ? 5 : 15));
const concurrencies = String(opt('concurrency', '1,8,32')).split(',').map(Number);
const onlySystems = opt('systems')?.split(',');
const onlyWorkloads = opt('workloads')?.split(',');
const ioConcurrencies = String(opt('io-concurrency', '16,64,256')).split(',').map(Number);
const ioSeconds = Number(opt('io-seconds', quick ? 3 : 10));
const ioSelected = !onlyWorkloads || onlyWorkloads.some((o) => 'io'.includes(o));
const require = createRequire(import.meta.url);
const githubSpec = require.resolve('@octokit/openapi/generated/api.github.com.json');
const workerdBin = join(peersDir, 'node_modules/@cloudflare/workerd-linux-64/bin/workerd');
const denoBin = join(peersDir, 'node_modules/@deno/linux-x64-glibc/deno');
// isolated-vm 7 on the node the sandbox processes run (the newest node it supports), when
// bench/compare could build it (bench/peers/node26/, against .deps/node's headers).
const node26Bin = join(root, '.deps/node/bin/node');
const ivm26Dir = join(peersDir, 'node26');
const haveIvm26 = existsSync(join(ivm26Dir, 'node_modules/isolated-vm/package.json')) && existsSync(node26Bin);

// ---------------------------------------------------------------------------------------------
// Workloads: identical code for every system. `shared` ones run on every system; the others are
// codemode-mcp only (they need its gateway or a spec the peers were not given), shown in the same
// table for scale.
const workloads = [
  { name: 'hello', code: 'async () => 1 + 1', shared: true, server: 'synthetic', tool: 'search', expect: 2 },
  { name: 'spec', code: "async () => Object.keys(spec.paths).filter(p => p.includes('/items')).length",
    shared: true, server: 'synthetic', tool: 'search', expect: 52 },
  { name: 'github search', code: "async () => Object.keys(spec.paths).filter(p => p.startsWith('/repos/{owner}/{repo}/pulls')).length",
    shared: false, server: 'github', tool: 'search' },
  { name: 'execute 1 fetch', code: "async () => (await fetch('/products?limit=3')).status",
    shared: false, server: 'markethub', tool: 'execute', expect: 200 },
].filter((w) => !onlyWorkloads || onlyWorkloads.some((o) => w.name.includes(o)));

// ---------------------------------------------------------------------------------------------
// Helpers.
const pct = (sorted, p) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The live processes of a tree: the root and its descendants.
function treePids(rootPid) {
  const seen = new Set();
  const stack = [rootPid];
  while (stack.length) {
    const pid = stack.pop();
    if (seen.has(pid)) continue;
    try {
      const kids = [];
      for (const task of readdirSync(`/proc/${pid}/task`)) {
        const line = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
        if (line) kids.push(...line.split(/\s+/).map(Number));
      }
      seen.add(pid);
      stack.push(...kids);
    } catch { /* exited between listing and reading */ }
  }
  return [...seen];
}

function treeRssMb(rootPid) {
  let total = 0;
  for (const pid of treePids(rootPid)) {
    try {
      total += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
    } catch { /* exited */ }
  }
  return total / 1024;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

// POSTs `body` as JSON on a lane (bench/lane.mjs: one keep-alive connection, the same for every
// system); resolves {status, headers, body}.
const post = (lane, body, headers) => lane.post(JSON.stringify(body), headers);

function waitForLine(stream, re, proc, what) {
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: stream });
    rl.on('line', (line) => { const m = re.exec(line); if (m) resolve(m[1]); });
    proc.on('exit', (code) => reject(new Error(`${what} exited (${code}) before it was ready`)));
  });
}

async function waitForPort(port, proc, what) {
  let exited = false;
  proc.on('exit', () => { exited = true; });
  for (let i = 0; i < 400; i++) {
    if (exited) throw new Error(`${what} exited before listening`);
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.on('connect', () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`${what} did not listen on ${port}`);
}

function versionOf(cmd, args) {
  try { return execFileSync(cmd, args, { encoding: 'utf8' }).split('\n')[0].trim(); } catch { return 'unknown'; }
}

// ---------------------------------------------------------------------------------------------
// The bench directory: the synthetic spec and the configs.
const dir = mkdtempSync(join(tmpdir(), 'codemode-compare-'));
const specFile = join(dir, 'spec.json');
const specText = JSON.stringify(generateSpec());
writeFileSync(specFile, specText);
const configFor = (spec) => {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ openapi: spec, limits: { cpu_ms: 5000, wall_ms: 20000 } }));
  return ['--config', file];
};

// ---------------------------------------------------------------------------------------------
// codemode-mcp: one server per spec, each serving stdio (SDK client, c=1) and Streamable HTTP
// (c>1) at once; its info log gives the server-side time of every call.
async function startOurs(kind, bin) {
  const args = kind === 'synthetic' ? configFor(specFile) : kind === 'github' ? configFor(githubSpec) : [];
  const transport = new StdioClientTransport({ command: bin, args: [...args, '--http', '127.0.0.1:0', '--stdio', '--log-level', 'info'], stderr: 'pipe' });
  const server = { kind, transport, sink: null, url: null, lanes: [], pid: null };
  const urlReady = new Promise((resolve) => {
    createInterface({ input: transport.stderr }).on('line', (line) => {
      const l = /listening on (http:\/\/\S+)/.exec(line);
      if (l) resolve(l[1]);
      const m = /tools\/call \S+ id=\S+: (\S+) in ([\d.]+) ms/.exec(line);
      if (m && server.sink) server.sink.push(Number(m[2]));
      if (/\b(error|critical)\b/.test(line) && !m) process.stderr.write(`[codemode-mcp ${kind}] ${line}\n`);
    });
  });
  server.client = new Client({ name: 'codemode-compare', version: '1.0.0' });
  await server.client.connect(transport);
  server.pid = transport.pid;
  server.url = await urlReady;
  return server;
}

// Opens lanes (keep-alive connections) up to `count`, one at a time, before a slice starts, so
// session setup is never timed and never races. All lanes carry one MCP session, as one agent
// with several calls in flight does (one principal: its calls share its sandbox processes); with
// --session-per-lane each lane is its own session, so its own principal with its own process.
async function openLanes(server, count) {
  const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const initialize = async (lane) => {
    const init = await post(lane, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'compare', version: '1' } } }, headers);
    const session = init.headers['mcp-session-id'];
    if (init.status !== 200 || !session) throw new Error(`initialize on ${server.url}: HTTP ${init.status} ${init.body.slice(0, 200)}`);
    await post(lane, { jsonrpc: '2.0', method: 'notifications/initialized' }, { ...headers, 'mcp-session-id': session });
    return session;
  };
  while (server.lanes.length < count) {
    const i = server.lanes.length;
    const lane = new Lane(server.url, `127.0.0.${1 + (i % 4)}`);
    const session = sessionPerLane || !server.lanes.length ? await initialize(lane) : server.lanes[0].headers['mcp-session-id'];
    server.lanes.push({ lane, headers: { ...headers, 'mcp-session-id': session } });
  }
}

function ourResult(result) {
  if (result.isError) return { ok: false, error: result.content?.[0]?.text };
  const text = result.content?.[0]?.text;
  try { return { ok: true, result: JSON.parse(text) }; } catch { return { ok: true, result: text }; }
}

// One build of codemode-mcp as a system; `ours` is the build under test, each of `baselines`
// (when CODEMODE_BIN_BASELINE names other builds, e.g. before an engine change) runs beside it in
// the same sitting, as one more peer.
const oursSystem = (name, bin) => ({
  name,
  bin,
  codemode: true,
  servers: {},
  async start() {
    const kinds = [...new Set(workloads.map((w) => w.server))];
    for (const kind of kinds) this.servers[kind] = await startOurs(kind, bin);
  },
  // A principal's first call starts a sandbox process for it (~40 ms; idle ones retire after a
  // minute): one untimed call per lane before a slice, as session setup is never timed (with
  // --session-per-lane each lane is a principal). bench/README.md gives the cold first call apart.
  async prepare(workload, concurrency) {
    if (concurrency <= 1) return;
    const server = this.servers[workload.server];
    await openLanes(server, concurrency);
    await Promise.all(server.lanes.slice(0, concurrency).map((_, i) => this.call(workload, i, concurrency)));
  },
  pids(workload) { return [this.servers[workload.server].pid]; },
  sink(workload, array) { this.servers[workload.server].sink = array; },
  async call(workload, lane, concurrency) {
    const server = this.servers[workload.server];
    if (concurrency === 1) {
      return ourResult(await server.client.callTool({ name: workload.tool, arguments: { code: workload.code } }));
    }
    const l = server.lanes[lane];
    const r = await post(l.lane, { jsonrpc: '2.0', id: server.nextId = (server.nextId ?? 0) + 1, method: 'tools/call', params: { name: workload.tool, arguments: { code: workload.code } } }, l.headers);
    if (r.status !== 200) return { ok: false, error: `HTTP ${r.status}` };
    let body = r.body;
    if (body.startsWith('event:') || body.startsWith('data:')) body = /^data: (.*)$/m.exec(body)?.[1] ?? body;
    const msg = JSON.parse(body);
    return msg.error ? { ok: false, error: msg.error.message } : ourResult(msg.result);
  },
  async stop() {
    for (const s of Object.values(this.servers)) {
      for (const l of s.lanes) l.lane.close();
      await s.client.close();
    }
  },
});
const ours = oursSystem('codemode-mcp', bin);
// CODEMODE_BIN_BASELINE=PATH, or several as NAME=PATH,NAME=PATH: each a system of its own
// ("codemode-mcp baseline" for one unnamed path, "codemode-mcp NAME" for a named one).
const baselines = (process.env.CODEMODE_BIN_BASELINE ?? '').split(',').filter(Boolean).map((entry, i, all) => {
  const named = /^([A-Za-z0-9._-]+)=(.+)$/.exec(entry);
  if (named) return oursSystem(`codemode-mcp ${named[1]}`, named[2]);
  return oursSystem(all.length === 1 ? 'codemode-mcp baseline' : `codemode-mcp baseline ${i + 1}`, entry);
});

// ---------------------------------------------------------------------------------------------
// Peers: local HTTP servers, one lane = one keep-alive connection, POST {code, workload}.
function httpPeer(name, startFn) {
  return {
    name,
    lanes: [],
    async start() { Object.assign(this, await startFn()); },
    async prepare(workload, concurrency) {
      while (this.lanes.length < concurrency) this.lanes.push(new Lane(this.url));
    },
    pids() { return [this.proc.pid]; },
    sink() {},
    async call(workload, lane) {
      const r = await post(this.lanes[lane], { code: workload.code, workload: workload.name });
      if (r.status !== 200) return { ok: false, error: `HTTP ${r.status}: ${r.body.slice(0, 200)}` };
      return JSON.parse(r.body);
    },
    async stop() {
      for (const l of this.lanes) l.close();
      this.proc.kill('SIGTERM');
      await once(this.proc, 'exit');
    },
  };
}

// Peer servers, the upstream and the I/O workload's codemode-mcp do not read stdin, so they would
// outlive a crashed run: kill them on the way out, with every process under them (a deno or node
// wrapper's per-call processes, codemode-mcp's sandbox processes), which an interrupted storm
// leaves by the hundred.
const children = new Set();
process.on('exit', () => {
  const live = [...children].filter((c) => c.exitCode === null && c.signalCode === null).map((c) => c.pid);
  if (!live.length) return;
  for (const pid of treesOf(live)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

async function startNodeWrapper(script, args, env = {}, node = process.execPath) {
  const proc = spawn(node, [join(peersDir, script), ...args], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  children.add(proc);
  const url = await waitForLine(proc.stdout, /listening on (http:\/\/\S+)/, proc, script);
  return { proc, url };
}

async function startWorkerd() {
  const wdir = join(dir, 'workerd');
  mkdirSync(wdir, { recursive: true });
  copyFileSync(join(peersDir, 'workerd/parent.js'), join(wdir, 'parent.js'));
  copyFileSync(specFile, join(wdir, 'spec.json'));
  copyFileSync(join(peersDir, 'workerd/config.capnp'), join(wdir, 'config.capnp'));
  const port = await freePort();
  const upstreamAddr = upstream ? [`--external-addr=upstream=${new URL(upstream.url).host}`] : [];
  const proc = spawn(workerdBin, ['serve', '--experimental', `--socket-addr=http=127.0.0.1:${port}`, ...upstreamAddr, join(wdir, 'config.capnp')],
    { stdio: ['ignore', 'inherit', 'inherit'], cwd: wdir });
  children.add(proc);
  await waitForPort(port, proc, 'workerd');
  return { proc, url: `http://127.0.0.1:${port}/` };
}

// The I/O workload's upstream, started before the peers: they are given its address.
let upstream = null;
if (ioSelected) {
  const proc = spawn(process.execPath, [join(here, 'slow_upstream.mjs'), '--delay-ms', '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(proc);
  upstream = { proc, url: (await waitForLine(proc.stdout, /listening on (http:\/\/\S+)/, proc, 'slow_upstream.mjs')).replace(/\/$/, '') };
}
const ioArgs = (...args) => (upstream ? args : []);

const denoDir = join(dir, 'deno-dir');
const allSystems = [
  ours,
  ...baselines,
  httpPeer('workerd', startWorkerd),
  httpPeer('isolated-vm', () => startNodeWrapper('ivm-server.mjs', ['--spec', specFile, '--spec-mode', opt('ivm-spec', 'parse'), ...ioArgs('--upstream', upstream?.url)])),
  ...(haveIvm26 ? [httpPeer('isolated-vm-node26', () => startNodeWrapper('ivm-server.mjs', ['--ivm-dir', ivm26Dir, '--spec', specFile, '--spec-mode', opt('ivm-spec', 'parse'), ...ioArgs('--upstream', upstream?.url)], {}, node26Bin))] : []),
  httpPeer('deno', () => startNodeWrapper('subprocess-server.mjs', ['--runtime', 'deno', '--deno', denoBin, '--spec', specFile, ...ioArgs('--allow-net', upstream && new URL(upstream.url).host)], { DENO_DIR: denoDir })),
  httpPeer('node', () => startNodeWrapper('subprocess-server.mjs', ['--runtime', 'node', '--spec', specFile])),
];
const systems = allSystems.filter((s) => !onlySystems || s.codemode || onlySystems.includes(s.name));
const systemsFor = (w) => systems.filter((s) => s.codemode || w.shared);

// ---------------------------------------------------------------------------------------------
// Before a slice: wait (up to 2 s) until the peers are done with the last one: no more
// processes than after the warm-up (deno and node leave per-call processes exiting) and under
// 1 ms of CPU in 20 ms across their process trees (workerd and the node wrappers clean up
// after a burst). Without the wait the next slice paid for it: codemode-mcp's hello at c=8 had
// a p99 of ~80 ms in full runs against ~18 ms with one peer. The wait is not timed, so it can
// only flatter the peers; codemode-mcp's own background work (a sandbox process replaced) is
// not waited for, it lands on whoever runs next.
const peerPids = () => systems.filter((s) => !s.codemode).flatMap((s) => treePids(s.proc.pid));
function cpuNs(pids) {
  let total = 0;
  for (const pid of pids) {
    try {
      for (const task of readdirSync(`/proc/${pid}/task`)) {
        total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      }
    } catch { /* exited */ }
  }
  return total;
}
let settledPeerProcesses = 0;
const settling = { slices: 0, ms: 0, limit: 0 };
async function settle() {
  const started = performance.now();
  settling.slices++;
  for (;;) {
    const pids = peerPids();
    const before = cpuNs(pids);
    await sleep(20);
    if (pids.length <= settledPeerProcesses && cpuNs(pids) - before < 1e6) break;
    if (performance.now() - started > 2000) { settling.limit++; break; }
  }
  settling.ms += performance.now() - started;
}

// One slice: `count` calls at `concurrency` lanes, RSS sampled over the system's process tree.
async function slice(system, workload, concurrency, count, cell) {
  await settle();
  await system.prepare(workload, concurrency);
  const serverMs = [];
  system.sink(workload, serverMs);
  const pids = system.pids(workload);
  const sample = () => { let mb = 0; for (const p of pids) mb += treeRssMb(p); cell.peakRss = Math.max(cell.peakRss, mb); };
  sample();
  const sampler = setInterval(sample, 20);
  let next = 0;
  const started = performance.now();
  async function lane(index) {
    while (next < count) {
      next++;
      const t0 = performance.now();
      let r;
      try { r = await system.call(workload, index, concurrency); } catch (e) { r = { ok: false, error: String(e) }; }
      cell.latencies.push(performance.now() - t0);
      if (!r.ok || (workload.expect !== undefined && r.result !== workload.expect)) {
        cell.errors++;
        if (cell.errors <= 2) console.error(`  ${system.name} ${workload.name} c=${concurrency}: ${r.ok ? `unexpected result ${JSON.stringify(r.result)}` : r.error}`);
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, (_, i) => lane(i)));
  cell.seconds += (performance.now() - started) / 1000;
  clearInterval(sampler);
  sample();
  await sleep(5); // let the last log lines of the slice arrive
  system.sink(workload, null);
  cell.serverMs.push(...serverMs);
}

// ---------------------------------------------------------------------------------------------
const startedAt = new Date();
const loadStart = loadavg();
const machine = {
  cpus: cpus().length, model: cpus()[0]?.model, memGb: +(totalmem() / 2 ** 30).toFixed(1),
  node: process.version, loadStart: loadStart.map((l) => +l.toFixed(2)), binary: bin,
  versions: {
    'codemode-mcp': versionOf(bin, ['--version']),
    ...Object.fromEntries(baselines.map((b) => [b.name, versionOf(b.bin, ['--version'])])),
    workerd: versionOf(workerdBin, ['--version']),
    'isolated-vm': JSON.parse(readFileSync(join(peersDir, 'node_modules/isolated-vm/package.json'), 'utf8')).version,
    ...(haveIvm26 ? { 'isolated-vm-node26': `${JSON.parse(readFileSync(join(ivm26Dir, 'node_modules/isolated-vm/package.json'), 'utf8')).version} on ${versionOf(node26Bin, ['--version'])}` } : {}),
    deno: versionOf(denoBin, ['--version']),
    node: process.version,
  },
};
console.log(`bench/compare: ${calls} calls per cell in ${rounds} interleaved rounds, ${warmup} warm-up calls per system and workload${quick ? ' (--quick)' : ''}`);
console.log(`machine: ${machine.cpus} CPUs (${machine.model}), ${machine.memGb} GiB; load average at start ${machine.loadStart.join(' ')}`);
console.log(`versions: ${Object.entries(machine.versions).map(([k, v]) => `${k} ${v}`).join('; ')}; codemode-mcp is ${bin}${baselines.map((b) => `, ${b.name} ${b.bin}`).join('')}`);
console.log(`synthetic spec: ${specText.length} bytes, ${Object.keys(JSON.parse(specText).paths).length} paths (${specFile})`);

for (const s of systems) {
  const t0 = performance.now();
  await s.start();
  console.log(`started ${s.name} in ${(performance.now() - t0).toFixed(0)} ms`);
}

// Warm-up (and a check that everybody answers the same thing).
for (const w of workloads) {
  for (const s of systemsFor(w)) {
    let r;
    await s.prepare(w, Math.max(...concurrencies));
    for (let i = 0; i < warmup; i++) r = await s.call(w, 0, 1);
    if (Math.max(...concurrencies) > 1) for (let i = 0; i < Math.min(warmup, 3); i++) await s.call(w, 0, 8); // the HTTP path too
    console.log(`warm-up ${w.name} on ${s.name}: ${JSON.stringify(r).slice(0, 160)}`);
  }
}

await sleep(500);
settledPeerProcesses = peerPids().length;

const cells = new Map();
const cellOf = (w, s, c) => {
  const key = `${w.name}|${s.name}|${c}`;
  if (!cells.has(key)) cells.set(key, { workload: w.name, system: s.name, concurrency: c, latencies: [], serverMs: [], seconds: 0, errors: 0, peakRss: 0 });
  return cells.get(key);
};
const perSlice = (c) => Math.max(Math.ceil(calls / rounds), 2 * c);
const t0 = performance.now();
for (let round = 0; round < rounds; round++) {
  for (const w of workloads) {
    for (const c of concurrencies) {
      const order = systemsFor(w);
      const rotated = order.map((_, i) => order[(i + round) % order.length]);
      for (const s of rotated) await slice(s, w, c, perSlice(c), cellOf(w, s, c));
    }
  }
  if (workloads.length) console.log(`round ${round + 1}/${rounds} done at ${((performance.now() - t0) / 1000).toFixed(0)} s; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
}
await ours.stop();
for (const b of baselines) await b.stop();

// ---------------------------------------------------------------------------------------------
// The I/O-bound workload: one time-bounded row per system and concurrency (bench/io_rows.mjs).
// Before each row the run waits, untimed and for at most 20 s, until every system is back to
// the processes it had after the warm-up and its trees use under 3 ms of CPU in 100 ms: after a
// storm the deno and node wrappers have hundreds of processes exiting, and the next row would
// otherwise pay for them. A row stops early if the machine's MemAvailable falls under 2 GiB
// (deno and node hold a process, tens of MB, per call in flight), and is not started when the
// system's previous row, scaled to this row's calls in flight (peak RSS x c / previous c), would
// take more than half of MemAvailable: node spends ~0.45 s of CPU loading its fetch in every
// fresh process and holds ~80 MB meanwhile, so 256 of them would want about 20 GB.
const memFloorMb = 2048;
const ioRows = [];
const io = { seconds: ioSeconds, concurrencies: ioConcurrencies, callTimeoutMs, pauseAfterErrorMs, memFloorMb, settle: { rows: 0, ms: 0, limit: 0 } };
if (ioSelected) {
  const ioCode = `async () => (await (await fetch('${upstream.url}/slow')).json()).ok`;
  io.code = ioCode;
  const t1 = performance.now();
  const ioOurs = await startOursHttp({ bin, dir, upstream: upstream.url, track: (p) => children.add(p), code: ioCode, helloCode: 'async () => 1 + 1' });
  console.log(`\nio: \`${ioCode}\`, ${ioSeconds} s per row; started codemode-mcp (HTTP, ${ioOurs.url}) in ${(performance.now() - t1).toFixed(0)} ms`);
  const ioBaselines = [];
  for (const b of baselines) ioBaselines.push(await startOursHttp({ bin: b.bin, dir, upstream: upstream.url, track: (p) => children.add(p), code: ioCode, helloCode: 'async () => 1 + 1', name: b.name }));
  const ioSystems = [ioOurs, ...ioBaselines, ...systems.filter((s) => !s.codemode).map((p) => peerIoSystem(p, ioCode)),
    directLaneSystem(`${upstream.url}/slow`), directFetchSystem(`${upstream.url}/slow`)];
  for (const s of [...ioSystems, ioOurs.second]) {
    const [lane] = await s.openLanes(1);
    let r;
    for (let i = 0; i < Math.min(warmup, 5); i++) {
      try { r = await s.call(lane); } catch (e) { r = { ok: false, error: String(e) }; }
    }
    s.closeLanes([lane]);
    console.log(`warm-up io on ${s.name}: ${JSON.stringify(r).slice(0, 160)}`);
  }
  const roots = ioSystems.flatMap((s) => s.pids());
  await sleep(500);
  const settledProcesses = treesOf(roots).length;
  const settleIo = async () => {
    const started = performance.now();
    io.settle.rows++;
    for (;;) {
      const pids = treesOf([...roots, upstream.proc.pid]);
      const before = cpuNs(pids);
      await sleep(100);
      if (pids.length <= settledProcesses + 1 && cpuNs(pids) - before < 3e6) break;
      if (performance.now() - started > 20000) { io.settle.limit++; break; }
    }
    io.settle.ms += performance.now() - started;
  };
  const report = (r) => console.log(`io ${r.system} c=${r.concurrency}: ${r.rate.toFixed(0)} calls/s, p50 ${r.p50?.toFixed(0)} ms, p99 ${r.p99?.toFixed(0)} ms, ${r.errors} errors${r.peakRssMb ? `, peak RSS ${r.peakRssMb.toFixed(0)} MB` : ''}; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  const rowArgs = { seconds: ioSeconds, expect: true, upstreamPid: upstream.proc.pid, memFloorMb };
  const wouldTakeMb = (s, c) => {
    const last = ioRows.filter((r) => r.system === s.name && r.peakRssMb).at(-1);
    return last ? (last.peakRssMb * c) / last.concurrency : 0;
  };
  for (const [i, c] of ioConcurrencies.entries()) {
    const rotated = ioSystems.map((_, k) => ioSystems[(k + i) % ioSystems.length]);
    for (const s of rotated) {
      await settleIo();
      const available = memAvailableMb();
      if (wouldTakeMb(s, c) > available / 2) {
        const skipped = { system: s.name, concurrency: c, ok: 0, errors: 0, errorKinds: {}, skipped: `would take ~${(wouldTakeMb(s, c) / 1024).toFixed(1)} GB of ${(available / 1024).toFixed(1)} GB available` };
        ioRows.push(skipped);
        console.log(`io ${s.name} c=${c}: not run: it ${skipped.skipped}`);
        continue;
      }
      const { row } = await runIoRow({ system: s, concurrency: c, ...rowArgs });
      ioRows.push(row);
      report(row);
    }
  }
  // codemode-mcp's largest storm again, with a second client (its own token, address and
  // session) calling `execute` on `async () => 1 + 1` one call at a time from 1 s in.
  const storm = Math.max(...ioConcurrencies);
  await settleIo();
  const { row, second } = await runIoRow({ system: ioOurs, concurrency: storm, ...rowArgs,
    beside: { ...ioOurs.second, leadMs: Math.min(1000, ioSeconds * 250) } });
  row.system = `${ioOurs.name}, beside a 2nd client`;
  second.concurrency = `1 beside ${storm}`;
  ioRows.push(row, second);
  report(row);
  report(second);
  await ioOurs.stop();
  for (const b of ioBaselines) await b.stop();
}
for (const s of systems) if (!s.codemode) await s.stop();
if (upstream) {
  upstream.proc.kill('SIGTERM');
  await once(upstream.proc, 'exit');
}
machine.loadEnd = loadavg().map((l) => +l.toFixed(2));

// ---------------------------------------------------------------------------------------------
const rows = [];
for (const w of workloads) {
  for (const c of concurrencies) {
    const mine = cells.get(`${w.name}|${ours.name}|${c}`);
    for (const s of systemsFor(w)) {
      const cell = cells.get(`${w.name}|${s.name}|${c}`);
      const lat = [...cell.latencies].sort((a, b) => a - b);
      const srv = [...cell.serverMs].sort((a, b) => a - b);
      const row = {
        workload: w.name, system: s.name, concurrency: c, calls: lat.length, errors: cell.errors,
        p50: pct(lat, 50), p99: pct(lat, 99), rate: lat.length / cell.seconds, peakRssMb: cell.peakRss,
        serverP50: srv.length ? pct(srv, 50) : null,
      };
      if (s !== ours && mine) {
        const m = rows.find((r) => r.workload === w.name && r.system === ours.name && r.concurrency === c);
        row.p50Ratio = m.p50 / row.p50;
        row.rateRatio = m.rate / row.rate;
      }
      rows.push(row);
    }
  }
}

const f = (v, d = 2) => (v === null || v === undefined || Number.isNaN(v) ? '' : v.toFixed(d));
const table = ['| workload | system | c | p50 ms | p99 ms | calls/s | peak RSS MB | server p50 ms | p50 ours/peer | calls/s ours/peer | errors |',
  '|---|---|---|---|---|---|---|---|---|---|---|'];
for (const r of rows) {
  table.push(`| ${r.workload} | ${r.system} | ${r.concurrency} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.rate, 0)} | ${f(r.peakRssMb, 0)} | ${f(r.serverP50)} | ${f(r.p50Ratio)} | ${f(r.rateRatio)} | ${r.errors} |`);
}
const elapsed = (Date.now() - startedAt.getTime()) / 1000;
console.log();
console.log(`${machine.cpus} CPUs (${machine.model}); load average ${machine.loadStart.join(' ')} at the start, ${machine.loadEnd.join(' ')} at the end; ${elapsed.toFixed(0)} s in all`);
if (rows.length) {
  console.log(`before each of ${settling.slices} slices the peers settled in ${(settling.ms / Math.max(1, settling.slices)).toFixed(0)} ms on average (untimed); ${settling.limit} waited the 2 s limit`);
  console.log(table.join('\n'));
}
if (ioRows.length) {
  const kinds = (k) => Object.entries(k).map(([name, n]) => `${name} ×${n}`).join('; ');
  console.log();
  console.log(`io: \`${io.code}\` (the upstream answers after 200 ms); ${ioSeconds} s per row; before each of ${io.settle.rows} rows the systems settled in ${(io.settle.ms / Math.max(1, io.settle.rows)).toFixed(0)} ms on average (untimed), ${io.settle.limit} waited the 20 s limit`);
  console.log('| system | in flight | calls/s | p50 ms | p99 ms | ok | errors | error kinds | peak RSS MB | RSS at deadline MB | peak processes | harness CPU % | upstream CPU % | machine busy % |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of ioRows) {
    if (r.skipped) { console.log(`| ${r.system} | ${r.concurrency} | not run: it ${r.skipped} |${' |'.repeat(11)}`); continue; }
    console.log(`| ${r.system} | ${r.concurrency} | ${f(r.rate, 0)} | ${f(r.p50, 0)} | ${f(r.p99, 0)} | ${r.ok} | ${r.errors} | ${kinds(r.errorKinds)}${r.aborted ? ` (stopped: ${r.aborted})` : ''} | ${r.peakRssMb ? f(r.peakRssMb, 0) : ''} | ${f(r.endRssMb, 0)} | ${r.peakProcesses || ''} | ${f(r.harnessCpuPct, 0)} | ${f(r.upstreamCpuPct, 0)} | ${f(r.machineBusyPct, 0)} |`);
  }
}

const resultsDir = join(here, 'results');
mkdirSync(resultsDir, { recursive: true });
const stamp = startedAt.toISOString().slice(0, 16).replace(/:/g, '');
const out = opt('out', join(resultsDir, `compare-${stamp}${quick ? '-quick' : ''}.json`));
writeFileSync(out, JSON.stringify({ startedAt: startedAt.toISOString(), seconds: elapsed, quick, calls, rounds, warmup, machine,
  specBytes: specText.length, settling, rows, io: ioSelected ? { ...io, rows: ioRows } : undefined }, null, 2));
console.log(`\nresults: ${out}`);
rmSync(dir, { recursive: true, force: true });
