// Exact HTTP requests in, exact status lines, headers and bodies out: every
// tests/http_transcripts/*.txt against the real binary serving --http on an ephemeral port.
//
// Format (see tests/http_transcripts/README.md): `@args`/`@config`/`@auth` directives, then
// exchanges. `> ` lines are sent (CRLF-joined head, a blank `>` line, the body; ${LENGTH} is the
// body's byte length); `< ` lines are expected: the status line exactly, each listed header
// exactly (`!Name` = absent, `Name: ${SESSION}` captures the session id), and after a blank `<`
// the body exactly. Each exchange uses a fresh connection. After every refusal (4xx/5xx) the
// server must still answer GET /healthz, and after the whole file it must still serve MCP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, SOURCE_DIR, sameAsTranscript } from './harness.mjs';
import { startHttpServer, rawExchange, writeConfig, provesServing } from './http_harness.mjs';

const dir = join(SOURCE_DIR, 'tests/http_transcripts');
const version = (await run(['--version'])).stdout.split('\n')[0].split(' ')[1];

function parse(text) {
  const file = { args: ['--http', ':0'], config: null, auth: {}, exchanges: [] };
  let current = null;
  for (const raw of text.split('\n')) {
    if (raw.startsWith('#') || (raw.trim() === '' && !current)) continue;
    if (raw.startsWith('@args ')) file.args = raw.slice(6).trim().split(/\s+/);
    else if (raw.startsWith('@config ')) file.config = JSON.parse(raw.slice(8));
    else if (raw.startsWith('@auth ')) file.auth = { Authorization: raw.slice(6).trim() };
    else if (raw === '>' || raw.startsWith('> ')) {
      if (!current || current.expect.length > 0) {
        current = { send: [], expect: [] };
        file.exchanges.push(current);
      }
      current.send.push(raw.slice(2));
    } else if (raw === '<' || raw.startsWith('< ')) {
      current.expect.push(raw.slice(2));
    } else if (raw.trim() !== '') {
      throw new Error(`bad transcript line: ${raw}`);
    }
  }
  return file;
}

function requestBytes(lines, vars) {
  const blank = lines.indexOf('');
  const head = (blank < 0 ? lines : lines.slice(0, blank)).map((l) => l.replaceAll('${PORT}', vars.PORT)
    .replaceAll('${SESSION}', vars.SESSION ?? 'none'));
  const body = blank < 0 ? '' : lines.slice(blank + 1).join('\n');
  const headText = head.join('\r\n').replaceAll('${LENGTH}', String(Buffer.byteLength(body)));
  return `${headText}\r\n\r\n${body}`;
}

function check(response, expect, vars, where) {
  const blank = expect.indexOf('');
  const head = blank < 0 ? expect : expect.slice(0, blank);
  assert.equal(response.statusLine, head[0], `${where}: status line (body: ${response.body})`);
  for (const line of head.slice(1)) {
    if (line.startsWith('!')) {
      assert.equal(response.headers[line.slice(1).toLowerCase()], undefined, `${where}: ${line.slice(1)} absent`);
      continue;
    }
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (value === '${SESSION}') {
      assert.match(response.headers[name] ?? '', /^[\x21-\x7e]{32,}$/, `${where}: session id`);
      vars.SESSION = response.headers[name];
    } else {
      assert.equal(response.headers[name], value.replaceAll('${SESSION}', vars.SESSION), `${where}: header ${name}`);
    }
  }
  if (blank >= 0) {
    const body = expect.slice(blank + 1).join('\n').replaceAll('${VERSION}', version).replaceAll('${PORT}', vars.PORT);
    if (!sameAsTranscript(response.body, body)) assert.equal(response.body, body, `${where}: body`);
  }
}

for (const name of readdirSync(dir).filter((f) => f.endsWith('.txt')).sort()) {
  test(`http transcript ${name}`, async () => {
    const file = parse(readFileSync(join(dir, name), 'utf8'));
    const args = [...file.args, ...(file.config ? ['--config', writeConfig(file.config)] : [])];
    const server = await startHttpServer(args);
    try {
      const vars = { PORT: String(server.port) };
      for (const [i, exchange] of file.exchanges.entries()) {
        const where = `${name} exchange ${i + 1} (${exchange.send[0]})`;
        const response = await rawExchange(server.port, requestBytes(exchange.send, vars));
        check(response, exchange.expect, vars, where);
        if (response.status >= 400) {
          const health = await rawExchange(server.port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\n\r\n`);
          assert.equal(health.status, 200, `${where}: the server still answers after a refusal`);
        }
      }
      await provesServing(server.port, file.auth);
    } finally {
      assert.deepEqual(await server.stop(), { code: 0, signal: null }, server.stderr);
    }
  });
}
