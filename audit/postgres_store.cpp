// The fleet store: PostgreSQL through libpq. Every statement runs with parameters (never spliced
// into SQL), text sent with its length in binary format, so a NUL cannot cut it short and the
// server checks the encoding of every byte; a batch is one transaction that locks its chain's head
// row (SELECT ... FOR UPDATE), so servers writing at once each keep an unbroken chain. A lost
// connection is re-established before the next append; the password is libpq's business
// (PGPASSWORD,
// ~/.pgpass) and never passes through this code.
//
// Every statement has a deadline (libpq's own calls have none once connected): the connection is
// non-blocking and each exchange waits on its socket with poll(). A server that accepts and
// then never answers (stopped, partitioned, stuck on a lock another hung client holds) costs the
// writer thread that long, then the connection is closed and the store is down like any other
// failure, so the writer's policy (fail_closed or drop) applies instead of a silent stall.
#include <libpq-fe.h>
#include <poll.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <map>
#include <memory>
#include <utility>

#include "audit/sql.h"
#include "audit/store.h"

namespace codemode::audit {

namespace {

using detail::kColumns;

constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS audit_records (
  row BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  server TEXT NOT NULL,
  seq BIGINT NOT NULL,
  time_us BIGINT NOT NULL,
  stored_us BIGINT NOT NULL,
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
  first_seq BIGINT NOT NULL,
  first_prev_hash TEXT NOT NULL,
  last_seq BIGINT NOT NULL,
  last_hash TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS audit_removals (
  server TEXT NOT NULL,
  first_seq BIGINT NOT NULL,
  last_seq BIGINT NOT NULL,
  last_hash TEXT NOT NULL,
  oldest_us BIGINT NOT NULL,
  newest_us BIGINT NOT NULL,
  removed_us BIGINT NOT NULL,
  reason TEXT NOT NULL,
  PRIMARY KEY (server, first_seq));
)";

// Chains trimmed before removals were recorded: their front, anchored as one removal whose
// reason says so (run once, when the table above is created in a store that has chains).
constexpr const char* kAnchorUnrecorded =
    "INSERT INTO audit_removals (server, first_seq, last_seq, last_hash, oldest_us, newest_us, "
    "removed_us, reason) SELECT server, 1, first_seq - 1, first_prev_hash, 0, 0, $1::bigint, "
    "'unrecorded' FROM audit_chains WHERE first_seq > 1 ON CONFLICT DO NOTHING";

// PostgreSQL's type for text parameters (pg_type.oid of `text`).
constexpr Oid kTextOid = 25;

// Rows per INSERT statement (13 parameters each; PostgreSQL allows 65,535).
constexpr std::size_t kRowsPerInsert = 400;

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using PgResult = std::unique_ptr<PGresult, ResultDeleter>;

using Param = std::variant<std::string, std::int64_t>;

// libpq's messages end in a newline and may span lines: one line, single spaces.
std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) {
    const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The server's notices (a shutdown's "terminating connection") would go to stderr; the
// writer reports the failure that follows them instead.
void ignore_notice(void*, const char*) {}

class PostgresStore final : public Store {
 public:
  PostgresStore(std::string conninfo, std::chrono::milliseconds answer_within)
      : conninfo_(std::move(conninfo)), answer_within_(answer_within) {}
  ~PostgresStore() override {
    if (conn_) PQfinish(conn_);
  }

  std::string describe() const override { return "PostgreSQL " + where_; }

