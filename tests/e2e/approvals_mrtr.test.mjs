// Approvals in MCP 2026-07-28 (multi round-trip requests), with raw requests to the real binary:
// a call that needs the user's yes ends with an InputRequiredResult and a sealed requestState;
// the client sends the call again with the answers and the code runs again from the start. An
// upstream records every request: a write leaves once per approval, a write made in an earlier
// round is not made again, and state that is changed, replayed, expired, another principal's or
// another call's is refused.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { BIN } from './harness.mjs';
import { startHttpServer, writeConfig, rawExchange, post } from './http_harness.mjs';

const TOKENS = { alice: 'alice-mrtr-token-0123456789abcdef', bob: 'bob-mrtr-token-0123456789abcdef' };
const KEY = 'a1'.repeat(32);

let upstream;
let server;

async function recordingUpstream() {
  const seen = [];
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, path: req.url, body });
      res.writeHead(req.method === 'GET' ? 200 : 201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ n: seen.length, body }));
    });
  });
  await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
  return { seen, origin: `http://127.0.0.1:${http.address().port}`, close: () => new Promise((r) => http.close(r)) };
}

before(async () => {
  upstream = await recordingUpstream();
  const config = writeConfig({
    upstreams: [{ origin: upstream.origin }],
    http: { tokens: Object.entries(TOKENS).map(([name, token]) => ({ name, token })) },
    policy: { approve: { operations: ['createOrder'] }, approval_timeout_ms: 1000, approval_key: KEY },
  });
  server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config]);
});
after(async () => {
  await server.stop();
  await upstream.close();
});

let nextId = 0;
// One 2026-07-28 tools/call of execute by `who`; resolves with the parsed JSON-RPC response.
async function call(who, code, extra = {}, capabilities = { elicitation: { form: {} } }) {
  const id = ++nextId;
  const message = {
    jsonrpc: '2.0', id, method: 'tools/call',
    params: {
      name: 'execute', arguments: { code }, ...extra,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': capabilities,
        'io.modelcontextprotocol/clientInfo': { name: 'mrtr-e2e', version: '1' },
      },
    },
  };
  const response = await rawExchange(server.port, post(server.port, message, {
    Authorization: `Bearer ${TOKENS[who]}`, 'MCP-Protocol-Version': '2026-07-28',
    'Mcp-Method': 'tools/call', 'Mcp-Name': 'execute',
  }));
  const body = JSON.parse(response.body);
  assert.equal(body.id, id);
  return body;
}

const posts = () => upstream.seen.filter((r) => r.method === 'POST').map((r) => r.body);
const TWO_WRITES = `async () => {
  const read = (await fetch('/products')).status;
  const a = await fetch('/orders', { method: 'POST', body: '{"order":"A"}' });
  const b = await fetch('/orders', { method: 'POST', body: '{"order":"B"}' });
  return [read, a.status, (await a.json()).n, b.status];
}`;

function approveAll(result) {
  return Object.fromEntries(Object.keys(result.inputRequests).map((key) => [key, { action: 'accept' }]));
}

test('two writes: each round asks for the next, a write made in an earlier round is not made again', async () => {
  const start = posts().length;
  const first = (await call('alice', TWO_WRITES)).result;
  assert.equal(first.resultType, 'input_required');
  const [key] = Object.keys(first.inputRequests);
  assert.equal(first.inputRequests[key].method, 'elicitation/create');
  assert.equal(first.inputRequests[key].params.mode, 'form');
  assert.match(first.inputRequests[key].params.message, /POST http:\/\/127\.0\.0\.1:\d+\/orders/);
  assert.match(first.inputRequests[key].params.message, /\{"order":"A"\}/);
  assert.equal(typeof first.requestState, 'string');
  assert.equal(posts().length, start, 'nothing written before the answer');

  const second = (await call('alice', TWO_WRITES, { requestState: first.requestState, inputResponses: approveAll(first) })).result;
  assert.equal(second.resultType, 'input_required');
  assert.match(Object.values(second.inputRequests)[0].params.message, /\{"order":"B"\}/);
  assert.deepEqual(posts().slice(start), ['{"order":"A"}'], 'A written once, B not yet');

  const third = (await call('alice', TWO_WRITES, { requestState: second.requestState, inputResponses: approveAll(second) })).result;
  assert.equal(third.resultType, 'complete');
  assert.equal(third.isError, undefined, JSON.stringify(third));
  const [read, aStatus, aN, bStatus] = JSON.parse(third.content[0].text);
  assert.deepEqual([read, aStatus, bStatus], [200, 201, 201]);
  // A's response is the one of round two, given back, not a second write.
  assert.equal(upstream.seen.find((r) => r.body === '{"order":"A"}').path, '/orders');
  assert.equal(aN, upstream.seen.findIndex((r) => r.body === '{"order":"A"}') + 1);
  assert.deepEqual(posts().slice(start), ['{"order":"A"}', '{"order":"B"}']);

  // The same state and answers again: refused, nothing written twice.
  const replay = await call('alice', TWO_WRITES, { requestState: second.requestState, inputResponses: approveAll(second) });
  assert.equal(replay.error.code, -32602);
  assert.match(replay.error.message, /requestState was already used/);
  assert.deepEqual(posts().slice(start), ['{"order":"A"}', '{"order":"B"}']);
  const log = server.stderr;
  assert.match(log, /approval: POST http:\/\/127\.0\.0\.1:\d+\/orders: approved \(alice via mrtr-e2e 1\)/);
});

