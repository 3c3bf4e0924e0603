#include "sandbox/sandbox.h"

#include <unistd.h>

#include <algorithm>
#include <future>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "base/check.h"
#include "channel/frames.h"
#include "net/ascii.h"
#include "sandbox/engine.h"
#include "sandbox/process_pool.h"

namespace codemode::sandbox {

std::size_t count_code_points(std::string_view utf8) {
  return static_cast<std::size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::optional<channel::Outcome> check_input(std::string_view code, const config::Limits& limits) {
  const std::size_t chars = count_code_points(code);
  if (chars > limits.code_chars) {
    return channel::Outcome::failure(channel::ErrorKind::input,
                                     "code is " + std::to_string(chars) +
                                         " characters; the limit is " +
                                         std::to_string(limits.code_chars));
  }
  const bool blank = std::all_of(code.begin(), code.end(), [](char c) { return net::is_space(c); });
  if (blank) {
    return channel::Outcome::failure(channel::ErrorKind::input,
                                     "code is empty; send an async arrow function such as "
                                     "async () => Object.keys(spec.paths)");
  }
  return std::nullopt;
}

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
  init.fetch = static_cast<bool>(options.fetch);
  init.limits = options.limits;
  init.cpu_seconds = cpu_allowance_seconds(options.limits, options.calls_per_process);
  init.jitless = options.jit == channel::JitMode::jitless;
  init.concurrency = std::max(1u, options.processes.process_calls);
  init.fetch_base = options.fetch_base;
  return std::make_shared<const std::string>(channel::encode_frame(init));
}

// Half the machine's memory, in bytes.
std::uint64_t half_of_memory() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 2;
}

}  // namespace

// Calls in sandbox processes (process_pool.h), on the given executor or an I/O thread of its own.
class Sandbox::Processes {
 public:
  explicit Processes(const SandboxOptions& options) {
    CODEMODE_CHECK(!options.child_command.empty(),
                   "a Sandbox runs calls in sandbox processes, so it needs their command");
    const config::SandboxSettings& settings = options.processes;
    ProcessPoolOptions pool;
    pool.process.command = options.child_command;
    pool.process.environment = engine_environment();
    pool.process.init_frame = init_frame(options);
    pool.process.image_fd = options.api != nullptr ? options.api->fd() : -1;
    pool.process.child_stderr = options.child_stderr;
    pool.max_processes = std::max(1u, settings.max_processes);
    pool.spare_processes = settings.spare_processes;
    pool.process_calls = std::max(1u, settings.process_calls);
    pool.principal_calls = std::max(1u, settings.principal_calls);
    pool.lifetime_calls = std::max(1u, options.calls_per_process);
    pool.idle_retire = std::chrono::seconds(std::max(1u, settings.idle_seconds));
    pool.memory_bytes =
        settings.memory_mb != 0 ? std::uint64_t{settings.memory_mb} << 20 : half_of_memory();
    pool.limits = options.limits;
    pool.fetch = options.fetch;
    boost::asio::any_io_executor executor = options.executor;
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
  }

  ~Processes() {
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
  }

  void submit(Call call, Sandbox::Completion done) {
    pool_->submit(std::move(call), std::move(done));
  }
  void stop_all(std::string message) { pool_->stop_all(std::move(message)); }
  PoolStats stats() const { return pool_->stats(); }

 private:
  std::unique_ptr<boost::asio::io_context> own_io_;
  std::thread own_io_thread_;
  std::unique_ptr<ProcessPool> pool_;
};

std::variant<std::vector<std::string>, std::string> probe_layers(
    const std::vector<std::string>& child_command) {
  SandboxOptions options;
  ProcessOptions process;
  process.command = child_command;
  process.environment = engine_environment();
  process.init_frame = init_frame(options);
  boost::asio::io_context io;
  auto started = SandboxProcess::start(process, io.get_executor());
  if (auto* error = std::get_if<std::string>(&started)) return *error;
  return std::get<std::shared_ptr<SandboxProcess>>(started)->layers();
}

Sandbox::Sandbox(const SandboxOptions& options)
    : limits_(options.limits), processes_(std::make_unique<Processes>(options)) {}

Sandbox::~Sandbox() = default;

void Sandbox::submit(Call call, Completion done) {
  processes_->submit(std::move(call), std::move(done));
}

void Sandbox::stop_all(std::string message) { processes_->stop_all(std::move(message)); }

PoolStats Sandbox::stats() const { return processes_->stats(); }

}  // namespace codemode::sandbox
