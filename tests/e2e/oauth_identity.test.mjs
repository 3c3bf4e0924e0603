// Who an access token names, through the real binary over HTTP (issue 34, "also observed"):
// a JWT the issuer signed is no access token when its header types it as another kind of JWT,
// and only `typ: at+jwt` (RFC 9068) is one when the config requires it; a subject and a client
// id that are not safe to log are hashed into different names, so a user and a client never
// share a principal; and no static token can take the stdio client's principal. A minimal
// issuer on 127.0.0.1 serves its metadata and keys; tokens are signed here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { generateKeyPairSync, createSign, randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { BIN } from './harness.mjs';
import { startHttpServer, rawExchange, post, INITIALIZE, writeConfig } from './http_harness.mjs';

const b64url = (data) => Buffer.from(data).toString('base64url');

let issuer;
let key;

function sign(claims, header = {}) {
  const head = b64url(JSON.stringify({ alg: 'RS256', typ: 'at+jwt', kid: key.kid, ...header }));
  const body = b64url(JSON.stringify(claims));
  const signer = createSign('RSA-SHA256');
  signer.update(`${head}.${body}`);
  return `${head}.${body}.${signer.sign(key.privateKey).toString('base64url')}`;
}

async function freePort() {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address();
  probe.close();
  await once(probe, 'close');
  return port;
}

before(async () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  key = { kid: `k-${randomUUID()}`, privateKey };
  const jwk = { ...privateKey.export({ format: 'jwk' }), kid: key.kid, alg: 'RS256', use: 'sig' };
  for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) delete jwk[secret];
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url === '/jwks') return res.end(JSON.stringify({ keys: [jwk] }));
    res.end(JSON.stringify({ issuer: issuer.url, jwks_uri: `${issuer.url}/jwks` }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  issuer = { server, url: `http://127.0.0.1:${server.address().port}` };
});
after(() => new Promise((resolve) => issuer.server.close(resolve)));

// A codemode-mcp with http.oauth (`oauth`: more of its keys) on a port its resource names.
async function startResourceServer(oauth = {}) {
  const port = await freePort();
  const resource = `http://127.0.0.1:${port}/mcp`;
  const config = writeConfig({ http: { oauth: { issuer: issuer.url, resource, ...oauth } } });
  const server = await startHttpServer(['--http', `127.0.0.1:${port}`, '--config', config]);
  await server.waitFor(/oauth: 1 signing key/, 60000);
  const claims = (more) => ({
    iss: issuer.url, aud: resource, exp: Math.floor(Date.now() / 1000) + 300, ...more,
  });
  const initialize = (token) => rawExchange(port, post(port, INITIALIZE, { Authorization: `Bearer ${token}` }));
  return { server, claims, initialize };
}

test('a JWT typed as another kind is no access token, and with require_typ_at_jwt only at+jwt is', async () => {
  const rs = await startResourceServer();
  try {
    // All an access token's claims, signed by the issuer, typed as the issuer's access tokens
    // are (RFC 9068's at+jwt, or the JWT or nothing most issuers write).
    for (const typ of ['at+jwt', 'application/at+jwt', 'JWT', undefined]) {
      const response = await rs.initialize(sign(rs.claims({ sub: 'alice' }), { typ }));
      assert.equal(response.status, 200, `typ ${typ}`);
    }
    // Typed as some other JWT the issuer signs: on 7d258f9 these were accepted (200).
    for (const typ of ['logout+jwt', 'secevent+jwt', 'dpop+jwt']) {
      const response = await rs.initialize(sign(rs.claims({ sub: 'alice' }), { typ }));
      assert.equal(response.status, 401, `typ ${typ}`);
      assert.match(response.headers['www-authenticate'], /error="invalid_token"/);
    }
  } finally {
    await rs.server.stop();
  }
  const strict = await startResourceServer({ require_typ_at_jwt: true });
  try {
    for (const typ of ['JWT', undefined, 'logout+jwt']) {
      const response = await strict.initialize(sign(strict.claims({ sub: 'alice' }), { typ }));
      assert.equal(response.status, 401, `typ ${typ}`);
      assert.match(response.headers['www-authenticate'], /error="invalid_token"/);
    }
    assert.equal((await strict.initialize(sign(strict.claims({ sub: 'alice' }), { typ: 'at+jwt' }))).status, 200);
  } finally {
    await strict.server.stop();
  }
});

test('a subject and a client id that are hashed are never one principal', async () => {
  const rs = await startResourceServer();
  try {
    const unsafe = 'ops team';  // a space: not safe unquoted in a log line
    // A user whose subject is that text (for client app-1), and a client whose id is that text.
    assert.equal((await rs.initialize(sign(rs.claims({ sub: unsafe, client_id: 'app-1' })))).status, 200);
    const user = (await rs.server.waitFor(/access token of (\S+) from/, 60000))[1];
    rs.server.stderr = '';
    assert.equal((await rs.initialize(sign(rs.claims({ client_id: unsafe })))).status, 200);
    const client = (await rs.server.waitFor(/access token of (\S+) from/, 60000))[1];
    assert.match(user, /^sub-sha256:[0-9a-f]{16}$/);
    // On 7d258f9 both were the same sub-sha256 name.
    assert.match(client, /^client-sha256:[0-9a-f]{16}$/);
    assert.notEqual(user.split(':')[0], client.split(':')[0]);
  } finally {
    await rs.server.stop();
  }
});

test("a static token named stdio is refused: it would be the stdio client's principal", async () => {
  const config = writeConfig({ http: { tokens: [{ name: 'stdio', token: 'stdio-token-0123456789' }] } });
  const proc = spawn(BIN, ['--config', config, '--http', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const closed = once(proc, 'close');
  let stderr = '';
  proc.stderr.on('data', (data) => {
    stderr += data;
    // On 7d258f9 it started, and the token's calls shared the stdio client's processes.
    if (/listening on/.test(stderr)) proc.kill('SIGTERM');
  });
  const [code] = await closed;
  assert.doesNotMatch(stderr, /listening on/);
  assert.equal(code, 2, stderr);
  assert.match(stderr, /http\.tokens\[0\]\.name: "stdio" is the stdio client's principal; choose another name/);
});
