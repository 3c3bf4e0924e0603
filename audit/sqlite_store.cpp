// The embedded store: one SQLite file in WAL mode (readers such as `codemode-mcp audit tail`
// never block the writer), synchronous=FULL so a committed batch survives a power cut, and
// incremental auto-vacuum so that retention by size gives the space back to the file system.
#include <sqlite3.h>

#include <map>
#include <utility>

#include "audit/sql.h"
#include "audit/store.h"

namespace codemode::audit {

namespace {

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS audit_records (
  row INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  server TEXT NOT NULL,
  seq INTEGER NOT NULL,
  time_us INTEGER NOT NULL,
  stored_us INTEGER NOT NULL,
  kind TEXT NOT NULL,
  principal TEXT NOT NULL,
  tool TEXT NOT NULL,
  outcome TEXT NOT NULL,
  path TEXT NOT NULL,
  json TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL,
  UNIQUE (server, seq));
CREATE INDEX IF NOT EXISTS audit_records_time ON audit_records (time_us);
CREATE INDEX IF NOT EXISTS audit_records_principal ON audit_records (principal, time_us);
CREATE INDEX IF NOT EXISTS audit_records_stored ON audit_records (server, stored_us);
CREATE TABLE IF NOT EXISTS audit_chains (
  server TEXT PRIMARY KEY,
  first_seq INTEGER NOT NULL,
  first_prev_hash TEXT NOT NULL,
  last_seq INTEGER NOT NULL,
  last_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit_removals (
  server TEXT NOT NULL,
  first_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  last_hash TEXT NOT NULL,
  oldest_us INTEGER NOT NULL,
  newest_us INTEGER NOT NULL,
  removed_us INTEGER NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (server, first_seq));
)";

// Chains trimmed before removals were recorded: their front, anchored as one removal whose
// reason says so (run once, when the table above is created in a store that has chains).
constexpr const char* kAnchorUnrecorded =
    "INSERT OR IGNORE INTO audit_removals (server, first_seq, last_seq, last_hash, oldest_us, "
    "newest_us, removed_us, reason) SELECT server, 1, first_seq - 1, first_prev_hash, 0, 0, ?1, "
    "'unrecorded' FROM audit_chains WHERE first_seq > 1";

using detail::columns;
using detail::kColumns;

// A prepared statement, finalised when it goes.
class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql) {
    status_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return status_ == SQLITE_OK; }
  void bind(int index, std::string_view text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int index, std::int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  // SQLITE_ROW, SQLITE_DONE or an error.
  int step() { return sqlite3_step(stmt_); }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return p ? std::string(p, sqlite3_column_bytes(stmt_, column)) : std::string();
  }
  std::int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int status_ = SQLITE_ERROR;
};

StoredRecord read_row(const Statement& s) {
  StoredRecord r;
  r.server = s.text(0);
  r.seq = static_cast<std::uint64_t>(s.integer(1));
  r.json = s.text(2);
  r.prev_hash = s.text(3);
  r.hash = s.text(4);
  r.summary =
      Summary{s.text(5), s.integer(6), s.text(7), s.text(8), s.text(9), s.text(10), s.text(11)};
  return r;
}

