// Many calls at once, and many clients sharing one server (issue 21): calls that wait on the
// API hold no process, principals never share a sandbox process and are served fairly, timeouts
// say timeout, and shutdown answers every call it accepted. The real binary over HTTP, a real
// upstream on 127.0.0.1 that answers slowly or never.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, Agent } from 'node:http';
import { once } from 'node:events';
import { readdirSync } from 'node:fs';
import { childrenOf } from './harness.mjs';
import { startHttpServer, writeConfig } from './http_harness.mjs';

// An upstream: /slow answers after 200 ms (or ?ms=N), /never holds the request open. Counts requests in
// flight, and the most at once.
async function startUpstream() {
  const upstream = { inFlight: 0, most: 0, held: new Set() };
  upstream.server = createServer((request, response) => {
    upstream.inFlight += 1;
    upstream.most = Math.max(upstream.most, upstream.inFlight);
    const done = () => { upstream.inFlight -= 1; };
    if (request.url === '/never') {
      upstream.held.add(response);
      response.on('close', done);
      return;
    }
    // /slow answers after 200 ms, /slow?ms=N after N ms.
    const ms = Number(new URL(request.url, 'http://x').searchParams.get('ms') ?? 200);
    setTimeout(() => {
      done();
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"ok":true}');
    }, ms);
  });
  upstream.server.listen(0, '127.0.0.1');
  await once(upstream.server, 'listening');
  upstream.origin = `http://127.0.0.1:${upstream.server.address().port}`;
  upstream.close = () => {
    for (const response of upstream.held) response.destroy();
    upstream.server.closeAllConnections();
    upstream.server.close();
  };
  return upstream;
}

// The sanitizer build runs everything several times slower: its bounds on time are wider. The
// bounds below are the issue's, for the build that ships.
const SLOWER = process.env.CODEMODE_SANITIZED === '1' ? 3 : 1;

const TOKENS = ['alice-token-0123456789', 'bob-token-0123456789ab', 'carol-token-0123456789',
  'dave-token-0123456789a'];

// A server on 127.0.0.1 with the upstream allowed and `sandbox`/`limits` settings.
async function startServer(upstream, { sandbox = {}, limits = {}, args = [], tokens = TOKENS } = {}) {
  const config = writeConfig({
    upstreams: upstream ? [{ origin: upstream.origin }] : [],
    http: { bearer_tokens: tokens },
    sandbox,
    limits: { subrequests: 5, ...limits },
  });
  return startHttpServer(['--http', ':0', '--http-stateless', '--config', config, ...args]);
}

// One JSON-RPC tools/call over its own POST; resolves { status, text, isError, ms, headers }.
// `agent`: node's http agent (default: keep-alive connections, as many as there are calls);
// false: a connection of its own, closed after the answer.
const keepAlive = new Agent({ keepAlive: true, maxSockets: Infinity });
let nextId = 1;
function call(server, token, tool, code, agent = keepAlive) {
  const started = performance.now();
  const body = JSON.stringify({
    jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: tool, arguments: { code } },
  });
  return new Promise((resolve, reject) => {
    const request = httpRequest(server.url, {
      method: 'POST',
      agent,
      headers: {
        'content-type': 'application/json', accept: 'application/json, text/event-stream',
        authorization: `Bearer ${token}`, 'mcp-protocol-version': '2025-11-25',
        'content-length': Buffer.byteLength(body),
      },
    }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => { text += chunk; });
      response.on('end', () => {
        const ms = performance.now() - started;
        if (response.statusCode !== 200) {
          return resolve({ status: response.statusCode, text, ms, headers: response.headers });
        }
        const message = JSON.parse(text);
        if (message.error) return resolve({ status: 200, rpcError: message.error, ms });
        resolve({ status: 200, text: message.result.content[0].text, isError: message.result.isError === true, ms });
      });
    });
    request.on('error', reject);
    request.end(body);
  });
}

const percentile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
};

test('16 calls that each wait on the API are all in flight at once', async () => {
  const upstream = await startUpstream();
  const server = await startServer(upstream);
  try {
    // Each waits 2 s: long enough for all 16 to have started, however busy the machine.
    const code = `async () => (await fetch('${upstream.origin}/slow?ms=2000')).status`;
    const results = await Promise.all(Array.from({ length: 16 }, () => call(server, TOKENS[0], 'execute', code)));
    for (const result of results) assert.equal(result.text, '200');
    // Before: one call per sandbox process, one process per core: 2 at once.
    assert.equal(upstream.most, 16);
  } finally {
    await server.stop();
    upstream.close();
  }
});

