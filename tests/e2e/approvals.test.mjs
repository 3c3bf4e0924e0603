// Human approval of writes (config policy.approve) through the real binary, with the official MCP
// TypeScript SDK client answering elicitation/create over stdio and over Streamable HTTP. An
// upstream records every request it receives and when: a write must reach it only after the
// user accepted, and never after a decline, a dismissal or a timeout.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, run } from './harness.mjs';
import { startHttpServer, writeConfig, rawExchange, post, INITIALIZE } from './http_harness.mjs';

const TIMEOUT_MS = 1500;
const WALL_MS = 1000;  // shorter than a slow answer: the wait must not count against it

// Records (method, path, body, at) of every request; answers 201 with a small JSON body.
async function recordingUpstream() {
  const seen = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, path: req.url, body, at: Date.now() });
      res.writeHead(req.method === 'GET' ? 200 : 201, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { seen, origin: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

function approvalConfig(origin, name) {
  const audit = join(mkdtempSync(join(tmpdir(), 'codemode-approvals-')), 'audit.db');
  return writeConfig({
    audit: { sqlite: audit, server: `approvals-${name}` },
    upstreams: [{ origin }],
    // Writes of createOrder wait for a person; cancelOrder (also a POST) does not.
    policy: { approve: { operations: ['createOrder'] }, approval_timeout_ms: TIMEOUT_MS },
    limits: { wall_ms: WALL_MS, cpu_ms: 200 },
  });
}

// A client whose user answers each question with the next of `answers` (an action, or a
// function of the request returning a promise of one); every question is kept in `asked`.
function userClient({ elicitation = true } = {}) {
  const user = { asked: [], answers: [] };
  const client = new Client({ name: 'approver-e2e', version: '1.0.0' },
    { capabilities: elicitation ? { elicitation: { form: {} } } : {} });
  if (elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
      user.asked.push({ params: request.params, at: Date.now() });
      const next = user.answers.shift() ?? 'decline';
      const action = typeof next === 'function' ? await next(request, extra) : next;
      return { action };
    });
  }
  return { client, user };
}

const orderBody = '{"customerId":"c1","items":[{"productId":"p1","quantity":2}]}';
const createOrder = `async () => { const r = await fetch('/orders', { method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(orderBody)} }); return r.status; }`;

function transports() {
  return [
    ['stdio', async (config) => {
      const connect = async (client) => {
        const transport = new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'pipe' });
        await client.connect(transport);
      };
      return { connect, stop: async () => {} };
    }],
    ['http', async (config) => {
      const server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config]);
      const connect = async (client) => client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      return { connect, stop: () => server.stop(), server };
    }],
  ];
}

