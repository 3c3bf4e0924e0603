// The official MCP TypeScript SDK client against the real binary over stdio.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR, startFixture } from './harness.mjs';

async function connect(args = [], env = {}) {
  const transport = new StdioClientTransport({
    command: BIN, args, env: { ...process.env, ...env }, stderr: 'pipe',
  });
  const client = new Client({ name: 'codemode-e2e', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

describe('embedded default (no arguments)', () => {
  let client;
  before(async () => { ({ client } = await connect()); });
  after(async () => { await client.close(); });

  test('initialize reports the server and its tools capability', () => {
    assert.equal(client.getServerVersion().name, 'codemode-mcp');
    assert.ok(client.getServerCapabilities().tools, 'tools capability declared');
  });

  test('tools/list declares search and execute with a code argument', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['search', 'execute']);
    for (const tool of tools) {
      assert.deepEqual(tool.inputSchema.required, ['code']);
      assert.equal(tool.inputSchema.properties.code.type, 'string');
      assert.match(tool.description, /MarketHub API/);
    }
    assert.equal(tools[0].annotations.readOnlyHint, true);
    assert.match(tools[1].description, /http:\/\/127\.0\.0\.1:\d+/, 'execute names the demo origin');
  });

  test('tools/call reaches the sandbox and answers with a classified result', async () => {
    const result = await client.callTool({ name: 'search', arguments: { code: 'async () => 1' } });
    const text = result.content[0].text;
    assert.match(text, /^(input|compile|runtime|timeout|memory|policy): |^1$/);
    if (result.isError) assert.equal(text, `${result.structuredContent.error.type}: ${result.structuredContent.error.message}`);
  });

  test('code over code_chars is an input error, and the server keeps serving', async () => {
    const result = await client.callTool({ name: 'search', arguments: { code: 'x'.repeat(20001) } });
    assert.equal(result.isError, true);
    assert.equal(result.content[0].text, 'input: code is 20001 characters; the limit is 20000');
    assert.deepEqual(result.structuredContent.error, { type: 'input', message: 'code is 20001 characters; the limit is 20000' });
    await client.ping();
  });

  test('missing code is an input error the model can read', async () => {
    const result = await client.callTool({ name: 'execute', arguments: {} });
    assert.equal(result.isError, true);
    assert.match(result.content[0].text, /^input: arguments must be an object with "code"/);
  });

  test('an unknown tool is a protocol error -32602', async () => {
    await assert.rejects(client.callTool({ name: 'eval', arguments: { code: '1' } }),
      (err) => err.code === -32602 && /unknown tool eval/.test(err.message));
  });

  test('concurrent calls all get their own answers', async () => {
    const calls = Array.from({ length: 20 }, (_, i) =>
      client.callTool({ name: 'search', arguments: { code: `async () => ${i}` } }));
    const results = await Promise.all(calls);
    assert.equal(results.length, 20);
    for (const r of results) assert.ok(r.content[0].text.length > 0);
  });
});

describe('--config with a standalone fixture', () => {
  let fixture;
  let client;
  before(async () => {
    fixture = await startFixture();
    const dir = mkdtempSync(join(tmpdir(), 'codemode-e2e-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({
      openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
      upstreams: [{ origin: fixture.origin, headers: { Authorization: 'Bearer ${E2E_TOKEN}' } }],
      limits: { code_chars: 100 },
    }));
    ({ client } = await connect(['--config', file], { E2E_TOKEN: fixture.token }));
  });
  after(async () => { await client.close(); await fixture.stop(); });

  test('the config shapes the tools: limits and the upstream origin', async () => {
    const { tools } = await client.listTools();
    assert.equal(tools[0].inputSchema.properties.code.maxLength, 100);
    assert.ok(tools[1].description.includes(fixture.origin));
    const result = await client.callTool({ name: 'search', arguments: { code: 'y'.repeat(101) } });
    assert.equal(result.content[0].text, 'input: code is 101 characters; the limit is 100');
  });

  test('no credential appears in anything the client sees', async () => {
    const { tools } = await client.listTools();
    assert.ok(!JSON.stringify(tools).includes(fixture.token));
  });
});
