// Test-only: the sandbox process program for tests that run calls through a Sandbox or start
// sandbox processes: the engine of this build tree (build/engine), so a test of the layers above
// runs code exactly as the daemon does, in a locked-down process, over the channel. Link
// codemode_sandbox_test_child, which names the folder.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "sandbox/engine.h"
#include "sandbox/sandbox.h"

namespace codemode::sandbox {

inline std::string test_engine_dir() {
#ifdef CODEMODE_TEST_ENGINE_DIR
  return CODEMODE_TEST_ENGINE_DIR;
#else
  // Only a target that links codemode_sandbox_test_child knows where the engine is (clang-tidy
  // reads this header with another file's flags, so this is not an #error).
  CODEMODE_CHECK(false, "the test target links codemode_sandbox_test_child");
  return {};
#endif
}

// The shipped addon, or another of this build's addons (sandbox_hook_child.node).
inline std::vector<std::string> test_child_command(
    std::string_view addon = kIsolateAddon, channel::JitMode jit = channel::JitMode::enabled) {
  return engine_command(test_engine_dir(), addon, jit);
}

// Options for a Sandbox of the config's defaults whose processes are test_child_command().
inline SandboxOptions test_sandbox_options(const config::Limits& limits = {}) {
  SandboxOptions options;
  options.limits = limits;
  options.child_command = test_child_command();
  return options;
}

}  // namespace codemode::sandbox
