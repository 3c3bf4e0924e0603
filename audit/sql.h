// Internal to the stores: the SQL both of them speak (schema, query text).
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "audit/store.h"

namespace codemode::audit::detail {

// The columns every read selects, in the order read_row expects.
inline constexpr const char* kColumns =
    "server, seq, json, prev_hash, hash, id, time_us, kind, principal, tool, outcome, path";

enum class Dialect { sqlite, postgres };

struct SqlQuery {
  std::string sql;
  std::vector<std::variant<std::string, std::int64_t>> params;  // $1/?1, $2/?2, ...
};

SqlQuery query_sql(const Query& query, Dialect dialect);

// What the indexed columns hold for `summary`: each text as column_text (valid UTF-8, no NUL),
// whatever the entry holds, so that every row is valid text in both stores.
inline Summary columns(const Summary& summary) {
  return Summary{column_text(summary.id),   summary.time_us,
                 column_text(summary.kind), column_text(summary.principal),
                 column_text(summary.tool), column_text(summary.outcome),
                 column_text(summary.path)};
}

}  // namespace codemode::audit::detail
