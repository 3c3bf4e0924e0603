#!/usr/bin/env node
// bench/tokens: the context an agent pays for the same tasks with codemode-mcp and with classic
// OpenAPI MCP servers from npm, side by side in one run. Every server is driven by the official
// MCP SDK client over stdio against the same fixture upstream (a fresh one per server, since the
// tasks write); tokens are o200k_base (gpt-tokenizer). Prints the tables; writes everything,
// the classic servers' call sequences included, to bench/results/tokens-<date>.json.
//
//   node bench/tokens/run.mjs [--only TEXT] [--systems codemode,ivotoby-all,ivotoby-dynamic,generator]
import { mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { cpus, hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import { APIS, checkSpecs, connectCodemode } from '../../tests/tasks/lib/apis.mjs';
import { needsText } from '../../tests/tasks/lib/needs.mjs';
import { runTask } from '../../tests/tasks/lib/run_task.mjs';
import { toolsTokens, TOKENIZER } from '../../tests/tasks/lib/tokens.mjs';
import { TASKS } from '../../tests/tasks/tasks/index.mjs';
import { SYSTEMS, listTools, runClassic } from './classic.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '../..');
const require = createRequire(import.meta.url);
const OCTOKIT_SPEC = join(dirname(require.resolve('@octokit/openapi/package.json')), 'generated/api.github.com.json');

const { values: opts } = parseArgs({
  options: { only: { type: 'string' }, systems: { type: 'string' } },
});
const ALL = ['codemode', ...Object.keys(SYSTEMS)];
const systems = opts.systems ? opts.systems.split(',') : ALL;
for (const s of systems) if (!ALL.includes(s)) throw new Error(`unknown system ${s}; known: ${ALL.join(', ')}`);

// The generated server finds credentials by the description's security scheme names.
const GENERATOR_ENV = {
  markethub: (t) => ({ BEARER_TOKEN_BEARERAUTH: t }),
  stripe: (t) => ({ BEARER_TOKEN_BEARERAUTH: t }),
  slack: (t) => ({ OAUTH_TOKEN_SLACKAUTH: t }),
  github: () => ({}),  // the description declares no scheme; the public repository needs none
};

// The descriptions measured: the four of the tasks, and GitHub's current one (tools/list only).
const ROWS = [
  { key: 'markethub', api: 'markethub' },
  { key: 'stripe', api: 'stripe' },
  { key: 'slack', api: 'slack' },
  { key: 'github', api: 'github' },
  { key: 'github-octokit', api: 'github', spec: OCTOKIT_SPEC, title: 'GitHub REST, current (npm @octokit/openapi 23.0.2, 13 MB)', listOnly: true },
].filter((r) => !opts.only || r.key.includes(opts.only) || TASKS.some((t) => t.api === r.api && !r.listOnly && t.id.includes(opts.only)));
checkSpecs([...new Set(ROWS.map((r) => r.api))]);

const tasksOf = (row) => (row.listOnly ? [] : TASKS.filter((t) => t.api === row.api && (!opts.only || row.key.includes(opts.only) || t.id.includes(opts.only))));

function describeSpec(path) {
  const doc = JSON.parse(readFileSync(path, 'utf8'));
  let operations = 0;
  for (const item of Object.values(doc.paths)) for (const m of ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']) if (item[m]) operations += 1;
  return { paths: Object.keys(doc.paths).length, operations, bytes: readFileSync(path).length };
}

const results = { tokenizer: TOKENIZER, started: new Date().toISOString(), rows: [] };
for (const row of ROWS) {
  const spec = row.spec ?? APIS[row.api].spec;
  const entry = { key: row.key, title: row.title ?? `${APIS[row.api].title} (${APIS[row.api].source})`, ...describeSpec(spec), lists: {}, tasks: {} };
  results.rows.push(entry);
  const tasks = tasksOf(row);
  for (const system of systems) {
    const upstream = await APIS[row.api].start();
    const baseUrl = upstream.origin + APIS[row.api].basePath;
    const started = performance.now();
    let server;
    let list;
    try {
      if (system === 'codemode') {
        server = await connectCodemode(row.api, upstream.origin, { spec });
        const { tools } = await server.client.listTools();
        list = { ok: true, tools, tokens: toolsTokens(tools) };
      } else {
        server = await SYSTEMS[system].start({ api: `${row.key}`, spec, baseUrl, token: APIS[row.api].token, securityEnv: GENERATOR_ENV[row.api] });
        list = await listTools(server.session.client);
      }
      list.start_ms = Math.round(performance.now() - started);
    } catch (error) {
      entry.lists[system] = { ok: false, failed: String(error.message).slice(0, 500), stderr: server?.session?.stderr?.().slice(-500) };
      await server?.session?.close().catch(() => {});
      await upstream.stop();
      continue;
    }
    entry.lists[system] = { ok: list.ok, tools: list.tools.length, tokens: list.tokens, chars: JSON.stringify(list.tools).length,
      start_ms: list.start_ms, ...(list.refused ? { refused: list.refused, tools_not_object: list.bad } : {}) };
    try {
      for (const task of tasks) {
        if (system === 'codemode') {
          const r = await runTask(server, task, { mistakes: false });
          entry.tasks[task.id] ??= {};
          if (r.skipped) { entry.tasks[task.id][system] = { skipped: needsText(r.skipped) }; continue; }
          entry.tasks[task.id][system] = { passed: r.passed, problem: r.problems[0], round_trips: r.round_trips, calls: r.round_trips,
            tokens: r.tokens, context: list.tokens + r.tokens.calls + r.tokens.results,
            sequence: r.calls.map((c) => [{ tool: c.tool, code: c.code, tokens: c.tokens }]) };
        } else {
          const r = await runClassic(server, list, task);
          entry.tasks[task.id] ??= {};
          entry.tasks[task.id][system] = { ...r, context: list.tokens + r.tokens.calls + r.tokens.results, list_refused: !list.ok };
        }
      }
    } finally {
      await (system === 'codemode' ? server.close() : server.session.close());
      await upstream.stop();
    }
  }
}
results.finished = new Date().toISOString();

// ---- Tables ----
const fmt = (n) => (n === undefined || n === null ? '' : Number(n).toLocaleString('en-US'));
const short = { codemode: 'codemode-mcp', 'ivotoby-all': 'classic: 1 tool/op', 'ivotoby-dynamic': 'classic: dynamic', generator: 'generated server' };
const lines = [];
const out = (s = '') => { lines.push(s); console.log(s); };

out(`Tokens: ${TOKENIZER}. Servers, each over stdio with the MCP SDK client 1.32.2:`);
out('  codemode-mcp: this build (2 tools: search, execute)');
for (const s of systems.filter((x) => x !== 'codemode')) out(`  ${short[s]}: ${SYSTEMS[s].title}`);
out();
out('### tools/list: tokens of the tool definitions (tools)');
out();
out(`| API description | paths / operations | ${systems.map((s) => short[s]).join(' | ')} |`);
out(`|---|---|${systems.map(() => '---').join('|')}|`);
for (const e of results.rows) {
  const cell = (l) => {
    if (!l) return '';
    if (l.failed) return `fails: ${l.failed.split('\n')[0].slice(0, 80)}`;
    const base = `${fmt(l.tokens)} (${fmt(l.tools)})`;
    return l.ok ? base : `${base}, refused by the SDK client*`;
  };
  out(`| ${e.title} | ${fmt(e.paths)} / ${fmt(e.operations)} | ${systems.map((s) => cell(e.lists[s])).join(' | ')} |`);
}
const refusals = results.rows.flatMap((e) => Object.entries(e.lists).filter(([, l]) => l.refused).map(([s, l]) => `${short[s]} on ${e.key}: ${l.tools_not_object} of ${l.tools} tools have an inputSchema whose type is not "object"; listTools() fails with "${l.refused.slice(0, 160)}"`));
if (refusals.length) {
  out();
  out('\\* The server starts and answers tools/list, but the official SDK client refuses the answer, so an agent on it gets no tools at all; the count is of what the server sent (the per-task figures below use it as if a client had accepted it):');
  for (const r of refusals) out(`  - ${r}`);
}

const seqText = (seq) => (seq ?? []).map((turn) => {
  const names = {};
  for (const c of turn) names[c.tool] = (names[c.tool] ?? 0) + 1;
  return Object.entries(names).map(([n, k]) => (k > 1 ? `${k}× ${n}` : n)).join(' + ');
}).join(' → ');

out();
out('### Per task: round trips; tokens of the calls\' arguments + of the results; context (tools/list + both), happy path');
out();
const classic = systems.filter((s) => s !== 'codemode');
out(`| task | codemode-mcp | ${classic.map((s) => short[s]).join(' | ')} | ${classic[0] ? `${short[classic[0]]} ÷ codemode-mcp` : ''} |`);
out(`|---|---|${classic.map(() => '---').join('|')}|---|`);
for (const e of results.rows) {
  for (const [id, per] of Object.entries(e.tasks)) {
    const cm = per.codemode;
    const cells = [];
    const cellOf = (r) => {
      if (!r) return '';
      if (r.skipped) return `skipped (${r.skipped})`;
      const mark = r.passed ? '' : ' ✗';
      return `${r.round_trips}; ${fmt(r.tokens.calls)} + ${fmt(r.tokens.results)}; ${fmt(r.context)}${r.list_refused ? '*' : ''}${mark}`;
    };
    cells.push(cellOf(cm));
    for (const s of classic) cells.push(cellOf(per[s]));
    const first = per[classic[0]];
    const ratio = cm?.passed && first?.passed ? `${(first.context / cm.context).toFixed(1)}× context, ${(first.round_trips / cm.round_trips).toFixed(1)}× trips` : '';
    out(`| ${id} | ${cells.join(' | ')} | ${ratio} |`);
  }
}
out();
out('✗: the server did not reach the answer (why: below); skipped: the codemode-mcp task needs a feature not on main yet (tests/tasks/README.md).');
const misses = results.rows.flatMap((e) => Object.entries(e.tasks).flatMap(([id, per]) => Object.entries(per)
  .filter(([, r]) => r.passed === false).map(([s, r]) => `${id} on ${short[s]}: ${r.problem}${r.first_error ? `; first error: ${r.first_error}` : ''}`)));
if (misses.length) {
  out();
  out('Why each ✗:');
  for (const m of misses) out(`  - ${m.replace(/\s+/g, ' ').slice(0, 400)}`);
}
out();
out('### Totals per API: each server against codemode-mcp over the tasks both completed');
out();
out('| API | server | tasks | codemode-mcp: context (trips; written) | server: context (trips; written) | server ÷ codemode-mcp |');
out('|---|---|---|---|---|---|');
for (const e of results.rows) {
  if (!Object.keys(e.tasks).length) continue;
  e.totals = {};
  for (const s of classic) {
    const ids = Object.entries(e.tasks).filter(([, per]) => per.codemode?.passed && per[s]?.passed).map(([id]) => id);
    const sum = (sys, key) => ids.reduce((a, id) => a + (key === 'written' ? e.tasks[id][sys].tokens.calls : e.tasks[id][sys][key]), 0);
    const side = (sys) => ({ context: sum(sys, 'context'), round_trips: sum(sys, 'round_trips'), written: sum(sys, 'written') });
    const t = { tasks: ids.length, codemode: side('codemode'), server: side(s) };
    e.totals[s] = t;
    if (!ids.length) continue;
    out(`| ${e.key} | ${short[s]} | ${ids.length} | ${fmt(t.codemode.context)} (${t.codemode.round_trips}; ${fmt(t.codemode.written)}) | ${fmt(t.server.context)} (${t.server.round_trips}; ${fmt(t.server.written)})`
      + ` | ${(t.server.context / t.codemode.context).toFixed(1)}× context, ${(t.server.round_trips / t.codemode.round_trips).toFixed(2)}× trips |`);
  }
}
const overall = {};
for (const e of results.rows) {
  for (const [s, t] of Object.entries(e.totals ?? {})) {
    overall[s] ??= { tasks: 0, codemode: { context: 0, round_trips: 0, written: 0 }, server: { context: 0, round_trips: 0, written: 0 } };
    overall[s].tasks += t.tasks;
    for (const side of ['codemode', 'server']) for (const k of ['context', 'round_trips', 'written']) overall[s][side][k] += t[side][k];
  }
}
for (const [s, t] of Object.entries(overall)) {
  if (!t.tasks) continue;
  out(`| all | ${short[s]} | ${t.tasks} | ${fmt(t.codemode.context)} (${t.codemode.round_trips}; ${fmt(t.codemode.written)}) | ${fmt(t.server.context)} (${t.server.round_trips}; ${fmt(t.server.written)})`
    + ` | ${(t.server.context / t.codemode.context).toFixed(1)}× context, ${(t.server.round_trips / t.codemode.round_trips).toFixed(2)}× trips |`);
}
results.overall = overall;
out();
out('### The classic server\'s calls per task (one tool per operation; → separates round trips)');
out();
for (const e of results.rows) {
  for (const [id, per] of Object.entries(e.tasks)) {
    const r = per['ivotoby-all'];
    if (r) out(`- ${id}: ${seqText(r.sequence) || '(no call: the tool definitions answer it)'}`);
  }
}

let commit = '';
try { commit = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { /* not a checkout */ }
results.machine = { host: hostname(), cpus: cpus().length, model: cpus()[0]?.model, node: process.version, commit };
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
const file = join(ROOT, `bench/results/tokens-${results.started.slice(0, 16).replace(/[:T]/g, '-')}.json`);
writeFileSync(file, JSON.stringify(results, null, 2));
const seconds = Math.round((Date.parse(results.finished) - Date.parse(results.started)) / 1000);
console.log(`\nrun: ${results.started.slice(0, 16).replace('T', ' ')} UTC, commit ${commit || '?'}, ${seconds} s `
  + `(node ${process.version}, ${cpus().length} CPUs: ${cpus()[0]?.model ?? '?'}); results: ${file}`);
