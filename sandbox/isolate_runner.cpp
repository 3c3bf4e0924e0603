#include "sandbox/isolate_runner.h"

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <v8.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include "base/check.h"
#include "sandbox/spec_view.h"
#include "sandbox/v8_platform.h"

namespace codemode::embedded {
std::string_view sandbox_bootstrap_js();
std::string_view sandbox_url_js();
std::string_view sandbox_fetch_js();
std::string_view sandbox_warm_js();
}  // namespace codemode::embedded

namespace codemode::sandbox {

// ------------------------------------------------------------------------------------------
// SpecSource, CancelToken

void CancelToken::cancel() {
  std::lock_guard lock(mutex_);
  if (cancelled_) return;
  cancelled_ = true;
  if (on_cancel_) on_cancel_();
}

bool CancelToken::cancelled() const {
  std::lock_guard lock(mutex_);
  return cancelled_;
}

namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMB = 1024 * 1024;
constexpr std::size_t kMaxLogLines = 100;
constexpr std::size_t kMaxLogChars = 8000;
constexpr std::size_t kMaxErrorChars = 2000;
// Pending setTimeout callbacks of one call. Each holds host memory (two global handles and a map
// node) that the heap cap does not see.
constexpr std::size_t kMaxTimers = 10000;
// How far past heap_mb the near-heap-limit callback lets the heap grow while a termination is on
// its way. V8 cannot fail an allocation: a limit it cannot allocate under aborts the process, and
// one uninterruptible builtin (String.prototype.split, JSON.stringify of a huge string) may need
// up to 1 GiB in one object on top of what is live. Past this, V8 aborts, as it would anyway.
constexpr std::size_t kMaxHeapOvershoot = 3072 * kMB;

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
  void use_waiter(Waiter* waiter) { waiter_ = waiter; }

