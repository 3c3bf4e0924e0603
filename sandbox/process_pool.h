// The sandbox processes of a Sandbox, and the calls waiting for one of them.
//
// Everything happens on one executor (the daemon's I/O thread, or a thread the Sandbox runs for
// it): a call goes to the process that has been idle longest (it has had the most time to make
// its next isolate ready), its frames and its fetches' replies are written and read there, and
// its completion runs there. Starting a process blocks for a while (fork, exec, V8, the
// document), so a launcher thread does that, and kills and reaps the processes the pool is done
// with; it never touches the pool's state, only posts results back.
//
// A process is replaced when it fails, and after `calls_per_process` calls; its replacement is
// started some calls before that (calls_ahead()), so that it is ready when the process retires
// and the pool keeps its size.
#pragma once

#include <memory>

#include <boost/asio/any_io_executor.hpp>

#include "config/config.h"
#include "gateway/gateway.h"
#include "sandbox/call.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/outcome.h"
#include "sandbox/process.h"

namespace codemode::sandbox {

// One execute call's way to the gateway: its own subrequest budget (held by the fetcher; the
// gateway spends it inside fetch()) and a deadline wall_ms from now.
Fetcher gateway_fetcher(gateway::Gateway& gateway, const config::Limits& limits);

struct ProcessPoolOptions {
  ProcessOptions process;
  unsigned processes = 1;
  unsigned calls_per_process = 1000;
  config::Limits limits;
  gateway::Gateway* gateway = nullptr;  // null: execute code gets no fetch
};

// How many calls before its last a process's successor is asked for: as many as the process
// serves, at `calls_per_second`, in twice the time the last start took (a start takes longer
// under load, and starts run one after another), and at least 8; at most a quarter of its
// calls (a process that serves a handful is not worth a spare: 0 below 4).
unsigned calls_ahead(unsigned calls_per_process, double calls_per_second, double start_seconds);

class ProcessPool {
 public:
  using Completion = std::function<void(Outcome)>;

  ProcessPool(ProcessPoolOptions options, boost::asio::any_io_executor executor);
  // Stops the launcher. Call close() first, on the executor or once it no longer runs.
  ~ProcessPool();
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;

  // Any thread. `done` runs exactly once, on the executor (or inside close()).
  void submit(Call call, Completion done);
  // Any thread: cancels every queued and running call.
  void cancel_all();
  // On the executor: `then` runs once nothing is queued or running (at once if so).
  void when_drained(std::function<void()> then);
  // On the executor, or on any thread once the executor has stopped: every call still queued or
  // running completes with `runtime: cancelled`, the processes are killed, and no call is taken
  // any more.
  void close();

 private:
  struct State;
  class Launcher;
  std::unique_ptr<Launcher> launcher_;
  std::shared_ptr<State> state_;
};

}  // namespace codemode::sandbox
