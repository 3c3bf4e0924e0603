// An HTTPS upstream with a certificate made for this test: trusted through the config's
// ca_file, refused without it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import { once } from 'node:events';
import { execFileSync } from 'node:child_process';
import { writeFileSync, readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, SOURCE_DIR } from './harness.mjs';

const dir = mkdtempSync(join(tmpdir(), 'codemode-https-'));
let server;
let origin;

before(async () => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  server = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) },
    (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ secure: true, auth: req.headers.authorization === 'Bearer https-secret-0123456789' }));
    });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `https://127.0.0.1:${server.address().port}`;
});
after(() => server.close());

async function executeWith(extra) {
  const config = join(dir, `config-${Math.random()}.json`);
  writeFileSync(config, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    upstreams: [{ origin, headers: { Authorization: 'Bearer https-secret-0123456789' } }],
    ...extra,
  }));
  const client = new Client({ name: 'https-e2e', version: '1' });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config, '--log-level', 'warn'], stderr: 'pipe' }));
  try {
    return await client.callTool({ name: 'execute', arguments: { code: "async () => (await fetch('/hello')).json()" } });
  } finally {
    await client.close();
  }
}

test('a certificate trusted through ca_file is accepted, credentials go over TLS', async () => {
  const r = await executeWith({ ca_file: join(dir, 'cert.pem') });
  assert.equal(r.isError, undefined, r.content[0].text);
  assert.deepEqual(r.structuredContent.result, { secure: true, auth: true });
});

test('without ca_file the unknown certificate is refused as a runtime error', async () => {
  const r = await executeWith({});
  assert.equal(r.isError, true);
  assert.match(r.content[0].text, /^runtime: TypeError: .*certificate/i);
});
