// The operating-system layers under the isolate, applied by a sandbox process to itself.
//
// node's V8 has no heap sandbox (official builds have no pointer compression): a bug in generated
// code could run native code. These layers decide what such code could then do: in a fresh
// process that never held a credential, with no environment but its time zone and no descriptor
// but its channel, in new user/network/mount/IPC namespaces (no network interfaces, an empty
// root), with rlimits, no new privileges, and a seccomp-bpf filter that allows only what V8,
// node's threads and the channel need. Each layer that the kernel refuses is reported, not
// fatal: the report says which layers hold.
//
// Order matters, so the steps are separate and called by child.cpp in this order:
//   record_namespaces() the namespaces the daemon entered for the process before exec (a
//                       process of node has threads, and a user namespace needs just one)
//   limit_resources()   before the warm-up, except the address space (below)
//   ... one warm-up isolate per tool, which touches every file V8 and ICU will ever need ...
//   limit_address_space(), empty_root(), restrict_syscalls()  last: nothing is opened after this
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "channel/process_contract.h"

namespace codemode::isolate::lockdown {

// One line per layer for the report: "<layer>: on (...)" or "<layer>: off (<why>)".
using Report = std::vector<std::string>;

// Reports the namespaces the process is in (the daemon entered them: sandbox/process.cpp) and
// remembers whether there is a mount namespace for empty_root().
void record_namespaces(channel::Namespaces namespaces, Report& report);

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
