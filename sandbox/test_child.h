// Test-only: the sandbox process program for tests that run calls through a Sandbox. It is the
// shipped binary's sandbox role, so a test of the layers above runs code exactly as the daemon
// does: in a locked-down process, over the channel. Link codemode_sandbox_test_child, which
// names the binary.
#pragma once

#include <string>
#include <vector>

#include "base/check.h"
#include "sandbox/sandbox.h"

namespace codemode::sandbox {

inline std::vector<std::string> test_child_command() {
#ifdef CODEMODE_TEST_SANDBOX_CHILD
  return {CODEMODE_TEST_SANDBOX_CHILD, "--sandbox-child"};
#else
  // Only a target that links codemode_sandbox_test_child knows where the binary is (clang-tidy
  // reads this header with another file's flags, so this is not an #error).
  CODEMODE_CHECK(false, "the test target links codemode_sandbox_test_child");
  return {};
#endif
}

// Options for a Sandbox of the config's defaults whose processes are test_child_command().
inline SandboxOptions test_sandbox_options(const config::Limits& limits = {}) {
  SandboxOptions options;
  options.limits = limits;
  options.child_command = test_child_command();
  return options;
}

}  // namespace codemode::sandbox
