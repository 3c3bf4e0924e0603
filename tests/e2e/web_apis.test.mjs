// Differential tests of the web APIs generated code reaches for: Event and EventTarget,
// AbortController and AbortSignal (with fetch's `signal`), crypto (getRandomValues, randomUUID,
// subtle.digest), performance.now, Blob, File, FormData (and as a fetch body), console.table, and
// the web classes' corners (Headers changed while iterated, a URL Request cannot parse). One
// function of cases runs, by the same text, in an execute call of the real binary and in this
// node process, against the same loopback upstream; every case's outcome must be the same. Then
// hostile uses of the new host functions, after each of which the server serves the next call.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { Console } from 'node:console';
import { Writable } from 'node:stream';
import { startSandbox, callOf } from './web_harness.mjs';

// Self-contained (it runs in the sandbox by its text): returns {case name: outcome}.
async function webApiCases(origin) {
  const out = {};
  const outcome = (value) => {
    if (value instanceof ArrayBuffer) return { arrayBuffer: [...new Uint8Array(value)] };
    if (ArrayBuffer.isView(value)) return { bytes: [...new Uint8Array(value.buffer, value.byteOffset, value.byteLength)] };
    if (typeof value === 'bigint') return { bigint: String(value) };
    if (Array.isArray(value)) return value.map(outcome);
    return value === undefined ? { undefined: true } : value;
  };
  const thrown = (e) => ({
    throws: e instanceof DOMException ? 'DOMException' : e instanceof TypeError ? 'TypeError'
          : e instanceof RangeError ? 'RangeError' : 'other',
    ...(e instanceof DOMException ? { name: e.name, code: e.code } : {}),
  });
  const t = async (name, f) => {
    try { out[name] = outcome(await f()); } catch (e) { out[name] = thrown(e); }
  };
  const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('');

  // ---------------------------------------------------------------- Event, EventTarget
  await t('Event basics', () => {
    const e = new Event('x', { cancelable: true });
    const before = [e.type, e.bubbles, e.cancelable, e.defaultPrevented, e.target, e.eventPhase];
    e.preventDefault();
    return [...before, e.defaultPrevented, Object.prototype.toString.call(e)];
  });
  await t('Event without a type', () => new Event());
  await t('EventTarget dispatch order, once, handleEvent, remove, duplicates', () => {
    const target = new EventTarget();
    const seen = [];
    const f = (e) => seen.push('f:' + e.type + ':' + (e.target === target) + ':' + (e.currentTarget === target));
    target.addEventListener('ping', f);
    target.addEventListener('ping', f);  // the same listener once
    target.addEventListener('ping', () => seen.push('once'), { once: true });
    target.addEventListener('ping', { handleEvent(e) { seen.push('object:' + (this !== target)); } });
    target.addEventListener('pong', () => seen.push('pong'));
    const result = target.dispatchEvent(new Event('ping'));
    target.dispatchEvent(new Event('ping'));
    target.removeEventListener('ping', f);
    target.dispatchEvent(new Event('ping'));
    return [result, seen];
  });
  await t('stopImmediatePropagation and preventDefault', () => {
    const target = new EventTarget();
    const seen = [];
    target.addEventListener('x', (e) => { seen.push(1); e.preventDefault(); e.stopImmediatePropagation(); });
    target.addEventListener('x', () => seen.push(2));
    return [target.dispatchEvent(new Event('x', { cancelable: true })), seen];
  });
  await t('listener removed by a signal', () => {
    const target = new EventTarget();
    const controller = new AbortController();
    const seen = [];
    target.addEventListener('x', () => seen.push('a'), { signal: controller.signal });
    target.dispatchEvent(new Event('x'));
    controller.abort();
    target.dispatchEvent(new Event('x'));
    target.addEventListener('x', () => seen.push('b'), { signal: controller.signal });  // aborted: not added
    target.dispatchEvent(new Event('x'));
    return seen;
  });
  await t('dispatchEvent of a non-Event', () => new EventTarget().dispatchEvent({ type: 'x' }));

  // ---------------------------------------------------------------- AbortController, AbortSignal
  await t('AbortController abort with the default reason', () => {
    const c = new AbortController();
    const seen = [];
    c.signal.onabort = (e) => seen.push('onabort:' + e.type);
    c.signal.addEventListener('abort', () => seen.push('listener'));
    const before = c.signal.aborted;
    c.abort();
    c.abort('again');  // no second event, the reason stays
    const r = c.signal.reason;
    return [before, c.signal.aborted, r instanceof DOMException, r.name, r.code, seen];
  });
  await t('abort with a reason, throwIfAborted', () => {
    const c = new AbortController();
    c.signal.throwIfAborted();
    c.abort(42);
    try { c.signal.throwIfAborted(); } catch (e) { return ['threw', e]; }
    return 'did not throw';
  });
  await t('AbortSignal.abort()', () => {
    const s = AbortSignal.abort();
    return [s.aborted, s.reason.name, AbortSignal.abort('why').reason];
  });
  await t('new AbortSignal()', () => new AbortSignal());
  await t('AbortSignal.any', () => {
    const a = new AbortController();
    const b = new AbortController();
    const any = AbortSignal.any([a.signal, b.signal]);
    const seen = [];
    any.addEventListener('abort', () => seen.push(any.reason));
    b.abort('b first');
    a.abort('a later');
    return [any.aborted, any.reason, seen, AbortSignal.any([AbortSignal.abort('done')]).reason, AbortSignal.any([]).aborted];
  });
  await t('AbortSignal.any of a non-signal', () => AbortSignal.any([{}]));
  await t('AbortSignal.timeout', async () => {
    const s = AbortSignal.timeout(5);
    const before = s.aborted;
    await new Promise((resolve) => s.addEventListener('abort', resolve));
    return [before, s.aborted, s.reason.name, s.reason.code];
  });
  await t('AbortSignal.timeout(-1)', () => AbortSignal.timeout(-1));
  await t('class shapes', () => [typeof AbortController, typeof AbortSignal, Object.prototype.toString.call(new AbortController()),
                                 Object.prototype.toString.call(new AbortController().signal), new AbortController().signal instanceof EventTarget]);

  // ---------------------------------------------------------------- fetch's signal
  await t('fetch with an aborted signal', () => fetch(origin + '/count', { signal: AbortSignal.abort() }));
  await t('fetch with an aborted signal, a reason', () => fetch(origin + '/count', { signal: AbortSignal.abort('mine') }).catch((e) => ['rejected', e]));
  await t('fetch aborted while pending', async () => {
    const c = new AbortController();
    const started = Date.now();
    const pending = fetch(origin + '/slow', { signal: c.signal });
    setTimeout(() => c.abort(), 50);
    try { await pending; return 'resolved'; } catch (e) { return [e.name, Date.now() - started < 2500]; }
  });
  await t('fetch aborted mid-redirect', async () => {
    const c = new AbortController();
    const pending = fetch(origin + '/redirect-slow', { signal: c.signal });
    setTimeout(() => c.abort(new Error('stop')), 50);
    try { await pending; return 'resolved'; } catch (e) { return ['rejected', e.message]; }
  });
  await t('fetch with a timeout signal', async () => {
    try { await fetch(origin + '/slow', { signal: AbortSignal.timeout(50) }); return 'resolved'; } catch (e) { return [e.name, e.code]; }
  });
  await t('fetch with a signal that never aborts', async () => {
    const r = await fetch(origin + '/text', { signal: new AbortController().signal });
    return [r.status, await r.text()];
  });
  await t('abort after the response', async () => {
    const c = new AbortController();
    const r = await fetch(origin + '/text', { signal: c.signal });
    c.abort();
    return r.status;
  });
  await t('Request signal', () => {
    const c = new AbortController();
    const r = new Request(origin + '/x', { signal: c.signal });
    const before = r.signal.aborted;
    c.abort('r');
    return [before, r.signal.aborted, r.signal.reason, r.signal === c.signal, new Request(origin).signal.aborted];
  });
  await t('Request with a bad signal', () => new Request(origin + '/x', { signal: {} }));

  // ---------------------------------------------------------------- crypto
  await t('crypto shapes', () => [typeof crypto, Object.prototype.toString.call(crypto), Object.prototype.toString.call(crypto.subtle),
                                  typeof crypto.getRandomValues, typeof crypto.randomUUID]);
  await t('randomUUID format', () => {
    const ids = Array.from({ length: 50 }, () => crypto.randomUUID());
    return [ids.every((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)), new Set(ids).size];
  });
  await t('getRandomValues returns its argument, filled', () => {
    const a = new Uint32Array(64);
    const r = crypto.getRandomValues(a);
    return [r === a, a.some((x) => x !== 0)];
  });
  for (const make of ['Int8Array', 'Uint8ClampedArray', 'Int16Array', 'BigInt64Array', 'BigUint64Array', 'Float32Array', 'Float64Array', 'DataView', 'ArrayBuffer', 'Array']) {
    await t(`getRandomValues(${make})`, () => {
      const value = make === 'DataView' ? new DataView(new ArrayBuffer(8)) : make === 'ArrayBuffer' ? new ArrayBuffer(8)
                  : make === 'Array' ? [1, 2] : new globalThis[make](8);
      return crypto.getRandomValues(value).byteLength;
    });
  }
  await t('getRandomValues at the quota', () => crypto.getRandomValues(new Uint8Array(65536)).length);
  await t('getRandomValues over the quota', () => crypto.getRandomValues(new Uint8Array(65537)));
  await t('getRandomValues of a view at an offset', () => {
    const buffer = new Uint8Array(32);
    crypto.getRandomValues(new Uint8Array(buffer.buffer, 8, 8));
    return [buffer.slice(0, 8).every((b) => b === 0), buffer.slice(16).every((b) => b === 0)];
  });
  await t('getRandomValues without an argument', () => crypto.getRandomValues());
  for (const algorithm of ['SHA-1', 'SHA-256', 'sha-384', { name: 'SHA-512' }, 'MD5', 'SHA-3', { hash: 'x' }]) {
    for (const [what, data] of [['empty', new Uint8Array(0)], ['abc', new TextEncoder().encode('abc')],
                                ['a view', new Uint8Array([0, 1, 2, 3, 4, 5]).subarray(2, 5)],
                                ['an ArrayBuffer', new Uint8Array(1000).fill(7).buffer], ['a DataView', new DataView(new ArrayBuffer(3))]]) {
      await t(`digest ${JSON.stringify(algorithm)} of ${what}`, async () => hex(await crypto.subtle.digest(algorithm, data)));
    }
  }
  await t('digest of a string', () => crypto.subtle.digest('SHA-256', 'abc'));
  await t('digest returns a promise for bad input', () => {
    const p = crypto.subtle.digest('SHA-256', 'abc');
    p.catch(() => {});
    return p instanceof Promise;
  });
  await t('new Crypto()', () => new Crypto());

  // ---------------------------------------------------------------- performance
  await t('performance.now', async () => {
    const a = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const b = performance.now();
    return [typeof a, a >= 0, b - a >= 15, typeof performance.timeOrigin, Math.abs(performance.timeOrigin + b - Date.now()) < 1000];
  });

  // ---------------------------------------------------------------- Blob, File, FormData
  await t('Blob from parts', async () => {
    const b = new Blob(['héllo ', new Uint8Array([65, 66]), new Blob(['!']), new Uint16Array([0x4443]).buffer], { type: 'Text/Plain' });
    return [b.size, b.type, await b.text(), Object.prototype.toString.call(b)];
  });
  await t('Blob type not ASCII', () => new Blob([], { type: 'tëxt' }).type);
  await t('Blob slice', async () => {
    const b = new Blob(['0123456789']);
    return [await b.slice(2, 5).text(), await b.slice(-3).text(), await b.slice(5, 2).text(), b.slice(1, 3, 'X/Y').type,
            await b.slice(-100, 100).text(), await b.slice(undefined, -8).text()];
  });
  await t('Blob arrayBuffer and bytes', async () => {
    const b = new Blob([new Uint8Array([1, 2, 3])]);
    return [await b.arrayBuffer(), await b.bytes()];
  });
  await t('Blob of a non-sequence', () => new Blob('abc'));
  await t('File', () => {
    const f = new File(['ab'], 'a.txt', { type: 'text/plain', lastModified: 42 });
    return [f.name, f.size, f.type, f.lastModified, f instanceof Blob, Object.prototype.toString.call(f)];
  });
  await t('File without a name', () => new File(['x']));
  await t('FormData', () => {
    const f = new FormData();
    f.append('a', '1');
    f.append('a', 2);
    f.append('file', new Blob(['x'], { type: 'text/plain' }));
    f.append('named', new Blob(['y']), 'y.bin');
    f.set('b', 'only');
    f.append('b', 'two');
    f.set('b', 'one');
    const file = f.get('file');
    const named = f.get('named');
    const seen = [];
    for (const [k, v] of f) seen.push([k, typeof v === 'string' ? v : v.name]);
    f.delete('a');
    return [seen, f.getAll('a'), f.has('b'), f.get('nope'), file instanceof File, file.name, file.type, named.name, [...f.keys()]];
  });
  await t('FormData append with a filename for a string', () => new FormData().append('a', 'b', 'c'));
  await t('FormData as a fetch body', async () => {
    const f = new FormData();
    f.append('greeting', 'hi\nthere');
    f.append('doc', new File(['{"a":1}'], 'q"uote.json', { type: 'application/json' }));
    const r = await fetch(origin + '/form', { method: 'POST', body: f });
    return await r.json();
  });
  await t('Blob as a fetch body, Response from a Blob, response.blob()', async () => {
    const r = await fetch(origin + '/echo-body', { method: 'POST', body: new Blob(['blob body'], { type: 'text/x-test' }) });
    const echoed = await r.json();
    const fromBlob = new Response(new Blob(['in a response'], { type: 'text/x-r' }));
    const blob = await (await fetch(origin + '/text')).blob();
    return [echoed, fromBlob.headers.get('content-type'), await fromBlob.text(), blob.type, blob.size, await blob.text()];
  });
  await t('formData() of a FormData body, of a urlencoded one, and of others', async () => {
    const f = new FormData();
    f.append('a', 'x y\r\nz');
    f.append('file', new Blob(['héllo'], { type: 'text/plain' }), 'h.txt');
    f.append('a', '2');
    const entries = async (form) => Promise.all([...form].map(async ([k, v]) =>
      [k, typeof v === 'string' ? v : [v.name, v.type, v.size, await v.text(), v instanceof File]]));
    const back = await entries(await new Response(f).formData());
    const fromRequest = await entries(await new Request('http://x.test/', { method: 'POST', body: f }).formData());
    const urlencoded = await entries(await new Response('a=1&b=%C3%A9+x&&c&=d&%zz=%4', {
      headers: { 'content-type': 'application/x-www-form-urlencoded;charset=UTF-8' } }).formData());
    const refused = [];
    for (const [body, type] of [['{}', 'application/json'], ['--x\r\n', null],
                                ['--xx\r\nbad', 'multipart/form-data; boundary=xx']]) {
      try {
        await new Response(body, type ? { headers: { 'content-type': type } } : {}).formData();
        refused.push('parsed');
      } catch (e) { refused.push(e instanceof TypeError); }
    }
    return [back, fromRequest, urlencoded, refused];
  });

  // ---------------------------------------------------------------- corners of the web classes
  await t('Headers changed while iterated', () => {
    const h = new Headers([['a', '1'], ['b', '2'], ['c', '3'], ['d', '4']]);
    const seen = [];
    for (const [name] of h) {
      seen.push(name);
      if (name === 'a') { h.delete('b'); h.append('e', '5'); }
      if (name === 'c') h.set('aa', 'x');
    }
    return seen;
  });
  for (const url of ['http://', 'https://a b/', 'http://[::1', 'http://exa%mple.com/', 'ftp://x/y']) {
    await t(`new Request(${JSON.stringify(url)})`, () => new Request(url).url);
  }
  await t('TextDecoder latin1', () => [new TextDecoder('latin1').encoding, new TextDecoder('latin1').decode(new Uint8Array([0x41, 0xE9]))]);
  return out;
}

