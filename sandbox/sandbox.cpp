#include "sandbox/sandbox.h"

#include "sandbox/v8_platform.h"

#include <algorithm>
#include <cctype>

namespace codemode::sandbox {

std::size_t count_code_points(std::string_view utf8) {
  return static_cast<std::size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::optional<Outcome> check_input(std::string_view code, const config::Limits& limits) {
  const std::size_t chars = count_code_points(code);
  if (chars > limits.code_chars) {
    return Outcome::failure(ErrorKind::input, "code is " + std::to_string(chars) +
                                                  " characters; the limit is " +
                                                  std::to_string(limits.code_chars));
  }
  const bool blank = std::all_of(
      code.begin(), code.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); });
  if (blank) {
    return Outcome::failure(ErrorKind::input,
                            "code is empty; send an async arrow function such as "
                            "async () => Object.keys(spec.paths)");
  }
  return std::nullopt;
}

Sandbox::Sandbox(SandboxOptions options) : options_(std::move(options)) {
  ensure_v8_initialized();
  unsigned n = options_.workers != 0 ? options_.workers : std::thread::hardware_concurrency();
  n = std::max(1u, n);
  workers_.reserve(n);
  running_.resize(n);
  for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

Sandbox::~Sandbox() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void Sandbox::submit(Call call, Completion done) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(Job{std::move(call), std::move(done)});
  }
  wake_.notify_one();
}

void Sandbox::worker_loop(unsigned slot) {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      job = std::move(queue_.front());
      queue_.pop_front();
      if (!job.call.cancel) job.call.cancel = std::make_shared<CancelToken>();
      running_[slot] = job.call.cancel;
    }
    Outcome outcome = run(job.call);
    {
      std::lock_guard lock(mutex_);
      running_[slot].reset();
    }
    job.done(std::move(outcome));
  }
}

Outcome Sandbox::run(const Call& call) {
  RunRequest request{call.tool,    call.code,         &options_.limits,
                     options_.api, call.cancel.get(), nullptr};
  if (call.tool != Tool::execute || options_.gateway == nullptr) {
    return run_in_fresh_isolate(request);
  }
  // One budget per call; the gateway spends it synchronously inside fetch(), on this thread.
  gateway::CallBudget budget(options_.limits.subrequests);
  const auto deadline = gateway::Clock::now() + std::chrono::milliseconds(options_.limits.wall_ms);
  const Fetcher fetcher = [this, &budget, deadline](
                              gateway::OutboundRequest outbound,
                              std::function<void(gateway::FetchResult)> done) {
    options_.gateway->fetch(std::move(outbound), budget, deadline, std::move(done));
  };
  request.fetcher = &fetcher;
  return run_in_fresh_isolate(request);
}

void Sandbox::cancel_all() {
  std::lock_guard lock(mutex_);
  for (auto& job : queue_) {
    if (!job.call.cancel) job.call.cancel = std::make_shared<CancelToken>();
    job.call.cancel->cancel();
  }
  for (auto& token : running_) {
    if (token) token->cancel();
  }
}

}  // namespace codemode::sandbox
