// Tests only: an audit trail on a real SQLite file, for the tests that check what a call leaves
// in it (observe/, and mcp/ where a real session drives it).
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <variant>
#include <vector>

#include <catch2/catch.hpp>

#include "audit/store.h"
#include "audit/test_records.h"
#include "audit/writer.h"
#include "config/config.h"

namespace codemode::server::testing {

using audit::testing::TempDir;

// Runs `text` on the database in `file` from a connection of its own (a trigger that makes the
// store refuse writes, and dropping it again).
inline void sql(const std::filesystem::path& file, const char* text) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  const int status = sqlite3_exec(db, text, nullptr, nullptr, nullptr);
  sqlite3_close(db);
  REQUIRE(status == SQLITE_OK);
}

// A writer into a new SQLite trail at `file`, retrying fast.
inline std::unique_ptr<audit::Writer> writer_on(const std::filesystem::path& file,
                                                config::Audit::OnFailure mode,
                                                std::size_t queue = 10000) {
  auto store = audit::open_sqlite(file, audit::OpenMode::write);
  REQUIRE(std::holds_alternative<std::unique_ptr<audit::Store>>(store));
  audit::WriterOptions options;
  options.server = "unit";
  options.queue = queue;
  options.on_failure = mode;
  options.first_retry = std::chrono::milliseconds(5);
  options.last_retry = std::chrono::milliseconds(20);
  return std::make_unique<audit::Writer>(std::move(std::get<std::unique_ptr<audit::Store>>(store)),
                                         options);
}

// Every record in the trail at `file`, oldest first, as JSON.
inline std::vector<nlohmann::json> records_in(const std::filesystem::path& file) {
  auto store = audit::open_sqlite(file, audit::OpenMode::read);
  REQUIRE(std::holds_alternative<std::unique_ptr<audit::Store>>(store));
  auto rows = std::get<std::unique_ptr<audit::Store>>(store)->query(audit::Query{});
  REQUIRE(std::holds_alternative<std::vector<audit::StoredRecord>>(rows));
  std::vector<nlohmann::json> out;
  for (const auto& r : std::get<std::vector<audit::StoredRecord>>(rows)) {
    out.push_back(nlohmann::json::parse(r.json));
  }
  return out;
}

}  // namespace codemode::server::testing
