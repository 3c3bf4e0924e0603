#include "sandbox/thread_runner.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "sandbox/globals_snapshot.h"
#include "sandbox/isolate_runner.h"
#include "sandbox/ledger.h"
#include "sandbox/v8_platform.h"

namespace codemode::sandbox {
namespace {

// Calls on worker threads of this process, the longest-idle worker first; no principals.
class ThreadRunner final : public Sandbox::Runner {
 public:
  explicit ThreadRunner(const SandboxOptions& options) : options_(options) {
    unsigned n = options_.workers != 0 ? options_.workers : std::thread::hardware_concurrency();
    n = std::max(1u, n);
    ensure_v8_initialized(options_.jit);
    detail::set_fetch_base(options_.fetch_base);
    workers_.reserve(n);
    running_.resize(n);
    for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this, i] { loop(i); });
  }

  ~ThreadRunner() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
  }

  void submit(Call call, Sandbox::Completion done) override {
    {
      std::lock_guard lock(mutex_);
      if (!stopped_.empty()) {
        done(Outcome::failure(ErrorKind::runtime, stopped_ + "; the call did not start"));
        return;
      }
      queue_.push_back(Job{std::move(call), std::move(done)});
    }
    wake_.notify_all();  // only the longest-idle worker takes it (see loop)
  }

  void cancel_all() override {
    std::lock_guard lock(mutex_);
    for (auto& job : queue_) {
      if (!job.call.cancel) job.call.cancel = std::make_shared<CancelToken>();
      job.call.cancel->cancel();
    }
    for (auto& token : running_) {
      if (token) token->cancel();
    }
  }

  void stop_all(std::string message) override {
    std::deque<Job> waiting;
    {
      std::lock_guard lock(mutex_);
      stopped_ = message;
      waiting = std::exchange(queue_, {});
      // A running call ends as cancelled (its token says so); in-process workers are for tests.
      for (auto& token : running_) {
        if (token) token->cancel();
      }
    }
    for (auto& job : waiting) {
      job.done(Outcome::failure(ErrorKind::runtime, message + "; the call did not start"));
    }
  }

 private:
  struct Job {
    Call call;
    Sandbox::Completion done;
  };

  void loop(unsigned slot) {
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

  Outcome run(const Call& call) {
    RunRequest request{call.tool,    call.code,         &options_.limits,
                       options_.api, call.cancel.get(), nullptr};
    if (call.tool != Tool::execute || !options_.fetch) return run_in_fresh_isolate(request);
    auto ledger = std::make_shared<RequestLedger>();
    const Fetcher fetcher = record_requests(options_.fetch(options_.limits, call), ledger);
    request.fetcher = &fetcher;
    Outcome outcome = run_in_fresh_isolate(request);
    ledger->move_into(outcome);
    return outcome;
  }

  const SandboxOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> queue_;
  std::deque<unsigned> idle_;                          // waiting workers, longest-idle first
  std::vector<std::shared_ptr<CancelToken>> running_;  // one slot per worker, under mutex_
  bool stopping_ = false;
  std::string stopped_;  // stop_all()'s message, once it ran
  std::vector<std::thread> workers_;
};

}  // namespace

std::unique_ptr<Sandbox::Runner> make_thread_runner(const SandboxOptions& options) {
  return std::make_unique<ThreadRunner>(options);
}

}  // namespace codemode::sandbox
