#include "isolate/child.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <v8.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>

#include "channel/frames.h"
#include "channel/process_contract.h"
#include "isolate/globals_snapshot.h"
#include "isolate/host_functions.h"
#include "isolate/isolate_runner.h"
#include "isolate/lockdown.h"
#include "openapi/image.h"

// node exports this function of V8's base library, whose headers it does not ship; this is the one
// declaration of it used (src/base/logging.h).
namespace v8::base {
void SetPrintStackTrace(void (*print_stack_trace)());
}  // namespace v8::base

namespace codemode::isolate {
namespace {

constexpr std::size_t kMB = std::size_t{1024} * 1024;

// CPU time of the calling thread, in microseconds.
std::uint64_t thread_cpu_us() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<std::uint64_t>(now.tv_sec) * 1000000u +
         static_cast<std::uint64_t>(now.tv_nsec) / 1000u;
}
// The daemon is trusted; its largest frames are the document and upstream bodies.
constexpr std::size_t kMaxInboundFrame = std::size_t{3} << 30;

// The channel as the main thread reads it: only the main thread reads it, and it does nothing
// else, so a fetch reply or a Cancel reaches its call however busy the calls are.
class Inbound {
 public:
  // The next frame, however long it takes; nullopt: the channel closed. Exits on a malformed
  // frame.
  std::optional<channel::Message> next() {
    for (;;) {
      auto next = reader_.next();
      if (std::holds_alternative<channel::DecodeError>(next)) ::_exit(channel::kExitBadMessage);
      if (auto& body = std::get<std::optional<std::string>>(next)) {
        auto decoded = channel::decode(*body);
        if (std::holds_alternative<channel::DecodeError>(decoded))
          ::_exit(channel::kExitBadMessage);
        return std::get<channel::Message>(std::move(decoded));
      }
      char buffer[65536];
      const long got = channel::read_some(channel::kChannelFd, buffer, sizeof buffer);
      if (got <= 0) return std::nullopt;
      reader_.append(std::string_view(buffer, static_cast<std::size_t>(got)));
    }
  }

 private:
  channel::FrameReader reader_{kMaxInboundFrame};
};

// Frames to the daemon come from every call's thread: one at a time, each whole.
std::mutex send_mutex;

void send(const channel::Message& message) {
  const std::string frame = channel::encode_frame(message);
  std::lock_guard lock(send_mutex);
  // Nobody to answer to when the daemon is gone.
  if (!channel::send_all(channel::kChannelFd, frame)) ::_exit(0);
}

[[noreturn]] void out_of_memory(const char*, const v8::OOMDetails&) {
  ::_exit(channel::kExitOutOfMemory);
}

// V8's fatal errors (V8_Fatal: failed CHECKs, and allocations past V8's own size limits, such
// as `'x'.repeat(2**29 - 24).split('')`, whose array would exceed FixedArray's longest) print
// their message on stderr, call the stack-trace hook, then trap. V8 14 keeps the message nowhere
// the hook could find it (V8 10.2 left it in its frame), so stderr is a stream of ours that notes
// it on its way to descriptor 2. A size error is memory, reported as out_of_memory() reports it;
// anything else goes on to the trap, which the daemon reports as a crash.
std::atomic<bool> size_error_seen{false};

ssize_t write_stderr(void* /*cookie*/, const char* bytes, std::size_t size) {
  const std::string_view text(bytes, size);
  if (text.find("Fatal JavaScript invalid size error") != std::string_view::npos ||
      text.find("out of memory") != std::string_view::npos) {
    size_error_seen = true;
  }
  return ::write(2, bytes, size);
}

void watch_stderr() {
  cookie_io_functions_t io{nullptr, write_stderr, nullptr, nullptr};
  FILE* stream = ::fopencookie(nullptr, "w", io);
  if (stream == nullptr) return;
  (void)std::setvbuf(stream, nullptr, _IONBF, 0);
  stderr = stream;  // NOLINT(cppcoreguidelines-pro-type-...): glibc's stderr is assignable
}

void on_v8_fatal() {
  if (size_error_seen) ::_exit(channel::kExitOutOfMemory);
}

// The fetches of the running calls that wait for their replies. A reply is delivered under the
// mutex, and a call forgets its fetches under it before its waiter is gone, so a late reply
// never reaches a call that has ended.
class Fetches {
 public:
  std::uint64_t expect(std::uint64_t call_id, channel::FetchDone done) {
    std::lock_guard lock(mutex_);
    const std::uint64_t fetch_id = ++last_fetch_id_;
    waiting_.emplace(fetch_id, Waiting{call_id, std::move(done)});
    return fetch_id;
  }
  void deliver(channel::FetchReply reply) {
    std::lock_guard lock(mutex_);
    const auto it = waiting_.find(reply.fetch_id);
    if (it == waiting_.end() || it->second.call_id != reply.call_id) return;
    auto done = std::move(it->second.done);
    waiting_.erase(it);
    done(std::move(reply.result));
  }
  // The fetch starts or stops waiting for a person (its call's wall clock stands still).
  void wait(const channel::FetchWait& wait) {
    std::lock_guard lock(mutex_);
    const auto it = waiting_.find(wait.fetch_id);
    if (it == waiting_.end() || it->second.call_id != wait.call_id) return;
    if (const auto& hook = it->second.done.waiting()) hook(wait.waiting);
  }
  // Replies that arrive after their call ended have nobody to go to.
  void forget(std::uint64_t call_id) {
    std::lock_guard lock(mutex_);
    std::erase_if(waiting_,
                  [call_id](const auto& entry) { return entry.second.call_id == call_id; });
  }

