// Opaque access tokens through introspection (RFC 7662) and downstream tokens through token
// exchange (RFC 8693), through the real binary against a real authorization server: oidc-provider
// on 127.0.0.1 issuing opaque access tokens for our resource, with its introspection endpoint on
// and a token-exchange grant registered (oidc-provider has none of its own: the handler below
// checks the subject token at the provider and issues a token for the requested audience).
// What is proven: an opaque token is accepted with its principal and scopes; revoked, unknown,
// foreign-audience and expired ones are refused 401 invalid_token and the next call is served;
// repeated calls cost one introspection (the cache), repeated garbage too; each principal's
// requests to an exchanging upstream carry a token exchanged for that principal, never the
// caller's own token; a cached exchange is reused and an expired one exchanged again; a failed
// exchange is a clear error for that fetch and the next call is served; a static token's call
// cannot be exchanged for; no token (the caller's or an exchanged one) reaches the log, the
// audit trail or the exported spans.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';
import { startHttpServer, rawExchange, post, provesServing, openSession, INITIALIZE, writeConfig } from './http_harness.mjs';

const STATIC_TOKEN = 'static-token-0123456789abcdef';
const OTHER_RESOURCE = 'https://other.example.com/mcp';
const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const SERVER_CLIENT = { id: 'mcp-server', secret: 'mcp-server-secret-0a9b8c' };

const as = {
  introspections: 0, exchanges: 0, exchangeTtl: 300, failExchange: false,
  exchanged: new Map(),  // exchanged token -> { principal, audience, subject }
  shortTtl: false,
  exchangeDelayMs: 0,
  introspecting: 0, maxIntrospecting: 0,  // introspection requests in flight at the provider
  introspectionDelayMs: 0,
};

async function freePort() {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  probe.close();
  await once(probe, 'close');
  return port;
}

function makeProvider() {
  const provider = new Provider(as.issuer, {
    clients: [
      { client_id: 'app', client_secret: 'app-secret', grant_types: ['client_credentials'],
        redirect_uris: [], response_types: [], scope: 'mcp:read mcp:execute' },
      { client_id: 'other', client_secret: 'other-secret', grant_types: ['client_credentials'],
        redirect_uris: [], response_types: [], scope: 'mcp:read mcp:execute' },
      { client_id: 'reader', client_secret: 'reader-secret', grant_types: ['client_credentials'],
        redirect_uris: [], response_types: [], scope: 'mcp:read' },
      // codemode-mcp itself: introspects tokens and exchanges them.
      { client_id: SERVER_CLIENT.id, client_secret: SERVER_CLIENT.secret, grant_types: [EXCHANGE],
        redirect_uris: [], response_types: [] },
    ],
    scopes: ['mcp:read', 'mcp:execute'],
    features: {
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => OTHER_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => ({
          scope: 'mcp:read mcp:execute',
          audience: indicator,
          accessTokenTTL: as.shortTtl ? 1 : 300,
          accessTokenFormat: 'opaque',
        }),
      },
    },
  });
  // RFC 8693 as the test's authorization server does it: the subject token must be an active
  // access token of this provider; the answer is a token for the requested audience, recorded so
  // the upstream can tell whose it is.
  provider.registerGrantType(EXCHANGE, async (ctx, next) => {
    as.exchanges += 1;
    const { params } = ctx.oidc;
    if (as.failExchange) throw new errors.InvalidGrant('the test refuses this exchange');
    // A slow issuer: requests arriving meanwhile must wait for this exchange, not start their own.
    if (as.exchangeDelayMs) await new Promise((resolve) => setTimeout(resolve, as.exchangeDelayMs));
    if (params.subject_token_type !== 'urn:ietf:params:oauth:token-type:access_token') {
      throw new errors.InvalidRequest('unexpected subject_token_type');
    }
    const subject = (await provider.ClientCredentials.find(params.subject_token))
      ?? (await provider.AccessToken.find(params.subject_token));
    if (!subject || !subject.isValid) throw new errors.InvalidGrant('subject_token is not active');
    const token = `xchg-${randomUUID()}`;
    as.exchanged.set(token, {
      principal: subject.accountId ? `sub:${subject.accountId}` : `client:${subject.clientId}`,
      audience: params.audience, subject: params.subject_token, scope: params.scope,
    });
    ctx.body = {
      access_token: token, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token',
      token_type: 'Bearer', expires_in: as.exchangeTtl,
    };
    await next();
  }, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'scope']);
  return provider;
}

