// The audit writer: records go into a bounded queue on the caller's thread (a lock and a move,
// nothing else) and a thread of its own writes them to the Store in batches, so no write ever
// sits on a call's path.
//
// When the store is down (a batch fails), the writer keeps that batch and retries it with a
// growing pause (up to 2 s) until the store takes it; the order of records is kept. What the
// server does meanwhile is the config's `on_failure`:
//   - fail_closed: accepting() is false while the store is down or the queue is full, and the
//     server refuses new calls; records of calls already accepted are queued even beyond the
//     bound (at most the calls in flight and their requests), so none is lost;
//   - drop: accepting() stays true; a record that finds the queue full is dropped and counted.
// Every `trim_interval` (and once at start) the writer applies retention.
//
// Threading: record(), accepting() and stats() from any thread; the Store is used only by the
// writer's thread. stop() (or the destructor) writes what is queued, for at most `grace`, and
// joins the thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "audit/record.h"
#include "audit/store.h"
#include "config/config.h"

namespace codemode::audit {

struct WriterOptions {
  std::string server;  // the chain's name
  std::size_t queue = 10000;
  config::Audit::OnFailure on_failure = config::Audit::OnFailure::drop;
  Retention retention;
  std::chrono::milliseconds trim_interval{60000};
  std::size_t batch = 512;  // records per transaction, at most
  std::chrono::milliseconds first_retry{50};
  std::chrono::milliseconds last_retry{2000};
};

class Writer {
 public:
  Writer(std::unique_ptr<Store> store, WriterOptions options);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Whether a new call may start (fail_closed); always true with drop. A relaxed read.
  bool accepting() const;

  // Queues a record; an empty id gets a fresh one, an empty code_sha256 is computed (on the
  // writer's thread). Never waits for the store.
  void record(Record record);

  struct Stats {
    std::uint64_t written = 0;   // records the store took
    std::uint64_t dropped = 0;   // records dropped (drop mode, queue full)
    std::uint64_t queued = 0;    // records waiting now, the batch in hand included
    std::uint64_t failures = 0;  // batches the store refused (each retried)
    std::uint64_t trimmed = 0;   // records retention deleted
    bool store_up = true;
    std::string last_error;  // the store's last failure; empty when none yet
  };
  Stats stats() const;

  // Waits until every record queued before the call is written, or `timeout`; true if written.
  bool flush(std::chrono::milliseconds timeout);

  // Writes what is queued for at most `grace`, then stops; records still queued are counted
  // as dropped (and logged). Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  void run();

  const std::unique_ptr<Store> store_;
  const WriterOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;      // the writer: records came, or stop
  std::condition_variable progress_;  // flush(): a batch was written
  std::deque<Record> queue_;
  std::size_t in_hand_ = 0;     // records taken from the queue, not yet written
  std::uint64_t accepted_ = 0;  // records queued since start (not dropped)
  std::uint64_t written_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t lost_at_stop_ = 0;  // accepted records the writer stopped without writing
  std::uint64_t failures_ = 0;
  std::uint64_t trimmed_ = 0;
  std::string last_error_;
  bool stopping_ = false;
  std::chrono::steady_clock::time_point stop_by_{};

  std::atomic<bool> store_up_{true};
  std::atomic<std::size_t> pending_{0};  // queue_.size() + in_hand_

  std::thread thread_;
};

}  // namespace codemode::audit
