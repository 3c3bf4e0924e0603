// Reference MCP server for calibrating tests/conformance/run: the official TypeScript SDK
// (v1, @modelcontextprotocol/sdk, MCP 2025-11-25) over Streamable HTTP, with two dummy tools
// named like ours (`search`, `execute`) and nothing else. Stateful: one McpServer and one
// transport per session (Mcp-Session-Id). Host/Origin checked for DNS-rebinding protection.
//
//   node tests/conformance/sdk-reference-server.mjs [PORT]     (default 0 = ephemeral)
// prints "listening http://127.0.0.1:PORT/mcp" on stdout once ready.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

function newServer() {
  const server = new McpServer({ name: 'sdk-reference-server', version: '1.0.0' });
  server.registerTool('search', {
    description: 'Dummy search: echoes the code it was given.',
    inputSchema: { code: z.string() },
  }, async ({ code }) => ({ content: [{ type: 'text', text: `search: ${code.length} chars` }] }));
  server.registerTool('execute', {
    description: 'Dummy execute: echoes the code it was given.',
    inputSchema: { code: z.string() },
  }, async ({ code }) => ({ content: [{ type: 'text', text: `execute: ${code.length} chars` }] }));
  return server;
}

const LOCAL = new Set(['localhost', '127.0.0.1', '[::1]']);
const hostOk = (h) => { try { return LOCAL.has(new URL(`http://${h}`).hostname); } catch { return false; } };
const originOk = (o) => { try { return LOCAL.has(new URL(o).hostname); } catch { return false; } };
const transports = new Map(); // session id -> transport

const reply = (res, status, message) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
};

const httpServer = http.createServer(async (req, res) => {
  try {
    if (new URL(req.url, 'http://x').pathname !== '/mcp') return reply(res, 404, 'Not found');
    if (!hostOk(req.headers.host) || (req.headers.origin && !originOk(req.headers.origin)))
      return reply(res, 403, 'Forbidden: invalid Host or Origin');
    let body;
    if (req.method === 'POST') {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      try { body = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { return reply(res, 400, 'Parse error'); }
    }
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? transports.get(sid) : undefined;
    if (sid && !transport) return reply(res, 404, 'Session not found');
    if (!transport) {
      if (req.method !== 'POST' || !isInitializeRequest(body))
        return reply(res, 400, 'Bad Request: no valid session ID provided');
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      transport.onclose = () => { if (transport.sessionId) transports.delete(transport.sessionId); };
      await newServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  } catch (e) {
    if (!res.headersSent) reply(res, 500, `Internal error: ${e?.message ?? e}`);
  }
});

httpServer.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  console.log(`listening http://127.0.0.1:${httpServer.address().port}/mcp`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { httpServer.close(); process.exit(0); });
