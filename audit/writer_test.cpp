#include "audit/writer.h"

#include <sqlite3.h>

#include <chrono>
#include <iostream>
#include <set>
#include <thread>

#include <catch2/catch.hpp>

#include "audit/test_records.h"

namespace codemode::audit {
namespace {

using testing::make_call;
using testing::make_request;
using testing::take;
using testing::TempDir;

WriterOptions options_for(std::string server, std::size_t batch = 512, Retention retention = {}) {
  WriterOptions options;
  options.server = std::move(server);
  options.batch = batch;
  options.retention = retention;
  return options;
}

// Every record of every chain, checked to hold each id once.
std::set<std::string> stored_ids(Store& store) {
  std::set<std::string> ids;
  std::size_t rows = 0;
  for (const ChainHead& head : take(store.heads())) {
    std::uint64_t after = head.first_seq - 1;
    while (true) {
      const auto page = take(store.chain(head.server, after, 5000));
      for (const StoredRecord& r : page) ids.insert(r.summary.id);
      rows += page.size();
      if (page.size() < 5000) break;
      after = page.back().seq;
    }
  }
  CHECK(rows == ids.size());
  return ids;
}

TEST_CASE("writer on sqlite: 10,000 mixed records from two threads, each stored once",
          "[audit][writer][sqlite]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  WriterOptions options;
  options.server = "web-1";
  options.queue = 100000;
  Writer writer(take(open_sqlite(file, OpenMode::write)), options);
  std::vector<std::string> sent[2];
  const auto start = std::chrono::steady_clock::now();
  auto produce = [&writer](std::vector<std::string>& ids, int from) {
    // 1,000 execute calls with 4 requests each: 5,000 records a thread.
    for (int i = from; i < from + 1000; ++i) {
      CallRecord call = make_call(i);
      for (int r = 0; r < 4; ++r) {
        RequestRecord request = make_request(i * 4 + r, call.id);
        ids.push_back(request.id);
        writer.record(std::move(request));
      }
      ids.push_back(call.id);
      writer.record(std::move(call));
    }
  };
  std::thread a([&] { produce(sent[0], 0); });
  std::thread b([&] { produce(sent[1], 1000); });
  a.join();
  b.join();
  const auto queued = std::chrono::steady_clock::now();
  REQUIRE(writer.flush(std::chrono::seconds(60)));
  const auto written = std::chrono::steady_clock::now();
  const auto ms = [](auto d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  std::cerr << "audit: 10,000 records queued in " << ms(queued - start)
            << " ms by two threads, all in SQLite after " << ms(written - start) << " ms ("
            << 10000 * 1000 / std::max<long long>(1, ms(written - start)) << " records/s)\n";
  const Writer::Stats stats = writer.stats();
  CHECK(stats.written == 10000);
  CHECK(stats.dropped == 0);
  CHECK(stats.queued == 0);
  writer.stop();

  auto store = take(open_sqlite(file, OpenMode::read));
  std::set<std::string> expected(sent[0].begin(), sent[0].end());
  expected.insert(sent[1].begin(), sent[1].end());
  REQUIRE(expected.size() == 10000);
  CHECK(stored_ids(*store) == expected);
  Query calls;
  calls.kind = "call";
  calls.limit = 100000;
  CHECK(take(store->query(calls)).size() == 2000);
  const VerifyReport report = verify(*store);
  CHECK(report.breaks.empty());
  CHECK(report.records == 10000);
}

TEST_CASE("writer: stop writes what is queued, and a call record gets its code's hash",
          "[audit][writer][sqlite]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  std::string id;
  {
    Writer writer(take(open_sqlite(file, OpenMode::write)), options_for("s"));
    CHECK(writer.admit("alice") == Admission::admitted);
    for (int i = 0; i < 300; ++i) {
      CallRecord call = make_call(i);
      call.code_sha256.clear();
      if (i == 0) {
        call.id.clear();  // the writer names it
        call.code = "abc";
      }
      writer.record(std::move(call));
    }
    writer.stop();
    CHECK(writer.stats().written == 300);
    writer.record(make_call(1));  // after stop: counted, not written
    CHECK(writer.stats().dropped == 1);
  }
  auto store = take(open_sqlite(file, OpenMode::read));
  const auto first = take(store->chain("s", 0, 1));
  REQUIRE(first.size() == 1);
  CHECK(first[0].summary.id.size() == 32);
  CHECK(Json::parse(first[0].json)["code_sha256"] ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(take(store->chain("s", 0, 1000)).size() == 300);
}

TEST_CASE("writer: two processes' writers under one server name make one chain",
          "[audit][writer][sqlite][chain]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  {
    Writer a(take(open_sqlite(file, OpenMode::write)), options_for("s", 7));
    Writer b(take(open_sqlite(file, OpenMode::write)), options_for("s", 5));
    for (int i = 0; i < 500; ++i) {
      a.record(make_call(i));
      b.record(make_call(i));
    }
    a.stop();
    b.stop();
  }
  auto store = take(open_sqlite(file, OpenMode::read));
  const VerifyReport report = verify(*store);
  CHECK(report.breaks.empty());
  CHECK(report.records == 1000);
}

TEST_CASE("writer: retention runs on the writer's thread", "[audit][writer][retention]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  {
    auto store = take(open_sqlite(file, OpenMode::write));
    const std::vector<Entry> old = {testing::entry_of(make_call(1)),
                                    testing::entry_of(make_call(2))};
    REQUIRE(store->append("s", old, now_us() - 10LL * 86400 * 1000000) == std::nullopt);
  }
  Writer writer(take(open_sqlite(file, OpenMode::write)), options_for("s", 512, Retention{1, 0}));
  writer.record(make_call(3));
  REQUIRE(writer.flush(std::chrono::seconds(10)));
  writer.stop();
  CHECK(writer.stats().trimmed == 2);
  auto store = take(open_sqlite(file, OpenMode::read));
  CHECK(take(store->chain("s", 0, 10)).size() == 1);
  CHECK(verify(*store).intact());
}

// The writer's store, held up: another connection holds SQLite's write lock, so the writer's
// batch waits (and, after busy_timeout, fails) and what is queued stays queued.
class HeldLock {
 public:
  explicit HeldLock(const std::filesystem::path& file) {
    REQUIRE(sqlite3_open(file.c_str(), &db_) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db_, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
  }
  ~HeldLock() { release(); }
  void release() {
    if (!db_) return;
    sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
    db_ = nullptr;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Issue 34 item 3: one principal filled the whole queue, and everyone else's records were
// dropped. Each principal now has a share of the queue (a tenth by default).
TEST_CASE("writer (drop): a principal's records beyond its share are dropped, not others'",
          "[audit][writer][sqlite]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  WriterOptions options = options_for("s");
  options.queue = 100;  // a share of 10
  options.on_failure = config::Audit::OnFailure::drop;
  options.last_retry = std::chrono::milliseconds(50);
  Writer writer(take(open_sqlite(file, OpenMode::write)), options);
  HeldLock lock(file);
  for (int i = 0; i < 200; ++i) writer.record(make_request(i, "call", "mallory"));
  CHECK(writer.stats().dropped == 190);
  std::set<std::string> sent;
  for (int i = 0; i < 10; ++i) {
    CallRecord call = make_call(i, "bob");
    sent.insert(call.id);
    writer.record(std::move(call));
  }
  CHECK(writer.stats().dropped == 190);
  lock.release();
  REQUIRE(writer.flush(std::chrono::seconds(30)));
  writer.stop();
  CHECK(writer.stats().written == 20);
  auto store = take(open_sqlite(file, OpenMode::read));
  Query bob;
  bob.principal = "bob";
  std::set<std::string> stored;
  for (const auto& r : take(store->query(bob))) stored.insert(r.summary.id);
  CHECK(stored == sent);
  CHECK(verify(*store).intact());
}

// Issue 34 item 3: in fail_closed, one principal's records (all of calls already admitted) made
// the queue "full", and everyone's calls were refused as if the store were down. The queue
// counts each principal's records up to its share; past it, only that principal is refused.
TEST_CASE("writer (fail_closed): a principal holding its share is refused, the others admitted",
          "[audit][writer][sqlite]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  WriterOptions options = options_for("s");
  options.queue = 100;  // a share of 10
  options.on_failure = config::Audit::OnFailure::fail_closed;
  options.last_retry = std::chrono::milliseconds(50);
  Writer writer(take(open_sqlite(file, OpenMode::write)), options);
  CHECK(writer.admit("mallory") == Admission::admitted);
  {
    // The store is up but slow: the writer's first batch waits for the lock (busy_timeout, 5 s),
    // and mallory's admitted call makes 150 records meanwhile; none is dropped.
    HeldLock lock(file);
    for (int i = 0; i < 150; ++i) writer.record(make_request(i, "call", "mallory"));
    INFO("failures so far: " << writer.stats().failures);
    CHECK(writer.admit("mallory") == Admission::share_full);
    CHECK(writer.admit("bob") == Admission::admitted);
  }
  REQUIRE(writer.flush(std::chrono::seconds(30)));
  CHECK(writer.admit("mallory") == Admission::admitted);
  writer.stop();
  CHECK(writer.stats().written == 150);
  CHECK(writer.stats().dropped == 0);
}

TEST_CASE("writer: text that is not UTF-8 is replaced and counted, and the chain verifies",
          "[audit][writer][sqlite]") {
  const TempDir dir;
  const auto file = dir.path() / "audit.db";
  Writer writer(take(open_sqlite(file, OpenMode::write)), options_for("s"));
  CallRecord call = make_call(1);
  call.client_name = "bad \xff name";
  call.code = "async () => '\xc3'";
  call.code_sha256.clear();
  writer.record(call);
  writer.record(make_call(2));
  REQUIRE(writer.flush(std::chrono::seconds(10)));
  writer.stop();
  CHECK(writer.stats().replaced == 1);
  CHECK(writer.stats().written == 2);
  auto store = take(open_sqlite(file, OpenMode::read));
  const auto rows = take(store->chain("s", 0, 10));
  REQUIRE(rows.size() == 2);
  const Json first = Json::parse(rows[0].json);
  CHECK(first["client_name"] == "bad \xef\xbf\xbd name");
  CHECK(first["code_sha256"] == sha256_hex(call.code));  // of the bytes that came
  CHECK(verify(*store).intact());
}

}  // namespace
}  // namespace codemode::audit
