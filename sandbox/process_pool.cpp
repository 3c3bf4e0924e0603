#include "sandbox/process_pool.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

namespace codemode::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

// Calls whose ends give the pool's current rate (see calls_ahead()).
constexpr std::size_t kRateWindow = 64;

Outcome cancelled() { return Outcome::failure(ErrorKind::runtime, "cancelled"); }

// The most calls before its last that a process's successor is asked for: the start of the part
// of a process's life where a successor may be running beside it.
unsigned most_calls_ahead(unsigned calls_per_process) { return calls_per_process / 4; }

}  // namespace

Fetcher gateway_fetcher(gateway::Gateway& gateway, const config::Limits& limits) {
  auto budget = std::make_shared<gateway::CallBudget>(limits.subrequests);
  const auto deadline = gateway::Clock::now() + std::chrono::milliseconds(limits.wall_ms);
  return [gateway = &gateway, budget = std::move(budget), deadline](
             gateway::OutboundRequest outbound, std::function<void(gateway::FetchResult)> done) {
    gateway->fetch(std::move(outbound), *budget, deadline, std::move(done));
  };
}

unsigned calls_ahead(unsigned calls_per_process, double calls_per_second, double start_seconds) {
  const unsigned most = most_calls_ahead(calls_per_process);
  const double wanted = std::ceil(2 * calls_per_second * std::max(0.0, start_seconds));
  if (!(wanted < most)) return most;  // NaN too
  return std::min(most, std::max(8u, static_cast<unsigned>(wanted)));
}

// One thread for what blocks: starting processes, and killing and reaping retired ones.
class ProcessPool::Launcher {
 public:
  Launcher() : thread_([this] { loop(); }) {}
  ~Launcher() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void start(std::function<void()> task) { push(starts_, std::move(task)); }
  void reap(pid_t pid) {
    if (pid > 0) push(reaps_, [pid] { kill_and_reap(pid); });
  }

 private:
  void push(std::deque<std::function<void()>>& queue, std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      queue.push_back(std::move(task));
    }
    wake_.notify_all();
  }
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !reaps_.empty() || !starts_.empty(); });
      // Reaps first, and all of them even when stopping: no zombie outlives the pool. Starts
      // are dropped when stopping: nobody would take the process.
      std::function<void()> task;
      if (!reaps_.empty()) {
        task = std::move(reaps_.front());
        reaps_.pop_front();
      } else if (!stopping_ && !starts_.empty()) {
        task = std::move(starts_.front());
        starts_.pop_front();
      } else {
        return;  // stopping, nothing left to reap
      }
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> starts_;
  std::deque<std::function<void()>> reaps_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after what it reads
};

// The pool itself; only ever touched on the executor (or in close() once it stopped).
struct ProcessPool::State : std::enable_shared_from_this<State> {
  struct Job {
    Call call;
    Completion done;
  };

  State(ProcessPoolOptions options, boost::asio::any_io_executor executor, Launcher& launcher)
      : options(std::move(options)), executor(std::move(executor)), launcher(&launcher) {}

  void submit(Job job) {
    if (closed) return job.done(cancelled());
    if (!job.call.cancel) job.call.cancel = std::make_shared<CancelToken>();
    queue.push_back(std::move(job));
    dispatch();
  }

  void dispatch() {
    while (!closed && !queue.empty() && !idle.empty()) {
      std::shared_ptr<SandboxProcess> process = std::move(idle.front());
      idle.pop_front();
      if (!process->usable()) {
        retire(std::move(process));
        continue;
      }
      Job job = std::move(queue.front());
      queue.pop_front();
      if (job.call.cancel->cancelled()) {
        idle.push_front(std::move(process));
        job.done(cancelled());
        continue;
      }
      run(std::move(process), std::move(job));
    }
    retire_surplus();
    ensure_processes();
    if (queue.empty() && busy.empty() && drained) std::exchange(drained, nullptr)();
  }

  void run(std::shared_ptr<SandboxProcess> process, Job job) {
    busy.emplace(process, job.call.cancel);
    Fetcher fetch;
    if (job.call.tool == Tool::execute && options.gateway != nullptr) {
      fetch = gateway_fetcher(*options.gateway, options.limits);
    }
    SandboxProcess& target = *process;
    target.run(job.call, options.limits, std::move(fetch),
               [self = shared_from_this(), process = std::move(process),
                done = std::move(job.done)](Outcome outcome) mutable {
                 self->busy.erase(process);
                 self->finished.push_back(Clock::now());
                 if (self->finished.size() > kRateWindow) self->finished.pop_front();
                 if (!process->usable()) {
                   spdlog::warn("sandbox: process replaced after a call: {}: {}",
                                to_string(outcome.error_kind), outcome.error_message);
                 }
                 done(std::move(outcome));
                 if (self->closed) return;
                 if (process->usable() && process->calls() < self->options.calls_per_process) {
                   self->idle.push_back(std::move(process));
                 } else {
                   self->retire(std::move(process));
                 }
                 self->dispatch();
               });
  }

  // A successor ready while its predecessor still has calls left makes one process too many.
  // When no call waits and the process with the most calls is idle and in the last quarter of
  // them (where a successor is asked for), it retires now rather than idling beside its
  // successor until its last call. (A busy one is looked at again when its call ends.)
  void retire_surplus() {
    if (closed || !queue.empty()) return;
    const unsigned late = options.calls_per_process - most_calls_ahead(options.calls_per_process);
    while (idle.size() + busy.size() > options.processes) {
      auto oldest = std::max_element(idle.begin(), idle.end(), [](const auto& a, const auto& b) {
        return a->calls() < b->calls();
      });
      if (oldest == idle.end() || (*oldest)->calls() < late) return;
      for (const auto& [process, token] : busy) {
        if (process->calls() > (*oldest)->calls()) return;
      }
      std::shared_ptr<SandboxProcess> process = std::move(*oldest);
      idle.erase(oldest);
      retire(std::move(process));
    }
  }