  // Worker: sleeps until `deadline`, a trip, or a fetch completion.
  void wait_until(Clock::time_point deadline) {
    if (Waiter* waiter = waiter_.load()) {
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
    if (Waiter* waiter = waiter_.load()) waiter->wake();
    std::lock_guard lock(mailbox_->mutex);
    mailbox_->wake.notify_all();
  }
  bool has_arrived() {
    std::lock_guard lock(mailbox_->mutex);
    return !mailbox_->arrived.empty();
  }

  v8::Isolate* isolate_;
  std::atomic<Stop> reason_{Stop::none};
  std::atomic<Waiter*> waiter_{nullptr};
  std::shared_ptr<Mailbox> mailbox_ = std::make_shared<Mailbox>();
};

std::chrono::nanoseconds thread_cpu_time(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// Enforces cpu_ms on the worker's CPU clock and wall_ms on the steady clock, with two POSIX
// timers that signal the watchdog thread when a limit is reached: arming and disarming them
// for a call are system calls on the worker's thread, and the watchdog thread sleeps in
// sigwaitinfo() until a limit is really reached. (Waking a watchdog thread at every call cost
// a sandbox process a tenth of its CPU under load.) The kernel checks CPU-time timers on its
// scheduler tick, so a busy loop overshoots cpu_ms by a few milliseconds at most.
//
// One watchdog thread per worker thread, started with its first call and kept (a thread per
// call cost a clone, a stack mapping and a join every time). A Watchdog arms it for one call;
// its destructor disarms it under the same mutex the watchdog trips under, so once the
// destructor returns (before the isolate is disposed) nothing can reach the isolate. A timer
// signal that arrives late, for a call already over or re-armed for a later deadline, finds the
// limit not reached and is ignored.
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

  void arm(Interrupts* interrupts, std::chrono::nanoseconds cpu_limit,
           Clock::time_point wall_deadline) {
    std::lock_guard lock(mutex_);
    interrupts_ = interrupts;
    cpu_limit_ = cpu_limit;
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
      if (which == kCpu && thread_cpu_time(cpu_clock_) >= cpu_limit_) {
        interrupts_->trip(Stop::cpu);
        interrupts_ = nullptr;  // one trip per call
      } else if (which == kWall && Clock::now() >= wall_deadline_) {
        interrupts_->trip(Stop::wall);
        interrupts_ = nullptr;
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
  std::chrono::nanoseconds cpu_limit_{};
  Clock::time_point wall_deadline_;
  std::thread thread_;
};

class Watchdog {
 public:
  // False in `usable` when this thread's watchdog has no timers (then nothing may run).
  Watchdog(Interrupts& interrupts, clockid_t cpu_clock, std::chrono::nanoseconds cpu_budget,
           Clock::time_point wall_deadline) {
    thread_local WatchdogThread watchdog(cpu_clock);
    watchdog_ = &watchdog;
    if (!watchdog_->usable()) return;
    watchdog_->arm(&interrupts, thread_cpu_time(cpu_clock) + cpu_budget, wall_deadline);
  }
  ~Watchdog() { watchdog_->disarm(); }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  bool usable() const { return watchdog_->usable(); }

 private:
  WatchdogThread* watchdog_;
};

// ArrayBuffer memory lives outside the V8 heap cap; this allocator gives it its own budget.
// Free() may run on V8's background threads, hence the atomic.
class BudgetAllocator final : public v8::ArrayBuffer::Allocator {
 public:
  explicit BudgetAllocator(std::size_t budget) : budget_(budget) {}
  void* Allocate(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* p = std::calloc(std::max<std::size_t>(length, 1), 1);
    if (!p) used_ -= length;
    return p;
  }
  void* AllocateUninitialized(std::size_t length) override {
    if (!reserve(length)) return nullptr;
    void* p = std::malloc(std::max<std::size_t>(length, 1));
    if (!p) used_ -= length;
    return p;
  }
  void Free(void* data, std::size_t length) override {
    std::free(data);
    used_ -= length;
  }
  bool refused() const { return refused_.load(); }

 private:
  bool reserve(std::size_t length) {
    if (used_.fetch_add(length) + length > budget_) {
      used_ -= length;
      refused_ = true;
      return false;
    }
    return true;
  }
  const std::size_t budget_;
  std::atomic<std::size_t> used_{0};
  std::atomic<bool> refused_{false};
};

// console.* output of one call, bounded by lines and characters.
class LogSink {
 public:
  // `unconverted`: characters of the line that were dropped before they reached the host.
  void add(int level, std::string_view text, std::size_t unconverted = 0) {
    static constexpr std::string_view kPrefix[] = {"", "[info] ", "[warn] ", "[error] ",
                                                   "[debug] "};
    if (lines_.size() >= kMaxLogLines || chars_ >= kMaxLogChars) {
      ++dropped_;
      return;
    }
    std::string line(kPrefix[level < 0 || level > 4 ? 0 : level]);
    line += text;
    if (chars_ + line.size() > kMaxLogChars || unconverted > 0) {
      const std::size_t keep = std::min(kMaxLogChars - chars_, line.size());
      const std::size_t cut = line.size() - keep + unconverted;
      line.resize(keep);
      while (!line.empty() && (static_cast<unsigned char>(line.back()) & 0xC0) == 0x80) {
        line.pop_back();  // do not split a UTF-8 sequence
      }
      if (!line.empty() && static_cast<unsigned char>(line.back()) >= 0xC0) line.pop_back();
      line += "…[" + std::to_string(cut) + " chars dropped]";
    }
    chars_ += line.size();
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> take() {
    if (dropped_ > 0) lines_.push_back("…[" + std::to_string(dropped_) + " more lines dropped]");
    return std::move(lines_);
  }

 private:
  std::vector<std::string> lines_;
  std::size_t chars_ = 0;
  std::size_t dropped_ = 0;
};

struct Timer {
  std::uint32_t id;
  v8::Global<v8::Function> callback;
  v8::Global<v8::Array> args;
};

// Everything the host functions of one call reach through the isolate's data slot.
struct CallState {
  LogSink logs;
  std::multimap<std::pair<Clock::time_point, std::uint64_t>, Timer> timers;
  std::uint64_t timer_sequence = 0;
  std::uint32_t next_timer_id = 1;
  Clock::time_point wall_deadline;
  std::size_t clone_budget = 0;  // bytes a structuredClone may serialise to (heap_mb)
  // execute only: fetch() through the gateway.
  const Fetcher* fetcher = nullptr;
  std::shared_ptr<Mailbox> mailbox;
  std::uint32_t next_fetch_id = 1;
  std::map<std::uint32_t, v8::Global<v8::Promise::Resolver>> fetches;  // pending
  std::map<std::uint32_t, std::string> bodies;  // arrived, not yet read by hostReadBody
  // The gateway's refusals as rejected: the error object, to recognise it if the code lets it
  // escape, and the gateway's own message, which is what the outcome reports. The object's
  // `message` is the code's to rewrite; the kind and the text of a policy outcome are not.
  struct Refusal {
    v8::Global<v8::Value> error;
    std::string message;
  };
  std::vector<Refusal> policy_errors;
};

CallState& state_of(v8::Isolate* isolate) { return *static_cast<CallState*>(isolate->GetData(0)); }

v8::Local<v8::String> v8_string(v8::Isolate* isolate, std::string_view text) {
  return v8::String::NewFromUtf8(isolate, text.data(), v8::NewStringType::kNormal,
                                 static_cast<int>(text.size()))
      .ToLocalChecked();
}

// At most `max_bytes` of a string's UTF-8 (whole characters), and how many UTF-16 units were
// left out. Code can make strings of 2^29 characters; the host copies only what it keeps.
struct Utf8Prefix {
  std::string text;
  std::size_t dropped = 0;
};
Utf8Prefix utf8_prefix(v8::Isolate* isolate, v8::Local<v8::String> value, std::size_t max_bytes) {
  const std::size_t length = static_cast<std::size_t>(value->Length());
  Utf8Prefix out;
  out.text.resize(std::min(length * 3, max_bytes));
  int units = 0;
  const int written =
      value->WriteUtf8(isolate, out.text.data(), static_cast<int>(out.text.size()), &units,
                       v8::String::NO_NULL_TERMINATION | v8::String::REPLACE_INVALID_UTF8);
  out.text.resize(static_cast<std::size_t>(std::max(written, 0)));
  out.dropped = length - std::min(length, static_cast<std::size_t>(std::max(units, 0)));
  return out;
}

std::string utf8(v8::Isolate* isolate, v8::Local<v8::Value> value) {
  v8::String::Utf8Value text(isolate, value);
  return *text ? std::string(*text, text.length()) : std::string();
}

void throw_type_error(v8::Isolate* isolate, std::string_view message) {
  isolate->ThrowException(v8::Exception::TypeError(v8_string(isolate, message)));
}

// ------------------------------------------------------------------------------------------
// Host functions. Each is reached only through the bootstrap closure, which checks argument
// types first; the checks here are for invariants, not for the code's benefit.

void host_log(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 2 || !info[0]->IsInt32() || !info[1]->IsString()) return;
  // A little more than a log can hold, so LogSink still sees that it cuts the line.
  Utf8Prefix text = utf8_prefix(isolate, info[1].As<v8::String>(), kMaxLogChars + 4);
  state_of(isolate).logs.add(info[0].As<v8::Int32>()->Value(), text.text, text.dropped);
}

void host_set_timeout(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 3 || !info[0]->IsFunction() || !info[1]->IsNumber() || !info[2]->IsArray()) {
    return throw_type_error(isolate, "setTimeout: bad arguments");
  }
  CallState& state = state_of(isolate);
  if (state.timers.size() >= kMaxTimers) {
    isolate->ThrowException(v8::Exception::RangeError(v8_string(
        isolate, "setTimeout: too many pending timers (" + std::to_string(kMaxTimers) + ")")));
    return;
  }
  const double delay = std::clamp(info[1].As<v8::Number>()->Value(), 0.0, 1e9);
  const auto due =
      Clock::now() + std::chrono::microseconds(static_cast<std::int64_t>(delay * 1000));
  const std::uint32_t id = state.next_timer_id++;
  // A timer due after the wall deadline can never fire; it still counts as pending work, so the
  // call ends as a wall timeout rather than "never settled" — that is what the code asked for.
  state.timers.emplace(std::make_pair(due, state.timer_sequence++),
                       Timer{id, v8::Global<v8::Function>(isolate, info[0].As<v8::Function>()),
                             v8::Global<v8::Array>(isolate, info[2].As<v8::Array>())});
  info.GetReturnValue().Set(id);
}

void host_clear_timeout(const v8::FunctionCallbackInfo<v8::Value>& info) {
  if (info.Length() < 1 || !info[0]->IsNumber()) return;
  const double id = info[0].As<v8::Number>()->Value();
  auto& timers = state_of(info.GetIsolate()).timers;
  for (auto it = timers.begin(); it != timers.end(); ++it) {
    if (it->second.id == id) {
      timers.erase(it);
      return;
    }
  }
}

void host_queue_microtask(const v8::FunctionCallbackInfo<v8::Value>& info) {
  if (info.Length() < 1 || !info[0]->IsFunction()) return;
  info.GetIsolate()->EnqueueMicrotask(info[0].As<v8::Function>());
}

// The serialised form of a structuredClone lives in host memory and is written without interrupt
// checks (one string repeated in an array is copied once per element), so it gets a budget.
// Over the budget V8 throws `Data cannot be cloned, out of memory.`
class CloneDelegate final : public v8::ValueSerializer::Delegate {
 public:
  CloneDelegate(v8::Isolate* isolate, std::size_t budget) : isolate_(isolate), budget_(budget) {}
  void ThrowDataCloneError(v8::Local<v8::String> message) override {
    isolate_->ThrowException(v8::Exception::Error(message));
  }
  void* ReallocateBufferMemory(void* old_buffer, std::size_t size,
                               std::size_t* actual_size) override {
    if (size > budget_) return nullptr;
    void* p = std::realloc(old_buffer, size);
    if (p) *actual_size = size;
    return p;
  }
  void FreeBufferMemory(void* buffer) override { std::free(buffer); }

 private:
  v8::Isolate* isolate_;
  std::size_t budget_;
};

void host_structured_clone(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  CloneDelegate delegate(isolate, state_of(isolate).clone_budget);
  v8::ValueSerializer serializer(isolate, &delegate);
  serializer.WriteHeader();
  if (!serializer.WriteValue(context, info[0]).FromMaybe(false)) return;  // DataCloneError thrown
  const std::pair<std::uint8_t*, std::size_t> buffer = serializer.Release();
  std::unique_ptr<std::uint8_t, decltype(&std::free)> owned(buffer.first, &std::free);
  v8::ValueDeserializer deserializer(isolate, buffer.first, buffer.second);
  if (!deserializer.ReadHeader(context).FromMaybe(false)) return;
  v8::Local<v8::Value> copy;
  if (deserializer.ReadValue(context).ToLocal(&copy)) info.GetReturnValue().Set(copy);
}

// TextEncoder in two steps so that the bytes are allocated by JS (`new Uint8Array(n)`): refused
// by the ArrayBuffer budget there it is a RangeError, while v8::ArrayBuffer::New in the host
// aborts the whole process.
void host_utf8_length(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 1 || !info[0]->IsString())
    return throw_type_error(isolate, "expected a string");
  info.GetReturnValue().Set(info[0].As<v8::String>()->Utf8Length(isolate));
}

void host_utf8_write(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 2 || !info[0]->IsString() || !info[1]->IsUint8Array())
    return throw_type_error(isolate, "expected a string and bytes");
  v8::Local<v8::Uint8Array> view = info[1].As<v8::Uint8Array>();
  const std::size_t capacity = view->ByteLength();
  if (capacity == 0) return;
  char* data = static_cast<char*>(view->Buffer()->GetBackingStore()->Data()) + view->ByteOffset();
  info[0].As<v8::String>()->WriteUtf8(
      isolate, data,
      static_cast<int>(std::min<std::size_t>(capacity, std::numeric_limits<int>::max())), nullptr,
      v8::String::NO_NULL_TERMINATION | v8::String::REPLACE_INVALID_UTF8);
}

