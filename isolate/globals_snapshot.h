// The sandbox's globals as a V8 startup snapshot, made once per process. Internal to sandbox/.
#pragma once

#include <v8.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isolate/isolate_runner.h"

namespace codemode::isolate::detail {

// The bundles under js/vendor/ (and js/web.js) that a call compiles on first use; the values
// are what js/bootstrap.js passes host.loadVendor.
// sucrase is not one of them: compile_code.cpp loads it itself, for code that does not parse
// as JavaScript (its TypeScript is stripped), before the code runs; the process's first such call
// leaves a code cache for the later ones (keep_code_cache).
enum class Vendor { whatwg_url = 0, tr46 = 1, encodings = 2, web = 3, sucrase = 4 };

// The sandbox's globals, made once per process into two V8 startup snapshots: one with a
// context with install_globals() done without fetch, one with fetch. An isolate created from it
// deserialises its context with the scripts already run and their functions compiled, instead of
// compiling and running them (callgrind, isolate_bench: see bench/README.md). Built on first use,
// before any isolate of the process runs code; the blob lives as long as the process.
//
// The URL classes (js/vendor/whatwg-url.js), their IDNA part (js/vendor/tr46.js) and
// TextDecoder's legacy encodings (js/vendor/encodings.js) are not in it, nor are the web APIs
// of js/web.js (Event, AbortController, crypto, Blob, FormData, …): V8 keeps compiled
// functions with the isolate's part of a snapshot, so every isolate of both tools would deserialise
// them, and most calls use no URL. A call compiles them on first use (run_vendor_script),
// whatwg-url.js from a V8 code cache made here after one run of the usual paths, so that it
// deserialises their compiled functions instead of compiling them.
class GlobalsSnapshot {
 public:
  static const GlobalsSnapshot& get();
  // The blob an isolate whose context has (or lacks) `fetch` is made from: one blob per context,
  // so that an isolate deserialises only its own context's scripts. Non-const only because
  // CreateParams says so; V8 reads it.
  v8::StartupData* blob(FetchGlobal fetch) const {
    return const_cast<v8::StartupData*>(&blobs_[fetch == FetchGlobal::present ? 1 : 0]);
  }
  // The context index for Context::FromSnapshot in that blob (its only context); `serialize`
  // is that context's data 0.
  static std::size_t context_index(FetchGlobal /*fetch*/) { return 0; }
  // The bundle's code cache for isolates of blob(fetch) (V8 refuses a cache made in an isolate
  // of another blob); empty while it is being made (and if V8 made none).
  const std::vector<std::uint8_t>& code_cache(Vendor which, FetchGlobal fetch) const {
    return which == Vendor::whatwg_url ? whatwg_url_caches_[fetch == FetchGlobal::present ? 1 : 0]
                                       : no_cache_;
  }
  // Records in `isolate` (a data slot) which blob it was made from, for run_vendor_script.
  static void mark_blob(v8::Isolate* isolate, FetchGlobal fetch);

 private:
  GlobalsSnapshot();
  static v8::StartupData make_blob(v8::SnapshotCreator& creator, FetchGlobal fetch);
  void make_code_caches(FetchGlobal fetch);
  v8::StartupData blobs_[2] = {};                   // without fetch, with it
  std::vector<std::uint8_t> whatwg_url_caches_[2];  // per blob; empty until made, and if none
  std::vector<std::uint8_t>
      no_cache_;  // tr46.js, encodings.js, sucrase.js: none (make_code_caches)
};

// Sets what js/fetch.js's Request resolves a relative URL against (SandboxOptions::fetch_base)
// for the snapshot this process makes; once made, the snapshot keeps the value it was made with,
// and later calls change nothing. Called before the first isolate of the process.
void set_fetch_base(std::string base);

// Compiles `which` into `context` (with its code cache, once the process has made it) and runs
// it: the value is the bundle's factory function. Empty with an exception pending on failure
// (a termination, the heap cap).
v8::MaybeLocal<v8::Value> run_vendor_script(v8::Local<v8::Context> context, Vendor which);

// How many times in this process V8 refused a code cache of run_vendor_script (it checks the
// flags the cache was made under): 0 unless a flag changed after GlobalsSnapshot made it, which
// would cost every call that uses URL ~3 ms of compiling. Any thread.
std::size_t code_cache_rejections();

// Keeps a V8 code cache of `which` for the process's later calls, made from `context`, where
// run_vendor_script ran it and its functions have run since, if the process has none yet. Only
// for sucrase.js, after the first strip of a process and before the call's code runs: a cache
// holds the bytecode of every function compiled so far, which a later call deserialises instead
// of parsing and compiling (isolate/README.md, "Shapes of code"). Not made ahead, because it
// would cost every process start for what few calls use; not made by the build, because V8 takes
// a code cache only in an isolate of the snapshot it was made with, and each process makes its
// own (it differs by process); one per blob (GlobalsSnapshot::blob), for the same reason.
// Thread-safe; a failure only leaves the next call to try again.
void keep_code_cache(v8::Local<v8::Context> context, Vendor which);
// The cache keep_code_cache kept for `which` in isolates of blob(fetch); null while there is none.
std::shared_ptr<const std::vector<std::uint8_t>> kept_code_cache(Vendor which, FetchGlobal fetch);

}  // namespace codemode::isolate::detail
