#include <cstdlib>
#include <iostream>
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

// Waits for `condition`, checking every 10 ms, for at most `limit`.
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
  CHECK(report.first_break == "");
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
  CHECK(verify(*store).first_break ==
        "server web-1, record 4: its content does not match its hash (edited)");
  REQUIRE(pg->psql("DELETE FROM audit_records WHERE seq = 4"));
  CHECK(verify(*store).first_break == "server web-1, record 4 is missing (deleted)");
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
  CHECK(*stuck == "postgres: no answer within 1000 ms; the connection was closed");
  CHECK(took >= std::chrono::milliseconds(1000));
  CHECK(took < std::chrono::seconds(5));
  // Resumed, the old backend finds its client gone and rolls back; the store connects again.
  REQUIRE(eventually([&] {
    return !store->append("web-1", std::vector<Entry>{entry_of(make_call(2))}, now_us());
  }));
  CHECK(count_rows(*pg) == 2);
  CHECK(verify(*store).first_break == "");
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
  options.on_failure = config::Audit::OnFailure::fail_closed;
  options.last_retry = std::chrono::milliseconds(200);
  Writer writer(open_pg(*pg), options);

  // A call as the server makes one: only when the writer accepts it; an execute call records
  // two requests and itself.
  std::uint64_t accepted_records = 0;
  std::uint64_t refused_calls = 0;
  std::set<std::string> sent;
  auto call = [&](int i) {
    if (!writer.accepting()) {
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
  for (; i < 200000 && writer.accepting(); ++i) call(i);
  REQUIRE_FALSE(writer.accepting());
  const std::uint64_t refused_before = refused_calls;
  for (int k = 0; k < 100; ++k) call(i++);
  CHECK(refused_calls == refused_before + 100);
  REQUIRE(eventually([&] { return !writer.stats().store_up; }));
  CHECK(writer.stats().last_error.starts_with("postgres: "));

  REQUIRE(pg->restart());
  REQUIRE(eventually([&] { return writer.accepting(); }));
  REQUIRE(writer.flush(std::chrono::seconds(30)));
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
  CHECK(verify(*store).first_break == "");
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
    CHECK(writer.accepting());
    writer.record(make_call(i));
  }
  const std::uint64_t dropped = writer.stats().dropped;
  CHECK(dropped >= 1000 - options.queue);
  REQUIRE(pg->restart());
  REQUIRE(eventually([&] { return writer.stats().queued == 0; }));
  const Writer::Stats stats = writer.stats();
  writer.stop();
  CHECK(stats.written + stats.dropped == 1200);
  CHECK(count_rows(*pg) == stats.written);
  auto store = open_pg(*pg, OpenMode::read);
  CHECK(verify(*store).first_break == "");
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
  CHECK(report.first_break == "");
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
  CHECK(report.first_break == "");
  CHECK(report.records == 10000);
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
  CHECK(verify(*store).first_break == "");
}

}  // namespace
}  // namespace codemode::audit
