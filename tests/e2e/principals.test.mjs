// Per-principal credentials and policy (config `principals`), through the real binary over HTTP:
// three bearer tokens call `execute` at once against one upstream that records the credential
// of every request it receives. Each principal's requests carry its own credential, never
// another's; a principal without an entry gets the top-level one; a principal's own policy holds
// for it alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { startHttpServer, writeConfig, openSession } from './http_harness.mjs';

const TOKENS = {
  alice: 'alice-mcp-token-0123456789abcdef',
  bob: 'bob-mcp-token-0123456789abcdef',
  carol: 'carol-mcp-token-0123456789abcdef',
};
const KEYS = { alice: 'Bearer alice-api-key-5f2e91', bob: 'Bearer bob-api-key-0c7d44', shared: 'Bearer shared-api-key-9a1b3c' };

// The upstream: records (path, Authorization) of every request, answers 200 with no echo.
async function recordingUpstream() {
  const seen = [];
  const server = createServer((req, res) => {
    seen.push({ method: req.method, path: req.url, authorization: req.headers.authorization ?? '' });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { seen, origin: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) };
}

// `execute` calls in one session of the principal `name`.
async function session(port, name) {
  const call = await openSession(port, { Authorization: `Bearer ${TOKENS[name]}` });
  return (code) => call('execute', code);
}

test('each principal\'s requests carry its own credential and follow its own policy', async () => {
  const upstream = await recordingUpstream();
  const config = writeConfig({
    upstreams: [{ origin: upstream.origin, headers: { Authorization: KEYS.shared } }],
    http: { tokens: Object.entries(TOKENS).map(([name, token]) => ({ name, token })) },
    principals: {
      alice: { upstreams: [{ origin: upstream.origin, headers: { Authorization: KEYS.alice } }], policy: { methods: ['GET'] } },
      bob: { upstreams: [{ origin: upstream.origin, headers: { Authorization: KEYS.bob } }] },
    },
  });
  const server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config]);
  try {
    const calls = {};
    for (const name of Object.keys(TOKENS)) calls[name] = await session(server.port, name);
    // Ten calls each, all at once, each fetching twice: the three principals' requests interleave
    // on the gateway's pooled connections to the one upstream.
    const all = [];
    for (let i = 0; i < 10; i++) {
      for (const name of Object.keys(TOKENS)) {
        all.push(calls[name](`async () => { const a = await fetch('/who/${name}/${i}/a'); const b = await fetch('/who/${name}/${i}/b'); return [a.status, b.status]; }`)
          .then((result) => assert.equal(result.content[0].text, '[200,200]', `${name}: ${JSON.stringify(result)}`)));
      }
    }
    await Promise.all(all);
    assert.equal(upstream.seen.length, 60);
    const expected = { alice: KEYS.alice, bob: KEYS.bob, carol: KEYS.shared };
    for (const { path, authorization } of upstream.seen) {
      const name = path.split('/')[2];
      assert.equal(authorization, expected[name], `${path} arrived with another principal's credential`);
    }

    // Alice is read-only; bob and carol keep the top-level policy (all methods).
    const refused = await calls.alice("async () => (await fetch('/orders', { method: 'POST', body: '{}' })).status");
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /^policy: method POST is not allowed here \(allowed: GET\)/);
    assert.equal(upstream.seen.filter((r) => r.method === 'POST').length, 0, 'the refused POST never left');
    assert.equal((await calls.bob("async () => (await fetch('/orders', { method: 'POST', body: '{}' })).status")).content[0].text, '200');
    assert.equal(upstream.seen.at(-1).authorization, KEYS.bob);

    for (const key of Object.values(KEYS)) {
      assert.ok(!server.stderr.includes(key.split(' ')[1]), 'no credential in the log');
    }
  } finally {
    await server.stop();
    await upstream.close();
  }
});

test('a principals entry that names no token is warned about at start-up', async () => {
  const config = writeConfig({
    http: { tokens: [{ name: 'alice', token: TOKENS.alice }] },
    principals: { alise: {} },
  });
  const server = await startHttpServer(['--http', '127.0.0.1:0', '--config', config]);
  try {
    assert.match(server.stderr, /warn.*config: principals\.alise: no bearer token has this name/);
  } finally {
    await server.stop();
  }
});
