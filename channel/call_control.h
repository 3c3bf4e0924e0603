// How the one running call is controlled from outside the isolate: stopped (CancelToken), given
// its fetches (Fetcher) and made to wait (Waiter). Plain types with no V8 in them, so that the
// daemon's side (the pool, the server) and the sandbox process's side share them; the isolate
// runner (isolate_runner.h) is what calls them.
#pragma once

#include <chrono>
#include <concepts>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "gateway/request.h"

namespace codemode::channel {

// Stops a running call from another thread. One token per call: once cancelled it stays so.
// cancel() before the call starts makes the call return at once without running any code;
// cancel() during the call terminates the isolate; after the call it does nothing.
// The call reports `runtime: cancelled`; the caller decides whether anyone hears of it.
class CancelToken {
 public:
  void cancel();
  bool cancelled() const;

 private:
  friend class CancelRegistration;
  mutable std::mutex mutex_;
  bool cancelled_ = false;
  std::function<void()> on_cancel_;  // set by the running call, under mutex_
};

// Hooks a running call into a token for the call's duration. The hook runs under the token's
// mutex, so once the registration is destroyed no cancel() can reach the (disposed) isolate.
class CancelRegistration {
 public:
  CancelRegistration(CancelToken* token, std::function<void()> hook) : token_(token) {
    if (!token_) return;
    std::lock_guard lock(token_->mutex_);
    token_->on_cancel_ = std::move(hook);
    if (token_->cancelled_) token_->on_cancel_();
  }
  ~CancelRegistration() {
    if (!token_) return;
    std::lock_guard lock(token_->mutex_);
    token_->on_cancel_ = nullptr;
  }
  CancelRegistration(const CancelRegistration&) = delete;
  CancelRegistration& operator=(const CancelRegistration&) = delete;

 private:
  CancelToken* token_;
};

// How a fetch answers its call: once with its result, from any thread, possibly after the call
// has ended (the runner then drops it). Before that, a request that waits for a person's yes
// (policy.approve) says when the wait starts and ends (`waiting(true)`, `waiting(false)`): the
// call's wall clock stands still in between. The code may give up on the fetch before its answer
// (abort()). Whoever wraps a FetchDone keeps its hook and its abort (wrap()).
class FetchDone {
 public:
  FetchDone() = default;
  template <class F>
  requires std::invocable<F&, gateway::FetchResult>
  // NOLINTNEXTLINE(google-explicit-constructor): any completion is a FetchDone without a hook
  FetchDone(F done, std::function<void(bool)> waiting = {})
      : done_(std::move(done)), waiting_(std::move(waiting)) {}

  void operator()(gateway::FetchResult result) const { done_(std::move(result)); }
  // The waiting hook; empty when nobody listens.
  const std::function<void(bool)>& waiting() const { return waiting_; }
  // Another completion with this one's waiting hook and abort.
  template <class F>
  FetchDone wrap(F done) const {
    FetchDone wrapped(std::move(done), waiting_);
    wrapped.abort_ = abort_;
    return wrapped;
  }
  // How the code's side gives up on this fetch (its AbortSignal, its call ending); null when it
  // cannot. The side that sends the request hooks into it (FetchAbort::on_abort).
  const std::shared_ptr<gateway::FetchAbort>& abort() const { return abort_; }
  void set_abort(std::shared_ptr<gateway::FetchAbort> abort) { abort_ = std::move(abort); }

 private:
  std::function<void(gateway::FetchResult)> done_;
  std::function<void(bool)> waiting_;
  std::shared_ptr<gateway::FetchAbort> abort_;
};

// How an execute call's fetch() leaves the isolate. Called on the worker thread with the
// request as plain data; it must call `done` exactly once (FetchDone).
using Fetcher = std::function<void(gateway::OutboundRequest request, FetchDone done)>;

// How long a call's thread may keep running, on its CPU clock, past cpu_ms once its termination
// has been requested, before the watchdog gives up on V8's termination and calls
// Waiter::runaway(). The termination lands at the code's next interrupt check and CPU timers
// fire on the kernel's tick, so ordinary code stops a few milliseconds past cpu_ms (a busy loop
// ~4 ms); only a builtin that never checks (one String.prototype.replaceAll over megabytes) runs
// on, for as long as it needs. 100 ms is 25 times that overshoot, so the hook never ends a call
// that was about to stop (in a sandbox process that costs a replacement process), and short
// against the seconds such a builtin takes.
inline constexpr std::chrono::milliseconds kRunawayGrace{100};

// How a call waits while its promise depends on fetches and timers. Without one, the call
// sleeps until a Fetcher's `done` (on any thread) or a limit wakes it. A sandbox process passes
// its own (child.cpp), which its channel reader wakes when a fetch reply has been delivered, and
// which ends the process when the call runs away (runaway()).
class Waiter {
 public:
  virtual ~Waiter() = default;
  // On the call's thread: returns at `deadline`, after wake(), or once a Fetcher's `done` may
  // have run on this thread. Returning early is harmless.
  virtual void wait_until(std::chrono::steady_clock::time_point deadline) = 0;
  // Any thread, during the call: the current wait_until() returns soon, or the next one at once.
  virtual void wake() = 0;
  // The call's termination did not stop it: its thread has kept running for kRunawayGrace of CPU
  // time past cpu_ms after the termination was requested, inside code that never reaches V8's
  // interrupt check, and only killing what runs it stops it. `cpu_used`: the call's CPU time so
  // far (at least cpu_ms + kRunawayGrace). Called at most once per call, on the watchdog's
  // thread, under the watchdog's lock: the call cannot end while this runs (ending it disarms
  // the watchdog, which takes that lock), so this must not wait for the call's thread. The
  // default does nothing: a worker thread of the calling process cannot be killed on its own,
  // and its call ends when the builtin returns. A sandbox process's waiter sends the call's
  // result and exits.
  virtual void runaway(std::chrono::milliseconds /*cpu_used*/) {}
};

}  // namespace codemode::channel
