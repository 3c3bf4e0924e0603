// The newcomer's path (issue 37, item 8): what someone trying the server for the first time
// meets before any tool call: a port already taken says why, and the start-up log names where
// `execute` goes and which headers it injects, never their values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { once } from 'node:events';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, SOURCE_DIR } from './harness.mjs';

test('a port already in use is named as such, not "Success"', async () => {
  const taken = createServer();
  taken.listen(0, '127.0.0.1');
  await once(taken, 'listening');
  try {
    const { code, stderr } = await run(['--http', `127.0.0.1:${taken.address().port}`]);
    assert.equal(code, 2);
    assert.match(stderr, /cannot bind http:\/\/127\.0\.0\.1:\d+\/mcp: Address already in use \(another process listens there/);
    assert.doesNotMatch(stderr, /Success/);
  } finally {
    taken.close();
  }
});

test('the start-up log names where execute goes and what it injects, never a value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-newcomer-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    upstreams: [{ origin: 'http://127.0.0.1:9', base_path: '/api', headers: { 'X-Key': '${NEWCOMER_KEY}' },
                  query: { api_key: '${NEWCOMER_KEY}' } },
                { origin: 'https://other.example', basic: { user: 'u', password: '${NEWCOMER_KEY}' } }],
  }));
  const secret = 'newcomer-secret-51c0';
  const { stderr } = await run(['--config', config], { env: { NEWCOMER_KEY: secret } });
  assert.match(stderr, /execute may call http:\/\/127\.0\.0\.1:9; relative URLs go to http:\/\/127\.0\.0\.1:9\/api\/ \(upstreams\[0\]\.base_path\); injects X-Key, \?api_key/);
  assert.match(stderr, /execute may call https:\/\/other\.example; injects Authorization/);
  assert.ok(!stderr.includes(secret));

  writeFileSync(config, JSON.stringify({ openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json') }));
  const none = await run(['--config', config]);
  assert.match(none.stderr, /warning no upstreams: every execute request is refused; add "upstreams": \[\{"origin": "https:\/\/api\.example\.com"\}\] to the config/);
});

test('the MCP Inspector on localhost may connect with the default config', async () => {
  const { spawn } = await import('node:child_process');
  const { BIN } = await import('./harness.mjs');
  const proc = spawn(BIN, ['--http', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    let stderr = '';
    const url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no listening line: ${stderr}`)), 20000);
      proc.stderr.on('data', (d) => {
        stderr += d;
        const match = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
        if (match) { clearTimeout(timer); resolve(match[1]); }
      });
    });
    const initialize = (origin) => fetch(url, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
                             params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'inspector', version: '1' } } }),
    });
    assert.equal((await initialize('http://localhost:6274')).status, 200);
    const refused = await initialize('http://localhost:3000');
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /http\.allowed_origins/);
  } finally {
    proc.kill('SIGTERM');
    await once(proc, 'exit');
  }
});
