// --http as an OAuth 2.1 resource server (issue 24) against a real authorization server:
// oidc-provider (a certified OpenID provider, from npm) on 127.0.0.1 with resource indicators,
// JWT access tokens, the client-credentials grant and the authorization-code grant with PKCE
// (its development login and consent pages, driven here as a browser would). What is proven: the protected resource
// metadata and the 401 challenge that points to it; a token from the issuer for our resource
// works, and names its principal; hostile and stale tokens are each refused with 401 and
// `error="invalid_token"`, the server serving the next call and logging none of them; a key
// rotation at the issuer is picked up on the first token with the new kid; made-up kids cost no
// more than one fetch per interval; a token without a tool's scope gets 403 insufficient_scope;
// static tokens keep working beside OAuth; the official MCP SDK client gets from our 401 to a
// tools/call on its own, with client credentials and with a user's sign-in (code + PKCE).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { generateKeyPairSync, createSign, createHmac, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { startHttpServer, rawExchange, RawConnection, post, provesServing, openSession, INITIALIZE, writeConfig } from './http_harness.mjs';

const STATIC_TOKEN = 'static-token-0123456789abcdef';
const OTHER_RESOURCE = 'https://other.example.com/mcp';

const b64url = (data) => Buffer.from(data).toString('base64url');

function makeKey(kid) {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicPem: publicKey.export({ type: 'spki', format: 'pem' }), jwk };
}

// A JWT made here: signed RS256 with `key`, or with any header/signature a hostile client sends.
function signRs256(key, claims, header = {}) {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'at+jwt', kid: key.kid, ...header }));
  const body = b64url(JSON.stringify(claims));
  const signer = createSign('RSA-SHA256');
  signer.update(`${head}.${body}`);
  return `${head}.${body}.${signer.sign(key.privateKey).toString('base64url')}`;
}

// A free loopback port for codemode-mcp: its resource URL (the tokens' audience) must name the
// port before it starts.
async function freePort() {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  probe.close();
  await once(probe, 'close');
  return port;
}

const as = { jwksFetches: 0 };
let key1;
let key2;

