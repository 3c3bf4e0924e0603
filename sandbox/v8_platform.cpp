#include "sandbox/v8_platform.h"

#include <sys/random.h>

#include <libplatform/libplatform.h>
#include <v8.h>

#include <cerrno>
#include <memory>
#include <mutex>

namespace codemode::sandbox {

std::string_view v8_flags() {
  return "--no-expose-wasm --disallow-code-generation-from-strings --no-verify-snapshot-checksum";
}

namespace {

// V8 seeds each isolate's random numbers (Math.random, hash seeds) from here; without a source
// it opens /dev/urandom, which sandbox processes cannot, and falls back to the clock.
bool fill_with_entropy(unsigned char* buffer, std::size_t length) {
  while (length > 0) {
    const ssize_t got = ::getrandom(buffer, length, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    buffer += got;
    length -= static_cast<std::size_t>(got);
  }
  return true;
}

std::once_flag initialized;
std::unique_ptr<v8::Platform> platform;
bool shut_down = false;
}  // namespace

void ensure_v8_initialized() {
  std::call_once(initialized, [] {
    // ICU comes from the system library (libicu72); no data file is needed.
    v8::V8::InitializeICUDefaultLocation("/proc/self/exe");
    v8::V8::SetEntropySource(fill_with_entropy);
    const std::string_view flags = v8_flags();
    v8::V8::SetFlagsFromString(flags.data(), flags.size());
    platform = v8::platform::NewDefaultPlatform();
    v8::V8::InitializePlatform(platform.get());
    v8::V8::Initialize();
  });
}

void shutdown_v8() {
  if (!platform || shut_down) return;
  shut_down = true;
  v8::V8::Dispose();
  v8::V8::DisposePlatform();
  platform.reset();
}

}  // namespace codemode::sandbox
