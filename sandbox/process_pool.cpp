#include "sandbox/process_pool.h"

#include "sandbox/ledger.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace codemode::sandbox {
namespace {

using Clock = std::chrono::steady_clock;

using namespace std::chrono_literals;

// How often resident memory is read again from /proc while calls start.
constexpr auto kMemorySampleEvery = 20ms;
// How often idle processes are looked at for retirement.
constexpr auto kSweepEvery = 1s;

channel::Outcome cancelled() {
  return channel::Outcome::failure(channel::ErrorKind::runtime, "cancelled");
}

std::uint64_t microseconds_since(Clock::time_point then) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - then).count());
}

// Resident bytes of process `pid` that are its own (/proc/<pid>/statm: resident less the
// file-backed shared pages, which are mostly libnode's code that every sandbox process maps
// once: ~37 of a process's ~47 MB resident), 0 when it cannot be read.
std::uint64_t resident_bytes(pid_t pid) {
  char path[64];
  (void)std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  std::FILE* file = std::fopen(path, "re");
  if (file == nullptr) return 0;
  unsigned long long size = 0, resident = 0, shared = 0;
  const int got = std::fscanf(file, "%llu %llu %llu", &size, &resident, &shared);
  (void)std::fclose(file);
  static const long kPageBytes = ::sysconf(_SC_PAGESIZE);
  if (got != 3 || shared > resident) return 0;
  return (resident - shared) * static_cast<std::uint64_t>(kPageBytes);
}

}  // namespace

// Threads for what blocks: starting processes, and killing and reaping retired ones. A start
// costs ~40 ms, most of it CPU (exec, V8, the document), so new principals arriving together
// (a burst of sessions) are served by one launcher thread per core instead of one after another.
class ProcessPool::Launcher {
 public:
  Launcher() {
    const unsigned count = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxLaunchers);
    for (unsigned i = 0; i < count; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Launcher() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (auto& thread : threads_) thread.join();
  }
  void start(std::function<void()> task) { push(starts_, std::move(task)); }
  void reap(pid_t pid) {
    if (pid > 0) push(reaps_, [pid] { kill_and_reap(pid); });
  }

 private:
  static constexpr unsigned kMaxLaunchers = 4;

  void push(std::deque<std::function<void()>>& queue, std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      queue.push_back(std::move(task));
    }
    wake_.notify_one();
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
  std::vector<std::thread> threads_;  // last: they start after what they read
};

// The pool itself; only ever touched on the executor (or in close() once it stopped).
struct ProcessPool::State : std::enable_shared_from_this<State> {
  struct Job {
    Call call;
    Completion done;
    Clock::time_point queued_at = Clock::now();
    std::uint64_t seq = 0;
    std::shared_ptr<boost::asio::steady_timer> expiry;  // never started within wall_ms
  };
  // A live process and whose it is.
  struct Proc {
    std::shared_ptr<SandboxProcess> process;
    std::string owner;
    bool spare = true;      // owned by nobody yet
    bool draining = false;  // takes no more calls; retires when its calls end
    Clock::time_point idle_since = Clock::now();
    std::uint64_t resident = 0;  // its own resident bytes when last read (sample_memory)
  };
  struct Principal {
    std::deque<Job> queue;
    unsigned running = 0;
    bool in_turn = false;  // in `turn`
    // Its next call was last held back for memory (over its share of memory_bytes).
    bool held_for_memory = false;
  };

  State(ProcessPoolOptions options, boost::asio::any_io_executor executor, Launcher& launcher)
      : options(std::move(options)),
        executor(std::move(executor)),
        launcher(&launcher),
        sweep_timer(this->executor) {}

  void submit(Job job) {
    if (stopped) {
      return job.done(channel::Outcome::failure(channel::ErrorKind::runtime,
                                                stop_message + "; the call did not start"));
    }
    if (closed) return job.done(cancelled());
    if (!job.call.cancel) job.call.cancel = std::make_shared<channel::CancelToken>();
    job.seq = ++last_seq;
    job.queued_at = Clock::now();
    Principal& principal = principals[job.call.principal];
    if (!principal.in_turn) {
      principal.in_turn = true;
      turn.push_back(job.call.principal);
    }
    arm_expiry(job);
    principal.queue.push_back(std::move(job));
    dispatch();
  }

