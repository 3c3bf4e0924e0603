// The tool descriptions: bounded, specific to the API, and their TypeScript declarations
// compile with the TypeScript compiler. Also the spec-aware policy they describe.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR, startFixture } from './harness.mjs';

const require = createRequire(import.meta.url);
const tsc = require.resolve('typescript/bin/tsc');
const dir = mkdtempSync(join(tmpdir(), 'codemode-desc-'));

async function connect(args) {
  const client = new Client({ name: 'descriptions', version: '1' });
  await client.connect(new StdioClientTransport({ command: BIN, args: [...args, '--log-level', 'warn'], stderr: 'pipe' }));
  return client;
}

test('descriptions are bounded, name the API, and their TypeScript compiles', async () => {
  const client = await connect([]);
  const { tools } = await client.listTools();
  await client.close();
  for (const tool of tools) {
    assert.ok(tool.description.length <= 6000, `${tool.name}: ${tool.description.length} chars`);
    assert.match(tool.description, /MarketHub API/);
    const blocks = [...tool.description.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    assert.equal(blocks.length, 1, `${tool.name} has one TypeScript block`);
    const file = join(dir, `${tool.name}.d.ts`);
    writeFileSync(file, `${blocks[0]}\nexport {};\n`);
    try {
      execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--lib', 'es2022', file], { encoding: 'utf8' });
    } catch (e) {
      assert.fail(`${tool.name}: tsc rejected the declarations:\n${e.stdout}`);
    }
  }
  assert.match(tools[0].description, /spec\.paths\['\/products\/\{productId\}'\]/, 'examples use this API');
  assert.match(tools[1].description, /fetch\('\/products\?limit=3'\)/);
});

test('policy: operations "spec" and methods narrow what execute may call', async () => {
  const fixture = await startFixture();
  const config = join(dir, 'policy.json');
  writeFileSync(config, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    upstreams: [{ origin: fixture.origin, headers: { Authorization: `Bearer ${fixture.token}` } }],
    policy: { operations: 'spec', methods: ['GET', 'HEAD'] },
  }));
  const client = await connect(['--config', config]);
  try {
    const { tools } = await client.listTools();
    assert.match(tools[1].description, /Only operations declared in the API description/);
    assert.match(tools[1].description, /Allowed methods: GET, HEAD\./);
    // The first line: the kind and the fact.
    const run = async (code) => (await client.callTool({ name: 'execute', arguments: { code } })).content[0].text.split('\n')[0];
    assert.equal(await run("async () => (await fetch('/products/prod_0001?fields=name')).status"), '200');
    // HEAD passes the policy wherever GET is declared (this fixture then answers it 405).
    assert.match(await run("async () => (await fetch('/products/prod_0001', { method: 'HEAD' })).status"), /^\d{3}$/);
    assert.equal(await run("async () => (await fetch('/admin/users')).status"),
      'policy: GET /admin/users matches no operation in the API description');
    assert.equal(await run("async () => (await fetch('/products/prod_0001/extra')).status"),
      'policy: GET /products/prod_0001/extra matches no operation in the API description');
    assert.equal(await run("async () => (await fetch('/orders', { method: 'POST', body: '{}' })).status"),
      'policy: method POST is not allowed here (allowed: GET, HEAD)');
  } finally {
    await client.close();
    await fixture.stop();
  }
});
