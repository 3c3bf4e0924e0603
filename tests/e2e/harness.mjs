// Shared helpers for the process-level tests: start the real binaries, speak raw lines.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';

export const BIN = process.env.CODEMODE_BIN;
export const FIXTURE_BIN = process.env.MARKETHUB_FIXTURE_BIN;
export const SOURCE_DIR = process.env.CODEMODE_SOURCE_DIR;
if (!BIN || !FIXTURE_BIN || !SOURCE_DIR) {
  throw new Error('CODEMODE_BIN, MARKETHUB_FIXTURE_BIN and CODEMODE_SOURCE_DIR must be set (ctest sets them)');
}

// A codemode-mcp process driven line by line. Every stdout line must be a JSON-RPC message:
// anything else fails the test that reads it.
export class RawServer {
  constructor(args = [], env = {}) {
    this.proc = spawn(BIN, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.stderr = '';
    this.proc.stderr.on('data', (d) => { this.stderr += d; });
    this.proc.stdin.on('error', () => {});  // EPIPE after the server exited shows in the asserts
    this.lines = [];
    this.waiters = [];
    this.exited = once(this.proc, 'exit');
    createInterface({ input: this.proc.stdout }).on('line', (line) => {
      this.lines.push(line);
      this.#wake();
    });
  }
  #wake() {
    for (const w of this.waiters.splice(0)) w();
  }
  send(line) { this.proc.stdin.write(line + '\n'); }
  sendJson(message) { this.send(JSON.stringify(message)); }
  // The next stdout line, or an error after `ms`.
  async nextLine(ms = 5000) {
    const deadline = Date.now() + ms;
    while (this.lines.length === 0) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no line from the server within ${ms} ms; stderr:\n${this.stderr}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
    return this.lines.shift();
  }
  async next(ms) {
    const line = await this.nextLine(ms);
    return JSON.parse(line);
  }
  async request(message, ms) {
    this.sendJson(message);
    return this.next(ms);
  }
  async initialize(version = '2025-11-25') {
    const reply = await this.request({
      jsonrpc: '2.0', id: 0, method: 'initialize',
      params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    this.sendJson({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return reply;
  }
  // Closes stdin and resolves with {code, signal} once the process is gone.
  async close() {
    this.proc.stdin.end();
    const [code, signal] = await this.exited;
    return { code, signal };
  }
  kill(signal = 'SIGKILL') { this.proc.kill(signal); }
}

// Runs a command to completion; resolves {code, stdout, stderr}.
export async function run(args, { env = {}, input = '' } = {}) {
  const proc = spawn(BIN, args, { env: { ...process.env, ...env } });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => { stdout += d; });
  proc.stderr.on('data', (d) => { stderr += d; });
  proc.stdin.on('error', () => {});  // the process may exit before reading its input
  proc.stdin.end(input);
  const [code] = await once(proc, 'exit');
  return { code, stdout, stderr };
}

// Starts a standalone MarketHub fixture on an ephemeral port; resolves {origin, token, stop}.
export async function startFixture(token = 'fixture-token-0123456789') {
  const proc = spawn(FIXTURE_BIN, ['--port', '0', '--token', token], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = await once(createInterface({ input: proc.stdout }), 'line');
  const match = /^listening on (http:\/\/\S+)$/.exec(line);
  if (!match) throw new Error(`unexpected fixture output: ${line}`);
  return {
    origin: match[1],
    token,
    stop: async () => { proc.kill('SIGTERM'); await once(proc, 'exit'); },
  };
}

// Pids of the direct children of `pid` (its sandbox processes).
export function childrenOf(pid) {
  const out = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    if (text) out.push(...text.split(/\s+/).map(Number));
  }
  return out;
}

// A transcript's expected text against what came: equal, except that each `${MS}` in the
// expected text stands for one number (the times in a result's `usage` and `requests`).
export function sameAsTranscript(actual, expected) {
  if (!expected.includes('${MS}')) return actual === expected;
  const pattern = expected.split('${MS}').map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('\\d+(?:\\.\\d+)?');
  return new RegExp(`^${pattern}$`).test(actual);
}
