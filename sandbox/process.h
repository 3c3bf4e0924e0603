// The daemon's handle on one sandbox process (child.h): start it, run calls in it, kill it.
//
// A SandboxProcess belongs to one Sandbox worker thread, which is the only thread that touches
// it; the gateway's fetch completions reach that thread through a queue and an eventfd. Every
// byte from the process is hostile: a malformed or unexpected message, silence past the call's
// deadline, or death all end with the process killed, the call given an error that says what
// happened, and the worker starting a fresh process for the next call. The destructor kills the
// process (SIGKILL) and reaps it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "config/config.h"
#include "gateway/gateway.h"
#include "sandbox/call.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/outcome.h"

namespace codemode::sandbox {

enum class ChildStderr {
  discard,  // /dev/null (default: a compromised process must not write into the daemon's log)
  inherit,  // the daemon's stderr (debug logging: V8's own fatal messages become visible)
};

struct ProcessOptions {
  // The program and its arguments, e.g. {"/proc/self/exe", "--sandbox-child"}.
  std::vector<std::string> command;
  // The encoded channel::Init frame, shared by every process of a Sandbox.
  std::shared_ptr<const std::string> init_frame;
  // The document image's sealed memfd (openapi::DocumentImage::fd()), handed to the process as
  // kImageFd; -1: none (Init then says there is no spec).
  int image_fd = -1;
  ChildStderr child_stderr = ChildStderr::discard;
  // How long a process may take from fork to Ready (it parses the document and starts V8).
  std::chrono::milliseconds start_timeout{60000};
};

class SandboxProcess {
 public:
  // Starts a process and waits for its Ready; the error says why there is none.
  static std::variant<std::unique_ptr<SandboxProcess>, std::string> start(
      const ProcessOptions& options);
  ~SandboxProcess();
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  // Runs one call. `fetch` (the daemon's gateway, see Fetcher) may be null: no fetch in this call.
  // After an Outcome that says the process failed, usable() is false and the owner replaces the
  // process.
  Outcome run(const Call& call, const config::Limits& limits, const Fetcher* fetch);

  bool usable() const { return usable_; }
  pid_t pid() const { return pid_; }
  unsigned calls() const { return calls_; }
  // The isolation layers the process reported, one line each ("seccomp: on (...)").
  const std::vector<std::string>& layers() const { return layers_; }

 private:
  struct Inbox;
  SandboxProcess(pid_t pid, int fd);
  // SIGKILL and waitpid, once; the wait status (0 when there was no process left).
  int kill_and_reap();
  Outcome fail(ErrorKind kind, std::string message);
  // Kills, reaps, and describes how the process ended (for the call's error).
  Outcome died();

  pid_t pid_;
  int fd_;
  bool usable_ = true;
  unsigned calls_ = 0;
  std::uint64_t last_call_id_ = 0;
  std::vector<std::string> layers_;
  std::shared_ptr<Inbox> inbox_;
};

}  // namespace codemode::sandbox
