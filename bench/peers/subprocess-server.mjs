// Peer wrapper: a new runtime process per call (plain `node` or `deno run`), behind a small
// HTTP server on 127.0.0.1 (so every system in bench/compare pays one local IPC hop).
//
//   node subprocess-server.mjs --runtime node|deno --spec FILE [--deno PATH] [--allow-net HOST:PORT]
//
// POST /run {code, workload} -> {ok, result} | {ok: false, error}
// Per call: the wrapper writes a small ES module to the child's stdin: for the `spec` workload it
// first reads and JSON.parses FILE (the only file the child may read), then awaits the code.
//   node: node --experimental-permission --allow-fs-read=FILE --input-type=module
//         (node 20 permission model: no other fs, no child processes, no workers, no addons;
//         the network is not under its control, so the `io` workload's fetch needs no grant)
//   deno: deno run --no-prompt --no-config --no-lock --no-remote --no-npm --ext=js
//         --allow-read=FILE -      (deno denies everything it was not granted; no network, but
//         for the `io` workload: --allow-net=HOST:PORT, the upstream alone)
import http from 'node:http';
import { spawn } from 'node:child_process';

const argv = process.argv.slice(2);
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : fallback; };
const runtime = opt('runtime', 'node');
const specFile = opt('spec');
const deno = opt('deno', 'deno');
const allowNet = opt('allow-net');
const wallMs = 20000;

function program(code, workload) {
  const spec = workload === 'spec'
    ? (runtime === 'deno'
      ? `const spec = JSON.parse(Deno.readTextFileSync(${JSON.stringify(specFile)}));\n`
      : `import { readFileSync } from 'node:fs';\nconst spec = JSON.parse(readFileSync(${JSON.stringify(specFile)}, 'utf8'));\n`)
    : '';
  return `${spec}const fn = (${code});\n` +
    'const out = (o) => { try { return JSON.stringify(o); } catch (e) { return JSON.stringify({ ok: false, error: String(e) }); } };\n' +
    'Promise.resolve().then(fn).then((result) => console.log(out({ ok: true, result })), (e) => console.log(out({ ok: false, error: String(e) })));\n';
}

function commandFor(workload) {
  if (runtime !== 'deno') return [process.execPath, ['--no-warnings', '--experimental-permission', `--allow-fs-read=${specFile}`, '--input-type=module']];
  const net = workload === 'io' && allowNet ? [`--allow-net=${allowNet}`] : [];
  return [deno, ['run', '--no-prompt', '--no-config', '--no-lock', '--no-remote', '--no-npm', '--ext=js', `--allow-read=${specFile}`, ...net, '-']];
}

function runOnce(code, workload) {
  return new Promise((resolve) => {
    const command = commandFor(workload);
    const child = spawn(command[0], command[1], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: process.env.HOME, DENO_DIR: process.env.DENO_DIR ?? '', NO_COLOR: '1' } });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), wallMs);
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('close', (status) => {
      clearTimeout(timer);
      try { resolve(JSON.parse(out)); } catch { resolve({ ok: false, error: `exit ${status}: ${err.slice(0, 500)}` }); }
    });
    child.stdin.end(program(code, workload));
  });
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
