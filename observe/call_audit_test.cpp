#include "observe/call_audit.h"

#include <sqlite3.h>

#include <chrono>
#include <random>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include "sandbox/test_child.h"

#include "mcp/mcp_session.h"

using namespace codemode;
using namespace codemode::server;

namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::random_device random;
    path_ = fs::temp_directory_path() /
            ("codemode-call-audit-" + std::to_string(random()) + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void sql(const fs::path& file, const char* text) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  const int status = sqlite3_exec(db, text, nullptr, nullptr, nullptr);
  sqlite3_close(db);
  REQUIRE(status == SQLITE_OK);
}

std::unique_ptr<audit::Writer> writer_on(const fs::path& file, config::Audit::OnFailure mode,
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

// A session recording into `trail`, every outgoing message collected.
struct Harness {
  boost::asio::io_context io;
  ToolCatalog tools{ApiSummary{"Search.", "Call."}, config::Limits{}};
  sandbox::Sandbox sandbox{sandbox::test_sandbox_options()};
  gateway::UrlPolicy urls{std::vector<config::Upstream>{}};
  std::unique_ptr<audit::Writer> writer;
  std::optional<CallAudit> trail;
  std::vector<Json> sent;
  std::shared_ptr<McpSession> session;

  explicit Harness(std::unique_ptr<audit::Writer> w) : writer(std::move(w)) {
    trail.emplace(*writer, gateway::OperationPolicy(), urls);
    session = std::make_shared<McpSession>(
        io.get_executor(), tools, sandbox, ServerInfo{"codemode-mcp", "9.9.9", ""},
        [this](std::string message) { sent.push_back(Json::parse(message)); }, "alice", 0,
        SessionAudit{&*trail, "stdio"});
    send(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":)"
         R"("2025-11-25","capabilities":{},"clientInfo":{"name":"unit-client","version":"3"}}})");
  }
  void send(std::string_view message) {
    session->handle(message);
    auto work = boost::asio::make_work_guard(io);
    bool idle = false;
    session->when_idle([&] { idle = true; });
    io.restart();
    while (!idle) io.run_one();
    work.reset();
    io.poll();
  }
  void call(int id, std::string_view code, std::string_view meta = "{}") {
    send(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"search","_meta":)" + std::string(meta) +
         R"(,"arguments":{"code":")" + std::string(code) + R"("}}})");
  }
};

std::vector<Json> calls_in(const fs::path& file) {
  auto store = audit::open_sqlite(file, audit::OpenMode::read);
  REQUIRE(std::holds_alternative<std::unique_ptr<audit::Store>>(store));
  auto rows = std::get<std::unique_ptr<audit::Store>>(store)->query(audit::Query{});
  REQUIRE(std::holds_alternative<std::vector<audit::StoredRecord>>(rows));
  std::vector<Json> out;
  for (const auto& r : std::get<std::vector<audit::StoredRecord>>(rows)) {
    out.push_back(Json::parse(r.json));
  }
  return out;
}

}  // namespace

// What a traceparent is, and which are refused: tracing_test.cpp ([server][tracing]).
TEST_CASE("session names are distinct", "[server][audit]") {
  CHECK(CallAudit::session_name("http") != CallAudit::session_name("http"));
}

