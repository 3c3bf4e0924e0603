#include "sandbox/sandbox.h"

#include "sandbox/v8_platform.h"

#include "sandbox/channel.h"

#include <algorithm>
#include <cctype>
#include <future>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

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
  init.jitless = options.jit == JitMode::jitless;
  return std::make_shared<const std::string>(channel::encode_frame(init));
}

}  // namespace

std::variant<std::vector<std::string>, std::string> probe_layers(
    const std::vector<std::string>& child_command) {
  SandboxOptions options;
  ProcessOptions process;
  process.command = child_command;
  process.init_frame = init_frame(options);
  boost::asio::io_context io;
  auto started = SandboxProcess::start(process, io.get_executor());
  if (auto* error = std::get_if<std::string>(&started)) return *error;
  return std::get<std::shared_ptr<SandboxProcess>>(started)->layers();
}

Sandbox::Sandbox(SandboxOptions options) : options_(std::move(options)) {
  unsigned n = options_.workers != 0 ? options_.workers : std::thread::hardware_concurrency();
  n = std::max(1u, n);
  if (!options_.child_command.empty()) {
    ProcessPoolOptions pool;
    pool.process.command = options_.child_command;
    pool.process.init_frame = init_frame(options_);
    pool.process.image_fd = options_.api != nullptr ? options_.api->fd() : -1;
    pool.process.child_stderr = options_.child_stderr;
    pool.processes = n;
    pool.calls_per_process = std::max(1u, options_.calls_per_process);
    pool.limits = options_.limits;
    pool.gateway = options_.gateway;
    boost::asio::any_io_executor executor = options_.executor;
    if (!executor) {
      own_io_ = std::make_unique<boost::asio::io_context>();
      executor = own_io_->get_executor();
    }
    pool_ = std::make_unique<ProcessPool>(std::move(pool), executor);
    if (own_io_) {
      own_io_thread_ = std::thread([io = own_io_.get()] {
        auto work = boost::asio::make_work_guard(*io);
        io->run();
      });
    }
    return;
  }
  ensure_v8_initialized(options_.jit);
  workers_.reserve(n);
  running_.resize(n);
  for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

Sandbox::~Sandbox() {
  if (pool_) {
    if (own_io_) {
      // Let what is queued and running finish, then close, on the pool's own thread.
      std::promise<void> closed;
      boost::asio::post(*own_io_, [this, &closed] {
        pool_->when_drained([this, &closed] {
          pool_->close();
          closed.set_value();
        });
      });
      closed.get_future().wait();
      own_io_->stop();
      own_io_thread_.join();
    } else {
      pool_->close();  // the daemon's executor has stopped (see sandbox.h)
    }
    pool_.reset();
    return;
  }
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void Sandbox::submit(Call call, Completion done) {
  if (pool_) return pool_->submit(std::move(call), std::move(done));
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(Job{std::move(call), std::move(done)});
  }
  wake_.notify_all();  // only the longest-idle worker takes it (see worker_loop)
}

void Sandbox::worker_loop(unsigned slot) {
  for (;;) {
    Job job;
    {
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
  const Fetcher fetcher = gateway_fetcher(*options_.gateway, options_.limits);
  request.fetcher = &fetcher;
  return run_in_fresh_isolate(request);
}

void Sandbox::cancel_all() {
  if (pool_) return pool_->cancel_all();
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
