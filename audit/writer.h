// The audit writer: records go into a bounded queue on the caller's thread (a lock and a move,
// nothing else) and a thread of its own writes them to the Store in batches, so no write ever
// sits on a call's path.
//
// Each principal has a share of the queue (`principal_share`, a tenth of it by default): one
// principal whose code makes records faster than the store takes them fills its own share, never
// the others' room. When the store is down (a batch fails as StoreError::unavailable), the writer
// keeps that batch and retries it with a growing pause (up to 2 s) until the store takes it; the
// order of records is kept. What the server does meanwhile is the config's `on_failure`:
//   - fail_closed: admit() refuses a new call while the store is down, while the queue is full,
//     or while the caller's principal holds its whole share; records of calls already admitted
//     are queued even beyond the bounds (at most the calls in flight and their requests), so
//     none is lost, and a principal's records beyond its share never count against the others;
//   - drop: admit() always admits; a record that finds its principal's share or the queue full
//     is dropped and counted.
// A record the store refuses for what it holds (StoreError::input) never holds the trail up: the
// writer splits the batch until that record is alone, stores it with its text escaped
// (audit::escaped) and counts it; refused even so, it is dropped and counted. Text that is not
// UTF-8 is replaced (make_valid_utf8) before any store sees it, and counted.
// Every `trim_interval` (and once at start) the writer applies retention.
//
// Threading: record(), admit() and stats() from any thread; the Store is used only by the
// writer's thread. stop() (or the destructor) writes what is queued, for at most `grace`, and
// joins the thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "audit/record.h"
#include "audit/store.h"
#include "config/config.h"

namespace codemode::audit {

struct WriterOptions {
  std::string server;  // the chain's name
  std::size_t queue = 10000;
  // Records one principal may have waiting; 0: a tenth of `queue`, at least 1.
  std::size_t principal_share = 0;
  config::Audit::OnFailure on_failure = config::Audit::OnFailure::drop;
  Retention retention;
  std::chrono::milliseconds trim_interval{60000};
  std::size_t batch = 512;  // records per transaction, at most
  std::chrono::milliseconds first_retry{50};
  std::chrono::milliseconds last_retry{2000};
};

// Whether a new call may start (fail_closed), and if not, why.
enum class Admission {
  admitted,
  store_down,  // the last batch failed: the store is down
  queue_full,  // the queue holds `queue` records (each principal's counted up to its share)
  share_full,  // the caller's principal holds its whole share of the queue
};

class Writer {
 public:
  Writer(std::unique_ptr<Store> store, WriterOptions options);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Whether a new call of `principal` may start; always `admitted` with drop.
  Admission admit(std::string_view principal) const;

  // Queues a record; an empty id gets a fresh one, an empty code_sha256 is computed (on the
  // writer's thread). Never waits for the store.
  void record(Record record);

  struct Stats {
    std::uint64_t written = 0;  // records the store took (escaped ones included)
    // Records not stored: a full queue or share (drop), refused by the store even escaped, or
    // still queued when the writer stopped.
    std::uint64_t dropped = 0;
    std::uint64_t over_share = 0;  // of those dropped, because their principal's share was full
    std::uint64_t queued = 0;      // records waiting now, the batch in hand included
    std::uint64_t failures = 0;    // batches the store could not take (each retried)
    std::uint64_t replaced = 0;    // records whose text was not UTF-8 (stored with U+FFFD)
    std::uint64_t escaped = 0;     // records the store refused as input, stored escaped
    std::uint64_t refused = 0;     // records the store refused even escaped (dropped)
    std::uint64_t trimmed = 0;     // records retention deleted
    bool store_up = true;
    std::string last_error;  // the store's last failure; empty when none yet
  };
  Stats stats() const;

  // Waits until every record queued before the call is settled (written, or refused by the
  // store), or `timeout`; true if settled.
  bool flush(std::chrono::milliseconds timeout);

  // Writes what is queued for at most `grace`, then stops; records still queued are counted
  // as dropped (and logged). Idempotent.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  void run();
  // Appends entries so that a record the store refuses as input holds back no other (see the
  // class comment). Returns how many entries from the front are settled; fewer than all when the
  // store went down, and then `down` says why. Writer thread only.
  std::size_t settle(std::span<const Entry> entries, std::span<const Record> records,
                     std::optional<StoreError>& down);
  // One principal's record is settled or dropped from the queue. Under mutex_.
  void release(const std::string& principal);
  // Retention, between batches: trims the store and counts what went. Writer thread only.
  void trim();
  // What the writer does after looking at the queue.
  enum class Next { write, look_again, stop };
  // Unless `batch` still holds records the store did not take, waits for records (until
  // `trim_at`, when retention is on) and moves up to a batch of them into `batch`. stop: stop()
  // came and the queue is empty, or stop()'s grace is over. Writer thread only.
  Next take_batch(std::vector<Record>& batch,
                  std::optional<std::chrono::steady_clock::time_point> trim_at);
  // The store took what it was given (`down` empty) or is down: counted, and logged when that
  // changed. Under mutex_.
  void note_store_state(const std::optional<StoreError>& down);
  // Records still queued or in hand when the writer stops are lost: counted and logged. Writer
  // thread only, at its end.
  void drop_unwritten();

  const std::unique_ptr<Store> store_;
  const WriterOptions options_;
  const std::size_t share_;

  // What one principal has waiting.
  struct Waiting {
    std::size_t records = 0;
    bool told = false;  // its full share was logged (once until it has nothing waiting)
  };

  mutable std::mutex mutex_;
  std::condition_variable wake_;      // the writer: records came, or stop
  std::condition_variable progress_;  // flush(): a batch was settled
  std::deque<Record> queue_;
  std::vector<std::string> owners_;  // the principal of each record in hand (the batch)
  std::size_t in_hand_ = 0;          // records taken from the queue, not yet settled
  std::unordered_map<std::string, Waiting> waiting_;  // principals with records queued or in hand
  std::size_t counted_ = 0;     // records waiting, each principal's counted up to share_
  std::uint64_t accepted_ = 0;  // records queued since start (not dropped)
  std::uint64_t settled_ = 0;   // accepted records written, refused or lost at stop
  std::uint64_t written_ = 0;
  std::uint64_t dropped_ = 0;
  std::uint64_t over_share_ = 0;
  std::uint64_t failures_ = 0;
  std::uint64_t replaced_ = 0;
  std::uint64_t escaped_ = 0;
  std::uint64_t refused_ = 0;
  std::uint64_t trimmed_ = 0;
  std::string last_error_;
  bool store_up_ = true;
  bool down_logged_ = false;  // the store's being down was logged (until it takes records again)
  bool stopping_ = false;
  std::chrono::steady_clock::time_point stop_by_{};

  std::thread thread_;
};

}  // namespace codemode::audit