bool valid_utf8(const unsigned char* p, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else
      return false;
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

void host_utf8_decode(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  if (info.Length() < 1 || !info[0]->IsUint8Array())
    return throw_type_error(isolate, "expected bytes");
  v8::Local<v8::Uint8Array> view = info[0].As<v8::Uint8Array>();
  std::string bytes(view->ByteLength(), '\0');
  view->CopyContents(bytes.data(), bytes.size());
  if (info.Length() > 1 && info[1]->IsTrue() &&
      !valid_utf8(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size())) {
    return throw_type_error(isolate, "TextDecoder.decode: the input is not valid UTF-8");
  }
  // NewFromUtf8 replaces malformed sequences with U+FFFD, as the WHATWG decoder does.
  v8::Local<v8::String> text;
  if (v8::String::NewFromUtf8(isolate, bytes.data(), v8::NewStringType::kNormal,
                              static_cast<int>(bytes.size()))
          .ToLocal(&text)) {
    info.GetReturnValue().Set(text);
  } else if (!isolate->IsExecutionTerminating()) {
    isolate->ThrowException(
        v8::Exception::RangeError(v8_string(isolate, "TextDecoder.decode: Invalid string length")));
  }
}

// ------------------------------------------------------------------------------------------
// fetch(): the request leaves as plain data; the completion comes back through the Mailbox.

// Bounds on what the host copies out of the isolate for one request, before the gateway's own
// checks: enough for any API call, small enough that hostile code cannot make the host copy
// hundreds of megabytes.
constexpr std::size_t kMaxUrlBytes = 16 * 1024;
constexpr std::size_t kMaxHeaderBytes = 16 * 1024;
constexpr std::uint32_t kMaxHeaders = 100;
constexpr std::size_t kMaxRequestBodyBytes = 8 * kMB;

// Copies a JS string argument of at most `max_bytes` UTF-8 bytes; false (with a TypeError
// thrown) when it is not a string or too long.
bool string_arg(v8::Isolate* isolate, v8::Local<v8::Value> value, std::size_t max_bytes,
                std::string_view what, std::string& out) {
  if (!value->IsString()) {
    throw_type_error(isolate, "fetch: " + std::string(what) + " must be a string");
    return false;
  }
  Utf8Prefix text = utf8_prefix(isolate, value.As<v8::String>(), max_bytes + 1);
  if (text.dropped > 0 || text.text.size() > max_bytes) {
    throw_type_error(isolate, "fetch: " + std::string(what) + " is longer than " +
                                  std::to_string(max_bytes) + " bytes");
    return false;
  }
  out = std::move(text.text);
  return true;
}

// hostFetch(method, url, [[name, value], ...], body: undefined | Uint8Array) -> Promise
void host_fetch(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  v8::Local<v8::Context> context = isolate->GetCurrentContext();
  CallState& state = state_of(isolate);
  if (state.fetcher == nullptr) return throw_type_error(isolate, "fetch: not available here");
  gateway::OutboundRequest request;
  if (info.Length() < 4 || !info[2]->IsArray()) {
    return throw_type_error(isolate, "fetch: bad arguments");
  }
  if (!string_arg(isolate, info[0], 16, "the method", request.method) ||
      !string_arg(isolate, info[1], kMaxUrlBytes, "the URL", request.url)) {
    return;
  }
  v8::Local<v8::Array> headers = info[2].As<v8::Array>();
  if (headers->Length() > kMaxHeaders) {
    return throw_type_error(isolate,
                            "fetch: more than " + std::to_string(kMaxHeaders) + " headers");
  }
  for (std::uint32_t i = 0; i < headers->Length(); ++i) {
    v8::Local<v8::Value> pair, name, value;
    if (!headers->Get(context, i).ToLocal(&pair)) return;
    if (!pair->IsArray()) return throw_type_error(isolate, "fetch: bad header pair");
    if (!pair.As<v8::Array>()->Get(context, 0).ToLocal(&name) ||
        !pair.As<v8::Array>()->Get(context, 1).ToLocal(&value)) {
      return;
    }
    gateway::Header header;
    if (!string_arg(isolate, name, kMaxHeaderBytes, "a header name", header.first) ||
        !string_arg(isolate, value, kMaxHeaderBytes, "a header value", header.second)) {
      return;
    }
    request.headers.push_back(std::move(header));
  }
  if (info[3]->IsUint8Array()) {
    v8::Local<v8::Uint8Array> body = info[3].As<v8::Uint8Array>();
    if (body->ByteLength() > kMaxRequestBodyBytes) {
      return throw_type_error(isolate, "fetch: the request body is larger than " +
                                           std::to_string(kMaxRequestBodyBytes) + " bytes");
    }
    request.body.resize(body->ByteLength());
    body->CopyContents(request.body.data(), request.body.size());
  } else if (!info[3]->IsUndefined()) {
    return throw_type_error(isolate, "fetch: bad body");
  }

  v8::Local<v8::Promise::Resolver> resolver;
  if (!v8::Promise::Resolver::New(context).ToLocal(&resolver)) return;
  const std::uint32_t id = state.next_fetch_id++;
  state.fetches.emplace(id, v8::Global<v8::Promise::Resolver>(isolate, resolver));
  (*state.fetcher)(std::move(request), [mailbox = state.mailbox, id](gateway::FetchResult result) {
    mailbox->deliver(id, std::move(result));
  });
  info.GetReturnValue().Set(resolver->GetPromise());
}

// hostReadBody(bodyId, uint8array): moves an arrived body into memory the code allocated.
void host_read_body(const v8::FunctionCallbackInfo<v8::Value>& info) {
  v8::Isolate* isolate = info.GetIsolate();
  CallState& state = state_of(isolate);
  if (info.Length() < 2 || !info[0]->IsUint32() || !info[1]->IsUint8Array()) {
    return throw_type_error(isolate, "readBody: bad arguments");
  }
  auto body = state.bodies.find(info[0].As<v8::Uint32>()->Value());
  v8::Local<v8::Uint8Array> target = info[1].As<v8::Uint8Array>();
  if (body == state.bodies.end() || target->ByteLength() != body->second.size()) {
    return throw_type_error(isolate, "readBody: no such body");
  }
  if (!body->second.empty()) {
    std::shared_ptr<v8::BackingStore> store = target->Buffer()->GetBackingStore();
    std::memcpy(static_cast<char*>(store->Data()) + target->ByteOffset(), body->second.data(),
                body->second.size());
  }
  state.bodies.erase(body);
}

// ------------------------------------------------------------------------------------------
// Messages

// `unconverted`: characters already left out before the text reached the host.
std::string one_line(std::string text, std::size_t unconverted = 0) {
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (text.size() > kMaxErrorChars || unconverted > 0) {
    const std::size_t cut = text.size() - std::min(text.size(), kMaxErrorChars) + unconverted;
    text.resize(kMaxErrorChars);
    while (!text.empty() && (static_cast<unsigned char>(text.back()) & 0xC0) == 0x80)
      text.pop_back();
    if (!text.empty() && static_cast<unsigned char>(text.back()) >= 0xC0) text.pop_back();
    text += "…[" + std::to_string(cut) + " chars dropped]";
  }
  return text;
}

// "TypeError: x is not a function" for a thrown value, computed by V8 without running any of
// the code's getters (message text is built side-effect free), and without stack frames.
std::string describe_exception(v8::Isolate* isolate, v8::Local<v8::Value> exception) {
  v8::Local<v8::Message> message = v8::Exception::CreateMessage(isolate, exception);
  Utf8Prefix text = utf8_prefix(isolate, message->Get(), kMaxErrorChars + 64);
  constexpr std::string_view kUncaught = "Uncaught ";
  if (text.text.starts_with(kUncaught)) text.text.erase(0, kUncaught.size());
  return one_line(std::move(text.text), text.dropped);
}

std::string stop_message(Stop reason, const config::Limits& limits) {
  switch (reason) {
    case Stop::cpu:
      return "cpu limit " + std::to_string(limits.cpu_ms) + " ms exceeded";
    case Stop::wall:
      return "wall limit " + std::to_string(limits.wall_ms) + " ms exceeded";
    case Stop::heap:
      return "heap limit " + std::to_string(limits.heap_mb) + " MB exceeded";
    case Stop::cancelled:
      return "cancelled";
    case Stop::none:
      break;
  }
  return "stopped";
}

ErrorKind stop_kind(Stop reason) {
  switch (reason) {
    case Stop::cpu:
    case Stop::wall:
      return ErrorKind::timeout;
    case Stop::heap:
      return ErrorKind::memory;
    default:
      return ErrorKind::runtime;
  }
}

// ------------------------------------------------------------------------------------------
// Compilation

v8::MaybeLocal<v8::Script> compile(
    v8::Local<v8::Context> context, std::string_view source, std::string_view name, int line_offset,
    v8::ScriptCompiler::CompileOptions options = v8::ScriptCompiler::kNoCompileOptions) {
  v8::Isolate* isolate = context->GetIsolate();
  v8::ScriptOrigin origin(isolate, v8_string(isolate, name), line_offset);
  v8::ScriptCompiler::Source script_source(v8_string(isolate, source), origin);
  return v8::ScriptCompiler::Compile(context, &script_source, options);
}

v8::Local<v8::Function> host_function(v8::Local<v8::Context> context,
                                      v8::FunctionCallback callback) {
  v8::Isolate* isolate = context->GetIsolate();
  return v8::FunctionTemplate::New(isolate, callback, v8::Local<v8::Value>(),
                                   v8::Local<v8::Signature>(), 0, v8::ConstructorBehavior::kThrow)
      ->GetFunction(context)
      .ToLocalChecked();
}

// Every host function a context of the sandbox can hold, for the startup snapshot: V8 stores a
// function's callback as an index into this list. Null-terminated.
const intptr_t* external_references() {
  static const intptr_t references[] = {
      reinterpret_cast<intptr_t>(host_log),
      reinterpret_cast<intptr_t>(host_set_timeout),
      reinterpret_cast<intptr_t>(host_clear_timeout),
      reinterpret_cast<intptr_t>(host_queue_microtask),
      reinterpret_cast<intptr_t>(host_structured_clone),
      reinterpret_cast<intptr_t>(host_utf8_length),
      reinterpret_cast<intptr_t>(host_utf8_write),
      reinterpret_cast<intptr_t>(host_utf8_decode),
      reinterpret_cast<intptr_t>(host_fetch),
      reinterpret_cast<intptr_t>(host_read_body),
      0,
  };
  return references;
}

// Installs the sandbox's globals (js/bootstrap.js, js/url.js and, with `fetch`, js/fetch.js)
// into a context that no code has run in, and returns the `serialize` function the host keeps.
// Empty, with the exception in `try_catch`, only if the build's own scripts are broken.
v8::MaybeLocal<v8::Function> install_globals(v8::Local<v8::Context> context, FetchGlobal fetch) {
  v8::Isolate* isolate = context->GetIsolate();
  // Compiled whole, not lazily: the snapshot keeps every function's bytecode, so no call
  // compiles any of them again (an execute call with one fetch: 1.7 -> 0.6 ms in the isolate).
  constexpr auto eager = v8::ScriptCompiler::kEagerCompile;
  v8::Local<v8::Object> global = context->Global();
  for (const char* name : {"WebAssembly", "SharedArrayBuffer", "Atomics"}) {
    if (global->Delete(context, v8_string(isolate, name)).IsNothing()) return {};
  }
  v8::Local<v8::Script> script;
  v8::Local<v8::Value> bootstrap, url_factory, kept, serialize;
  if (!compile(context, embedded::sandbox_bootstrap_js(), "bootstrap.js", 0, eager)
           .ToLocal(&script) ||
      !script->Run(context).ToLocal(&bootstrap) || !bootstrap->IsFunction() ||
      !compile(context, embedded::sandbox_url_js(), "url.js", 0, eager).ToLocal(&script) ||
      !script->Run(context).ToLocal(&url_factory)) {
    return {};
  }
  v8::Local<v8::Object> host = v8::Object::New(isolate);
  const std::pair<const char*, v8::FunctionCallback> functions[] = {
      {"log", host_log},
      {"setTimeout", host_set_timeout},
      {"clearTimeout", host_clear_timeout},
      {"queueMicrotask", host_queue_microtask},
      {"structuredClone", host_structured_clone},
      {"utf8Length", host_utf8_length},
      {"utf8Write", host_utf8_write},
      {"utf8Decode", host_utf8_decode},
  };
  for (const auto& [name, callback] : functions) {
    if (host->Set(context, v8_string(isolate, name), host_function(context, callback))
            .IsNothing()) {
      return {};
    }
  }
  if (host->Set(context, v8_string(isolate, "urlFactory"), url_factory).IsNothing()) return {};
  v8::Local<v8::Value> args[] = {host, global};
  if (!bootstrap.As<v8::Function>()
           ->Call(context, v8::Undefined(isolate), 2, args)
           .ToLocal(&kept) ||
      !kept->IsObject() ||
      !kept.As<v8::Object>()->Get(context, v8_string(isolate, "serialize")).ToLocal(&serialize) ||
      !serialize->IsFunction()) {
    return {};
  }
  if (fetch == FetchGlobal::present) {
    v8::Local<v8::Value> factory, ignored;
    v8::Local<v8::Value> fetch_args[] = {global, host_function(context, host_fetch),
                                         host_function(context, host_read_body)};
    if (!compile(context, embedded::sandbox_fetch_js(), "fetch.js", 0, eager).ToLocal(&script) ||
        !script->Run(context).ToLocal(&factory) || !factory->IsFunction() ||
        !factory.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate), 3, fetch_args)
             .ToLocal(&ignored)) {
      return {};
    }
    v8::Local<v8::Value> warm;
    v8::Local<v8::Value> warm_args[] = {global};
    if (!compile(context, embedded::sandbox_warm_js(), "warm.js", 0).ToLocal(&script) ||
        !script->Run(context).ToLocal(&warm) || !warm->IsFunction() ||
        !warm.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate), 1, warm_args)
             .ToLocal(&ignored)) {
      return {};
    }
  }
  return serialize.As<v8::Function>();
}

