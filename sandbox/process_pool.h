// The sandbox processes of a Sandbox, the principals they belong to, and the calls waiting for
// one of them.
//
// Everything happens on one executor (the daemon's I/O thread, or a thread the Sandbox runs for
// it): a call is queued under its principal, principals take turns (one call each per turn), a
// call goes to a process of its own principal with room for it, and its frames, its fetches'
// replies and its completion are handled there. Starting a process blocks for a while (fork,
// exec, V8, the document), so launcher threads (one per core, at most 4) do that, and kill and
// reap the processes the pool is done with; they never touch the pool's state, only post results
// back.
//
// Processes: each runs up to `process_calls` calls at once, of one principal only. A process
// belongs to the principal of its first call until it retires (idle for `idle_retire`, failed,
// or `lifetime_calls` served); `spare_processes` are kept started and unowned, so a principal's
// first call usually finds one; at most `max_processes` live at once. When a principal has no
// process with room and none may start, an idle process of another principal retires for it,
// or, failing that, one of the principal with the most processes stops taking calls.
//
// Fairness: a principal runs at most `principal_calls` calls at once; beyond that its calls
// queue, and a queued call that cannot start within its wall_ms ends as `timeout` (it never
// ran). Memory is shared the same way: while the processes' own resident memory together is
// over `memory_bytes`, a principal whose processes hold more than its share (`memory_bytes`
// divided equally among the principals with a process or a call) starts no call (its calls
// wait, bounded as above) unless nothing runs at all, and its idle processes retire to give the
// memory back; a principal within its share starts calls whatever the others hold.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "channel/call_control.h"
#include "channel/outcome.h"
#include "config/config.h"
#include "sandbox/call.h"
#include "sandbox/process.h"

namespace codemode::sandbox {

struct ProcessPoolOptions {
  ProcessOptions process;
  unsigned max_processes = 128;
  unsigned spare_processes = 1;
  unsigned process_calls = 64;      // calls at once in one process (the Init frame says so too)
  unsigned principal_calls = 256;   // calls of one principal running at once
  unsigned lifetime_calls = 10000;  // a process retires after this many
  std::chrono::milliseconds idle_retire{60000};
  std::uint64_t memory_bytes = 0;  // 0: no bound
  config::Limits limits;
  FetcherFactory fetch;  // empty: execute code gets no fetch
};

// What the pool holds and has done, for metrics.
struct PoolStats {
  std::uint64_t running = 0;    // calls running in sandbox processes
  std::uint64_t queued = 0;     // calls waiting to start
  std::uint64_t processes = 0;  // sandbox processes alive (owned and spare)
  std::uint64_t starting = 0;   // being started
  std::uint64_t started = 0;    // started since the pool began
  // Retired since the pool began, by why: "idle", "lifetime" (calls served), "failed" (it died
  // or broke a rule), "room" (made room: a process for another principal, or memory over its
  // principal's share).
  std::map<std::string, std::uint64_t> retired;
};

class ProcessPool {
 public:
  using Completion = std::function<void(channel::Outcome)>;

  ProcessPool(ProcessPoolOptions options, boost::asio::any_io_executor executor);
  // Stops the launcher. Call close() first, on the executor or once it no longer runs.
  ~ProcessPool();
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;

  // Any thread. `done` runs exactly once, on the executor (or inside close()).
  void submit(Call call, Completion done);
  // Any thread: answers every queued call, and ends every running one, with `message`
  // (`runtime: <message>`), and takes no call any more (each is answered the same way).
  void stop_all(std::string message);
  // On the executor: what the pool holds and has done.
  PoolStats stats() const;
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
