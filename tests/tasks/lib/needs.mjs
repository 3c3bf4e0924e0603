// The features a task may need that are not on main yet, and how to tell from the running server
// whether it has them. A task (or its first mistake) declares `needs: ['#37 typescript', …]`;
// before it runs, each need's probe runs once on the same session (a one-line `search` or
// `execute` call, not counted in the task's round trips or tokens). A task whose needs are all
// met runs and counts like any other, so it starts to count by itself the day the feature lands,
// and fails the suite if it then fails; a task with a need not met is reported as
// `skipped (needs: …)`, never as passed.
//
// A probe asks for less than the tasks do (one type annotation where a task has interfaces, `as`
// and `!`; one small Stripe operation where a task reads /v1/charges whole), so the tasks still
// test the feature and not the probe.

// need → {issue, what, tool, code, met(text)}: `met` gets the text of a result that is not an
// error (an error result is always "not met").
export const NEEDS = {
  '#36 Object.groupBy': {
    what: 'V8 14.6 in the sandbox (issue 36): Object.groupBy',
    tool: 'search', code: "async () => typeof Object.groupBy === 'function'", met: (text) => text === 'true',
  },
  '#36 toSorted': {
    what: 'V8 14.6 in the sandbox (issue 36): Array.prototype.toSorted',
    tool: 'search', code: "async () => typeof [].toSorted === 'function'", met: (text) => text === 'true',
  },
  '#36 iterator helpers': {
    what: 'V8 14.6 in the sandbox (issue 36): iterator helpers (Iterator.prototype.map, toArray)',
    tool: 'search', code: "async () => typeof [].values().map === 'function'", met: (text) => text === 'true',
  },
  '#37 typescript': {
    what: 'TypeScript with its types stripped (issue 37, item 1)',
    tool: 'search', code: 'async (): Promise<number> => 1', met: (text) => text === '1',
  },
  '#37 statements': {
    what: 'a body of statements with top-level await and return (issue 37, item 1)',
    tool: 'search', code: 'const n = await Promise.resolve(1);\nreturn n;', met: (text) => text === '1',
  },
  '#37 fences': {
    what: 'code in a markdown fence (issue 37, item 1)',
    tool: 'search', code: '```js\nasync () => 1\n```', met: (text) => text === '1',
  },
  '#37 results': {
    what: "results serialised within the budget, shared objects as $ref: Stripe's operations returned whole by search (issue 37, item 2); probed on Stripe",
    tool: 'search', code: "async () => spec.paths['/v1/balance'].get", met: (text) => /"responses"/.test(text),
  },
  '#37 base path': {
    what: "relative URLs resolve under the upstream's base path, Slack's /api (issue 37, item 3); probed on Slack",
    tool: 'execute', code: "async () => (await (await fetch('/auth.test')).json()).ok", met: (text) => text === 'true',
  },
  '#37 errors': {
    what: 'failure texts that say what to do: a compile error quotes the line with a caret at the column (issue 37, items 1 and 4)',
    tool: 'search', code: 'async () => {', met: () => false, metError: (text) => /\^/.test(text),
  },
};

// Runs the probes of `needs` not yet asked on this session (cached in `session.features`) and
// returns the needs that are not met, in the order given. A misspelt need is a mistake in the
// task, not a missing feature: it throws.
export async function unmetNeeds(session, needs = []) {
  session.features ??= new Map();
  const unmet = [];
  for (const need of needs) {
    const probe = NEEDS[need];
    if (!probe) throw new Error(`unknown need ${JSON.stringify(need)}; known: ${Object.keys(NEEDS).join(', ')}`);
    if (!session.features.has(need)) {
      const result = await session.client.callTool({ name: probe.tool, arguments: { code: probe.code } }, undefined, { timeout: 60000 });
      const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
      session.features.set(need, result.isError ? (probe.metError?.(text) ?? false) : probe.met(text));
    }
    if (!session.features.get(need)) unmet.push(need);
  }
  return unmet;
}

export const needsText = (needs) => `needs: ${needs.join(', ')}`;