function makeProvider(keys) {
  return new Provider(as.issuer, {
    clients: [
      { client_id: 'app', client_secret: 'app-secret', grant_types: ['client_credentials'],
        redirect_uris: [], response_types: [], scope: 'mcp:read mcp:execute' },
      { client_id: 'reader', client_secret: 'reader-secret', grant_types: ['client_credentials'],
        redirect_uris: [], response_types: [], scope: 'mcp:read' },
      // A public client signing a user in through the browser (authorization code + PKCE), as
      // VS Code or Claude do; a loopback redirect (RFC 8252: any port).
      { client_id: 'desktop', application_type: 'native', token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code'], response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'], scope: 'mcp:read mcp:execute' },
    ],
    jwks: { keys: keys.map((k) => k.jwk) },
    // A group claim in the app's access tokens, as identity providers put one there.
    extraTokenClaims: (ctx, token) => (token.clientId === 'app' ? { groups: ['mcp-admins', 'staff'] } : undefined),
    scopes: ['mcp:read', 'mcp:execute'],
    features: {
      // The provider's own login and consent pages, driven by the test as a browser would.
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A token request without a resource indicator gets a token for another resource, so a
        // client that works with our server must have sent ours (RFC 8707).
        defaultResource: () => OTHER_RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => ({
          scope: 'mcp:read mcp:execute',
          audience: indicator,
          accessTokenTTL: 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
}

// A client-credentials token from the issuer, for `resource` with `scope`.
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
  return body.access_token;
}

before(async () => {
  key1 = makeKey(`k1-${randomUUID()}`);
  key2 = makeKey(`k2-${randomUUID()}`);
  as.server = createServer((req, res) => {
    if (req.url.startsWith('/jwks')) as.jwksFetches += 1;
    as.callback(req, res);
  });
  as.server.listen(0, '127.0.0.1');
  await once(as.server, 'listening');
  as.issuer = `http://127.0.0.1:${as.server.address().port}`;
  as.mcpPort = await freePort();
  as.resource = `http://127.0.0.1:${as.mcpPort}/mcp`;
  as.callback = makeProvider([key1]).callback();
});

after(() => { as.server.closeAllConnections(); as.server.close(); });

const oauthConfig = (extra = {}) => writeConfig({
  http: {
    tokens: [{ name: 'ops', token: STATIC_TOKEN }],
    oauth: {
      issuer: as.issuer, resource: as.resource, jwks_min_interval_s: 0,
      scopes: { search: ['mcp:read'], execute: ['mcp:read', 'mcp:execute'] }, ...extra,
    },
  },
});

const startOAuthServer = async (extra) => {
  const server = await startHttpServer(['--http', `127.0.0.1:${as.mcpPort}`, '--config', oauthConfig(extra)]);
  await server.waitFor(/oauth: \d+ signing key\(s\) from/);
  return server;
};

const bearer = (token) => ({ Authorization: `Bearer ${token}` });
const challengeOf = (response) => response.headers['www-authenticate'] ?? '';

test('metadata at both well-known paths; no token: 401 pointing to it', async () => {
  const server = await startOAuthServer();
  try {
    const metadataUrl = `http://127.0.0.1:${as.mcpPort}/.well-known/oauth-protected-resource/mcp`;
    for (const url of [metadataUrl, `http://127.0.0.1:${as.mcpPort}/.well-known/oauth-protected-resource`]) {
      const response = await fetch(url);
      assert.equal(response.status, 200, url);
      const metadata = await response.json();
      assert.equal(metadata.resource, as.resource);
      assert.deepEqual(metadata.authorization_servers, [as.issuer]);
      assert.deepEqual(metadata.scopes_supported, ['mcp:read', 'mcp:execute']);
    }
    const refused = await rawExchange(server.port, post(server.port, INITIALIZE));
    assert.equal(refused.status, 401);
    assert.equal(challengeOf(refused),
      `Bearer resource_metadata="${metadataUrl}", scope="mcp:read mcp:execute"`);
    // The issuer's metadata the client finds next names the same issuer (OpenID discovery: this
    // provider has no RFC 8414 document, so the server fell back to it too).
    const asMetadata = await (await fetch(`${as.issuer}/.well-known/openid-configuration`)).json();
    assert.equal(asMetadata.issuer, as.issuer);
    // The static token still works, and needs no scope.
    await provesServing(server.port, bearer(STATIC_TOKEN));
    // /metrics is for operators: the static token, never an access token.
    const metrics = `http://127.0.0.1:${as.mcpPort}/metrics`;
    assert.equal((await fetch(metrics)).status, 401);
    assert.equal((await fetch(metrics, { headers: bearer(await issue('app', 'app-secret')) })).status, 401);
    assert.equal((await fetch(metrics, { headers: bearer(STATIC_TOKEN) })).status, 200);
  } finally {
    await server.stop();
  }
});

test('a token from the issuer for this resource works and names the client', async () => {
  const server = await startOAuthServer();
  try {
    const token = await issue('app', 'app-secret');
    await provesServing(server.port, bearer(token));
    assert.match(server.stderr, /http: access token of client:app from 127\.0\.0\.1/);
    assert.ok(!server.stderr.includes(token.split('.')[2]), 'a token signature reached the log');
  } finally {
    await server.stop();
  }
});

test('hostile tokens: each 401 invalid_token, the next call served, none logged', async () => {
  const server = await startOAuthServer();
  try {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: as.issuer, aud: as.resource, sub: 'mallory', client_id: 'app',
      scope: 'mcp:read mcp:execute', iat: now, exp: now + 300 };
    const stranger = makeKey('stranger');
    const noneToken = `${b64url(JSON.stringify({ alg: 'none', kid: key1.kid }))}.${b64url(JSON.stringify(claims))}.`;
    const hsHead = b64url(JSON.stringify({ alg: 'HS256', kid: key1.kid }));
    const hsBody = b64url(JSON.stringify(claims));
    const hsToken = `${hsHead}.${hsBody}.${createHmac('sha256', key1.publicPem).update(`${hsHead}.${hsBody}`).digest('base64url')}`;
    const hostile = {
      'wrong issuer': signRs256(key1, { ...claims, iss: 'http://127.0.0.1:1' }),
      'another resource (issued by the AS)': await issue('app', 'app-secret', { resource: OTHER_RESOURCE }),
      expired: signRs256(key1, { ...claims, iat: now - 7200, exp: now - 3600 }),
      'not yet valid': signRs256(key1, { ...claims, nbf: now + 3600 }),
      'alg none': noneToken,
      'alg none with a signature': `${noneToken}AAAA`,
      'HS256 keyed with the public key': hsToken,
      'unknown kid': signRs256(stranger, claims),
      'right kid, another key': signRs256({ ...stranger, kid: key1.kid }, claims),
      malformed: 'not-a.jwt',
      oversized: signRs256(key1, { ...claims, pad: 'x'.repeat(9000) }),
    };
    const metadataUrl = `http://127.0.0.1:${as.mcpPort}/.well-known/oauth-protected-resource/mcp`;
    for (const [name, token] of Object.entries(hostile)) {
      const refused = await rawExchange(server.port, post(server.port, INITIALIZE, bearer(token)));
      assert.equal(refused.status, 401, `${name}: ${refused.body}`);
      assert.equal(challengeOf(refused),
        `Bearer resource_metadata="${metadataUrl}", error="invalid_token", scope="mcp:read mcp:execute"`, name);
      assert.match(JSON.parse(refused.body).error.message, /^invalid_token: /, name);
      await provesServing(server.port, bearer(await issue('app', 'app-secret')));
    }
    for (const [name, token] of Object.entries(hostile)) {
      for (const part of token.split('.').filter((p) => p.length >= 16)) {
        assert.ok(!server.stderr.includes(part), `${name}: part of the token reached the log`);
      }
    }
    assert.match(server.stderr, /invalid_token: the token's algorithm is not accepted/);
    assert.match(server.stderr, /invalid_token: the token is not for this resource \(aud\)/);
  } finally {
    await server.stop();
  }
});

test('a key rotation at the issuer is picked up on the first token with the new kid', async () => {
  const server = await startOAuthServer();
  try {
    const old = await issue('app', 'app-secret');
    await provesServing(server.port, bearer(old));
    const before = as.jwksFetches;
    as.callback = makeProvider([key2, key1]).callback();  // new key first: it signs from now on
    const rotated = await issue('app', 'app-secret');
    assert.equal(JSON.parse(Buffer.from(rotated.split('.')[0], 'base64url')).kid, key2.kid);
    await provesServing(server.port, bearer(rotated));
    assert.equal(as.jwksFetches, before + 1, 'one fetch of the key set for the new kid');
    await provesServing(server.port, bearer(old));  // the old key is still published
    await provesServing(server.port, bearer(rotated));
    assert.equal(as.jwksFetches, before + 1, 'known kids cost no fetch');
  } finally {
    await server.stop();
    as.callback = makeProvider([key1]).callback();
  }
});

test('made-up kids cost no more than one key fetch per interval', async () => {
  const server = await startOAuthServer({ jwks_min_interval_s: 3600 });
  try {
    const before = as.jwksFetches;
    const now = Math.floor(Date.now() / 1000);
    for (let i = 0; i < 20; ++i) {
      const token = signRs256(makeKeyCached(), { iss: as.issuer, aud: as.resource, sub: 'x', exp: now + 60 }, { kid: `made-up-${i}` });
      const refused = await rawExchange(server.port, post(server.port, INITIALIZE, bearer(token)));
      assert.equal(refused.status, 401);
    }
    assert.equal(as.jwksFetches, before, 'the startup fetch is within the interval: no more');
  } finally {
    await server.stop();
  }
});
let cachedKey;
function makeKeyCached() { cachedKey ??= makeKey('cached'); return cachedKey; }

test('a token without a tool\'s scope: 403 insufficient_scope naming what is missing', async () => {
  const server = await startOAuthServer();
  try {
    const token = await issue('reader', 'reader-secret', { scope: 'mcp:read' });
    const headers = bearer(token);
    const init = await rawExchange(server.port, post(server.port, INITIALIZE, headers));
    assert.equal(init.status, 200, init.body);
    const more = { ...headers, 'MCP-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': init.headers['mcp-session-id'] };
    const execute = await rawExchange(server.port, post(server.port, {
      jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'execute', arguments: { code: 'async () => 1' } },
    }, more));
    assert.equal(execute.status, 403, execute.body);
    assert.equal(challengeOf(execute),
      `Bearer error="insufficient_scope", scope="mcp:execute", resource_metadata="http://127.0.0.1:${as.mcpPort}/.well-known/oauth-protected-resource/mcp"`);
    assert.match(JSON.parse(execute.body).error.message, /^insufficient_scope: the tool execute needs scope mcp:execute$/);
    await provesServing(server.port, headers);  // search needs only mcp:read
    assert.match(server.stderr, /access token of client:reader/);
  } finally {
    await server.stop();
  }
});

test('on one keep-alive connection, an access token\'s scopes end with its request', async () => {
  // Each request is an exchange of its own (transport/http_connection.h): a static token's call
  // after a scoped access token's, on the same socket, is not held to the scopes of the one before.
  const server = await startOAuthServer();
  const connection = new RawConnection(server.port);
  try {
    const init = await connection.exchange(post(server.port, INITIALIZE, bearer(STATIC_TOKEN)));
    assert.equal(init.status, 200, init.body);
    const session = { 'MCP-Protocol-Version': '2025-11-25', 'Mcp-Session-Id': init.headers['mcp-session-id'] };
    const execute = (id) => ({
      jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'execute', arguments: { code: 'async () => 6 * 7' } },
    });
    const reader = await issue('reader', 'reader-secret', { scope: 'mcp:read' });
    const refused = await connection.exchange(post(server.port, execute(1), { ...bearer(reader), ...session }));
    assert.equal(refused.status, 403, refused.body);
    assert.match(challengeOf(refused), /insufficient_scope/);
    const served = await connection.exchange(post(server.port, execute(2), { ...bearer(STATIC_TOKEN), ...session }));
    assert.equal(served.status, 200, served.body);
    assert.equal(challengeOf(served), '');
    assert.equal(JSON.parse(served.body).result.content[0].text, '42');
    assert.ok(!connection.closed, 'the connection was kept alive throughout');
  } finally {
    connection.destroy();
    await server.stop();
  }
});

test('the MCP SDK client finds its way from the 401: our metadata, the issuer, a token, a call', async () => {
  const server = await startOAuthServer();
  try {
    const provider = new ClientCredentialsProvider({
      clientId: 'app', clientSecret: 'app-secret', expectedIssuer: as.issuer, scope: 'mcp:read mcp:execute',
    });
    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(as.resource), { authProvider: provider }));
    try {
      const result = await client.callTool({ name: 'search', arguments: { code: 'async () => 6 * 7' } });
      assert.equal(result.content[0].text, '42');
      const token = provider.tokens().access_token;
      const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url'));
      assert.equal(claims.aud, as.resource);
      assert.match(server.stderr, /http: access token of client:app from/);
      assert.ok(!server.stderr.includes(token.split('.')[2]), 'the token reached the log');
    } finally {
      await client.close();
    }
  } finally {
    await server.stop();
  }
});

