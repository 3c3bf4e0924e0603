// bench/compare's I/O-bound workload: code that awaits one fetch() of a slow upstream (it
// answers after 200 ms, bench/slow_upstream.mjs), run with many calls in flight. What it
// measures is how many waiting calls a system holds at once and what holding them costs, not
// how fast it computes. This module holds the pieces: the time-bounded row, the process-tree
// sampling, codemode-mcp over Streamable HTTP with two clients, and the two no-sandbox baselines.
//
// A row: `concurrency` lanes, each a closed loop (one call at a time, the next as soon as the last
// answered) for `seconds`, after one untimed call on every lane at once; calls still in flight at
// the deadline are awaited (each call is bounded by `callTimeoutMs`). calls/s = successful calls
// over the time from the start to the last answer; p50/p99 over successful calls only, so a refusal
// answered in 1 ms does not pass for a fast call. A failed call (HTTP 429 included) is counted and
// never retried; its lane waits until `pauseAfterErrorMs` (the upstream's delay) have passed since
// the call began before its next call, so a refused lane offers no more load than a served one and
// an instant refusal does not become a busy loop that measures the harness instead of the system.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Lane } from './lane.mjs';

export const callTimeoutMs = 30000;
export const pauseAfterErrorMs = 200;
const sampleMs = 250;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const pct = (sorted, p) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;

// ---------------------------------------------------------------------------------------------
// /proc: the process tree by one scan of /proc/*/stat (parent links), so a sample costs the same
// whether a tree has 3 processes or 300 with a dozen threads each.
function parentLinks() {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) > 57) continue; // not a pid
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ', 2)[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(name));
    } catch { /* exited while listed */ }
  }
  return children;
}

export function treesOf(rootPids) {
  const children = parentLinks();
  const out = [];
  const stack = [...rootPids];
  while (stack.length) {
    const pid = stack.pop();
    out.push(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return out;
}

// The summed resident set of the trees under `rootPids`, in MB (statm's resident pages: the
// figure VmRSS shows; shared pages count once per process), and how many processes they hold.
export function treesRss(rootPids) {
  const pids = treesOf(rootPids);
  let pages = 0;
  for (const pid of pids) {
    try { pages += Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]); } catch { /* exited */ }
  }
  return { mb: (pages * 4096) / 2 ** 20, processes: pids.length };
}

// CPU seconds (user + system, all threads) a live process has used so far.
export function processCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks
  } catch { return NaN; }
}

// The whole machine's busy and total CPU time so far (jiffies, from /proc/stat's cpu line).
function machineCpu() {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

export function memAvailableMb() {
  return Number(/MemAvailable:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))[1]) / 1024;
}

// ---------------------------------------------------------------------------------------------
// Lanes (bench/lane.mjs: one keep-alive connection, one request at a time).

// POSTs on `lane`; past `ms` the lane's connection is closed, which fails the request.
export async function timedPost(lane, body, headers, ms = callTimeoutMs) {
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; lane.close(); }, ms);
  try {
    return await lane.post(body, headers);
  } catch (e) {
    throw timedOut ? new Error(`timeout: no answer in ${ms / 1000} s`) : e;
  } finally {
    clearTimeout(timer);
  }
}

// Opens each lane's connection before a row, so connecting is never timed.
export async function connectLanes(lanes) {
  await Promise.all(lanes.map((lane) => new Promise((resolve, reject) => {
    const socket = lane.connect();
    if (!socket.connecting) return resolve();
    socket.once('connect', resolve);
    socket.once('error', reject);
  })));
  return lanes;
}

// A short, stable name for what went wrong, for the table's error column.
function errorKind(r) {
  if (r.kind) return r.kind;
  const text = String(r.error ?? 'unknown');
  if (/^timeout: no answer/.test(text)) return 'no answer in 30 s';
  if (/closed the connection|ECONNRESET|EPIPE/.test(text)) return 'connection closed';
  return text.slice(0, 40);
}

