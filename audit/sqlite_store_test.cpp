#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "audit/store.h"
#include "audit/test_records.h"

namespace codemode::audit {
namespace {

using testing::entry_of;
using testing::make_call;
using testing::make_request;
using testing::take;
using testing::TempDir;

std::unique_ptr<Store> open_file(const std::filesystem::path& file) {
  return take(open_sqlite(file, OpenMode::write));
}

// Runs SQL on the file behind the store's back, as someone editing it would.
void tamper(const std::filesystem::path& file, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  const int status = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  INFO((error ? error : ""));
  sqlite3_free(error);
  sqlite3_close(db);
  REQUIRE(status == SQLITE_OK);
}

// Appends `calls` calls with two requests each, in batches of one call, to `server`'s chain.
std::vector<std::string> append_calls(Store& store, const std::string& server, int calls,
                                      std::int64_t stored_us = now_us()) {
  std::vector<std::string> ids;
  for (int i = 0; i < calls; ++i) {
    const CallRecord call = make_call(i);
    const std::vector<Entry> batch = {entry_of(make_request(2 * i, call.id)),
                                      entry_of(make_request(2 * i + 1, call.id)), entry_of(call)};
    REQUIRE(store.append(server, batch, stored_us) == std::nullopt);
    for (const Entry& e : batch) ids.push_back(e.summary.id);
  }
  return ids;
}

TEST_CASE("sqlite: appended records land in order on their chain", "[audit][sqlite]") {
  const TempDir dir;
  auto store = open_file(dir.path() / "audit.db");
  const std::vector<std::string> ids = append_calls(*store, "web-1", 5);
  append_calls(*store, "web-2", 2);
  const auto rows = take(store->chain("web-1", 0, 100));
  REQUIRE(rows.size() == 15);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i].seq == i + 1);
    CHECK(rows[i].summary.id == ids[i]);
    CHECK(rows[i].prev_hash == (i == 0 ? std::string(kChainStart) : rows[i - 1].hash));
  }
  const auto heads = take(store->heads());
  REQUIRE(heads.size() == 2);
  CHECK(heads[0].server == "web-1");
  CHECK(heads[0].last_seq == 15);
  CHECK(heads[0].last_hash == rows.back().hash);
  CHECK(heads[1].last_seq == 6);
  const VerifyReport report = verify(*store);
  CHECK(report.breaks.empty());
  CHECK(report.records == 21);
  CHECK(verify(*store, "nobody").breaks ==
        std::vector<std::string>{"server nobody: no chain of that name"});
}

TEST_CASE("sqlite: an entry already stored is skipped when a batch is retried", "[audit][sqlite]") {
  const TempDir dir;
  auto store = open_file(dir.path() / "audit.db");
  const CallRecord a = make_call(1);
  const CallRecord b = make_call(2);
  REQUIRE(store->append("s", std::vector<Entry>{entry_of(a)}, now_us()) == std::nullopt);
  REQUIRE(store->append("s", std::vector<Entry>{entry_of(a), entry_of(b)}, now_us()) ==
          std::nullopt);
  const auto rows = take(store->chain("s", 0, 10));
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].summary.id == b.id);
  CHECK(verify(*store).intact());
}

TEST_CASE("sqlite: queries filter by time, principal, tool, outcome, kind and path",
          "[audit][sqlite][query]") {
  const TempDir dir;
  auto store = open_file(dir.path() / "audit.db");
  std::vector<Entry> batch;
  CallRecord early = make_call(1, "alice");
  early.time_us = 1000;
  CallRecord late = make_call(2, "bob");
  late.time_us = 3000;
  late.outcome = "timeout";
  late.tool = "search";
  RequestRecord request = make_request(1, late.id, "bob");
  request.time_us = 2000;
  request.path = "/products/7?x=1";
  for (const Record& r : {Record{early}, Record{late}, Record{request}}) {
    batch.push_back(entry_of(r));
  }
  REQUIRE(store->append("s", batch, now_us()) == std::nullopt);
  auto ids = [&](const Query& q) {
    std::vector<std::string> out;
    for (const auto& row : take(store->query(q))) out.push_back(row.summary.id);
    return out;
  };
  using Ids = std::vector<std::string>;
  CHECK(ids(Query{}) == Ids{early.id, request.id, late.id});
  Query newest;
  newest.order = Query::Order::newest_first;
  newest.limit = 2;
  CHECK(ids(newest) == Ids{late.id, request.id});
  Query range;
  range.since_us = 2000;
  range.until_us = 3000;
  CHECK(ids(range) == Ids{request.id});
  Query by_principal;
  by_principal.principal = "bob";
  CHECK(ids(by_principal) == Ids{request.id, late.id});
  Query by_outcome;
  by_outcome.outcome = "timeout";
  CHECK(ids(by_outcome) == Ids{late.id});
  Query by_path;
  by_path.path_prefix = "/products/";
  CHECK(ids(by_path) == Ids{request.id});
  by_path.path_prefix = "/orders";
  CHECK(ids(by_path).empty());
  Query by_kind;
  by_kind.kind = "call";
  by_kind.tool = early.tool;
  CHECK(ids(by_kind) == Ids{early.id});
  for (const auto& row : take(store->query(Query{})))
    CHECK(matches(by_principal, row) == (row.summary.principal == "bob"));
}

