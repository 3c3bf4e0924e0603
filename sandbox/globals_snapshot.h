// The sandbox's globals as a V8 startup snapshot, made once per process. Internal to sandbox/.
#pragma once

#include <v8.h>

#include <cstddef>

#include "sandbox/isolate_runner.h"

namespace codemode::sandbox::detail {

// The sandbox's globals, made once per process into a V8 startup snapshot: one context with
// install_globals() done without fetch, one with. An isolate created from it deserialises its
// context with the scripts already run and their functions compiled, instead of compiling and
// running them (callgrind, isolate_bench: see bench/README.md). Built on first use, before
// any isolate of the process runs code; the blob lives as long as the process.
class GlobalsSnapshot {
 public:
  static const GlobalsSnapshot& get();
  // Non-const only because CreateParams says so; V8 reads it.
  v8::StartupData* blob() const { return const_cast<v8::StartupData*>(&blob_); }
  // The context index for Context::FromSnapshot; `serialize` is that context's data 0.
  static std::size_t context_index(FetchGlobal fetch) {
    return fetch == FetchGlobal::present ? 1 : 0;
  }

 private:
  GlobalsSnapshot();
  v8::StartupData blob_{};
};

}  // namespace codemode::sandbox::detail
