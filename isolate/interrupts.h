// What reaches a running call from other threads: why it must stop (Stop, Interrupts) and the
// fetch completions it waits for (Mailbox). Shared by the runner, the watchdog, the near-heap-limit
// callback, a canceller and fetch(). Internal to isolate/.
#pragma once

#include <v8.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "channel/call_control.h"
#include "gateway/request.h"

namespace codemode::isolate::detail {

using Clock = std::chrono::steady_clock;

// Why a call stopped early. The first reason wins; later ones are ignored.
enum class Stop { none, cpu, wall, heap, cancelled };

// Where fetch completions arrive, from the gateway's I/O thread. Shared with every pending
// completion, so one that arrives after the call has ended finds it closed and is dropped.
struct Mailbox {
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::pair<std::uint32_t, gateway::FetchResult>> arrived;
  bool closed = false;

  void deliver(std::uint32_t id, gateway::FetchResult result) {
    std::lock_guard lock(mutex);
    if (closed) return;
    arrived.emplace_back(id, std::move(result));
    wake.notify_all();
  }
  void close() {
    std::lock_guard lock(mutex);
    closed = true;
    arrived.clear();
  }

  // A fetch starts (true) or stops (false) waiting for a person; the call's wall clock stands
  // still while any does.
  void hold(bool waiting) {
    std::lock_guard lock(mutex);
    if (closed) return;
    if (waiting) {
      if (holds_++ == 0) held_since_ = Clock::now();
    } else if (holds_ > 0 && --holds_ == 0) {
      held_for_ += Clock::now() - held_since_;
    }
    wake.notify_all();
  }
  // The wall deadline `base` moved by the time fetches waited for people: none while one waits.
  Clock::time_point deadline(Clock::time_point base) {
    std::lock_guard lock(mutex);
    return holds_ > 0 ? Clock::time_point::max() : base + held_for_;
  }
  // While a fetch waits: the earliest the deadline can be once it stops waiting.
  Clock::time_point earliest_deadline(Clock::time_point base) {
    std::lock_guard lock(mutex);
    return holds_ > 0 ? base + held_for_ + (Clock::now() - held_since_) : base + held_for_;
  }

 private:
  unsigned holds_ = 0;
  Clock::time_point held_since_;
  Clock::duration held_for_{};
};

// State shared between the worker (which runs JS and waits for timers and fetches), the
// watchdog thread, the near-heap-limit callback and a canceller. trip() may run on any of them.
class Interrupts {
 public:
  explicit Interrupts(v8::Isolate* isolate) : isolate_(isolate) {}

  void trip(Stop reason) {
    Stop expected = Stop::none;
    if (!reason_.compare_exchange_strong(expected, reason)) return;
    isolate_->TerminateExecution();
    wake();
  }
  Stop reason() const { return reason_.load(); }
  v8::Isolate* isolate() const { return isolate_; }
  const std::shared_ptr<Mailbox>& mailbox() const { return mailbox_; }
  // The call's own way of waiting (Waiter), for the duration of the call; null: the mailbox's.
  void use_waiter(channel::Waiter* waiter) { waiter_ = waiter; }
  // Watchdog thread: the call runs on past its termination (Waiter::runaway); without a Waiter
  // nobody can stop it, and nothing happens.
  void runaway(std::chrono::milliseconds cpu_used) {
    if (channel::Waiter* waiter = waiter_.load()) waiter->runaway(cpu_used);
  }

  // Worker: sleeps until `deadline`, a trip, or a fetch completion.
  void wait_until(Clock::time_point deadline) {
    if (channel::Waiter* waiter = waiter_.load()) {
      if (reason_.load() != Stop::none || has_arrived()) return;
      waiter->wait_until(deadline);
      return;
    }
    std::unique_lock lock(mailbox_->mutex);
    mailbox_->wake.wait_until(lock, deadline, [this] {
      return reason_.load() != Stop::none || !mailbox_->arrived.empty();
    });
  }
  // Worker: the completions that have arrived, oldest first.
  std::deque<std::pair<std::uint32_t, gateway::FetchResult>> take_arrived() {
    std::lock_guard lock(mailbox_->mutex);
    return std::exchange(mailbox_->arrived, {});
  }

 private:
  void wake() {
    if (channel::Waiter* waiter = waiter_.load()) waiter->wake();
    std::lock_guard lock(mailbox_->mutex);
    mailbox_->wake.notify_all();
  }
  bool has_arrived() {
    std::lock_guard lock(mailbox_->mutex);
    return !mailbox_->arrived.empty();
  }

  v8::Isolate* isolate_;
  std::atomic<Stop> reason_{Stop::none};
  std::atomic<channel::Waiter*> waiter_{nullptr};
  std::shared_ptr<Mailbox> mailbox_ = std::make_shared<Mailbox>();
};

}  // namespace codemode::isolate::detail
