// The sandbox: where a tool call's code runs: in the daemon, in sandbox processes (process.h,
// child.h) that never hold a credential or a socket; in tests of the layers above, in isolates
// on worker threads of this process.
//
// The server hands a Call to submit() on its I/O thread and gets the Outcome back through the
// completion: with processes it runs on the executor given in SandboxOptions (the daemon's I/O
// thread, so a call crosses no thread of the daemon; without one the Sandbox runs an I/O thread
// of its own), without them on a worker thread. Callers run check_input() first, on their own
// thread, so a call refused for its input never occupies a process and submit() receives only
// code that may run.
//
// Lifetime: every accepted completion is invoked exactly once. The destructor stops taking
// calls; with workers or an I/O thread of its own it finishes the queued and running calls
// first; with the daemon's executor it must run after that executor stopped, and completes
// what is left with `runtime: cancelled`.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include "config/config.h"
#include "gateway/gateway.h"
#include "openapi/image.h"
#include "sandbox/call.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/outcome.h"
#include "sandbox/process.h"
#include "sandbox/process_pool.h"
#include "sandbox/v8_platform.h"

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
  // The sandbox process program (child.h); the daemon passes daemon_child_command(). `workers`
  // processes are kept ready; one is replaced when it fails or has served `calls_per_process`
  // calls. Empty: calls run on `workers` worker threads of this process, which only tests of
  // the layers above the sandbox do.
  std::vector<std::string> child_command;
  // With child_command: where the processes' channels are served and completions run. Empty:
  // an I/O thread of the Sandbox's own.
  boost::asio::any_io_executor executor;
  ChildStderr child_stderr = ChildStderr::discard;
  unsigned calls_per_process = 1000;
  // config's sandbox.jitless. In-process workers (no child_command) share the process's V8,
  // whose mode the first initialisation fixed.
  JitMode jit = JitMode::enabled;
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

  // Queues a call (any thread); `done` runs exactly once (see above). A call whose token is
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
  // With processes: the pool, and the I/O thread it runs on when the Sandbox has its own.
  std::unique_ptr<boost::asio::io_context> own_io_;
  std::thread own_io_thread_;
  std::unique_ptr<ProcessPool> pool_;
  // Without: the worker threads and their queue.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  std::deque<unsigned> idle_;                          // waiting workers, longest-idle first
  std::vector<std::shared_ptr<CancelToken>> running_;  // one slot per worker, under mutex_
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace codemode::sandbox
