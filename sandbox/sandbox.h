// The sandbox: where a tool call's code runs, away from the I/O thread.
//
// The server hands a Call to submit() on its I/O thread and gets the Outcome back through the
// completion, which runs on one of the sandbox's worker threads (the server posts it back to
// its own executor). Callers run check_input() first, on their own thread, so a call refused
// for its input never occupies a worker and submit() receives only code that may run.
//
// Lifetime: the destructor stops taking calls, finishes the queued ones and joins the workers;
// every accepted completion is invoked exactly once.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "config/config.h"
#include "gateway/gateway.h"
#include "openapi/document.h"
#include "sandbox/call.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/outcome.h"

namespace codemode::sandbox {

// Refuses code that must never reach an isolate. nullopt: the code may run.
std::optional<Outcome> check_input(std::string_view code, const config::Limits& limits);

// Number of Unicode code points in valid UTF-8 text (what `code_chars` counts).
std::size_t count_code_points(std::string_view utf8);

struct SandboxOptions {
  config::Limits limits;
  unsigned workers = 0;  // 0: one per hardware thread
  // The document `search` code sees as `spec`; must outlive the Sandbox. Null: no `spec`.
  const openapi::Document* api = nullptr;
  // Where `execute` code's fetch() goes; must outlive the Sandbox. Null: no `fetch` global.
  gateway::Gateway* gateway = nullptr;
};

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

  SandboxOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  std::vector<std::shared_ptr<CancelToken>> running_;  // one slot per worker, under mutex_
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace codemode::sandbox
