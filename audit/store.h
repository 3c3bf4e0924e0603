// Where audit records are kept: the Store interface, its SQLite and PostgreSQL implementations,
// the hash chain, and `verify`.
//
// Records are kept in one table, one row each: its canonical JSON text, a few columns derived
// from it for queries (Summary), and its place in its server's hash chain: `seq` (1, 2, ...,
// no gaps), `prev_hash` (the hash of record seq-1, or of the chain's start) and `hash` =
// SHA-256(prev_hash "\n" server "\n" seq "\n" json). A second table holds each chain's head: where
// it starts (retention deletes from the front and moves the start) and its last seq and hash; a
// third records every removal by retention (which records, written when, removed when and why),
// so that the chain's start is anchored and `verify` can say what was rolled off. A batch is
// appended in one transaction that locks its chain's head, so two processes writing under one
// server name still make one unbroken chain. `verify` walks every chain to its end and reports
// every break: a row whose text or columns were edited, a missing row (gap, the tail cut off
// below the head, or the front gone with no removal recorded), a row whose prev_hash is not its
// predecessor's hash. Someone who can rewrite a whole chain's tail and its head can forge it;
// anchor the head hash `verify` prints somewhere else when that matters.
//
// Threading: a Store is used by one thread at a time (the Writer's, or the CLI's).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "audit/record.h"
#include "config/config.h"

namespace codemode::audit {

// A value or why there is none (one line, never a password).
template <typename T>
using Result = std::variant<T, std::string>;

// Why a store did not take a batch. Who caused it decides what the writer does with the batch.
struct StoreError {
  enum class Kind {
    // The store is down, unreachable, locked or out of space: the same batch may succeed later,
    // so the writer retries it (and on_failure applies meanwhile).
    unavailable,
    // The store refused what the batch holds (PostgreSQL's SQLSTATE classes 22, data exception,
    // and 54, program limit exceeded; SQLite's TOOBIG, MISMATCH and RANGE): the same text never
    // succeeds, so the writer finds the record and stores it escaped instead.
    input,
  };
  Kind kind = Kind::unavailable;
  std::string text;  // one line, never a password: "postgres: ERROR: ..."
};

// One record as the writer hands it to a store.
struct Entry {
  Summary summary;
  std::string json;  // canonical_json
};

struct StoredRecord {
  std::string server;
  std::uint64_t seq = 0;
  std::string json;
  std::string prev_hash;
  std::string hash;
  Summary summary;  // the columns as stored
};

struct ChainHead {
  std::string server;
  std::uint64_t first_seq = 1;  // the oldest record kept
  std::string first_prev_hash;  // what that record's prev_hash must be
  std::uint64_t last_seq = 0;   // 0: nothing appended yet
  std::string last_hash;        // the newest record's hash (first_prev_hash when none is kept)
};

// A prefix of a chain that retention removed, as the store recorded it in the same transaction.
struct Removal {
  std::string server;
  std::uint64_t first_seq = 1;
  std::uint64_t last_seq = 0;
  std::string last_hash;        // the hash of record last_seq: the next record's prev_hash
  std::int64_t oldest_us = 0;   // time_us of the oldest and the newest record removed (0:
  std::int64_t newest_us = 0;   // unknown, removed before removals were recorded)
  std::int64_t removed_us = 0;  // when
  // "max_age_days", "max_mb", "max_age_days,max_mb", or "unrecorded": removed by a version that
  // kept no record of removals (found when this store first recorded them).
  std::string reason;
};

struct Query {
  std::optional<std::int64_t> since_us;  // time_us >= since_us
  std::optional<std::int64_t> until_us;  // time_us < until_us
  std::optional<std::string> server;
  std::optional<std::string> kind;  // "call" or "request"
  std::optional<std::string> principal;
  std::optional<std::string> tool;
  std::optional<std::string> outcome;  // a call's "ok"/"timeout"/..., a request's "200"/"refused"
  std::optional<std::string> path_prefix;  // requests whose path starts with it
  std::size_t limit = 1000;
  enum class Order { oldest_first, newest_first };
  Order order = Order::oldest_first;
};

// Whether a stored record passes a query's filters (not its limit or order).
bool matches(const Query& query, const StoredRecord& record);

struct Retention {
  std::uint32_t max_age_days = 0;  // 0: no age bound
  std::uint64_t max_bytes = 0;     // 0: no size bound (SQLite only)
};

class Store {
 public:
  virtual ~Store() = default;

