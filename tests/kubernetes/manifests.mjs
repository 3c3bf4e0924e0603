// Checks deploy/kubernetes/ without a cluster: the kustomization's resources and generators,
// every object against the Kubernetes API schemas, and the references between the objects.
//
// The schemas come from `kubernetes-models` (generated from the Kubernetes OpenAPI document):
// its ajv validators check types, required fields, enums and formats, and its TypeScript
// declarations of the same schemas, compiled with excess-property checks, reject fields the
// API does not know (the validators let `readinesProbe` through; `kubectl apply` refuses it).
// kustomize itself is a Go program that Debian 12 does not package (its kubectl 1.20 is too
// old to matter), so the generators are expanded here the way kustomize documents them.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join, dirname, basename } from 'node:path';
import { createRequire } from 'node:module';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import ts from 'typescript';

const require = createRequire(import.meta.url);

// The kustomization keys this directory uses; anything else is a typo or needs a check here.
const kKustomizationKeys = new Set(['apiVersion', 'kind', 'namespace', 'resources',
  'configMapGenerator', 'secretGenerator', 'images']);

// Where kubernetes-models keeps a kind: core kinds under `v1`, the others under group/version.
function modelPath({ apiVersion, kind }) {
  return `kubernetes-models/${apiVersion}/${kind}`;
}

// Reads kustomization.yaml and its files; returns {kustomization, objects, problems}, where
// objects are {source, object} in the order kustomize would emit them (generated ones first).
// `secretsEnv` stands in for secrets.env, which is never committed.
export function loadKustomization(dir, { secretsEnv = 'secrets.env.example', kustomization } = {}) {
  const problems = [];
  const k = kustomization ?? parseYaml(readFileSync(join(dir, 'kustomization.yaml'), 'utf8'));
  for (const key of Object.keys(k)) {
    if (!kKustomizationKeys.has(key)) problems.push(`kustomization.yaml: unexpected key ${key}`);
  }
  if (k.apiVersion !== 'kustomize.config.k8s.io/v1beta1' || k.kind !== 'Kustomization') {
    problems.push('kustomization.yaml: not a kustomize.config.k8s.io/v1beta1 Kustomization');
  }
  const resources = k.resources ?? [];
  const seen = new Set();
  for (const file of resources) {
    if (seen.has(file)) problems.push(`kustomization.yaml: ${file} listed twice`);
    seen.add(file);
    if (file !== basename(file)) problems.push(`kustomization.yaml: ${file} is not in ${dir}`);
    if (!existsSync(join(dir, file))) problems.push(`kustomization.yaml: ${file} does not exist`);
  }
  for (const file of readdirSync(dir)) {
    if (/\.ya?ml$/.test(file) && file !== 'kustomization.yaml' && !seen.has(file)) {
      problems.push(`kustomization.yaml: ${file} is not listed in resources`);
    }
  }

  const objects = [];
  for (const generator of k.configMapGenerator ?? []) {
    const data = {};
    for (const file of generator.files ?? []) {
      if (!existsSync(join(dir, file))) {
        problems.push(`configMapGenerator ${generator.name}: ${file} does not exist`);
        continue;
      }
      data[basename(file)] = readFileSync(join(dir, file), 'utf8');
    }
    objects.push({ source: `configMapGenerator ${generator.name}`, object: {
      apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name }, data } });
  }
  for (const generator of k.secretGenerator ?? []) {
    const data = {};
    for (const file of generator.envs ?? []) {
      const path = join(dir, file === 'secrets.env' ? secretsEnv : file);
      if (!existsSync(path)) {
        problems.push(`secretGenerator ${generator.name}: ${basename(path)} does not exist`);
        continue;
      }
      for (const [key, value] of Object.entries(readEnvFile(path))) {
        data[key] = Buffer.from(value).toString('base64');
      }
    }
    objects.push({ source: `secretGenerator ${generator.name}`, object: {
      apiVersion: 'v1', kind: 'Secret', metadata: { name: generator.name }, type: 'Opaque', data } });
  }
  for (const file of resources) {
    if (!existsSync(join(dir, file))) continue;
    parseAllDocuments(readFileSync(join(dir, file), 'utf8')).forEach((doc, i) => {
      if (doc.errors.length > 0) {
        problems.push(`${file} document ${i + 1}: ${doc.errors[0].message}`);
      } else if (doc.contents !== null) {
        objects.push({ source: `${file} document ${i + 1}`, object: doc.toJS() });
      }
    });
  }
  return { kustomization: k, objects, problems };
}

