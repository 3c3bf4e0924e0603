// The Web Platform Tests' URL data (tests/wpt/url/, the files WPT's url/ tests and node's and
// workerd's CI read), run inside the real sandbox through the real binary, the way WPT's own
// harness runs them (url-constructor, url-origin, url-statics-canparse, url-setters,
// toascii.window), and through this node's own URL. Each case is checked against the expected
// data; the sandbox must pass every case node passes (and the counts are printed).
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SOURCE_DIR } from './harness.mjs';
import { startSandbox, callOf } from './web_harness.mjs';

const data = (name) => JSON.parse(readFileSync(join(SOURCE_DIR, 'tests/wpt/url', name), 'utf8'));

// Each runner takes the file's data and returns, per case, the names of what failed ([] = pass).
// Self-contained: the same text runs in the sandbox and in node.
function runConstructorCases(cases) {
  const fields = ['href', 'protocol', 'username', 'password', 'host', 'hostname', 'port',
                  'pathname', 'search', 'hash', 'origin'];
  return cases.filter((c) => typeof c === 'object').map((c) => {
    const base = c.base !== null ? c.base : undefined;
    const failed = [];
    let url = null;
    let threw = null;
    try { url = new URL(c.input, base); } catch (e) { threw = e; }
    if (c.failure) {
      if (!(threw instanceof TypeError)) failed.push('throws TypeError');
      if (URL.canParse(c.input, base) !== false) failed.push('canParse');
      return failed;
    }
    if (threw) return ['constructor threw ' + threw];
    for (const field of fields) {
      if (field in c && url[field] !== c[field]) failed.push(field);
    }
    if ('searchParams' in c && url.searchParams.toString() !== c.searchParams) failed.push('searchParams');
    if (URL.canParse(c.input, base) !== true) failed.push('canParse');
    return failed;
  });
}

function runSetterCases(tests) {
  const out = [];
  for (const attribute of Object.keys(tests)) {
    if (attribute === 'comment') continue;
    for (const c of tests[attribute]) {
      const failed = [];
      try {
        const url = new URL(c.href);
        url[attribute] = c.new_value;
        for (const field of Object.keys(c.expected)) {
          if (url[field] !== c.expected[field]) failed.push(field);
        }
      } catch (e) {
        failed.push('threw ' + e);
      }
      out.push(failed);
    }
  }
  return out;
}

function runToAsciiCases(cases) {
  return cases.filter((c) => typeof c === 'object').map((c) => {
    const failed = [];
    try {
      if (c.output === null) {
        let threw = false;
        try { new URL(`https://${c.input}/x`); } catch { threw = true; }
        if (!threw) failed.push('constructor accepts');
      } else {
        const url = new URL(`https://${c.input}/x`);
        if (url.host !== c.output) failed.push('host');
        if (url.hostname !== c.output) failed.push('hostname');
        if (url.pathname !== '/x') failed.push('pathname');
        if (url.href !== `https://${c.output}/x`) failed.push('href');
      }
      for (const setter of ['host', 'hostname']) {
        const url = new URL('https://x/x');
        url[setter] = c.input;
        if (url[setter] !== (c.output === null ? 'x' : c.output)) failed.push(setter + ' setter');
      }
    } catch (e) {
      failed.push('threw ' + e);
    }
    return failed;
  });
}

const suites = [
  ['urltestdata.json', runConstructorCases],
  ['urltestdata-javascript-only.json', runConstructorCases],
  ['setters_tests.json', runSetterCases],
  ['toascii.json', runToAsciiCases],
];

describe('WPT URL data in the sandbox and in node', () => {
  let sandbox;
  before(async () => { sandbox = await startSandbox(); });
  after(async () => { await sandbox.close(); });

  for (const [file, runner] of suites) {
    test(file, async () => {
      const cases = data(file);
      const inNode = runner(cases);
      const inSandbox = await sandbox.search(callOf(runner, cases));
      assert.equal(inSandbox.length, inNode.length);
      const passed = (results) => results.filter((f) => f.length === 0).length;
      console.log(`${file}: sandbox ${passed(inSandbox)} / ${inSandbox.length}, ` +
                  `node ${process.version} ${passed(inNode)} / ${inNode.length}`);
      const flat = file === 'setters_tests.json'
          ? Object.entries(cases).filter(([k]) => k !== 'comment').flatMap(([k, v]) => v.map((c) => ({ setter: k, ...c })))
          : cases.filter((c) => typeof c === 'object');
      const worse = [];
      inSandbox.forEach((failed, i) => {
        if (failed.length > 0 && inNode[i].length === 0) worse.push({ case: flat[i], failed });
      });
      assert.deepEqual(worse, [], 'cases node passes and the sandbox fails');
      // Whatever node fails, the reference implementation must pass: the sandbox fails nothing.
      const failing = inSandbox.map((failed, i) => ({ case: flat[i], failed })).filter((r) => r.failed.length);
      assert.deepEqual(failing, [], 'cases the sandbox fails');
    });
  }
});
