// The limits a call cannot break by never waiting: cpu_ms and wall_ms. Internal to sandbox/.
#pragma once

#include <time.h>

#include <chrono>

#include "isolate/interrupts.h"

namespace codemode::isolate::detail {

class WatchdogThread;

// Enforces cpu_ms on the worker's CPU clock and wall_ms on the steady clock, with two POSIX
// timers that signal the watchdog thread when a limit is reached: arming and disarming them
// for a call are system calls on the worker's thread, and the watchdog thread sleeps in
// sigwaitinfo() until a limit is really reached. (Waking a watchdog thread at every call cost
// a sandbox process a tenth of its CPU under load.) The kernel checks CPU-time timers on its
// scheduler tick, so a busy loop overshoots cpu_ms by a few milliseconds at most.
//
// Behind cpu_ms, a backstop: V8's termination cannot stop a builtin that never reaches an
// interrupt check. The trip itself comes from the timer's signal, whether or not the code ever
// checks; after it the CPU timer is set again at cpu_ms + kRunawayGrace, and a call whose thread
// is still running then gets its Waiter's runaway(), once, on the watchdog thread and under the
// mutex its disarming takes (call_control.h). Whichever trip came first (cpu, or an earlier
// wall, heap or cancel), the termination was requested by the time the thread reached cpu_ms,
// so the one path covers them all.
//
// One watchdog thread per worker thread, started with its first call and kept (a thread per
// call cost a clone, a stack mapping and a join every time). A Watchdog arms it for one call;
// its destructor disarms it under the same mutex the watchdog trips under, so once the
// destructor returns (before the isolate is disposed) nothing can reach the isolate. A timer
// signal that arrives late, for a call already over or re-armed for a later deadline, finds the
// limit not reached and is ignored.
class Watchdog {
 public:
  // False in `usable` when this thread's watchdog has no timers (then nothing may run).
  Watchdog(Interrupts& interrupts, clockid_t cpu_clock, std::chrono::nanoseconds cpu_budget,
           Clock::time_point wall_deadline);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  bool usable() const;

 private:
  WatchdogThread* watchdog_;
};

}  // namespace codemode::isolate::detail
