#include "sandbox/sandbox.h"

#include "sandbox/v8_platform.h"

#include <spdlog/spdlog.h>

#include "sandbox/channel.h"

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

std::vector<std::string> daemon_child_command() { return {"/proc/self/exe", "--sandbox-child"}; }

namespace {

// A process's total CPU allowance: every call at its cpu_ms plus the per-call overhead
// (isolate, context, bootstrap), with slack. SIGXCPU is a backstop; workers replace processes
// long before.
std::uint32_t cpu_allowance_seconds(const config::Limits& limits, unsigned calls) {
  const std::uint64_t ms = std::uint64_t{calls} * (limits.cpu_ms + 20);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(ms / 1000 + 60, 1u << 30));
}

std::shared_ptr<const std::string> init_frame(const SandboxOptions& options) {
  channel::Init init;
  init.spec = options.api != nullptr;
  init.fetch = options.gateway != nullptr;
  init.limits = options.limits;
  init.cpu_seconds = cpu_allowance_seconds(options.limits, options.calls_per_process);
  return std::make_shared<const std::string>(channel::encode_frame(init));
}

}  // namespace

std::variant<std::vector<std::string>, std::string> probe_layers(
    const std::vector<std::string>& child_command) {
  SandboxOptions options;
  ProcessOptions process;
  process.command = child_command;
  process.init_frame = init_frame(options);
  auto started = SandboxProcess::start(process);
  if (auto* error = std::get_if<std::string>(&started)) return *error;
  return std::get<std::unique_ptr<SandboxProcess>>(started)->layers();
}

Sandbox::Sandbox(SandboxOptions options) : options_(std::move(options)) {
  if (options_.child_command.empty()) {
    ensure_v8_initialized();
  } else {
    options_.calls_per_process = std::max(1u, options_.calls_per_process);
    process_options_.command = options_.child_command;
    process_options_.init_frame = init_frame(options_);
    process_options_.image_fd = options_.api != nullptr ? options_.api->fd() : -1;
    process_options_.child_stderr = options_.child_stderr;
  }
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
  wake_.notify_all();  // only the longest-idle worker takes it (see worker_loop)
}

std::unique_ptr<SandboxProcess> Sandbox::start_process() {
  auto started = SandboxProcess::start(process_options_);
  if (auto* error = std::get_if<std::string>(&started)) {
    spdlog::error("sandbox: a sandbox process could not start: {}", *error);
    return nullptr;
  }
  auto process = std::move(std::get<std::unique_ptr<SandboxProcess>>(started));
  if (!layers_logged_.exchange(true)) {
    for (const auto& layer : process->layers()) {
      const bool weak =
          layer.find(": off") != std::string::npos || layer.find(": partial") != std::string::npos;
      if (weak) {
        spdlog::warn("sandbox layer {}", layer);
      } else {
        spdlog::info("sandbox layer {}", layer);
      }
    }
  }
  return process;
}

void Sandbox::worker_loop(unsigned slot) {
  const bool processes = !options_.child_command.empty();
  std::unique_ptr<SandboxProcess> process;
  if (processes) process = start_process();  // ready before the first call arrives
  for (;;) {
    Job job;
    {
      // Calls go to the worker that has been idle longest: its process has had the most time
      // to make its next isolate ready since its last call.
      std::unique_lock lock(mutex_);
      idle_.push_back(slot);
      wake_.wait(lock, [&] { return stopping_ || (!queue_.empty() && idle_.front() == slot); });
      if (queue_.empty()) return;  // stopping and drained
      idle_.erase(std::find(idle_.begin(), idle_.end(), slot));
      job = std::move(queue_.front());
      queue_.pop_front();
      if (!queue_.empty()) wake_.notify_all();  // the next idle worker's turn
      if (!job.call.cancel) job.call.cancel = std::make_shared<CancelToken>();
      running_[slot] = job.call.cancel;
    }
    Outcome outcome = processes ? run_in_process(job.call, process) : run(job.call);
    {
      std::lock_guard lock(mutex_);
      running_[slot].reset();
    }
    job.done(std::move(outcome));
    if (processes && process &&
        (!process->usable() || process->calls() >= options_.calls_per_process)) {
      process = start_process();
    }
  }
}

// One call's way to the gateway, with that call's budget and wall deadline. The gateway spends
// the budget synchronously inside fetch(), on the worker thread that owns it.
Fetcher Sandbox::gateway_fetcher(gateway::CallBudget& budget) const {
  const auto deadline = gateway::Clock::now() + std::chrono::milliseconds(options_.limits.wall_ms);
  return [gateway = options_.gateway, &budget, deadline](
             gateway::OutboundRequest outbound, std::function<void(gateway::FetchResult)> done) {
    gateway->fetch(std::move(outbound), budget, deadline, std::move(done));
  };
}

Outcome Sandbox::run_in_process(const Call& call, std::unique_ptr<SandboxProcess>& process) {
  if (call.cancel->cancelled()) return Outcome::failure(ErrorKind::runtime, "cancelled");
  if (!process) process = start_process();
  if (!process) {
    return Outcome::failure(ErrorKind::runtime,
                            "the sandbox process could not start (the server log says why)");
  }
  gateway::CallBudget budget(options_.limits.subrequests);
  const Fetcher fetch = gateway_fetcher(budget);
  const bool fetches = call.tool == Tool::execute && options_.gateway != nullptr;
  Outcome outcome = process->run(call, options_.limits, fetches ? &fetch : nullptr);
  if (!process->usable()) {
    spdlog::warn("sandbox: process replaced after a call: {}: {}", to_string(outcome.error_kind),
                 outcome.error_message);
  }
  return outcome;
}

Outcome Sandbox::run(const Call& call) {
  RunRequest request{call.tool,    call.code,         &options_.limits,
                     options_.api, call.cancel.get(), nullptr};
  if (call.tool != Tool::execute || options_.gateway == nullptr) {
    return run_in_fresh_isolate(request);
  }
  gateway::CallBudget budget(options_.limits.subrequests);
  const Fetcher fetcher = gateway_fetcher(budget);
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