test('a decline reaches the code as the policy error; reads never ask', async () => {
  const code = `async () => { await fetch('/products');
    try { await fetch('/orders', { method: 'POST', body: '{"order":"D"}' }); return 'sent'; } catch (e) { return e.message; } }`;
  const first = (await call('alice', code)).result;
  const answers = Object.fromEntries(Object.keys(first.inputRequests).map((k) => [k, { action: 'decline' }]));
  const second = (await call('alice', code, { requestState: first.requestState, inputResponses: answers })).result;
  assert.equal(second.resultType, 'complete');
  assert.match(JSON.parse(second.content[0].text), /^the user declined it: POST/);
  assert.ok(!posts().includes('{"order":"D"}'));
  const reads = (await call('alice', "async () => (await fetch('/products')).status")).result;
  assert.equal(reads.resultType, 'complete');
  assert.equal(reads.content[0].text, '200');
});

test('changed, another principal\'s, another call\'s or expired state is refused', async () => {
  const code = "async () => (await fetch('/orders', { method: 'POST', body: '{\"order\":\"E\"}' })).status";
  const fresh = async () => (await call('alice', code)).result;
  const before = posts().length;

  const tampered = await fresh();
  const bytes = Buffer.from(tampered.requestState, 'base64');
  bytes[bytes.length - 20] ^= 1;
  const changed = await call('alice', code, { requestState: bytes.toString('base64'), inputResponses: approveAll(tampered) });
  assert.match(changed.error.message, /requestState is not one this server issued, or it was changed/);

  const alices = await fresh();
  const swapped = await call('bob', code, { requestState: alices.requestState, inputResponses: approveAll(alices) });
  assert.match(swapped.error.message, /requestState was issued to another principal/);

  const other = await fresh();
  const elsewhere = await call('alice', code.replace('"E"', '"F"'), { requestState: other.requestState, inputResponses: approveAll(other) });
  assert.match(elsewhere.error.message, /requestState belongs to another call/);

  const late = await fresh();
  await new Promise((r) => setTimeout(r, 2200));  // past approval_timeout_ms (1 s), whole seconds
  const expired = await call('alice', code, { requestState: late.requestState, inputResponses: approveAll(late) });
  assert.match(expired.error.message, /requestState has expired/);

  assert.equal(posts().length, before, 'none of them wrote');
  // After all of that the server serves the next call.
  assert.equal((await call('alice', 'async () => 7')).result.content[0].text, '7');
});

test('code whose next run makes a different request gets no approval for it', async () => {
  const code = "async () => (await fetch('/orders', { method: 'POST', body: JSON.stringify({ at: Math.random() }) })).status";
  const first = (await call('alice', code)).result;
  const before = posts().length;
  const second = (await call('alice', code, { requestState: first.requestState, inputResponses: approveAll(first) })).result;
  assert.equal(second.resultType, 'input_required', 'asked again: the approved request never came');
  assert.equal(posts().length, before);
});

test('a client that did not declare elicitation: such writes fail closed', async () => {
  const result = (await call('alice', "async () => (await fetch('/orders', { method: 'POST', body: '{}' })).status", {}, {})).result;
  assert.equal(result.resultType, 'complete');
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /^policy: approval required, but this client cannot ask its user: POST/);
});

test('over stdio, the last call ending with its questions lets the server stop at end of input', async () => {
  // Shutting down at stdin's end waits for the stdio session to have no call left; a call that
  // ended with an InputRequiredResult used to leave that wait unanswered, and the server ran on.
  const config = writeConfig({
    upstreams: [{ origin: upstream.origin }],
    policy: { approve: { operations: ['createOrder'] }, approval_key: KEY },
  });
  const proc = spawn(BIN, ['--config', config], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.resume();
  const exited = once(proc, 'exit');
  const message = {
    jsonrpc: '2.0', id: 1, method: 'tools/call',
    params: {
      name: 'execute', arguments: { code: TWO_WRITES },
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
        'io.modelcontextprotocol/clientInfo': { name: 'mrtr-e2e', version: '1' },
      },
    },
  };
  proc.stdin.end(`${JSON.stringify(message)}\n`);
  const killer = setTimeout(() => proc.kill('SIGKILL'), 20000);
  const [code, signal] = await exited;
  clearTimeout(killer);
  assert.equal(signal, null, 'the server stopped by itself once its one call had answered');
  assert.equal(code, 0);
  const answer = JSON.parse(stdout.trim().split('\n').pop());
  assert.equal(answer.id, 1);
  assert.equal(answer.result.resultType, 'input_required', stdout);
});