// ---------------------------------------------------------------------------------------------
// One time-bounded row. `system`: {name, pids() -> root pids whose trees are the system,
// openLanes(n) -> lanes, call(lane) -> {ok, result} | {ok: false, error, kind}, closeLanes(lanes)}.
// `beside` (optional): a second client's closed loop run during the same window, from
// `beside.leadMs` after the start to the deadline, one call at a time: {openLanes, call,
// closeLanes, expect}. `upstreamPid`: its CPU is reported. `memFloorMb`: the row stops early if
// the machine's MemAvailable falls below it: every lane is closed, every process under the
// system's roots (per-call processes, sandbox processes) is killed, and the row is marked.
export async function runIoRow({ system, concurrency, seconds, expect, upstreamPid, memFloorMb, beside, log = console.error }) {
  const lanes = await system.openLanes(concurrency);
  const besideLanes = beside ? await beside.openLanes(1) : null;
  // One untimed call per lane, all at once, for every system alike: what a system sets up to hold
  // this many calls (sandbox processes and their threads, pools, per-call processes' caches) is
  // set up before the row is timed, as connecting is.
  await Promise.all(lanes.map((lane) => Promise.resolve().then(() => system.call(lane)).catch(() => null)));
  const row = { system: system.name, concurrency, ok: 0, errors: 0, errorKinds: {}, latencies: [], peakRssMb: 0, endRssMb: null, peakProcesses: 0, aborted: null };
  const pids = system.pids();
  let sampling = Promise.resolve();
  const sample = () => {
    if (!pids.length) return null;
    const s = treesRss(pids);
    row.peakRssMb = Math.max(row.peakRssMb, s.mb);
    row.peakProcesses = Math.max(row.peakProcesses, s.processes);
    return s;
  };
  const abort = (why) => {
    if (row.aborted) return;
    row.aborted = why;
    log(`  ${system.name} io c=${concurrency}: stopped early: ${why}`);
    system.closeLanes(lanes);
    if (besideLanes) beside.closeLanes(besideLanes);
    for (const pid of treesOf(pids)) {
      if (!pids.includes(pid)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    }
  };
  sample();
  const sampler = setInterval(() => {
    sampling = sampling.then(() => {
      sample();
      if (memAvailableMb() < memFloorMb) abort(`MemAvailable under ${memFloorMb} MB`);
    });
  }, sampleMs);
  const cpu0 = process.cpuUsage();
  const machine0 = machineCpu();
  const upstream0 = processCpuSeconds(upstreamPid);
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let lastAnswer = started;
  const endTimer = setTimeout(() => { row.endRssMb = sample()?.mb ?? null; }, seconds * 1000);
  const hardStop = setTimeout(() => abort('calls still running 30 s past the deadline'), seconds * 1000 + callTimeoutMs + 5000);

  async function loop(lane, record, call, want) {
    while (performance.now() < deadline && !row.aborted) {
      const t0 = performance.now();
      let r;
      try { r = await call(lane); } catch (e) { r = { ok: false, error: String(e?.message ?? e) }; }
      const t1 = performance.now();
      lastAnswer = Math.max(lastAnswer, t1);
      if (r.ok && r.result === want) {
        record.ok++;
        record.latencies.push(t1 - t0);
        continue;
      }
      if (row.aborted) break;
      const kind = r.ok ? `wrong result ${JSON.stringify(r.result)?.slice(0, 30)}` : errorKind(r);
      record.errors++;
      record.errorKinds[kind] = (record.errorKinds[kind] ?? 0) + 1;
      if (record.errors <= 2) log(`  ${record.system} io c=${record.concurrency}: ${r.ok ? kind : r.error}`);
      await sleep(Math.max(0, pauseAfterErrorMs - (t1 - t0)));
    }
  }

  let second = null;
  const loops = lanes.map((lane) => loop(lane, row, (l) => system.call(l), expect));
  if (beside) {
    second = { system: beside.name, concurrency: 1, ok: 0, errors: 0, errorKinds: {}, latencies: [] };
    loops.push(sleep(beside.leadMs).then(() => loop(besideLanes[0], second, (l) => beside.call(l), beside.expect)));
  }
  await Promise.all(loops);
  const wall = (lastAnswer - started) / 1000;
  clearTimeout(endTimer);
  clearTimeout(hardStop);
  clearInterval(sampler);
  await sampling;
  const cpu = process.cpuUsage(cpu0);
  const machine1 = machineCpu();
  system.closeLanes(lanes);
  if (besideLanes) beside.closeLanes(besideLanes);

  const summarize = (r, seconds) => {
    const lat = r.latencies.sort((a, b) => a - b);
    r.rate = r.ok / seconds;
    r.p50 = pct(lat, 50);
    r.p99 = pct(lat, 99);
    delete r.latencies;
    return r;
  };
  summarize(row, wall);
  row.seconds = wall;
  row.harnessCpuPct = ((cpu.user + cpu.system) / 1e6 / wall) * 100;
  row.upstreamCpuPct = ((processCpuSeconds(upstreamPid) - upstream0) / wall) * 100;
  row.machineBusyPct = ((machine1.busy - machine0.busy) / (machine1.total - machine0.total)) * 100;
  if (second) {
    summarize(second, Math.max(1e-3, wall - beside.leadMs / 1000));
    second.beside = `${system.name} at ${concurrency} in flight`;
  }
  return { row, second };
}

// ---------------------------------------------------------------------------------------------
// codemode-mcp over Streamable HTTP, with `execute` reaching the upstream. Two clients, each its
// own principal as far as the server can tell one apart today: its own bearer token, its own
// source address (127.0.0.1 and 127.0.0.2) and its own MCP session; every lane of a client is
// a keep-alive connection from that address carrying that session and token. A lane is admitted
// with a `ping` before the row (the server keeps at most 32 unauthenticated connections waiting
// per address), 8 at a time, under the per-address limit of 16 requests in flight.
export async function startOursHttp({ bin, dir, upstream, track, code, helloCode, name = 'codemode-mcp' }) {
  const tokens = [randomBytes(16).toString('hex'), randomBytes(16).toString('hex')];
  const specFile = join(dir, `io-openapi-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(specFile, JSON.stringify({
    openapi: '3.0.3', info: { title: 'Slow upstream (bench/slow_upstream.mjs)', version: '1.0.0' },
    servers: [{ url: upstream }],
    paths: { '/slow': { get: { operationId: 'slow', responses: { 200: { description: 'after 200 ms: {"ok": true}' } } } } },
  }));
  const configFile = join(dir, `io-config-${randomBytes(4).toString('hex')}.json`);
  writeFileSync(configFile, JSON.stringify({
    openapi: specFile, upstreams: [{ origin: upstream }],
    limits: { cpu_ms: 5000, wall_ms: 20000 }, http: { bearer_tokens: tokens },
  }));
  const proc = spawn(bin, ['--config', configFile, '--http', '127.0.0.1:0', '--log-level', 'info'], { stdio: ['ignore', 'ignore', 'pipe'] });
  track(proc);
  let shown = 0;
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: proc.stderr }).on('line', (line) => {
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1]);
      if (/\b(error|critical)\b/.test(line) && shown++ < 5) process.stderr.write(`[codemode-mcp io] ${line}\n`);
    });
    proc.on('exit', (status) => reject(new Error(`codemode-mcp (io) exited (${status}) before listening`)));
  });

  async function client(address, token, name) {
    const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${token}` };
    const lane = new Lane(url, address);
    const init = await timedPost(lane, JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name, version: '1' } } }), headers);
    const session = init.headers['mcp-session-id'];
    if (init.status !== 200 || !session) throw new Error(`initialize on ${url}: HTTP ${init.status} ${init.body.slice(0, 200)}`);
    headers['mcp-session-id'] = session;
    await timedPost(lane, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers);
    lane.close();
    let id = 1;
    return {
      async openLanes(count) {
        const lanes = Array.from({ length: count }, () => new Lane(url, address));
        for (let i = 0; i < lanes.length; i += 8) {
          await Promise.all(lanes.slice(i, i + 8).map(async (l) => {
            const r = await timedPost(l, JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'ping' }), headers);
            if (r.status !== 200) throw new Error(`ping on ${url} from ${address}: HTTP ${r.status} ${r.body.slice(0, 200)}`);
          }));
        }
        return lanes;
      },
      closeLanes(lanes) { for (const l of lanes) l.close(); },
      async call(lane, text) {
        const r = await timedPost(lane, JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'execute', arguments: { code: text } } }), headers);
        if (r.status !== 200) return { ok: false, error: `HTTP ${r.status}: ${r.body.slice(0, 160)}`, kind: `HTTP ${r.status}` };
        let body = r.body;
        if (body.startsWith('event:') || body.startsWith('data:')) body = /^data: (.*)$/m.exec(body)?.[1] ?? body;
        const msg = JSON.parse(body);
        if (msg.error) return { ok: false, error: msg.error.message, kind: `JSON-RPC ${msg.error.code}` };
        const result = msg.result;
        const out = result.content?.[0]?.text;
        if (result.isError) return { ok: false, error: out, kind: String(out).split(':')[0] };
        try { return { ok: true, result: JSON.parse(out) }; } catch { return { ok: true, result: out }; }
      },
    };
  }

  const principal = await client('127.0.0.1', tokens[0], 'compare-io-principal');
  const second = await client('127.0.0.2', tokens[1], 'compare-io-second');
  return {
    name,
    proc,
    url,
    pids: () => [proc.pid],
    openLanes: (n) => principal.openLanes(n),
    closeLanes: (lanes) => principal.closeLanes(lanes),
    call: (lane) => principal.call(lane, code),
    // The second client, for the row beside the storm: `async () => 1 + 1` through `execute`.
    second: {
      name: 'codemode-mcp: 2nd client, execute 1 + 1',
      openLanes: (n) => second.openLanes(n),
      closeLanes: (lanes) => second.closeLanes(lanes),
      call: (lane) => second.call(lane, helloCode),
      expect: 2,
    },
    async stop() {
      proc.kill('SIGTERM');
      if (proc.exitCode === null && proc.signalCode === null) await new Promise((r) => proc.once('exit', r));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The no-sandbox baselines: the harness itself asks the upstream, with no system in between.
// `lane`: the same bench/lane.mjs connections every other row's calls travel on (POST, which
// the upstream answers like GET): the most this harness can drive through its lanes with the
// machine's other work. `node fetch`: node's fetch (undici's global agent: keep-alive, no
// limit on connections per origin), the plain node client of the issue that asked for this
// workload.
export function directLaneSystem(upstreamUrl) {
  return {
    name: 'no sandbox: lane',
    pids: () => [],
    async openLanes(n) { return connectLanes(Array.from({ length: n }, () => new Lane(upstreamUrl))); },
    closeLanes(lanes) { for (const l of lanes) l.close(); },
    async call(lane) {
      const r = await timedPost(lane, '{}');
      if (r.status !== 200) return { ok: false, error: `HTTP ${r.status}`, kind: `HTTP ${r.status}` };
      return { ok: true, result: JSON.parse(r.body).ok };
    },
  };
}

export function directFetchSystem(upstreamUrl) {
  return {
    name: 'no sandbox: node fetch',
    pids: () => [],
    async openLanes(n) { return Array.from({ length: n }, () => ({ controller: new AbortController() })); },
    closeLanes(lanes) { for (const l of lanes) l.controller.abort(); },
    async call(lane) {
      const signal = AbortSignal.any([lane.controller.signal, AbortSignal.timeout(callTimeoutMs)]);
      const r = await fetch(upstreamUrl, { signal });
      if (r.status !== 200) return { ok: false, error: `HTTP ${r.status}`, kind: `HTTP ${r.status}` };
      return { ok: true, result: (await r.json()).ok };
    },
  };
}

// A bench/peers/ HTTP server as an I/O row's system: POST {code, workload: 'io'} per call.
export function peerIoSystem(peer, code) {
  return {
    name: peer.name,
    pids: () => [peer.proc.pid],
    async openLanes(n) { return connectLanes(Array.from({ length: n }, () => new Lane(peer.url))); },
    closeLanes(lanes) { for (const l of lanes) l.close(); },
    async call(lane) {
      const r = await timedPost(lane, JSON.stringify({ code, workload: 'io' }));
      if (r.status !== 200) return { ok: false, error: `HTTP ${r.status}: ${r.body.slice(0, 160)}`, kind: `HTTP ${r.status}` };
      return JSON.parse(r.body);
    },
  };
}
