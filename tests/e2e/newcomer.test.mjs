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
