// The upstream of bench/compare's I/O-bound workload: an HTTP API that answers every request
// after a fixed delay, in its own node process so that neither the harness's event loop nor a
// system under test ever runs it.
//
//   node bench/slow_upstream.mjs [--delay-ms 200]
//
// Any method and path -> after --delay-ms, 200 {"ok":true,"delay_ms":200} (Content-Length,
// keep-alive). It holds no state per request but a timer, so at 1,000 requests a second it
// spends a few percent of a core; bench/compare prints its CPU per row to show that.
// Prints `listening on http://127.0.0.1:PORT/` once it listens on an ephemeral loopback port.
import http from 'node:http';

const argv = process.argv.slice(2);
const opt = (name, fallback) => { const i = argv.indexOf(`--${name}`); return i >= 0 ? argv[i + 1] : fallback; };
const delayMs = Number(opt('delay-ms', 200));
const body = JSON.stringify({ ok: true, delay_ms: delayMs });
const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };

const server = http.createServer((req, res) => {
  req.resume(); // a request body, if any, is read and dropped
  setTimeout(() => {
    res.writeHead(200, headers);
    res.end(body);
  }, delayMs);
});
// Clients keep their connections between rows (tens of seconds apart); the server never closes
// an idle one first, so no client races a close.
server.keepAliveTimeout = 0;
server.requestTimeout = 0;
server.listen({ port: 0, host: '127.0.0.1', backlog: 2048 },
  () => console.log(`listening on http://127.0.0.1:${server.address().port}/`));