// The sandbox's globals, made once per process into a V8 startup snapshot: one context with
// install_globals() done without fetch, one with. An isolate created from it deserialises its
// context with the scripts already run and their functions compiled, instead of compiling and
// running them (callgrind, isolate_bench: see bench/README.md). Built on first use, before
// any isolate of the process runs code; the blob lives as long as the process.
class GlobalsSnapshot {
 public:
  static const GlobalsSnapshot& get() {
    static const GlobalsSnapshot* snapshot = new GlobalsSnapshot;
    return *snapshot;
  }
  // Non-const only because CreateParams says so; V8 reads it.
  v8::StartupData* blob() const { return const_cast<v8::StartupData*>(&blob_); }
  // The context index for Context::FromSnapshot; `serialize` is that context's data 0.
  static std::size_t context_index(FetchGlobal fetch) {
    return fetch == FetchGlobal::present ? 1 : 0;
  }

 private:
  GlobalsSnapshot() {
    ensure_v8_initialized();
    v8::SnapshotCreator creator(external_references());
    v8::Isolate* isolate = creator.GetIsolate();
    {
      v8::HandleScope handles(isolate);
      creator.SetDefaultContext(v8::Context::New(isolate));
      for (FetchGlobal fetch : {FetchGlobal::absent, FetchGlobal::present}) {
        v8::Local<v8::Context> context = v8::Context::New(isolate);
        v8::Context::Scope scope(context);
        v8::TryCatch try_catch(isolate);
        v8::Local<v8::Function> serialize;
        if (!install_globals(context, fetch).ToLocal(&serialize)) {
          (void)std::fprintf(stderr, "codemode-mcp: the sandbox's scripts failed to set up: %s\n",
                             try_catch.HasCaught()
                                 ? describe_exception(isolate, try_catch.Exception()).c_str()
                                 : "no exception");
          CODEMODE_CHECK(false, "the build's own scripts set up a context");
        }
        creator.AddData(context, serialize);
        const std::size_t index = creator.AddContext(context);
        CODEMODE_CHECK(index == context_index(fetch), "V8 assigns context indexes in order");
      }
    }
    blob_ = creator.CreateBlob(v8::SnapshotCreator::FunctionCodeHandling::kKeep);
    CODEMODE_CHECK(blob_.data != nullptr && blob_.raw_size > 0, "V8 made the snapshot");
  }
  v8::StartupData blob_{};
};

