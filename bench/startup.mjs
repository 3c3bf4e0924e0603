// Cold start and idle memory of one or more builds of codemode-mcp, interleaved in one sitting.
//
//   node bench/startup.mjs --bins new=build/codemode-mcp,old=/path/to/other/codemode-mcp
//                          [--rounds 5] [--idle-seconds 5]
//
// Per round and build (the order rotating each round), with GitHub's REST description (npm
// `@octokit/openapi`, 13 MB) and with the built-in MarketHub demo: the time from spawning the
// server to the first answer of a `search` call over stdio through the SDK client (the server's
// start-up, the document's load, the first sandbox process, its first isolate), then, after
// `--idle-seconds` with nothing to do, the RSS of the server and of each process under it.
// Prints the medians per build and writes nothing else.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { mkdtempSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { treesOf } from './io_rows.mjs';

const argv = process.argv.slice(2);
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : fallback; };
const bins = String(opt('bins', 'codemode-mcp=build/codemode-mcp')).split(',').map((b) => { const [name, path] = b.split('='); return { name, path }; });
const rounds = Number(opt('rounds', 5));
const idleSeconds = Number(opt('idle-seconds', 5));
const githubSpec = createRequire(import.meta.url).resolve('@octokit/openapi/generated/api.github.com.json');
const dir = mkdtempSync(join(tmpdir(), 'codemode-startup-'));
const githubConfig = join(dir, 'github.json');
writeFileSync(githubConfig, JSON.stringify({ openapi: githubSpec }));
const specs = [{ name: 'GitHub', args: ['--config', githubConfig] }, { name: 'MarketHub', args: [] }];

const rssMb = (pid) => { try { return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024; } catch { return 0; } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

async function once(bin, spec) {
  const t0 = performance.now();
  const transport = new StdioClientTransport({ command: bin.path, args: spec.args, stderr: 'ignore' });
  const client = new Client({ name: 'codemode-startup', version: '1.0.0' });
  await client.connect(transport);
  const result = await client.callTool({ name: 'search', arguments: { code: 'async () => 1 + 1' } });
  const firstAnswerMs = performance.now() - t0;
  if (result.isError || result.content?.[0]?.text !== '2') throw new Error(`${bin.name}: unexpected answer ${JSON.stringify(result).slice(0, 200)}`);
  await sleep(idleSeconds * 1000);
  const pids = treesOf([transport.pid]);
  const server = rssMb(transport.pid);
  const processes = pids.filter((p) => p !== transport.pid).map(rssMb);
  await client.close();
  return { firstAnswerMs, server, processes, tree: server + processes.reduce((a, b) => a + b, 0) };
}

console.log(`bench/startup: ${rounds} rounds, ${idleSeconds} s idle; load average at start ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const results = new Map();
for (let round = 0; round < rounds; round++) {
  for (const spec of specs) {
    for (let i = 0; i < bins.length; i++) {
      const bin = bins[(i + round) % bins.length];
      const r = await once(bin, spec);
      const key = `${spec.name}|${bin.name}`;
      if (!results.has(key)) results.set(key, []);
      results.get(key).push(r);
    }
  }
}
console.log('| spec | build | first answer ms (median, min–max) | idle RSS MB: server + sandbox processes = tree (medians) |');
console.log('|---|---|---|---|');
for (const spec of specs) {
  for (const bin of bins) {
    const rs = results.get(`${spec.name}|${bin.name}`);
    const first = rs.map((r) => r.firstAnswerMs);
    const procs = rs[0].processes.map((_, k) => median(rs.map((r) => r.processes[k] ?? 0)).toFixed(1));
    console.log(`| ${spec.name} | ${bin.name} | ${median(first).toFixed(0)} (${Math.min(...first).toFixed(0)}–${Math.max(...first).toFixed(0)}) | ${median(rs.map((r) => r.server)).toFixed(1)} + ${procs.join(' + ')} = ${median(rs.map((r) => r.tree)).toFixed(1)} |`);
  }
}
console.log(`load average at end ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
rmSync(dir, { recursive: true, force: true });