  std::optional<std::string> connect() {
    if (conn_ && PQstatus(conn_) == CONNECTION_OK) return std::nullopt;
    if (conn_) PQfinish(conn_);
    // Defaults first: with expand_dbname the string's own settings override them.
    const char* keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
    const char* values[] = {"5", "codemode-mcp", conninfo_.c_str(), nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (!conn_) return "postgres: out of memory";
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string why = one_line(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      return "postgres: cannot connect: " + why;
    }
    PQsetNoticeProcessor(conn_, ignore_notice, nullptr);
    if (PQsetnonblocking(conn_, 1) != 0) return "postgres: " + one_line(PQerrorMessage(conn_));
    const char* host = PQhost(conn_);
    where_ = std::string(host ? host : "") + ":" + PQport(conn_) + "/" + PQdb(conn_);
    return exec("SET client_min_messages = warning");
  }

  std::optional<std::string> prepare(OpenMode mode) {
    if (auto e = connect()) return e;
    if (mode == OpenMode::read) return std::nullopt;
    // Servers of a fleet starting together: one creates the tables, the others wait for it.
    if (auto e = exec("BEGIN")) return e;
    auto e = exec("SELECT pg_advisory_xact_lock(7305733104731853632)");
    std::optional<bool> had_removals;
    if (!e) {
      auto present = has_removals_table();
      if (auto* error = std::get_if<std::string>(&present)) e = *error;
      if (!e) had_removals = std::get<bool>(present);
    }
    if (!e) e = exec(kSchema);
    if (!e && had_removals == false) {
      auto anchored = run(kAnchorUnrecorded, {now_us()});
      if (auto* error = std::get_if<std::string>(&anchored)) e = *error;
    }
    if (e) {
      exec("ROLLBACK");
      return e;
    }
    return exec("COMMIT");
  }

  std::optional<StoreError> append(std::string_view server, std::span<const Entry> entries,
                                   std::int64_t stored_us) override {
    if (auto e = connect()) return StoreError{StoreError::Kind::unavailable, *e};
    if (auto e = exec("BEGIN")) return StoreError{StoreError::Kind::unavailable, *e};
    auto e = append_in_transaction(server, entries, stored_us);
    if (!e) e = exec("COMMIT");
    if (e) {
      // What the server said of the statement that failed, before ROLLBACK says something else.
      const StoreError::Kind kind =
          refused_input(error_state_) ? StoreError::Kind::input : StoreError::Kind::unavailable;
      if (PQstatus(conn_) == CONNECTION_OK) exec("ROLLBACK");
      return StoreError{kind, *e};
    }
    return std::nullopt;
  }

  Result<std::vector<StoredRecord>> query(const Query& query) override {
    if (auto e = connect()) return *e;
    const detail::SqlQuery q = detail::query_sql(query, detail::Dialect::postgres);
    auto r = run(q.sql, q.params);
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    return records(std::get<PgResult>(r).get());
  }

  Result<std::vector<StoredRecord>> chain(std::string_view server, std::uint64_t after,
                                          std::size_t limit) override {
    if (auto e = connect()) return *e;
    auto r = run(
        std::string("SELECT ") + kColumns +
            " FROM audit_records WHERE server = $1 AND seq > $2::bigint ORDER BY seq "
            "LIMIT $3::bigint",
        {std::string(server), static_cast<std::int64_t>(after), static_cast<std::int64_t>(limit)});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    return records(std::get<PgResult>(r).get());
  }

  Result<std::vector<ChainHead>> heads() override {
    if (auto e = connect()) return *e;
    auto r =
        run("SELECT server, first_seq, first_prev_hash, last_seq, last_hash FROM audit_chains "
            "ORDER BY server",
            {});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    PGresult* res = std::get<PgResult>(r).get();
    std::vector<ChainHead> heads;
    heads.reserve(static_cast<std::size_t>(PQntuples(res)));
    for (int i = 0; i < PQntuples(res); ++i) {
      heads.push_back(ChainHead{value(res, i, 0), std::stoull(PQgetvalue(res, i, 1)),
                                value(res, i, 2), std::stoull(PQgetvalue(res, i, 3)),
                                value(res, i, 4)});
    }
    return heads;
  }

  Result<std::vector<Removal>> removals(std::string_view server) override {
    if (auto e = connect()) return *e;
    auto present = has_removals_table();
    if (auto* e = std::get_if<std::string>(&present)) return *e;
    if (!std::get<bool>(present)) return unrecorded_removals(server);
    auto r = run(
        "SELECT server, first_seq, last_seq, last_hash, oldest_us, newest_us, removed_us, reason "
        "FROM audit_removals WHERE server = $1 ORDER BY first_seq",
        {std::string(server)});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    PGresult* res = std::get<PgResult>(r).get();
    std::vector<Removal> out;
    out.reserve(static_cast<std::size_t>(PQntuples(res)));
    for (int i = 0; i < PQntuples(res); ++i) {
      out.push_back(Removal{value(res, i, 0), std::stoull(PQgetvalue(res, i, 1)),
                            std::stoull(PQgetvalue(res, i, 2)), value(res, i, 3),
                            std::stoll(PQgetvalue(res, i, 4)), std::stoll(PQgetvalue(res, i, 5)),
                            std::stoll(PQgetvalue(res, i, 6)), value(res, i, 7)});
    }
    return out;
  }

  Result<std::uint64_t> trim(const Retention& retention, std::int64_t now_us) override {
    if (retention.max_age_days == 0) return std::uint64_t{0};
    if (auto e = connect()) return *e;
    const std::int64_t cutoff = now_us - std::int64_t{retention.max_age_days} * 86400 * 1000000;
    if (auto e = exec("BEGIN")) return *e;
    // Per chain, every record up to the newest one stored before the cutoff: a prefix. The
    // heads are locked first, as an append does, so no batch lands in between.
    auto r = run("SELECT server, first_seq FROM audit_chains ORDER BY server FOR UPDATE", {});
    std::uint64_t deleted = 0;
    std::vector<Removal> removed;  // per chain trimmed: its first_seq is the head's start before
    std::map<std::string, std::uint64_t> starts;
    if (auto* locked = std::get_if<PgResult>(&r)) {
      std::vector<std::string> servers;
      servers.reserve(static_cast<std::size_t>(PQntuples(locked->get())));
      for (int i = 0; i < PQntuples(locked->get()); ++i) {
        servers.push_back(value(locked->get(), i, 0));
        starts[servers.back()] = std::stoull(PQgetvalue(locked->get(), i, 1));
      }
      // Both steps use an index, so a trim costs the records it deletes, not the table's size.
      for (const std::string& server : servers) {
        r = run(
            "WITH gone AS (DELETE FROM audit_records WHERE server = $1 AND seq <= (SELECT seq FROM "
            "audit_records WHERE server = $1 AND stored_us < $2::bigint ORDER BY stored_us DESC "
            "LIMIT 1) RETURNING seq, time_us) SELECT count(*), MIN(seq), MAX(seq), "
            "MIN(time_us), MAX(time_us) FROM gone",
            {server, cutoff});
        auto* res = std::get_if<PgResult>(&r);
        if (!res) break;
        const std::uint64_t n = std::stoull(PQgetvalue(res->get(), 0, 0));
        if (n == 0) continue;
        deleted += n;
        removed.push_back(Removal{server, 0, std::stoull(PQgetvalue(res->get(), 0, 2)), "",
                                  std::stoll(PQgetvalue(res->get(), 0, 3)),
                                  std::stoll(PQgetvalue(res->get(), 0, 4)), now_us,
                                  "max_age_days"});
      }
    }
    if (std::holds_alternative<PgResult>(r)) {
      r =
          run("UPDATE audit_chains c SET "
              "first_seq = COALESCE((SELECT MIN(seq) FROM audit_records r WHERE r.server = "
              "c.server), c.last_seq + 1), "
              "first_prev_hash = COALESCE((SELECT prev_hash FROM audit_records r WHERE r.server = "
              "c.server ORDER BY seq LIMIT 1), c.last_hash)",
              {});
    }
    // Each chain's removal, anchored by the hash its first kept record names.
    for (const Removal& removal : removed) {
      if (!std::holds_alternative<PgResult>(r)) break;
      r =
          run("INSERT INTO audit_removals (server, first_seq, last_seq, last_hash, oldest_us, "
              "newest_us, removed_us, reason) SELECT $1, $2::bigint, $3::bigint, first_prev_hash, "
              "$4::bigint, $5::bigint, $6::bigint, $7 FROM audit_chains WHERE server = $1",
              {removal.server, static_cast<std::int64_t>(starts[removal.server]),
               static_cast<std::int64_t>(removal.last_seq), removal.oldest_us, removal.newest_us,
               removal.removed_us, removal.reason});
    }
    if (auto* e = std::get_if<std::string>(&r)) {
      std::string error = *e;
      exec("ROLLBACK");
      return error;
    }
    if (auto e = exec("COMMIT")) return *e;
    return deleted;
  }

 private:
  std::optional<std::string> append_in_transaction(std::string_view server,
                                                   std::span<const Entry> entries,
                                                   std::int64_t stored_us) {
    const std::string name(server);
    auto r =
        run("INSERT INTO audit_chains (server, first_seq, first_prev_hash, last_seq, last_hash) "
            "VALUES ($1, 1, $2, 0, $2) ON CONFLICT (server) DO NOTHING",
            {name, std::string(kChainStart)});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    r = run("SELECT last_seq, last_hash FROM audit_chains WHERE server = $1 FOR UPDATE", {name});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    PGresult* head = std::get<PgResult>(r).get();
    if (PQntuples(head) != 1) return std::string("postgres: the chain's head is missing");
    std::uint64_t seq = std::stoull(PQgetvalue(head, 0, 0));
    std::string prev = value(head, 0, 1);

    // Ids stored already: a batch retried after a commit whose outcome was unknown.
    std::string ids;
    for (const Entry& entry : entries) ids += (ids.empty() ? "" : ",") + entry.summary.id;
    r = run("SELECT id FROM audit_records WHERE id = ANY(string_to_array($1, ','))", {ids});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    std::vector<std::string> stored;
    PGresult* found = std::get<PgResult>(r).get();
    stored.reserve(static_cast<std::size_t>(PQntuples(found)));
    for (int i = 0; i < PQntuples(found); ++i) stored.push_back(value(found, i, 0));

    std::vector<Param> params;
    std::string sql;
    std::size_t rows = 0;
    auto flush = [&]() -> std::optional<std::string> {
      if (rows == 0) return std::nullopt;
      auto inserted = run(sql, params);
      params.clear();
      rows = 0;
      if (auto* e = std::get_if<std::string>(&inserted)) return *e;
      return std::nullopt;
    };
    for (const Entry& entry : entries) {
      if (std::find(stored.begin(), stored.end(), entry.summary.id) != stored.end()) continue;
      if (rows == 0) {
        sql =
            "INSERT INTO audit_records (id, server, seq, time_us, stored_us, kind, principal, "
            "tool, outcome, path, json, prev_hash, hash) VALUES ";
      } else {
        sql += ",";
      }
      ++seq;
      std::string hash = chain_hash(prev, server, seq, entry.json);
      const Summary s = detail::columns(entry.summary);
      sql += "(";
      for (int i = 1; i <= 13; ++i) {
        sql += (i > 1 ? "," : "") + std::string("$") + std::to_string(params.size() + i);
        if (i == 3 || i == 4 || i == 5) sql += "::bigint";
      }
      sql += ")";
      params.insert(params.end(),
                    {s.id, name, static_cast<std::int64_t>(seq), s.time_us, stored_us, s.kind,
                     s.principal, s.tool, s.outcome, s.path, entry.json, prev, hash});
      prev = std::move(hash);
      if (++rows == kRowsPerInsert) {
        if (auto e = flush()) return e;
      }
    }
    if (auto e = flush()) return e;
    r = run("UPDATE audit_chains SET last_seq = $1::bigint, last_hash = $2 WHERE server = $3",
            {static_cast<std::int64_t>(seq), prev, name});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    return std::nullopt;
  }

  // Text goes in binary format with its length (libpq ignores the lengths of text-format
  // parameters and reads them as C strings); the server checks that it is valid UTF-8 and holds
  // no NUL, and refuses it otherwise (SQLSTATE 22021) instead of storing less than was sent.
  Result<PgResult> run(const std::string& sql, const std::vector<Param>& params) {
    std::vector<std::string> numbers;
    numbers.reserve(params.size());  // no reallocation: `values` points into it
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats;
    std::vector<Oid> types;
    for (const Param& p : params) {
      if (const auto* s = std::get_if<std::string>(&p)) {
        values.push_back(s->data());
        lengths.push_back(static_cast<int>(s->size()));
        formats.push_back(1);
        types.push_back(kTextOid);
      } else {
        numbers.push_back(std::to_string(std::get<std::int64_t>(p)));
        values.push_back(numbers.back().c_str());
        lengths.push_back(0);
        formats.push_back(0);
        types.push_back(0);  // the statement casts it: $2::bigint
      }
    }
    const bool sent =
        conn_ != nullptr &&
        PQsendQueryParams(conn_, sql.c_str(), static_cast<int>(values.size()), types.data(),
                          values.data(), lengths.data(), formats.data(), 0) == 1;
    return collect(sent);
  }

  std::optional<std::string> exec(const char* sql) {
    auto r = collect(conn_ != nullptr && PQsendQuery(conn_, sql) == 1);
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    return std::nullopt;
  }

  // What was just sent, sent and answered within answer_within_: its last result, or the first
  // error. At the deadline the connection is closed (the next statement connects again).
  Result<PgResult> collect(bool sent) {
    error_state_.clear();
    if (!sent) return failure();
    const auto deadline = std::chrono::steady_clock::now() + answer_within_;
    for (;;) {  // the statement out (a batch of rows can be larger than the socket's buffer)
      const int flushed = PQflush(conn_);
      if (flushed == 0) break;
      if (flushed < 0) return failure();
      if (!wait(POLLOUT | POLLIN, deadline)) return give_up();
      if (PQconsumeInput(conn_) == 0) return failure();
    }
    PgResult last;
    std::optional<std::string> error;
    for (;;) {  // every result, to the end (a script such as kSchema has several)
      while (PQisBusy(conn_) == 1) {
        if (!wait(POLLIN, deadline)) return give_up();
        if (PQconsumeInput(conn_) == 0) return failure();
      }
      PgResult r(PQgetResult(conn_));
      if (!r) break;
      const ExecStatusType status = PQresultStatus(r.get());
      if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        last = std::move(r);
      } else if (!error) {
        error = "postgres: " + one_line(PQresultErrorMessage(r.get()));
        const char* state = PQresultErrorField(r.get(), PG_DIAG_SQLSTATE);
        error_state_ = state ? state : "";
      }
    }
    if (error) return *error;
    return last;
  }

