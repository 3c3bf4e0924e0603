// The JavaScript models write today runs in the sandbox: every ECMAScript feature V8 14.6 ships
// (and Math.sumPrecise, finished but behind a flag there: cmake/NodeEngine.cmake turns it on),
// each through the real binary and the official MCP client, in both tools. And what the sandbox
// keeps out stays out on the new engine.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSandbox } from './web_harness.mjs';

// [feature, the code's body (an async arrow function's), the value it must return]
const kFeatures = [
  // ES2023
  ['Array.prototype.toSorted / toReversed / with / toSpliced',
   '{ const a = [3, 1, 2]; return [a.toSorted(), a.toReversed(), a.with(0, 9), a.toSpliced(1, 1), a]; }',
   [[1, 2, 3], [2, 1, 3], [9, 1, 2], [3, 2], [3, 1, 2]]],
  ['Array.prototype.findLast / findLastIndex', '[1, 2, 3, 4].findLast((x) => x % 2) + [1, 2, 3, 4].findLastIndex((x) => x % 2)', 5],
  // ES2024
  ['Object.groupBy', "Object.groupBy([1, 2, 3], (x) => (x % 2 ? 'odd' : 'even'))", { odd: [1, 3], even: [2] }],
  ['Map.groupBy', '[...Map.groupBy([1, 2, 3], (x) => x % 2).entries()]', [[1, [1, 3]], [0, [2]]]],
  ['Promise.withResolvers', '{ const { promise, resolve } = Promise.withResolvers(); resolve(7); return await promise; }', 7],
  ['String.prototype.isWellFormed / toWellFormed', "['a\\uD800'.isWellFormed(), 'a\\uD800'.toWellFormed() === 'a\\uFFFD']", [false, true]],
  ['ArrayBuffer resize and transfer', '{ const b = new ArrayBuffer(2, { maxByteLength: 8 }); b.resize(8); const c = b.transfer(); return [c.byteLength, b.detached]; }', [8, true]],
  ['the RegExp v flag', "[/[\\p{L}--[a-z]]/v.test('Ä'), /[\\p{L}--[a-z]]/v.test('a')]", [true, false]],
  // ES2025
  ['Set methods', '[...new Set([1, 2]).union(new Set([3])), new Set([1]).isSubsetOf(new Set([1, 2]))]', [1, 2, 3, true]],
  ['iterator helpers', '[1, 2, 3].values().map((x) => x * 2).filter((x) => x > 2).toArray()', [4, 6]],
  ['Iterator.from', "Iterator.from({ next() { return this.i < 2 ? { value: this.i++, done: false } : { done: true }; }, i: 0 }).toArray()", [0, 1]],
  ['Promise.try', 'await Promise.try(() => 5)', 5],
  ['RegExp.escape', "RegExp.escape('a.b*c')", '\\x61\\.b\\*c'],
  ['duplicate named capture groups', "'2026-12'.match(/(?<y>\\d{4})-\\d{2}|\\d{2}\\/(?<y>\\d{4})/).groups.y", '2026'],
  ['RegExp modifiers', "/(?i:a)b/.test('Ab')", true],
  ['Float16Array and Math.f16round', '[new Float16Array([1.337])[0], Math.f16round(1.337)]', [1.3369140625, 1.3369140625]],
  ['JSON.rawJSON', "JSON.stringify({ n: JSON.rawJSON('12345678901234567890') })", '{"n":12345678901234567890}'],
  // ES2026 and later, shipped by V8 14.6
  ['Array.fromAsync', 'await Array.fromAsync((async function* () { yield 1; yield 2; })())', [1, 2]],
  ['Error.isError', '[Error.isError(new TypeError()), Error.isError({ message: "x" })]', [true, false]],
  ['Math.sumPrecise', 'Math.sumPrecise([1e20, 0.1, -1e20])', 0.1],
  ['Uint8Array.fromBase64 / toHex', "[Uint8Array.fromBase64('aGk=').toHex(), new Uint8Array([255]).toBase64()]", ['6869', '/w==']],
  ['using and DisposableStack', '{ const log = []; { using a = { [Symbol.dispose]() { log.push("a"); } }; const s = new DisposableStack(); s.defer(() => log.push("s")); s.dispose(); } return log; }', ['s', 'a']],
  ['await using and AsyncDisposableStack', '{ const log = []; { await using a = { async [Symbol.asyncDispose]() { log.push("a"); } }; } return [log, typeof AsyncDisposableStack]; }', [['a'], 'function']],
  ['Iterator.concat', '[...Iterator.concat([1], [2, 3])]', [1, 2, 3]],
  ['Map.prototype.getOrInsert', "{ const m = new Map(); m.getOrInsert('k', 1); return m.getOrInsert('k', 2); }", 1],
  ['Temporal', "Temporal.PlainDate.from('2024-02-29').add({ years: 1 }).toString()", '2025-02-28'],
  ['Intl.DurationFormat', "new Intl.DurationFormat('en', { style: 'long' }).format({ hours: 1, minutes: 2 })", '1 hour, 2 minutes'],
  ['Intl with full ICU data', "new Intl.DateTimeFormat('th-TH-u-ca-buddhist', { year: 'numeric', timeZone: 'UTC' }).format(0)", 'พ.ศ. 2513'],
];

let sandbox;
before(async () => { sandbox = await startSandbox(); });
after(async () => { await sandbox.close(); });

for (const [name, body, expected] of kFeatures) {
  const code = body.startsWith('{') ? `async () => ${body}` : `async () => (${body})`;
  test(`search and execute run ${name}`, async () => {
    assert.deepEqual(await sandbox.search(code), expected, code);
    assert.deepEqual(await sandbox.execute(code), expected, code);
  });
}

test('what the sandbox keeps out stays out on the new engine', async () => {
  const code = 'async () => [typeof WebAssembly, typeof SharedArrayBuffer, typeof Atomics, typeof process, ' +
    'typeof require, typeof Deno, (() => { try { return eval("1"); } catch (e) { return e.name; } })(), ' +
    '(() => { try { return new Function("return 1")(); } catch (e) { return e.name; } })()]';
  const expected = ['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'EvalError', 'EvalError'];
  assert.deepEqual(await sandbox.search(code), expected);
  assert.deepEqual(await sandbox.execute(code), expected);
});
