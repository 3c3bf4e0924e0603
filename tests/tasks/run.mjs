#!/usr/bin/env node
// The agent-task suite: every task of tasks/ through the real binary and the official MCP SDK
// client over stdio, against fixture upstreams started here. Prints one row per task (passed,
// round trips, tokens) and a summary line; exits 1 if a task ran and failed. A task whose
// `needs` the running server does not meet (lib/needs.mjs probes it) is skipped and says so.
//
//   node tests/tasks/run.mjs                  every task
//   node tests/tasks/run.mjs --only stripe    the tasks whose id contains the text
//   node tests/tasks/run.mjs --json FILE      also write every call, its text and tokens as JSON
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { APIS, checkSpecs, connectCodemode } from './lib/apis.mjs';
import { NEEDS, needsText } from './lib/needs.mjs';
import { runTask } from './lib/run_task.mjs';
import { toolsTokens, TOKENIZER } from './lib/tokens.mjs';
import { TASKS } from './tasks/index.mjs';

const { values: opts } = parseArgs({ options: { only: { type: 'string' }, json: { type: 'string' } } });

const selected = TASKS.filter((t) => !opts.only || t.id.includes(opts.only));
if (selected.length === 0) {
  console.error(`no task id contains ${JSON.stringify(opts.only)}`);
  process.exit(2);
}
const apis = [...new Set(selected.map((t) => t.api))];
checkSpecs(apis);

const started = performance.now();
const rows = [];
const report = { tokenizer: TOKENIZER, needs: Object.fromEntries(Object.entries(NEEDS).map(([k, n]) => [k, n.what])), apis: {}, tasks: [] };
for (const api of apis) {
  const upstream = await APIS[api].start();
  // Under the sanitizers everything in a sandbox process runs several times slower, and a
  // TypeScript call's type stripping (~13 ms of the default 50 ms) does not fit: the tasks check
  // answers, not CPU budgets, so that build gets more room (ctest sets CODEMODE_SANITIZED).
  const limits = process.env.CODEMODE_SANITIZED === '1' ? { cpu_ms: 500, wall_ms: 20000 } : undefined;
  const session = await connectCodemode(api, upstream.origin, { limits });
  try {
    const { tools } = await session.client.listTools();
    const listTokens = toolsTokens(tools);
    report.apis[api] = { title: APIS[api].title, source: APIS[api].source, tools_list_tokens: listTokens };
    for (const task of selected.filter((t) => t.api === api)) {
      const result = await runTask(session, task);
      const label = result.skipped ? 'skipped' : result.passed ? 'passed' : 'FAILED';
      rows.push({ task, result, listTokens, label });
      report.tasks.push(result.skipped
        ? { id: task.id, api, verdict: label, needs_not_met: result.skipped }
        : { ...result, api, verdict: label, tools_list_tokens: listTokens, context_tokens: listTokens + result.tokens.calls + result.tokens.results });
    }
    report.apis[api].features = Object.fromEntries(session.features ?? []);
  } finally {
    await session.close();
    await upstream.stop();
  }
}

const pad = (s, n) => String(s).padEnd(n);
const num = (s, n) => String(s).padStart(n);
const fmt = (n) => n.toLocaleString('en-US');
console.log(`Tokens: ${TOKENIZER}. Context = tools/list + every call's arguments + every result text.`);
for (const a of Object.values(report.apis)) console.log(`tools/list ${a.title}: ${a.tools_list_tokens} tokens`);
console.log();
console.log(`${pad('task', 36)} ${pad('result', 8)} ${num('trips', 5)} ${num('calls', 6)} ${num('results', 8)} ${num('context', 8)}  note`);
for (const { task, result, listTokens, label } of rows) {
  const ran = !result.skipped;
  const figures = ran
    ? [num(result.round_trips, 5), num(result.tokens.calls, 6), num(result.tokens.results, 8), num(listTokens + result.tokens.calls + result.tokens.results, 8)]
    : [num('', 5), num('', 6), num('', 8), num('', 8)];
  const notes = ran
    ? [result.mistake_skipped ? `its first mistake skipped (${needsText(result.mistake_skipped)})` : '',
      result.mistakes ? 'began with its typical first mistake' : '', result.approvals ? `${result.approvals} approval(s)` : '']
    : [`(${needsText(result.skipped)})`];
  console.log(`${pad(task.id, 36)} ${pad(label, 8)} ${figures.join(' ')}  ${notes.filter(Boolean).join('; ')}`);
  if (label === 'FAILED') for (const p of result.problems) console.log(`    ${p}`);
}
const ran = rows.filter((r) => !r.result.skipped).map((r) => r.result);
const failed = ran.filter((r) => !r.passed).length;
const skipped = rows.length - ran.length;
const sum = (f) => ran.reduce((a, r) => a + f(r), 0);
const unmet = [...new Set(rows.flatMap((r) => r.result.skipped ?? r.result.mistake_skipped ?? []))].sort();
report.summary = {
  tasks: rows.length, passed: ran.length - failed, failed, skipped, needs_not_met: unmet,
  round_trips: sum((r) => r.round_trips), tokens: { calls: sum((r) => r.tokens.calls), results: sum((r) => r.tokens.results) },
  first_mistakes: sum((r) => r.mistakes), seconds: Math.round((performance.now() - started) / 100) / 10,
};
const s = report.summary;
console.log();
console.log(`tasks: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped of ${s.tasks}`
  + `${unmet.length ? ` (not met: ${unmet.join(', ')})` : ''}; the ${ran.length} run: ${s.round_trips} round trips, `
  + `${fmt(s.tokens.calls)} tokens written, ${fmt(s.tokens.results)} read, ${s.first_mistakes} typical first mistakes whose error text said what to fix; ${s.seconds} s`);
if (opts.json) writeFileSync(opts.json, JSON.stringify(report, null, 2));
process.exit(failed ? 1 : 0);
