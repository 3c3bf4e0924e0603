#include "sandbox/child.h"

#include <malloc.h>
#include <unistd.h>

#include <v8.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "openapi/document.h"
#include "sandbox/channel.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/lockdown.h"
#include "sandbox/v8_platform.h"

namespace codemode::sandbox {
namespace {

constexpr std::size_t kMB = 1024 * 1024;
// The daemon is trusted; its largest frames are the document and upstream bodies.
constexpr std::size_t kMaxInboundFrame = std::size_t{3} << 30;

// Blocking frame reads from the channel (the reader thread, and the start before it exists).
class Inbound {
 public:
  // nullopt: the channel closed. Exits the process on a malformed frame.
  std::optional<channel::Message> next() {
    for (;;) {
      auto next = reader_.next();
      if (auto* error = std::get_if<channel::DecodeError>(&next)) {
        (void)error;
        ::_exit(kExitBadMessage);
      }
      if (auto& body = std::get<std::optional<std::string>>(next)) {
        auto decoded = channel::decode(*body);
        if (std::holds_alternative<channel::DecodeError>(decoded)) ::_exit(kExitBadMessage);
        return std::get<channel::Message>(std::move(decoded));
      }
      char buffer[65536];
      const long got = channel::read_some(kChannelFd, buffer, sizeof buffer);
      if (got <= 0) return std::nullopt;
      reader_.append(std::string_view(buffer, static_cast<std::size_t>(got)));
    }
  }

 private:
  channel::FrameReader reader_{kMaxInboundFrame};
};

void send(const channel::Message& message) {
  // Nobody to answer to when the daemon is gone.
  if (!channel::send_all(kChannelFd, channel::encode_frame(message))) ::_exit(0);
}

[[noreturn]] void out_of_memory(const char*, bool) { ::_exit(kExitOutOfMemory); }

// What the reader thread hands the main thread, and the fetches waiting for their replies.
class Mailroom {
 public:
  struct Job {
    channel::Run run;
    std::shared_ptr<CancelToken> cancel;
  };

  void post_run(channel::Run run) {
    auto token = std::make_shared<CancelToken>();
    {
      std::lock_guard lock(mutex_);
      current_id_ = run.id;
      current_cancel_ = token;
      jobs_.push_back(Job{std::move(run), std::move(token)});
    }
    wake_.notify_one();
  }
  void cancel(std::uint64_t id) {
    std::shared_ptr<CancelToken> token;
    {
      std::lock_guard lock(mutex_);
      if (id == current_id_) token = current_cancel_;
    }
    if (token) token->cancel();
  }
  void closed() {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    wake_.notify_one();
  }
  // nullopt once the channel closed and no call is left.
  std::optional<Job> next_job() {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return closed_ || !jobs_.empty(); });
    if (jobs_.empty()) return std::nullopt;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    return job;
  }

  std::uint64_t expect_reply(std::uint64_t call_id,
                             std::function<void(gateway::FetchResult)> done) {
    std::lock_guard lock(mutex_);
    const std::uint64_t fetch_id = ++last_fetch_id_;
    fetches_.emplace(fetch_id, Waiting{call_id, std::move(done)});
    return fetch_id;
  }
  void deliver(channel::FetchReply reply) {
    std::function<void(gateway::FetchResult)> done;
    {
      std::lock_guard lock(mutex_);
      const auto it = fetches_.find(reply.fetch_id);
      if (it == fetches_.end() || it->second.call_id != reply.call_id) return;
      done = std::move(it->second.done);
      fetches_.erase(it);
    }
    done(std::move(reply.result));
  }
  // Replies that arrive after their call ended have nobody to go to.
  void forget_fetches() {
    std::lock_guard lock(mutex_);
    fetches_.clear();
  }

