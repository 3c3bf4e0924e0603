// spec.describe(operation) in a search isolate: one operation of the spec as a compact
// TypeScript-style declaration (its parameters by place, request body, responses, and the named
// schemas they use, by their $ref names), so a model can write the execute call in one step.
// `operation` is an operationId or "GET /path". Not in the globals snapshot: the host compiles
// this file on a call's first spec.describe (isolate_runner.cpp, describe_callback), so no other
// call pays for it. The script's value is a factory of the map of $ref targets the spec view
// filled (js/bootstrap.js, specRefs); it returns the function, called with the spec as `this`.
(function (refs) {
  'use strict';
  const ObjectKeys = Object.keys;
  const ArrayIsArray = Array.isArray;
  const JSONStringify = JSON.stringify;
  const MapCtor = Map;
  const ErrorCtor = Error;
  const MapGet = Map.prototype.get;
  const call = Function.prototype.call.bind(Function.prototype.call);
  const kMethods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
  const kMaxNamed = 16;
  const kMaxDescribeChars = 8000;
  const kEntities = {amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' '};
  // A summary or description as one line of plain text: many documents write HTML (Stripe's
  // "<p>Creates a customer.</p>"), which is markup the model would read past; tags go, the
  // usual entities are decoded, and whitespace runs are one space.
  const toText = (text) => text
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(#\d+|#x[\da-f]+|[a-z]+);/gi, (entity, name) => {
      if (name[0] === '#') {
        const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : +name.slice(1);
        return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
      }
      return kEntities[name.toLowerCase()] ?? entity;
    })
    .replace(/\s+/g, ' ')
    .trim();
  function makeDescribe(spec) {
    const refName = (object) => {
      const pointer = refs ? call(MapGet, refs, object) : undefined;
      if (typeof pointer !== 'string') return undefined;
      const last = pointer.slice(pointer.lastIndexOf('/') + 1).replace(/~1/g, '/').replace(/~0/g, '~');
      return /^[A-Za-z_$][\w$]*$/.test(last) ? last : JSONStringify(last);
    };
    const findOperation = (name) => {
      const paths = spec.paths ?? {};
      const text = '' + name;
      const spaced = /^\s*([A-Za-z]+)\s+(\S+)\s*$/.exec(text);
      if (spaced) {
        const method = spaced[1].toLowerCase();
        const path = spaced[2];
        const item = paths[path];
        if (item && item[method]) return {method, path, item, op: item[method]};
      }
      const lower = text.toLowerCase();
      let loose = null;
      const near = [];
      for (const path of ObjectKeys(paths)) {
        const item = paths[path];
        if (item === null || typeof item !== 'object') continue;
        for (const method of kMethods) {
          const op = item[method];
          if (op === null || typeof op !== 'object' || typeof op.operationId !== 'string') continue;
          if (op.operationId === text) return {method, path, item, op};
          const id = op.operationId.toLowerCase();
          if (id === lower) loose = {method, path, item, op};
          else if (near.length < 5 && lower.length > 2 && id.includes(lower)) near.push(op.operationId);
        }
      }
      if (loose) return loose;
      throw new ErrorCtor('spec.describe: no operation ' + JSONStringify(text) +
                          ' (give an operationId or "GET /path")' +
                          (near.length ? '; similar: ' + near.join(', ') : ''));
    };
    return function describe(operation) {
      const {method, path, item, op} = findOperation(operation);
      const named = new MapCtor();  // name -> declaration text (null while being written)
      const pending = [];
      let more = 0;
      // `depth` is how far the braces nest, which sets the indentation: the members of a union
      // and the items of an array are written where the union or array is, not a level deeper.
      // `self`: the schema of the type being declared, which is not named after itself.
      const typeOf = (schema, depth, self = false) => {
        if (schema === null || typeof schema !== 'object') return 'unknown';
        if (typeof schema.$circular === 'string') {
          const last = schema.$circular.slice(schema.$circular.lastIndexOf('/') + 1);
          return /^[A-Za-z_$][\w$]*$/.test(last) ? last : 'unknown';
        }
        const name = self ? undefined : refName(schema);
        if (name !== undefined) {
          if (!named.has(name)) {
            if (named.size < kMaxNamed) {
              named.set(name, null);
              pending.push([name, schema]);
            } else {
              ++more;
              return name + ' /* not shown */';
            }
          }
          return name;
        }
        if (depth > 6) return 'object';
        let t;
        const union = schema.oneOf ?? schema.anyOf;
        if (ArrayIsArray(union)) {
          t = union.map((s) => typeOf(s, depth)).join(' | ');
        } else if (ArrayIsArray(schema.allOf)) {
          t = schema.allOf.map((s) => typeOf(s, depth)).join(' & ');
        } else if (ArrayIsArray(schema.enum)) {
          t = schema.enum.slice(0, 12).map((v) => JSONStringify(v)).join(' | ') +
              (schema.enum.length > 12 ? ' | …' : '');
        } else {
          const types = ArrayIsArray(schema.type) ? schema.type : [schema.type];
          t = types.map((type) => {
            switch (type) {
              case 'integer': case 'number': return 'number';
              case 'string': return schema.format ? 'string /* ' + schema.format + ' */' : 'string';
              case 'boolean': return 'boolean';
              case 'null': return 'null';
              case 'array': return (schema.items ? wrapUnion(typeOf(schema.items, depth)) : 'unknown') + '[]';
              default: return objectType(schema, depth);
            }
          }).join(' | ');
        }
        return schema.nullable === true ? t + ' | null' : t;
      };
      const wrapUnion = (t) => (/[|&]/.test(t) ? '(' + t + ')' : t);
      const indent = (depth) => '  '.repeat(depth + 1);
      const objectType = (schema, depth) => {
        const props = schema.properties;
        if (props === null || typeof props !== 'object' || ObjectKeys(props).length === 0) {
          const extra = schema.additionalProperties;
          if (extra && typeof extra === 'object') return 'Record<string, ' + typeOf(extra, depth) + '>';
          return schema.type === 'object' || extra ? 'Record<string, unknown>' : 'unknown';
        }
        const required = ArrayIsArray(schema.required) ? schema.required : [];
        const lines = ObjectKeys(props).map((key) => {
          const k = /^[A-Za-z_$][\w$]*$/.test(key) ? key : JSONStringify(key);
          return indent(depth) + k + (required.includes(key) ? '' : '?') + ': ' +
                 typeOf(props[key], depth + 1) + ';';
        });
        return '{\n' + lines.join('\n') + '\n' + indent(depth - 1) + '}';
      };
      const comment = (text) => {
        const plain = typeof text === 'string' ? toText(text) : '';
        return plain ? ' // ' + plain.slice(0, 100) : '';
      };
      const out = ['// ' + method.toUpperCase() + ' ' + path +
                   (op.operationId ? ' (operationId ' + op.operationId + ')' : '') +
                   comment(op.summary ?? op.description).replace(' //', ':')];
      const params = [...(ArrayIsArray(item.parameters) ? item.parameters : []),
                      ...(ArrayIsArray(op.parameters) ? op.parameters : [])];
      const request = [];
      for (const place of ['path', 'query', 'header', 'cookie']) {
        const here = params.filter((p) => p && p.in === place);
        if (!here.length) continue;
        const lines = here.map((p) => '    ' + (/^[A-Za-z_$][\w$]*$/.test(p.name) ? p.name : JSONStringify(p.name)) +
          (p.required ? '' : '?') + ': ' + typeOf(p.schema ?? {}, 2) + ';' + comment(p.description));
        request.push('  ' + place + (here.some((p) => p.required) ? '' : '?') + ': {\n' + lines.join('\n') + '\n  };');
      }
      const body = op.requestBody;
      if (body && typeof body === 'object' && body.content && typeof body.content === 'object') {
        const types = ObjectKeys(body.content);
        const media = types.find((m) => /json/i.test(m)) ?? types[0];
        if (media !== undefined) {
          request.push('  body' + (body.required ? '' : '?') + ': ' +
                       typeOf(body.content[media]?.schema ?? {}, 1) + '; // ' + media);
        }
      }
      out.push('type Request = {' + (request.length ? '\n' + request.join('\n') + '\n' : '') + '};');
      const responses = op.responses && typeof op.responses === 'object' ? op.responses : {};
      const lines = ObjectKeys(responses).map((status) => {
        const r = responses[status] ?? {};
        const content = r.content && typeof r.content === 'object' ? r.content : {};
        const types = ObjectKeys(content);
        const media = types.find((m) => /json/i.test(m)) ?? types[0];
        const key = /^\d+$/.test(status) ? status : JSONStringify(status);
        return '  ' + key + ': ' + (media === undefined ? 'void' : typeOf(content[media]?.schema ?? {}, 1)) +
               ';' + (media && !/json/i.test(media) ? ' // ' + media : comment(r.description));
      });
      out.push('type Responses = {\n' + lines.join('\n') + '\n};');
      let size = out.join('\n').length;
      while (pending.length) {
        const [name, schema] = pending.shift();
        const text = 'type ' + name + ' = ' + typeOf(schema, 0, true) + ';';
        if (size + text.length > kMaxDescribeChars) {
          ++more;
          continue;
        }
        size += text.length + 1;
        out.push(text);
      }
      if (more) out.push('// ' + more + ' more types not shown: read them with spec.components.schemas.NAME');
      return out.join('\n');
    };
  }
  return function describeOperation(operation) {
    if (this === null || typeof this !== 'object' || typeof this.paths !== 'object') {
      throw new TypeError('spec.describe: call it as spec.describe(operation)');
    }
    return makeDescribe(this)(operation);
  };
})
