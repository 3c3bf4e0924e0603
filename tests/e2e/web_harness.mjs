// Shared by the web-platform tests (wpt_url, web_classes, url_origin): the real binary over stdio
// with the official MCP client, limits raised so that one call can carry a whole test file's
// cases, and a way to run the same function in the sandbox and in this node process.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR } from './harness.mjs';

// Starts codemode-mcp with `upstream` (an origin) as its only upstream (null: none). Returns
// {search, execute, close}: search(code) and execute(code) resolve to the call's result value,
// or throw with the call's error text.
export async function startSandbox(upstream = 'http://127.0.0.1:9') {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-web-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    upstreams: upstream === null ? [] : [{ origin: upstream }],
    limits: { code_chars: 1000000, result_chars: 10000000, cpu_ms: 20000, wall_ms: 60000,
              subrequests: 1000 },
  }));
  const client = new Client({ name: 'web-classes', version: '1' });
  let stderr = '';
  const transport = new StdioClientTransport({ command: BIN, args: ['--config', config, '--log-level', 'warn'], stderr: 'pipe' });
  transport.stderr.on('data', (d) => { stderr += d; });
  await client.connect(transport);
  const call = async (name, code) => {
    const r = await client.callTool({ name, arguments: { code } }, undefined, { timeout: 60000 });
    if (r.isError) throw new Error(`${name} failed: ${r.content[0].text}\nstderr: ${stderr}`);
    return r.structuredContent.result;
  };
  // The console lines of an execute call, joined by newlines.
  const logs = async (code) => {
    const r = await client.callTool({ name: 'execute', arguments: { code } }, undefined, { timeout: 60000 });
    if (r.isError) throw new Error(`execute failed: ${r.content[0].text}\nstderr: ${stderr}`);
    return (r.structuredContent.logs ?? []).join('\n');
  };
  return {
    search: (code) => call('search', code),
    execute: (code) => call('execute', code),
    logs,
    close: () => client.close(),
  };
}

// The code of a call that runs `fn(data)` in the sandbox and returns what it returns. `fn` must
// be self-contained (no closure over this module): it runs in node too, by the same text.
export function callOf(fn, data) {
  return `async () => (${fn.toString()})(${JSON.stringify(data)})`;
}
