// The classic OpenAPI MCP servers from npm that codemode-mcp is compared with, each started over
// stdio against the same fixture upstream, and the driver that runs a task's `classic` sequence
// on one of them: every call is a real tools/call through the SDK client, every turn of the
// model (one call, or calls made side by side) is a round trip.
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { OpenAPISpecLoader } from '@ivotoby/openapi-mcp-server';
import ts from 'typescript';
import { connectStdio, rawToolsList } from '../../tests/tasks/lib/apis.mjs';
import { callTokens, resultText, tokens, toolsTokens } from '../../tests/tasks/lib/tokens.mjs';
import { checkAnswer } from '../../tests/tasks/lib/run_task.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const IVOTOBY_BIN = join(dirname(require.resolve('@ivotoby/openapi-mcp-server/package.json')), 'bin/mcp-server.js');
const GENERATOR_BIN = join(dirname(require.resolve('openapi-mcp-generator/package.json')), 'bin/openapi-mcp-generator.js');
const version = (name) => JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')).version;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

// 'GET /products/{productId}' → {method, path}.
function parseOp(op) {
  const [method, path] = op.split(' ');
  return { method, path };
}

// A result text as JSON where it is JSON; the servers print the upstream's body (the generated
// server after an "API Response (Status: N):" line).
function parseBody(text) {
  const body = text.replace(/^API Response \(Status: \d+\):\n/, '');
  try { return JSON.parse(body); } catch { return body; }
}

