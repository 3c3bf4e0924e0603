// Three codemode-mcp replicas in stateless HTTP mode behind a real nginx, on loopback, under a
// mixed load of search and execute calls from the official MCP SDK client. Mid-load one
// replica is killed (SIGKILL) and another drained (SIGTERM). Every call must get exactly one
// answer in bounded time: the calls running on the killed replica an error, every other call
// its result; the drained replica answers all it took; nginx then sends everything to the
// replica left. How the settings make that hold: README.md beside this file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BIN, SOURCE_DIR, startFixture } from '../e2e/harness.mjs';
import { startNginx } from './nginx.mjs';
import { startPostgres } from './postgres.mjs';
import { spawnSync } from 'node:child_process';

const kReplicaHosts = ['127.0.0.2', '127.0.0.3', '127.0.0.4'];
const kWorkers = 8;            // clients sending short calls back to back
const kWave = 6;               // long calls in flight when the replicas go
const kLongMs = 2000;          // how long a long call waits after placing its order
const kCallsAfterDrain = 60;   // short calls completed after SIGTERM before the load stops
const kCallTimeoutMs = 20000;  // a call unanswered this long has hung
const kLongProduct = 'prod_0030';  // 200 units in the seed: enough for every long call

// A free port on 127.0.0.2: the replicas share one port on three loopback addresses.
function freePort(host) {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// A replica with --log-level debug: it logs "http POST /mcp from …" as each request's header
// block arrives, which is how the test counts the requests each replica has received.
function startReplica(host, port, config, env) {
  const proc = spawn(BIN, ['--http', `${host}:${port}`, '--http-stateless', '--config', config,
    '--log-level', 'debug'], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  const replica = { host, addr: `${host}:${port}`, proc, stderr: '', posts: 0, waiters: [],
    exited: once(proc, 'exit') };
  proc.stderr.on('data', (d) => {
    replica.stderr += d;
    replica.posts = (replica.stderr.match(/ http POST \/mcp from /g) ?? []).length;
    for (const w of replica.waiters.splice(0)) w();
  });
  replica.listening = new Promise((resolve, reject) => {
    const check = () => {
      if (replica.stderr.includes(`listening on http://${replica.addr}/mcp (stateless)`)) resolve();
      else replica.waiters.push(check);
    };
    check();
    replica.exited.then(([code]) => reject(new Error(`replica ${replica.addr} exited ${code}:\n${replica.stderr}`)));
  });
  return replica;
}

// Resolves when predicate() holds, re-checked on every event that calls poke(); fails after ms.
function makeSignal() {
  const waiters = new Set();
  return {
    poke() { for (const w of [...waiters]) w(); },
    until(predicate, what, ms = 15000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => { waiters.delete(check); reject(new Error(`timed out waiting for ${what}`)); }, ms);
        const check = () => {
          if (!predicate()) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      });
    },
  };
}