  // Calls per second that each live process serves now: the last calls' ends over the time
  // since the first of them (so the rate falls while no call ends).
  double calls_per_second_each() const {
    const auto live = idle.size() + busy.size();
    if (finished.empty() || live == 0) return 0;
    const double seconds = std::chrono::duration<double>(Clock::now() - finished.front()).count();
    if (seconds <= 0) return 0;
    return static_cast<double>(finished.size()) / seconds / static_cast<double>(live);
  }

  // Processes wanted: the configured number, plus a successor for each that is near its last
  // call.
  void ensure_processes() {
    if (closed) return;
    unsigned near_end = 0;
    const unsigned ahead =
        calls_ahead(options.calls_per_process, calls_per_second_each(), start_seconds);
    auto count = [&](const SandboxProcess& process) {
      if (ahead > 0 && process.calls() + ahead >= options.calls_per_process) ++near_end;
    };
    for (const auto& process : idle) count(*process);
    for (const auto& [process, token] : busy) count(*process);
    const auto live = static_cast<unsigned>(idle.size() + busy.size());
    while (live + starting < options.processes + near_end) {
      ++starting;
      if (launcher == nullptr) return;
      launcher->start([self = shared_from_this(), asked = Clock::now()] {
        auto started = SandboxProcess::start(self->options.process, self->executor);
        boost::asio::post(self->executor, [self, asked, started = std::move(started)]() mutable {
          self->adopt(std::move(started), asked);
        });
      });
    }
  }

  void adopt(std::variant<std::shared_ptr<SandboxProcess>, std::string> started,
             Clock::time_point asked) {
    --starting;
    if (auto* error = std::get_if<std::string>(&started)) {
      spdlog::error("sandbox: a sandbox process could not start: {}", *error);
      if (idle.empty() && busy.empty() && starting == 0) {
        // Nothing can serve what waits; a later call tries again.
        auto waiting = std::exchange(queue, {});
        for (auto& job : waiting) {
          job.done(Outcome::failure(
              ErrorKind::runtime, "the sandbox process could not start (the server log says why)"));
        }
      }
      return;
    }
    auto process = std::move(std::get<std::shared_ptr<SandboxProcess>>(started));
    if (closed) return reap(process->release());
    if (!layers_logged) {
      layers_logged = true;
      for (const auto& layer : process->layers()) {
        const bool weak = layer.find(": off") != std::string::npos ||
                          layer.find(": partial") != std::string::npos;
        if (weak) {
          spdlog::warn("sandbox layer {}", layer);
        } else {
          spdlog::info("sandbox layer {}", layer);
        }
      }
    }
    // Under load a start takes longer (it shares the CPUs) and may wait for another one.
    start_seconds = std::chrono::duration<double>(Clock::now() - asked).count();
    spdlog::debug("sandbox: process {} ready {:.0f} ms after it was asked for", process->pid(),
                  start_seconds * 1000);
    process->watch();
    idle.push_back(std::move(process));
    dispatch();
  }

  void retire(std::shared_ptr<SandboxProcess> process) { reap(process->release()); }
  void reap(pid_t pid) {
    if (launcher != nullptr) {
      launcher->reap(pid);
    } else {
      kill_and_reap(pid);
    }
  }

  void cancel_all() {
    auto waiting = std::exchange(queue, {});
    for (auto& job : waiting) job.done(cancelled());
    for (const auto& [process, token] : busy) token->cancel();
  }

  void close() {
    closed = true;
    cancel_all();
    auto running = std::exchange(busy, {});
    for (auto& [process, token] : running) process->kill(ErrorKind::runtime, "cancelled");
    for (auto& process : std::exchange(idle, {})) reap(process->release());
    for (auto& [process, token] : running) reap(process->release());
    if (drained) std::exchange(drained, nullptr)();
  }

  const ProcessPoolOptions options;
  const boost::asio::any_io_executor executor;
  Launcher* launcher;  // null once the pool is gone (then reaps happen here, blocking)
  std::deque<std::shared_ptr<SandboxProcess>> idle;  // longest idle first
  std::map<std::shared_ptr<SandboxProcess>, std::shared_ptr<CancelToken>> busy;
  std::deque<Job> queue;
  unsigned starting = 0;
  std::deque<Clock::time_point> finished;  // when the last kRateWindow calls ended
  double start_seconds = 0;                // how long the last process took to be ready
  bool closed = false;
  bool layers_logged = false;
  std::function<void()> drained;
};

ProcessPool::ProcessPool(ProcessPoolOptions options, boost::asio::any_io_executor executor)
    : launcher_(std::make_unique<Launcher>()),
      state_(std::make_shared<State>(std::move(options), std::move(executor), *launcher_)) {
  // Ready before the first call arrives.
  boost::asio::post(state_->executor, [state = state_] { state->ensure_processes(); });
}

ProcessPool::~ProcessPool() {
  state_->launcher = nullptr;  // the executor runs nothing of the pool's any more (see close())
  launcher_.reset();
}

void ProcessPool::submit(Call call, Completion done) {
  boost::asio::post(state_->executor,
                    [state = state_, job = State::Job{std::move(call), std::move(done)}]() mutable {
                      state->submit(std::move(job));
                    });
}

void ProcessPool::cancel_all() {
  boost::asio::post(state_->executor, [state = state_] { state->cancel_all(); });
}

void ProcessPool::when_drained(std::function<void()> then) {
  state_->drained = std::move(then);
  state_->dispatch();
}

void ProcessPool::close() { state_->close(); }

}  // namespace codemode::sandbox
