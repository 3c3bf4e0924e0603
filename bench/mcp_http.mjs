// What the HTTP benchmarks share: start codemode-mcp on Streamable HTTP, and POST one JSON-RPC
// message on a lane (bench/lane.mjs: one keep-alive connection).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

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
export async function post(lane, body, session) {
  const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  if (session) headers['mcp-session-id'] = session;
  const r = await lane.post(JSON.stringify(body), headers);
  return { status: r.status, session: r.headers['mcp-session-id'], body: r.body };
}
