// What a person reads in an approval question is what is sent (issue 34, finding 12), through the
// real binary with the official MCP SDK client over stdio answering elicitation/create: a key
// given twice in a JSON body is flagged even past the part shown, characters that would drive a
// terminal or reorder the text arrive as escapes, and a body the code encoded (which the upstream
// would read decoded) is never put to the person at all. An upstream records what reaches it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { BIN } from './harness.mjs';
import { writeConfig } from './http_harness.mjs';

let upstream;
let client;
const asked = [];
const seen = [];

before(async () => {
  upstream = createServer((req, res) => {
    let body = '';
    req.setEncoding('latin1');
    req.on('data', (d) => { body += d; });
    req.on('end', () => {
      seen.push({ method: req.method, path: req.url, body });
      res.writeHead(req.method === 'GET' ? 200 : 201, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  const config = writeConfig({
    upstreams: [{ origin: `http://127.0.0.1:${upstream.address().port}` }],
    policy: { approve: { operations: ['createOrder'] }, approval_timeout_ms: 60000 },
  });
  client = new Client({ name: 'prompt-e2e', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  // The user reads each question and declines it: nothing here is to be sent.
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    return { action: 'decline' };
  });
  await client.connect(new StdioClientTransport({ command: BIN, args: ['--config', config], stderr: 'pipe' }));
});
after(async () => {
  await client.close();
  await new Promise((r) => upstream.close(r));
});

// Runs `code` (an execute call) and returns [its result text, the question it caused].
async function question(code) {
  const before = asked.length;
  const result = await client.callTool({ name: 'execute', arguments: { code } });
  return [result.content[0].text, asked.slice(before)];
}

const postOrder = (body, headers = "{ 'content-type': 'application/json' }") =>
  `async () => { try { return (await fetch('/orders', { method: 'POST', headers: ${headers}, body: ${body} })).status; } catch (e) { return e.message; } }`;

test('a key given twice is flagged, also when the second is past the part shown', async () => {
  const body = `{"amount":1,"note":"${'x'.repeat(3000)}","amount":100000}`;
  const [text, questions] = await question(postOrder(JSON.stringify(body)));
  assert.match(text, /the user declined it/);
  assert.equal(questions.length, 1);
  const message = questions[0];
  // On 7d258f9 the question showed `{"amount":1,"note":"xxx…` and nothing about the other amount.
  assert.match(message, /Warning: this body gives a key more than once in one object: "amount"\. Servers differ on which of the values they take; some may be in the part not shown\./);
  assert.match(message, new RegExp(`Body \\(application/json\\), ${body.length} bytes; its last ${body.length - 2000} bytes are not shown, and an accept approves them too:\\n\\{"amount":1,`));
  assert.ok(!message.includes('100000'));
});

test('control, bidi and invisible characters arrive as escapes', async () => {
  const body = 'pay \x1b[2J\rto: bob\u202e0001\u200b done';
  const [, questions] = await question(postOrder(JSON.stringify(body), "{ 'content-type': 'text/plain' }"));
  assert.equal(questions.length, 1);
  const message = questions[0];
  // On 7d258f9 these reached the prompt raw.
  for (const raw of ['\x1b', '\r', '\u202e', '\u200b']) {
    assert.ok(!message.includes(raw), `raw ${JSON.stringify(raw)} in ${JSON.stringify(message)}`);
  }
  assert.ok(message.endsWith(':\npay \\x1b[2J\\rto: bob\\u{202e}0001\\u{200b} done'), JSON.stringify(message));
  // In a JSON string: the JSON escape, which means the same.
  const [, json] = await question(postOrder(JSON.stringify('{"to":"bob\u202elana"}')));
  assert.ok(json[0].endsWith(':\n{"to":"bob\\u202elana"}'), JSON.stringify(json[0]));
});

test('a body the code encoded is refused without a question, and never sent', async () => {
  const sent = seen.length;
  const [text, questions] = await question(postOrder("'\\x1f\\x8b\\x08\\x00gzip-bytes'",
    "{ 'content-type': 'application/json', 'content-encoding': 'gzip' }"));
  // On 7d258f9 the person was shown the compressed bytes, which the upstream would inflate.
  assert.equal(questions.length, 0);
  assert.match(text, /^"approval required, but this client cannot ask its user: POST /);
  assert.equal(seen.length, sent);
  // The same write unencoded is asked about as usual.
  const [, plain] = await question(postOrder("'{}'", "{ 'content-type': 'application/json', 'content-encoding': 'identity' }"));
  assert.equal(plain.length, 1);
});
