// --http as a process: flags, the refusal to serve a network address unauthenticated, limits
// (body, header, calls in flight per principal), client disconnect = cancellation, and the
// graceful drain on SIGTERM. Every adversarial case ends with proof the server still serves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { spawn } from 'node:child_process';
import { BIN, run } from './harness.mjs';
import {
  startHttpServer, RawConnection, rawExchange, post, provesServing, INITIALIZE, hangUpDuring,
  writeConfig,
} from './http_harness.mjs';

const slowCall = (id, ms) => ({
  jsonrpc: '2.0', id, method: 'tools/call',
  params: { name: 'search', arguments: { code: `async () => { await new Promise(r => setTimeout(r, ${ms})); return ${id}; }` } },
});

async function session(port) {
  const init = await rawExchange(port, post(port, INITIALIZE));
  assert.equal(init.status, 200);
  return { 'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-11-25' };
}

test('a non-loopback bind without bearer tokens refuses to start (exit 2)', async () => {
  const { code, stderr } = await run(['--http', '0.0.0.0:0']);
  assert.equal(code, 2);
  assert.match(stderr, /refusing to serve --http on 0\.0\.0\.0, which is not a loopback address, without authentication: set http\.tokens \(or http\.bearer_tokens\) in the config, bind 127\.0\.0\.1, or pass --allow-unauthenticated-network-access/);
});

