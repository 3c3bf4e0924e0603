// What the HTTP benchmarks share: start codemode-mcp on Streamable HTTP, and POST one JSON-RPC
// message on a keep-alive agent.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import http from 'node:http';

// Starts `bin --http 127.0.0.1:0` with `args`; resolves {proc, url} once it listens. The
// "listening on" line is logged at info; stderr is drained for the whole run so the server
// never blocks on a full pipe.
export async function startServer(bin, args = []) {
  const proc = spawn(bin, ['--http', '127.0.0.1:0', '--log-level', 'info', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: proc.stderr }).on('line', (line) => {
      const m = /listening on (http:\/\/\S+)/.exec(line);
      if (m) resolve(m[1]);
    });
    proc.on('exit', () => reject(new Error('server exited before listening')));
  });
  return { proc, url };
}

// Resolves {status, session, body}; `session` is the Mcp-Session-Id to send, if any.
export function post(agent, url, body, session) {
  return new Promise((resolve, reject) => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    if (session) headers['mcp-session-id'] = session;
    const req = http.request(url, { method: 'POST', agent, headers }, (res) => {
      let data = '';
      res.on('data', (d) => { data += d; });
      res.on('end', () => resolve({ status: res.statusCode, session: res.headers['mcp-session-id'], body: data }));
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}
