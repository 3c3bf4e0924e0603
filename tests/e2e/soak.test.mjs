// 1,000 mixed calls over stdio (good, failing, limit-breaking): every answer is checked, and the
// server's RSS must level off rather than grow with the number of calls.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN } from './harness.mjs';

// Each kind: code, and a check of the answer.
const kinds = [
  { weight: 30, code: 'async () => [1, 2, 3].map((x) => x * 2)', expect: (r) => !r.isError && r.content[0].text === '[2,4,6]' },
  { weight: 20, code: "async () => Object.keys(spec.paths).filter((p) => p.startsWith('/orders'))",
    expect: (r) => !r.isError && JSON.parse(r.content[0].text).includes('/orders') },
  { weight: 10, code: "async () => { console.log('hi', 1); return spec.info.title; }",
    expect: (r) => !r.isError && r.content[0].text === '"MarketHub API"' && r.structuredContent.logs[0] === 'hi 1' },
  { weight: 10, code: "async () => { throw new TypeError('bad input'); }",
    expect: (r) => r.isError && r.content[0].text.split('\n')[0] === 'runtime: TypeError: bad input' },
  { weight: 8, code: 'async () => { return (', expect: (r) => r.isError && r.content[0].text.startsWith('compile: ') },
  { weight: 8, code: 'async () => { while (true) {} }', expect: (r) => r.isError && r.content[0].text.startsWith('timeout: cpu') },
  { weight: 4, code: 'async () => new Promise(() => {})', expect: (r) => r.isError && r.content[0].text.startsWith('runtime: ') },
  { weight: 4, code: "async () => { spec.paths = null; Object.prototype.polluted = 1; globalThis.x = 1; return 'ok'; }",
    expect: (r) => !r.isError },
  { weight: 4, code: "async () => [typeof spec.paths, ({}).polluted, typeof globalThis.x]",
    expect: (r) => !r.isError && r.content[0].text === '["object",null,"undefined"]' },
  { weight: 1, code: 'async () => { const a = []; for (;;) a.push(new Array(1e5).fill(1)); }',
    expect: (r) => r.isError && /^(memory|timeout): /.test(r.content[0].text) },
  { weight: 1, code: "async () => 'x'.repeat(100000)", expect: (r) => !r.isError && r.content[0].text.includes('[cut: ') },
];
const schedule = kinds.flatMap((k) => Array(k.weight).fill(k));

function rss(pid) {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
}

test('1,000 mixed calls: every answer right, RSS levels off', { timeout: 300_000 }, async () => {
  const transport = new StdioClientTransport({ command: BIN, args: ['--log-level', 'warn'], stderr: 'pipe' });
  const client = new Client({ name: 'soak', version: '1' });
  await client.connect(transport);
  const total = 1000;
  const samples = [];
  let done = 0;
  const failures = [];
  async function lane(offset) {
    for (let i = offset; i < total; i += 4) {
      const kind = schedule[(i * 7) % schedule.length];
      const result = await client.callTool({ name: 'search', arguments: { code: kind.code } }, undefined, { timeout: 30_000 });
      if (!kind.expect(result)) failures.push({ code: kind.code, got: result.content[0].text.slice(0, 200) });
      if (++done % 250 === 0) samples.push(rss(transport.pid));
    }
  }
  await Promise.all([0, 1, 2, 3].map(lane));
  await client.ping();
  await client.close();
  assert.deepEqual(failures.slice(0, 5), [], `${failures.length} wrong answers`);
  // After the first quarter (allocator and V8 warm-up), growth must be small.
  const growth = samples.at(-1) - samples[0];
  console.log(`# RSS after 250/500/750/1000 calls: ${samples.map((s) => s.toFixed(1)).join(' / ')} MB`);
  assert.ok(growth < 64, `RSS grew ${growth.toFixed(1)} MB from call 250 to 1000 (${samples.map((s) => s.toFixed(0)).join(' → ')} MB)`);
});