 private:
  struct Waiting {
    std::uint64_t call_id;
    channel::FetchDone done;
  };
  std::mutex mutex_;
  std::uint64_t last_fetch_id_ = 0;
  std::map<std::uint64_t, Waiting> waiting_;
};

// How one call waits for its fetches and timers: on its own thread, until the main thread
// delivers a reply (then wake()), a limit trips, or the deadline passes. And what ends a call
// that termination cannot stop (a builtin that never checks for interrupts): its Result, then
// the end of the process, the only way to stop the thread.
class CallWaiter final : public channel::Waiter {
 public:
  CallWaiter(std::uint64_t call_id, std::uint32_t cpu_ms) : call_id_(call_id), cpu_ms_(cpu_ms) {}

  void wait_until(std::chrono::steady_clock::time_point deadline) override {
    std::unique_lock lock(mutex_);
    wake_.wait_until(lock, deadline, [this] { return woken_; });
    woken_ = false;
  }
  void wake() override {
    std::lock_guard lock(mutex_);
    woken_ = true;
    wake_.notify_one();
  }
  // On the watchdog's thread, while the call still runs (its Result has not been sent).
  [[noreturn]] void runaway(std::chrono::milliseconds cpu_used) override {
    send(channel::Result{
        call_id_,
        channel::Outcome::failure(
            channel::ErrorKind::timeout,
            "cpu limit " + std::to_string(cpu_ms_) + " ms exceeded; the code ran on for " +
                std::to_string(cpu_used.count()) +
                " ms of CPU in a builtin that cannot be interrupted, so its sandbox "
                "process was ended"),
        /*last=*/true});
    ::_exit(channel::kExitRunaway);
  }

 private:
  const std::uint64_t call_id_;
  const std::uint32_t cpu_ms_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool woken_ = false;  // a wake() not yet seen by a wait: the next one returns at once
};

// The calls of this process and the threads that run them. The main thread hands each Run to a
// worker thread; a worker runs one call at a time, each in its own fresh isolate, and while it
// is idle keeps one isolate ready (created, given its context and globals, rehearsed) for the
// tool that has none ready, so that a call usually finds its set-up done. Isolates are never
// reused; threads are (each keeps its watchdog, which costs a thread and two timers to make).
// At most `concurrency` calls run at once; more wait here (the daemon sends no more than that).
class Calls {
 public:
  using Prepare =
      std::function<std::unique_ptr<PreparedIsolate>(channel::Tool, const config::Limits&)>;

  // `limits`: the process's (Init); an isolate made ahead of its call is made for them.
  Calls(const config::Limits& limits, unsigned concurrency, bool fetch, Prepare prepare,
        Fetches& fetches)
      : limits_(limits),
        concurrency_(std::max(1u, concurrency)),
        fetch_(fetch),
        prepare_(std::move(prepare)),
        fetches_(fetches) {}

