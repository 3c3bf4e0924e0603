// A real nginx (Debian's) in front of codemode-mcp replicas: a generated config in a temporary
// directory, run in the foreground as a child of the test, listening on 127.0.0.1 only.
// README.md beside this file explains every proxy setting.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const NGINX = process.env.NGINX_BIN || '/usr/sbin/nginx';

// One access-log line per client request: when it ended, how long it took, the call's tag
// (X-Fleet-Call, set by the test's client), the status nginx answered, and every upstream it
// tried with that upstream's status ("127.0.0.3:PORT, 127.0.0.4:PORT" "502, 200").
const kLogFormat = String.raw`$msec $request_time "$http_x_fleet_call" $status "$upstream_addr" "$upstream_status"`;

export function nginxConfig({ dir, listen, upstreams, host }) {
  return `daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log notice;
events { worker_connections 1024; }
http {
  log_format fleet '${kLogFormat}';
  access_log ${dir}/access.log fleet;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;

  upstream codemode {
    # Passive health checks: one failed attempt (refused or timed-out connect, or an error
    # while reading the answer) takes the replica out for fail_timeout.
${upstreams.map((u) => `    server ${u} max_fails=1 fail_timeout=60s;`).join('\n')}
  }

  server {
    listen ${listen};
    # The replicas listen on loopback, where codemode-mcp checks Host against its own port
    # (DNS rebinding): every replica listens on the same port, so one Host fits all.
    proxy_set_header Host ${host};
    proxy_http_version 1.1;
    # Retry on another replica only when the request never reached one (connect refused or
    # timed out: a replica that is gone or draining has closed its listener). nginx never
    # resends a POST it has sent unless "non_idempotent" is listed, and it is not: a replica
    # killed mid-call may have run part of the call (an order placed) before it died.
    proxy_next_upstream error timeout;
    proxy_next_upstream_tries 3;
    proxy_next_upstream_timeout 5s;
    proxy_connect_timeout 1s;
    proxy_read_timeout 30s;
    # Progress notifications stream over SSE: pass bytes on as they come.
    proxy_buffering off;

    location / {
      proxy_pass http://codemode;
      # A draining replica answers a request that reached it after SIGTERM with 503 before
      # running anything ("unavailable: the server is shutting down"; the 512-connection limit
      # is the only other 503 on /mcp, also before anything runs). Such a POST is safe to send
      # once more, to another replica: nginx does so here, and only once.
      proxy_intercept_errors on;
      error_page 503 = @not_run_resend;
    }
    location @not_run_resend {
      proxy_pass http://codemode;
    }
  }
}
`;
}

// Resolves once 127.0.0.1:port accepts a connection (nginx has no readiness line to wait for),
// trying at most `ms` long.
async function acceptsConnections(port, ms) {
  const deadline = Date.now() + ms;
  for (let delay = 10; ; delay = Math.min(delay * 2, 200)) {
    const ok = await new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`nginx did not accept on 127.0.0.1:${port} within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

// Starts nginx on 127.0.0.1:port in front of `upstreams` ("IP:PORT"). Resolves {proc, dir,
// accessLog(), stop()}; rejects if nginx exits first (a port taken, say).
export async function startNginx({ port, upstreams, host }) {
  const dir = mkdtempSync(join(tmpdir(), 'codemode-fleet-nginx-'));
  chmodSync(dir, 0o755);  // run as root, nginx's workers are another user and open the temp dirs
  writeFileSync(join(dir, 'nginx.conf'), nginxConfig({ dir, listen: `127.0.0.1:${port}`, upstreams, host }));
  const proc = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'error.log')],
    { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = once(proc, 'exit');
  await Promise.race([
    acceptsConnections(port, 10000),
    exited.then(([code]) => {
      throw new Error(`nginx exited ${code}:\n${readFileSync(join(dir, 'error.log'), 'utf8')}`);
    }),
  ]);
  return {
    proc,
    dir,
    port,
    errorLog: () => readFileSync(join(dir, 'error.log'), 'utf8'),
    accessLog: () => parseAccessLog(readFileSync(join(dir, 'access.log'), 'utf8')),
    // SIGQUIT: nginx's graceful stop; every line of the access log is written by then.
    stop: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGQUIT');
      const [code, signal] = await exited;
      return { code, signal };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export function parseAccessLog(text) {
  return text.split('\n').filter(Boolean).map((line) => {
    const m = /^(\S+) (\S+) "([^"]*)" (\d+) "([^"]*)" "([^"]*)"$/.exec(line);
    if (!m) throw new Error(`unexpected access log line: ${line}`);
    const end = Number(m[1]) * 1000;
    return {
      end,
      start: end - Number(m[2]) * 1000,
      tag: m[3] === '-' ? null : m[3],
      status: Number(m[4]),
      // ", " between the replicas one request tried, " : " between those of an internal
      // redirect (the 503 resend) and the ones before it.
      upstreams: m[5] === '-' ? [] : m[5].split(/, | : /),
      upstreamStatuses: m[6] === '-' ? [] : m[6].split(/, | : /).map(Number),
    };
  });
}
