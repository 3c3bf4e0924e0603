// Process-wide V8 set-up: flags, ICU, the platform (V8's GC and compiler worker threads).
//
// V8 can be initialised once per process and never again after disposal, so the set-up is a
// one-shot: the first ensure_v8_initialized() does it, every later call (from any thread)
// returns at once. Tear-down is explicit, never from a static destructor (which could race with
// a thread still unwinding): main() calls shutdown_v8() after the daemon, and with it every
// sandbox worker, has stopped.
#pragma once

#include <cstddef>
#include <string_view>

#include "channel/jit_mode.h"
#include "isolate/page_pool.h"

namespace codemode::isolate {

// The V8 flags set before V8::Initialize, as one string (for logs and the README).
//   --no-expose-wasm: no `WebAssembly` global (the wasm code-gen callback refuses it as well).
//   --disallow-code-generation-from-strings: eval / new Function refused in every context,
//     on top of the per-context AllowCodeGenerationFromStrings(false).
//   --no-verify-snapshot-checksum: every Isolate::New hashed the whole snapshot again.
//   --no-rehash-snapshot: isolates keep the string hash seed baked into the snapshot instead
//     of drawing one and rehashing every string of it (~0.4 M instructions per isolate). The
//     seed only matters against hash flooding, and the only code that could flood an isolate's
//     tables is its own call's, which its CPU limit already bounds.
// --jitless only where a deployment asks for it (JitMode): the isolate's bounds (heap, CPU, no
// wasm) do not depend on it, and interpreter-only execution makes code that computes slower
// (README.md, Security, has the measurement).
std::string_view v8_flags();

// Initialises ICU (system data), the flags above, the default platform and V8. Thread-safe.
// The first call decides `mode` for the process (V8's flags are process-wide and fixed once
// V8 has started); later calls return at once whatever they pass.
void ensure_v8_initialized(channel::JitMode mode = channel::JitMode::enabled);

// The mode V8 was initialised with (JitMode::enabled before it was).
channel::JitMode v8_jit_mode();

// The linked V8's version, e.g. "10.2.154.26-node.37" (Debian's libnode108); needs no
// initialisation. Security fixes arrive with Debian's libnode108 updates (README.md, Security).
std::string_view v8_version();

// The address space the page pool may hold (inaccessible regions kept for the next isolate):
// ten isolates' 64 MiB code ranges and their chunks, since a process runs several calls at once
// and keeps isolates ready beside them (at 192 MiB, hello at 8 in flight mapped, protected and
// unmapped code ranges afresh: 0.17 ms of system CPU per call against 0.07 before calls shared
// a process; bench/README.md). A sandbox process's address-space cap leaves room for it.
inline constexpr std::size_t kPagePoolAddressSpace = std::size_t{640} << 20;

// What the page pool has done so far (zero before V8 is initialised).
PagePoolStats page_pool_stats();

// For tests: RecyclingPageAllocator::audit() of the process's pool (zero before V8 starts).
RecyclingPageAllocator::Audit audit_page_pool();

// Disposes V8 and its platform. Only once no isolate exists and no thread can create one;
// nothing V8 may run afterwards in this process. Does nothing if V8 was never initialised.
void shutdown_v8();

}  // namespace codemode::isolate
