// Exact lines in, exact lines out: every tests/transcripts/*.txt against the real binary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RawServer, run, SOURCE_DIR, sameAsTranscript } from './harness.mjs';

const dir = join(SOURCE_DIR, 'tests/transcripts');
const version = (await run(['--version'])).stdout.split('\n')[0].split(' ')[1];

// Groups a transcript into steps: one sent line and the lines expected after it.
function parse(text) {
  const steps = [];
  for (const raw of text.split('\n')) {
    if (raw.startsWith('> ')) steps.push({ send: raw.slice(2), expect: [] });
    else if (raw.startsWith('< ')) steps.at(-1).expect.push(raw.slice(2).replaceAll('${VERSION}', version));
    else if (raw.trim() !== '' && !raw.startsWith('#')) throw new Error(`bad transcript line: ${raw}`);
  }
  return steps;
}

for (const file of readdirSync(dir).filter((f) => f.endsWith('.txt')).sort()) {
  test(`transcript ${file}`, async () => {
    const server = new RawServer();
    for (const step of parse(readFileSync(join(dir, file), 'utf8'))) {
      server.send(step.send);
      for (const expected of step.expect) {
        const line = await server.nextLine();
        if (!sameAsTranscript(line, expected)) assert.equal(line, expected, `answer to: ${step.send}`);
      }
    }
    assert.deepEqual(await server.close(), { code: 0, signal: null });
    assert.deepEqual(server.lines, [], 'no unexpected lines');
  });
}
