// Helpers for the HTTP tests: start the real binary with --http on port 0 and learn its URL from
// stderr; send exact bytes on a fresh TCP connection and read one HTTP/1.1 response.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, SOURCE_DIR } from './harness.mjs';

// Writes a config file for the MarketHub OpenAPI document (no upstreams) plus `extra` keys.
export function writeConfig(extra = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-http-'));
  const file = join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'), ...extra,
  }));
  return file;
}

// A codemode-mcp serving HTTP. Resolves once it logged "listening on http://HOST:PORT/mcp".
export async function startHttpServer(args = ['--http', ':0'], env = {}) {
  const proc = spawn(BIN, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  proc.stdin.on('error', () => {});
  const server = { proc, stderr: '', stdout: '', exited: once(proc, 'exit') };
  proc.stdout.on('data', (d) => { server.stdout += d; });
  await new Promise((resolve, reject) => {
    const onData = (d) => {
      server.stderr += d;
      const match = /listening on (http:\/\/(\S+):(\d+)\/mcp)/.exec(server.stderr);
      if (match) {
        Object.assign(server, { url: match[1], host: match[2], port: Number(match[3]) });
        resolve();
      }
    };
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`server exited ${code} before listening:\n${server.stderr}`)));
  });
  server.base = server.url.replace(/\/mcp$/, '');
  // Resolves once stderr matches `pattern` (a log line the test waits for; no sleeps).
  server.waitFor = (pattern, ms = 10000) => new Promise((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(server.stderr);
      if (!match) return false;
      proc.stderr.off('data', onData);
      clearTimeout(timer);
      resolve(match);
      return true;
    };
    const onData = () => { check(); };
    const timer = setTimeout(() => {
      proc.stderr.off('data', onData);
      reject(new Error(`stderr never matched ${pattern}:\n${server.stderr}`));
    }, ms);
    proc.stderr.on('data', onData);
    check();
  });
  server.stop = async (signal = 'SIGTERM') => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    const [code, sig] = await server.exited;
    return { code, signal: sig };
  };
  return server;
}

// Parses one HTTP/1.1 response from the front of `buffer`; null when incomplete.
function parseResponse(buffer, closed) {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const head = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const [, status, reason] = /^HTTP\/1\.1 (\d{3}) ?(.*)$/.exec(head[0]) ?? [];
  const headers = {};
  for (const line of head.slice(1)) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = headers['content-length'] !== undefined ? Number(headers['content-length']) : null;
  const bodyStart = end + 4;
  if (length === null && !closed) return null;
  const bodyEnd = length === null ? buffer.length : bodyStart + length;
  if (buffer.length < bodyEnd) return null;
  return {
    status: Number(status), reason, statusLine: head[0], headers,
    body: buffer.subarray(bodyStart, bodyEnd).toString('utf8'), rest: buffer.subarray(bodyEnd),
  };
}

// An HTTP/1.1 connection driven with exact bytes. `exchange(bytes)` writes them and resolves
// with the next response ({status, statusLine, headers (lower-case names), body}).
export class RawConnection {
  // `localAddress` picks the client's source address (e.g. 127.0.0.2: another peer to the server).
  constructor(port, host = '127.0.0.1', { localAddress } = {}) {
    this.socket = connect({ port, host, ...(localAddress ? { localAddress } : {}) });
    this.socket.on('error', () => {});
    this.buffer = Buffer.alloc(0);
    this.closed = false;
    this.waiters = [];
    this.socket.on('data', (d) => { this.buffer = Buffer.concat([this.buffer, d]); this.#wake(); });
    this.socket.on('close', () => { this.closed = true; this.#wake(); });
  }
  #wake() { for (const w of this.waiters.splice(0)) w(); }
  write(bytes) { this.socket.write(bytes); }
  async response(ms = 10000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const parsed = parseResponse(this.buffer, this.closed);
      if (parsed) {
        this.buffer = parsed.rest;
        return parsed;
      }
      if (this.closed) throw new Error(`connection closed without a (complete) response: ${this.buffer}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response within ${ms} ms`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }
  async exchange(bytes, ms) {
    this.write(bytes);
    return this.response(ms);
  }
  // Resolves once the server has closed the connection.
  async closedByServer(ms = 10000) {
    const deadline = Date.now() + ms;
    while (!this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`connection still open after ${ms} ms`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }
  destroy() { this.socket.destroy(); }
  // Sends the bytes, then shuts down the write side (the connection stays open for reading).
  halfClose(bytes) { this.socket.end(bytes); }
  // Everything the server sent until it closed the connection, as text.
  async untilClosed(ms = 10000) {
    await this.closedByServer(ms);
    return this.buffer.toString('utf8');
  }
}

// One request on a fresh connection.
export async function rawExchange(port, bytes, ms) {
  const connection = new RawConnection(port);
  try {
    return await connection.exchange(bytes, ms);
  } finally {
    connection.destroy();
  }
}

// Builds a POST /mcp with a JSON body and the right Content-Length.
export function post(port, body, headers = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const all = {
    Host: `127.0.0.1:${port}`, 'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream', ...headers,
    'Content-Length': Buffer.byteLength(text),
  };
  return `POST /mcp HTTP/1.1\r\n${Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${text}`;
}

export const INITIALIZE = {
  jsonrpc: '2.0', id: 0, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

// Initializes with `headers` (a session when stateful) and resolves with `call(tool, code)`, which
// makes a tools/call in that session and resolves with its result (throws unless HTTP 200).
export async function openSession(port, headers = {}) {
  const init = await rawExchange(port, post(port, INITIALIZE, headers));
  if (init.status !== 200) throw new Error(`initialize answered ${init.status}: ${init.body}`);
  const session = init.headers['mcp-session-id'];
  const more = { ...headers, 'MCP-Protocol-Version': '2025-11-25', ...(session ? { 'Mcp-Session-Id': session } : {}) };
  let id = 0;
  return async (name, code) => {
    const call = await rawExchange(port, post(port, {
      jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: { code } },
    }, more));
    if (call.status !== 200) throw new Error(`tools/call answered ${call.status}: ${call.body}`);
    return JSON.parse(call.body).result;
  };
}

// Proof that the server still serves MCP: initialize (a session when stateful), then a search
// call that must answer 2. Resolves with the tools/call result.
export async function provesServing(port, headers = {}) {
  const call = await openSession(port, headers);
  const result = await call('search', 'async () => 1 + 1');
  if (result.content[0].text !== '2') throw new Error(`unexpected result ${JSON.stringify(result)}`);
  return result;
}

// Sends one request on a fresh connection and hangs up at once; resolves when the server has
// cancelled call `id` for it and the call has ended.
export async function hangUpDuring(server, bytes, id) {
  const connection = new RawConnection(server.port);
  // Whether the server has read the request yet or not, the bytes are in; hanging up now is
  // seen as soon as the request is in flight.
  await new Promise((resolve) => connection.socket.write(bytes, resolve));
  connection.destroy();
  await server.waitFor(new RegExp(`call ${id} cancelled: the client went away`));
  await server.waitFor(new RegExp(`tools/call search id=${id}: runtime in`));
}
