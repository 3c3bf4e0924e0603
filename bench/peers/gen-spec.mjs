// Deterministic synthetic OpenAPI 3.0 document of about 1,000,000 bytes: 830 paths and 830
// component schemas (the shape the V8 probe in shared/notes used: 1 MB, ~832 paths/schemas).
// No randomness: names and sizes come from the index, so every run writes the same bytes.
//
//   node bench/peers/gen-spec.mjs OUT.json      (also importable: generateSpec())
import { writeFileSync } from 'node:fs';

const RESOURCES = ['items', 'orders', 'users', 'accounts', 'invoices', 'teams', 'projects', 'files',
  'events', 'webhooks', 'reports', 'tickets', 'products', 'carts', 'payments', 'shipments'];
const TYPES = ['string', 'integer', 'number', 'boolean'];

export function generateSpec(count = 830) {
  const paths = {};
  const schemas = {};
  for (let i = 0; i < count; i++) {
    const resource = RESOURCES[i % RESOURCES.length];
    const name = `${resource[0].toUpperCase()}${resource.slice(1, -1)}${i}`;
    const properties = {};
    for (let p = 0; p < 4; p++) {
      properties[`field_${p}_${(i * 7 + p) % 97}`] = {
        type: TYPES[(i + p) % TYPES.length],
        description: `Field ${p} of ${name} (synthetic).`,
      };
    }
    properties.owner = { $ref: `#/components/schemas/${RESOURCES[(i + 3) % RESOURCES.length].slice(0, 1).toUpperCase()}${RESOURCES[(i + 3) % RESOURCES.length].slice(1, -1)}${(i + 3) % count}` };
    schemas[name] = { type: 'object', required: ['field_0_' + (i * 7) % 97], properties };
    const ref = { $ref: `#/components/schemas/${name}` };
    paths[`/v1/${resource}/group${Math.floor(i / RESOURCES.length)}/{id}`] = {
      get: {
        operationId: `get${name}`, summary: `Get one ${resource.slice(0, -1)} of group ${Math.floor(i / RESOURCES.length)}`,
        tags: [resource],
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'expand', in: 'query', required: false, schema: { type: 'boolean' } },
        ],
        responses: { 200: { description: 'OK', content: { 'application/json': { schema: ref } } }, 404: { description: 'Not found' } },
      },
      put: {
        operationId: `put${name}`, summary: `Replace one ${resource.slice(0, -1)}`, tags: [resource],
        requestBody: { required: true, content: { 'application/json': { schema: ref } } },
        responses: { 200: { description: 'OK', content: { 'application/json': { schema: ref } } } },
      },
    };
  }
  return { openapi: '3.0.3', info: { title: 'Synthetic benchmark API', version: '1.0.0' },
    servers: [{ url: 'https://api.example.com' }], paths, components: { schemas } };
}

if (process.argv[1] && process.argv[1].endsWith('gen-spec.mjs')) {
  const text = JSON.stringify(generateSpec());
  if (process.argv[2]) writeFileSync(process.argv[2], text);
  const doc = JSON.parse(text);
  console.log(`${text.length} bytes, ${Object.keys(doc.paths).length} paths, ${Object.keys(doc.components.schemas).length} schemas, ${Object.keys(doc.paths).filter((p) => p.includes('/items')).length} /items paths`);
}
