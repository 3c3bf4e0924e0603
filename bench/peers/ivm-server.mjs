// Peer wrapper: isolated-vm, a new ivm.Isolate per call (disposed after), behind a small HTTP
// server on 127.0.0.1 (so every system in bench/compare pays one local IPC hop).
//
//   node ivm-server.mjs --spec FILE [--spec-mode snapshot|parse] [--upstream ORIGIN] [--ivm-dir DIR]
//
// --ivm-dir: take isolated-vm from DIR's node_modules (bench/peers/node26/, isolated-vm 7 built
// for node 26, run by node 26's binary) instead of bench/peers/'s (isolated-vm 5 for node 20).
//
// POST /run {code, workload} -> {ok, result} | {ok: false, error}
// Spec delivery for the `spec` workload (--spec-mode):
//   snapshot: once at startup, ivm.Isolate.createSnapshot() runs
//            `globalThis.spec = <the JSON>` and keeps the V8 startup snapshot; each call's fresh
//            isolate is created from it, so `spec` is already in its heap (no per-call parse).
//   parse (default): the JSON text is an ivm.ExternalCopy made once; each call copies the string into
//            the fresh isolate and runs JSON.parse there.
// Every isolate: memoryLimit 128 MB, a 5 s timeout, no host references (nothing but the
// ECMAScript globals), and dispose() after the call.
// The `io` workload's isolate also gets `fetch(url)`, reaching only --upstream: the host makes
// the request with node's fetch (undici, keep-alive) and the isolate awaits it through an
// ivm.Reference applied with {result: {promise: true}}, so the isolate's thread is free while
// the request waits (applySyncPromise would hold one pool thread per call in flight). The
// Response is a small stand-in: status, ok, text(), json().
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const argv = process.argv.slice(2);
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : fallback; };
const ivmDir = opt('ivm-dir');
const require = createRequire(ivmDir ? `${ivmDir}/package.json` : import.meta.url);
const ivm = require('isolated-vm');
const specFile = opt('spec');
const mode = opt('spec-mode', 'parse');
const specText = readFileSync(specFile, 'utf8');
const specCopy = mode === 'parse' ? new ivm.ExternalCopy(specText) : null;
const snapshot = mode === 'snapshot' ? ivm.Isolate.createSnapshot([{ code: `globalThis.spec = ${specText};` }]) : null;
const upstream = opt('upstream');

async function hostFetch(input) {
  const url = new URL(input);
  if (!upstream || url.origin !== upstream) throw new TypeError(`fetch: ${url.origin} is not the upstream`);
  const response = await fetch(url);
  return { status: response.status, body: await response.text() };
}

// Runs in the fresh isolate before the code: takes the host reference off the global object
// and leaves only `fetch` behind.
const fetchShim = `(() => {
  const host = globalThis.__hostFetch;
  delete globalThis.__hostFetch;
  globalThis.fetch = async (input) => {
    const r = await host.apply(undefined, [String(input)], { result: { promise: true, copy: true } });
    return { status: r.status, ok: r.status >= 200 && r.status < 300,
      text: async () => r.body, json: async () => JSON.parse(r.body) };
  };
})();`;

async function runOnce(code, workload) {
  const withSpec = workload === 'spec';
  const isolate = new ivm.Isolate({ memoryLimit: 128, ...(withSpec && snapshot ? { snapshot } : {}) });
  try {
    const context = await isolate.createContext();
    if (withSpec && specCopy) {
      await context.global.set('__specText', specCopy.copyInto());
      await context.eval('globalThis.spec = JSON.parse(__specText); delete globalThis.__specText;');
    }
    if (workload === 'io') {
      await context.global.set('__hostFetch', new ivm.Reference(hostFetch));
      await context.eval(fetchShim);
    }
    const json = await context.eval(`Promise.resolve().then(${code}).then((v) => JSON.stringify(v))`,
      { promise: true, timeout: 5000 });
    return { ok: true, result: json === undefined ? undefined : JSON.parse(json) };
  } catch (e) {
    return { ok: false, error: String(e) };
  } finally {
    isolate.dispose();
  }
}

const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', async () => {
    const { code, workload } = JSON.parse(body);
    const answer = JSON.stringify(await runOnce(code, workload));
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
    res.end(answer);
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}/`));