test('a fleet behind nginx loses no call when one replica is killed and another drained', { timeout: 120000 }, async (t) => {
  const started = Date.now();
  const fixture = await startFixture();
  t.after(() => fixture.stop());
  const token = randomBytes(32).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'codemode-fleet-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const config = join(dir, 'config.json');
  // One audit store for the fleet: each replica writes its own hash chain (audit.server from
  // REPLICA_NAME) into one PostgreSQL.
  const postgres = startPostgres();
  t.after(() => postgres.stop());
  writeFileSync(config, JSON.stringify({
    openapi: join(SOURCE_DIR, 'fixtures/markethub/openapi.json'),
    upstreams: [{ origin: fixture.origin, headers: { Authorization: 'Bearer ${MARKETHUB_TOKEN}' } }],
    http: { tokens: [{ name: 'agent', token: '${CODEMODE_TOKEN}' }] },
    audit: { postgres: postgres.conninfo, server: '${REPLICA_NAME}' },
  }));
  const env = { CODEMODE_TOKEN: token, MARKETHUB_TOKEN: fixture.token };

  // Three replicas on one port (another process may take a port between probe and bind: retry).
  let replicas;
  let port;
  for (let attempt = 0; !replicas; ++attempt) {
    port = await freePort(kReplicaHosts[0]);
    const tried = kReplicaHosts.map((host) => startReplica(host, port, config, { ...env, REPLICA_NAME: `replica-${host}` }));
    try {
      await Promise.all(tried.map((r) => r.listening));
      replicas = tried;
    } catch (err) {
      for (const r of tried) r.proc.kill('SIGKILL');
      if (attempt === 4 || !/cannot bind/.test(err.message)) throw err;
    }
  }
  t.after(() => { for (const r of replicas) r.proc.kill('SIGKILL'); });
  const replicaSignal = makeSignal();
  for (const r of replicas) r.proc.stderr.on('data', () => replicaSignal.poke());

  let nginx;
  for (let attempt = 0; !nginx; ++attempt) {
    try {
      nginx = await startNginx({ port: await freePort('127.0.0.1'), host: `127.0.0.1:${port}`,
        upstreams: replicas.map((r) => r.addr) });
    } catch (err) {
      if (attempt === 4 || !/Address already in use/.test(err.message)) throw err;
    }
  }
  t.after(async () => { await nginx.stop(); nginx.remove(); });

  // --- The client side: every call has a tag, carried in X-Fleet-Call so that nginx's access
  // log says where it went, and a record of how it ended.
  const nginxUrl = new URL(`http://127.0.0.1:${nginx.port}/mcp`);
  const calls = [];
  const clientSignal = makeSignal();
  async function connectClient() {
    const transport = new StreamableHTTPClientTransport(nginxUrl, {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: (input, init = {}) => {
        const tag = /\/\* fleet (\d+) \*\//.exec(typeof init.body === 'string' ? init.body : '')?.[1];
        const headers = new Headers(init.headers);
        if (tag) headers.set('X-Fleet-Call', tag);
        return fetch(input, { ...init, headers });
      },
    });
    const client = new Client({ name: 'codemode-fleet', version: '1.0.0' });
    await client.connect(transport);
    return client;
  }
  function call(client, kind) {
    const tag = String(calls.length);
    const code = {
      search: `async () => { /* fleet ${tag} */ return Object.keys(spec.paths).length; }`,
      get: `async () => { /* fleet ${tag} */ const r = await fetch("/products?limit=2"); return (await r.json()).items.length; }`,
      long: `async () => { /* fleet ${tag} */
        const r = await fetch("/orders", { method: "POST", headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ customer_id: "cust_001", items: [{ product_id: "${kLongProduct}", quantity: 1 }] }) });
        const order = await r.json();
        await new Promise((resolve) => setTimeout(resolve, ${kLongMs}));
        return order.id; }`,
    }[kind];
    const record = { tag, kind, start: Date.now(), end: null, result: undefined, error: null, settled: 0 };
    calls.push(record);
    record.done = client.callTool({ name: kind === 'search' ? 'search' : 'execute', arguments: { code } },
      undefined, { timeout: kCallTimeoutMs }).then(
      (result) => { record.result = result; },
      (error) => { record.error = error; },
    ).finally(() => {
      record.end = Date.now();
      record.settled += 1;
      clientSignal.poke();
    });
    return record;
  }

  // --- Steady load: short calls back to back, search and execute alternating, from kWorkers
  // clients. A gate holds them while the wave of long calls is placed.
  const clients = await Promise.all(Array.from({ length: kWorkers + 1 }, connectClient));
  t.after(() => Promise.all(clients.map((c) => c.close())));
  let gateOpen = true;
  let stopLoad = false;
  let shortInFlight = 0;
  const workers = clients.slice(1).map(async (client, w) => {
    for (let i = 0; !stopLoad; ++i) {
      if (!gateOpen) {
        await clientSignal.until(() => gateOpen || stopLoad, 'the gate to open');
        continue;
      }
      ++shortInFlight;
      await call(client, (i + w) % 2 === 0 ? 'search' : 'get').done;
      --shortInFlight;
      clientSignal.poke();
    }
  });
  const completed = () => calls.filter((c) => c.settled).length;
  await clientSignal.until(() => completed() >= 60, '60 calls before the wave');

  // --- The wave: with the short calls held, kWave long calls are placed and each replica's
  // count of requests received says how many of them it runs.
  gateOpen = false;
  await clientSignal.until(() => shortInFlight === 0, 'the short calls to finish');
  const before = replicas.map((r) => r.posts);
  const wave = Array.from({ length: kWave }, () => call(clients[0], 'long'));
  await replicaSignal.until(() => replicas.reduce((n, r, i) => n + r.posts - before[i], 0) >= kWave,
    'every long call to reach a replica');
  const running = replicas.map((r, i) => r.posts - before[i]);
  assert.equal(running.reduce((a, b) => a + b), kWave, `requests besides the wave arrived: ${running}`);
  // Round robin gives each replica two; whatever it gave, the killed and the drained replica
  // must each run at least one long call.
  const order = [0, 1, 2].sort((a, b) => running[b] - running[a]);
  const [killed, drained] = order.map((i) => replicas[i]);
  const survivor = replicas[order[2]];
  assert.ok(running[order[1]] >= 1, `long calls per replica: ${running}`);

  gateOpen = true;
  clientSignal.poke();
  const killedAt = Date.now();
  killed.proc.kill('SIGKILL');
  await clientSignal.until(() => calls.filter((c) => c.settled && c.start > killedAt).length >= 10,
    '10 calls after the kill');
  assert.ok(wave.every((c) => !c.settled || c.error), 'a long call ended before the drain began');
  const drainedAt = Date.now();
  drained.proc.kill('SIGTERM');
  await clientSignal.until(() => calls.filter((c) => c.settled && c.start > drainedAt).length >= kCallsAfterDrain,
    `${kCallsAfterDrain} calls after the drain`, 30000);
  await clientSignal.until(() => wave.every((c) => c.settled), 'the long calls to end');
  stopLoad = true;
  clientSignal.poke();
  await Promise.all(workers);
  const [drainedCode, drainedSignal] = await drained.exited;
  const ended = Date.now();

  // --- What nginx saw, once it has stopped (every access-log line written).
  assert.deepEqual(await nginx.stop(), { code: 0, signal: null }, nginx.errorLog());
  const log = nginx.accessLog();
  const byTag = new Map();
  for (const line of log.filter((l) => l.tag !== null)) {
    assert.ok(!byTag.has(line.tag), `call ${line.tag} has two access-log lines`);
    byTag.set(line.tag, line);
  }

  // Exactly one answer per call, none hung, each in the access log once.
  for (const c of calls) {
    assert.equal(c.settled, 1, `call ${c.tag} settled ${c.settled} times`);
    assert.ok(byTag.has(c.tag), `call ${c.tag} is not in nginx's access log`);
    assert.ok(!/timed out/i.test(c.error?.message ?? ''), `call ${c.tag} hung: ${c.error?.message}`);
  }
  const failed = calls.filter((c) => c.error || c.result?.isError);
  const onKilled = wave.filter((c) => byTag.get(c.tag).upstreams.at(-1) === killed.addr);
  const killedFailures = log.filter((l) => l.upstreams.includes(killed.addr) &&
    (l.upstreamStatuses[l.upstreams.indexOf(killed.addr)] ?? 0) >= 500);
  const killedSeenGone = Math.min(...killedFailures.map((l) => l.end));

  // The calls running on the killed replica, and only they, end in an error: nginx's 502 after
  // the connection broke, never resent to another replica. They are the long calls it ran, and
  // any short call whose request reached it in the moments it took to die.
  assert.equal(onKilled.length, running[order[0]]);
  const report = failed.map((c) => `${c.tag}: ${c.error?.message ?? c.result.content[0].text}`).join('\n');
  for (const c of onKilled) assert.ok(failed.includes(c), `long call ${c.tag} on the killed replica was answered`);
  for (const c of failed) {
    const line = byTag.get(c.tag);
    assert.equal(c.error?.code, 502, report);
    assert.deepEqual(line.upstreams, [killed.addr], `call ${c.tag} failed elsewhere:\n${report}`);
    assert.ok(c.start <= killedSeenGone && c.end >= killedAt, `call ${c.tag} was not running at the kill`);
  }

  // Every other call has its right result, those on the drained replica included.
  for (const c of calls.filter((x) => !failed.includes(x))) {
    const expected = { search: 11, get: 2 }[c.kind];
    if (c.kind === 'long') assert.match(c.result.structuredContent.result, /^ord_\d{4}$/);
    else assert.equal(c.result.structuredContent.result, expected, `call ${c.tag}`);
  }
  const onDrained = wave.filter((c) => byTag.get(c.tag).upstreams.at(-1) === drained.addr);
  assert.equal(onDrained.length, running[order[1]]);
  assert.ok(onDrained.every((c) => c.result && c.end > drainedAt), 'a drained call was lost');
  assert.deepEqual([drainedCode, drainedSignal], [0, null], drained.stderr.slice(-2000));

  // No call ran twice: the orders placed are those answered plus at most one per killed call.
  const answered = wave.filter((c) => c.result).map((c) => c.result.structuredContent.result);
  assert.equal(new Set(answered).size, answered.length);
  const res = await fetch(`${fixture.origin}/orders?customer_id=cust_001&limit=100`,
    { headers: { Authorization: `Bearer ${fixture.token}` } });
  const placed = (await res.json()).items.filter((o) => o.items.some((i) => i.product_id === kLongProduct) &&
    Number(o.id.slice(4)) > 15).map((o) => o.id);
  for (const id of answered) assert.ok(placed.includes(id), `${id} was answered but not placed`);
  const killedLong = failed.filter((c) => c.kind === 'long').length;
  assert.ok(placed.length <= answered.length + killedLong,
    `${placed.length} orders for ${answered.length} answered and ${killedLong} killed calls`);

  // nginx stops sending to both: after each one's first failed attempt, no request tries it,
  // and every call that started after the drain ran on the survivor.
  for (const gone of [killed, drained]) {
    const attempts = (l) => l.upstreams.map((u, i) => [u, l.upstreamStatuses[i]]).filter(([u]) => u === gone.addr);
    const failures = log.filter((l) => attempts(l).some(([, status]) => status === 502 || status === 504));
    const firstFailure = Math.min(...failures.map((l) => l.end));
    const later = log.filter((l) => l.start > firstFailure && attempts(l).length > 0);
    assert.deepEqual(later, [], `nginx kept sending to ${gone.addr}`);
  }
  const afterDrain = calls.filter((c) => c.start > drainedAt + 50);
  assert.ok(afterDrain.length >= kCallsAfterDrain);
  for (const c of afterDrain) assert.equal(byTag.get(c.tag).upstreams.at(-1), survivor.addr, `call ${c.tag}`);

  // The shared audit store: one record per call a replica answered, on that replica's chain, and
  // no call recorded twice; every chain verifies. (The killed replica's records still queued in
  // its writer died with it: at most one per call there.)
  const reader = (args) => spawnSync(BIN, ['audit', '--config', config, ...args],
    { env: { ...process.env, REPLICA_NAME: 'reader' }, encoding: 'utf8', timeout: 30000 });
  const verify = reader(['verify']);
  assert.equal(verify.status, 0, `audit verify:\n${verify.stdout}${verify.stderr}`);
  const queried = reader(['query', '--kind', 'call', '--limit', '1000000']);
  assert.equal(queried.status, 0, queried.stderr);
  const recorded = new Map();
  for (const line of queried.stdout.split('\n').filter(Boolean)) {
    const record = JSON.parse(line);
    const tag = /\/\* fleet (\d+) \*\//.exec(record.code ?? '')?.[1];
    if (tag === undefined) continue;
    assert.ok(!recorded.has(tag), `call ${tag} recorded twice`);
    recorded.set(tag, record.server);
  }
  for (const c of calls.filter((x) => x.result)) {
    const answeredBy = byTag.get(c.tag).upstreams.at(-1);
    if (answeredBy === killed.addr) continue;
    assert.equal(recorded.get(c.tag), `replica-${answeredBy.split(':')[0]}`, `call ${c.tag}'s audit record`);
  }
  for (const r of replicas) {
    assert.ok([...recorded.values()].includes(`replica-${r.host}`), `no record from ${r.addr}`);
  }

  const resent = log.filter((l) => l.upstreamStatuses.includes(503)).length;
  const refused = log.filter((l) => l.upstreams.length > 1).length - resent;
  t.diagnostic(`fleet: ${calls.length} calls in ${((ended - started) / 1000).toFixed(1)} s; ` +
    `${failed.length} errored on the SIGKILL (${killedLong} long, ${failed.length - killedLong} short), ` +
    `${onDrained.length} long calls answered by the drained replica after SIGTERM; nginx retried ` +
    `${refused} after a refused connect and resent ${resent} refused with 503 by the draining replica; ` +
    `${recorded.size} calls in the shared audit store`);
});