// KEY=VALUE lines as kustomize's `envs` reads them: # comments and blank lines skipped.
export function readEnvFile(path) {
  const out = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const text = line.trim();
    if (text === '' || text.startsWith('#')) continue;
    const eq = text.indexOf('=');
    out[eq < 0 ? text : text.slice(0, eq)] = eq < 0 ? '' : text.slice(eq + 1);
  }
  return out;
}

// The ajv validators of kubernetes-models: one problem line per error.
export async function schemaProblems(objects) {
  const problems = [];
  for (const { source, object } of objects) {
    if (typeof object?.apiVersion !== 'string' || typeof object?.kind !== 'string') {
      problems.push(`${source}: no apiVersion or kind`);
      continue;
    }
    let Model;
    try {
      Model = (await import(modelPath(object)))[object.kind];
    } catch {
      problems.push(`${source}: ${object.apiVersion} ${object.kind} is not a Kubernetes API kind`);
      continue;
    }
    try {
      new Model(object).validate();
    } catch (err) {
      problems.push(`${source}: ${err.message}`);
    }
  }
  return problems;
}

// Fields the API does not know: each object as a TypeScript object literal typed with the
// kubernetes-models interface of its kind, compiled with TypeScript's excess-property checks.
export function unknownFieldProblems(objects) {
  const here = dirname(new URL(import.meta.url).pathname);
  const file = join(here, '__manifests__.ts');  // virtual: never written
  const lines = [];
  const owners = [];  // line number -> source
  objects.forEach(({ source, object }, i) => {
    if (typeof object?.apiVersion !== 'string' || typeof object?.kind !== 'string') return;
    try {
      require.resolve(modelPath(object));
    } catch {
      return;  // schemaProblems reports unknown kinds
    }
    lines.push(`import type { I${object.kind} as T${i} } from ${JSON.stringify(modelPath(object))};`);
    owners[lines.length - 1] = source;
    for (const part of `export const m${i}: T${i} = ${JSON.stringify(object, null, 1)};`.split('\n')) {
      lines.push(part);
      owners[lines.length - 1] = source;
    }
  });
  const text = lines.join('\n');
  const options = { strict: true, noEmit: true, module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022,
    types: [], skipLibCheck: true };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) => name === file
    ? ts.createSourceFile(name, text, version) : getSourceFile.call(host, name, version, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? text : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const where = d.file?.fileName === file
      ? owners[d.file.getLineAndCharacterOfPosition(d.start).line] : d.file?.fileName;
    return `${where ?? 'typescript'}: ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`;
  });
}

// ${NAME} references without a fallback, in the config's expansion syntax (config/expand.cpp):
// `$$` is a literal `$`, `${NAME:-fallback}` needs no variable.
export function requiredVariables(text) {
  const out = new Set();
  for (const m of text.matchAll(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}/g)) {
    if (m[1] && !m[2]) out.add(m[1]);
  }
  return out;
}

function matches(selector, labels) {
  return Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}

