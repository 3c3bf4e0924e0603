// Sandbox's in-process Runner: calls on worker threads of this process, each in a fresh isolate
// (isolate_runner.h), the longest-idle worker first, no principals. Only tests of the layers
// above the sandbox (server, fuzzers) run calls this way; the daemon uses sandbox processes.
#pragma once

#include <memory>

#include "sandbox/sandbox.h"

namespace codemode::sandbox {

std::unique_ptr<Sandbox::Runner> make_thread_runner(const SandboxOptions& options);

}  // namespace codemode::sandbox
