// Every task, in the order they run: by API, and within an API in file order (the writes of an
// API come after its reads). The one source of the tasks for tests/tasks/run.mjs and bench/tokens.
//
// A task: {id, api, kind, words, steps: [{tool, code, shows?}], answer, mistake?, needs?,
// approvals?, classic}. `answer` is a literal the last step's JSON result must equal, or a
// function returning true or what is wrong. `mistake` is the typical first attempt at one step
// ({step, code, error}); its text must match `error`, which is what tells the model how to fix
// it. `needs` lists features not on main yet (['#37 typescript', …], lib/needs.mjs): a probe of
// the running server decides whether the task runs or is reported as skipped. `classic` is the
// same task for a one-tool-per-operation server: an async function of {call, parallel, schema}
// returning the answer (bench/tokens runs it).
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

