// A fixture upstream: a node http server on 127.0.0.1, port 0, that checks a bearer token and
// hands each request, its query and its parsed body (JSON or form-encoded, as the real APIs
// accept both) to a handler. Every request is recorded so a test can say what reached the API.
import { createServer } from 'node:http';

// Deterministic pseudo-random numbers (mulberry32): the same seed gives the same data on every
// machine, so the tasks' expected answers are literals.
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pick(rand, list) { return list[Math.floor(rand() * list.length)]; }

// An id of `length` characters from [0-9A-Za-z], as Stripe's and Slack's ids look.
export function token(rand, length, alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz') {
  let out = '';
  for (let i = 0; i < length; i += 1) out += alphabet[Math.floor(rand() * alphabet.length)];
  return out;
}

function parseBody(type, text) {
  if (!text) return {};
  if (/json/i.test(type ?? '')) {
    try { return JSON.parse(text); } catch { return { __invalid: text }; }
  }
  return Object.fromEntries(new URLSearchParams(text));
}

// Starts `handle({method, path, query, body, headers}) → {status, body, headers?}` (a string
// body is sent as text/html, anything else as JSON). With `anonymous`, a request without
// credentials is served too (GitHub serves public repositories so); a wrong one never is.
// Resolves {origin, requests, stop}.
export async function serve({ token: expected, handle, unauthorized, anonymous = false }) {
  const requests = [];
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { text += d; });
    req.on('end', () => {
      const url = new URL(req.url, 'http://upstream');
      const entry = { method: req.method, path: url.pathname, query: url.search, body: text };
      requests.push(entry);
      let reply;
      if (req.headers.authorization !== `Bearer ${expected}` && !(anonymous && req.headers.authorization === undefined)) {
        reply = unauthorized();
      } else {
        try {
          reply = handle({ method: req.method, path: url.pathname, query: url.searchParams,
            body: parseBody(req.headers['content-type'], text), headers: req.headers });
        } catch (error) {
          reply = { status: 500, body: { error: String(error?.stack ?? error) } };
        }
      }
      entry.status = reply.status;
      const html = typeof reply.body === 'string';
      const payload = html ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status, {
        'content-type': html ? 'text/html; charset=utf-8' : 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(payload),
        ...reply.headers,
      });
      res.end(payload);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${server.address().port}`,
    requests,
    stop: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }),
  };
}
