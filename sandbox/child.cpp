#include "sandbox/child.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <v8.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <thread>

#include "openapi/image.h"
#include "sandbox/channel.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/lockdown.h"
#include "sandbox/v8_platform.h"

// libnode exports V8's base library, whose headers Debian does not ship; this is the one
// declaration of it used (src/base/logging.h in V8 10.2).
namespace v8::base {
void SetPrintStackTrace(void (*print_stack_trace)());
}  // namespace v8::base

namespace codemode::sandbox {
namespace {

constexpr std::size_t kMB = 1024 * 1024;
// The daemon is trusted; its largest frames are the document and upstream bodies.
constexpr std::size_t kMaxInboundFrame = std::size_t{3} << 30;

// The channel as the main thread reads it. Only the main thread reads it, between calls and
// while a call waits for its fetches, so a frame reaches the isolate without a thread hop.
class Inbound {
 public:
  // The next frame, however long it takes; nullopt: the channel closed. Exits on a malformed
  // frame.
  std::optional<channel::Message> next() {
    for (;;) {
      if (auto message = take()) return message;
      if (!fill(-1, -1)) return std::nullopt;
    }
  }
  // Reads what arrives within `timeout_ms` (-1: no limit), or until `wake_fd` (-1: none) is
  // readable. False when the channel closed.
  bool fill(int timeout_ms, int wake_fd) {
    pollfd fds[2] = {{kChannelFd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    if (::poll(fds, wake_fd >= 0 ? 2 : 1, timeout_ms) <= 0) return true;  // timeout, EINTR
    if (fds[0].revents == 0) return true;
    char buffer[65536];
    const long got = channel::read_some(kChannelFd, buffer, sizeof buffer);
    if (got <= 0) return false;
    reader_.append(std::string_view(buffer, static_cast<std::size_t>(got)));
    return true;
  }
  // A frame already read whole, if there is one.
  std::optional<channel::Message> take() {
    auto next = reader_.next();
    if (std::holds_alternative<channel::DecodeError>(next)) ::_exit(kExitBadMessage);
    auto& body = std::get<std::optional<std::string>>(next);
    if (!body) return std::nullopt;
    auto decoded = channel::decode(*body);
    if (std::holds_alternative<channel::DecodeError>(decoded)) ::_exit(kExitBadMessage);
    return std::get<channel::Message>(std::move(decoded));
  }

 private:
  channel::FrameReader reader_{kMaxInboundFrame};
};

void send(const channel::Message& message) {
  // Nobody to answer to when the daemon is gone.
  if (!channel::send_all(kChannelFd, channel::encode_frame(message))) ::_exit(0);
}

[[noreturn]] void out_of_memory(const char*, bool) { ::_exit(kExitOutOfMemory); }

// V8's fatal errors (V8_Fatal: failed CHECKs, and allocations past V8's own size limits, such
// as `'x'.repeat(2**29 - 24).split('')`, whose array would exceed FixedArray's longest) print
// their message, call the stack-trace hook, then trap. The message is not passed to the hook,
// but V8_Fatal keeps it in its own frame, between two markers, for crash processors to find;
// the hook looks for it in the 4 KiB above its own frame (V8_Fatal's frame is the next one up,
// and the JS and runtime frames below any V8_Fatal are far deeper than that). A size error is
// memory, reported as out_of_memory() reports it; anything else (or no message found) goes on to
// the trap, which the daemon reports as a crash.
constexpr std::uintptr_t kFailureStartMarker = 0xdecade10;
constexpr std::uintptr_t kFailureEndMarker = 0xdecade11;
constexpr std::size_t kFailureMessageBytes = 512;
constexpr std::size_t kStackSearchBytes = 4 * 1024;

// The frame address, not a local's: ASan's use-after-return mode moves locals to a heap "fake
// stack", while the frame (and V8_Fatal's above it) stays on the thread's stack.
__attribute__((no_sanitize("address"), noinline)) std::string_view fatal_message() {
  const auto* from = static_cast<const volatile std::uintptr_t*>(__builtin_frame_address(0));
  const std::size_t words = kStackSearchBytes / sizeof(std::uintptr_t);
  const std::size_t span = 1 + kFailureMessageBytes / sizeof(std::uintptr_t);
  for (std::size_t i = 0; i + span < words; ++i) {
    if (from[i] != kFailureStartMarker || from[i + span] != kFailureEndMarker) continue;
    const volatile char* text = reinterpret_cast<const volatile char*>(from + i + 1);
    std::size_t length = 0;
    while (length < kFailureMessageBytes && text[length] != '\0') ++length;
    return std::string_view(const_cast<const char*>(text), length);
  }
  return {};
}

void on_v8_fatal() {
  const std::string_view message = fatal_message();
  if (message.starts_with("Fatal JavaScript invalid size error") ||
      message.find("out of memory") != std::string_view::npos) {
    ::_exit(kExitOutOfMemory);
  }
}

// The fetches of the running call that wait for their replies. Main thread only.
class Fetches {
 public:
  std::uint64_t expect(std::uint64_t call_id, std::function<void(gateway::FetchResult)> done) {
    const std::uint64_t fetch_id = ++last_fetch_id_;
    waiting_.emplace(fetch_id, Waiting{call_id, std::move(done)});
    return fetch_id;
  }
  void deliver(channel::FetchReply reply) {
    const auto it = waiting_.find(reply.fetch_id);
    if (it == waiting_.end() || it->second.call_id != reply.call_id) return;
    auto done = std::move(it->second.done);
    waiting_.erase(it);
    done(std::move(reply.result));
  }
  // Replies that arrive after their call ended have nobody to go to.
  void forget() { waiting_.clear(); }

 private:
  struct Waiting {
    std::uint64_t call_id;
    std::function<void(gateway::FetchResult)> done;
  };
  std::uint64_t last_fetch_id_ = 0;
  std::map<std::uint64_t, Waiting> waiting_;
};

// Which call runs now, for the thread that receives the daemon's cancel signal: code that never
// waits never reads the channel, so a Cancel frame alone would reach it only after it ended.
class CurrentCall {
 public:
  void start(std::uint64_t id, CancelToken* token) {
    std::lock_guard lock(mutex_);
    id_ = id;
    token_ = token;
  }
  // After end(), no cancel reaches the token.
  void end() {
    std::lock_guard lock(mutex_);
    token_ = nullptr;
  }
  // `id` as the signal carries it: the low 32 bits of the call id.
  void cancel(std::uint32_t id) {
    std::lock_guard lock(mutex_);
    if (token_ != nullptr && static_cast<std::uint32_t>(id_) == id) token_->cancel();
  }

 private:
  std::mutex mutex_;
  std::uint64_t id_ = 0;
  CancelToken* token_ = nullptr;
};

// How a call in this process waits: on the channel itself (fetch replies, Cancel), and on an
// eventfd that a tripped limit or a cancel writes.
class ChannelWaiter final : public Waiter {
 public:
  ChannelWaiter(Inbound& inbound, Fetches& fetches, CurrentCall& current)
      : inbound_(inbound),
        fetches_(fetches),
        current_(current),
        wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~ChannelWaiter() override { ::close(wake_fd_); }
  ChannelWaiter(const ChannelWaiter&) = delete;
  ChannelWaiter& operator=(const ChannelWaiter&) = delete;

  bool usable() const { return wake_fd_ >= 0; }
  // Before a call: a wake left over from the last one must not end this one's first wait.
  void reset() {
    std::uint64_t count;
    while (::read(wake_fd_, &count, sizeof count) > 0) {
    }
  }

  void wait_until(std::chrono::steady_clock::time_point deadline) override {
    using namespace std::chrono;
    const auto left = duration_cast<milliseconds>(deadline - steady_clock::now()) + 1ms;
    const int timeout = static_cast<int>(std::clamp<long long>(left.count(), 0, 60'000));
    if (!inbound_.fill(timeout, wake_fd_)) ::_exit(0);  // the daemon is gone
    reset();
    while (auto message = inbound_.take()) {
      if (auto* reply = std::get_if<channel::FetchReply>(&*message)) {
        fetches_.deliver(std::move(*reply));
      } else if (auto* cancel = std::get_if<channel::Cancel>(&*message)) {
        current_.cancel(static_cast<std::uint32_t>(cancel->id));
      } else {
        ::_exit(kExitBadMessage);  // a Run during a call, or a message only a process sends
      }
    }
  }
  void wake() override {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(wake_fd_, &one, sizeof one);
  }

 private:
  Inbound& inbound_;
  Fetches& fetches_;
  CurrentCall& current_;
  int wake_fd_;
};

// Touches what a call may touch for the first time (bootstrap, fetch.js, spec, Date, Intl), so
// anything V8 or ICU loads lazily from files is loaded before the files are out of reach.
void warm_up(const config::Limits& limits, const openapi::DocumentImage* api) {
  constexpr std::string_view kCode =
      "async () => [new Date(0).toString(), (1234.5).toLocaleString(), "
      "new Intl.DateTimeFormat().resolvedOptions().timeZone, typeof spec, typeof fetch]";
  const Fetcher none = [](gateway::OutboundRequest, std::function<void(gateway::FetchResult)>) {};
  for (Tool tool : {Tool::search, Tool::execute}) {
    RunRequest request{tool, kCode, &limits, api, nullptr, &none};
    (void)run_in_fresh_isolate(request);
  }
}

}  // namespace

int child_main(const ChildOptions& options) {
  // Blocked in every thread (V8's, started later, inherit the mask), so that only the cancel
  // thread below receives it.
  sigset_t cancel_signals;
  ::sigemptyset(&cancel_signals);
  ::sigaddset(&cancel_signals, cancel_signal());
  ::pthread_sigmask(SIG_BLOCK, &cancel_signals, nullptr);

  // Memory runs out when the address-space cap is reached; V8 then calls out_of_memory(), but
  // an allocation through operator new (V8 uses std containers too) would throw into code that
  // cannot catch, and abort. Either way it is the same fact, reported the same way.
  std::set_new_handler([] { ::_exit(kExitOutOfMemory); });

  lockdown::Report report;
  lockdown::enter_namespaces(report);

  Inbound inbound;
  auto first = inbound.next();
  if (!first || !std::holds_alternative<channel::Init>(*first)) return kExitStartFailed;
  channel::Init init = std::get<channel::Init>(std::move(*first));
  lockdown::limit_resources(init.cpu_seconds, report);

  std::optional<openapi::DocumentImage> api;
  if (init.spec) {
    auto mapped = openapi::DocumentImage::map(kImageFd);
    if (!std::holds_alternative<openapi::DocumentImage>(mapped)) return kExitStartFailed;
    api = std::get<openapi::DocumentImage>(std::move(mapped));
  }

  ensure_v8_initialized(init.jitless ? JitMode::jitless : JitMode::enabled);
  v8::V8::SetFatalMemoryErrorCallback(out_of_memory);
  set_out_of_memory_handler(out_of_memory);
  v8::base::SetPrintStackTrace(on_v8_fatal);  // after V8::Initialize, which sets its own
  warm_up(init.limits, api ? &*api : nullptr);

  // One fresh isolate per tool, made ready while the process waits, so a call finds its set-up
  // done; each is used by one call and replaced after the call's result has been sent.
  const openapi::DocumentImage* document = api ? &*api : nullptr;
  auto prepare = [&](Tool tool, const config::Limits& limits) {
    const FetchGlobal fetch =
        tool == Tool::execute && init.fetch ? FetchGlobal::present : FetchGlobal::absent;
    return std::make_unique<PreparedIsolate>(
        PrepareRequest{tool, limits, document, fetch, options.extend_context});
  };
  std::unique_ptr<PreparedIsolate> ready[2];
  auto slot = [&](Tool tool) -> std::unique_ptr<PreparedIsolate>& {
    return ready[tool == Tool::search ? 0 : 1];
  };
  // Search first: `spec` keeps a per-thread pointer to its view, so views end in reverse order
  // of creation; an execute isolate has none.
  slot(Tool::search) = prepare(Tool::search, init.limits);
  slot(Tool::execute) = prepare(Tool::execute, init.limits);

  Fetches fetches;
  CurrentCall current;
  ChannelWaiter waiter(inbound, fetches, current);
  if (!waiter.usable()) return kExitStartFailed;
  // The daemon cancels a running call with this signal (and a Cancel frame, for a call that
  // waits); its value is the call id. The thread sleeps until one comes.
  std::thread canceller([&current, cancel_signals] {
    for (;;) {
      siginfo_t info{};
      if (::sigwaitinfo(&cancel_signals, &info) == cancel_signal()) {
        current.cancel(static_cast<std::uint32_t>(info.si_value.sival_int));
      }
    }
  });
  canceller.detach();  // ends with the process

  // Beyond the two ready isolates: one call's heap and ArrayBuffers, the near-heap-limit grant,
  // what the page pool may keep, and slack.
  lockdown::limit_address_space(
      (std::size_t{init.limits.heap_mb} * 4 + 512) * kMB + kPagePoolAddressSpace, report);
  lockdown::empty_root(report);
  lockdown::restrict_syscalls(report);
  report.insert(report.begin(), "process: on (no environment, only the channel descriptor)");
  report.push_back(init.jitless
                       ? "jitless: on (V8 interprets; no JIT, no writable code pages)"
                       : "jitless: no (V8's JIT compilers run; sandbox.jitless turns them off)");
  send(channel::Ready{report});

  while (auto message = inbound.next()) {
    auto* run = std::get_if<channel::Run>(&*message);
    if (run == nullptr) {
      // A Cancel or a fetch reply that arrived after its call ended: nothing to do.
      if (std::holds_alternative<channel::Cancel>(*message) ||
          std::holds_alternative<channel::FetchReply>(*message)) {
        continue;
      }
      ::_exit(kExitBadMessage);  // Init again, or a message only a process sends
    }
    const std::uint64_t call_id = run->id;
    const Fetcher fetcher = [&fetches, call_id](gateway::OutboundRequest outbound,
                                                std::function<void(gateway::FetchResult)> done) {
      const std::uint64_t fetch_id = fetches.expect(call_id, std::move(done));
      send(channel::FetchRequest{call_id, fetch_id, std::move(outbound)});
    };
    auto& isolate = slot(run->tool);
    if (!isolate->suits(run->tool, run->limits)) {
      // Limits other than the process's own: set up now (never the case for the daemon's calls).
      isolate.reset();
      isolate = prepare(run->tool, run->limits);
    }
    const auto started = std::chrono::steady_clock::now();
    CancelToken cancel;
    current.start(call_id, &cancel);
    waiter.reset();
    Outcome outcome = isolate->run(run->code, &cancel, init.fetch ? &fetcher : nullptr, &waiter);
    current.end();
    fetches.forget();
    outcome.sandbox_us =
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now() - started)
                                       .count());
    send(channel::Result{call_id, std::move(outcome)});
    isolate.reset();  // disposed before its successor exists (see above)
    for (Tool tool : {Tool::search, Tool::execute}) {
      if (!slot(tool)) slot(tool) = prepare(tool, init.limits);
    }
  }
  return 0;
}

}  // namespace codemode::sandbox
