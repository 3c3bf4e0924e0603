// Who a caller is, through the real binary (issue 34, "also observed"): no static token can
// take the stdio client's principal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { spawn } from 'node:child_process';
import { BIN } from './harness.mjs';
import { writeConfig } from './http_harness.mjs';

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
