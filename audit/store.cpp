#include "audit/store.h"

#include "audit/sql.h"

namespace codemode::audit {

bool matches(const Query& query, const StoredRecord& record) {
  const Summary& s = record.summary;
  if (query.since_us && s.time_us < *query.since_us) return false;
  if (query.until_us && s.time_us >= *query.until_us) return false;
  if (query.server && record.server != *query.server) return false;
  if (query.kind && s.kind != *query.kind) return false;
  if (query.principal && s.principal != *query.principal) return false;
  if (query.tool && s.tool != *query.tool) return false;
  if (query.outcome && s.outcome != *query.outcome) return false;
  if (query.path_prefix && !(s.kind == "request" && s.path.starts_with(*query.path_prefix))) {
    return false;
  }
  return true;
}

std::string chain_hash(std::string_view prev_hash, std::string_view server, std::uint64_t seq,
                       std::string_view json) {
  std::string text;
  text.reserve(prev_hash.size() + server.size() + json.size() + 24);
  text.append(prev_hash).append("\n").append(server).append("\n");
  text.append(std::to_string(seq)).append("\n").append(json);
  return sha256_hex(text);
}

namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// Whether a stored column holds what the record's text gives (`derived`, a column_text). Two
// forms earlier versions wrote are accepted too, so that their chains still verify: SQLite kept
// a field's bytes as they came (not UTF-8, a NUL), which column_text maps as the JSON did; and
// libpq's C-string parameters cut a PostgreSQL column at its first NUL (which the derived column
// holds as U+FFFD, and the JSON as \u0000).
bool column_agrees(const std::string& stored, const std::string& derived, std::string_view json) {
  if (stored == derived || column_text(stored) == derived) return true;
  return derived.starts_with(stored) && derived.substr(stored.size()).starts_with(kReplacement) &&
         json.find("\\u0000") != std::string_view::npos;
}

bool agrees(const Summary& stored, const Summary& derived, std::string_view json) {
  return stored.id == derived.id && stored.time_us == derived.time_us &&
         stored.kind == derived.kind && column_agrees(stored.principal, derived.principal, json) &&
         column_agrees(stored.tool, derived.tool, json) &&
         column_agrees(stored.outcome, derived.outcome, json) &&
         column_agrees(stored.path, derived.path, json);
}

class Walk {
 public:
  explicit Walk(VerifyReport& report) : report_(report) {}

  void add_break(std::string line) {
    ++report_.break_count;
    if (report_.breaks.size() < VerifyReport::kMaxListedBreaks) {
      report_.breaks.push_back(std::move(line));
    }
  }

  // The chain's front: what retention removed must run from record 1 to the record before the
  // head's start, each removal after the one before, and the start must follow the last removed
  // record's hash.
  void check_start(Store& store, const ChainHead& head) {
    const std::string where = "server " + head.server + ": ";
    auto found = store.removals(head.server);
    if (auto* error = std::get_if<std::string>(&found)) {
      add_break(where + "cannot read its removals: " + *error);
      return;
    }
    std::uint64_t next = 1;
    std::string prev(kChainStart);
    for (Removal& removal : std::get<std::vector<Removal>>(found)) {
      if (removal.first_seq != next || removal.last_seq < removal.first_seq) {
        add_break(where + "retention is recorded as removing records " +
                  std::to_string(removal.first_seq) + ".." + std::to_string(removal.last_seq) +
                  " where the chain went on at " + std::to_string(next) + " (edited)");
      }
      next = removal.last_seq + 1;
      prev = removal.last_hash;
      report_.removals.push_back(std::move(removal));
    }
    if (head.first_seq > next) {
      add_break(where + "records " + std::to_string(next) + ".." +
                std::to_string(head.first_seq - 1) +
                " are gone from the chain's front, and no removal by retention is recorded "
                "(deleted)");
    } else if (head.first_seq < next) {
      add_break(where + "the chain's head starts at " + std::to_string(head.first_seq) +
                ", before the end of what retention removed (" + std::to_string(next - 1) +
                ") (edited)");
    } else if (head.first_prev_hash != prev) {
      add_break(where + "the chain's start does not follow " +
                std::string(next == 1 ? "the chain's beginning" : "the last record removed") +
                " (edited)");
    }
  }

