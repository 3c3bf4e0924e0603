#!/usr/bin/env node
// The agent-task suite: every task of tasks/ through the real binary and the official MCP SDK
// client over stdio, against fixture upstreams started here. Prints one row per task (passed,
// round trips, tokens) and exits 1 if any task that is not marked `needs` failed.
//
//   node tests/tasks/run.mjs                  every task
//   node tests/tasks/run.mjs --only stripe    the tasks whose id contains the text
//   node tests/tasks/run.mjs --try-needs      also run the tasks marked `needs` (reported, never failing the run)
//   node tests/tasks/run.mjs --json FILE      also write every call, its text and tokens as JSON
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { APIS, checkSpecs, connectCodemode } from './lib/apis.mjs';
import { runTask } from './lib/run_task.mjs';
import { toolsTokens, TOKENIZER } from './lib/tokens.mjs';
import { TASKS, NEEDS } from './tasks/index.mjs';

const { values: opts } = parseArgs({
  options: { only: { type: 'string' }, json: { type: 'string' }, 'try-needs': { type: 'boolean' } },
});

const selected = TASKS.filter((t) => !opts.only || t.id.includes(opts.only));
if (selected.length === 0) {
  console.error(`no task id contains ${JSON.stringify(opts.only)}`);
  process.exit(2);
}
const apis = [...new Set(selected.map((t) => t.api))];
checkSpecs(apis);

// A task marked `needs` (or, with --try-needs, one whose first mistake is) never fails the run:
// it is skipped, or under --try-needs reported as passing now (drop the marker) or still failing.
function verdict(task, result) {
  const pending = task.needs ?? (opts['try-needs'] ? task.mistake?.needs : undefined);
  if (!result) return { label: 'skipped', note: `needs ${task.needs}` };
  if (pending) {
    return result.passed ? { label: 'passes now', note: `drop the marker needs ${pending}` }
      : { label: 'skipped', note: `needs ${pending} (tried: still fails)`, detail: true };
  }
  const note = task.mistake?.needs ? `its first mistake skipped: needs ${task.mistake.needs}` : '';
  return result.passed ? { label: 'passed', note } : { label: 'FAILED', note, detail: true, blocking: true };
}

const rows = [];
const report = { tokenizer: TOKENIZER, apis: {}, tasks: [] };
for (const api of apis) {
  const upstream = await APIS[api].start();
  const session = await connectCodemode(api, upstream.origin);
  try {
    const { tools } = await session.client.listTools();
    const listTokens = toolsTokens(tools);
    report.apis[api] = { title: APIS[api].title, source: APIS[api].source, tools_list_tokens: listTokens };
    for (const task of selected.filter((t) => t.api === api)) {
      const result = task.needs && !opts['try-needs'] ? null : await runTask(session, task, { tryNeeds: opts['try-needs'] });
      const v = verdict(task, result);
      rows.push({ task, result, listTokens, ...v });
      report.tasks.push(result
        ? { ...result, api, verdict: v.label, note: v.note, tools_list_tokens: listTokens, context_tokens: listTokens + result.tokens.calls + result.tokens.results }
        : { id: task.id, api, verdict: v.label, note: `${v.note}: ${NEEDS[task.needs]}` });
    }
  } finally {
    await session.close();
    await upstream.stop();
  }
}

const pad = (s, n) => String(s).padEnd(n);
const num = (s, n) => String(s).padStart(n);
console.log(`Tokens: ${TOKENIZER}. Context = tools/list + every call's arguments + every result text.`);
for (const a of Object.values(report.apis)) console.log(`tools/list ${a.title}: ${a.tools_list_tokens} tokens`);
console.log();
console.log(`${pad('task', 36)} ${pad('result', 10)} ${num('trips', 5)} ${num('calls', 6)} ${num('results', 8)} ${num('context', 8)}  note`);
for (const { task, result, listTokens, label, note, detail } of rows) {
  const figures = result
    ? [num(result.round_trips, 5), num(result.tokens.calls, 6), num(result.tokens.results, 8), num(listTokens + result.tokens.calls + result.tokens.results, 8)]
    : [num('', 5), num('', 6), num('', 8), num('', 8)];
  const notes = [note, result?.mistakes ? 'began with its typical first mistake' : '', result?.approvals ? `${result.approvals} approval(s)` : '']
    .filter(Boolean).join('; ');
  console.log(`${pad(task.id, 36)} ${pad(label, 10)} ${figures.join(' ')}  ${notes}`);
  if (detail) for (const p of result.problems) console.log(`    ${p}`);
}
const failed = rows.filter((r) => r.blocking).length;
const ran = rows.filter((r) => ['passed', 'FAILED'].includes(r.label));
console.log();
console.log(`${ran.length - failed} of ${ran.length} tasks passed, ${failed} failed; ${rows.length - ran.length} skipped or tried (they need a feature not on main yet); `
  + `${ran.filter((r) => r.result?.mistakes).length} began with a typical first mistake whose error text said what to fix.`);
if (opts.json) writeFileSync(opts.json, JSON.stringify(report, null, 2));
process.exit(failed ? 1 : 0);