  // "SQLite /var/lib/audit.db" or "PostgreSQL db.internal:5432/audit": no password.
  virtual std::string describe() const = 0;

  // Appends `entries` to `server`'s chain in one transaction; an entry whose id is stored
  // already is skipped (a batch retried after a commit whose outcome was unknown). `stored_us`
  // is when, for retention by age. Reconnects first when the connection was lost.
  // The indexed columns are stored as column_text (valid UTF-8, no NUL) whatever the entry holds.
  virtual std::optional<StoreError> append(std::string_view server, std::span<const Entry> entries,
                                           std::int64_t stored_us) = 0;

  virtual Result<std::vector<StoredRecord>> query(const Query& query) = 0;

  // Records of one chain with seq > after, in seq order, at most `limit`.
  virtual Result<std::vector<StoredRecord>> chain(std::string_view server, std::uint64_t after,
                                                  std::size_t limit) = 0;

  virtual Result<std::vector<ChainHead>> heads() = 0;

  // What retention removed from `server`'s chain, oldest first.
  virtual Result<std::vector<Removal>> removals(std::string_view server) = 0;

  // Deletes the oldest records as `retention` says, always a prefix of each chain (whose head
  // then starts at the first record kept), and records each chain's removal (Removal), all in
  // one transaction. Returns how many were deleted.
  virtual Result<std::uint64_t> trim(const Retention& retention, std::int64_t now_us) = 0;
};

inline constexpr std::string_view kChainStart =
    "0000000000000000000000000000000000000000000000000000000000000000";

std::string chain_hash(std::string_view prev_hash, std::string_view server, std::uint64_t seq,
                       std::string_view json);

struct VerifyReport {
  std::vector<ChainHead> chains;
  std::vector<Removal> removals;  // what retention removed from those chains, chain by chain
  std::uint64_t records = 0;      // records checked
  // Every break found, in chain and seq order, one line each: "server web-1, record 17: ...",
  // the first kMaxListedBreaks of them; break_count counts them all.
  static constexpr std::size_t kMaxListedBreaks = 1000;
  std::vector<std::string> breaks;
  std::uint64_t break_count = 0;
  bool intact() const { return break_count == 0; }
};

// Walks every chain (or only `server`'s) in seq order to its end, past any break: an edit further
// on never hides behind one found first. A store error is reported as a break.
VerifyReport verify(Store& store, const std::optional<std::string>& server = std::nullopt);

enum class OpenMode {
  write,  // creates the file (SQLite) and the tables when missing
  read,   // the store must exist; nothing is created
};

std::variant<std::unique_ptr<Store>, std::string> open_sqlite(const std::filesystem::path& file,
                                                              OpenMode mode);
// `conninfo`: a libpq URI or key=value string. The password comes from PGPASSWORD or
// ~/.pgpass, as libpq reads them. Each statement must be answered within `answer_within`, or the
// connection is closed and the statement fails (a hung server is a store that is down).
inline constexpr std::chrono::milliseconds kPostgresAnswerWithin{10000};
std::variant<std::unique_ptr<Store>, std::string> open_postgres(
    const std::string& conninfo, OpenMode mode,
    std::chrono::milliseconds answer_within = kPostgresAnswerWithin);
std::variant<std::unique_ptr<Store>, std::string> open_store(const config::Audit& audit,
                                                             OpenMode mode);

}  // namespace codemode::audit