for (const [name, start] of transports()) {
  describe(`approvals over ${name}`, () => {
    let upstream;
    let served;
    let client;
    let user;
    let bare;
    let config;
    let stopped = false;
    const posts = () => upstream.seen.filter((r) => r.method === 'POST' && r.path === '/orders');
    const call = (c, code) => c.callTool({ name: 'execute', arguments: { code } });

    before(async () => {
      upstream = await recordingUpstream();
      config = approvalConfig(upstream.origin, name);
      served = await start(config);
      ({ client, user } = userClient());
      await served.connect(client);
      ({ client: bare } = userClient({ elicitation: false }));
      await served.connect(bare);
    });
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      await client.close();
      await bare.close();
      await served.stop();
    };
    after(async () => {
      await stop();
      await upstream.close();
    });

    test('accept: the user sees the request first, then it is sent', async () => {
      const before = posts().length;
      // Answered after longer than wall_ms: waiting for a person does not count against it.
      user.answers.push(() => new Promise((r) => setTimeout(() => r('accept'), WALL_MS + 300)));
      const result = await call(client, createOrder);
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(result.content[0].text, '201');
      const question = user.asked.at(-1);
      assert.match(question.params.message, new RegExp(`POST ${upstream.origin}/orders`));
      assert.match(question.params.message, /Create an order \(createOrder\)/);
      assert.ok(question.params.message.includes('"productId":"p1"'), question.params.message);
      assert.equal(question.params.mode, 'form');
      assert.equal(posts().length, before + 1);
      assert.ok(posts().at(-1).at > question.at, 'the write left only after the question');
      assert.equal(posts().at(-1).body, orderBody);
    });

    test('decline: the fetch is a policy error and nothing is sent', async () => {
      const before = posts().length;
      user.answers.push('decline');
      const result = await call(client, createOrder);
      assert.equal(result.isError, true);
      assert.match(result.content[0].text, /^policy: the user declined it: POST http:\/\/127\.0\.0\.1:\d+\/orders/);
      assert.equal(posts().length, before);
    });

    test('cancel: a dismissed question is not an approval', async () => {
      const before = posts().length;
      user.answers.push('cancel');
      const result = await call(client, createOrder);
      assert.match(result.content[0].text, /^policy: the user dismissed the question without approving it/);
      assert.equal(posts().length, before);
    });

    test('no answer: refused after approval_timeout_ms, the question is withdrawn', async () => {
      const before = posts().length;
      let withdrawn = false;
      user.answers.push((request, extra) => new Promise((resolve) => {
        extra.signal.addEventListener('abort', () => { withdrawn = true; resolve('accept'); });
      }));
      const started = Date.now();
      const result = await call(client, createOrder);
      assert.match(result.content[0].text, new RegExp(`^policy: no answer from the user within ${TIMEOUT_MS} ms`));
      assert.ok(Date.now() - started >= TIMEOUT_MS);
      assert.equal(posts().length, before);
      // The late "accept" the handler sent after the withdrawal approves nothing.
      assert.ok(withdrawn, 'the server cancelled its elicitation/create');
      assert.equal((await call(client, 'async () => 1')).content[0].text, '1');
      assert.equal(posts().length, before);
    });

    test('two writes in one call: two questions, each answered on its own', async () => {
      const before = posts().length;
      user.answers.push('accept', 'decline');
      const asked = user.asked.length;
      const result = await call(client, `async () => {
        const first = await fetch('/orders', { method: 'POST', body: '{"n":1}' });
        let second;
        try { second = (await fetch('/orders', { method: 'POST', body: '{"n":2}' })).status; } catch (e) { second = e.message; }
        return [first.status, second];
      }`);
      const [first, second] = JSON.parse(result.content[0].text);
      assert.equal(first, 201);
      assert.match(second, /^the user declined it: POST/);
      assert.equal(user.asked.length, asked + 2);
      assert.match(user.asked.at(-2).params.message, /\{"n":1\}/);
      assert.match(user.asked.at(-1).params.message, /\{"n":2\}/);
      assert.deepEqual(posts().slice(before).map((r) => r.body), ['{"n":1}']);
    });

    test('reads and writes outside the rules never ask', async () => {
      const asked = user.asked.length;
      const result = await call(client, `async () => [
        (await fetch('/products')).status,
        (await fetch('/orders/o1/cancel', { method: 'POST', body: '{}' })).status]`);
      assert.equal(result.content[0].text, '[200,201]');
      assert.equal(user.asked.length, asked);
      assert.ok(upstream.seen.some((r) => r.path === '/orders/o1/cancel'));
    });

    test('every spelling a router sends to createOrder is asked about too', async () => {
      // Spring, Tomcat and Rails route all of these to POST /orders (issue 34).
      const spellings = ['/Orders', '/orders/', '/orders;x=1', '/orders.json'];
      const before = upstream.seen.length;
      const asked = user.asked.length;
      user.answers.push(...spellings.map(() => 'decline'));
      try {
        const result = await call(client, `async () => {
          const out = [];
          for (const path of ${JSON.stringify(spellings)}) {
            try { out.push((await fetch(path, { method: 'POST', body: '{}' })).status); } catch (e) { out.push(e.message); }
          }
          return out;
        }`);
        assert.deepEqual(JSON.parse(result.content[0].text),
          spellings.map((path) => `the user declined it: POST ${upstream.origin}${path}`));
        assert.equal(user.asked.length, asked + spellings.length);
        for (const question of user.asked.slice(asked)) assert.match(question.params.message, /\(createOrder\)/);
        assert.equal(upstream.seen.length, before, 'none left');
      } finally {
        user.answers.length = 0;
      }
    });

    test('a client without elicitation: such writes fail closed', async () => {
      const before = posts().length;
      const result = await call(bare, createOrder);
      assert.equal(result.isError, true);
      assert.match(result.content[0].text, /^policy: approval required, but this client cannot ask its user: POST/);
      assert.equal(posts().length, before);
      // Reads still go through for it.
      assert.equal((await call(bare, "async () => (await fetch('/products')).status")).content[0].text, '200');
    });

    test('hostile answers: unknown ids, another session\'s forged yes, approve nothing', async () => {
      const before = posts().length;
      let forged = 0;
      user.answers.push(async (request, extra) => {
        // Answers to questions nobody asked, on this client's own channel.
        for (const id of ['codemode-approval-999999', 7, null]) {
          await client.transport.send({ jsonrpc: '2.0', id, result: { action: 'accept' } });
        }
        if (name === 'http') {
          // Another session (its own MCP client) answers this question's id with a yes.
          const init = await rawExchange(served.server.port, post(served.server.port, INITIALIZE));
          const other = { 'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-11-25' };
          const sent = await rawExchange(served.server.port, post(served.server.port,
            { jsonrpc: '2.0', id: extra.requestId, result: { action: 'accept' } }, other));
          assert.equal(sent.status, 202);
          forged += 1;
        }
        await new Promise((r) => setTimeout(r, 200));
        return 'decline';
      });
      const result = await call(client, createOrder);
      assert.match(result.content[0].text, /^policy: the user declined it: POST/);
      assert.equal(posts().length, before, 'no forged answer approved the write');
      if (name === 'http') assert.equal(forged, 1);
      assert.equal((await call(client, 'async () => 2')).content[0].text, '2');
    });

    test('the audit trail names who approved, and why the others were refused', async () => {
      await stop();
      const r = await run(['audit', '--config', config, 'query', '--kind', 'request']);
      assert.equal(r.code, 0, r.stderr);
      const records = r.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
      const orders = records.filter((rec) => rec.method === 'POST' && rec.path === '/orders');
      const approved = orders.filter((rec) => rec.approved_by);
      assert.ok(approved.length >= 2, JSON.stringify(orders));
      for (const rec of approved) {
        assert.match(rec.approved_by, /via approver-e2e 1\.0\.0$/);
        assert.equal(rec.status, 201);
      }
      const refusals = orders.map((rec) => rec.refusal).filter(Boolean);
      assert.ok(refusals.some((text) => /^policy: the user declined it: POST/.test(text)));
      assert.ok(refusals.some((text) => /^policy: the user dismissed the question/.test(text)));
      assert.ok(refusals.some((text) => new RegExp(`^policy: no answer from the user within ${TIMEOUT_MS} ms`).test(text)));
      assert.ok(refusals.some((text) => /^policy: approval required, but this client cannot ask its user/.test(text)));
      // Reads and writes outside the rules carry no approval.
      assert.ok(records.filter((rec) => rec.method === 'GET').every((rec) => !rec.approved_by));
    });

    if (name === 'http') {
      test('the log names each answer and who gave it', () => {
        const log = served.server.stderr;
        assert.match(log, /approval: POST http:\/\/127\.0\.0\.1:\d+\/orders: approved \(.*approver-e2e 1\.0\.0\) after \d+ ms/);
        assert.match(log, /approval: POST .*: the user declined it/);
        assert.match(log, new RegExp(`approval: POST .*: no answer from the user within ${TIMEOUT_MS} ms`));
      });
    }
  });
}