TEST_CASE("sqlite: verify reports the first edited, deleted or re-linked record",
          "[audit][sqlite][chain]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  {
    auto store = open_file(file);
    append_calls(*store, "web-1", 4);  // 12 records
  }
  auto check_break = [&](const std::string& sql, const std::string& expected) {
    const TempDir copy_dir;
    const auto copy = copy_dir.path() / "audit.db";
    std::filesystem::copy_file(file, copy);
    tamper(copy, sql);
    auto store = take(open_sqlite(copy, OpenMode::read));
    const VerifyReport report = verify(*store);
    CHECK(report.breaks == std::vector<std::string>{expected});
  };
  {
    auto store = take(open_sqlite(file, OpenMode::read));
    CHECK(verify(*store).intact());
  }
  check_break(
      "UPDATE audit_records SET json = replace(json, '\"alice\"', '\"mallory\"') "
      "WHERE seq = 5",
      "server web-1, record 5: its content does not match its hash (edited)");
  check_break("UPDATE audit_records SET principal = 'mallory' WHERE seq = 7",
              "server web-1, record 7: its indexed columns do not match its content (edited)");
  check_break("DELETE FROM audit_records WHERE seq = 6",
              "server web-1, record 6 is missing (deleted)");
  check_break("DELETE FROM audit_records WHERE seq IN (3, 4)",
              "server web-1, record 3 to 4 are missing (deleted)");
  check_break("DELETE FROM audit_records WHERE seq >= 11",
              "server web-1, record 11 to 12 are missing (the chain's head says it ends at 12)");
  check_break("UPDATE audit_records SET prev_hash = '" + std::string(64, 'a') + "' WHERE seq = 2",
              "server web-1, record 2: its prev_hash is not the hash of the record before it (a "
              "record was replaced or the chain re-spliced)");
  check_break("DELETE FROM audit_records WHERE seq <= 2",
              "server web-1, record 1 to 2 are missing (deleted)");
}

// Model code chooses what a refused URL holds: a character cut after its first byte (at the
// 2,048 bytes such a URL is kept to), a NUL, bytes that are not UTF-8. The JSON text holds them
// as JSON does (U+FFFD, \u0000); the columns hold the same text, a NUL as U+FFFD, so that verify
// finds the chain as it was written.
TEST_CASE("sqlite: text that is not UTF-8 or holds a NUL is stored as valid text and verifies",
          "[audit][sqlite][chain]") {
  const TempDir dir;
  auto store = open_file(dir.path() / "audit.db");
  const CallRecord call = make_call(1);
  RequestRecord cut = make_request(1, call.id);
  cut.path = "http://evil.test/aaaa\xc3";
  RequestRecord nul = make_request(2, call.id);
  nul.path = std::string("http://evil.test/a\0b", 20);
  RequestRecord bytes = make_request(3, call.id,
                                     "\xff"
                                     "alice");
  bytes.path = "/\xfe\xff x";
  bytes.refusal = "policy: \xe2\x82";
  REQUIRE_FALSE(store->append(
      "web-1", std::vector<Entry>{entry_of(call), entry_of(cut), entry_of(nul), entry_of(bytes)},
      now_us()));
  const VerifyReport report = verify(*store);
  CHECK(report.intact());
  CHECK(report.records == 4);
  const auto rows = take(store->chain("web-1", 0, 10));
  REQUIRE(rows.size() == 4);
  CHECK(rows[1].summary.path == "http://evil.test/aaaa\xef\xbf\xbd");
  CHECK(Json::parse(rows[1].json)["path"] == "http://evil.test/aaaa\xef\xbf\xbd");
  CHECK(rows[2].summary.path ==
        "http://evil.test/a\xef\xbf\xbd"
        "b");
  CHECK(Json::parse(rows[2].json)["path"] == std::string("http://evil.test/a\0b", 20));
  CHECK(rows[3].summary.principal ==
        "\xef\xbf\xbd"
        "alice");
  CHECK(rows[3].summary.path == "/\xef\xbf\xbd\xef\xbf\xbd x");
  Query by_path;
  by_path.path_prefix = "http://evil.test/a";
  CHECK(take(store->query(by_path)).size() == 2);
}

