#include "audit/cli.h"

#include <sqlite3.h>

#include <sstream>

#include <catch2/catch.hpp>

#include "audit/test_records.h"

namespace codemode::audit {
namespace {

using testing::entry_of;
using testing::make_call;
using testing::make_request;
using testing::take;
using testing::TempDir;

struct Trail {
  TempDir dir;
  config::Audit audit;
  CallRecord call = make_call(1, "alice");
  RequestRecord request = make_request(1, call.id, "alice");
  CallRecord other = make_call(2, "bob");

  Trail() {
    audit.sqlite = dir.path() / "audit.db";
    call.time_us = 1764756902000000;
    request.time_us = call.time_us + 1000;
    // Written by model code: escaped in a table, the 7-bit ESC and the 8-bit CSI (U+009B) alike.
    request.path =
        "/products/7\x1b[2J\xc2\x9b"
        "31m";
    other.time_us = call.time_us + 2000;
    other.outcome = "timeout";
    auto store = take(open_sqlite(audit.sqlite, OpenMode::write));
    REQUIRE(store->append("web-1",
                          std::vector<Entry>{entry_of(request), entry_of(call), entry_of(other)},
                          now_us()) == std::nullopt);
  }

  void add(const Record& record) {
    auto store = take(open_sqlite(audit.sqlite, OpenMode::write));
    REQUIRE(store->append("web-1", std::vector<Entry>{entry_of(record)}, now_us()) == std::nullopt);
  }

  // Runs a command; its output lines.
  std::vector<std::string> run(const ReadCommand& command, int expected_status = 0,
                               const FollowOptions& follow = {}) {
    std::ostringstream out, err;
    const int status = run_read_command(command, audit, out, err, follow);
    INFO(err.str());
    CHECK(status == expected_status);
    std::vector<std::string> lines;
    std::istringstream in(out.str());
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }
};

ReadCommand command(ReadCommand::Action action) {
  ReadCommand c;
  c.action = action;
  return c;
}

TEST_CASE("audit query prints JSON lines with server, seq and time, oldest first", "[audit][cli]") {
  Trail trail;
  const auto lines = trail.run(command(ReadCommand::Action::query));
  REQUIRE(lines.size() == 3);
  const Json first = Json::parse(lines[0]);
  CHECK(first["id"] == trail.call.id);
  CHECK(first["server"] == "web-1");
  CHECK(first["seq"] == 2);
  CHECK(first["time"] == "2025-12-03T10:15:02.000000Z");
  CHECK(first["code"] == trail.call.code);
  CHECK(Json::parse(lines[1])["path"] == trail.request.path);
}

TEST_CASE("audit query filters by principal, outcome, path, kind and time", "[audit][cli]") {
  Trail trail;
  auto ids = [&](ReadCommand c) {
    std::vector<std::string> out;
    for (const auto& line : trail.run(c)) out.push_back(Json::parse(line)["id"]);
    return out;
  };
  using Ids = std::vector<std::string>;
  ReadCommand c = command(ReadCommand::Action::query);
  c.principal = "bob";
  CHECK(ids(c) == Ids{trail.other.id});
  c = command(ReadCommand::Action::query);
  c.outcome = "timeout";
  CHECK(ids(c) == Ids{trail.other.id});
  c = command(ReadCommand::Action::query);
  c.path = "/products/";
  CHECK(ids(c) == Ids{trail.request.id});
  c = command(ReadCommand::Action::query);
  c.kind = "call";
  c.limit = 1;
  CHECK(ids(c) == Ids{trail.call.id});
  c = command(ReadCommand::Action::query);
  c.since = "2025-12-03T10:15:02.001Z";
  c.until = "2025-12-03T10:15:02.002Z";
  CHECK(ids(c) == Ids{trail.request.id});
  c.since = "yesterday";
  std::ostringstream out, err;
  CHECK(run_read_command(c, trail.audit, out, err) == 2);
  CHECK(err.str() ==
        "codemode-mcp audit: 'yesterday' is not a time (2026-12-03T10:00:00Z, 2026-12-03, or an "
        "age: 30s, 15m, 2h, 7d)\n");
}

TEST_CASE("audit query as a table escapes what model code wrote", "[audit][cli]") {
  Trail trail;
  ReadCommand c = command(ReadCommand::Action::query);
  c.format = ReadCommand::Format::table;
  const auto lines = trail.run(c);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].starts_with("TIME "));
  CHECK(lines[1].starts_with("2025-12-03T10:15:02.000Z web-1#2 "));
  CHECK(lines[2].find("GET http://127.0.0.1:8788/products/7\\x1b[2J\\xc2\\x9b31m") !=
        std::string::npos);
  CHECK(lines[2].find('\x1b') == std::string::npos);
  CHECK(lines[2].find("\xc2\x9b") == std::string::npos);
  CHECK(lines[3].find("timeout") != std::string::npos);
}

TEST_CASE("audit verify says intact, or names the first break and exits 1", "[audit][cli]") {
  Trail trail;
  auto lines = trail.run(command(ReadCommand::Action::verify));
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].starts_with("server web-1: records 1..3, head "));
  CHECK(lines[1] == "intact: 3 records in 1 chain");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(trail.audit.sqlite.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE audit_records SET json = replace(json, 'timeout', 'ok')",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  lines = trail.run(command(ReadCommand::Action::verify), 1);
  CHECK(lines.back() ==
        "BROKEN: server web-1, record 3: its content does not match its hash "
        "(edited)");
}