  // Main thread, before any call: one worker per tool, each getting an isolate ready.
  void start() {
    std::lock_guard lock(mutex_);
    spawn(std::nullopt);
    spawn(std::nullopt);
  }

  // Main thread.
  void run(channel::Run run) {
    std::lock_guard lock(mutex_);
    Worker* chosen = nullptr;
    for (Worker* worker : idle_) {  // an isolate ready for the tool, else one with none
      if (worker->holds == run.tool) {
        chosen = worker;
        break;
      }
      if (!worker->holds && chosen == nullptr) chosen = worker;
    }
    // None ready, but one being made for the tool: the call takes it when it is done, which is
    // sooner than making another (one call at a time, the next Run often arrives while the
    // isolate the last call's thread began for it is still being made).
    if (chosen == nullptr) {
      for (const auto& worker : workers_) {
        if (worker->preparing && worker->holds == run.tool && !worker->job) {
          worker->job = std::move(run);
          return;
        }
      }
    }
    // Threads: one per call that may run, and two more for the isolates kept ready.
    if (chosen == nullptr && workers_.size() < concurrency_ + 2) return spawn(std::move(run));
    if (chosen == nullptr && !idle_.empty()) chosen = idle_.front();  // re-prepares for the tool
    if (chosen == nullptr) {
      pending_.push_back(std::move(run));
      return;
    }
    std::erase(idle_, chosen);
    chosen->job = std::move(run);
    chosen->wake.notify_one();
  }

  // Main thread: stops call `id`, or answers it at once when it has not started.
  void cancel(std::uint64_t id) {
    std::lock_guard lock(mutex_);
    if (auto it = running_.find(id); it != running_.end()) {
      it->second->cancel();
      return;
    }
    const auto queued = std::find_if(pending_.begin(), pending_.end(),
                                     [id](const channel::Run& run) { return run.id == id; });
    if (queued != pending_.end()) {
      pending_.erase(queued);
      return send(
          channel::Result{id, channel::Outcome::failure(channel::ErrorKind::runtime, "cancelled")});
    }
    // Handed to a worker that has not begun it: woken from idle (it finds no job and goes on
    // waiting, so it is idle again), still making the isolate the call was to take, or a new
    // thread not yet started.
    for (const auto& worker : workers_) {
      if (!worker->job || worker->job->id != id) continue;
      worker->job.reset();
      if (worker->parked) idle_.push_back(worker.get());
      return send(
          channel::Result{id, channel::Outcome::failure(channel::ErrorKind::runtime, "cancelled")});
    }
    // Otherwise already over: its Result is on its way.
  }

 private:
  struct Worker {
    std::condition_variable wake;
    std::optional<channel::Run> job;
    std::optional<channel::Tool> holds;  // while idle or preparing: the tool its isolate is for
    bool preparing = false;              // making an isolate ahead of its call; a Run may claim it
    bool parked = false;  // waiting for a job (in idle_ unless one was just handed over)
    std::thread thread;
  };

  // Under mutex_: a new worker thread, with its first call or none.
  void spawn(std::optional<channel::Run> first) {
    auto worker = std::make_unique<Worker>();
    worker->job = std::move(first);
    Worker* raw = worker.get();
    raw->thread = std::thread([this, raw] { loop(*raw); });
    raw->thread.detach();  // ends with the process
    workers_.push_back(std::move(worker));
  }

  // The tool an idle worker should get an isolate ready for: one that has none ready or on its
  // way (search first), else none.
  std::optional<channel::Tool> wanted() const {
    for (channel::Tool tool : {channel::Tool::search, channel::Tool::execute}) {
      if (ready_[index(tool)] == 0) return tool;
    }
    return std::nullopt;
  }
  static std::size_t index(channel::Tool tool) { return tool == channel::Tool::search ? 0 : 1; }

