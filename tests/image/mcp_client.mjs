// One MCP exchange with the container image through the official MCP TypeScript SDK client, as
// a desktop client or a remote agent would have it (scripts/test-image runs this):
//   node tests/image/mcp_client.mjs http URL            Streamable HTTP to a container's port
//   node tests/image/mcp_client.mjs stdio DOCKER ARG...  `DOCKER ARG...` as the server command,
//                                                       i.e. `docker run -i --rm ... IMAGE`
// It lists the tools, runs one search and one execute against the image's built-in demo API,
// and exits 0 only if each answer is the one expected.
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === 'http' && rest.length === 1) {
  transport = new StreamableHTTPClientTransport(new URL(rest[0]));
} else if (mode === 'stdio' && rest.length >= 2) {
  // The container's stderr (its log) goes to ours, so a failure shows why.
  // The whole environment: the SDK passes only a few variables by default, and docker needs
  // DOCKER_HOST to find the test's own engine.
  transport = new StdioClientTransport({
    command: rest[0], args: rest.slice(1), env: { ...process.env }, stderr: 'inherit',
  });
} else {
  console.error('usage: mcp_client.mjs http URL | stdio COMMAND ARG...');
  process.exit(2);
}

const client = new Client({ name: 'codemode-image-test', version: '1.0.0' });
const timeout = { timeout: 60000 };
await client.connect(transport, timeout);
try {
  assert.equal(client.getServerVersion().name, 'codemode-mcp');
  const { tools } = await client.listTools(undefined, timeout);
  assert.deepEqual(tools.map((t) => t.name), ['search', 'execute']);

  const search = await client.callTool(
    { name: 'search', arguments: { code: 'async () => Object.keys(spec.paths).length' } }, undefined, timeout);
  assert.notEqual(search.isError, true, JSON.stringify(search));
  assert.ok(search.structuredContent.result > 0, JSON.stringify(search));

  // execute reaches the demo API inside the container through the gateway.
  const execute = await client.callTool({
    name: 'execute',
    arguments: { code: 'async () => { const r = await fetch("/products?limit=1"); return r.status; }' },
  }, undefined, timeout);
  assert.notEqual(execute.isError, true, JSON.stringify(execute));
  assert.equal(execute.structuredContent.result, 200, JSON.stringify(execute));
  console.log(`${mode}: tools ${tools.map((t) => t.name).join(', ')}; search found ` +
              `${search.structuredContent.result} paths; execute got HTTP ${execute.structuredContent.result}`);
} finally {
  await client.close();
}