// An error result: its HTTP status and the upstream's body, as far as the text holds them.
function parseError(text) {
  const status = Number(/status code (\d+)|Status:? (\d+)|\((\d{3}):/.exec(text)?.slice(1).find(Boolean)) || null;
  const json = /\{[\s\S]*\}/.exec(text)?.[0];
  let body = null;
  try { body = json ? JSON.parse(json) : null; } catch { /* cut short: below */ }
  if (!body) {
    // A body cut short (the generated server keeps 200 characters of it): what a model still
    // reads in it.
    const field = (k) => new RegExp(`"${k}":"((?:[^"\\\\]|\\\\.)*)"`).exec(text)?.[1];
    if (field('code') || field('message')) body = { error: { code: field('code'), message: field('message') } };
  }
  return { status, body, text };
}

// Splits flat task arguments into what the generated server wants: parameters by name, the rest
// under `requestBody` when the operation has one; a form-encoded body is one string there (its
// tools declare `requestBody: string`), so the model writes `charge=…&amount=…` itself.
function splitBody(spec, op, args) {
  const { method, path } = parseOp(op);
  const operation = spec.paths[path]?.[method.toLowerCase()];
  if (!operation?.requestBody) return args;
  const resolve = (p) => (p.$ref ? p.$ref.split('/').reduce((o, k) => (k === '#' ? spec : o[k]), null) : p);
  const names = new Set([...(spec.paths[path].parameters ?? []), ...(operation.parameters ?? [])].map((p) => resolve(p).name));
  const params = {};
  const body = {};
  for (const [k, v] of Object.entries(args)) (names.has(k) ? params : body)[k] = v;
  if (!Object.keys(body).length) return params;
  const form = Object.keys(operation.requestBody.content ?? {})[0] === 'application/x-www-form-urlencoded';
  return { ...params, requestBody: form ? new URLSearchParams(body).toString() : body };
}

// The SDK's refusal is a zod report (a JSON array of issues): its first issue, and how many.
function zodSummary(message) {
  try {
    const issues = JSON.parse(message.slice(message.indexOf('[')));
    const first = issues[0];
    const inner = first.errors?.flat?.()[0] ?? first;
    return `${issues.length} issue(s), the first at ${first.path.join('.')}: ${inner.message ?? first.message}`
      + (inner.path ? ` (${inner.path.join('.')})` : '');
  } catch {
    return message.split('\n').slice(0, 3).join(' ').slice(0, 300);
  }
}

// What a client shows the model of a list: the SDK's listTools() when it accepts the list;
// where it refuses it (GitHub: some input schemas are not of type object), what the server sent.
async function listTools(client) {
  const started = performance.now();
  try {
    const { tools } = await client.listTools();
    return { ok: true, tools, tokens: toolsTokens(tools), ms: Math.round(performance.now() - started) };
  } catch (error) {
    const tools = await rawToolsList(client);
    return { ok: false, refused: zodSummary(String(error.message)), tools, tokens: toolsTokens(tools),
      bad: tools.filter((t) => t.inputSchema?.type !== 'object').length, ms: Math.round(performance.now() - started) };
  }
}

// A tool's input schema, with the generated server's `requestBody` merged in, as the model reads
// one operation's inputs.
function inputsOf(schema) {
  const body = schema?.properties?.requestBody;
  if (!body) return schema;
  const { requestBody, ...params } = schema.properties;
  return { type: 'object', properties: { ...params, ...body.properties },
    required: [...(schema.required ?? []).filter((r) => r !== 'requestBody'), ...(body.required ?? [])] };
}

export const SYSTEMS = {
  'ivotoby-all': {
    title: `@ivotoby/openapi-mcp-server ${version('@ivotoby/openapi-mcp-server')}, one tool per operation`,
    short: 'classic (1 tool/op)',
    async start({ spec, baseUrl, token }) {
      const loader = new OpenAPISpecLoader({ verbose: false });
      const names = new Map();
      for (const tool of loader.parseOpenAPISpec(await loader.loadOpenAPISpec(spec, 'file')).values()) {
        names.set(`${tool.httpMethod.toUpperCase()} ${tool.originalPath}`, tool.name);
      }
      const session = await connectStdio({ command: process.execPath, args: [IVOTOBY_BIN, '--api-base-url', baseUrl, '--openapi-spec', spec,
        '--headers', `Authorization:Bearer ${token}`, '--tools', 'all', '--verbose', 'false'] });
      return {
        session,
        nameOf: (op) => names.get(op),
        argsOf: (op, args) => args,
        // The inputs are in the tool list already: no call.
        schema: async (op, list) => ({ turns: [], value: inputsOf(list.tools.find((t) => t.name === names.get(op))?.inputSchema) }),
      };
    },
  },
  'ivotoby-dynamic': {
    title: `@ivotoby/openapi-mcp-server ${version('@ivotoby/openapi-mcp-server')}, --tools dynamic (3 meta-tools)`,
    short: 'classic (dynamic)',
    dynamic: true,
    async start({ spec, baseUrl, token }) {
      const session = await connectStdio({ command: process.execPath, args: [IVOTOBY_BIN, '--api-base-url', baseUrl, '--openapi-spec', spec,
        '--headers', `Authorization:Bearer ${token}`, '--tools', 'dynamic', '--verbose', 'false'] });
      return {
        session,
        nameOf: () => 'invoke-api-endpoint',
        argsOf: (op, args) => { const { method, path } = parseOp(op); return { endpoint: path, method, params: args }; },
        // Operations are found by listing the endpoints, then reading the one's schema.
        discover: (op) => ({ name: 'get-api-endpoint-schema', args: { endpoint: parseOp(op).path } }),
        schemaOf: (op, value) => {
          const operation = value?.operations?.find((o) => o.method === parseOp(op).method);
          const properties = {};
          for (const p of operation?.parameters ?? []) if (p.name) properties[p.name] = p.schema ?? {};
          const body = operation?.requestBody?.content && Object.values(operation.requestBody.content)[0]?.schema;
          Object.assign(properties, body?.properties ?? {});
          const refs = [...(operation?.parameters ?? []).filter((p) => p.$ref).map((p) => p.$ref), ...(body?.$ref ? [body.$ref] : [])];
          return { type: 'object', properties, required: body?.required, ...(refs.length ? { unresolved: refs.join(', ') } : {}) };
        },
      };
    },
  },
  generator: {
    title: `openapi-mcp-generator ${version('openapi-mcp-generator')} (a generated server)`,
    short: 'generated',
    async start({ api, spec, baseUrl, token, securityEnv }) {
      // Generated once per description into bench/tokens/generated/<api>/, transpiled (types
      // stripped, no type check) beside this package's node_modules, which holds its imports.
      const dir = join(HERE, 'generated', api);
      const entry = join(dir, 'index.mjs');
      const stamp = JSON.stringify({ spec, bytes: readFileSync(spec).length, generator: version('openapi-mcp-generator') });
      if (!existsSync(entry) || !existsSync(join(dir, 'stamp')) || readFileSync(join(dir, 'stamp'), 'utf8') !== stamp) {
        mkdirSync(dir, { recursive: true });
        const { spawnSync } = await import('node:child_process');
        const gen = spawnSync(process.execPath, [GENERATOR_BIN, '-i', spec, '-o', join(dir, 'project'), '-b', baseUrl, '--force'],
          { encoding: 'utf8', timeout: 300000 });
        if (gen.status !== 0) throw new Error(`openapi-mcp-generator failed: ${(gen.stderr || gen.stdout).slice(-500)}`);
        const source = readFileSync(join(dir, 'project/src/index.ts'), 'utf8');
        const out = ts.transpileModule(source, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
        writeFileSync(entry, out.outputText);
        writeFileSync(join(dir, 'stamp'), stamp);
      }
      const source = readFileSync(join(dir, 'project/src/index.ts'), 'utf8');
      const names = new Map();
      for (const m of source.matchAll(/\["([^"]+)", \{\s*name: "[^"]+",[\s\S]*?method: "(\w+)",\s*pathTemplate: "([^"]+)"/g)) {
        names.set(`${m[2].toUpperCase()} ${m[3]}`, m[1]);
      }
      const document = JSON.parse(readFileSync(spec, 'utf8'));
      const session = await connectStdio({ command: process.execPath, args: [entry], env: { API_BASE_URL: baseUrl, ...securityEnv(token) } });
      return {
        session,
        nameOf: (op) => names.get(op),
        argsOf: (op, args) => splitBody(document, op, args),
        schema: async (op, list) => ({ turns: [], value: inputsOf(list.tools.find((t) => t.name === names.get(op))?.inputSchema) }),
      };
    },
  },
};

// Runs `task.classic` on a started server. Resolves {passed, problem, round_trips, calls,
// tokens: {calls, results}, sequence}: `sequence` holds each turn's calls as the model makes them.
export async function runClassic(server, list, task) {
  const turns = [];
  const seen = new Set();
  const unresolved = [];
  const invoke = async (name, args) => {
    const result = await server.session.client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
    const text = resultText(result);
    // The generated server answers an API's error status as an ordinary result, "API Error: …".
    const isError = result.isError === true || /^API Error: /.test(text);
    return { name, args, is_error: isError, text, tokens: { call: callTokens(name, args), result: tokens(text) } };
  };
  // Dynamic mode: the endpoint list once per task, then each new operation's schema before its
  // first call (the schemas a turn needs are read side by side).
  const discover = async (ops) => {
    if (!server.discover) return;
    if (!seen.has('list')) {
      seen.add('list');
      turns.push([await invoke('list-api-endpoints', {})]);
    }
    const fresh = [...new Set(ops)].filter((op) => !seen.has(op));
    if (fresh.length === 0) return;
    fresh.forEach((op) => seen.add(op));
    turns.push(await Promise.all(fresh.map((op) => { const d = server.discover(op); return invoke(d.name, d.args); })));
    return turns.at(-1);
  };
  const calls = async (batch) => {
    await discover(batch.map(([op]) => op));
    const turn = await Promise.all(batch.map(([op, args]) => {
      const name = server.nameOf(op);
      if (!name) throw new Error(`${op}: the server has no tool for it`);
      return invoke(name, server.argsOf(op, args));
    }));
    turns.push(turn);
    return turn.map((c) => (c.is_error ? { error: parseError(c.text) } : parseBody(c.text)));
  };
  const api = {
    call: async (op, args) => (await calls([[op, args]]))[0],
    parallel: (batch) => calls(batch),
    schema: async (op) => {
      if (server.discover) {
        const turn = await discover([op]);
        const value = server.schemaOf(op, parseBody(turn?.[0]?.text ?? ''));
        if (value.unresolved) unresolved.push(value.unresolved);
        return value;
      }
      return (await server.schema(op, list)).value;
    },
  };
  let answer;
  let problem = null;
  try {
    answer = await task.classic(api);
    problem = checkAnswer(task.answer, answer);
  } catch (error) {
    problem = `the sequence broke: ${String(error.message).slice(0, 300)}`;
  }
  if (problem && unresolved.length) problem += ` (the schema tool answered with $refs it does not resolve: ${unresolved.join(', ')})`;
  const all = turns.flat();
  return {
    passed: problem === null,
    problem,
    first_error: all.find((c) => c.is_error)?.text.slice(0, 300),
    round_trips: turns.length,
    calls: all.length,
    tokens: { calls: all.reduce((s, c) => s + c.tokens.call, 0), results: all.reduce((s, c) => s + c.tokens.result, 0) },
    sequence: turns.map((turn) => turn.map((c) => ({ tool: c.name, args: c.args, is_error: c.is_error, tokens: c.tokens }))),
  };
}

export { listTools, METHODS };