  void check_records(Store& store, const ChainHead& head) {
    const std::string where = "server " + head.server + ", ";
    std::uint64_t expected_seq = head.first_seq;
    std::string expected_prev = head.first_prev_hash;
    std::uint64_t after = head.first_seq - 1;
    constexpr std::size_t kPage = 1000;
    while (true) {
      auto page = store.chain(head.server, after, kPage);
      if (auto* error = std::get_if<std::string>(&page)) {
        add_break(where + "cannot read: " + *error);
        return;
      }
      const auto& rows = std::get<std::vector<StoredRecord>>(page);
      for (const StoredRecord& row : rows) {
        after = row.seq;
        const std::string at = where + "record " + std::to_string(row.seq) + ": ";
        if (row.seq != expected_seq) {
          add_break(where + "record " + std::to_string(expected_seq) +
                    (row.seq == expected_seq + 1
                         ? " is missing (deleted)"
                         : " to " + std::to_string(row.seq - 1) + " are missing (deleted)"));
          // The link across a gap cannot be checked: the walk goes on from this record.
          expected_prev = row.prev_hash;
        }
        // One line for a record, naming the first thing found wrong with it.
        const std::optional<Summary> derived = summarize_json(row.json);
        if (row.prev_hash != expected_prev) {
          add_break(at +
                    "its prev_hash is not the hash of the record before it (a record was "
                    "replaced or the chain re-spliced)");
        } else if (chain_hash(row.prev_hash, row.server, row.seq, row.json) != row.hash) {
          add_break(at + "its content does not match its hash (edited)");
        } else if (!derived || !agrees(row.summary, *derived, row.json)) {
          add_break(at + "its indexed columns do not match its content (edited)");
        }
        // The next record's prev_hash names this one's stored hash, edited or not.
        expected_prev = row.hash;
        expected_seq = row.seq + 1;
        ++report_.records;
      }
      if (rows.size() < kPage) break;
    }
    if (expected_seq - 1 > head.last_seq) {
      add_break(where + "records after " + std::to_string(head.last_seq) +
                ", the chain's head, are stored (added outside the chain)");
    } else if (expected_seq - 1 < head.last_seq) {
      add_break(where + "record " + std::to_string(expected_seq) + " to " +
                std::to_string(head.last_seq) + " are missing (the chain's head says it ends at " +
                std::to_string(head.last_seq) + ")");
    } else if (expected_prev != head.last_hash) {
      add_break(where + "the chain's head names a last hash that its last record does not have");
    }
  }

 private:
  VerifyReport& report_;
};

}  // namespace

VerifyReport verify(Store& store, const std::optional<std::string>& server) {
  VerifyReport report;
  Walk walk(report);
  auto heads = store.heads();
  if (auto* error = std::get_if<std::string>(&heads)) {
    walk.add_break("cannot read the chains: " + *error);
    return report;
  }
  for (ChainHead& head : std::get<std::vector<ChainHead>>(heads)) {
    if (server && head.server != *server) continue;
    walk.check_start(store, head);
    walk.check_records(store, head);
    report.chains.push_back(std::move(head));
  }
  if (server && report.chains.empty()) {
    walk.add_break("server " + *server + ": no chain of that name");
  }
  return report;
}

namespace detail {

SqlQuery query_sql(const Query& query, Dialect dialect) {
  SqlQuery out;
  out.sql = std::string("SELECT ") + kColumns + " FROM audit_records WHERE TRUE";
  auto param = [&](std::variant<std::string, std::int64_t> value) {
    const bool text = std::holds_alternative<std::string>(value);
    out.params.push_back(std::move(value));
    const std::string n = std::to_string(out.params.size());
    if (dialect == Dialect::sqlite) return "?" + n;
    return "$" + n + (text ? "::text" : "::bigint");
  };
  if (query.since_us) out.sql += " AND time_us >= " + param(*query.since_us);
  if (query.until_us) out.sql += " AND time_us < " + param(*query.until_us);
  if (query.server) out.sql += " AND server = " + param(*query.server);
  if (query.kind) out.sql += " AND kind = " + param(*query.kind);
  if (query.principal) out.sql += " AND principal = " + param(*query.principal);
  if (query.tool) out.sql += " AND tool = " + param(*query.tool);
  if (query.outcome) out.sql += " AND outcome = " + param(*query.outcome);
  if (query.path_prefix) {
    const std::string p = param(*query.path_prefix);
    out.sql += " AND kind = 'request' AND substr(path, 1, length(" + p + ")) = " + p;
  }
  out.sql += query.order == Query::Order::oldest_first
                 ? " ORDER BY time_us, server, seq"
                 : " ORDER BY time_us DESC, server DESC, seq DESC";
  out.sql += " LIMIT " + std::to_string(query.limit);
  return out;
}

}  // namespace detail

std::variant<std::unique_ptr<Store>, std::string> open_store(const config::Audit& audit,
                                                             OpenMode mode) {
  if (audit.store == config::Audit::Store::postgres) return open_postgres(audit.postgres, mode);
  return open_sqlite(audit.sqlite, mode);
}

}  // namespace codemode::audit
