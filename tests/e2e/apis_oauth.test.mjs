// Several APIs behind OAuth (http.oauth), end to end with a real authorization server
// (oidc-provider, client credentials, RFC 8707 resource indicators): each API at /mcp/NAME is a
// protected resource of its own, http.oauth.resource + "/NAME", with its own RFC 9728 metadata,
// and a token issued for one API's resource is refused at another's path.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { join } from 'node:path';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider from 'oidc-provider';
import { startHttpServer, writeConfig } from './http_harness.mjs';
import { SOURCE_DIR } from './harness.mjs';

const MARKETHUB = join(SOURCE_DIR, 'fixtures/markethub/openapi.json');
const as = {};

async function freePort() {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  probe.close();
  await once(probe, 'close');
  return port;
}

async function issue(resource) {
  const response = await fetch(`${as.issuer}/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: `Basic ${Buffer.from('app:app-secret').toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', resource, scope: 'mcp:read' }),
  });
  const body = await response.json();
  assert.equal(response.status, 200, JSON.stringify(body));
  return body.access_token;
}

let server;
let base;

before(async () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: `k-${randomUUID()}`, alg: 'RS256', use: 'sig' };
  const http = createServer((req, res) => as.callback(req, res));
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  as.http = http;
  as.issuer = `http://127.0.0.1:${http.address().port}`;
  const provider = new Provider(as.issuer, {
    clients: [{ client_id: 'app', client_secret: 'app-secret', grant_types: ['client_credentials'],
      redirect_uris: [], response_types: [], scope: 'mcp:read' }],
    jwks: { keys: [jwk] },
    scopes: ['mcp:read'],
    features: {
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'https://other.example.com/mcp',
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => ({
          scope: 'mcp:read', audience: indicator, accessTokenTTL: 300, accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  as.callback = provider.callback();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const config = writeConfig({
    openapi: undefined,
    apis: { a: { openapi: MARKETHUB }, b: { openapi: MARKETHUB } },
    http: { oauth: { issuer: as.issuer, resource: `${base}/mcp`, jwks_min_interval_s: 0 } },
  });
  server = await startHttpServer(['--http', `127.0.0.1:${port}`, '--config', config]);
  // Each API's verifier has fetched the issuer's keys.
  await server.waitFor(/signing key\(s\) from[\s\S]*signing key\(s\) from/);
});

after(async () => {
  await server?.stop();
  as.http?.closeAllConnections();
  as.http?.close();
});

const initialize = (api, token) => fetch(`${base}/mcp/${api}`, {
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
             ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
});

test('each API has its own resource and metadata; the bare well-known path has none', async () => {
  for (const api of ['a', 'b']) {
    const response = await fetch(`${base}/.well-known/oauth-protected-resource/mcp/${api}`);
    assert.equal(response.status, 200, api);
    const metadata = await response.json();
    assert.equal(metadata.resource, `${base}/mcp/${api}`);
    assert.deepEqual(metadata.authorization_servers, [as.issuer]);
    const refused = await initialize(api);
    assert.equal(refused.status, 401);
    assert.match(refused.headers.get('www-authenticate'),
      new RegExp(`resource_metadata="${base}/\\.well-known/oauth-protected-resource/mcp/${api}"`));
  }
  assert.equal((await fetch(`${base}/.well-known/oauth-protected-resource`)).status, 404);
  assert.equal((await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).status, 404);
});

test('a token issued for one API is refused at another\'s path', async () => {
  const forA = await issue(`${base}/mcp/a`);
  assert.equal((await initialize('a', forA)).status, 200);
  assert.equal((await initialize('b', forA)).status, 401);
  const forB = await issue(`${base}/mcp/b`);
  assert.equal((await initialize('b', forB)).status, 200);
  assert.equal((await initialize('a', forB)).status, 401);
  // One for /mcp, which serves no API here, opens neither.
  const forMcp = await issue(`${base}/mcp`);
  assert.equal((await initialize('a', forMcp)).status, 401);
  assert.equal((await initialize('b', forMcp)).status, 401);
});
