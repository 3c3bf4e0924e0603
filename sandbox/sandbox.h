// The sandbox: where a tool call's code runs, away from the I/O thread and, in the daemon, in
// sandbox processes (process.h, child.h) that never hold a credential or a socket.
//
// The server hands a Call to submit() on its I/O thread and gets the Outcome back through the
// completion, which runs on one of the sandbox's worker threads (the server posts it back to
// its own executor). Callers run check_input() first, on their own thread, so a call refused
// for its input never occupies a worker and submit() receives only code that may run.
//
// Lifetime: the destructor stops taking calls, finishes the queued ones and joins the workers;
// every accepted completion is invoked exactly once.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include "config/config.h"
#include "gateway/gateway.h"
#include "openapi/image.h"
#include "sandbox/call.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/outcome.h"
#include "sandbox/process.h"

namespace codemode::sandbox {

// Refuses code that must never reach an isolate. nullopt: the code may run.
std::optional<Outcome> check_input(std::string_view code, const config::Limits& limits);

// Number of Unicode code points in valid UTF-8 text (what `code_chars` counts).
std::size_t count_code_points(std::string_view utf8);

struct SandboxOptions {
  config::Limits limits;
  unsigned workers = 0;  // 0: one per hardware thread
  // The document `search` code sees as `spec`; must outlive the Sandbox. Null: no `spec`.
  const openapi::DocumentImage* api = nullptr;
  // Where `execute` code's fetch() goes; must outlive the Sandbox. Null: no `fetch` global.
  gateway::Gateway* gateway = nullptr;
  // The sandbox process program (child.h); the daemon passes daemon_child_command(). Each
  // worker keeps one process ready and replaces it when it fails or has served
  // `calls_per_process` calls. Empty: calls run on the worker threads of this process, which
  // only tests of the layers above the sandbox do.
  std::vector<std::string> child_command;
  ChildStderr child_stderr = ChildStderr::discard;
  unsigned calls_per_process = 1000;
};

// {"/proc/self/exe", "--sandbox-child"}: the running binary in its sandbox-process role.
std::vector<std::string> daemon_child_command();

// Starts one sandbox process (no document) and returns the isolation layers it reports, or why
// it could not start. For --sandbox-report.
std::variant<std::vector<std::string>, std::string> probe_layers(
    const std::vector<std::string>& child_command);

class Sandbox {
 public:
  using Completion = std::function<void(Outcome)>;

  explicit Sandbox(SandboxOptions options);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Queues a call; `done` runs exactly once on a worker thread. A call whose token is
  // cancelled completes with `runtime: cancelled`, at once if it has not started.
  void submit(Call call, Completion done);

  // Cancels every queued and running call (shutdown when the grace period is over).
  void cancel_all();

  const config::Limits& limits() const { return options_.limits; }

 private:
  struct Job {
    Call call;
    Completion done;
  };
  void worker_loop(unsigned slot);
  Outcome run(const Call& call);
  Fetcher gateway_fetcher(gateway::CallBudget& budget) const;
  Outcome run_in_process(const Call& call, std::unique_ptr<SandboxProcess>& process);
  std::unique_ptr<SandboxProcess> start_process();

  SandboxOptions options_;
  ProcessOptions process_options_;  // used when options_.child_command is set
  std::atomic<bool> layers_logged_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  std::deque<unsigned> idle_;                          // waiting workers, longest-idle first
  std::vector<std::shared_ptr<CancelToken>> running_;  // one slot per worker, under mutex_
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace codemode::sandbox