TEST_CASE("sqlite: retention by age deletes a prefix of each chain and the rest verifies",
          "[audit][sqlite][retention]") {
  const TempDir dir;
  auto store = open_file(dir.path() / "audit.db");
  const std::int64_t now = now_us();
  const std::int64_t day = 86400LL * 1000000;
  append_calls(*store, "a", 3, now - 40 * day);  // 9 records, old
  append_calls(*store, "b", 1, now - 40 * day);  // 3 records, old
  append_calls(*store, "a", 2, now - 10 * day);  // 6 records, young
  CHECK(take(store->trim(Retention{30, 0}, now)) == 12);
  const auto heads = take(store->heads());
  REQUIRE(heads.size() == 2);
  CHECK(heads[0].first_seq == 10);
  CHECK(heads[0].last_seq == 15);
  CHECK(heads[1].first_seq == 4);  // every record of b went: the chain starts after its last
  CHECK(heads[1].last_seq == 3);
  CHECK(take(store->chain("a", 0, 100)).size() == 6);
  CHECK(verify(*store).breaks.empty());
  CHECK(take(store->trim(Retention{30, 0}, now)) == 0);
  // The chain goes on from where it was.
  append_calls(*store, "b", 1);
  CHECK(take(store->chain("b", 0, 10)).front().seq == 4);
  CHECK(verify(*store).intact());
}