 private:
  struct Waiting {
    std::uint64_t call_id;
    std::function<void(gateway::FetchResult)> done;
  };
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool closed_ = false;
  std::uint64_t current_id_ = 0;
  std::shared_ptr<CancelToken> current_cancel_;
  std::uint64_t last_fetch_id_ = 0;
  std::map<std::uint64_t, Waiting> fetches_;
};

void read_frames(Inbound& inbound, Mailroom& mailroom) {
  while (auto message = inbound.next()) {
    if (auto* run = std::get_if<channel::Run>(&*message)) {
      mailroom.post_run(std::move(*run));
    } else if (auto* cancel = std::get_if<channel::Cancel>(&*message)) {
      mailroom.cancel(cancel->id);
    } else if (auto* reply = std::get_if<channel::FetchReply>(&*message)) {
      mailroom.deliver(std::move(*reply));
    } else {
      ::_exit(kExitBadMessage);  // Init again, or a message only a process sends
    }
  }
  mailroom.closed();
}

// Touches what a call may touch for the first time (bootstrap, fetch.js, spec, Date, Intl), so
// anything V8 or ICU loads lazily from files is loaded before the files are out of reach.
void warm_up(const config::Limits& limits, const openapi::Document* api) {
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
  lockdown::Report report;
  lockdown::enter_namespaces(report);

  Inbound inbound;
  auto first = inbound.next();
  if (!first || !std::holds_alternative<channel::Init>(*first)) return kExitStartFailed;
  channel::Init init = std::get<channel::Init>(std::move(*first));
  lockdown::limit_resources(init.cpu_seconds, report);

  std::optional<openapi::Document> api;
  if (init.spec) api = openapi::make_document(std::move(init.spec));
  ::malloc_trim(0);  // the frame and the decoder's copies are gone; so is their memory

  ensure_v8_initialized();
  v8::V8::SetFatalMemoryErrorCallback(out_of_memory);
  set_out_of_memory_handler(out_of_memory);
  warm_up(init.limits, api ? &*api : nullptr);

  // One fresh isolate per tool, made ready while the process waits, so a call finds its set-up
  // done; each is used by one call and replaced after the call's result has been sent.
  const openapi::Document* document = api ? &*api : nullptr;
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

  // Beyond the two ready isolates: one call's heap and ArrayBuffers, the near-heap-limit grant, a
  // watchdog stack, and slack.
  lockdown::limit_address_space((std::size_t{init.limits.heap_mb} * 4 + 512) * kMB, report);
  lockdown::empty_root(report);
  lockdown::restrict_syscalls(report);
  report.insert(report.begin(), "process: on (no environment, only the channel descriptor)");
  send(channel::Ready{report});

  Mailroom mailroom;
  std::thread reader([&] { read_frames(inbound, mailroom); });
  reader.detach();  // ends with the process

  while (auto job = mailroom.next_job()) {
    const channel::Run& run = job->run;
    const std::uint64_t call_id = run.id;
    const Fetcher fetcher = [&mailroom, call_id](gateway::OutboundRequest outbound,
                                                 std::function<void(gateway::FetchResult)> done) {
      const std::uint64_t fetch_id = mailroom.expect_reply(call_id, std::move(done));
      send(channel::FetchRequest{call_id, fetch_id, std::move(outbound)});
    };
    auto& isolate = slot(run.tool);
    if (!isolate->suits(run.tool, run.limits)) {
      // Limits other than the process's own: set up now (never the case for the daemon's calls).
      isolate.reset();
      isolate = prepare(run.tool, run.limits);
    }
    Outcome outcome = isolate->run(run.code, job->cancel.get(), init.fetch ? &fetcher : nullptr);
    mailroom.forget_fetches();
    send(channel::Result{call_id, std::move(outcome)});
    isolate.reset();  // disposed before its successor exists (see above)
    for (Tool tool : {Tool::search, Tool::execute}) {
      if (!slot(tool)) slot(tool) = prepare(tool, init.limits);
    }
  }
  return 0;
}

}  // namespace codemode::sandbox
