// The sandbox: where a tool call's code runs, as the daemon sees it: in sandbox processes
// (process.h; the process side is isolate/child.h) that never hold a credential or a socket.
//
// The server hands a Call to submit() on its I/O thread and gets the Outcome back through the
// completion, which runs on the executor given in SandboxOptions (the daemon's I/O thread, so a
// call crosses no thread of the daemon; without one the Sandbox runs an I/O thread of its own).
// Callers run check_input() first, on their own thread, so a call refused for its input never
// occupies a process and submit() receives only code that may run.
//
// Lifetime: every accepted completion is invoked exactly once. The destructor stops taking
// calls; with an I/O thread of its own it finishes the queued and running calls first; with the
// daemon's executor it must run after that executor stopped, and completes what is left with
// `runtime: cancelled`.
//
// This side links no V8: the two processes share only channel/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "channel/call_control.h"
#include "channel/jit_mode.h"
#include "channel/outcome.h"
#include "config/config.h"
#include "openapi/image.h"
#include "sandbox/call.h"
#include "sandbox/process.h"
#include "sandbox/process_pool.h"

namespace codemode::sandbox {

// Refuses code that must never reach an isolate. nullopt: the code may run.
std::optional<channel::Outcome> check_input(std::string_view code, const config::Limits& limits);

// Number of Unicode code points in valid UTF-8 text (what `code_chars` counts).
std::size_t count_code_points(std::string_view utf8);

struct SandboxOptions {
  config::Limits limits;
  // The document `search` code sees as `spec`; must outlive the Sandbox. Null: no `spec`.
  const openapi::DocumentImage* api = nullptr;
  // Where `execute` code's fetch() goes: a Fetcher made per call (call_control.h); what it
  // refers to must outlive the Sandbox. Empty: no `fetch` global.
  FetcherFactory fetch;
  // What a relative URL resolves against in `new Request(url).url`: the gateway's base, the first
  // upstream's normalised origin + "/" (gateway/url_policy.h), so that a Request shows where
  // fetch() sends it. Empty: a relative URL is a TypeError, as in node. A process-wide setting of
  // the sandbox processes (set_fetch_base in globals_snapshot.h).
  std::string fetch_base;
  // The sandbox process program (engine_command() in engine.h; tests: test_child_command() in
  // test_child.h), with --jitless when `jit` says so. Calls run in sandbox processes, each of one
  // principal (process_pool.h). Must not be empty.
  std::vector<std::string> child_command;
  // Where the processes' channels are served and completions run. Empty: an I/O thread of the
  // Sandbox's own.
  boost::asio::any_io_executor executor;
  ChildStderr child_stderr = ChildStderr::discard;
  // How processes are shared (config's sandbox section; process_pool.h).
  config::SandboxSettings processes;
  // A process retires after this many calls (a fresh one replaces it).
  unsigned calls_per_process = 10000;
  // config's sandbox.jitless, as child_command has it (the processes report it).
  channel::JitMode jit = channel::JitMode::enabled;
};

// Starts one sandbox process (no document) and returns the isolation layers it reports, or why
// it could not start. For --sandbox-report.
std::variant<std::vector<std::string>, std::string> probe_layers(
    const std::vector<std::string>& child_command);

class Sandbox {
 public:
  using Completion = std::function<void(channel::Outcome)>;

  explicit Sandbox(const SandboxOptions& options);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Queues a call (any thread); `done` runs exactly once (see above). A call whose token is
  // cancelled completes with `runtime: cancelled`, at once if it has not started.
  void submit(Call call, Completion done);

  // Answers every queued call, and ends every running one, with `runtime: <message>`, and answers
  // every later call the same way (shutdown when the grace period is over: every accepted call
  // gets an answer).
  void stop_all(std::string message);

  const config::Limits& limits() const { return limits_; }

  // What the sandbox processes hold and have done, for metrics. On the executor the Sandbox was
  // given (the daemon's I/O thread).
  PoolStats stats() const;

 private:
  class Processes;
  config::Limits limits_;
  std::unique_ptr<Processes> processes_;
};

}  // namespace codemode::sandbox