  void loop(Worker& self) {
    std::unique_ptr<PreparedIsolate> isolate;
    std::unique_ptr<PreparedIsolate> spent;  // the last call's, disposed when the thread is free
    std::unique_lock lock(mutex_);
    for (;;) {
      if (!self.job && !pending_.empty()) {
        self.job = std::move(pending_.front());
        pending_.pop_front();
      }
      if (!self.job) {
        if (auto tool = wanted()) {
          ++ready_[index(*tool)];  // counted from now, so no other worker makes one too
          self.holds = tool;
          self.preparing = true;
          lock.unlock();
          // The last call's isolate goes first (one isolate per thread at a time), inside the
          // time a Run that arrives meanwhile can claim this worker for the one made next.
          spent.reset();
          isolate = prepare_(*tool, limits_);
          lock.lock();
          self.preparing = false;
        } else if (spent) {
          lock.unlock();
          spent.reset();
          lock.lock();
          continue;  // a job may have come meanwhile
        }
        if (!self.job && pending_.empty()) {
          idle_.push_back(&self);
          self.parked = true;
          self.wake.wait(lock, [&] { return self.job.has_value(); });
          self.parked = false;
        }
        if (self.holds) --ready_[index(*self.holds)];
        self.holds.reset();
        continue;
      }
      channel::Run run = std::move(*self.job);
      self.job.reset();
      channel::CancelToken cancel;
      running_.emplace(run.id, &cancel);
      lock.unlock();
      spent.reset();
      serve(run, isolate, cancel);
      spent = std::move(isolate);
      lock.lock();
      running_.erase(run.id);
    }
  }

  // Worker thread: one call, from its Run to its Result, in `isolate` (made here unless the one
  // made ahead suits); the caller disposes it, after the Result is sent.
  void serve(const channel::Run& run, std::unique_ptr<PreparedIsolate>& isolate,
             channel::CancelToken& cancel) {
    const auto started = std::chrono::steady_clock::now();
    if (!isolate || !isolate->suits(run.tool, run.limits)) {
      isolate.reset();  // `spec` allows one isolate per thread at a time
      isolate = prepare_(run.tool, run.limits);
    }
    const std::uint64_t call_id = run.id;
    CallWaiter waiter(call_id, run.limits.cpu_ms);
    const channel::Fetcher fetcher = [this, call_id, &waiter](gateway::OutboundRequest outbound,
                                                              channel::FetchDone done) {
      auto waiting = done.waiting();
      const std::shared_ptr<gateway::FetchAbort> abort = done.abort();
      const std::uint64_t fetch_id = fetches_.expect(
          call_id, channel::FetchDone(
                       [done = std::move(done), &waiter](gateway::FetchResult result) {
                         done(std::move(result));
                         waiter.wake();
                       },
                       [waiting = std::move(waiting), &waiter](bool now_waiting) {
                         if (waiting) waiting(now_waiting);
                         waiter.wake();  // the wall deadline moved
                       }));
      send(channel::FetchRequest{call_id, fetch_id, std::move(outbound)});
      if (abort) {
        abort->on_abort([call_id, fetch_id] { send(channel::AbortFetch{call_id, fetch_id}); });
      }
    };
    const std::uint64_t cpu_before = thread_cpu_us();
    channel::Outcome outcome =
        isolate->run(run.code, &cancel, fetch_ ? &fetcher : nullptr, &waiter);
    outcome.cpu_us = thread_cpu_us() - cpu_before;
    fetches_.forget(call_id);
    outcome.sandbox_us =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now() - started)
                                       .count());
    send(channel::Result{call_id, std::move(outcome)});
  }

  const config::Limits limits_;
  const unsigned concurrency_;
  const bool fetch_;
  const Prepare prepare_;
  Fetches& fetches_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;
  std::deque<channel::Run> pending_;
  std::map<std::uint64_t, channel::CancelToken*> running_;
  std::size_t ready_[2] = {0, 0};  // isolates ready or being made, per tool
};

// Touches what a call may touch for the first time (bootstrap, fetch.js, spec, Date, Intl), so
// anything V8 or ICU loads lazily from files is loaded before the files are out of reach.
void warm_up(const config::Limits& limits, const openapi::DocumentImage* api) {
  constexpr std::string_view kCode =
      "async () => [new Date(0).toString(), (1234.5).toLocaleString(), "
      "new Intl.DateTimeFormat().resolvedOptions().timeZone, typeof spec, typeof fetch]";
  const channel::Fetcher none = [](const gateway::OutboundRequest&,
                                   const std::function<void(gateway::FetchResult)>&) {};
  for (channel::Tool tool : {channel::Tool::search, channel::Tool::execute}) {
    RunRequest request{tool, kCode, &limits, api, nullptr, &none};
    (void)run_in_fresh_isolate(request);
  }
}

}  // namespace