  // A queued call that has not started by its wall deadline ends as a timeout that says so.
  void arm_expiry(Job& job) {
    job.expiry = std::make_shared<boost::asio::steady_timer>(executor);
    job.expiry->expires_at(job.queued_at + std::chrono::milliseconds(options.limits.wall_ms));
    job.expiry->async_wait([weak = weak_from_this(), name = job.call.principal,
                            seq = job.seq](boost::system::error_code error) {
      auto self = weak.lock();
      if (error || !self) return;
      auto found = self->principals.find(name);
      if (found == self->principals.end()) return;
      auto& queue = found->second.queue;
      auto it = std::find_if(queue.begin(), queue.end(),
                             [seq](const Job& job) { return job.seq == seq; });
      if (it == queue.end()) return;
      Job job = std::move(*it);
      queue.erase(it);
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - job.queued_at);
      const char* for_what = found->second.held_for_memory
                                 ? " ms while its principal's sandbox processes held more than "
                                   "its share of sandbox.memory_mb, and never ran"
                                 : " ms for room in a sandbox process and never ran";
      channel::Outcome outcome =
          channel::Outcome::failure(channel::ErrorKind::timeout,
                                    "wall limit " + std::to_string(self->options.limits.wall_ms) +
                                        " ms exceeded before the call started: it waited " +
                                        std::to_string(waited.count()) + for_what);
      outcome.queued_us = microseconds_since(job.queued_at);
      job.done(std::move(outcome));
      self->dispatch();
    });
  }

  // Starts what may start, principal by principal, one call each per round.
  void dispatch() {
    if (closed) return;
    bool started = true;
    while (started && !turn.empty()) {
      started = false;
      bool held_by_memory = false;
      for (std::size_t n = turn.size(); n > 0; --n) {
        std::string name = std::move(turn.front());
        turn.pop_front();
        Principal& principal = principals[name];
        while (!principal.queue.empty() && principal.queue.front().call.cancel->cancelled()) {
          Job job = std::move(principal.queue.front());
          principal.queue.pop_front();
          job.expiry->cancel();
          job.done(cancelled());
        }
        if (principal.queue.empty()) {
          principal.in_turn = false;
          forget_if_unused(name);
          continue;
        }
        turn.push_back(name);
        if (principal.running >= options.principal_calls) {
          principal.held_for_memory = false;
          continue;
        }
        principal.held_for_memory = !memory_allows(name);
        if (principal.held_for_memory) {
          held_by_memory = true;
          continue;
        }
        Proc* target = room_for(name);
        if (target == nullptr) continue;
        Job job = std::move(principal.queue.front());
        principal.queue.pop_front();
        job.expiry->cancel();
        run(*target, principal, std::move(job));
        started = true;
      }
      // Nothing could start for memory: an idle process over its principal's share gives it
      // back, and the round is tried again.
      if (!started && held_by_memory && retire_for_memory()) started = true;
    }
    ensure_processes();
    if (drained && nothing_left()) std::exchange(drained, nullptr)();
  }

  bool nothing_left() const {
    for (const auto& [name, principal] : principals) {
      if (!principal.queue.empty() || principal.running > 0) return false;
    }
    return true;
  }

  void forget_if_unused(const std::string& name) {
    auto it = principals.find(name);
    if (it == principals.end() || it->second.running > 0 || !it->second.queue.empty() ||
        it->second.in_turn) {
      return;
    }
    for (const auto& proc : procs) {
      if (!proc->spare && proc->owner == name) return;  // its processes still remember it
    }
    principals.erase(it);
  }

  bool takes_calls(const Proc& proc) const {
    return !proc.draining && proc.process->usable() &&
           proc.process->running() < options.process_calls &&
           proc.process->calls() < options.lifetime_calls;
  }

  // A process of `name` with room (the busiest such, so the others can go idle and retire), else
  // a spare that becomes `name`'s.
  Proc* room_for(const std::string& name) {
    Proc* best = nullptr;
    for (const auto& proc : procs) {
      if (proc->spare || proc->owner != name || !takes_calls(*proc)) continue;
      if (best == nullptr || proc->process->running() > best->process->running()) best = proc.get();
    }
    if (best != nullptr) return best;
    for (const auto& proc : procs) {
      if (proc->spare && takes_calls(*proc)) {
        proc->spare = false;
        proc->owner = name;
        spdlog::debug("sandbox: process {} now serves {}", proc->process->pid(),
                      name.empty() ? "the default principal" : "principal " + name);
        return proc.get();
      }
    }
    return nullptr;
  }

  void run(Proc& proc, Principal& principal, Job job) {
    ++principal.running;
    channel::Fetcher fetch;
    std::shared_ptr<RequestLedger> ledger;
    if (job.call.tool == channel::Tool::execute && options.fetch) {
      ledger = std::make_shared<RequestLedger>();
      fetch = record_requests(options.fetch(options.limits, job.call.scope), ledger);
    }
    const std::uint64_t queued_us = microseconds_since(job.queued_at);
    std::shared_ptr<SandboxProcess> process = proc.process;
    running_tokens.emplace(job.seq, job.call.cancel);
    process->run(job.call, options.limits, std::move(fetch),
                 [self = shared_from_this(), process, pid = process->pid(),
                  name = job.call.principal, seq = job.seq, queued_us, ledger = std::move(ledger),
                  done = std::move(job.done)](channel::Outcome outcome) mutable {
                   if (ledger) ledger->move_into(outcome);
                   self->running_tokens.erase(seq);
                   if (auto it = self->principals.find(name); it != self->principals.end()) {
                     --it->second.running;
                   }
                   if (!process->usable()) {
                     spdlog::warn("sandbox: process {} ended after a call: {}: {}", pid,
                                  to_string(outcome.error_kind), outcome.error_message);
                   }
                   outcome.queued_us = queued_us;
                   done(std::move(outcome));
                   if (self->closed) return;
                   self->after_call(*process);
                   self->forget_if_unused(name);
                   self->dispatch();
                 });
  }

  // A call of `process` ended: it retires now if it is done for, else it may idle.
  void after_call(const SandboxProcess& process) {
    auto it = std::find_if(procs.begin(), procs.end(),
                           [&](const auto& proc) { return proc->process.get() == &process; });
    if (it == procs.end()) return;
    Proc& proc = **it;
    if (proc.process->running() > 0) return;
    proc.idle_since = Clock::now();
    if (!proc.process->usable()) {
      retire(it, "failed");
    } else if (proc.draining) {
      retire(it, "room");
    } else if (proc.process->calls() >= options.lifetime_calls) {
      retire(it, "lifetime");
    }
  }

  void retire(std::vector<std::shared_ptr<Proc>>::iterator it, const char* why) {
    ++retired[why];
    std::shared_ptr<Proc> proc = std::move(*it);
    procs.erase(it);
    reap(proc->process->release());
  }

  // Principals that have calls to start and no process with room for them.
  unsigned principals_without_room() {
    unsigned count = 0;
    for (const auto& name : turn) {
      const Principal& principal = principals[name];
      if (principal.queue.empty() || principal.running >= options.principal_calls) continue;
      bool room = false;
      for (const auto& proc : procs) {
        if (!proc->spare && proc->owner == name && takes_calls(*proc)) room = true;
      }
      if (!room) ++count;
    }
    return count;
  }

  // Spares wanted: the configured number, plus one for each principal without room. At the
  // bound, an idle process of another principal retires to make room, or, when none is idle, a
  // process of the principal with the most stops taking calls.
  void ensure_processes() {
    if (closed) return;
    const unsigned waiting = principals_without_room();
    unsigned spares = 0;
    for (const auto& proc : procs) {
      if (proc->spare) ++spares;
    }
    const unsigned wanted = options.spare_processes + waiting;
    while (spares + starting < wanted) {
      if (procs.size() + starting >= options.max_processes && !make_room()) break;
      ++starting;
      if (launcher == nullptr) return;
      launcher->start([self = shared_from_this(), asked = Clock::now()] {
        auto started = SandboxProcess::start(self->options.process, self->executor);
        boost::asio::post(self->executor, [self, asked, started = std::move(started)]() mutable {
          self->adopt(std::move(started), asked);
        });
      });
    }
    arm_sweep();
  }

  // Retires one process for a principal without room; false when none can go now.
  bool make_room() {
    auto idle = std::min_element(procs.begin(), procs.end(), [](const auto& a, const auto& b) {
      const bool a_idle = a->process->running() == 0, b_idle = b->process->running() == 0;
      if (a_idle != b_idle) return a_idle;
      return a->idle_since < b->idle_since;
    });
    if (idle != procs.end() && (*idle)->process->running() == 0) {
      spdlog::debug("sandbox: process {} retires to make room for another principal",
                    (*idle)->process->pid());
      retire(idle, "room");
      return true;
    }
    // None idle: the principal with the most processes gives one up when its calls end (once).
    std::map<std::string, unsigned> owned;
    for (const auto& proc : procs) {
      if (!proc->spare && !proc->draining) ++owned[proc->owner];
    }
    auto most = std::max_element(owned.begin(), owned.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    if (most == owned.end() || most->second < 2) return false;
    for (const auto& proc : procs) {
      if (!proc->spare && !proc->draining && proc->owner == most->first) {
        proc->draining = true;
        break;
      }
    }
    return false;
  }

  void adopt(std::variant<std::shared_ptr<SandboxProcess>, std::string> started,
             Clock::time_point asked) {
    --starting;
    if (auto* error = std::get_if<std::string>(&started)) {
      spdlog::error("sandbox: a sandbox process could not start: {}", *error);
      if (procs.empty() && starting == 0) {
        // Nothing can serve what waits; a later call tries again.
        answer_queued(channel::Outcome::failure(
            channel::ErrorKind::runtime,
            "the sandbox process could not start (the server log says why)"));
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
    spdlog::debug("sandbox: process {} ready {:.0f} ms after it was asked for", process->pid(),
                  std::chrono::duration<double, std::milli>(Clock::now() - asked).count());
    process->watch();
    ++started_total;
    auto proc = std::make_shared<Proc>();
    proc->process = std::move(process);
    procs.push_back(std::move(proc));
    dispatch();
  }

  // Idle owned processes retire after idle_retire; so do spares beyond the configured number.
  void arm_sweep() {
    if (sweeping || closed) return;
    sweeping = true;
    sweep_timer.expires_after(kSweepEvery);
    sweep_timer.async_wait([weak = weak_from_this()](boost::system::error_code error) {
      auto self = weak.lock();
      if (error || !self) return;
      self->sweeping = false;
      self->sweep();
    });
  }

  void sweep() {
    if (closed) return;
    const auto now = Clock::now();
    unsigned spares = 0;
    for (std::size_t i = 0; i < procs.size();) {
      const Proc& proc = *procs[i];
      const bool idle = proc.process->running() == 0;
      if (idle && !proc.process->usable()) {
        retire(procs.begin() + static_cast<std::ptrdiff_t>(i), "failed");
        continue;
      }
      if (proc.spare && ++spares <= options.spare_processes) {
        ++i;
        continue;
      }
      if (idle && now - proc.idle_since >= options.idle_retire) {
        spdlog::debug("sandbox: process {} retires after {} ms idle", proc.process->pid(),
                      options.idle_retire.count());
        retire(procs.begin() + static_cast<std::ptrdiff_t>(i), "idle");
        continue;
      }
      ++i;
    }
    for (auto it = principals.begin(); it != principals.end();) {
      const std::string name = (it++)->first;
      forget_if_unused(name);
    }
    dispatch();
  }

  // Reads the processes' resident memory again when the last reading is older than
  // kMemorySampleEvery.
  void sample_memory() {
    const auto now = Clock::now();
    if (now - memory_sampled < kMemorySampleEvery) return;
    memory_sampled = now;
    for (const auto& proc : procs) proc->resident = resident_bytes(proc->process->pid());
  }

  // What the processes hold, in all and of `name`'s (spares are nobody's), and its fair share of
  // memory_bytes: an equal part for each principal with a process or a call.
  struct MemoryUse {
    std::uint64_t total = 0;
    std::uint64_t own = 0;
    std::uint64_t share = 0;
  };
  MemoryUse memory_use(const std::string& name) const {
    MemoryUse use;
    for (const auto& proc : procs) {
      use.total += proc->resident;
      if (!proc->spare && proc->owner == name) use.own += proc->resident;
    }
    // `principals` holds exactly those with a process, a queued or a running call
    // (forget_if_unused).
    use.share = options.memory_bytes / std::max<std::size_t>(principals.size(), 1);
    return use;
  }

  // Whether a call of `name` may start, as far as memory goes. Under the bound anyone may; over
  // it, a principal within its share still may (another's memory never holds it up), and one
  // over its share waits for its own calls to give memory back. When nothing runs at all,
  // nothing would ever give memory back: the call starts.
  bool memory_allows(const std::string& name) {
    if (options.memory_bytes == 0) return true;
    sample_memory();
    const MemoryUse use = memory_use(name);
    if (use.total < options.memory_bytes || use.own <= use.share) return true;
    return running_tokens.empty();
  }

  // Over the bound, with calls held up for memory: idle processes of principals over their share
  // retire, the biggest first, until the pool is under the bound or none is left. A process of a
  // principal within its share is never the one to go. True when one retired.
  bool retire_for_memory() {
    if (options.memory_bytes == 0) return false;
    bool retired_one = false;
    for (;;) {
      std::uint64_t total = 0;
      for (const auto& proc : procs) total += proc->resident;
      if (total < options.memory_bytes) break;
      auto victim = procs.end();
      for (auto it = procs.begin(); it != procs.end(); ++it) {
        const Proc& proc = **it;
        if (proc.spare || proc.process->running() > 0) continue;
        const MemoryUse use = memory_use(proc.owner);
        if (use.own <= use.share) continue;
        if (victim == procs.end() || proc.resident > (*victim)->resident) victim = it;
      }
      if (victim == procs.end()) break;
      spdlog::debug(
          "sandbox: idle process {} retires: its principal holds more than its share of "
          "sandbox.memory_mb",
          (*victim)->process->pid());
      retire(victim, "room");
      retired_one = true;
    }
    return retired_one;
  }

  void reap(pid_t pid) {
    if (launcher != nullptr) {
      launcher->reap(pid);
    } else {
      kill_and_reap(pid);
    }
  }

  // Every queued call, of every principal, ends with `outcome` without having started.
  void answer_queued(const channel::Outcome& outcome) {
    for (auto& [name, principal] : principals) {
      for (auto& job : std::exchange(principal.queue, {})) {
        job.expiry->cancel();
        job.done(outcome);
      }
    }
  }

  void cancel_all() {
    answer_queued(cancelled());
    for (const auto& [seq, token] : running_tokens) token->cancel();
  }

  void stop_all(const std::string& message) {
    stopped = true;
    stop_message = message;
    answer_queued(channel::Outcome::failure(channel::ErrorKind::runtime,
                                            message + "; the call did not start"));
    for (const auto& proc : std::vector<std::shared_ptr<Proc>>(procs)) {
      proc->process->kill(channel::ErrorKind::runtime, message + "; the call was stopped");
    }
  }

  PoolStats stats() const {
    PoolStats out;
    for (const auto& [name, principal] : principals) {
      out.running += principal.running;
      out.queued += principal.queue.size();
    }
    out.processes = procs.size();
    out.starting = starting;
    out.started = started_total;
    out.retired = retired;
    return out;
  }

  void close() {
    closed = true;
    cancel_all();
    sweep_timer.cancel();
    for (const auto& proc : procs) proc->process->kill(channel::ErrorKind::runtime, "cancelled");
    for (const auto& proc : std::exchange(procs, {})) reap(proc->process->release());
    if (drained) std::exchange(drained, nullptr)();
  }

  const ProcessPoolOptions options;
  const boost::asio::any_io_executor executor;
  Launcher* launcher;  // null once the pool is gone (then reaps happen here, blocking)
  std::vector<std::shared_ptr<Proc>> procs;
  std::map<std::string, Principal> principals;
  std::deque<std::string> turn;  // principals with queued calls, whose turn is next first
  std::map<std::uint64_t, std::shared_ptr<channel::CancelToken>> running_tokens;
  std::uint64_t last_seq = 0;
  unsigned starting = 0;
  std::uint64_t started_total = 0;               // processes ever adopted
  std::map<std::string, std::uint64_t> retired;  // processes retired, by why
  boost::asio::steady_timer sweep_timer;
  bool sweeping = false;
  Clock::time_point memory_sampled;
  bool closed = false;
  bool stopped = false;
  std::string stop_message;
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
  boost::asio::post(
      state_->executor,
      [state = state_, job = State::Job{std::move(call), std::move(done), Clock::now(), 0,
                                        nullptr}]() mutable { state->submit(std::move(job)); });
}

void ProcessPool::stop_all(std::string message) {
  boost::asio::post(state_->executor,
                    [state = state_, message = std::move(message)] { state->stop_all(message); });
}

void ProcessPool::when_drained(std::function<void()> then) {
  state_->drained = std::move(then);
  state_->dispatch();
}

void ProcessPool::close() { state_->close(); }

PoolStats ProcessPool::stats() const { return state_->stats(); }

}  // namespace codemode::sandbox
