// Runs one task through a codemode-mcp session the way an agent would: its first mistake (if it
// has one), whose error text must say what to fix, then its steps in order; the last step's
// result must be the task's answer. Every call is counted: round trips and o200k tokens of the
// arguments the model writes and of the result text it reads.
import { isDeepStrictEqual } from 'node:util';
import { callTokens, resultText, tokens } from './tokens.mjs';
import { unmetNeeds } from './needs.mjs';

export function describeValue(value) {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

// The answer check: a literal is compared deeply; a function returns true or says what is wrong.
export function checkAnswer(expected, actual) {
  if (typeof expected === 'function') {
    const verdict = expected(actual);
    return verdict === true ? null : verdict || `unexpected answer ${describeValue(actual)}`;
  }
  return isDeepStrictEqual(actual, expected) ? null : `expected ${describeValue(expected)}, got ${describeValue(actual)}`;
}

// The value a model reads in a result's text. A result cut within result_chars is still JSON,
// followed by the cut note on a line of its own (README, the tools' contract).
function parse(text) {
  try { return JSON.parse(text); } catch { /* maybe cut */ }
  const note = text.lastIndexOf('\n…[cut: ');
  if (note > 0) {
    try { return JSON.parse(text.slice(0, note)); } catch { /* not JSON */ }
  }
  return text;
}

// A task whose `needs` the server does not meet is not run: the result is {id, skipped: [the
// needs not met]}. `task.mistake` is left out while its own `needs` are not met (`mistake_skipped`
// says which); `mistakes: false` leaves every mistake out (bench/tokens compares the paths
// without them). On an API whose methods live under a base path (Slack's /api), the code names
// it until the server resolves relative URLs under it (#37 base path); from then on the code is
// written as the description's paths are, as a model reading it would.
export async function runTask(session, task, { mistakes = true } = {}) {
  const unmet = await unmetNeeds(session, task.needs);
  if (unmet.length) return { id: task.id, skipped: unmet };
  const rebased = session.basePath && (await unmetNeeds(session, ['#37 base path'])).length === 0;
  const codeOf = (code) => (rebased ? code.replaceAll(`'${session.basePath}/`, "'/").replaceAll(`\`${session.basePath}/`, '`/') : code);
  const calls = [];
  const call = async (step, role) => {
    const args = { code: codeOf(step.code) };
    const started = performance.now();
    const result = await session.client.callTool({ name: step.tool, arguments: args }, undefined, { timeout: 60000 });
    const text = resultText(result);
    const entry = {
      role, tool: step.tool, code: args.code, is_error: result.isError === true, text,
      tokens: { call: callTokens(step.tool, args), result: tokens(text) },
      ms: Math.round(performance.now() - started),
      cpu_ms: result.structuredContent?.usage?.cpu_ms,
    };
    calls.push(entry);
    return entry;
  };
  const mistakeUnmet = mistakes && task.mistake ? await unmetNeeds(session, task.mistake.needs) : [];
  const mistake = mistakes && task.mistake && mistakeUnmet.length === 0 ? task.mistake : null;
  const approvalsBefore = session.approvals.length;
  const problems = [];
  for (let i = 0; i < task.steps.length && problems.length === 0; i += 1) {
    if (mistake && mistake.step === i) {
      const m = await call({ tool: mistake.tool ?? task.steps[i].tool, code: mistake.code }, 'mistake');
      if (!mistake.error.test(m.text)) {
        problems.push(`the first mistake's text does not say what to fix (expected ${mistake.error}): ${m.text.slice(0, 400)}`);
        break;
      }
    }
    const step = task.steps[i];
    const r = await call(step, i === task.steps.length - 1 ? 'answer' : 'step');
    if (r.is_error) {
      problems.push(`step ${i + 1} (${step.tool}) failed: ${r.text.slice(0, 400)}`);
    } else if (step.shows && !step.shows.test(r.text)) {
      problems.push(`step ${i + 1} (${step.tool}) does not show ${step.shows}: ${r.text.slice(0, 400)}`);
    } else if (i === task.steps.length - 1) {
      const wrong = checkAnswer(task.answer, parse(r.text));
      if (wrong) problems.push(wrong);
    }
  }
  const approvals = session.approvals.length - approvalsBefore;
  const asked = (task.approvals ?? 0) + (mistake ? mistake.approvals ?? 0 : 0);
  if (problems.length === 0 && asked !== approvals) {
    problems.push(`expected ${asked} approval question(s), the user was asked ${approvals}`);
  }
  const sum = (key) => calls.reduce((s, c) => s + c.tokens[key], 0);
  return {
    id: task.id,
    passed: problems.length === 0,
    ...(mistakeUnmet.length ? { mistake_skipped: mistakeUnmet } : {}),
    problems,
    round_trips: calls.length,
    mistakes: calls.filter((c) => c.role === 'mistake').length,
    approvals,
    tokens: { calls: sum('call'), results: sum('result') },
    calls,
  };
}