// console.table's text, as node writes it.
function tableCases() {
  const lines = [];
  const log = (t) => lines.push(t);
  const cases = [
    [[{ a: 1, b: 'x' }, { a: 22, c: true }]],
    [{ r1: { x: 1 }, r2: { y: [1, 2] } }],
    [[1, 'two', { a: 1 }]],
    [[{ a: 1 }], ['b']],
    [[{ a: 1, b: 2 }], ['b']],
    [[[1, 2], [3]]],
    ['not a table'],
    [[]],
    [new Map([['k', 1], ['l', { m: 2 }]])],
    [new Set(['s', 3])],
    [[{ u: undefined, n: null }]],
  ];
  return { cases, lines, log };
}

// JSON with object keys sorted: the result reaches the client with its keys sorted.
function canonical(value) {
  return JSON.stringify(value, (key, v) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v));
}

// Where node (20) departs from the standard, the standard's outcome. AbortSignal.timeout takes
// an [EnforceRange] unsigned long long: out of range is WebIDL's TypeError (node: RangeError).
const kStandardWhereNodeDiffers = {
  'AbortSignal.timeout(-1)': { throws: 'TypeError' },
};

describe('web APIs in the sandbox and in node', () => {
  let server;
  let origin;
  let sandbox;
  const counts = { count: 0, slow: 0 };
  before(async () => {
    server = createServer((req, res) => {
      const path = req.url.split('?')[0];
      let body = '';
      req.setEncoding('latin1');
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        if (path === '/count') { counts.count++; res.end('counted'); return; }
        if (path === '/slow') { counts.slow++; setTimeout(() => res.end('late'), 3000).unref(); return; }
        if (path === '/redirect-slow') { res.writeHead(302, { location: '/slow' }); res.end(); return; }
        if (path === '/text') { res.writeHead(200, { 'content-type': 'text/plain;charset=UTF-8' }); res.end('plain text'); return; }
        if (path === '/echo-body') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ type: req.headers['content-type'], body }));
          return;
        }
        if (path === '/form') {
          // The parts as a server reads them, the boundary (random in both) left out.
          const type = req.headers['content-type'];
          const boundary = /boundary=(.*)$/.exec(type)[1];
          const parts = body.split('--' + boundary).slice(1, -1).map((p) => p.replace(/^\r\n/, '').replace(/\r\n$/, ''));
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ type: type.replace(boundary, 'B'), parts, end: body.endsWith('--' + boundary + '--\r\n') }));
          return;
        }
        res.writeHead(404);
        res.end();
      });
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${server.address().port}`;
    sandbox = await startSandbox(origin);
  });
  after(async () => {
    await sandbox?.close();
    server?.close();
  });

  test('every case has the same outcome in the sandbox as in node', async () => {
    const inNode = await webApiCases(origin);
    const countAfterNode = counts.count;
    const inSandbox = await sandbox.execute(callOf(webApiCases, origin));
    assert.equal(counts.count, countAfterNode, 'a fetch with an aborted signal sends nothing');
    assert.deepEqual(Object.keys(inSandbox).sort(), Object.keys(inNode).sort());
    const expected = (name) => (name in kStandardWhereNodeDiffers ? kStandardWhereNodeDiffers[name] : inNode[name]);
    const different = Object.keys(inNode)
        .filter((name) => canonical(inSandbox[name]) !== canonical(expected(name)))
        .map((name) => ({ case: name, sandbox: inSandbox[name], expected: expected(name) }));
    console.log(`${Object.keys(inNode).length} cases, ${different.length} different`);
    assert.deepEqual(different, []);
  });

  test('console.table writes what node writes', async () => {
    const { cases } = tableCases();
    let text = '';
    const sink = new Console(new Writable({ write(chunk, _, done) { text += chunk; done(); } }));
    for (const args of cases) sink.table(...args);
    const code = `async () => { const cases = ${tableCasesSource()}; for (const args of cases) console.table(...args); return 0; }`;
    const logs = await sandbox.logs(code);
    assert.equal(logs, text.replace(/\n$/, ''));
  });
});

// The cases of tableCases as source text, rebuilt in the sandbox (Map and Set do not survive JSON).
function tableCasesSource() {
  return `[
    [[{ a: 1, b: 'x' }, { a: 22, c: true }]],
    [{ r1: { x: 1 }, r2: { y: [1, 2] } }],
    [[1, 'two', { a: 1 }]],
    [[{ a: 1 }], ['b']],
    [[{ a: 1, b: 2 }], ['b']],
    [[[1, 2], [3]]],
    ['not a table'],
    [[]],
    [new Map([['k', 1], ['l', { m: 2 }]])],
    [new Set(['s', 3])],
    [[{ u: undefined, n: null }]],
  ]`;
}

describe('hostile code against the new host functions', () => {
  let sandbox;
  before(async () => { sandbox = await startSandbox(null); });
  after(async () => { await sandbox?.close(); });

  const hostile = {
    'getRandomValues on a view whose buffer was transferred': `async () => {
      const a = new Uint8Array(16); structuredClone(a.buffer, { transfer: [a.buffer] });
      try { crypto.getRandomValues(a); return a.length; } catch (e) { return e.name; } }`,
    'getRandomValues on a length-tracking view of a resizable buffer': `async () => {
      const buffer = new ArrayBuffer(8, { maxByteLength: 1 << 20 }); const view = new Uint8Array(buffer);
      buffer.resize(65536); crypto.getRandomValues(view); buffer.resize(4); return [view.length, buffer.byteLength]; }`,
    'digest of a detached buffer': `async () => {
      const a = new Uint8Array(16); structuredClone(a.buffer, { transfer: [a.buffer] });
      const d = await crypto.subtle.digest('SHA-256', a); return d.byteLength; }`,
    'digest with a getter on the algorithm that detaches the data': `async () => {
      const data = new Uint8Array(1 << 16);
      const algorithm = { get name() { structuredClone(data.buffer, { transfer: [data.buffer] }); return 'SHA-256'; } };
      try { return (await crypto.subtle.digest(algorithm, data)).byteLength; } catch (e) { return e.name; } }`,
    'a huge Blob is refused, not built': `async () => {
      try { new Blob([new Uint8Array(48 << 20), new Uint8Array(48 << 20)]); return 'built'; } catch (e) { return e.name; } }`,
    'a Blob of many parts': `async () => new Blob(Array.from({ length: 100000 }, () => 'ab')).size`,
    'digest of 32 MB': `async () => (await crypto.subtle.digest('SHA-512', new Uint8Array(32 << 20))).byteLength`,
    'listeners that add listeners while dispatching': `async () => {
      const t = new EventTarget(); let n = 0;
      const add = () => { n++; if (n < 1000) t.addEventListener('x', () => add()); };
      t.addEventListener('x', add); for (let i = 0; i < 5; ++i) t.dispatchEvent(new Event('x')); return n; }`,
    'a listener that throws': `async () => { const t = new EventTarget(); t.addEventListener('x', () => { throw new Error('boom'); });
      t.addEventListener('x', () => {}); return t.dispatchEvent(new Event('x')); }`,
    'an abort listener that aborts again': `async () => { const c = new AbortController();
      c.signal.addEventListener('abort', () => c.abort('inner')); c.abort('outer'); return c.signal.reason; }`,
    'AbortSignal.any of itself, a chain of 10000': `async () => {
      let s = new AbortController(); const first = s; let signal = s.signal;
      for (let i = 0; i < 10000; ++i) signal = AbortSignal.any([signal]);
      first.abort('deep'); return [signal.aborted, signal.reason]; }`,
    'replaced globals do not change fetch or crypto': `async () => {
      globalThis.Promise = function () { throw new Error('hijacked'); }; Array.prototype.indexOf = () => 0;
      return [typeof crypto.randomUUID(), (await crypto.subtle.digest('SHA-1', new Uint8Array(1))).byteLength]; }`,
  };
  for (const [name, code] of Object.entries(hostile)) {
    test(name, async () => {
      let outcome;
      try { outcome = await sandbox.execute(code); } catch (e) { outcome = { error: e.message.split('\n')[0] }; }
      console.log(`${name}: ${JSON.stringify(outcome)}`);
      assert.equal(await sandbox.execute('async () => 1 + 1'), 2, 'the server serves the next call');
    });
  }
});