TEST_CASE("sqlite: retention by size keeps the database under its bound",
          "[audit][sqlite][retention]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  auto store = open_file(file);
  std::vector<Entry> batch;
  for (int i = 0; i < 2000; ++i) {
    CallRecord call = make_call(i);
    call.code = std::string(2000, 'x');  // ~2 KB a record: ~4 MB in all
    batch.push_back(entry_of(call));
    if (batch.size() == 200) {
      REQUIRE(store->append("s", batch, now_us()) == std::nullopt);
      batch.clear();
    }
  }
  const auto before = std::filesystem::file_size(file);
  CHECK(before > 4'000'000);
  const std::uint64_t bound = 1'000'000;
  const std::uint64_t deleted = take(store->trim(Retention{0, bound}, now_us()));
  CHECK(deleted > 1000);
  CHECK(deleted < 2000);
  CHECK(std::filesystem::file_size(file) <= bound + 200'000);  // the file gave the space back
  const auto heads = take(store->heads());
  CHECK(heads[0].first_seq == deleted + 1);
  CHECK(take(store->chain("s", 0, 5000)).size() == 2000 - deleted);
  const VerifyReport report = verify(*store);
  CHECK(report.intact());
  // What was rolled off is on record, with when it was written and when it went.
  REQUIRE(report.removals.size() == 1);
  CHECK(report.removals[0].first_seq == 1);
  CHECK(report.removals[0].last_seq == deleted);
  CHECK(report.removals[0].reason == "max_mb");
  CHECK(report.removals[0].last_hash == heads[0].first_prev_hash);
  CHECK(report.removals[0].newest_us >= report.removals[0].oldest_us);
}

// Issue 34 item 3: with max_mb, a caller could push its own earlier records out of the trail and
// verify said intact. Every removal by retention is recorded in the same transaction; verify
// lists them and anchors the chain's start to the last, so a front cut any other way is a break.
TEST_CASE("sqlite: verify anchors a chain's start to the removals retention recorded",
          "[audit][sqlite][retention][chain]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  const std::int64_t now = now_us();
  const std::int64_t day = 86400LL * 1000000;
  {
    auto store = open_file(file);
    append_calls(*store, "a", 2, now - 40 * day);  // records 1..6
    append_calls(*store, "a", 1, now - 20 * day);  // 7..9
    append_calls(*store, "a", 2, now);             // 10..15
    CHECK(take(store->trim(Retention{30, 0}, now)) == 6);
    CHECK(take(store->trim(Retention{10, 0}, now)) == 3);
    const VerifyReport report = verify(*store);
    CHECK(report.intact());
    REQUIRE(report.removals.size() == 2);
    CHECK(report.removals[0].first_seq == 1);
    CHECK(report.removals[0].last_seq == 6);
    CHECK(report.removals[1].first_seq == 7);
    CHECK(report.removals[1].last_seq == 9);
    CHECK(report.removals[1].removed_us == now);
    CHECK(report.removals[1].reason == "max_age_days");
  }
  auto check_break = [&](const std::string& sql, const std::string& expected) {
    const TempDir copy_dir;
    const auto copy = copy_dir.path() / "audit.db";
    std::filesystem::copy_file(file, copy);
    tamper(copy, sql);
    auto store = take(open_sqlite(copy, OpenMode::read));
    CHECK(verify(*store).breaks == std::vector<std::string>{expected});
  };
  // The front cut, the head moved to match: no removal says so.
  check_break(
      "DELETE FROM audit_records WHERE seq <= 11; UPDATE audit_chains SET first_seq = 12, "
      "first_prev_hash = (SELECT prev_hash FROM audit_records WHERE seq = 12)",
      "server a: records 10..11 are gone from the chain's front, and no removal by retention is "
      "recorded (deleted)");
  check_break("DELETE FROM audit_removals WHERE first_seq = 1",
              "server a: retention is recorded as removing records 7..9 where the chain went on "
              "at 1 (edited)");
  check_break(
      "UPDATE audit_removals SET last_hash = '" + std::string(64, 'b') + "' WHERE first_seq = 7",
      "server a: the chain's start does not follow the last record removed (edited)");
}

// A store trimmed before removals were recorded: its chains' fronts are anchored once, as
// "unrecorded", when this version first opens it to write; read as it is, they show the same.
TEST_CASE("sqlite: chains trimmed before removals were recorded still verify",
          "[audit][sqlite][retention][chain]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  {
    auto store = open_file(file);
    append_calls(*store, "a", 3);  // 1..9
  }
  // As an earlier version left it: a prefix trimmed, no table of removals.
  tamper(
      file,
      "DROP TABLE audit_removals; DELETE FROM audit_records WHERE seq <= 3; UPDATE audit_chains "
      "SET first_seq = 4, first_prev_hash = (SELECT prev_hash FROM audit_records WHERE seq = 4)");
  {
    auto store = take(open_sqlite(file, OpenMode::read));
    const VerifyReport report = verify(*store);
    CHECK(report.intact());
    REQUIRE(report.removals.size() == 1);
    CHECK(report.removals[0].reason == "unrecorded");
    CHECK(report.removals[0].last_seq == 3);
  }
  auto store = open_file(file);
  append_calls(*store, "a", 1);
  CHECK(take(store->trim(Retention{0, 0}, now_us())) == 0);
  const VerifyReport report = verify(*store);
  CHECK(report.intact());
  REQUIRE(report.removals.size() == 1);
  CHECK(report.removals[0].reason == "unrecorded");
  CHECK(report.records == 9);
}

// Issue 34 item 2: verify goes on past a break, so a real edit further on cannot hide behind
// one found first (which model code could make happen before this fix).
TEST_CASE("sqlite: verify goes on past a break and names every one", "[audit][sqlite][chain]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  auto store = open_file(file);
  append_calls(*store, "web-1", 4);  // 12 records
  tamper(file,
         "UPDATE audit_records SET path = 'x' WHERE seq = 2; "
         "UPDATE audit_records SET json = replace(json, 'alice', 'bob') WHERE seq = 8; "
         "DELETE FROM audit_records WHERE seq IN (10, 11)");
  const VerifyReport report = verify(*store);
  CHECK(report.breaks ==
        std::vector<std::string>{
            "server web-1, record 2: its indexed columns do not match its content (edited)",
            "server web-1, record 8: its content does not match its hash (edited)",
            "server web-1, record 10 to 11 are missing (deleted)"});
  CHECK(report.records == 10);
}

TEST_CASE("sqlite: reading a store that does not exist is an error, and creates nothing",
          "[audit][sqlite]") {
  const TempDir dir;
  auto opened = open_sqlite(dir.path() / "missing.db", OpenMode::read);
  REQUIRE(std::holds_alternative<std::string>(opened));
  CHECK(std::get<std::string>(opened).starts_with("cannot open " +
                                                  (dir.path() / "missing.db").string()));
  CHECK_FALSE(std::filesystem::exists(dir.path() / "missing.db"));
}

}  // namespace
}  // namespace codemode::audit
