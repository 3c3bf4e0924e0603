// A throwaway PostgreSQL server for the fleet's shared audit store: Debian's postgresql package
// (installed by `scripts/setup --tests`), initdb in a temporary directory, a Unix socket there
// and no TCP listener, trust authentication on that private socket. Run as the `postgres` user
// when the tests run as root (PostgreSQL refuses root).
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function binDir() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  const found = versions.map((v) => join(root, v, 'bin')).find((d) => existsSync(join(d, 'initdb')));
  if (!found) throw new Error('PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): run scripts/setup --tests');
  return found;
}

export function startPostgres() {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'codemode-fleet-pg-'));
  const asRoot = process.getuid() === 0;
  const wrap = (argv) => (asRoot ? ['runuser', '-u', 'postgres', '--', ...argv] : argv);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }));
    chownSync(dir, uid, gid);
  }
  const run = (argv) => {
    const [cmd, ...args] = wrap(argv);
    const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 60000 });
    if (r.status !== 0) throw new Error(`${argv.join(' ')}: ${r.error ?? ''}${r.stdout}${r.stderr}`);
  };
  const data = join(dir, 'data');
  run([join(bin, 'initdb'), '-D', data, '-U', 'postgres', '--auth=trust', '--no-sync']);
  const pgctl = (action, extra = []) => run([join(bin, 'pg_ctl'), '-D', data, '-w', '-t', '30',
    '-l', join(dir, 'log'), ...extra, action]);
  pgctl('start', ['-o', `-k ${dir} -c listen_addresses='' -p 5432 -c fsync=off`]);
  return {
    conninfo: `host=${dir} port=5432 user=postgres dbname=postgres`,
    stop() {
      try { pgctl('stop', ['-m', 'immediate']); } finally { rmSync(dir, { recursive: true, force: true }); }
    },
  };
}