before(async () => {
  as.server = createServer((req, res) => {
    if (req.url.startsWith('/token/introspection')) {
      as.introspections += 1;
      as.introspecting += 1;
      as.maxIntrospecting = Math.max(as.maxIntrospecting, as.introspecting);
      res.on('close', () => { as.introspecting -= 1; });
      // A slow issuer, so that requests the server lets run at once overlap here.
      if (as.introspectionDelayMs) return setTimeout(() => as.callback(req, res), as.introspectionDelayMs);
    }
    as.callback(req, res);
  });
  as.server.listen(0, '127.0.0.1');
  await once(as.server, 'listening');
  as.issuer = `http://127.0.0.1:${as.server.address().port}`;
  as.mcpPort = await freePort();
  as.resource = `http://127.0.0.1:${as.mcpPort}/mcp`;
  as.provider = makeProvider();
  as.callback = as.provider.callback();
});

after(() => { as.server.closeAllConnections(); as.server.close(); });

async function issue(client, secret, { resource = as.resource, scope = 'mcp:read mcp:execute' } = {}) {
  const response = await fetch(`${as.issuer}/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: `Basic ${Buffer.from(`${client}:${secret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  assert.ok(!body.access_token.includes('.'), 'the provider issues opaque tokens');
  return body.access_token;
}

async function revoke(token) {
  const response = await fetch(`${as.issuer}/token/revocation`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: `Basic ${Buffer.from('app:app-secret').toString('base64')}`,
    },
    body: new URLSearchParams({ token }),
  });
  assert.equal(response.status, 200);
}

const bearer = (token) => ({ Authorization: `Bearer ${token}` });
const challengeOf = (response) => response.headers['www-authenticate'] ?? '';
const introspection = { client_id: SERVER_CLIENT.id, client_secret: SERVER_CLIENT.secret };

const startServer = async (config) => {
  const server = await startHttpServer(['--http', `127.0.0.1:${as.mcpPort}`, '--config', config]);
  await server.waitFor(/oauth: opaque tokens are introspected at/);
  return server;
};

test('opaque tokens: accepted with their principal and scopes, the answer cached', async () => {
  const server = await startServer(writeConfig({
    http: {
      tokens: [{ name: 'ops', token: STATIC_TOKEN }],
      oauth: {
        issuer: as.issuer, resource: as.resource, introspection: { ...introspection, concurrency: 2 },
        scopes: { search: ['mcp:read'], execute: ['mcp:read', 'mcp:execute'] },
      },
    },
  }));
  try {
    const token = await issue('app', 'app-secret');
    const before = as.introspections;
    const call = await openSession(server.port, bearer(token));
    for (let i = 0; i < 4; ++i) assert.equal((await call('search', 'async () => 6 * 7')).content[0].text, '42');
    assert.equal(as.introspections, before + 1, 'initialize and four calls: one introspection');
    assert.match(server.stderr, /http: access token of client:app from 127\.0\.0\.1/);

    // Scopes come from the introspection answer: the reader's token lacks mcp:execute.
    const reader = await issue('reader', 'reader-secret', { scope: 'mcp:read' });
    const init = await rawExchange(server.port, post(server.port, INITIALIZE, bearer(reader)));
    assert.equal(init.status, 200, init.body);
    const execute = await rawExchange(server.port, post(server.port, {
      jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute', arguments: { code: 'async () => 1' } },
    }, { ...bearer(reader), 'MCP-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': init.headers['mcp-session-id'] }));
    assert.equal(execute.status, 403, execute.body);
    assert.match(challengeOf(execute), /error="insufficient_scope", scope="mcp:execute"/);

    // A flood of the same made-up token costs one introspection.
    const garbage = `made-up-${randomUUID()}`;
    const floodBefore = as.introspections;
    await Promise.all(Array.from({ length: 20 }, async () => {
      const refused = await rawExchange(server.port, post(server.port, INITIALIZE, bearer(garbage)));
      assert.equal(refused.status, 401);
    }));
    assert.equal(as.introspections, floodBefore + 1, 'twenty of one garbage token: one introspection');
    // Many distinct made-up tokens at once: each introspected once, never more than
    // `concurrency` requests at the issuer at a time, every one refused.
    as.maxIntrospecting = 0;
    as.introspectionDelayMs = 50;
    const manyBefore = as.introspections;
    await Promise.all(Array.from({ length: 30 }, async (_, i) => {
      const refused = await rawExchange(server.port, post(server.port, INITIALIZE, bearer(`made-up-${i}-${randomUUID()}`)));
      assert.equal(refused.status, 401);
    }));
    as.introspectionDelayMs = 0;
    assert.equal(as.introspections, manyBefore + 30);
    assert.ok(as.maxIntrospecting <= 2, `${as.maxIntrospecting} introspections ran at once`);
    assert.equal(as.maxIntrospecting, 2, 'the two allowed do run at once');
    // Text that is no bearer token is refused unsent.
    const odd = await rawExchange(server.port, post(server.port, INITIALIZE, bearer('has"quote')));
    assert.equal(odd.status, 401);
    assert.equal(as.introspections, manyBefore + 30);
    await provesServing(server.port, bearer(STATIC_TOKEN));
    for (const t of [token, reader, garbage]) assert.ok(!server.stderr.includes(t), 'a token reached the log');
  } finally {
    await server.stop();
  }
});

test('revoked, foreign, expired and unknown opaque tokens: 401 invalid_token, the next call served', async () => {
  const server = await startServer(writeConfig({
    http: { oauth: { issuer: as.issuer, resource: as.resource, leeway_s: 0, introspection } },
  }));
  try {
    const revoked = await issue('app', 'app-secret');
    await revoke(revoked);
    as.shortTtl = true;
    const expiring = await issue('app', 'app-secret');
    as.shortTtl = false;
    const hostile = {
      revoked,
      'another resource': await issue('app', 'app-secret', { resource: OTHER_RESOURCE }),
      unknown: `unknown-${randomUUID()}`,
    };
    // The short-lived token expires (1 s at the provider) before it is first presented.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    hostile.expired = expiring;
    const metadataUrl = `http://127.0.0.1:${as.mcpPort}/.well-known/oauth-protected-resource/mcp`;
    for (const [name, token] of Object.entries(hostile)) {
      const refused = await rawExchange(server.port, post(server.port, INITIALIZE, bearer(token)));
      assert.equal(refused.status, 401, `${name}: ${refused.body}`);
      assert.equal(challengeOf(refused), `Bearer resource_metadata="${metadataUrl}", error="invalid_token"`, name);
      assert.match(JSON.parse(refused.body).error.message, /^invalid_token: /, name);
      await provesServing(server.port, bearer(await issue('app', 'app-secret')));
    }
    assert.match(server.stderr, /invalid_token: the token is not active \(introspection\)/);
    assert.match(server.stderr, /invalid_token: the token is not for this resource \(aud\)/);
    for (const token of Object.values(hostile)) assert.ok(!server.stderr.includes(token), 'a token reached the log');
  } finally {
    await server.stop();
  }
});

// The upstream: records the Authorization of every request and tells whose exchanged token it is.
async function recordingUpstream() {
  const seen = [];
  const server = createServer((req, res) => {
    const authorization = req.headers.authorization ?? '';
    const token = authorization.replace(/^Bearer /, '');
    seen.push({ path: req.url, authorization, exchanged: as.exchanged.get(token) });
    res.writeHead(200, { 'content-type': 'application/json' });
    // An upstream that echoes the credential it got: the code must not see it.
    res.end(JSON.stringify({ echo: authorization }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { seen, origin: `http://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// An OTLP/HTTP collector that keeps every body it is sent.
async function collector() {
  const bodies = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => { bodies.push(Buffer.concat(chunks).toString()); res.writeHead(200); res.end('{}'); });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { bodies, url: `http://127.0.0.1:${server.address().port}/v1/traces`, close: () => server.close() };
}

test('token exchange: each principal\'s requests carry a token exchanged for it, never its own', async () => {
  const upstream = await recordingUpstream();
  const spans = await collector();
  const config = writeConfig({
    upstreams: [{
      origin: upstream.origin,
      headers: { 'X-Api-Key': 'static-api-key-5d1c' },
      token_exchange: { audience: 'orders-api', scope: ['orders:read'], client_id: SERVER_CLIENT.id, client_secret: SERVER_CLIENT.secret },
    }],
    http: {
      tokens: [{ name: 'ops', token: STATIC_TOKEN }],
      oauth: { issuer: as.issuer, resource: as.resource, leeway_s: 0, introspection },
    },
    audit: { sqlite: 'audit.db' },
    tracing: { otlp: spans.url },
  });
  const server = await startServer(config);
  const callerTokens = [];
  try {
    as.exchangeTtl = 300;
    const tokens = { app: await issue('app', 'app-secret'), other: await issue('other', 'other-secret') };
    callerTokens.push(...Object.values(tokens));
    const calls = { app: await openSession(server.port, bearer(tokens.app)), other: await openSession(server.port, bearer(tokens.other)) };
    const fetchWho = (name) => calls[name](
      'execute', `async () => { const r = await fetch('/who/${name}'); return [r.status, (await r.json()).echo]; }`);
    const before = as.exchanges;
    // Five calls of each principal at once against a slow issuer: one exchange each, which the
    // others wait for; then cached.
    as.exchangeDelayMs = 300;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => fetchWho(i % 2 ? 'app' : 'other')));
    as.exchangeDelayMs = 0;
    for (const result of results) {
      assert.equal(result.isError, undefined, JSON.stringify(result));
      assert.equal(JSON.parse(result.content[0].text)[1], 'Bearer [redacted]', 'the echoed credential is redacted');
    }
    assert.equal(as.exchanges, before + 2, 'one exchange per principal');
    assert.equal(upstream.seen.length, 10);
    const byPrincipal = {};
    for (const { path, authorization, exchanged } of upstream.seen) {
      const name = path.split('/')[2];
      assert.ok(exchanged, `${path}: the upstream got a token that was not exchanged: ${authorization.slice(0, 12)}`);
      assert.equal(exchanged.principal, `client:${name}`, `${path} carried another principal's token`);
      assert.equal(exchanged.audience, 'orders-api');
      assert.equal(exchanged.scope, 'orders:read');
      assert.equal(exchanged.subject, tokens[name]);
      for (const token of callerTokens) assert.ok(!authorization.includes(token), 'the caller\'s own token went upstream');
      byPrincipal[name] ??= authorization;
      assert.equal(authorization, byPrincipal[name], 'a principal\'s cached token is reused');
    }
    assert.notEqual(byPrincipal.app, byPrincipal.other);

    // A static token's call has no access token to exchange: a policy error, nothing sent.
    const ops = await openSession(server.port, bearer(STATIC_TOKEN));
    const refused = await ops('execute', "async () => (await fetch('/who/ops')).status");
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /policy: requests to http:\/\/127\.0\.0\.1:\d+ carry a token exchanged for the caller's OAuth access token, and this call came without one/);
    assert.equal(upstream.seen.length, 10);

    // A failing exchange: a clear error for that fetch, no token in it; the next call is served.
    as.failExchange = true;
    const reader = await issue('reader', 'reader-secret', { scope: 'mcp:read' });
    callerTokens.push(reader);
    const readerCall = await openSession(server.port, bearer(reader));
    const failed = await readerCall('execute', "async () => (await fetch('/who/reader')).status");
    assert.equal(failed.isError, true);
    assert.match(failed.content[0].text,
      /token exchange for http:\/\/127\.0\.0\.1:\d+ failed: the authorization server refused the exchange \(400 invalid_grant\)/);
    assert.equal(upstream.seen.length, 10, 'nothing was sent');
    as.failExchange = false;
    assert.equal((await readerCall('execute', "async () => (await fetch('/who/reader')).status")).content[0].text, '200');
    assert.equal(upstream.seen.at(-1).exchanged.principal, 'client:reader');
  } finally {
    await server.stop();
    upstream.close();
    spans.close();
  }
  // Nothing holds a token: the log, the audit trail (its database files), the exported spans.
  const exchangedTokens = [...as.exchanged.keys()];
  const auditDir = dirname(config);
  const auditBytes = readdirSync(auditDir).filter((f) => f.startsWith('audit.db'))
    .map((f) => readFileSync(join(auditDir, f)).toString('latin1')).join('');
  assert.ok(auditBytes.length > 0, 'the audit trail was written');
  assert.ok(spans.bodies.length > 0, 'spans were exported');
  for (const token of [...callerTokens, ...exchangedTokens]) {
    assert.ok(!server.stderr.includes(token), 'a token reached the log');
    assert.ok(!auditBytes.includes(token), 'a token reached the audit trail');
    assert.ok(!spans.bodies.some((b) => b.includes(token)), 'a token reached a span');
  }
});

test('an exchanged token is reused until it expires, then exchanged again', async () => {
  const upstream = await recordingUpstream();
  const server = await startServer(writeConfig({
    upstreams: [{ origin: upstream.origin }],
    http: { oauth: { issuer: as.issuer, resource: as.resource, leeway_s: 0, introspection } },
    // Only this principal's requests are exchanged for; the entry replaces the top-level one.
    principals: {
      'client:app': { upstreams: [{ origin: upstream.origin, token_exchange: { audience: 'orders-api', client_id: SERVER_CLIENT.id, client_secret: SERVER_CLIENT.secret } }] },
    },
  }));
  try {
    as.exchangeTtl = 2;
    const call = await openSession(server.port, bearer(await issue('app', 'app-secret')));
    const fetchOnce = async () => {
      const result = await call('execute', "async () => (await fetch('/x')).status");
      assert.equal(result.content[0].text, '200', JSON.stringify(result));
      return upstream.seen.at(-1).authorization;
    };
    const before = as.exchanges;
    const first = await fetchOnce();
    const started = Date.now();
    assert.equal(await fetchOnce(), first);
    assert.equal(as.exchanges, before + 1, 'the cached token is reused');
    // Its two seconds pass (no condition to await: the expiry is time itself).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 2100 - (Date.now() - started))));
    const second = await fetchOnce();
    assert.notEqual(second, first, 'an expired exchanged token is not sent');
    assert.equal(as.exchanges, before + 2);
    // Another principal has no entry: the top-level upstream, no exchange, no Authorization.
    const other = await openSession(server.port, bearer(await issue('other', 'other-secret')));
    assert.equal((await other('execute', "async () => (await fetch('/y')).status")).content[0].text, '200');
    assert.equal(upstream.seen.at(-1).authorization, '');
    assert.equal(as.exchanges, before + 2);
  } finally {
    as.exchangeTtl = 300;
    await server.stop();
    upstream.close();
  }
});

test('token exchange: two tokens of one principal never share an exchanged token', async () => {
  // Issue 34 #8: Alice's low-scope plugin token must not reach the upstream with the token
  // exchanged for her admin console's token; the authorization server decides per subject token.
  const upstream = await recordingUpstream();
  const server = await startServer(writeConfig({
    upstreams: [{ origin: upstream.origin, token_exchange: { audience: 'orders-api', client_id: SERVER_CLIENT.id, client_secret: SERVER_CLIENT.secret } }],
    http: { oauth: { issuer: as.issuer, resource: as.resource, leeway_s: 0, introspection } },
  }));
  try {
    as.exchangeTtl = 300;
    const tokens = { console: await issue('app', 'app-secret'), plugin: await issue('app', 'app-secret', { scope: 'mcp:read' }) };
    const before = as.exchanges;
    for (const name of ['console', 'plugin', 'console', 'plugin']) {
      const call = await openSession(server.port, bearer(tokens[name]));
      const result = await call('execute', `async () => (await fetch('/as/${name}')).status`);
      assert.equal(result.content[0].text, '200', JSON.stringify(result));
    }
    assert.equal(upstream.seen.length, 4);
    for (const { path, exchanged } of upstream.seen) {
      const name = path.split('/')[2];
      assert.equal(exchanged?.principal, 'client:app', path);
      assert.equal(exchanged.subject, tokens[name], `${path} carried the token exchanged for another token`);
    }
    assert.equal(as.exchanges, before + 2, 'one exchange per subject token, then cached');
  } finally {
    await server.stop();
    upstream.close();
  }
});