// What a cluster would only find at run time: the objects must refer to one another, and the
// pod must keep the properties the deployment docs promise.
export function referenceProblems(objects) {
  const problems = [];
  const of = (kind) => objects.map((o) => o.object).filter((o) => o.kind === kind);
  const [deployment] = of('Deployment');
  if (!deployment || of('Deployment').length !== 1) return ['expected exactly one Deployment'];
  const pod = deployment.spec?.template ?? {};
  const labels = pod.metadata?.labels ?? {};
  const container = pod.spec?.containers?.[0] ?? {};
  const check = (ok, what) => { if (!ok) problems.push(what); };

  check(matches(deployment.spec?.selector?.matchLabels, labels) &&
        Object.keys(deployment.spec?.selector?.matchLabels ?? {}).length > 0,
        'Deployment: selector does not match its pod labels');
  const args = container.args ?? [];
  const arg = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  const port = container.ports?.find((p) => p.name === 'http');
  check(port && arg('--http') === `0.0.0.0:${port.containerPort}`,
        'Deployment: --http does not listen on the http container port');
  check(args.includes('--http-stateless'), 'Deployment: not --http-stateless');
  check(arg('--require-sandbox-layers') === 'all', 'Deployment: not --require-sandbox-layers all');
  check(container.readinessProbe?.httpGet?.path === '/readyz' &&
        container.readinessProbe?.httpGet?.port === 'http', 'Deployment: readiness is not /readyz');
  check(container.livenessProbe?.httpGet?.path === '/healthz' &&
        container.livenessProbe?.httpGet?.port === 'http', 'Deployment: liveness is not /healthz');

  const podSecurity = pod.spec?.securityContext ?? {};
  const security = container.securityContext ?? {};
  check(podSecurity.runAsNonRoot === true && security.runAsNonRoot === true,
        'Deployment: runAsNonRoot is not set');
  check(security.readOnlyRootFilesystem === true, 'Deployment: root filesystem is writable');
  check(security.allowPrivilegeEscalation === false, 'Deployment: privilege escalation allowed');
  check(JSON.stringify(security.capabilities?.drop) === '["ALL"]' && !security.capabilities?.add,
        'Deployment: capabilities are not all dropped');
  check(podSecurity.seccompProfile?.type === 'Localhost' &&
        podSecurity.seccompProfile?.localhostProfile === 'codemode-mcp/seccomp.json' &&
        !security.seccompProfile, 'Deployment: seccomp is not the Localhost profile');
  check(pod.spec?.automountServiceAccountToken === false,
        'Deployment: mounts a service account token');

  // The config file and the secret the container names are the generated ones.
  const mounts = Object.fromEntries((container.volumeMounts ?? []).map((m) => [m.name, m]));
  const volumes = Object.fromEntries((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  const configMaps = Object.fromEntries(of('ConfigMap').map((c) => [c.metadata?.name, c]));
  const secrets = Object.fromEntries(of('Secret').map((s) => [s.metadata?.name, s]));
  const config = arg('--config') ?? '';
  const configMount = Object.values(mounts).find((m) => config.startsWith(`${m.mountPath}/`));
  const configMap = configMaps[volumes[configMount?.name]?.configMap?.name];
  const configText = configMap?.data?.[config.slice((configMount?.mountPath.length ?? 0) + 1)];
  check(configText !== undefined, `Deployment: --config ${config} is not a key of a ConfigMap`);
  const secretNames = (container.envFrom ?? []).map((e) => e.secretRef?.name).filter(Boolean);
  check(secretNames.length > 0 && secretNames.every((n) => secrets[n]),
        'Deployment: envFrom names no generated Secret');
  for (const [name, volume] of Object.entries(volumes)) {
    check(mounts[name], `Deployment: volume ${name} is not mounted`);
    if (volume.configMap) check(configMaps[volume.configMap.name], `Deployment: volume ${name} names no ConfigMap`);
  }
  if (configText !== undefined) {
    const config = JSON.parse(configText);
    check(configMap.data[config.openapi] !== undefined,
          `ConfigMap: the config's openapi ${config.openapi} is not beside it`);
    const provided = new Set(secretNames.flatMap((n) => Object.keys(secrets[n]?.data ?? {})));
    for (const name of requiredVariables(configText)) {
      check(provided.has(name), `config.json: \${${name}} is in no Secret the container reads`);
    }
    for (const name of provided) {
      check(requiredVariables(configText).has(name), `Secret: ${name} is not used by config.json`);
    }
  }

  for (const service of of('Service')) {
    check(matches(service.spec?.selector, labels) && Object.keys(service.spec?.selector ?? {}).length,
          `Service ${service.metadata?.name}: selector does not match the pods`);
    check(service.spec?.sessionAffinity !== 'ClientIP', `Service ${service.metadata?.name}: affinity`);
    for (const p of service.spec?.ports ?? []) {
      check(container.ports?.some((c) => c.name === p.targetPort || c.containerPort === p.targetPort),
            `Service ${service.metadata?.name}: targetPort ${p.targetPort} is no container port`);
    }
  }
  for (const hpa of of('HorizontalPodAutoscaler')) {
    const ref = hpa.spec?.scaleTargetRef ?? {};
    check(ref.kind === 'Deployment' && ref.apiVersion === 'apps/v1' &&
          ref.name === deployment.metadata?.name, 'HorizontalPodAutoscaler: not the Deployment');
    check(container.resources?.requests?.cpu !== undefined,
          'HorizontalPodAutoscaler: CPU utilisation needs a CPU request');
  }
  for (const pdb of of('PodDisruptionBudget')) {
    check(matches(pdb.spec?.selector?.matchLabels, labels), 'PodDisruptionBudget: selector');
  }
  return problems;
}

// Everything above, in one list.
export async function allProblems(dir, options) {
  const { objects, problems } = loadKustomization(dir, options);
  return [...problems, ...await schemaProblems(objects), ...unknownFieldProblems(objects),
    ...referenceProblems(objects)];
}
