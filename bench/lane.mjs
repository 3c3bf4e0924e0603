// One benchmark lane: a keep-alive HTTP/1.1 connection that carries one POST at a time.
//
// The benchmarks' load generator shares the 2 CPUs with the systems it measures, so it should
// cost as little as it can, and the same for every system. node's http client spent ~0.4 ms of
// CPU per call here (its parser, agent, streams and events), a sixth of what a whole hello call
// cost codemode-mcp; this writes each request as one string and reads the answer from the
// socket's buffers (Content-Length or chunked), ~0.1 ms.
import net from 'node:net';

export class Lane {
  // `url`: where every request goes; `localAddress`: optional, to spread lanes over 127.0.0.x.
  constructor(url, localAddress) {
    const u = new URL(url);
    this.path = u.pathname + u.search;
    this.host = u.hostname;
    this.port = Number(u.port || 80);
    this.hostHeader = u.host;
    this.localAddress = localAddress;
    this.socket = null;
    this.pending = null;  // {resolve, reject} of the request in flight
    this.chunks = [];
    this.buffered = 0;
  }

  // Resolves {status, headers, body}: headers with lower-case names, body a string.
  post(body, headers = {}) {
    if (this.pending) return Promise.reject(new Error('a lane carries one request at a time'));
    let head = `POST ${this.path} HTTP/1.1\r\nhost: ${this.hostHeader}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.connect().write(head + '\r\n' + body);
    });
  }

  close() {
    this.socket?.destroy();
    this.socket = null;
  }

  connect() {
    if (this.socket) return this.socket;
    const socket = net.connect({ host: this.host, port: this.port, localAddress: this.localAddress });
    socket.setNoDelay(true);
    socket.on('data', (chunk) => {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
      this.tryFinish();
    });
    const fail = (error) => {
      if (this.socket === socket) this.socket = null;
      this.chunks = [];
      this.buffered = 0;
      const pending = this.pending;
      this.pending = null;
      pending?.reject(error ?? new Error('the server closed the connection'));
    };
    socket.on('error', fail);
    socket.on('close', () => fail());
    this.socket = socket;
    return socket;
  }

  // Completes the request in flight once its whole answer is buffered.
  tryFinish() {
    if (!this.pending) return;
    const data = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks, this.buffered);
    this.chunks = [data];
    const end = data.indexOf('\r\n\r\n');
    if (end < 0) return;
    const lines = data.toString('latin1', 0, end).split('\r\n');
    const status = Number(lines[0].split(' ')[1]);
    const headers = {};
    for (let i = 1; i < lines.length; i++) {
      const colon = lines[i].indexOf(':');
      headers[lines[i].slice(0, colon).trim().toLowerCase()] = lines[i].slice(colon + 1).trim();
    }
    let body;
    let consumed;
    if (headers['transfer-encoding']?.toLowerCase().includes('chunked')) {
      const parts = [];
      let at = end + 4;
      for (;;) {
        const lineEnd = data.indexOf('\r\n', at);
        if (lineEnd < 0) return;
        const size = parseInt(data.toString('latin1', at, lineEnd), 16);
        if (Number.isNaN(size)) return this.broken('a bad chunk size');
        if (size === 0) {
          const trailerEnd = data.indexOf('\r\n\r\n', lineEnd);
          if (trailerEnd < 0) return;
          consumed = trailerEnd + 4;
          break;
        }
        if (data.length < lineEnd + 2 + size + 2) return;
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(parts).toString('utf8');
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (data.length < end + 4 + length) return;
      body = data.toString('utf8', end + 4, end + 4 + length);
      consumed = end + 4 + length;
    }
    const rest = data.subarray(consumed);
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
    const { resolve } = this.pending;
    this.pending = null;
    if (headers.connection?.toLowerCase() === 'close') this.close();
    resolve({ status, headers, body });
  }

  broken(what) {
    const pending = this.pending;
    this.pending = null;
    this.close();
    pending?.reject(new Error(`unreadable HTTP answer: ${what}`));
  }
}
