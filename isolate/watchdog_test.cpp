// The watchdog's backstop behind cpu_ms, as a call's Waiter sees it: a builtin that never reaches
// V8's interrupt check is reported once it runs kRunawayGrace past cpu_ms; code that termination
// stops is never reported.
#include <pthread.h>
#include <time.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <catch2/catch.hpp>

#include "isolate/isolate_runner.h"

using namespace codemode;
using namespace codemode::isolate;
using std::chrono::milliseconds;

namespace {

milliseconds cpu_time(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return std::chrono::duration_cast<milliseconds>(std::chrono::seconds(ts.tv_sec) +
                                                  std::chrono::nanoseconds(ts.tv_nsec));
}

clockid_t this_thread_cpu_clock() {
  clockid_t clock{};
  pthread_getcpuclockid(pthread_self(), &clock);
  return clock;
}

// Waits as the runner's own mailbox would, and records runaway(): how often, the CPU time it was
// given, and the call's thread's CPU clock read independently when it ran.
class RecordingWaiter final : public channel::Waiter {
 public:
  explicit RecordingWaiter(clockid_t call_clock) : call_clock_(call_clock) {}

  void wait_until(std::chrono::steady_clock::time_point deadline) override {
    std::unique_lock lock(mutex_);
    woken_.wait_until(lock, deadline, [this] { return wake_; });
    wake_ = false;
  }
  void wake() override {
    std::lock_guard lock(mutex_);
    wake_ = true;
    woken_.notify_all();
  }
  void runaway(milliseconds cpu_used) override {
    std::lock_guard lock(mutex_);
    ++runaways_;
    reported_ = cpu_used;
    clock_at_runaway_ = cpu_time(call_clock_);
  }

  int runaways() {
    std::lock_guard lock(mutex_);
    return runaways_;
  }
  milliseconds reported() {
    std::lock_guard lock(mutex_);
    return reported_;
  }
  milliseconds clock_at_runaway() {
    std::lock_guard lock(mutex_);
    return clock_at_runaway_;
  }

 private:
  const clockid_t call_clock_;
  std::mutex mutex_;
  std::condition_variable woken_;
  bool wake_ = false;
  int runaways_ = 0;
  milliseconds reported_{};
  milliseconds clock_at_runaway_{};
};

config::Limits backstop_limits() {
  config::Limits limits;
  limits.cpu_ms = 50;
  limits.wall_ms = 20000;  // the runaway below runs to its end in-process: no wall trip meanwhile
  // Room above the runaway's 50 MB of strings: at 64 MB a machine busy enough to slow V8's
  // concurrent GC threads reached the heap limit first ("memory: heap limit 64 MB exceeded"
  // instead of the timeout, seen with two busy loops beside the test), and this file is about
  // the CPU backstop.
  limits.heap_mb = 256;
  return limits;
}

}  // namespace

TEST_CASE("a builtin that never reaches an interrupt check is reported to the waiter once",
          "[sandbox][limits][watchdog]") {
  const config::Limits limits = backstop_limits();
  PreparedIsolate isolate(PrepareRequest{channel::Tool::execute, limits});
  const clockid_t clock = this_thread_cpu_clock();
  RecordingWaiter waiter(clock);
  // One replaceAll over 20 million characters, with no interrupt check inside: ~1.2 s of CPU on
  // V8 14 here (5 million ran ~0.25 s, too close to the runaway report's 150 ms plus the margin
  // checked below). Nothing kills this thread, so the builtin runs to its end and the
  // termination lands after it.
  const milliseconds before = cpu_time(clock);
  channel::Outcome o = isolate.run("async () => 'ab'.repeat(1e7).replaceAll('a', 'cc').length",
                                   nullptr, nullptr, &waiter);
  const milliseconds after = cpu_time(clock);
  CHECK(std::string(to_string(o.error_kind)) + ": " + o.error_message ==
        "timeout: cpu limit 50 ms exceeded");
  REQUIRE(waiter.runaways() == 1);
  const milliseconds limit(limits.cpu_ms);
  CHECK(waiter.reported() >= limit + channel::kRunawayGrace);
  CHECK(waiter.reported() <= limit + channel::kRunawayGrace + milliseconds(100));
  // The figure agrees with the thread's CPU clock (which also counts the compile before the
  // watchdog was armed, hence the few milliseconds more).
  const milliseconds used_at_runaway = waiter.clock_at_runaway() - before;
  CHECK(used_at_runaway >= waiter.reported());
  CHECK(used_at_runaway <= limit + channel::kRunawayGrace + milliseconds(100));
  // The hook came while the builtin was still running: it went on well past it.
  CHECK(after - before > used_at_runaway + milliseconds(50));
}

TEST_CASE("code that termination stops is never reported as a runaway",
          "[sandbox][limits][watchdog]") {
  const config::Limits limits = backstop_limits();
  for (const char* code : {
           "async () => { for (;;) {} }",
           "async () => { for (;;) await null; }",
           "async () => /(a+)+$/.test('a'.repeat(40) + 'b')",
       }) {
    INFO(code);
    PreparedIsolate isolate(PrepareRequest{channel::Tool::execute, limits});
    RecordingWaiter waiter(this_thread_cpu_clock());
    channel::Outcome o = isolate.run(code, nullptr, nullptr, &waiter);
    CHECK(o.error_message == "cpu limit 50 ms exceeded");
    CHECK(waiter.runaways() == 0);
  }
}
