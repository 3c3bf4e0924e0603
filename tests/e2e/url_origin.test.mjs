// The gateway's URL normalisation (gateway/url_policy.h, Boost.URL) decides where a request goes;
// the sandbox's URL (whatwg-url) is what the code sees. For a corpus of tricky spellings of the
// allowed origin and of a forbidden one (IPv4 forms, IDNA full stops and digits, userinfo,
// backslashes, tabs, percent-encoding, scheme-relative and special-scheme-without-slashes
// references), every input whose fetch() the gateway lets through must show, in the code's own
// `new URL(input, upstream)`, the origin the request reached; any other input must be refused.
// A second loopback server, the forbidden origin, must see no connection at all.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { once } from 'node:events';
import { startSandbox, callOf } from './web_harness.mjs';

// Every spelling of 127.0.0.1 that some URL parser accepts, and some that none should.
const kHostSpellings = [
  '127.0.0.1', '127.0.0.1.', '2130706433', '0x7f.1', '0x7F.0.0.1', '0177.0.0.1', '127.1',
  '0x7f000001', '127.0.1', '%31%32%37.0.0.1', '127%2E0%2E0%2E1', '１２７.０.０.１', '127。0。0。1',
  '127.0.0.1%00', '127.0.0\t.1', '[::ffff:127.0.0.1]', '[::1]', 'localhost', 'LOCALHOST',
  '127.0.0.1\u00ad', '127.0.0.256', '0x100.0.0.1', '127.0.0.1:',
];

function corpus(port, forbiddenPort) {
  const inputs = new Set();
  for (const p of [port, forbiddenPort]) {
    for (const host of kHostSpellings) {
      const authority = `${host}:${p}`;
      for (const form of [
        `http://${authority}/p?q#f`, `HTTP://${authority}/p`, `http:${authority}/p`,
        `http:/${authority}/p`, `http:\\\\${authority}\\p`, `//${authority}/p`, `\\\\${authority}/p`,
        ` http://${authority}/p `, `ht\ttp://${authority}/p`, `http://${authority}\\p`,
        `http://${host}:0${p}/p`, `http://${host}:${p + 65536}/p`, `http://${host}/p`,
        `https://${authority}/p`, `ws://${authority}/p`, `http://user@${authority}/p`,
        `http://${authority}@127.0.0.1:${p === port ? forbiddenPort : port}/p`,
        `http://127.0.0.1:${p === port ? forbiddenPort : port}\\@${authority}/p`,
        `http://${authority}#@127.0.0.1:${p === port ? forbiddenPort : port}/p`,
        `http://${authority}?@127.0.0.1:${p === port ? forbiddenPort : port}/p`,
      ]) {
        inputs.add(form);
      }
    }
  }
  for (const relative of ['/p', 'p', '?q', '#f', '', '.', '..', '/..//p', '\\p', '/\\p',
                          '%2F%2F127.0.0.1/p', 'http:p', 'http:', 'HTTP:/p']) {
    inputs.add(relative);
  }
  return [...inputs];
}

// Runs in the sandbox: for each input, the origin the code's URL shows (null: it does not parse)
// and what fetch() did: the URL the response came from, or the refusal.
async function probe({ inputs, upstream }) {
  const out = [];
  for (const input of inputs) {
    let shown = null;
    try { shown = new URL(input, upstream).origin; } catch {}
    let reached = null, refused = null;
    try {
      const response = await fetch(input);
      reached = new URL(response.url).origin;
      await response.text();
    } catch (e) {
      refused = String(e);
    }
    out.push({ input, shown, reached, refused });
  }
  return out;
}

describe('the gateway sends a request only where the code\'s URL says it goes', () => {
  let upstream, forbidden, sandbox, forbiddenConnections = 0;
  before(async () => {
    upstream = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
    upstream.listen(0, '127.0.0.1');
    forbidden = createTcpServer((socket) => { forbiddenConnections++; socket.destroy(); });
    forbidden.listen(0, '127.0.0.1');
    await Promise.all([once(upstream, 'listening'), once(forbidden, 'listening')]);
    sandbox = await startSandbox(`http://127.0.0.1:${upstream.address().port}`);
  });
  after(async () => {
    await sandbox.close();
    upstream.close();
    forbidden.close();
  });

  test('for every input: refused, or reached the origin the code\'s URL shows', async () => {
    const origin = `http://127.0.0.1:${upstream.address().port}`;
    const inputs = corpus(upstream.address().port, forbidden.address().port);
    // In calls of at most 50 inputs: a call may have 100 of its requests refused (README,
    // "execute"), and about half of these are.
    const results = [];
    for (let i = 0; i < inputs.length; i += 50) {
      results.push(...await sandbox.execute(callOf(probe, { inputs: inputs.slice(i, i + 50), upstream: origin })));
    }
    assert.equal(results.length, inputs.length);
    const disagreements = results.filter((r) => r.refused === null && (r.reached !== origin || r.shown !== origin));
    assert.deepEqual(disagreements, [], 'requests that went somewhere the code\'s URL does not show');
    const reached = results.filter((r) => r.refused === null).length;
    const refusedShowingUpstream = results.filter((r) => r.refused !== null && r.shown === origin).length;
    console.log(`${inputs.length} inputs: ${reached} reached the upstream, ` +
                `${results.length - reached} refused (${refusedShowingUpstream} of them show the upstream's origin in the code's URL)`);
    // The corpus means something only if both outcomes occur, and the usual spellings pass.
    assert.ok(reached >= 20 && results.length - reached >= 20, `${reached} reached of ${results.length}`);
    for (const input of [`${origin}/p?q#f`, '/p', `http://2130706433:${upstream.address().port}/p?q#f`]) {
      assert.equal(results.find((r) => r.input === input)?.refused, null, input);
    }
    assert.equal(forbiddenConnections, 0, 'the forbidden origin saw a connection');
  });
});
