// workerd peer: the parent Worker behind bench/compare's local HTTP hop. Each request loads the
// call's code as a brand-new Dynamic Worker with env.LOADER.load() (Worker Loader binding; load()
// never reuses an isolate, unlike get(id, ...)), with no network (globalOutbound: null) and no
// bindings. For the `spec` workload the document goes into the loaded Worker as a text module
// (`spec.json`, the parent's SPEC text binding) that the fresh isolate JSON.parses at startup.
// For the `io` workload the loaded Worker's globalOutbound is the UPSTREAM service (an external
// HTTP service, the bench's upstream and nothing else), so its fetch() goes there, whatever URL
// it names.
export default {
  async fetch(request, env) {
    const { code, workload } = await request.json();
    const withSpec = workload === 'spec';
    const main = (withSpec ? "import specText from 'spec.json';\nconst spec = JSON.parse(specText);\n" : '') +
      `const fn = (${code});\n` +
      'export default { async fetch() {\n' +
      '  try { return Response.json({ ok: true, result: await fn() }); }\n' +
      '  catch (e) { return Response.json({ ok: false, error: String(e) }); }\n' +
      '} };\n';
    const modules = { 'main.js': main };
    if (withSpec) modules['spec.json'] = { text: env.SPEC };
    const worker = env.LOADER.load({
      compatibilityDate: '2026-11-01',
      mainModule: 'main.js',
      modules,
      globalOutbound: workload === 'io' ? env.UPSTREAM : null,
    });
    return worker.getEntrypoint().fetch('http://sandbox/');
  },
};