TEST_CASE("each tools/call leaves one record with its session's facts", "[server][audit]") {
  TempDir dir;
  const fs::path file = dir.path() / "audit.db";
  {
    Harness h(writer_on(file, config::Audit::OnFailure::drop));
    h.call(1, "async () => 'x'.repeat(20000)",
           R"({"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})");
    h.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search",)"
           R"("arguments":{}}})");
    h.send(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope",)"
           R"("arguments":{}}})");  // a protocol error, no call
    REQUIRE(h.writer->flush(std::chrono::seconds(10)));
  }
  const std::vector<Json> records = calls_in(file);
  REQUIRE(records.size() == 2);
  const Json& first = records[0];
  CHECK(first["kind"] == "call");
  CHECK(first["principal"] == "alice");
  CHECK(first["client_name"] == "unit-client");
  CHECK(first["client_version"] == "3");
  CHECK(first["transport"] == "stdio");
  CHECK(first["session"].get<std::string>().starts_with("stdio-"));
  CHECK(first["tool"] == "search");
  CHECK(first["code"] == "async () => 'x'.repeat(20000)");
  CHECK(first["code_sha256"] == audit::sha256_hex("async () => 'x'.repeat(20000)"));
  CHECK(first["outcome"] == "ok");
  // The sandbox serialises within result_chars (12,000): the record counts what came back.
  CHECK(first["result_chars"].get<std::size_t>() <= 12000);
  CHECK(first["result_cut"] == true);
  CHECK(first["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(records[1]["outcome"] == "input");
  CHECK(records[1]["code"] == "");
  CHECK(records[1]["session"] == first["session"]);
}

TEST_CASE("fail_closed: while the store refuses writes, new calls are refused, none is lost",
          "[server][audit]") {
  TempDir dir;
  const fs::path file = dir.path() / "audit.db";
  Harness h(writer_on(file, config::Audit::OnFailure::fail_closed));
  h.call(1, "async () => 1");
  REQUIRE(h.writer->flush(std::chrono::seconds(10)));
  // The store goes down: SQLite itself refuses every insert.
  sql(file,
      "CREATE TRIGGER down BEFORE INSERT ON audit_records BEGIN SELECT RAISE(FAIL, 'down'); END");
  h.call(2, "async () => 2");  // accepted: the writer has not failed yet
  CHECK(h.sent.back()["result"]["structuredContent"]["result"] == 2);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!h.trail->refusal("alice") && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE_FALSE(!h.trail->refusal("alice"));
  h.call(3, "async () => 3");
  CHECK(h.sent.back()["error"]["code"] == -32002);
  CHECK(h.sent.back()["error"]["message"] ==
        "unavailable: the audit trail cannot record calls now (its store is down); retry later");
  sql(file, "DROP TRIGGER down");
  REQUIRE(h.writer->flush(std::chrono::seconds(10)));
  CHECK(!h.trail->refusal("alice"));
  h.call(4, "async () => 4");
  REQUIRE(h.writer->flush(std::chrono::seconds(10)));
  const std::vector<Json> records = calls_in(file);
  REQUIRE(records.size() == 3);  // calls 1, 2 and 4; 3 never ran
  CHECK(records[1]["code"] == "async () => 2");
  CHECK(records[2]["code"] == "async () => 4");
  CHECK(h.writer->stats().dropped == 0);
}

// Issue 34 item 1: a refused URL was cut at byte 2,048 whatever it held there, and a character
// cut in two made PostgreSQL refuse the record (and SQLite's verify call it edited).
TEST_CASE("a refused URL is recorded cut on a character boundary", "[server][audit]") {
  TempDir dir;
  const fs::path file = dir.path() / "audit.db";
  auto writer = writer_on(file, config::Audit::OnFailure::fail_closed);
  const gateway::UrlPolicy urls{std::vector<config::Upstream>{}};  // every URL refused
  CallAudit trail(*writer, gateway::OperationPolicy(), urls);
  const std::string prefix = "http://evil.test/" + std::string(2047 - 17, 'a');
  ObservedFetch fetch;
  fetch.method = "get";
  fetch.url = prefix + "\xc3\xa9" + "tail";  // é on bytes 2,047 and 2,048
  trail.on_answer(ObservedCall{"0123456789abcdef0123456789abcdef", "alice", "", ""}, fetch,
                  gateway::GatewayError{gateway::ErrorKind::policy, "origin not allowed"});
  REQUIRE(writer->flush(std::chrono::seconds(10)));
  CHECK(writer->stats().replaced == 0);
  const std::vector<Json> records = calls_in(file);
  REQUIRE(records.size() == 1);
  CHECK(records[0]["path"] == prefix);
  CHECK(records[0]["method"] == "GET");
  CHECK(records[0]["refusal"] == "policy: origin not allowed");
}

// Issue 34 item 3: code that loops over refused requests leaves one record for the bound the
// gateway puts on them, not one per fetch.
TEST_CASE("refusals repeated past a call's bound leave no record each", "[server][audit]") {
  TempDir dir;
  const fs::path file = dir.path() / "audit.db";
  auto writer = writer_on(file, config::Audit::OnFailure::fail_closed);
  const gateway::UrlPolicy urls{std::vector<config::Upstream>{}};
  CallAudit trail(*writer, gateway::OperationPolicy(), urls);
  ObservedFetch fetch;
  fetch.method = "GET";
  fetch.url = "http://evil.test/";
  const ObservedCall call{"0123456789abcdef0123456789abcdef", "alice", "", ""};
  gateway::GatewayError bound{gateway::ErrorKind::policy, "subrequest limit reached"};
  trail.on_answer(call, fetch, bound);
  bound.repeated = true;
  for (int i = 0; i < 1000; ++i) trail.on_answer(call, fetch, bound);
  REQUIRE(writer->flush(std::chrono::seconds(10)));
  const std::vector<Json> records = calls_in(file);
  REQUIRE(records.size() == 1);
  CHECK(records[0]["refusal"] == "policy: subrequest limit reached");
}

// Issue 34 item 3: the refusal says which bound a call met, and only the principal whose share
// is full meets that one.
TEST_CASE("fail_closed: a principal holding its share of the queue gets its own refusal",
          "[server][audit]") {
  TempDir dir;
  const fs::path file = dir.path() / "audit.db";
  Harness h(writer_on(file, config::Audit::OnFailure::fail_closed, 10));  // a share of 1
  {
    // The store is slow (another connection holds the write lock): alice's record waits.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(file.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
    h.call(1, "async () => 1");
    CHECK(h.sent.back()["result"]["structuredContent"]["result"] == 1);
    INFO("failures so far: " << h.writer->stats().failures);
    h.call(2, "async () => 2");
    CHECK(h.sent.back()["error"]["code"] == -32002);
    CHECK(h.sent.back()["error"]["message"] ==
          "unavailable: the audit trail cannot record calls now (this principal's share of its "
          "queue is full); retry later");
    CHECK_FALSE(h.trail->refusal("bob").has_value());
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  REQUIRE(h.writer->flush(std::chrono::seconds(10)));
  CHECK_FALSE(h.trail->refusal("alice").has_value());
  h.call(3, "async () => 3");
  CHECK(h.sent.back()["result"]["structuredContent"]["result"] == 3);
}