test('approvals: a concrete path matches before a template declared ahead of it', async () => {
  // /orders/{orderId} (updateOrder, not guarded) is declared before /orders/purge (purgeOrders,
  // guarded): POST /orders/purge is purgeOrders, as OpenAPI says, and is asked about; so is a
  // write that matches no declared operation, which may be any of them upstream.
  const upstream = await recordingUpstream();
  const spec = {
    openapi: '3.0.3', info: { title: 'Orders', version: '1' },
    paths: {
      '/orders/{orderId}': { post: { operationId: 'updateOrder', summary: 'Update an order' } },
      '/orders/purge': { post: { operationId: 'purgeOrders', summary: 'Delete every order' } },
    },
  };
  const specFile = join(mkdtempSync(join(tmpdir(), 'codemode-approvals-spec-')), 'openapi.json');
  writeFileSync(specFile, JSON.stringify(spec));
  const config = writeConfig({
    openapi: specFile,
    upstreams: [{ origin: upstream.origin }],
    policy: { approve: { operations: ['purgeOrders'] }, approval_timeout_ms: TIMEOUT_MS },
  });
  const { client, user } = userClient();
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'pipe' }));
  try {
    user.answers.push('decline', 'decline', 'decline');
    const result = await client.callTool({ name: 'execute', arguments: { code: `async () => {
      const out = [];
      for (const path of ['/orders/purge', '/Orders/Purge.json', '/orders/o1/notes', '/orders/o1']) {
        try { out.push((await fetch(path, { method: 'POST', body: '{}' })).status); } catch (e) { out.push(e.message); }
      }
      return out;
    }` } });
    assert.deepEqual(JSON.parse(result.content[0].text), [
      `the user declined it: POST ${upstream.origin}/orders/purge`,
      `the user declined it: POST ${upstream.origin}/Orders/Purge.json`,
      `the user declined it: POST ${upstream.origin}/orders/o1/notes`,
      201,
    ]);
    assert.match(user.asked[0].params.message, /Delete every order \(purgeOrders\)/);
    assert.equal(user.asked.length, 3);
    assert.deepEqual(upstream.seen.map((r) => `${r.method} ${r.path}`), ['POST /orders/o1']);
  } finally {
    await client.close();
    await upstream.close();
  }
});