test('64 calls in flight from one client are all served, none refused', async () => {
  const upstream = await startUpstream();
  const server = await startServer(upstream);
  try {
    const code = `async () => (await fetch('${upstream.origin}/slow')).status`;
    const results = await Promise.all(Array.from({ length: 64 }, () => call(server, TOKENS[0], 'execute', code)));
    assert.deepEqual(results.map((r) => r.status), Array(64).fill(200));
    for (const result of results) assert.equal(result.text, '200');
    // Before: 2 at once. How many overlap depends on how fast calls start on a busy machine.
    assert.ok(upstream.most >= 16, `at most ${upstream.most} fetches at once`);
  } finally {
    await server.stop();
    upstream.close();
  }
});

test('8 calls waiting on an upstream that never answers all end as timeout at wall_ms', async () => {
  const upstream = await startUpstream();
  const server = await startServer(upstream, { limits: { wall_ms: 2000 } });
  try {
    const code = `async () => (await fetch('${upstream.origin}/never')).status`;
    const results = await Promise.all(Array.from({ length: 8 }, () => call(server, TOKENS[0], 'execute', code)));
    for (const result of results) {
      assert.equal(result.isError, true);
      // The failure's first line; the next names the request it waited on (README, "Output").
      assert.equal(result.text.split('\n')[0], 'timeout: wall limit 2000 ms exceeded');
      assert.match(result.text, /\nafter GET http:\/\/127\.0\.0\.1:\d+\/never → no answer before the call ended$/);
      assert.ok(result.ms < 3500 * SLOWER, `answered after ${Math.round(result.ms)} ms`);
    }
  } finally {
    await server.stop();
    upstream.close();
  }
});