// Compiles the code as exactly one expression, or returns the SyntaxError text.
//
// Why two wrappers: a single wrapper like `(\n<code>\n)` is escapable, because the code may
// close the wrapper's bracket itself and smuggle statements in between
// (`1); evil(); (2`). So the code must parse in two wrappers whose innermost open bracket
// differs: `(\n<code>\n)` and `({[\n<code>\n]: 0})`. Both parses see the same token stream for
// the code (after `(` and after `[` the lexer is in the same state: a `/` starts a regex), so
// a bracket in the code that closes the wrapper's `(` would have to close the other's `[`
// too, which no grammar allows: one of the two parses fails. Hence when both succeed the
// code is balanced and spans the whole inside of each wrapper. The computed property key
// `[ AssignmentExpression ]` also refuses a top-level comma, so `f, evil()` fails there.
// The newlines keep a trailing `//` comment from eating the closing bracket; an unterminated
// `/*`, string or template swallows the closing bracket and so fails to parse.
// Compiling does not run anything; the first wrapper's script is then run to get the value.
std::variant<v8::Local<v8::Script>, std::string> compile_one_expression(
    v8::Local<v8::Context> context, std::string_view code) {
  v8::Isolate* isolate = context->GetIsolate();
  std::string check = "({[\n";
  check += code;
  check += "\n]: 0})";
  std::string wrapped = "(\n";
  wrapped += code;
  wrapped += "\n)";
  for (const std::string* source : {&check, &wrapped}) {
    v8::TryCatch try_catch(isolate);
    v8::Local<v8::Script> script;
    if (compile(context, *source, "code.js", -1).ToLocal(&script)) {
      if (source == &wrapped) return script;
      continue;
    }
    if (try_catch.HasTerminated()) return std::string("terminated");
    std::string text = try_catch.HasCaught() ? describe_exception(isolate, try_catch.Exception())
                                             : std::string("SyntaxError: the code does not parse");
    return text;
  }
  return std::string("unreachable");
}