// The browser's part of the authorization-code flow against oidc-provider's development pages:
// follow redirects with the provider's cookies, log in as `login`, consent, and return the
// redirect to the client's callback.
async function signInAs(authorizationUrl, login) {
  const cookies = new Map();
  let url = authorizationUrl;
  let body;
  for (let step = 0; step < 12; ++step) {
    const response = await fetch(url, {
      method: body ? 'POST' : 'GET',
      redirect: 'manual',
      headers: {
        Cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; '),
        ...(body ? { 'Content-Type': 'application/x-www-form-urlencoded' } : {}),
      },
      body,
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const eq = pair.indexOf('=');
      cookies.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    body = undefined;
    if (response.status >= 300 && response.status < 400) {
      const next = new URL(response.headers.get('location'), url);
      if (next.pathname === '/callback') return next;
      url = next.href;
      continue;
    }
    const page = await response.text();
    assert.equal(response.status, 200, page);
    // The development pages: a login form, then a consent form, both posting to their own URL.
    body = /name="login"/.test(page)
      ? new URLSearchParams({ prompt: 'login', login, password: 'any' })
      : new URLSearchParams({ prompt: 'consent' });
    url = new URL(/action="([^"]+)"/.exec(page)[1], url).href;
  }
  throw new Error('the sign-in never reached the callback');
}

test('a user signs in with authorization code + PKCE through the SDK client', async () => {
  const server = await startOAuthServer();
  try {
    let authorizationUrl;
    let verifier;
    let tokens;
    const provider = {
      get redirectUrl() { return 'http://127.0.0.1:9/callback'; },
      get clientMetadata() {
        return { client_name: 'desktop', redirect_uris: ['http://127.0.0.1:9/callback'],
          grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none' };
      },
      state: () => randomUUID(),
      clientInformation: () => ({ client_id: 'desktop' }),
      tokens: () => tokens,
      saveTokens: (t) => { tokens = t; },
      redirectToAuthorization: (url) => { authorizationUrl = url; },
      saveCodeVerifier: (v) => { verifier = v; },
      codeVerifier: () => verifier,
    };
    const transport = new StreamableHTTPClientTransport(new URL(as.resource), { authProvider: provider });
    const client = new Client({ name: 'oauth-e2e-pkce', version: '1.0.0' });
    await assert.rejects(client.connect(transport), /Unauthorized/);
    assert.ok(authorizationUrl, 'the client was sent to the authorization server');
    assert.equal(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authorizationUrl.searchParams.get('resource'), as.resource);
    const callback = await signInAs(authorizationUrl, 'alice');
    await transport.finishAuth(callback.searchParams.get('code'));

    const signedIn = new Client({ name: 'oauth-e2e-pkce', version: '1.0.0' });
    await signedIn.connect(new StreamableHTTPClientTransport(new URL(as.resource), { authProvider: provider }));
    try {
      const result = await signedIn.callTool({ name: 'search', arguments: { code: 'async () => 2 + 3' } });
      assert.equal(result.content[0].text, '5');
      assert.match(server.stderr, /http: access token of sub:alice from/);
      assert.ok(!server.stderr.includes(tokens.access_token.split('.')[2]), 'the token reached the log');
    } finally {
      await signedIn.close();
    }
  } finally {
    await server.stop();
  }
});

test('two OAuth principals each reach the API with their own credential, writes need their scope', async () => {
  // The upstream records the credential of every request; config `principals` gives each
  // client its own, and the static token's principal the top-level one.
  const seen = [];
  const upstream = createServer((req, res) => {
    seen.push({ path: req.url, authorization: req.headers.authorization ?? '' });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  const origin = `http://127.0.0.1:${upstream.address().port}`;
  const keys = { app: 'Bearer app-api-key-81c2', reader: 'Bearer reader-api-key-4e07', ops: 'Bearer shared-api-key-2b9d' };
  const config = writeConfig({
    upstreams: [{ origin, headers: { Authorization: keys.ops } }],
    http: {
      tokens: [{ name: 'ops', token: STATIC_TOKEN }],
      oauth: {
        issuer: as.issuer, resource: as.resource, jwks_min_interval_s: 0, scopes: { execute: ['mcp:read'] },
        // A request that writes needs mcp:execute, which only `app` is granted.
        request_scopes: { write: ['mcp:execute'] },
      },
    },
    principals: {
      // The app by a claim its tokens carry; the reader by its principal.
      'claim:groups=mcp-admins': { upstreams: [{ origin, headers: { Authorization: keys.app } }] },
      'client:reader': { upstreams: [{ origin, headers: { Authorization: keys.reader } }] },
    },
  });
  const server = await startHttpServer(['--http', `127.0.0.1:${as.mcpPort}`, '--config', config]);
  try {
    await server.waitFor(/oauth: \d+ signing key\(s\) from/);
    const callAs = async (headers, name, method = 'GET') => (await openSession(server.port, headers))(
      'execute', `async () => (await fetch('/who/${name}', { method: '${method}' })).status`);
    const tokens = { app: await issue('app', 'app-secret'), reader: await issue('reader', 'reader-secret', { scope: 'mcp:read' }) };
    await Promise.all([
      callAs(bearer(tokens.app), 'app'), callAs(bearer(tokens.reader), 'reader'), callAs(bearer(STATIC_TOKEN), 'ops'),
      callAs(bearer(tokens.app), 'app'), callAs(bearer(tokens.reader), 'reader'), callAs(bearer(STATIC_TOKEN), 'ops'),
    ].map((p) => p.then((result) => assert.equal(result.content[0].text, '200', JSON.stringify(result)))));
    assert.equal(seen.length, 6);
    for (const { path, authorization } of seen) assert.equal(authorization, keys[path.split('/')[2]], path);
    // The reader's token lacks the write scope: its POST is a policy error naming the scope, and
    // never leaves; the app's token has it; a static token is not scoped.
    const refused = await callAs(bearer(tokens.reader), 'reader', 'POST');
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text,
      /^policy: POST requests need scope mcp:execute, which the caller's access token lacks/);
    assert.equal(seen.length, 6, 'the refused POST never left');
    for (const [headers, name] of [[bearer(tokens.app), 'app'], [bearer(STATIC_TOKEN), 'ops']]) {
      assert.equal((await callAs(headers, name, 'POST')).content[0].text, '200');
    }
    assert.equal(seen.length, 8);
    const metadata = await (await fetch(`http://127.0.0.1:${as.mcpPort}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.deepEqual(metadata.scopes_supported, ['mcp:read', 'mcp:execute']);
    assert.doesNotMatch(server.stderr, /principals\.(client|claim):.*no bearer token/, 'OAuth principals are not warned about');
  } finally {
    await server.stop();
    upstream.close();
  }
});

test('with request_scopes.spec, a request needs the scopes its operation\'s security names', async () => {
  const seen = [];
  const upstream = createServer((req, res) => { seen.push(`${req.method} ${req.url}`); res.writeHead(200); res.end('{}'); });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  const origin = `http://127.0.0.1:${upstream.address().port}`;
  const spec = {
    openapi: '3.0.3', info: { title: 'Scoped', version: '1' },
    security: [{ oauth: ['mcp:read'] }],
    components: { securitySchemes: { oauth: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: `${as.issuer}/token`, scopes: {} } } } } },
    paths: { '/things/{id}': { get: {}, post: { security: [{ oauth: ['mcp:execute'] }] } }, '/open': { get: { security: [] } } },
  };
  const specFile = join(mkdtempSync(join(tmpdir(), 'codemode-oauth-spec-')), 'openapi.json');
  writeFileSync(specFile, JSON.stringify(spec));
  const config = writeConfig({
    openapi: specFile,
    upstreams: [{ origin }],
    http: { oauth: { issuer: as.issuer, resource: as.resource, jwks_min_interval_s: 0, request_scopes: { spec: true } } },
  });
  const server = await startHttpServer(['--http', `127.0.0.1:${as.mcpPort}`, '--config', config]);
  try {
    await server.waitFor(/oauth: \d+ signing key\(s\) from/);
    const run = async (token, code) =>
      (await (await openSession(server.port, bearer(token)))('execute', code)).content[0].text;
    const reader = await issue('reader', 'reader-secret', { scope: 'mcp:read' });
    const app = await issue('app', 'app-secret');
    const both = "async () => [(await fetch('/things/1')).status, (await fetch('/things/1', { method: 'POST', body: '{}' })).status]";
    assert.equal(await run(app, both), '[200,200]');
    assert.match(await run(reader, both),
      /^policy: POST \/things\/\{id\} needs scope mcp:execute \(the API description's security\), which the caller's access token lacks/);
    assert.equal(await run(reader, "async () => (await fetch('/things/2')).status"), '200');
    assert.deepEqual(seen, ['GET /things/1', 'POST /things/1', 'GET /things/1', 'GET /things/2']);
  } finally {
    await server.stop();
    upstream.close();
  }
});

test('request_scopes.spec holds in every spelling a router takes, for templates and redirects', async () => {
  // Issue 34: a path's spelling (case, trailing '/', ';' parameters, a format suffix), a template
  // declared ahead of a concrete path, or a same-origin redirect must not take a request past the
  // scope its operation's security names.
  const seen = [];
  const upstream = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const to = new URL(req.url, 'http://x').searchParams.get('to');
    if (req.url.startsWith('/go') && to) {
      res.writeHead(302, { location: to });
      res.end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"secret":"only for mcp:execute"}');
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  const origin = `http://127.0.0.1:${upstream.address().port}`;
  const execute = [{ oauth: ['mcp:execute'] }];
  const spec = {
    openapi: '3.0.3', info: { title: 'Orders', version: '1' },
    security: [{ oauth: ['mcp:read'] }],
    components: { securitySchemes: { oauth: { type: 'oauth2', flows: { clientCredentials: { tokenUrl: `${as.issuer}/token`, scopes: {} } } } } },
    paths: {
      '/orders': { get: {}, post: { operationId: 'createOrder', security: execute } },
      // Declared before the concrete path it also matches: the concrete one wins (OpenAPI).
      '/orders/{orderId}': { post: { operationId: 'updateOrder', security: [] } },
      '/orders/purge': { post: { operationId: 'purgeOrders', security: execute } },
      '/go': { get: { security: [] } },
      '/secret': { get: { security: execute } },
    },
  };
  const specFile = join(mkdtempSync(join(tmpdir(), 'codemode-oauth-spec-')), 'openapi.json');
  writeFileSync(specFile, JSON.stringify(spec));
  const config = writeConfig({
    openapi: specFile,
    upstreams: [{ origin }],
    http: { oauth: { issuer: as.issuer, resource: as.resource, jwks_min_interval_s: 0, request_scopes: { spec: true } } },
  });
  const server = await startHttpServer(['--http', `127.0.0.1:${as.mcpPort}`, '--config', config]);
  try {
    await server.waitFor(/oauth: \d+ signing key\(s\) from/);
    const run = async (token, code) => {
      const result = await (await openSession(server.port, bearer(token)))('execute', code);
      assert.equal(result.isError, undefined, JSON.stringify(result));
      return JSON.parse(result.content[0].text);
    };
    const spellings = ['/Orders', '/orders/', '/orders;x=1', '/orders.json', '/orders/purge', '/Orders/Purge.json'];
    const code = `async () => {
      const out = {};
      for (const path of ${JSON.stringify(spellings)}) {
        try { out[path] = (await fetch(path, { method: 'POST', body: '{}' })).status; } catch (e) { out[path] = e.message; }
      }
      out.update = (await fetch('/orders/o1', { method: 'POST', body: '{}' })).status;
      const go = await fetch('/go?to=/secret');
      out.go = [go.status, go.redirected, (await go.text()).includes('secret')];
      return out;
    }`;
    const reader = await issue('reader', 'reader-secret', { scope: 'mcp:read' });
    const lacks = (operation) =>
      `POST ${operation} needs scope mcp:execute (the API description's security), which the caller's access token lacks`;
    assert.deepEqual(await run(reader, code), {
      ...Object.fromEntries(spellings.map((path) =>
        [path, lacks(path.toLowerCase().includes('purge') ? '/orders/purge' : '/orders')])),
      update: 200,  // updateOrder names no scope
      go: [302, false, false],  // the redirect to /secret is not followed
    });
    assert.deepEqual(seen, ['POST /orders/o1', 'GET /go?to=/secret'], 'no refused request left');
    // The same code with the scope: every spelling goes, the redirect is followed.
    seen.length = 0;
    const app = await issue('app', 'app-secret');
    const allowed = await run(app, code);
    for (const path of spellings) assert.equal(allowed[path], 200, path);
    assert.deepEqual(allowed.go, [200, true, true]);
    assert.deepEqual(seen.slice(-2), ['GET /go?to=/secret', 'GET /secret']);
  } finally {
    await server.stop();
    upstream.close();
  }
});

test('without static tokens, /metrics stays shut on an OAuth server', async () => {
  const server = await startHttpServer(['--http', `127.0.0.1:${as.mcpPort}`, '--config', writeConfig({
    http: { oauth: { issuer: as.issuer, resource: as.resource } },
  })]);
  try {
    await server.waitFor(/oauth: \d+ signing key\(s\) from/);
    assert.equal((await fetch(`http://127.0.0.1:${as.mcpPort}/metrics`)).status, 401);
    await provesServing(server.port, bearer(await issue('app', 'app-secret')));
  } finally {
    await server.stop();
  }
});

test('an issuer that cannot be reached: 503 for access tokens, static tokens still served', async () => {
  const unreachable = await freePort();  // nothing listens there
  const server = await startHttpServer(['--http', '127.0.0.1:0', '--config', writeConfig({
    http: {
      tokens: [{ name: 'ops', token: STATIC_TOKEN }],
      oauth: { issuer: `http://127.0.0.1:${unreachable}`, resource: as.resource },
    },
  })]);
  try {
    await server.waitFor(/oauth: the issuer's keys could not be fetched/);
    const token = await issue('app', 'app-secret');
    const refused = await rawExchange(server.port, post(server.port, INITIALIZE, bearer(token)));
    assert.equal(refused.status, 503, refused.body);
    assert.match(JSON.parse(refused.body).error.message, /^unavailable: /);
    await provesServing(server.port, bearer(STATIC_TOKEN));
  } finally {
    await server.stop();
  }
});
