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
