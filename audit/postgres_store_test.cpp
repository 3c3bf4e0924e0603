#include <cstdlib>
#include <iostream>
#include <random>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "audit/store.h"
#include "audit/test_postgres.h"
#include "audit/test_records.h"
#include "audit/writer.h"

namespace codemode::audit {
namespace {

using testing::entry_of;
using testing::make_call;
using testing::make_request;
using testing::take;
using testing::TestPostgres;

// A running PostgreSQL with PGPASSWORD set, or nullptr when PostgreSQL is not installed (the
// test then says so and passes; `scripts/setup --tests` installs it, so CI never gets here).
std::unique_ptr<TestPostgres> start_postgres() {
  auto started = TestPostgres::start();
  if (auto* failure = std::get_if<TestPostgres::Failure>(&started)) {
    if (failure->absent) {
      WARN("SKIPPED: " << failure->why);
      return nullptr;
    }
    FAIL("PostgreSQL did not start: " << failure->why);
  }
  auto pg = std::move(std::get<std::unique_ptr<TestPostgres>>(started));
  ::setenv("PGPASSWORD", pg->password().c_str(), 1);
  return pg;
}

std::unique_ptr<Store> open_pg(const TestPostgres& pg, OpenMode mode = OpenMode::write) {
  return take(open_postgres(pg.conninfo(), mode));
}

// Waits for `condition`, checking every 10 ms, for at most `limit`. Only for what nothing
// announces: the writer's finding that the store is down (Writer::stats().store_up) has no
// waiter, unlike its progress (Writer::flush).
template <typename F>
bool eventually(F condition, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

std::uint64_t count_rows(const TestPostgres& pg) {
  return std::stoull(pg.psql("SELECT count(*) FROM audit_records").value_or("0"));
}

std::uint64_t count_distinct_ids(const TestPostgres& pg) {
  return std::stoull(pg.psql("SELECT count(DISTINCT id) FROM audit_records").value_or("0"));
}

TEST_CASE("postgres: records land, chained, and queries read them back", "[audit][postgres]") {
  auto pg = start_postgres();
  if (!pg) return;
  auto store = open_pg(*pg);
  CHECK(store->describe() ==
        "PostgreSQL " + pg->conninfo().substr(5, pg->conninfo().find(' ') - 5) + ":5432/postgres");
  std::vector<Entry> batch;
  CallRecord call = make_call(1, "bob");
  RequestRecord request = make_request(1, call.id, "bob");
  request.path = "/products/1";
  request.time_us = call.time_us + 1;
  batch = {entry_of(request), entry_of(call), entry_of(make_call(2, "alice"))};
  REQUIRE(store->append("web-1", batch, now_us()) == std::nullopt);
  REQUIRE(store->append("web-2", std::vector<Entry>{entry_of(make_call(3))}, now_us()) ==
          std::nullopt);
  // A retried batch: nothing twice.
  REQUIRE(store->append("web-1", batch, now_us()) == std::nullopt);
  CHECK(count_rows(*pg) == 4);

  Query by_principal;
  by_principal.principal = "bob";
  const auto rows = take(store->query(by_principal));
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].summary.id == call.id);
  CHECK(rows[1].summary.id == request.id);
  CHECK(rows[1].json == canonical_json(request));
  Query by_path;
  by_path.path_prefix = "/products/";
  CHECK(take(store->query(by_path)).size() == 1);
  const auto heads = take(store->heads());
  REQUIRE(heads.size() == 2);
  CHECK(heads[0].last_seq == 3);
  const VerifyReport report = verify(*store);
  CHECK(report.breaks.empty());
  CHECK(report.records == 4);
}

TEST_CASE("postgres: verify finds an edited row", "[audit][postgres][chain]") {
  auto pg = start_postgres();
  if (!pg) return;
  auto store = open_pg(*pg);
  for (int i = 0; i < 10; ++i) {
    REQUIRE(store->append("web-1", std::vector<Entry>{entry_of(make_call(i))}, now_us()) ==
            std::nullopt);
  }
  CHECK(verify(*store).intact());
  REQUIRE(
      pg->psql("UPDATE audit_records SET json = replace(json, '\"ok\"', '\"policy\"') "
               "WHERE server = 'web-1' AND seq = 4"));
  CHECK(verify(*store).breaks ==
        std::vector<std::string>{
            "server web-1, record 4: its content does not match its hash (edited)"});
  REQUIRE(pg->psql("DELETE FROM audit_records WHERE seq = 4"));
  CHECK(verify(*store).breaks ==
        std::vector<std::string>{"server web-1, record 4 is missing (deleted)"});
}

// The same text as in SQLite (sqlite_store_test.cpp): PostgreSQL refuses a column that is not
// UTF-8 or holds a NUL, so the columns hold what the JSON holds, a NUL as U+FFFD.
TEST_CASE("postgres: text that is not UTF-8 or holds a NUL is stored as valid text and verifies",
          "[audit][postgres][chain]") {
  auto pg = start_postgres();
  if (!pg) return;
  auto store = open_pg(*pg);
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
  CHECK(rows[2].summary.path ==
        "http://evil.test/a\xef\xbf\xbd"
        "b");
  CHECK(Json::parse(rows[2].json)["path"] == std::string("http://evil.test/a\0b", 20));
  CHECK(rows[3].summary.principal ==
        "\xef\xbf\xbd"
        "alice");
  Query by_path;
  by_path.path_prefix = "http://evil.test/a";
  CHECK(take(store->query(by_path)).size() == 2);
}

// Issue 34 item 1: one record cut mid-character held PostgreSQL's trail down for good, and with
// fail_closed every later call of every principal was refused.
TEST_CASE("postgres: fail_closed: a record cut mid-character is stored and the trail goes on",
          "[audit][postgres][writer]") {
  auto pg = start_postgres();
  if (!pg) return;
  WriterOptions options;
  options.server = "web-1";
  options.on_failure = config::Audit::OnFailure::fail_closed;
  options.last_retry = std::chrono::milliseconds(100);
  Writer writer(open_pg(*pg), options);
  const CallRecord call = make_call(1, "alice");
  RequestRecord cut = make_request(1, call.id, "alice");
  cut.path = "http://evil.test/" + std::string(2030, 'a') + "\xc3";
  writer.record(cut);
  writer.record(call);
  REQUIRE(writer.flush(std::chrono::seconds(10)));
  writer.record(make_call(2, "bob"));
  REQUIRE(writer.flush(std::chrono::seconds(10)));
  CHECK(writer.stats().written == 3);
  CHECK(writer.stats().store_up);
  writer.stop();
  auto store = open_pg(*pg, OpenMode::read);
  CHECK(verify(*store).intact());
  CHECK(count_rows(*pg) == 3);
}

TEST_CASE("postgres: a server that stops answering is a store that is down, at the deadline",
          "[audit][postgres][writer]") {
  auto pg = start_postgres();
  if (!pg) return;
  auto store =
      take(open_postgres(pg->conninfo(), OpenMode::write, std::chrono::milliseconds(1000)));
  REQUIRE(store->append("web-1", std::vector<Entry>{entry_of(make_call(1))}, now_us()) ==
          std::nullopt);
  // The backend serving this store, stopped: its socket stays open and nothing answers.
  const std::string backend =
      pg->psql("SELECT pid FROM pg_stat_activity WHERE application_name = 'codemode-mcp'")
          .value_or("");
  REQUIRE_FALSE(backend.empty());
  REQUIRE(backend.find('\n') == std::string::npos);  // one connection: the store's
  REQUIRE(testing::run_command({"kill", "-STOP", backend}) == 0);
  const auto started = std::chrono::steady_clock::now();
  const auto stuck = store->append("web-1", std::vector<Entry>{entry_of(make_call(2))}, now_us());
  const auto took = std::chrono::steady_clock::now() - started;
  REQUIRE(testing::run_command({"kill", "-CONT", backend}) == 0);
  REQUIRE(stuck.has_value());
  CHECK(stuck->text == "postgres: no answer within 1000 ms; the connection was closed");
  CHECK(took >= std::chrono::milliseconds(1000));
  CHECK(took < std::chrono::seconds(5));
  // Resumed, the old backend finds its client gone and rolls back; the store connects again.
  // A try that meets the old backend's lock waits for it in PostgreSQL (for at most 1000 ms),
  // so the tries need no pause between them.
  const auto append_again = [&] {
    return store->append("web-1", std::vector<Entry>{entry_of(make_call(2))}, now_us());
  };
  auto again = append_again();
  for (int tries = 1; again && tries < 30; ++tries) again = append_again();
  INFO((again ? again->text : ""));
  REQUIRE_FALSE(again.has_value());
  CHECK(count_rows(*pg) == 2);
  CHECK(verify(*store).breaks.empty());
}

TEST_CASE("postgres: the password comes from the environment and is never shown",
          "[audit][postgres][secrets]") {
  auto pg = start_postgres();
  if (!pg) return;
  ::setenv("PGPASSWORD", "wrong-password-1234", 1);
  auto refused = open_postgres(pg->conninfo(), OpenMode::write);
  REQUIRE(std::holds_alternative<std::string>(refused));
  const std::string why = std::get<std::string>(refused);
  CHECK(why.starts_with("postgres: cannot connect: "));
  CHECK(why.find("wrong-password-1234") == std::string::npos);
  ::setenv("PGPASSWORD", pg->password().c_str(), 1);
  auto in_string = open_postgres(pg->conninfo() + " password=" + pg->password(), OpenMode::write);
  REQUIRE(std::holds_alternative<std::string>(in_string));
  CHECK(std::get<std::string>(in_string) ==
        "postgres: the connection string holds a password; give it in PGPASSWORD or ~/.pgpass");
  auto store = open_pg(*pg);
  CHECK(store->describe().find(pg->password()) == std::string::npos);
}

TEST_CASE("postgres: fail_closed refuses new calls while the store is down and loses nothing",
          "[audit][postgres][writer]") {
  auto pg = start_postgres();
  if (!pg) return;
  WriterOptions options;
  options.server = "web-1";
  options.queue = 1000;
  options.principal_share = 1000;  // one principal: only the store's state refuses its calls
  options.on_failure = config::Audit::OnFailure::fail_closed;
  options.last_retry = std::chrono::milliseconds(200);
  Writer writer(open_pg(*pg), options);

  // A call as the server makes one: only when the writer accepts it; an execute call records
  // two requests and itself.
  std::uint64_t accepted_records = 0;
  std::uint64_t refused_calls = 0;
  std::set<std::string> sent;
  auto call = [&](int i) {
    if (writer.admit("alice") != Admission::admitted) {
      ++refused_calls;
      return;
    }
    CallRecord c = make_call(i);
    for (int r = 0; r < 2; ++r) {
      RequestRecord request = make_request(i * 2 + r, c.id);
      sent.insert(request.id);
      writer.record(std::move(request));
    }
    sent.insert(c.id);
    writer.record(std::move(c));
    accepted_records += 3;
  };
  int i = 0;
  for (; i < 1000; ++i) call(i);
  REQUIRE(pg->crash());  // mid-load: some of those are still queued or in flight
  // Calls go on arriving; once the writer finds the store down, every one is refused.
  for (; i < 200000 && writer.admit("alice") == Admission::admitted; ++i) call(i);
  REQUIRE(writer.admit("alice") != Admission::admitted);
  const std::uint64_t refused_before = refused_calls;
  for (int k = 0; k < 100; ++k) call(i++);
  CHECK(refused_calls == refused_before + 100);
  REQUIRE(eventually([&] { return !writer.stats().store_up; }));
  CHECK(writer.stats().last_error.starts_with("postgres: "));

  REQUIRE(pg->restart());
  // The writer retries until the store takes what it holds; then calls are admitted again.
  REQUIRE(writer.flush(std::chrono::seconds(30)));
  CHECK(writer.admit("alice") == Admission::admitted);
  const Writer::Stats stats = writer.stats();
  CHECK(stats.dropped == 0);
  CHECK(stats.written == accepted_records);
  CHECK(stats.failures > 0);
  writer.stop();
  CHECK(count_rows(*pg) == accepted_records);
  CHECK(count_distinct_ids(*pg) == accepted_records);
  auto store = open_pg(*pg, OpenMode::read);
  std::set<std::string> stored;
  for (const auto& r : take(store->chain("web-1", 0, 1000000))) stored.insert(r.summary.id);
  CHECK(stored == sent);
  CHECK(verify(*store).breaks.empty());
}

TEST_CASE("postgres: with drop, calls go on while the store is down and drops are counted",
          "[audit][postgres][writer]") {
  auto pg = start_postgres();
  if (!pg) return;
  WriterOptions options;
  options.server = "web-1";
  options.queue = 100;
  options.batch = 50;
  options.on_failure = config::Audit::OnFailure::drop;
  options.last_retry = std::chrono::milliseconds(200);
  Writer writer(open_pg(*pg), options);
  for (int i = 0; i < 200; ++i) writer.record(make_call(i));
  REQUIRE(writer.flush(std::chrono::seconds(30)));
  REQUIRE(pg->crash());
  // The writer finds out with the next batch.
  writer.record(make_call(200));
  REQUIRE(eventually([&] { return !writer.stats().store_up; }));
  for (int i = 201; i < 1200; ++i) {
    CHECK(writer.admit("alice") == Admission::admitted);
    writer.record(make_call(i));
  }
  const std::uint64_t dropped = writer.stats().dropped;
  CHECK(dropped >= 1000 - options.queue);
  REQUIRE(pg->restart());
  REQUIRE(writer.flush(std::chrono::seconds(30)));
  CHECK(writer.stats().queued == 0);
  const Writer::Stats stats = writer.stats();
  writer.stop();
  CHECK(stats.written + stats.dropped == 1200);
  CHECK(count_rows(*pg) == stats.written);
  auto store = open_pg(*pg, OpenMode::read);
  CHECK(verify(*store).breaks.empty());
}

TEST_CASE("postgres: servers of a fleet writing at once each keep one unbroken chain",
          "[audit][postgres][chain]") {
  auto pg = start_postgres();
  if (!pg) return;
  std::vector<std::unique_ptr<Writer>> writers;
  for (const char* name : {"web-1", "web-2", "web-2"}) {  // two processes share one name
    WriterOptions options;
    options.server = name;
    options.batch = 16;
    writers.push_back(std::make_unique<Writer>(open_pg(*pg), options));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (auto& writer : writers) {
    threads.emplace_back([&writer] {
      for (int i = 0; i < 500; ++i) writer->record(make_call(i));
    });
  }
  for (auto& t : threads) t.join();
  for (auto& writer : writers) writer->stop();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  std::cerr << "audit: 1,500 records from three writers (two sharing one chain) in PostgreSQL in "
            << ms << " ms (" << 1500 * 1000 / std::max<long long>(1, ms) << " records/s)\n";
  auto store = open_pg(*pg, OpenMode::read);
  const VerifyReport report = verify(*store);
  CHECK(report.breaks.empty());
  CHECK(report.records == 1500);
  REQUIRE(report.chains.size() == 2);
  CHECK(report.chains[1].last_seq == 1000);
}

TEST_CASE("postgres: 10,000 mixed records through the writer, each stored once",
          "[audit][postgres][writer]") {
  auto pg = start_postgres();
  if (!pg) return;
  WriterOptions options;
  options.server = "web-1";
  options.queue = 100000;
  Writer writer(open_pg(*pg), options);
  std::set<std::string> sent;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 2000; ++i) {
    CallRecord call = make_call(i);
    for (int r = 0; r < 4; ++r) {
      RequestRecord request = make_request(i * 4 + r, call.id);
      sent.insert(request.id);
      writer.record(std::move(request));
    }
    sent.insert(call.id);
    writer.record(std::move(call));
  }
  REQUIRE(writer.flush(std::chrono::seconds(60)));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  std::cerr << "audit: 10,000 records in PostgreSQL after " << ms << " ms ("
            << 10000 * 1000 / std::max<long long>(1, ms) << " records/s)\n";
  writer.stop();
  CHECK(writer.stats().written == 10000);
  CHECK(count_rows(*pg) == 10000);
  CHECK(count_distinct_ids(*pg) == 10000);
  auto store = open_pg(*pg, OpenMode::read);
  std::set<std::string> stored;
  for (const auto& r : take(store->chain("web-1", 0, 100000))) stored.insert(r.summary.id);
  CHECK(stored == sent);
  const VerifyReport report = verify(*store);
  CHECK(report.breaks.empty());
  CHECK(report.records == 10000);
}

// A record PostgreSQL refuses for what it holds, whatever is done to its text first: a principal
// of 8,000 random hex digits makes an index entry past btree's 2,704 bytes (SQLSTATE 54000). The
// writer finds it in its batch, stores it escaped and cut, and the records around it as they came.
TEST_CASE("postgres: a record refused as input is stored escaped, and the others go on",
          "[audit][postgres][writer]") {
  auto pg = start_postgres();
  if (!pg) return;
  WriterOptions options;
  options.server = "web-1";
  options.on_failure = config::Audit::OnFailure::fail_closed;
  options.last_retry = std::chrono::milliseconds(100);
  Writer writer(open_pg(*pg), options);
  std::mt19937 random(54);
  std::string huge;
  while (huge.size() < 8000) huge += "0123456789abcdef"[random() % 16];
  std::vector<std::string> sent;
  for (int i = 0; i < 9; ++i) {
    CallRecord call = make_call(i, i == 4 ? huge : "alice");
    sent.push_back(call.id);
    writer.record(std::move(call));
  }
  REQUIRE(writer.flush(std::chrono::seconds(30)));
  const Writer::Stats stats = writer.stats();
  CHECK(stats.written == 9);
  CHECK(stats.escaped == 1);
  CHECK(stats.refused == 0);
  CHECK(stats.store_up);
  CHECK(writer.admit("alice") == Admission::admitted);
  writer.stop();
  auto store = open_pg(*pg, OpenMode::read);
  const auto rows = take(store->chain("web-1", 0, 100));
  REQUIRE(rows.size() == 9);
  for (std::size_t i = 0; i < rows.size(); ++i) CHECK(rows[i].summary.id == sent[i]);
  const Json replaced = Json::parse(rows[4].json);
  CHECK(replaced["escaped"] == true);
  CHECK(replaced["principal"] == huge.substr(0, kEscapedFieldBytes) + "...(7488 more bytes)");
  CHECK_FALSE(Json::parse(rows[3].json).contains("escaped"));
  CHECK(verify(*store).intact());
}

TEST_CASE("postgres: a column holding a NUL is stored as valid text, not cut where a C string ends",
          "[audit][postgres]") {
  auto pg = start_postgres();
  if (!pg) return;
  auto store = open_pg(*pg);
  Entry entry = entry_of(make_call(1));
  entry.summary.principal = std::string("al\0ice", 6);  // what columns() makes valid text
  REQUIRE_FALSE(store->append("web-1", std::vector<Entry>{entry}, now_us()));
  CHECK(pg->psql("SELECT principal FROM audit_records") ==
        "al\xef\xbf\xbd"
        "ice");
}

TEST_CASE("postgres: verify goes on past a break and names every one", "[audit][postgres][chain]") {
  auto pg = start_postgres();
  if (!pg) return;
  auto store = open_pg(*pg);
  for (int i = 0; i < 10; ++i) {
    REQUIRE_FALSE(store->append("web-1", std::vector<Entry>{entry_of(make_call(i))}, now_us()));
  }
  REQUIRE(
      pg->psql("UPDATE audit_records SET path = 'x' WHERE seq = 2; "
               "UPDATE audit_records SET json = replace(json, 'alice', 'bob') WHERE seq = 8; "
               "DELETE FROM audit_records WHERE seq = 9"));
  const VerifyReport report = verify(*store);
  CHECK(report.breaks ==
        std::vector<std::string>{
            "server web-1, record 2: its indexed columns do not match its content (edited)",
            "server web-1, record 8: its content does not match its hash (edited)",
            "server web-1, record 9 is missing (deleted)"});
  CHECK(report.break_count == 3);
  CHECK(report.records == 9);
}

TEST_CASE("postgres: retention by age trims a prefix and the chain still verifies",
          "[audit][postgres][retention]") {
  auto pg = start_postgres();
  if (!pg) return;
  auto store = open_pg(*pg);
  const std::int64_t day = 86400LL * 1000000;
  const std::int64_t now = now_us();
  for (int i = 0; i < 5; ++i) {
    REQUIRE(store->append("web-1", std::vector<Entry>{entry_of(make_call(i))},
                          now - (i < 3 ? 100 : 1) * day) == std::nullopt);
  }
  CHECK(take(store->trim(Retention{30, 0}, now)) == 3);
  const auto heads = take(store->heads());
  CHECK(heads[0].first_seq == 4);
  const VerifyReport report = verify(*store);
  CHECK(report.breaks.empty());
  REQUIRE(report.removals.size() == 1);
  const Removal& removal = report.removals[0];
  CHECK(removal.first_seq == 1);
  CHECK(removal.last_seq == 3);
  CHECK(removal.last_hash == heads[0].first_prev_hash);
  CHECK(removal.reason == "max_age_days");
  CHECK(removal.removed_us == now);
  CHECK(removal.oldest_us > 0);
  CHECK(removal.newest_us >= removal.oldest_us);
  // Records taken off the front with the head moved to match, and no removal recorded: found.
  REQUIRE(
      pg->psql("DELETE FROM audit_records WHERE seq = 4; UPDATE audit_chains SET "
               "first_seq = 5, first_prev_hash = (SELECT prev_hash FROM audit_records "
               "WHERE seq = 5)"));
  CHECK(verify(*store).breaks ==
        std::vector<std::string>{"server web-1: records 4..4 are gone from the chain's front, and "
                                 "no removal by retention is recorded (deleted)"});
}

}  // namespace
}  // namespace codemode::audit
