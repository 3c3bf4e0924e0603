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

// Both config forms: A is named "a", B (a plain bearer_tokens entry) is named "token-1".
const withTokens = () => startHttpServer(['--http', ':0', '--config', writeConfig({
  http: { tokens: [{ name: 'a', token: TOKEN_A }], bearer_tokens: [TOKEN_B] },
})]);

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

test('finding 5: no token, no body read: 401 on the header block, and no memory held', async () => {
  const server = await withTokens();
  const stalled = [];
  try {
    await provesServing(server.port, A);
    const before = rssKiB(server.proc.pid);
    const head = (path) => `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${4 * 1024 * 1024 - 1}\r\n\r\n`;
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    // /mcp without a token, and paths that need none (and take no body): the review's variant.
    const paths = { '/mcp': 401, '/healthz': 404, '/mcp/': 404, '//mcp': 404 };
    for (const [path, status] of Object.entries(paths)) {
      for (let i = 0; i < 4; ++i) {
        const connection = new RawConnection(server.port);
        connection.write(head(path));
        connection.write(chunk);  // 1 MiB of the announced 4 MiB, then nothing more
        stalled.push({ connection, path, status });
      }
    }
    for (const { connection, path, status } of stalled) {
      const refused = await connection.response(5000);
      assert.equal(refused.status, status, path);
      if (status === 401) assert.equal(refused.headers['www-authenticate'], 'Bearer');
    }
    // 16 MiB were sent; the server discarded them instead of holding them.
    const grown = rssKiB(server.proc.pid) - before;
    assert.ok(grown < 8 * 1024, `the server grew by ${grown} KiB`);
    // A client with a token is served while the others stall.
    await provesServing(server.port, A);
  } finally {
    for (const { connection } of stalled) connection.destroy();
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 6: idle connections cannot fill the connection table; a client with a token is served', async () => {
  const server = await withTokens();
  const idle = [];
  try {
    // More than max_connections (512) that never send a byte.
    for (let i = 0; i < 520; ++i) idle.push(new RawConnection(server.port));
    await Promise.all(idle.map((c) => new Promise((resolve) => {
      if (c.socket.readyState === 'open') resolve(); else c.socket.once('connect', resolve).once('close', resolve);
    })));
    // max_connections count only admitted connections: a client with a token gets in.
    await provesServing(server.port, A);
    // A few waiting connections per address are kept; the oldest beyond them are closed.
    const deadline = Date.now() + 5000;
    while (idle.filter((c) => !c.closed).length > 32 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const open = idle.filter((c) => !c.closed).length;
    assert.ok(open <= 32, `${open} idle connections are still open`);
    await provesServing(server.port, A);
  } finally {
    for (const connection of idle) connection.destroy();
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 6: a connection that sends no complete header block is closed after 10 s, not 30 s', async () => {
  const server = await withTokens();
  try {
    const started = Date.now();
    const slow = new RawConnection(server.port);
    slow.write(`POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n`);  // and never the rest
    await slow.closedByServer(15000);
    const seconds = (Date.now() - started) / 1000;
    assert.ok(seconds >= 9, `closed after ${seconds} s`);
    await provesServing(server.port, A);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 13: a session belongs to the token that made it; another token gets 404', async () => {
  const server = await withTokens();
  try {
    const sessionA = await initialize(server.port, A);
    const withB = { ...sessionA, ...B };  // A's session id, B's token
    const list = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, withB));
    assert.equal(list.status, 404);
    assert.match(list.body, /not found: no session with this Mcp-Session-Id/);

    // A's call runs; B's cancellation is refused and A gets its answer.
    const running = new RawConnection(server.port);
    const answer = running.exchange(post(server.port, slowCall(5, 500), sessionA));
    const cancel = await rawExchange(server.port, post(server.port, {
      jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 },
    }, withB));
    assert.equal(cancel.status, 404);
    const done = await answer;
    assert.equal(done.status, 200);
    assert.equal(JSON.parse(done.body).result.structuredContent.result, 5);
    running.destroy();

    const del = await rawExchange(server.port,
      `DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nAuthorization: Bearer ${TOKEN_B}\r\n` +
      `Mcp-Session-Id: ${sessionA['Mcp-Session-Id']}\r\n\r\n`);
    assert.equal(del.status, 404);
    // A's session is untouched.
    const mine = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sessionA));
    assert.equal(mine.status, 200);
    await provesServing(server.port, B);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

// 1,030 initializes on one keep-alive connection: more than the whole table (1,024).
async function flood(port, headers, options) {
  const connection = new RawConnection(port, '127.0.0.1', options);
  for (let i = 0; i < 1030; ++i) {
    const init = await connection.exchange(post(port, { ...INITIALIZE, id: i }, headers));
    assert.equal(init.status, 200);
  }
  connection.destroy();
}

test('finding 14: one token\'s initializes evict only its own sessions', async () => {
  const server = await withTokens();
  try {
    const sessionA = await initialize(server.port, A);
    await flood(server.port, B);
    const mine = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sessionA));
    assert.equal(mine.status, 200);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 14: clients sharing one token evict only the sessions from their own address', async () => {
  const server = await withTokens();
  try {
    const sessionA = await initialize(server.port, A);
    await flood(server.port, A, { localAddress: '127.0.0.3' });
    const mine = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sessionA));
    assert.equal(mine.status, 200);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 19: a chunked body\'s trailer cannot add a second Host or a session id', async () => {
  const server = await startHttpServer();
  try {
    const body = JSON.stringify(INITIALIZE);
    for (const trailer of [`Host: evil.example`, 'Mcp-Session-Id: 0123', 'Content-Type: text/plain']) {
      const bytes = `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nContent-Type: application/json\r\n` +
        'Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n' +
        `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n${trailer}\r\n\r\n`;
      const answer = await rawExchange(server.port, bytes);
      assert.equal(answer.status, 400, trailer);
      assert.match(JSON.parse(answer.body).error.message, /^bad request: trailer fields are not accepted/);
    }
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 14: without tokens, one address\'s initializes evict only its own sessions', async () => {
  const server = await startHttpServer();
  try {
    const sessionA = await initialize(server.port);
    await flood(server.port, {}, { localAddress: '127.0.0.2' });
    const mine = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, sessionA));
    assert.equal(mine.status, 200);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 15: a hang-up cancels the call even when more bytes followed the request', async () => {
  const server = await startHttpServer();
  try {
    const headers = await initialize(server.port);
    // The extra bytes in the same write as the request, then in a write of their own.
    for (const [id, split] of [[7, false], [8, true]]) {
      const connection = new RawConnection(server.port);
      const request = post(server.port, slowCall(id, 8000), headers);
      if (split) {
        await new Promise((resolve) => connection.socket.write(request, resolve));
        await new Promise((resolve) => connection.socket.write('\r\n', resolve));
        await new Promise((resolve) => connection.socket.write('\r\n', resolve));
      } else {
        await new Promise((resolve) => connection.socket.write(`${request}\r\n`, resolve));
      }
      connection.destroy();
      await server.waitFor(new RegExp(`call ${id} cancelled: the client went away`));
      await server.waitFor(new RegExp(`tools/call search id=${id}: runtime in`));
    }
    // A pipelined request behind the call: the same.
    const pipelined = new RawConnection(server.port);
    await new Promise((resolve) => pipelined.socket.write(
      post(server.port, slowCall(9, 8000), headers) + post(server.port, { jsonrpc: '2.0', id: 10, method: 'ping' }, headers), resolve));
    pipelined.destroy();
    await server.waitFor(/call 9 cancelled: the client went away/);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('finding 11: a client that shuts down its write side after its request is answered', async () => {
  const server = await startHttpServer();
  try {
    const headers = await initialize(server.port);
    // A call that is still running when the end of stream arrives, a fast one, and HTTP/1.0.
    const slow = new RawConnection(server.port);
    slow.halfClose(post(server.port, slowCall(3, 300), headers));
    const slowText = await slow.untilClosed();
    assert.match(slowText, /^(HTTP\/1\.1 100 Continue\r\n\r\n)?HTTP\/1\.1 200 OK\r\n/);
    assert.match(slowText, /"result":3,"usage":\{[^{}]*\}\}\}\}$/);

    const fast = new RawConnection(server.port);
    fast.halfClose(post(server.port, { jsonrpc: '2.0', id: 4, method: 'ping' }, headers));
    assert.match(await fast.untilClosed(), /HTTP\/1\.1 200 OK\r\n[^]*\{"id":4,"jsonrpc":"2\.0","result":\{\}\}$/);

    const old = new RawConnection(server.port);
    old.halfClose(post(server.port, slowCall(6, 300), headers).replace('HTTP/1.1', 'HTTP/1.0'));
    const oldText = await old.untilClosed();
    assert.match(oldText, /^HTTP\/1\.1 200 OK\r\n/);  // no interim response to HTTP/1.0
    assert.match(oldText, /"result":6,"usage":\{[^{}]*\}\}\}\}$/);
    assert.doesNotMatch(server.stderr, /call [346] cancelled/);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

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
    // A request id is peer text too: a C1 control (U+009B, the 8-bit CSI) in a string id.
    const session = await initialize(server.port);
    const call = await rawExchange(server.port, post(server.port, {
      jsonrpc: '2.0', id: 'c1\u009b2J', method: 'tools/call', params: { name: 'search', arguments: { code: 'async () => 1' } },
    }, session));
    assert.equal(call.status, 200);
    await server.waitFor(/tools\/call search id="c1\\xc2\\x9b2J": ok in/);
    assert.doesNotMatch(server.stderr, /\u009b/);
    assert.doesNotMatch(server.stderr, /^\[2026-12-02 12:00:00\.000\]/m);
    assert.doesNotMatch(server.stderr, /\x1b/);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});
