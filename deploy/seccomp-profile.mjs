// deploy/seccomp.json is Docker's default seccomp profile plus the rules the sandbox processes
// need, and nothing else. This makes and checks it from the engine's own default, as the engine
// hands it to runc (a container's OCI config.json, `linux.seccomp`), so nothing is copied by hand:
//   node deploy/seccomp-profile.mjs write CONFIG_JSON   rewrite deploy/seccomp.json
//   node deploy/seccomp-profile.mjs check CONFIG_JSON   exit 1 unless it is default + ours
// scripts/test-image runs `check` against the engine it starts, so a Docker update that changes
// the default shows up as a failing test instead of a silently different profile.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const PROFILE = fileURLToPath(new URL('./seccomp.json', import.meta.url));

// What isolate/lockdown.cpp calls that the default refuses, each narrowed to the arguments it
// passes. The flags are Linux's (sched.h, sys/mount.h).
const CLONE_NEWNS = 0x00020000;
const CLONE_NEWIPC = 0x08000000;
const CLONE_NEWUSER = 0x10000000;
const CLONE_NEWNET = 0x40000000;
const MS_NOSUID = 2, MS_NODEV = 4, MS_NOEXEC = 8, MS_REC = 0x4000, MS_PRIVATE = 0x40000;
const eq = (index, value) => ({ index, value, op: 'SCMP_CMP_EQ' });
export const SANDBOX_RULES = [
  {
    names: ['unshare'], action: 'SCMP_ACT_ALLOW',
    args: [eq(0, CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC)],
    comment: 'codemode-mcp sandbox: new user, network, mount and IPC namespaces (lockdown.cpp enter_namespaces)',
  },
  {
    names: ['unshare'], action: 'SCMP_ACT_ALLOW',
    args: [eq(0, CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC)],
    comment: 'codemode-mcp sandbox: the same without a user namespace, where the kernel refuses one',
  },
  {
    names: ['mount'], action: 'SCMP_ACT_ALLOW',
    args: [eq(3, MS_REC | MS_PRIVATE)],
    comment: 'codemode-mcp sandbox: make its new mount namespace private (lockdown.cpp empty_root)',
  },
  {
    names: ['mount'], action: 'SCMP_ACT_ALLOW',
    args: [eq(3, MS_NOSUID | MS_NODEV | MS_NOEXEC)],
    comment: 'codemode-mcp sandbox: the empty tmpfs it chroots into (lockdown.cpp empty_root)',
  },
  {
    names: ['chroot'], action: 'SCMP_ACT_ALLOW',
    comment: 'codemode-mcp sandbox: into that tmpfs; in the default only with CAP_SYS_CHROOT, ' +
             'which a pod that drops every capability does not have (the namespace grants it)',
  },
];

function engineDefault(configFile) {
  const config = JSON.parse(readFileSync(configFile, 'utf8'));
  const seccomp = config?.linux?.seccomp;
  if (!seccomp?.syscalls) throw new Error(`${configFile} has no linux.seccomp`);
  return seccomp;
}

function expected(base) {
  return { ...base, syscalls: [...base.syscalls, ...SANDBOX_RULES] };
}

const [command, configFile] = process.argv.slice(2);
if (!['write', 'check'].includes(command) || !configFile) {
  console.error('usage: seccomp-profile.mjs write|check CONTAINER_CONFIG_JSON');
  process.exit(2);
}
const want = expected(engineDefault(configFile));
if (command === 'write') {
  writeFileSync(PROFILE, JSON.stringify(want, null, 2) + '\n');
  console.log(`wrote ${PROFILE}: ${want.syscalls.length} rules, ${SANDBOX_RULES.length} of them the sandbox's`);
} else {
  const have = JSON.parse(readFileSync(PROFILE, 'utf8'));
  if (!isDeepStrictEqual(have, want)) {
    console.error(`${PROFILE} is not this engine's default profile plus the sandbox's rules; ` +
                  'regenerate it with `node deploy/seccomp-profile.mjs write CONFIG_JSON` and review the diff');
    process.exit(1);
  }
  console.log(`${PROFILE}: the engine's default (${want.syscalls.length - SANDBOX_RULES.length} rules) ` +
              `plus the sandbox's ${SANDBOX_RULES.length}`);
}
