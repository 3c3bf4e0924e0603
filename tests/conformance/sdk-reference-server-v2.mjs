// Reference MCP server, second era: the official TypeScript SDK v2 (@modelcontextprotocol/server,
// which implements MCP 2026-07-28) via createMcpHandler, mounted on node:http with
// toNodeHandler. Same two dummy tools as sdk-reference-server.mjs. createMcpHandler serves
// 2026-07-28 (stateless, per-request _meta) and, by default, falls back to stateless 2025-era
// serving for requests without the modern _meta claim: a dual-era server without sessions.
//
//   node tests/conformance/sdk-reference-server-v2.mjs [PORT]     (default 0 = ephemeral)
// prints "listening http://127.0.0.1:PORT/mcp" on stdout once ready.
import http from 'node:http';
import {
  McpServer, createMcpHandler, hostHeaderValidationResponse, originValidationResponse,
  localhostAllowedHostnames, localhostAllowedOrigins,
} from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { z } from 'zod';

function newServer() {
  // listChanged off, as in codemode-mcp (its tool set never changes).
  const server = new McpServer({ name: 'sdk-reference-server-v2', version: '1.0.0' },
    { capabilities: { tools: { listChanged: false } } });
  server.registerTool('search', {
    description: 'Dummy search: echoes the code it was given.',
    inputSchema: z.object({ code: z.string() }),
  }, async ({ code }) => ({ content: [{ type: 'text', text: `search: ${code.length} chars` }] }));
  server.registerTool('execute', {
    description: 'Dummy execute: echoes the code it was given.',
    inputSchema: z.object({ code: z.string() }),
  }, async ({ code }) => ({ content: [{ type: 'text', text: `execute: ${code.length} chars` }] }));
  return server;
}

const handler = createMcpHandler(() => newServer());
const guarded = {
  fetch: (request, opts) =>
    hostHeaderValidationResponse(request, localhostAllowedHostnames()) ??
    originValidationResponse(request, localhostAllowedOrigins()) ??
    handler.fetch(request, opts),
};
const node = toNodeHandler(guarded);

const httpServer = http.createServer((req, res) => {
  if (new URL(req.url, 'http://x').pathname !== '/mcp') { res.writeHead(404).end(); return; }
  node(req, res).catch((e) => { if (!res.headersSent) res.writeHead(500).end(String(e)); });
});
httpServer.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${httpServer.address().port}/mcp`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { httpServer.close(); process.exit(0); });