test("one principal's waiting calls do not hold up another's", async () => {
  const server = await startServer(null, { sandbox: { principal_calls: 3 } });
  try {
    const waiting = Array.from({ length: 6 }, () =>
      call(server, TOKENS[0], 'search', 'async () => { await new Promise(r => setTimeout(r, 3000)); return 1; }'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const other = await call(server, TOKENS[1], 'search', 'async () => 1 + 1');
    assert.equal(other.text, '2');
    // Before: 9.2 s behind alice's calls. A process start at most, on a loaded machine.
    assert.ok(other.ms < 2000 * SLOWER, `bob waited ${Math.round(other.ms)} ms`);
    for (const result of await Promise.all(waiting)) assert.equal(result.text, '1');
  } finally {
    await server.stop();
  }
});

test("memory one principal holds does not hold up another's calls", async () => {
  // memory_mb far below what alice's one call holds (96 MiB, within its own heap_mb): before,
  // no call of anyone started until hers ended (issue 34, finding 9).
  const upstream = await startUpstream();
  const server = await startServer(upstream, {
    sandbox: { memory_mb: 48 }, limits: { heap_mb: 128, cpu_ms: 2000, wall_ms: 20000 },
  });
  try {
    let aliceDone = false;
    const arrived = once(upstream.server, 'request');
    // It spends 50 ms of CPU after allocating, so the pool reads memory again (every 20 ms)
    // before bob calls.
    const alice = call(server, TOKENS[0], 'execute', `async () => {
      const held = new Uint8Array(96 << 20).fill(1);
      const start = Date.now(); while (Date.now() - start < 50) {}
      try { await fetch('/never'); } catch {}
      return held[12345];
    }`).then((result) => { aliceDone = true; return result; });
    await arrived;  // alice holds her memory now, and waits
    const bob = await call(server, TOKENS[1], 'search', 'async () => 1 + 1');
    assert.equal(bob.text, '2');
    assert.equal(aliceDone, false, `bob was answered only after alice's call ended (${Math.round(bob.ms)} ms)`);
    assert.ok(bob.ms < 5000 * SLOWER, `bob waited ${Math.round(bob.ms)} ms`);
    upstream.close();  // alice's fetch fails; her call ends
    assert.equal((await alice).text, '1');
  } finally {
    upstream.close();
    await server.stop();
  }
});

test('hostile calls of three principals do not starve a fourth', async () => {
  const server = await startServer(null, { limits: { cpu_ms: 200, heap_mb: 32 } });
  try {
    const hostile = [
      'async () => { for (;;) {} }',
      'async () => { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }',
      'async () => { let s = "x"; for (;;) s += s; }',
      'async () => new Uint8Array(1 << 30).length',
    ];
    const storm = [];
    for (let i = 0; i < 24; ++i) storm.push(call(server, TOKENS[i % 3], 'search', hostile[i % hostile.length]));
    const good = [];
    for (let i = 0; i < 40; ++i) {
      good.push(call(server, TOKENS[3], 'search', `async () => ${i} + 1`));
      if (i % 8 === 7) await Promise.all(good.slice(-8));
    }
    const answers = await Promise.all(good);
    answers.forEach((answer, i) => assert.equal(answer.text, String(i + 1)));
    const p99 = percentile(answers.map((a) => a.ms), 99);
    assert.ok(p99 < 3000 * SLOWER, `the good calls' p99 was ${Math.round(p99)} ms`);
    for (const result of await Promise.all(storm)) assert.equal(result.isError, true);
  } finally {
    await server.stop();
  }
});

test('calls of two principals run in different sandbox processes', async () => {
  const server = await startServer(null, { args: ['--log-level', 'debug'] });
  try {
    const code = 'async () => { await new Promise(r => setTimeout(r, 500)); return 1; }';
    const calls = [];
    for (let i = 0; i < 6; ++i) calls.push(call(server, TOKENS[i % 2], 'search', code));
    const alice = await server.waitFor(/sandbox: process (\d+) now serves principal token-1\b/);
    const bob = await server.waitFor(/sandbox: process (\d+) now serves principal token-2\b/);
    assert.notEqual(alice[1], bob[1]);
    const live = childrenOf(server.proc.pid);
    assert.ok(live.includes(Number(alice[1])) && live.includes(Number(bob[1])), `children ${live}`);
    for (const result of await Promise.all(calls)) assert.equal(result.text, '1');
    // Each principal's calls went to its one process: no third process took any.
    assert.equal(server.stderr.match(/now serves principal token-1\b/g).length, 1);
    assert.equal(server.stderr.match(/now serves principal token-2\b/g).length, 1);
  } finally {
    await server.stop();
  }
});

test('SIGTERM answers every accepted call, running or queued, then exits 0', async () => {
  const server = await startServer(null, { sandbox: { principal_calls: 6 } });
  const code = 'async () => { await new Promise(r => setTimeout(r, 20000)); return 1; }';
  const calls = Array.from({ length: 8 }, () => call(server, TOKENS[0], 'search', code));
  await new Promise((resolve) => setTimeout(resolve, 500));
  server.proc.kill('SIGTERM');
  const results = await Promise.all(calls);
  const texts = results.map((r) => r.text).sort();
  // 6 ran and were stopped when the 5 s grace period ended; 2 waited and never started.
  assert.deepEqual(texts, [
    ...Array(2).fill('runtime: the server is shutting down; the call did not start'),
    ...Array(6).fill('runtime: the server is shutting down; the call was stopped'),
  ]);
  const [exitCode, signal] = await server.exited;
  assert.deepEqual({ exitCode, signal }, { exitCode: 0, signal: null });
});

test('a builtin that never checks for interrupts is stopped near cpu_ms', async () => {
  const server = await startServer(null);
  try {
    const result = await call(server, TOKENS[0], 'search',
      "async () => 'ab'.repeat(2e7).replaceAll('a', 'cc').length");
    assert.equal(result.isError, true);
    assert.match(result.text, /^timeout: cpu limit 50 ms exceeded/);
    assert.match(result.text, /sandbox process was ended/);
    // Before: 11 s of CPU, until the wall backstop killed the process.
    assert.ok(result.ms < 3000 * SLOWER, `answered after ${Math.round(result.ms)} ms`);
    assert.equal((await call(server, TOKENS[0], 'search', 'async () => 1 + 1')).text, '2');
  } finally {
    await server.stop();
  }
});

test('a burst of 500 calls leaks no descriptor and no process', async () => {
  const upstream = await startUpstream();
  const server = await startServer(upstream, { sandbox: { idle_seconds: 1 } });
  try {
    const fds = () => readdirSync(`/proc/${server.proc.pid}/fd`).length;
    const settle = async () => {
      // Idle processes retire after a second; the spare stays.
      for (let i = 0; i < 100 && childrenOf(server.proc.pid).length > 1; ++i) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await call(server, TOKENS[0], 'search', 'async () => 1', false);
    await settle();
    const before = { fds: fds(), children: childrenOf(server.proc.pid).length };
    const code = `async () => (await fetch('${upstream.origin}/slow')).status`;
    for (let round = 0; round < 10; ++round) {
      const batch = [];
      for (let i = 0; i < 50; ++i) {
        batch.push(call(server, TOKENS[i % 4], i % 2 ? 'execute' : 'search',
          i % 2 ? code : 'async () => 1', false));
      }
      for (const result of await Promise.all(batch)) assert.equal(result.status, 200);
    }
    await settle();
    // The gateway keeps at most a few pooled upstream connections.
    assert.ok(fds() <= before.fds + 8, `descriptors ${before.fds} -> ${fds()}`);
    assert.equal(childrenOf(server.proc.pid).length, before.children);
  } finally {
    await server.stop();
    upstream.close();
  }
});
