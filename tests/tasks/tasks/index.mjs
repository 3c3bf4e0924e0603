// Every task, in the order they run: by API, and within an API in file order (the writes of an
// API come after its reads). The one source of the tasks for tests/tasks/run.mjs and bench/tokens.
//
// A task: {id, api, kind, words, steps: [{tool, code, shows?}], answer, mistake?, needs?,
// approvals?, classic}. `answer` is a literal the last step's JSON result must equal, or a
// function returning true or what is wrong. `mistake` is the typical first attempt at one step
// ({step, code, error}); its text must match `error`, which is what tells the model how to fix
// it. `needs` names a feature not on main yet: the task is reported as skipped until it lands and
// the marker is removed. `classic` is the same task for a one-tool-per-operation server: an
// async function of {call, parallel, schema} returning the answer (bench/tokens runs it).
import markethub from './markethub.mjs';
import stripe from './stripe.mjs';
import slack from './slack.mjs';
import github from './github.mjs';

export const TASKS = [
  ...markethub.map((t) => ({ api: 'markethub', ...t })),
  ...stripe.map((t) => ({ api: 'stripe', ...t })),
  ...slack.map((t) => ({ api: 'slack', ...t })),
  ...github.map((t) => ({ api: 'github', ...t })),
];

// What each `needs` marker waits for.
export const NEEDS = {
  engine: 'V8 14.6 in the sandbox (issue 36): Object.groupBy, toSorted, Set methods, iterator helpers',
  'issue37-typescript': 'TypeScript with its types stripped (issue 37, item 1)',
  'issue37-statements': 'a body of statements with top-level await and return (issue 37, item 1)',
  'issue37-fences': 'code in a markdown fence (issue 37, item 1)',
  'issue37-results': 'results serialised within the budget, shared objects as $ref: Stripe operations (issue 37, item 2)',
  'issue37-basepath': "relative URLs resolve under the upstream's base path, Slack's /api (issue 37, item 3)",
  'issue37-errors': 'failure texts that name the last requests and say what to do (issue 37, items 1 and 4)',
};
