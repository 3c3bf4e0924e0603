#include "isolate/watchdog.h"

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace codemode::isolate::detail {

namespace {

std::chrono::nanoseconds thread_cpu_time(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

}  // namespace

// The per-thread half of Watchdog (watchdog.h): the timers and the thread their signals go to.
class WatchdogThread {
 public:
  // The worker's own CPU clock: the timer measures the thread that runs the calls.
  explicit WatchdogThread(clockid_t cpu_clock) : cpu_clock_(cpu_clock) {
    // The signal is blocked in the watchdog thread from its first instant (threads inherit the
    // mask), so it is only ever taken by sigwaitinfo() there, never acted on by default.
    sigset_t only{}, previous{};
    ::sigemptyset(&only);
    ::sigaddset(&only, signal_number());
    ::pthread_sigmask(SIG_BLOCK, &only, &previous);
    thread_ = std::thread([this] { loop(); });
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    std::unique_lock lock(mutex_);
    started_.wait(lock, [this] { return tid_ != 0; });
    timers_ready_ =
        make_timer(cpu_clock_, kCpu, cpu_timer_) && make_timer(CLOCK_MONOTONIC, kWall, wall_timer_);
  }
  ~WatchdogThread() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    sigval value{};
    value.sival_int = kStop;
    ::pthread_sigqueue(thread_.native_handle(), signal_number(), value);
    thread_.join();
    if (timers_ready_) {
      ::timer_delete(cpu_timer_);
      ::timer_delete(wall_timer_);
    }
  }
  // False when the timers could not be made: the caller must not run code unwatched.
  bool usable() const { return timers_ready_; }

  // `cpu_start` and `cpu_limit` on the worker's CPU clock.
  void arm(Interrupts* interrupts, std::chrono::nanoseconds cpu_start,
           std::chrono::nanoseconds cpu_limit, Clock::time_point wall_deadline) {
    std::lock_guard lock(mutex_);
    interrupts_ = interrupts;
    cpu_start_ = cpu_start;
    cpu_limit_ = cpu_limit;
    cpu_tripped_ = false;
    wall_deadline_ = wall_deadline;
    set(cpu_timer_, cpu_limit);
    set(wall_timer_, wall_deadline.time_since_epoch());
  }
  void disarm() {
    std::lock_guard lock(mutex_);
    interrupts_ = nullptr;
    set(cpu_timer_, std::chrono::nanoseconds::zero());
    set(wall_timer_, std::chrono::nanoseconds::zero());
  }

 private:
  static constexpr int kStop = 0, kCpu = 1, kWall = 2;
  static int signal_number() { return SIGRTMIN + 1; }  // SIGRTMIN is the sandbox's cancel signal

  bool make_timer(clockid_t clock, int which, timer_t& timer) {
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = signal_number();
    event.sigev_value.sival_int = which;
    event._sigev_un._tid = tid_;
    return ::timer_create(clock, &event, &timer) == 0;
  }
  // Absolute on the timer's clock; zero disarms.
  void set(timer_t timer, std::chrono::nanoseconds at) {
    if (!timers_ready_) return;
    itimerspec spec{};
    spec.it_value.tv_sec = static_cast<time_t>(at.count() / 1'000'000'000);
    spec.it_value.tv_nsec = static_cast<long>(at.count() % 1'000'000'000);
    ::timer_settime(timer, TIMER_ABSTIME, &spec, nullptr);
  }

  void loop() {
    {
      std::lock_guard lock(mutex_);
      tid_ = static_cast<pid_t>(::gettid());
    }
    started_.notify_all();
    sigset_t wanted{};
    ::sigemptyset(&wanted);
    ::sigaddset(&wanted, signal_number());
    for (;;) {
      siginfo_t info{};
      if (::sigwaitinfo(&wanted, &info) != signal_number()) continue;
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (interrupts_ == nullptr) continue;  // the call ended before its timer's signal came
      const int which = info.si_value.sival_int;
      if (which == kCpu) {
        const std::chrono::nanoseconds used = thread_cpu_time(cpu_clock_);
        if (!cpu_tripped_ && used >= cpu_limit_) {
          interrupts_->trip(Stop::cpu);
          // The backstop: the call stays armed, and its CPU timer fires again kRunawayGrace
          // later; still running then, it is in code the termination does not reach.
          cpu_tripped_ = true;
          set(cpu_timer_, cpu_limit_ + channel::kRunawayGrace);
        } else if (cpu_tripped_ && used >= cpu_limit_ + channel::kRunawayGrace) {
          interrupts_->runaway(
              std::chrono::duration_cast<std::chrono::milliseconds>(used - cpu_start_));
          interrupts_ = nullptr;  // at most once per call
        }
      } else if (which == kWall) {
        // Moved by the time fetches waited for a person (Mailbox::hold): not yet, look again
        // when it could be.
        Mailbox& mailbox = *interrupts_->mailbox();
        const Clock::time_point now = Clock::now();
        const Clock::time_point again = mailbox.earliest_deadline(wall_deadline_);
        if (now < mailbox.deadline(wall_deadline_) && again > now) {
          set(wall_timer_, again.time_since_epoch());
          continue;
        }
        // Stays armed for the CPU backstop; the wall timer does not fire again for this call.
        interrupts_->trip(Stop::wall);
      }
    }
  }

  const clockid_t cpu_clock_;
  std::mutex mutex_;
  std::condition_variable started_;
  pid_t tid_ = 0;  // the watchdog thread, where the timers' signals go
  timer_t cpu_timer_{};
  timer_t wall_timer_{};
  bool timers_ready_ = false;
  bool stopping_ = false;
  Interrupts* interrupts_ = nullptr;  // armed when set, under mutex_
  std::chrono::nanoseconds cpu_start_{};
  std::chrono::nanoseconds cpu_limit_{};
  bool cpu_tripped_ = false;  // the CPU timer now waits for cpu_limit_ + kRunawayGrace
  Clock::time_point wall_deadline_;
  std::thread thread_;
};

Watchdog::Watchdog(Interrupts& interrupts, clockid_t cpu_clock, std::chrono::nanoseconds cpu_budget,
                   Clock::time_point wall_deadline) {
  thread_local WatchdogThread watchdog(cpu_clock);
  watchdog_ = &watchdog;
  if (!watchdog_->usable()) return;
  const std::chrono::nanoseconds start = thread_cpu_time(cpu_clock);
  watchdog_->arm(&interrupts, start, start + cpu_budget, wall_deadline);
}

Watchdog::~Watchdog() { watchdog_->disarm(); }

bool Watchdog::usable() const { return watchdog_->usable(); }

}  // namespace codemode::isolate::detail
