// --http against hostile peers (issue 20): what an unauthenticated client can hold (memory,
// connection slots), what a session id is worth without the token that made it, how many
// sessions one client can push out, log lines forged through peer text, and the hang-up and
// half-close cases of a request in flight. Every case ends with proof that the server still
// serves a well-behaved client. Bounded: fewer connections than the reviews used, all on
// 127.0.0.x, each wait with a deadline.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  startHttpServer, RawConnection, rawExchange, post, provesServing, INITIALIZE, writeConfig,
} from './http_harness.mjs';

const TOKEN_A = 'token-a-0123456789abcdef';
const TOKEN_B = 'token-b-0123456789abcdef';
const A = { Authorization: `Bearer ${TOKEN_A}` };
const B = { Authorization: `Bearer ${TOKEN_B}` };

const withTokens = () => startHttpServer(
  ['--http', ':0', '--config', writeConfig({ http: { bearer_tokens: [TOKEN_A, TOKEN_B] } })]);

const slowCall = (id, ms) => ({
  jsonrpc: '2.0', id, method: 'tools/call',
  params: { name: 'search', arguments: { code: `async () => { await new Promise(r => setTimeout(r, ${ms})); return ${id}; }` } },
});

async function initialize(port, headers = {}, connection = null) {
  const bytes = post(port, INITIALIZE, headers);
  const init = connection ? await connection.exchange(bytes) : await rawExchange(port, bytes);
  assert.equal(init.status, 200, init.body);
  return { ...headers, 'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-11-25' };
}

const rssKiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);

test('findings 7 and 17: peer text in the log cannot forge a line or reach the terminal', async () => {
  const server = await startHttpServer();
  try {
    const forged = '\n[2026-12-02 12:00:00.000] [info] seccomp: off';
    await initialize(server.port, {});
    const init = await rawExchange(server.port, post(server.port, {
      ...INITIALIZE, params: { ...INITIALIZE.params, protocolVersion: `2025-11-25${forged}`, clientInfo: { name: `evil${forged}`, version: '\x1b[2J' } },
    }));
    assert.equal(init.status, 200);
    // A 2026-07-28 request whose method would be refused and logged, its Mcp-Method header
    // base64-encoded to carry the newline (finding 16 closes that way in; 17 escapes the log).
    const method = `tools/x${forged}`;
    const refused = await rawExchange(server.port, post(server.port, {
      jsonrpc: '2.0', id: 1, method,
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
    }, { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': `=?base64?${Buffer.from(method).toString('base64')}?=` }));
    assert.ok(refused.status === 400 || refused.status === 404, refused.body);
    await server.waitFor(/initialized: evil\\n\[2026-12-02 12:00:00\.000\] \[info\] seccomp: off \\x1b\[2J asked for 2025-11-25\\n/);
    await server.waitFor(/http 400 from 127\.0\.0\.1: header mismatch: Mcp-Method/);
    assert.doesNotMatch(server.stderr, /^\[2026-12-02 12:00:00\.000\]/m);
    assert.doesNotMatch(server.stderr, /\x1b/);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});