  // Until the connection's socket is ready for `events` (or failed: libpq then says why); false
  // at the deadline.
  bool wait(short events, std::chrono::steady_clock::time_point deadline) const {
    const int fd = PQsocket(conn_);
    if (fd < 0) return true;
    for (;;) {
      const auto left =
          std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
              .count();
      if (left <= 0) return false;
      pollfd ready{fd, events, 0};
      const int n = ::poll(&ready, 1, static_cast<int>(std::min<long long>(left, INT_MAX)));
      if (n > 0 || (n < 0 && errno != EINTR)) return true;
    }
  }

  std::string failure() const {
    return "postgres: " + one_line(conn_ ? PQerrorMessage(conn_) : "not connected");
  }

  std::string give_up() {
    PQfinish(conn_);
    conn_ = nullptr;
    return "postgres: no answer within " + std::to_string(answer_within_.count()) +
           " ms; the connection was closed";
  }

  // A text value as the server sent it, by its length.
  static std::string value(PGresult* res, int row, int column) {
    return std::string(PQgetvalue(res, row, column),
                       static_cast<std::size_t>(PQgetlength(res, row, column)));
  }

  static std::vector<StoredRecord> records(PGresult* res) {
    std::vector<StoredRecord> out;
    out.reserve(PQntuples(res));
    for (int i = 0; i < PQntuples(res); ++i) {
      StoredRecord r;
      r.server = value(res, i, 0);
      r.seq = std::stoull(PQgetvalue(res, i, 1));
      r.json = value(res, i, 2);
      r.prev_hash = value(res, i, 3);
      r.hash = value(res, i, 4);
      r.summary = Summary{value(res, i, 5), std::stoll(PQgetvalue(res, i, 6)),
                          value(res, i, 7), value(res, i, 8),
                          value(res, i, 9), value(res, i, 10),
                          value(res, i, 11)};
      out.push_back(std::move(r));
    }
    return out;
  }