// Issue 34 item 2: verify stopped at the first break, so a real edit further on hid behind it.
TEST_CASE("audit verify goes on past a break and names every one", "[audit][cli]") {
  Trail trail;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(trail.audit.sqlite.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "UPDATE audit_records SET principal = 'carol' WHERE seq = 1; "
                       "UPDATE audit_records SET json = replace(json, 'timeout', 'ok') "
                       "WHERE seq = 3",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const auto lines = trail.run(command(ReadCommand::Action::verify), 1);
  REQUIRE(lines.size() == 3);
  CHECK(lines[1] ==
        "BROKEN: server web-1, record 1: its indexed columns do not match its content (edited)");
  CHECK(lines[2] == "BROKEN: server web-1, record 3: its content does not match its hash (edited)");
}

// Issue 34 item 14: a chain's name went to the terminal raw, so one named with a newline
// printed a forged "intact" line under which BROKEN scrolled away, and an ESC drove the terminal.
TEST_CASE("audit verify escapes what the store holds before a terminal shows it", "[audit][cli]") {
  Trail trail;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(trail.audit.sqlite.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "INSERT INTO audit_chains VALUES ('x' || char(10) || 'intact: 3 records in "
                       "1 chain' || char(27) || '[8m', 1, 'a', 0, 'a' || char(155))",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const auto lines = trail.run(command(ReadCommand::Action::verify), 1);
  for (const std::string& line : lines) {
    CHECK_FALSE(line.starts_with("intact: "));
    CHECK(line.find('\x1b') == std::string::npos);
    CHECK(line.find("\xc2\x9b") == std::string::npos);
  }
  REQUIRE(lines.size() >= 3);
  CHECK(lines[0] ==
        "server web-1: records 1..3, head " +
            take(take(open_sqlite(trail.audit.sqlite, OpenMode::read))->heads())[0].last_hash);
  CHECK(lines[1].starts_with(
      "server x\\nintact: 3 records in 1 chain\\x1b[8m: records 1..0, head a\\xc2\\x9b"));
}

// Issue 34 item 14: JSON escapes C0 controls but not C1 ones (U+0080..U+009F), which some
// terminals obey as 8-bit CSI; query and tail write them as \u escapes.
TEST_CASE("audit query and tail write C1 controls as escapes", "[audit][cli]") {
  Trail trail;
  for (const auto action : {ReadCommand::Action::query, ReadCommand::Action::tail}) {
    ReadCommand c = command(action);
    c.kind = "request";
    FollowOptions once;
    once.keep_following = [] { return false; };
    const auto lines = trail.run(c, 0, once);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("\xc2\x9b") == std::string::npos);
    CHECK(lines[0].find("\\u009b31m") != std::string::npos);
    CHECK(Json::parse(lines[0])["path"] == trail.request.path);
  }
}

TEST_CASE("audit verify says what retention removed, and when", "[audit][cli][retention]") {
  Trail trail;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(trail.audit.sqlite.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE audit_records SET stored_us = 0 WHERE seq = 1", nullptr, nullptr,
                       nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const std::int64_t now = 1796538333000000;  // 2026-12-06T06:25:33Z
  CHECK(take(take(open_sqlite(trail.audit.sqlite, OpenMode::write))->trim(Retention{30, 0}, now)) ==
        1);
  const auto lines = trail.run(command(ReadCommand::Action::verify));
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].starts_with("server web-1: records 2..3, head "));
  CHECK(lines[1] ==
        "server web-1: records 1..1 removed by retention (max_age_days) at "
        "2026-12-06T06:25:33.000000Z, written 2025-12-03T10:15:02.001000Z to "
        "2025-12-03T10:15:02.001000Z");
  CHECK(lines[2] == "intact: 2 records in 1 chain");
}

TEST_CASE("audit tail shows the newest records, then those that follow", "[audit][cli]") {
  Trail trail;
  ReadCommand c = command(ReadCommand::Action::tail);
  c.limit = 2;
  c.kind = "call";
  int rounds = 0;
  const CallRecord later = make_call(3, "carol");
  FollowOptions follow;
  follow.poll = std::chrono::milliseconds(1);
  follow.keep_following = [&] {
    if (rounds == 1) trail.add(later);  // arrives while tail follows
    return rounds++ < 3;
  };
  const auto lines = trail.run(c, 0, follow);
  REQUIRE(lines.size() == 3);
  CHECK(Json::parse(lines[0])["id"] == trail.call.id);
  CHECK(Json::parse(lines[1])["id"] == trail.other.id);
  CHECK(Json::parse(lines[2])["id"] == later.id);
}

TEST_CASE("audit commands on a store that does not exist exit 2", "[audit][cli]") {
  TempDir dir;
  config::Audit audit;
  audit.sqlite = dir.path() / "none.db";
  std::ostringstream out, err;
  CHECK(run_read_command(command(ReadCommand::Action::query), audit, out, err) == 2);
  CHECK(err.str().starts_with("codemode-mcp audit: cannot open "));
}

}  // namespace
}  // namespace codemode::audit
