#include "sandbox/v8_platform.h"

#include <libplatform/libplatform.h>
#include <v8.h>

#include <memory>
#include <mutex>

namespace codemode::sandbox {

std::string_view v8_flags() { return "--no-expose-wasm --disallow-code-generation-from-strings"; }

void ensure_v8_initialized() {
  static std::once_flag once;
  std::call_once(once, [] {
    // ICU comes from the system library (libicu72); no data file is needed.
    v8::V8::InitializeICUDefaultLocation("/proc/self/exe");
    const std::string_view flags = v8_flags();
    v8::V8::SetFlagsFromString(flags.data(), flags.size());
    // Leaked on purpose: see the header. The pointer lives in a function-local static so the
    // platform outlives every isolate regardless of static destruction order.
    static v8::Platform* platform = v8::platform::NewDefaultPlatform().release();
    v8::V8::InitializePlatform(platform);
    v8::V8::Initialize();
  });
}

}  // namespace codemode::sandbox