class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite3* db, std::filesystem::path file) : db_(db), file_(std::move(file)) {}
  ~SqliteStore() override { sqlite3_close_v2(db_); }

  std::string describe() const override { return "SQLite " + file_.string(); }

  std::optional<StoreError> append(std::string_view server, std::span<const Entry> entries,
                                   std::int64_t stored_us) override {
    if (auto error = exec("BEGIN IMMEDIATE"))
      return StoreError{StoreError::Kind::unavailable, *error};
    auto result = append_in_transaction(server, entries, stored_us);
    if (result) {
      exec("ROLLBACK");
      return result;
    }
    if (auto error = exec("COMMIT")) return StoreError{StoreError::Kind::unavailable, *error};
    return std::nullopt;
  }

  Result<std::vector<StoredRecord>> query(const Query& query) override {
    const detail::SqlQuery q = detail::query_sql(query, detail::Dialect::sqlite);
    Statement s(db_, q.sql);
    if (!s.ok()) return error_text("query");
    for (std::size_t i = 0; i < q.params.size(); ++i) {
      std::visit([&](const auto& v) { s.bind(static_cast<int>(i + 1), v); }, q.params[i]);
    }
    return rows(s);
  }

  Result<std::vector<StoredRecord>> chain(std::string_view server, std::uint64_t after,
                                          std::size_t limit) override {
    Statement s(db_,
                std::string("SELECT ") + kColumns +
                    " FROM audit_records WHERE server = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3");
    if (!s.ok()) return error_text("chain");
    s.bind(1, server);
    s.bind(2, static_cast<std::int64_t>(after));
    s.bind(3, static_cast<std::int64_t>(limit));
    return rows(s);
  }

  Result<std::vector<ChainHead>> heads() override {
    Statement s(db_,
                "SELECT server, first_seq, first_prev_hash, last_seq, last_hash FROM audit_chains "
                "ORDER BY server");
    if (!s.ok()) return error_text("heads");
    std::vector<ChainHead> heads;
    int status;
    while ((status = s.step()) == SQLITE_ROW) {
      heads.push_back(ChainHead{s.text(0), static_cast<std::uint64_t>(s.integer(1)), s.text(2),
                                static_cast<std::uint64_t>(s.integer(3)), s.text(4)});
    }
    if (status != SQLITE_DONE) return error_text("heads");
    return heads;
  }

  Result<std::vector<Removal>> removals(std::string_view server) override {
    auto present = has_removals_table();
    if (auto* e = std::get_if<std::string>(&present)) return *e;
    if (!std::get<bool>(present)) return unrecorded_removals(server);
    Statement s(db_,
                "SELECT server, first_seq, last_seq, last_hash, oldest_us, newest_us, removed_us, "
                "reason FROM audit_removals WHERE server = ?1 ORDER BY first_seq");
    if (!s.ok()) return error_text("removals");
    s.bind(1, server);
    std::vector<Removal> out;
    int status;
    while ((status = s.step()) == SQLITE_ROW) {
      out.push_back(Removal{s.text(0), static_cast<std::uint64_t>(s.integer(1)),
                            static_cast<std::uint64_t>(s.integer(2)), s.text(3), s.integer(4),
                            s.integer(5), s.integer(6), s.text(7)});
    }
    if (status != SQLITE_DONE) return error_text("removals");
    return out;
  }

  Result<std::uint64_t> trim(const Retention& retention, std::int64_t now_us) override {
    if (retention.max_age_days == 0 && retention.max_bytes == 0) return std::uint64_t{0};
    if (auto e = exec("BEGIN IMMEDIATE")) return *e;
    auto deleted = trim_in_transaction(retention, now_us);
    if (auto* e = std::get_if<std::string>(&deleted)) {
      exec("ROLLBACK");
      return *e;
    }
    if (auto e = exec("COMMIT")) return *e;
    if (std::get<std::uint64_t>(deleted) > 0) exec("PRAGMA incremental_vacuum");
    return deleted;
  }

  // Opens the schema: in write mode, creates it.
  std::optional<std::string> prepare(OpenMode mode) {
    exec("PRAGMA busy_timeout = 5000");
    if (mode == OpenMode::read) return std::nullopt;
    // auto_vacuum only takes effect before the first table exists.
    if (auto e = exec("PRAGMA auto_vacuum = INCREMENTAL")) return e;
    {
      Statement wal(db_, "PRAGMA journal_mode = WAL");
      if (!wal.ok() || wal.step() != SQLITE_ROW || wal.text(0) != "wal") {
        return "cannot switch to WAL: " + std::string(sqlite3_errmsg(db_));
      }
    }  // finished: a statement still stepping would keep the transaction below from committing
    if (auto e = exec("PRAGMA synchronous = FULL")) return e;
    if (auto e = exec("BEGIN IMMEDIATE")) return e;
    auto e = create_schema();
    if (e) {
      exec("ROLLBACK");
      return e;
    }
    return exec("COMMIT");
  }

 private:
  std::optional<std::string> create_schema() {
    auto present = has_removals_table();
    if (auto* e = std::get_if<std::string>(&present)) return *e;
    if (auto e = exec(kSchema)) return e;
    if (std::get<bool>(present)) return std::nullopt;
    Statement anchor(db_, kAnchorUnrecorded);
    if (!anchor.ok()) return error_text("schema");
    anchor.bind(1, now_us());
    if (anchor.step() != SQLITE_DONE) return error_text("schema");
    return std::nullopt;
  }

  Result<bool> has_removals_table() {
    Statement s(db_,
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_removals'");
    if (!s.ok()) return error_text("schema");
    const int status = s.step();
    if (status != SQLITE_ROW && status != SQLITE_DONE) return error_text("schema");
    return status == SQLITE_ROW;
  }

  // A store written before removals were recorded, read as it is: each trimmed chain's front
  // as one unrecorded removal.
  Result<std::vector<Removal>> unrecorded_removals(std::string_view server) {
    auto chains = heads();
    if (auto* e = std::get_if<std::string>(&chains)) return *e;
    std::vector<Removal> out;
    for (const ChainHead& head : std::get<std::vector<ChainHead>>(chains)) {
      if (head.server != server || head.first_seq <= 1) continue;
      out.push_back(
          Removal{head.server, 1, head.first_seq - 1, head.first_prev_hash, 0, 0, 0, "unrecorded"});
    }
    return out;
  }

  // What one trim removes from a chain, gathered before each delete.
  struct Removed {
    std::uint64_t last_seq = 0;
    std::int64_t oldest_us = 0;
    std::int64_t newest_us = 0;
    std::string reason;
    void add(std::uint64_t seq, std::int64_t oldest, std::int64_t newest, std::string_view why) {
      oldest_us = last_seq == 0 ? oldest : std::min(oldest_us, oldest);
      newest_us = std::max(newest_us, newest);
      last_seq = std::max(last_seq, seq);
      if (reason.find(why) == std::string::npos) {
        reason += (reason.empty() ? "" : ",") + std::string(why);
      }
    }
  };

  Result<std::uint64_t> trim_in_transaction(const Retention& retention, std::int64_t now_us) {
    auto chains = heads();
    if (auto* e = std::get_if<std::string>(&chains)) return *e;
    std::map<std::string, Removed> removed;
    std::uint64_t deleted = 0;
    if (retention.max_age_days > 0) {
      const std::int64_t cutoff = now_us - std::int64_t{retention.max_age_days} * 86400 * 1000000;
      // Per chain, every record up to the newest one stored before the cutoff: a prefix. Each
      // step uses an index, so a trim costs the records it deletes, not the table's size.
      Statement newest(db_,
                       "SELECT seq FROM audit_records WHERE server = ?1 AND stored_us < ?2 "
                       "ORDER BY stored_us DESC LIMIT 1");
      Statement span(db_,
                     "SELECT MIN(time_us), MAX(time_us) FROM audit_records WHERE server = ?1 AND "
                     "seq <= ?2");
      Statement prefix(db_, "DELETE FROM audit_records WHERE server = ?1 AND seq <= ?2");
      if (!newest.ok() || !span.ok() || !prefix.ok()) return error_text("trim");
      for (const ChainHead& head : std::get<std::vector<ChainHead>>(chains)) {
        newest.bind(1, head.server);
        newest.bind(2, cutoff);
        const int status = newest.step();
        const std::int64_t last_old = status == SQLITE_ROW ? newest.integer(0) : 0;
        newest.reset();
        if (status != SQLITE_ROW && status != SQLITE_DONE) return error_text("trim");
        if (last_old == 0) continue;
        span.bind(1, head.server);
        span.bind(2, last_old);
        if (span.step() != SQLITE_ROW) return error_text("trim");
        removed[head.server].add(static_cast<std::uint64_t>(last_old), span.integer(0),
                                 span.integer(1), "max_age_days");
        span.reset();
        prefix.bind(1, head.server);
        prefix.bind(2, last_old);
        if (prefix.step() != SQLITE_DONE) return error_text("trim");
        prefix.reset();
        deleted += static_cast<std::uint64_t>(sqlite3_changes64(db_));
      }
    }
    if (retention.max_bytes > 0) {
      while (true) {
        auto used = used_bytes();
        if (auto* e = std::get_if<std::string>(&used)) return *e;
        if (std::get<std::uint64_t>(used) <= retention.max_bytes) break;
        // The oldest tenth by insertion order (row), at least 100: a prefix of every chain.
        Statement bound(db_,
                        "SELECT (SELECT MIN(row) FROM audit_records) + MAX(100, (SELECT COUNT(*) "
                        "FROM audit_records) / 10)");
        if (!bound.ok() || bound.step() != SQLITE_ROW) return error_text("trim");
        const std::int64_t last_row = bound.integer(0);
        Statement span(db_,
                       "SELECT server, MAX(seq), MIN(time_us), MAX(time_us) FROM audit_records "
                       "WHERE row <= ?1 GROUP BY server");
        if (!span.ok()) return error_text("trim");
        span.bind(1, last_row);
        int status;
        while ((status = span.step()) == SQLITE_ROW) {
          removed[span.text(0)].add(static_cast<std::uint64_t>(span.integer(1)), span.integer(2),
                                    span.integer(3), "max_mb");
        }
        if (status != SQLITE_DONE) return error_text("trim");
        Statement remove(db_, "DELETE FROM audit_records WHERE row <= ?1");
        if (!remove.ok()) return error_text("trim");
        remove.bind(1, last_row);
        if (remove.step() != SQLITE_DONE) return error_text("trim");
        const auto n = static_cast<std::uint64_t>(sqlite3_changes64(db_));
        if (n == 0) break;
        deleted += n;
      }
    }
    if (deleted == 0) return deleted;
    if (auto e = exec(
            "UPDATE audit_chains SET "
            "first_seq = COALESCE((SELECT MIN(seq) FROM audit_records r WHERE r.server = "
            "audit_chains.server), last_seq + 1), "
            "first_prev_hash = COALESCE((SELECT prev_hash FROM audit_records r WHERE r.server = "
            "audit_chains.server ORDER BY seq LIMIT 1), last_hash)")) {
      return *e;
    }
    // Each chain's removal, anchored by the hash its first kept record names.
    Statement record(db_,
                     "INSERT INTO audit_removals (server, first_seq, last_seq, last_hash, "
                     "oldest_us, newest_us, removed_us, reason) SELECT ?1, ?2, ?3, "
                     "first_prev_hash, ?4, ?5, ?6, ?7 FROM audit_chains WHERE server = ?1");
    if (!record.ok()) return error_text("trim");
    for (const ChainHead& head : std::get<std::vector<ChainHead>>(chains)) {
      const auto it = removed.find(head.server);
      if (it == removed.end() || it->second.last_seq < head.first_seq) continue;
      record.bind(1, head.server);
      record.bind(2, static_cast<std::int64_t>(head.first_seq));
      record.bind(3, static_cast<std::int64_t>(it->second.last_seq));
      record.bind(4, it->second.oldest_us);
      record.bind(5, it->second.newest_us);
      record.bind(6, now_us);
      record.bind(7, it->second.reason);
      if (record.step() != SQLITE_DONE) return error_text("trim");
      record.reset();
    }
    return deleted;
  }

  std::optional<StoreError> append_in_transaction(std::string_view server,
                                                  std::span<const Entry> entries,
                                                  std::int64_t stored_us) {
    Statement head(db_, "SELECT last_seq, last_hash FROM audit_chains WHERE server = ?1");
    if (!head.ok()) return append_error();
    head.bind(1, server);
    std::uint64_t seq = 0;
    std::string prev(kChainStart);
    int status = head.step();
    if (status == SQLITE_ROW) {
      seq = static_cast<std::uint64_t>(head.integer(0));
      prev = head.text(1);
    } else if (status == SQLITE_DONE) {
      Statement create(db_,
                       "INSERT INTO audit_chains (server, first_seq, first_prev_hash, last_seq, "
                       "last_hash) VALUES (?1, 1, ?2, 0, ?2)");
      create.bind(1, server);
      create.bind(2, kChainStart);
      if (create.step() != SQLITE_DONE) return append_error();
    } else {
      return append_error();
    }
    Statement exists(db_, "SELECT 1 FROM audit_records WHERE id = ?1");
    Statement insert(db_,
                     "INSERT INTO audit_records (id, server, seq, time_us, stored_us, kind, "
                     "principal, tool, outcome, path, json, prev_hash, hash) VALUES "
                     "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)");
    if (!exists.ok() || !insert.ok()) return append_error();
    for (const Entry& entry : entries) {
      exists.bind(1, entry.summary.id);
      status = exists.step();
      exists.reset();
      if (status == SQLITE_ROW) continue;
      if (status != SQLITE_DONE) return append_error();
      ++seq;
      std::string hash = chain_hash(prev, server, seq, entry.json);
      const Summary s = columns(entry.summary);
      insert.bind(1, s.id);
      insert.bind(2, server);
      insert.bind(3, static_cast<std::int64_t>(seq));
      insert.bind(4, s.time_us);
      insert.bind(5, stored_us);
      insert.bind(6, s.kind);
      insert.bind(7, s.principal);
      insert.bind(8, s.tool);
      insert.bind(9, s.outcome);
      insert.bind(10, s.path);
      insert.bind(11, entry.json);
      insert.bind(12, prev);
      insert.bind(13, hash);
      status = insert.step();
      insert.reset();
      if (status != SQLITE_DONE) return append_error();
      prev = std::move(hash);
    }
    Statement update(db_,
                     "UPDATE audit_chains SET last_seq = ?1, last_hash = ?2 WHERE server = ?3");
    update.bind(1, static_cast<std::int64_t>(seq));
    update.bind(2, prev);
    update.bind(3, server);
    if (!update.ok() || update.step() != SQLITE_DONE) return append_error();
    return std::nullopt;
  }

  Result<std::vector<StoredRecord>> rows(Statement& s) {
    std::vector<StoredRecord> out;
    int status;
    while ((status = s.step()) == SQLITE_ROW) out.push_back(read_row(s));
    if (status != SQLITE_DONE) return error_text("read");
    return out;
  }

  Result<std::uint64_t> used_bytes() {
    Statement s(db_,
                "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count "
                "FROM pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())");
    if (!s.ok() || s.step() != SQLITE_ROW) return error_text("size");
    return static_cast<std::uint64_t>(s.integer(0) * s.integer(1));
  }

  std::optional<std::string> exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK)
      return std::nullopt;
    std::string text = message ? message : sqlite3_errmsg(db_);
    sqlite3_free(message);
    return "sqlite: " + text;
  }

  // The failure of the statement just run, classified by SQLite's result code.
  StoreError append_error() const {
    const int code = sqlite3_errcode(db_) & 0xff;
    const bool input = code == SQLITE_TOOBIG || code == SQLITE_MISMATCH || code == SQLITE_RANGE;
    return StoreError{input ? StoreError::Kind::input : StoreError::Kind::unavailable,
                      error_text("append")};
  }

  std::string error_text(std::string_view what) const {
    return "sqlite: " + std::string(what) + ": " + sqlite3_errmsg(db_);
  }

  sqlite3* db_;
  std::filesystem::path file_;
};

}  // namespace

std::variant<std::unique_ptr<Store>, std::string> open_sqlite(const std::filesystem::path& file,
                                                              OpenMode mode) {
  sqlite3* db = nullptr;
  const int flags =
      mode == OpenMode::write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY;
  const int status = sqlite3_open_v2(file.c_str(), &db, flags | SQLITE_OPEN_NOMUTEX, nullptr);
  if (status != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(status);
    sqlite3_close_v2(db);
    return "cannot open " + file.string() + ": " + why;
  }
  auto store = std::make_unique<SqliteStore>(db, file);
  if (auto problem = store->prepare(mode)) return file.string() + ": " + *problem;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace codemode::audit
