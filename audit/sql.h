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

}  // namespace codemode::audit::detail
