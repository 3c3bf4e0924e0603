// How the one running call is controlled from outside the isolate: stopped (CancelToken), given
// its fetches (Fetcher) and made to wait (Waiter). Plain types with no V8 in them, so that the
// daemon's side (the pool, the server) and the sandbox process's side share them; the isolate
// runner (isolate_runner.h) is what calls them.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <utility>

#include "gateway/request.h"

namespace codemode::sandbox {

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

// How an execute call's fetch() leaves the isolate. Called on the worker thread with the
// request as plain data; it must call `done` exactly once, from any thread, possibly after the
// call has ended (the runner then drops the result).
using Fetcher = std::function<void(gateway::OutboundRequest request,
                                   std::function<void(gateway::FetchResult result)> done)>;

// How a call waits while its promise depends on fetches and timers. Without one, the call
// sleeps until a Fetcher's `done` (on any thread) or a limit wakes it. A sandbox process passes
// its own, which reads the channel on the call's thread while it waits, so a fetch reply reaches
// the isolate without a hop through another thread.
class Waiter {
 public:
  virtual ~Waiter() = default;
  // On the call's thread: returns at `deadline`, after wake(), or once a Fetcher's `done` may
  // have run on this thread. Returning early is harmless.
  virtual void wait_until(std::chrono::steady_clock::time_point deadline) = 0;
  // Any thread, during the call: the current wait_until() returns soon, or the next one at once.
  virtual void wake() = 0;
};

}  // namespace codemode::sandbox