test('--allow-unauthenticated-network-access opts out; Host is then not pinned', async () => {
  const server = await startHttpServer(['--http', '0.0.0.0:0', '--allow-unauthenticated-network-access']);
  try {
    assert.match(server.url, /^http:\/\/0\.0\.0\.0:\d+\/mcp$/);
    const health = await rawExchange(server.port, 'GET /healthz HTTP/1.1\r\nHost: mcp.example.com\r\n\r\n');
    assert.equal(health.status, 200);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('bad --http values and HTTP-only flags without --http are usage errors', async () => {
  for (const args of [['--http', 'example.com:80'], ['--http', '127.0.0.1:99999'], ['--http'], ['--stdio'], ['--http-stateless']]) {
    const { code, stderr } = await run(args);
    assert.equal(code, 2, args.join(' '));
    assert.match(stderr, /^codemode-mcp: /, args.join(' '));
  }
});

test('--http alone does not read stdin; EOF on stdin does not stop it', async () => {
  const server = await startHttpServer(['--http', ':0']);
  try {
    server.proc.stdin.end(JSON.stringify(INITIALIZE) + '\n');
    await provesServing(server.port);
    assert.equal(server.stdout, '', 'nothing is written to stdout');
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('--http with --stdio serves both; stdin EOF drains and exits 0', async () => {
  const server = await startHttpServer(['--http', ':0', '--stdio']);
  server.proc.stdin.write(JSON.stringify(INITIALIZE) + '\n');
  while (!server.stdout.includes('\n')) await once(server.proc.stdout, 'data');
  assert.equal(JSON.parse(server.stdout).result.protocolVersion, '2025-11-25');
  await provesServing(server.port);
  server.proc.stdin.end();
  assert.deepEqual(await server.exited, [0, null]);
});

test('a real body over 4 MiB gets 413, a header block over 16 KiB 431; the server serves on', async () => {
  const server = await startHttpServer();
  try {
    const big = post(server.port, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(5 * 1024 * 1024) } }));
    const tooLarge = await rawExchange(server.port, big);
    assert.equal(tooLarge.status, 413);
    assert.match(tooLarge.body, /payload too large: the body exceeds 4194304 bytes/);

    const header = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'X-Pad': 'y'.repeat(17 * 1024) }));
    assert.equal(header.status, 431);
    assert.match(header.body, /request header fields too large: the header exceeds 16384 bytes/);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('keep-alive: several requests on one connection', async () => {
  const server = await startHttpServer();
  try {
    const headers = await session(server.port);
    const connection = new RawConnection(server.port);
    for (let id = 1; id <= 3; ++id) {
      const response = await connection.exchange(post(server.port, { jsonrpc: '2.0', id, method: 'ping' }, headers));
      assert.equal(response.status, 200);
      assert.equal(response.body, `{"id":${id},"jsonrpc":"2.0","result":{}}`);
    }
    connection.destroy();
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('a client that disconnects during tools/call cancels it', async () => {
  const server = await startHttpServer();
  try {
    const headers = await session(server.port);
    // The isolate is gone well before its 8 s timer: the call completes as cancelled.
    await hangUpDuring(server, post(server.port, slowCall(7, 8000), headers), 7);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('more calls in flight than a principal may have: 429 with Retry-After, other principals served', async () => {
  // 10 running and 6 queued: the 17th of one session (without tokens, a session is a principal).
  const config = writeConfig({ sandbox: { principal_calls: 10, principal_queue: 6 } });
  const server = await startHttpServer(['--http', ':0', '--config', config]);
  try {
    const headers = await session(server.port);
    const connections = [];
    for (let id = 1; id <= 16; ++id) {
      const connection = new RawConnection(server.port);
      connection.write(post(server.port, slowCall(id, 8000), headers));
      connections.push(connection);
    }
    // Each of the 16 is in flight once the server has read it; retry the 17th until then.
    let refused;
    for (let attempt = 0; attempt < 200; ++attempt) {
      refused = await rawExchange(server.port, post(server.port, { jsonrpc: '2.0', id: 99, method: 'ping' }, headers));
      if (refused.status === 429) break;
    }
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '1');
    assert.match(refused.body, /too many requests: 16 calls of this client are in flight or queued/);
    await provesServing(server.port);  // a new session is another principal, from the same address
    for (const connection of connections) connection.destroy();
    await server.waitFor(/call 16 cancelled: the client went away/);
    await provesServing(server.port);
  } finally {
    assert.deepEqual(await server.stop(), { code: 0, signal: null });
  }
});

test('SIGTERM drains: no new connections, /readyz 503, new requests 503, running calls answered, exit 0', async () => {
  const server = await startHttpServer();
  const headers = await session(server.port);
  const running = new RawConnection(server.port);
  const probe = new RawConnection(server.port);
  const late = new RawConnection(server.port);
  assert.equal((await probe.exchange(`GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`)).status, 200);
  assert.equal((await late.exchange(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`)).status, 200);
  const answer = running.exchange(post(server.port, slowCall(5, 1500), headers));

  server.proc.kill('SIGTERM');
  await server.waitFor(/SIGTERM: finishing running calls/);
  const ready = await probe.exchange(`GET /readyz HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
  assert.equal(ready.status, 503);
  assert.equal(ready.body, 'draining\n');
  assert.equal(ready.headers.connection, 'close');
  const refused = await late.exchange(post(server.port, { jsonrpc: '2.0', id: 9, method: 'ping' }, headers));
  assert.equal(refused.status, 503);
  assert.match(refused.body, /unavailable: the server is shutting down/);
  const fresh = connect(server.port, '127.0.0.1');
  const [error] = await once(fresh, 'error');
  assert.equal(error.code, 'ECONNREFUSED');

  const done = await answer.catch((e) => { throw new Error(`${e.message}\n${server.stderr}`); });
  assert.equal(done.status, 200);
  assert.equal(JSON.parse(done.body).result.structuredContent.result, 5);
  assert.deepEqual(await server.exited, [0, null]);
});

test('SIGTERM the moment the server says it listens: a clean exit 0, not death by the signal', async () => {
  // The line is written after the signal handler is in place; an orchestrator that stops a
  // server as soon as it is up gets a drained exit. Several rounds: the window was a race.
  for (let round = 0; round < 5; round++) {
    const proc = spawn(BIN, ['--http', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    const exited = once(proc, 'exit');
    let stderr = '';
    proc.stderr.on('data', (d) => {
      stderr += d;
      if (/listening on /.test(stderr) && !proc.signalSent) {
        proc.signalSent = true;
        proc.kill('SIGTERM');
      }
    });
    const [code, signal] = await exited;
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, stderr);
  }
});