  // SQLSTATE classes of a statement refused for what it holds, which no retry changes: 22 (data
  // exception: invalid text, a value out of range) and 54 (program limit exceeded: a value too
  // large for an index). Anything else (a lost connection, 08; a shutdown, 57; a full disk, 53;
  // a deadlock, 40) is the store being unavailable.
  static bool refused_input(std::string_view sqlstate) {
    return sqlstate.starts_with("22") || sqlstate.starts_with("54");
  }

  Result<bool> has_removals_table() {
    auto r = run("SELECT to_regclass('audit_removals') IS NOT NULL", {});
    if (auto* e = std::get_if<std::string>(&r)) return *e;
    return std::string_view(PQgetvalue(std::get<PgResult>(r).get(), 0, 0)) == "t";
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

  std::string conninfo_;
  const std::chrono::milliseconds answer_within_;
  std::string where_;
  PGconn* conn_ = nullptr;
  std::string error_state_;  // the SQLSTATE of the last statement's error; empty: none came
};

}  // namespace

std::variant<std::unique_ptr<Store>, std::string> open_postgres(
    const std::string& conninfo, OpenMode mode, std::chrono::milliseconds answer_within) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  if (!options) {
    std::string why = error ? one_line(error) : "out of memory";
    PQfreemem(error);
    return "postgres: the connection string does not parse: " + why;
  }
  bool has_password = false;
  for (PQconninfoOption* o = options; o->keyword; ++o) {
    if (std::string_view(o->keyword) == "password" && o->val && *o->val) has_password = true;
  }
  PQconninfoFree(options);
  if (has_password) {
    return std::string(
        "postgres: the connection string holds a password; give it in PGPASSWORD or ~/.pgpass");
  }
  auto store = std::make_unique<PostgresStore>(conninfo, answer_within);
  if (auto problem = store->prepare(mode)) return *problem;
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace codemode::audit
