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

bool same(const Summary& a, const Summary& b) {
  return a.id == b.id && a.time_us == b.time_us && a.kind == b.kind && a.principal == b.principal &&
         a.tool == b.tool && a.outcome == b.outcome && a.path == b.path;
}

// The first break in one chain, or empty.
std::string verify_chain(Store& store, const ChainHead& head, std::uint64_t& records) {
  const std::string where = "server " + head.server + ", ";
  std::uint64_t expected_seq = head.first_seq;
  std::string expected_prev = head.first_prev_hash;
  constexpr std::size_t kPage = 1000;
  while (true) {
    auto page = store.chain(head.server, expected_seq - 1, kPage);
    if (auto* error = std::get_if<std::string>(&page)) return where + "cannot read: " + *error;
    const auto& rows = std::get<std::vector<StoredRecord>>(page);
    for (const StoredRecord& row : rows) {
      const std::string at = where + "record " + std::to_string(row.seq) + ": ";
      if (row.seq != expected_seq) {
        return where + "record " + std::to_string(expected_seq) +
               (row.seq == expected_seq + 1
                    ? " is missing (deleted)"
                    : " to " + std::to_string(row.seq - 1) + " are missing (deleted)");
      }
      if (row.prev_hash != expected_prev) {
        return at +
               "its prev_hash is not the hash of the record before it (a record was "
               "replaced or the chain re-spliced)";
      }
      if (chain_hash(row.prev_hash, row.server, row.seq, row.json) != row.hash) {
        return at + "its content does not match its hash (edited)";
      }
      const std::optional<Summary> derived = summarize_json(row.json);
      if (!derived || !same(*derived, row.summary)) {
        return at + "its indexed columns do not match its content (edited)";
      }
      expected_prev = row.hash;
      ++expected_seq;
      ++records;
    }
    if (rows.size() < kPage) break;
  }
  if (expected_seq - 1 != head.last_seq) {
    if (expected_seq - 1 > head.last_seq) {
      return where + "records after " + std::to_string(head.last_seq) +
             ", the chain's head, are stored (added outside the chain)";
    }
    return where + "record " + std::to_string(expected_seq) + " to " +
           std::to_string(head.last_seq) + " are missing (the chain's head says it ends at " +
           std::to_string(head.last_seq) + ")";
  }
  if (expected_prev != head.last_hash) {
    return where + "the chain's head names a last hash that its last record does not have";
  }
  return "";
}

}  // namespace

VerifyReport verify(Store& store, const std::optional<std::string>& server) {
  VerifyReport report;
  auto heads = store.heads();
  if (auto* error = std::get_if<std::string>(&heads)) {
    report.first_break = "cannot read the chains: " + *error;
    return report;
  }
  for (ChainHead& head : std::get<std::vector<ChainHead>>(heads)) {
    if (server && head.server != *server) continue;
    if (report.intact()) report.first_break = verify_chain(store, head, report.records);
    report.chains.push_back(std::move(head));
  }
  if (server && report.chains.empty() && report.intact()) {
    report.first_break = "server " + *server + ": no chain of that name";
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