int child_main(const ChildOptions& options) {
  // Memory runs out when the address-space cap is reached; V8 then calls out_of_memory(), but
  // an allocation through operator new (V8 uses std containers too) would throw into code that
  // cannot catch, and abort. Either way it is the same fact, reported the same way.
  std::set_new_handler([] { ::_exit(channel::kExitOutOfMemory); });

  lockdown::Report report;
  lockdown::record_namespaces(options.namespaces, report);

  Inbound inbound;
  auto first = inbound.next();
  if (!first || !std::holds_alternative<channel::Init>(*first)) return channel::kExitStartFailed;
  channel::Init init = std::get<channel::Init>(std::move(*first));
  lockdown::limit_resources(init.cpu_seconds, report);

  std::optional<openapi::DocumentImage> api;
  if (init.spec) {
    auto mapped = openapi::DocumentImage::map(channel::kImageFd);
    if (!std::holds_alternative<openapi::DocumentImage>(mapped)) return channel::kExitStartFailed;
    api = std::get<openapi::DocumentImage>(std::move(mapped));
  }

  v8::V8::SetFatalMemoryErrorCallback(out_of_memory);
  set_out_of_memory_handler(out_of_memory);
  watch_stderr();
  v8::base::SetPrintStackTrace(on_v8_fatal);
  detail::set_fetch_base(init.fetch_base);  // before warm_up makes the globals snapshot
  warm_up(init.limits, api ? &*api : nullptr);
  detail::warm_crypto();

  const openapi::DocumentImage* document = api ? &*api : nullptr;
  Fetches fetches;
  Calls calls(
      init.limits, init.concurrency, init.fetch,
      [&](channel::Tool tool, const config::Limits& limits) {
        const FetchGlobal fetch = tool == channel::Tool::execute && init.fetch
                                      ? FetchGlobal::present
                                      : FetchGlobal::absent;
        return std::make_unique<PreparedIsolate>(
            PrepareRequest{tool, limits, document, fetch, options.extend_context});
      },
      fetches);

  // One call's heap and ArrayBuffers, the near-heap-limit grant, and slack, and what the isolate
  // of that call and the two kept ready reserve; then for each further call that may run at once
  // its heap and ArrayBuffers, its isolate's reservation and two thread stacks. A call past its
  // own caps is stopped by them; this cap is the process's backstop, and what the calls of one
  // principal in one process can take together.
  const std::size_t heap_mb = init.limits.heap_mb;
  const std::size_t isolate_mb = kIsolateAddressSpace / kMB;
  const std::size_t more_calls = std::max<std::size_t>(init.concurrency, 1) - 1;
  lockdown::limit_address_space(
      (heap_mb * 4 + 512 + 3 * isolate_mb + more_calls * (heap_mb * 2 + isolate_mb + 16)) * kMB,
      report);
  lockdown::empty_root(report);
  lockdown::restrict_syscalls(report);
  report.insert(report.begin(), "process: on (no environment but TZ, only the channel descriptor)");
  report.push_back(init.jitless
                       ? "jitless: on (V8 interprets; no JIT, no writable code pages)"
                       : "jitless: no (V8's JIT compilers run; sandbox.jitless turns them off)");
  send(channel::Ready{report});

  calls.start();

  while (auto message = inbound.next()) {
    if (auto* run = std::get_if<channel::Run>(&*message)) {
      calls.run(std::move(*run));
    } else if (auto* reply = std::get_if<channel::FetchReply>(&*message)) {
      fetches.deliver(std::move(*reply));
    } else if (auto* wait = std::get_if<channel::FetchWait>(&*message)) {
      fetches.wait(*wait);
    } else if (auto* cancel = std::get_if<channel::Cancel>(&*message)) {
      calls.cancel(cancel->id);
    } else {
      ::_exit(channel::kExitBadMessage);  // Init again, or a message only a process sends
    }
  }
  // The daemon is gone. Not a return: the call threads still use what this frame holds.
  ::_exit(0);
}

}  // namespace codemode::isolate
