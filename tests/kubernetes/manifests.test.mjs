// deploy/kubernetes/ against the Kubernetes API schemas, no cluster needed (manifests.mjs says
// how), and its config against the real binary. Each kind of check is also shown to reject a
// manifest broken on purpose, so a check that silently passes everything fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, copyFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parse as parseYaml } from 'yaml';
import { allProblems, loadKustomization, schemaProblems, unknownFieldProblems,
  referenceProblems, readEnvFile } from './manifests.mjs';

const SOURCE_DIR = process.env.CODEMODE_SOURCE_DIR;
const BIN = process.env.CODEMODE_BIN;
const DIR = join(SOURCE_DIR, 'deploy/kubernetes');

function shipped() {
  return loadKustomization(DIR).objects;
}
function withDeployment(change) {
  const objects = structuredClone(shipped());
  change(objects.find((o) => o.object.kind === 'Deployment').object);
  return objects;
}
const containerOf = (d) => d.spec.template.spec.containers[0];

test('every object the kustomization builds is valid and they refer to one another', async () => {
  const { objects } = loadKustomization(DIR);
  assert.deepEqual(objects.map((o) => o.object.kind).sort(),
    ['ConfigMap', 'Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Secret',
      'Service']);
  assert.deepEqual(await allProblems(DIR), []);
});

test('the schema check rejects wrong types, missing fields and unknown kinds', async () => {
  const broken = withDeployment((d) => {
    d.spec.replicas = 'three';
    delete d.spec.selector;
  });
  const problems = (await schemaProblems(broken)).join('\n');
  assert.match(problems, /spec\/replicas must be integer/);
  assert.match(problems, /must have required property 'selector'|required property selector/);
  const unknown = await schemaProblems([{ source: 'x', object: { apiVersion: 'apps/v1', kind: 'Deploymnet' } }]);
  assert.match(unknown.join('\n'), /Deploymnet is not a Kubernetes API kind/);
});

test('the field check rejects fields the API does not know, at any depth', () => {
  // TypeScript stops at an object's first unknown field: one misspelling per object here.
  const probe = withDeployment((d) => {
    containerOf(d).readinesProbe = containerOf(d).readinessProbe;
  });
  assert.match(unknownFieldProblems(probe).join('\n'),
    /deployment\.yaml document 1: .*'"readinesProbe"' does not exist in type 'IContainer'/);
  const deep = withDeployment((d) => {
    containerOf(d).securityContext.readOnlyRootFileSystem = true;
  });
  assert.match(unknownFieldProblems(deep).join('\n'),
    /'"readOnlyRootFileSystem"' does not exist in type 'ISecurityContext'/);
  const typed = withDeployment((d) => { containerOf(d).ports[0].containerPort = [8080]; });
  assert.match(unknownFieldProblems(typed).join('\n'), /not assignable to type 'number'/);
});

test('the reference check rejects a pod that lost a promised property or a broken reference', () => {
  const cases = [
    [(d) => { containerOf(d).securityContext.readOnlyRootFilesystem = false; }, /root filesystem is writable/],
    [(d) => { containerOf(d).securityContext.allowPrivilegeEscalation = true; }, /privilege escalation/],
    [(d) => { containerOf(d).securityContext.capabilities = { drop: ['NET_RAW'] }; }, /capabilities/],
    [(d) => { d.spec.template.spec.securityContext.seccompProfile = { type: 'RuntimeDefault' }; }, /seccomp/],
    [(d) => { containerOf(d).args = containerOf(d).args.filter((a) => a !== '--http-stateless'); }, /stateless/],
    [(d) => { containerOf(d).args[1] = '0.0.0.0:9090'; }, /--http does not listen/],
    [(d) => { containerOf(d).readinessProbe.httpGet.path = '/healthz'; }, /readiness/],
    [(d) => { d.spec.template.spec.volumes[0].configMap.name = 'other'; }, /ConfigMap/],
    [(d) => { containerOf(d).envFrom[0].secretRef.name = 'other'; }, /Secret/],
    [(d) => { d.spec.template.metadata.labels = { app: 'x' }; }, /selector/],
  ];
  for (const [change, expected] of cases) {
    assert.match(referenceProblems(withDeployment(change)).join('\n'), expected, String(change));
  }
  // A ${VAR} the Secret does not carry.
  const objects = structuredClone(shipped());
  const secret = objects.find((o) => o.object.kind === 'Secret').object;
  delete secret.data.MARKETHUB_TOKEN;
  assert.match(referenceProblems(objects).join('\n'), /\$\{MARKETHUB_TOKEN\} is in no Secret/);
});

test('the kustomization check rejects missing, duplicate and unlisted resources', () => {
  const k = parseYaml(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8'));
  const resources = k.resources.filter((r) => r !== 'pdb.yaml');
  const broken = { ...k, resources: [...resources, 'service.yaml', 'ingress.yaml'], helmCharts: [] };
  const { problems } = loadKustomization(DIR, { kustomization: broken });
  assert.deepEqual(problems.sort(), [
    'kustomization.yaml: ingress.yaml does not exist',
    'kustomization.yaml: pdb.yaml is not listed in resources',
    'kustomization.yaml: service.yaml listed twice',
    'kustomization.yaml: unexpected key helmCharts',
  ]);
});

test('the OpenAPI document in the ConfigMap is the MarketHub fixture\'s', () => {
  assert.equal(readFileSync(join(DIR, 'openapi.json'), 'utf8'),
    readFileSync(join(SOURCE_DIR, 'fixtures/markethub/openapi.json'), 'utf8'));
});

// The ConfigMap's files as the pod sees them, served by the real binary with the Secret's keys
// in the environment; with the example's empty values it refuses to start.
async function serveConfig(env) {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-k8s-'));
  for (const file of ['config.json', 'openapi.json']) copyFileSync(join(DIR, file), join(dir, file));
  const proc = spawn(BIN, ['--http', '127.0.0.1:0', '--http-stateless', '--config', join(dir, 'config.json')],
    { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const exited = once(proc, 'exit');
  const listening = new Promise((resolve) => {
    proc.stderr.on('data', (d) => {
      stderr += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)\/mcp \(stateless\)/.exec(stderr);
      if (m) resolve(m[1]);
    });
  });
  const timer = setTimeout(() => proc.kill('SIGKILL'), 15000);
  const base = await Promise.race([listening, exited.then(() => null)]);
  // An answer from /readyz: the server is serving, and SIGTERM is its drain from then on.
  const started = base !== null && (await fetch(`${base}/readyz`)).status === 200;
  if (base !== null) proc.kill('SIGTERM');
  const [code] = await exited;
  clearTimeout(timer);
  return { started, code, stderr };
}

test('the shipped config starts the server with the Secret\'s keys set, and not without', async () => {
  const keys = Object.keys(readEnvFile(join(DIR, 'secrets.env.example')));
  const filled = Object.fromEntries(keys.map((k) => [k, randomBytes(32).toString('hex')]));
  const good = await serveConfig(filled);
  assert.equal(good.started, true, good.stderr);
  assert.equal(good.code, 0, good.stderr);
  for (const value of Object.values(filled)) assert.ok(!good.stderr.includes(value), 'a secret was logged');

  const empty = await serveConfig(readEnvFile(join(DIR, 'secrets.env.example')));
  assert.equal(empty.started, false);
  assert.equal(empty.code, 2, empty.stderr);
  assert.match(empty.stderr, /http\.tokens\[0\]\.token: is empty after environment variable expansion/);
});