size_t near_heap_limit(void* data, size_t current_limit, size_t initial_limit) {
  auto* interrupts = static_cast<Interrupts*>(data);
  interrupts->trip(Stop::heap);
  // V8 aborts the process unless the new limit covers what is already committed (one large
  // object can be admitted past the limit and promoted later) plus the allocation that is
  // waiting, which may be a doubling of something big: so grant twice the heap again. The
  // termination lands at the next interrupt check, and the isolate is then thrown away.
  v8::HeapStatistics stats;
  interrupts->isolate()->GetHeapStatistics(&stats);
  const size_t committed = std::max(current_limit, stats.total_heap_size());
  const size_t wanted = committed + std::max<size_t>(2 * stats.total_heap_size(), 64 * kMB);
  return std::max(current_limit, std::min(wanted, initial_limit + kMaxHeapOvershoot));
}

// One call, inside an isolate that the caller creates and disposes.
class Run {
 public:
  Run(v8::Isolate* isolate, const PrepareRequest& request, Interrupts& interrupts,
      const BudgetAllocator& allocator)
      : isolate_(isolate),
        request_(request),
        limits_(request_.limits),
        interrupts_(interrupts),
        allocator_(allocator) {}

  // The context and the sandbox's globals, before any code is known. False: set-up failed and
  // run() reports why.
  bool prepare() {
    v8::HandleScope handles(isolate_);
    state_.clone_budget = std::size_t{limits_.heap_mb} * kMB;
    isolate_->SetData(0, &state_);
    const FetchGlobal fetch = request_.tool == Tool::execute ? request_.fetch : FetchGlobal::absent;
    v8::Local<v8::Context> context;
    v8::Local<v8::Function> serialize;
    if (!v8::Context::FromSnapshot(isolate_, GlobalsSnapshot::context_index(fetch))
             .ToLocal(&context) ||
        !context->GetDataFromSnapshotOnce<v8::Function>(0).ToLocal(&serialize)) {
      setup_failure_ = Outcome::failure(ErrorKind::runtime,
                                        "sandbox set-up failed: the context did not deserialise");
      return false;
    }
    v8::Context::Scope context_scope(context);
    context_.Reset(isolate_, context);
    serialize_.Reset(isolate_, serialize);
    Outcome failure;
    if (!set_up(context, failure)) {
      setup_failure_ = std::move(failure);
      return false;
    }
    rehearse(context, serialize);
    return true;
  }

  Outcome run(std::string_view code, const Fetcher* fetcher) {
    v8::HandleScope handles(isolate_);
    v8::Local<v8::Context> context = context_.Get(isolate_);
    v8::Context::Scope context_scope(context);
    wall_deadline_ = Clock::now() + std::chrono::milliseconds(limits_.wall_ms);
    state_.fetcher = fetcher;
    Outcome outcome = setup_failure_ ? std::move(*setup_failure_) : run_in(context, code);
    outcome.logs = state_.logs.take();
    interrupts_.mailbox()->close();  // fetches still in flight complete into nothing
    state_.timers.clear();           // the Globals must go while the isolate lives
    state_.fetches.clear();
    state_.policy_errors.clear();
    spec_view_.reset();
    serialize_.Reset();
    context_.Reset();
    isolate_->SetData(0, nullptr);
    return outcome;
  }

 private:
  // A failure caused by a failed JS step: a tripped limit wins over what the step threw.
  Outcome failed(const v8::TryCatch& try_catch) {
    if (interrupts_.reason() != Stop::none) return stopped();
    if (try_catch.HasCaught()) return thrown(try_catch.Exception());
    return Outcome::failure(ErrorKind::runtime, "the code stopped without an exception");
  }
  Outcome stopped() {
    const Stop reason = interrupts_.reason();
    return Outcome::failure(stop_kind(reason), stop_message(reason, limits_));
  }
  Outcome thrown(v8::Local<v8::Value> exception) {
    for (const auto& refusal : state_.policy_errors) {
      if (refusal.error.Get(isolate_)->StrictEquals(exception)) {
        return Outcome::failure(ErrorKind::policy, one_line(refusal.message));
      }
    }
    std::string text = describe_exception(isolate_, exception);
    if (allocator_.refused() && text.starts_with("RangeError: Array buffer allocation failed")) {
      return Outcome::failure(
          ErrorKind::memory,
          "ArrayBuffer limit " + std::to_string(limits_.heap_mb) + " MB exceeded");
    }
    return Outcome::failure(ErrorKind::runtime, std::move(text));
  }

  // What a context from the snapshot needs before its call: what deserialisation does not
  // keep (code generation from strings is a per-context switch; V8 installs SharedArrayBuffer
  // and Atomics again), and what is this call's own.
  bool set_up(v8::Local<v8::Context> context, Outcome& outcome) {
    context->AllowCodeGenerationFromStrings(false);
    v8::Local<v8::Object> global = context->Global();
    v8::TryCatch try_catch(isolate_);
    for (const char* name : {"WebAssembly", "SharedArrayBuffer", "Atomics"}) {
      if (global->Delete(context, v8_string(isolate_, name)).IsNothing()) {
        outcome = setup_failed(try_catch);
        return false;
      }
    }
    if (request_.tool == Tool::execute && request_.fetch == FetchGlobal::present) {
      state_.mailbox = interrupts_.mailbox();
    }
    if (request_.tool == Tool::search && request_.api != nullptr) {
      v8::Local<v8::Value> spec;
      if (!spec_view_.emplace(isolate_, *request_.api).root(context).ToLocal(&spec) ||
          global->Set(context, v8_string(isolate_, "spec"), spec).IsNothing()) {
        outcome = setup_failed(try_catch);
        return false;
      }
    }
    if (request_.extend_context != nullptr) request_.extend_context(isolate_, context);
    return true;
  }

