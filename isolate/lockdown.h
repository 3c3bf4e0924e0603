// The operating-system layers under the isolate, applied by a sandbox process to itself.
//
// V8 10.2 from Debian has no heap sandbox: a bug in generated code could run native code. These
// layers decide what such code could then do: in a fresh process that never held a credential,
// with no environment and no descriptor but its channel, in new user/network/mount/IPC
// namespaces (no network interfaces, an empty root), with rlimits, no new privileges, and a
// seccomp-bpf filter that allows only what V8 and the channel need. Each layer that the kernel
// refuses is reported, not fatal: the report says which layers hold.
//
// Order matters, so the steps are separate and called by child.cpp in this order:
//   enter_namespaces()  single-threaded, before anything else (unshare(CLONE_NEWUSER) needs it)
//   limit_resources()   before V8 starts, except the address space (below)
//   ... V8 starts and runs one warm-up isolate, which touches every file it will ever need ...
//   limit_address_space(), empty_root(), restrict_syscalls()  last: nothing is opened after this
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace codemode::isolate::lockdown {

// One line per layer for the report: "<layer>: on (...)" or "<layer>: off (<why>)".
using Report = std::vector<std::string>;

// New user, network, mount and IPC namespaces (the user namespace makes the others possible
// without privileges). Must run while the process has one thread.
void enter_namespaces(Report& report);

// Core dumps off, open files capped, a total CPU-time cap (cpu_seconds) for the process.
void limit_resources(unsigned cpu_seconds, Report& report);

// Caps the address space at what the process maps now plus `headroom_bytes` (heap, buffers and
// thread stacks of one call). Skipped under AddressSanitizer, whose shadow memory is terabytes.
void limit_address_space(std::size_t headroom_bytes, Report& report);

// In the mount namespace: chroot into an empty private tmpfs, so no path names a host file.
void empty_root(Report& report);

// no_new_privs, then the seccomp filter on every thread of the process.
void restrict_syscalls(Report& report);

}  // namespace codemode::isolate::lockdown