  // A call's path run once with constant code, before the call is known. The first compile,
  // run, microtask checkpoint and serialisation in an isolate pay for work that later ones do
  // not (the compiler's and the microtask queue's first use, code and data not yet in the CPU's
  // caches): rehearsed here, the call's own run() takes less than half the time, for ~1.5%
  // more instructions per isolate (bench/README.md). What it leaves is garbage (a function, a
  // settled promise, a string) and a compiled script of ours; a failure only loses the gain.
  void rehearse(v8::Local<v8::Context> context, v8::Local<v8::Function> serialize) {
    v8::TryCatch ignored(isolate_);
    auto compiled = compile_one_expression(context, "async () => 0");
    auto* script = std::get_if<v8::Local<v8::Script>>(&compiled);
    v8::Local<v8::Value> function;
    v8::Local<v8::Value> promise;
    if (script == nullptr || !(*script)->Run(context).ToLocal(&function) ||
        !function->IsFunction() ||
        !function.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 0, nullptr)
             .ToLocal(&promise)) {
      return;
    }
    isolate_->PerformMicrotaskCheckpoint();
    v8::Local<v8::Value> zero = v8::Integer::New(isolate_, 0);
    v8::Local<v8::Value> json;
    if (!serialize->Call(context, v8::Undefined(isolate_), 1, &zero).ToLocal(&json)) return;
  }

  Outcome setup_failed(const v8::TryCatch& try_catch) {
    if (interrupts_.reason() != Stop::none) return stopped();
    // Only the host's own scripts ran: a failure here is a broken build, not the code's fault.
    std::string what = try_catch.HasCaught() ? describe_exception(isolate_, try_catch.Exception())
                                             : std::string("no exception");
    return Outcome::failure(ErrorKind::runtime, "sandbox set-up failed: " + what);
  }

  Outcome run_in(v8::Local<v8::Context> context, std::string_view code) {
    auto compiled = compile_one_expression(context, code);
    if (auto* error = std::get_if<std::string>(&compiled)) {
      if (interrupts_.reason() != Stop::none) return stopped();
      return Outcome::failure(ErrorKind::compile, std::move(*error));
    }
    v8::Local<v8::Script> script = std::get<v8::Local<v8::Script>>(compiled);

    // The code's own CPU time starts here: set-up (and the spec parse) is the host's cost.
    clockid_t cpu_clock{};
    pthread_getcpuclockid(pthread_self(), &cpu_clock);
    Watchdog watchdog(interrupts_, cpu_clock, std::chrono::milliseconds(limits_.cpu_ms),
                      wall_deadline_);
    if (!watchdog.usable()) {
      return Outcome::failure(ErrorKind::runtime,
                              "the sandbox could not set its CPU and wall timers; nothing ran");
    }

    v8::TryCatch try_catch(isolate_);
    v8::Local<v8::Value> function;
    if (!script->Run(context).ToLocal(&function)) return failed(try_catch);
    if (!function->IsFunction()) {
      return Outcome::failure(ErrorKind::compile,
                              "the code must be a function expression such as async () => …; it "
                              "evaluated to " +
                                  utf8(isolate_, function->TypeOf(isolate_)));
    }
    v8::Local<v8::Value> result;
    if (!function.As<v8::Function>()
             ->Call(context, v8::Undefined(isolate_), 0, nullptr)
             .ToLocal(&result)) {
      return failed(try_catch);
    }
    if (result->IsPromise()) {
      v8::Local<v8::Promise> promise = result.As<v8::Promise>();
      if (auto failure = drive(context, promise)) return std::move(*failure);
      if (promise->State() == v8::Promise::kRejected) return thrown(promise->Result());
      result = promise->Result();
    }
    v8::Local<v8::Value> json;
    if (!serialize_.Get(isolate_)
             ->Call(context, v8::Undefined(isolate_), 1, &result)
             .ToLocal(&json)) {
      if (interrupts_.reason() != Stop::none || !try_catch.HasCaught()) return failed(try_catch);
      return Outcome::failure(ErrorKind::runtime,
                              "result is not JSON-serialisable: " +
                                  describe_exception(isolate_, try_catch.Exception()));
    }
    if (interrupts_.reason() != Stop::none) return stopped();
    return Outcome::success(utf8(isolate_, json));
  }

  // Settles the promises of the fetches that have completed. True when any did.
  bool deliver_fetches(v8::Local<v8::Context> context) {
    auto arrived = interrupts_.take_arrived();
    for (auto& [id, result] : arrived) {
      auto pending = state_.fetches.find(id);
      if (pending == state_.fetches.end()) continue;
      v8::HandleScope handles(isolate_);
      v8::Local<v8::Promise::Resolver> resolver = pending->second.Get(isolate_);
      state_.fetches.erase(pending);
      if (auto* error = std::get_if<gateway::GatewayError>(&result)) {
        v8::Local<v8::Value> exception =
            v8::Exception::TypeError(v8_string(isolate_, error->message));
        if (error->kind == gateway::ErrorKind::policy) {
          state_.policy_errors.push_back(
              CallState::Refusal{v8::Global<v8::Value>(isolate_, exception), error->message});
        }
        if (resolver->Reject(context, exception).IsNothing()) return true;
        continue;
      }
      auto& response = std::get<gateway::InboundResponse>(result);
      v8::Local<v8::Object> raw;
      if (!response_object(context, id, response).ToLocal(&raw) ||
          resolver->Resolve(context, raw).IsNothing()) {
        return true;  // terminating: the loop's next check reports why
      }
      state_.bodies.emplace(id, std::move(response.body));
    }
    return !arrived.empty();
  }

  v8::MaybeLocal<v8::Object> response_object(v8::Local<v8::Context> context, std::uint32_t id,
                                             const gateway::InboundResponse& response) {
    v8::Local<v8::Array> headers =
        v8::Array::New(isolate_, static_cast<int>(response.headers.size()));
    for (std::uint32_t i = 0; i < response.headers.size(); ++i) {
      v8::Local<v8::Value> pair[] = {v8_string(isolate_, response.headers[i].first),
                                     v8_string(isolate_, response.headers[i].second)};
      if (headers->Set(context, i, v8::Array::New(isolate_, pair, 2)).IsNothing()) return {};
    }
    v8::Local<v8::Object> raw = v8::Object::New(isolate_);
    const std::pair<const char*, v8::Local<v8::Value>> fields[] = {
        {"status", v8::Integer::NewFromUnsigned(isolate_, response.status)},
        {"statusText", v8_string(isolate_, response.status_text)},
        {"headers", headers},
        {"url", v8_string(isolate_, response.final_url)},
        {"redirected", v8::Boolean::New(isolate_, response.redirects > 0)},
        {"bodyId", v8::Integer::NewFromUnsigned(isolate_, id)},
        {"bodyLength", v8::Number::New(isolate_, static_cast<double>(response.body.size()))},
    };
    for (const auto& [name, value] : fields) {
      if (raw->Set(context, v8_string(isolate_, name), value).IsNothing()) return {};
    }
    return raw;
  }

  // The event loop: microtasks, then the earliest due timer, until the promise settles.
  // nullopt: the promise settled.
  std::optional<Outcome> drive(v8::Local<v8::Context> context, v8::Local<v8::Promise> promise) {
    for (;;) {
      isolate_->PerformMicrotaskCheckpoint();
      if (interrupts_.reason() != Stop::none) return stopped();
      if (promise->State() != v8::Promise::kPending) return std::nullopt;
      if (deliver_fetches(context)) continue;
      if (state_.timers.empty() && state_.fetches.empty()) {
        return Outcome::failure(ErrorKind::runtime,
                                "the promise never settled (nothing left that could settle it)");
      }
      auto first = state_.timers.begin();
      const Clock::time_point due =
          state_.timers.empty() ? Clock::time_point::max() : first->first.first;
      if (due > Clock::now()) {
        interrupts_.wait_until(std::min(due, wall_deadline_));
        if (Clock::now() >= wall_deadline_) interrupts_.trip(Stop::wall);
        if (interrupts_.reason() != Stop::none) return stopped();
        continue;
      }
      Timer timer = std::move(first->second);
      state_.timers.erase(first);
      v8::HandleScope handles(isolate_);
      v8::Local<v8::Array> args = timer.args.Get(isolate_);
      std::vector<v8::Local<v8::Value>> argv;
      for (std::uint32_t i = 0; i < args->Length(); ++i) {
        argv.push_back(
            args->Get(context, i).FromMaybe(v8::Local<v8::Value>(v8::Undefined(isolate_))));
      }
      v8::TryCatch try_catch(isolate_);
      v8::Local<v8::Value> ignored;
      if (!timer.callback.Get(isolate_)
               ->Call(context, v8::Undefined(isolate_), static_cast<int>(argv.size()), argv.data())
               .ToLocal(&ignored)) {
        // An exception nobody can catch: the call fails with it, as an uncaught one would.
        return failed(try_catch);
      }
    }
  }

  v8::Isolate* isolate_;
  const PrepareRequest request_;
  const config::Limits limits_;
  Interrupts& interrupts_;
  const BudgetAllocator& allocator_;
  Clock::time_point wall_deadline_;  // set when the code starts
  CallState state_;
  std::optional<SpecView> spec_view_;  // search only; destroyed before the isolate
  v8::Global<v8::Context> context_;
  v8::Global<v8::Function> serialize_;
  std::optional<Outcome> setup_failure_;
};

}  // namespace

namespace {
std::atomic<void (*)(const char*, bool)> out_of_memory_handler{nullptr};
}  // namespace

void set_out_of_memory_handler(void (*handler)(const char* location, bool is_heap_oom)) {
  out_of_memory_handler = handler;
}

struct PreparedIsolate::Parts {
  explicit Parts(const PrepareRequest& request)
      : allocator(std::size_t{request.limits.heap_mb} * kMB) {}
  BudgetAllocator allocator;
  v8::Isolate* isolate = nullptr;
  std::optional<Interrupts> interrupts;
  std::optional<Run> run;
};

PreparedIsolate::PreparedIsolate(const PrepareRequest& request)
    : request_(request), parts_(std::make_unique<Parts>(request)) {
  ensure_v8_initialized();
  const std::size_t heap_bytes = std::size_t{request.limits.heap_mb} * kMB;
  v8::Isolate::CreateParams params;
  params.constraints.ConfigureDefaultsFromHeapSize(0, heap_bytes);
  params.array_buffer_allocator = &parts_->allocator;
  params.snapshot_blob = GlobalsSnapshot::get().blob();
  params.external_references = external_references();
  params.oom_error_callback = out_of_memory_handler.load();
  // Made in the background, which is where a prepared isolate is until its call comes: there
  // V8 answers "optimise for memory?" without adding up its spaces, which it otherwise does on
  // each of the ~1,400 non-young allocations of a deserialisation, most of them the builtins'
  // Code objects (-0.2 M of ~8.8 M instructions per call; bench/README.md). run() brings it
  // to the foreground, so the call itself gets V8's usual heuristics.
  v8::Isolate* isolate = parts_->isolate = v8::Isolate::Allocate();
  isolate->IsolateInBackgroundNotification();  // before its heap exists: only sets the flag
  v8::Isolate::Initialize(isolate, params);
  v8::Isolate::Scope isolate_scope(isolate);
  isolate->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  isolate->SetAllowAtomicsWait(false);
  isolate->SetAllowWasmCodeGenerationCallback(
      [](v8::Local<v8::Context>, v8::Local<v8::String>) { return false; });
  Interrupts& interrupts = parts_->interrupts.emplace(isolate);
  isolate->AddNearHeapLimitCallback(near_heap_limit, &interrupts);
  parts_->run.emplace(isolate, request_, interrupts, parts_->allocator).prepare();
}

PreparedIsolate::~PreparedIsolate() {
  v8::Isolate* isolate = parts_->isolate;
  {
    v8::Isolate::Scope isolate_scope(isolate);
    parts_->run.reset();  // its Globals go while the isolate lives
    isolate->RemoveNearHeapLimitCallback(near_heap_limit, 0);
    parts_->interrupts.reset();
  }
  isolate->Dispose();
}

bool PreparedIsolate::suits(Tool tool, const config::Limits& limits) const {
  const config::Limits& mine = request_.limits;
  return tool == request_.tool && limits.heap_mb == mine.heap_mb && limits.cpu_ms == mine.cpu_ms &&
         limits.wall_ms == mine.wall_ms;
}

Outcome PreparedIsolate::run(std::string_view code, CancelToken* cancel, const Fetcher* fetcher,
                             Waiter* waiter) {
  if (used_) return Outcome::failure(ErrorKind::runtime, "a prepared isolate runs one call");
  used_ = true;
  if (cancel != nullptr && cancel->cancelled()) {
    return Outcome::failure(ErrorKind::runtime, "cancelled");
  }
  v8::Isolate::Scope isolate_scope(parts_->isolate);
  parts_->isolate->IsolateInForegroundNotification();
  Interrupts& interrupts = *parts_->interrupts;
  interrupts.use_waiter(waiter);  // before anything can trip
  CancelRegistration registration(cancel, [&interrupts] { interrupts.trip(Stop::cancelled); });
  Outcome outcome = parts_->run->run(code, fetcher);
  interrupts.use_waiter(nullptr);  // the watchdog is disarmed; a late cancel wakes nobody
  return outcome;
}

Outcome run_in_fresh_isolate(const RunRequest& request) {
  if (request.cancel != nullptr && request.cancel->cancelled()) {
    return Outcome::failure(ErrorKind::runtime, "cancelled");
  }
  PrepareRequest prepare{request.tool, *request.limits, request.api,
                         request.fetcher != nullptr ? FetchGlobal::present : FetchGlobal::absent,
                         request.extend_context};
  PreparedIsolate isolate(prepare);
  return isolate.run(request.code, request.cancel, request.fetcher);
}

}  // namespace codemode::sandbox
