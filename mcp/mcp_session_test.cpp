#include "mcp/mcp_session.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <thread>

#include "observe/call_audit.h"
#include "observe/test_audit.h"
#include "sandbox/test_child.h"

using namespace codemode;
using namespace codemode::server;
using namespace codemode::server::testing;

namespace {

// A session wired to a real sandbox, with every outgoing message collected in order. Given an
// audit writer, the session is alice's and records her calls in its trail ([server][audit]).
struct Harness {
  boost::asio::io_context io;
  ToolCatalog tools{ApiSummary{"Search the Test API.", "Call the Test API."}, config::Limits{}};
  sandbox::Sandbox sandbox{sandbox::test_sandbox_options()};
  gateway::UrlPolicy urls{std::vector<config::Upstream>{}};
  std::unique_ptr<audit::Writer> writer;
  std::optional<CallAudit> trail;
  std::vector<Json> sent;
  std::shared_ptr<McpSession> session;

  Harness() : Harness(nullptr) {}
  explicit Harness(std::unique_ptr<audit::Writer> audit_writer) : writer(std::move(audit_writer)) {
    if (writer) trail.emplace(*writer, gateway::OperationPolicy(), urls);
    session = std::make_shared<McpSession>(
        io.get_executor(), tools, sandbox, ServerInfo{"codemode-mcp", "9.9.9", ""},
        [this](const std::string& message) { sent.push_back(Json::parse(message)); },
        writer ? "alice" : "", 0, writer ? SessionAudit{&*trail, "stdio"} : SessionAudit{});
  }

  // Feeds a message and runs the io_context until every call in flight is answered.
  void send(std::string_view message) {
    session->handle(message);
    settle();
  }
  void settle() {
    // The work guard keeps run_one() waiting for completions the Sandbox posts from its thread.
    auto work = boost::asio::make_work_guard(io);
    bool idle = false;
    session->when_idle([&] { idle = true; });
    io.restart();
    while (!idle) io.run_one();
    work.reset();
    io.poll();
  }
  void initialize(std::string_view version = "2025-11-25") {
    send(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")" +
         std::string(version) + R"(","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  }
  // A tools/call of search with `code` (no quotes or backslashes in it) and `meta` as its _meta.
  void call(int id, std::string_view code, std::string_view meta = "{}") {
    send(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":"search","_meta":)" + std::string(meta) +
         R"(,"arguments":{"code":")" + std::string(code) + R"("}}})");
  }
};

}  // namespace

TEST_CASE("initialize negotiates a version we speak", "[server][session]") {
  for (std::string_view version : kProtocolVersions) {
    Harness h;
    h.initialize(version);
    REQUIRE(h.sent.size() == 1);
    CHECK(h.sent[0]["result"]["protocolVersion"] == version);
    CHECK(h.sent[0]["result"]["capabilities"]["tools"].is_object());
    CHECK(h.sent[0]["result"]["serverInfo"]["version"] == "9.9.9");
  }
  Harness h;
  h.initialize("2024-11-05");
  CHECK(h.sent[0]["result"]["protocolVersion"] == "2025-11-25");
}

TEST_CASE("requests before initialize are refused, except ping", "[server][session]") {
  Harness h;
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  h.send(R"({"jsonrpc":"2.0","id":2,"method":"ping"})");
  REQUIRE(h.sent.size() == 2);
  CHECK(h.sent[0]["error"]["code"] == -32600);
  CHECK(h.sent[1]["result"] == Json::object());
}

TEST_CASE("initialize needs a protocolVersion and comes once", "[server][session]") {
  Harness h;
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
  CHECK(h.sent.back()["error"]["code"] == -32602);
  h.initialize();
  h.initialize();
  CHECK(h.sent.back()["error"]["code"] == -32600);
}

TEST_CASE("tools/list and unknown methods", "[server][session]") {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  h.send(R"({"jsonrpc":"2.0","id":"l","method":"tools/list"})");
  h.send(R"({"jsonrpc":"2.0","id":3,"method":"resources/list"})");
  REQUIRE(h.sent.size() == 3);  // notifications get no answer
  CHECK(h.sent[1]["id"] == "l");
  CHECK(h.sent[1]["result"]["tools"].size() == 2);
  CHECK(h.sent[2]["error"]["code"] == -32601);
  CHECK(h.sent[2]["error"]["message"] == "method not found: resources/list");
}

TEST_CASE("tools/call: protocol errors and input errors", "[server][session]") {
  Harness h;
  h.initialize();
  h.send(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}})");
  CHECK(h.sent.back()["error"]["code"] == -32602);
  CHECK(h.sent.back()["error"]["message"] == "invalid params: unknown tool nope");

  h.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{}})");
  CHECK(h.sent.back()["error"]["code"] == -32602);

  h.send(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"code":5}}})");
  CHECK(h.sent.back()["result"]["isError"] == true);
  CHECK(h.sent.back()["result"]["structuredContent"]["error"]["type"] == "input");

  const std::string long_code(20001, 'x');
  h.send(
      R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search","arguments":{"code":")" +
      long_code + R"("}}})");
  CHECK(h.sent.back()["result"]["content"][0]["text"] ==
        "input: code is 20001 characters; the limit is 20000");
}

TEST_CASE("tools/call reaches the sandbox and answers with its outcome", "[server][session]") {
  Harness h;
  h.initialize();
  h.send(
      R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"code":"async () => 1"}}})");
  REQUIRE(h.sent.size() == 2);
  CHECK(h.sent[1]["id"] == 5);
  CHECK(h.sent[1]["result"]["content"][0]["text"].is_string());
}

TEST_CASE("a cancelled call sends no result", "[server][session]") {
  Harness h;
  h.initialize();
  h.session->handle(
      R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search","arguments":{"code":"async () => 1"}}})");
  // The completion is posted to the io_context, which has not run yet: the cancel comes first.
  h.session->handle(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6,"reason":"user"}})");
  h.settle();
  REQUIRE(h.sent.size() == 1);
  CHECK(h.session->in_flight() == 0);
}

TEST_CASE("an oversize message is answered with an error and a null id", "[server][session]") {
  Harness h;
  h.session->reject_oversize(1024);
  REQUIRE(h.sent.size() == 1);
  CHECK(h.sent[0]["id"].is_null());
  CHECK(h.sent[0]["error"]["code"] == -32600);
}

TEST_CASE("a routed message is answered on its own route, a late tool result too",
          "[server][session]") {
  Harness h;
  h.initialize();
  std::vector<std::string> routed;
  auto route = [&](std::string message) { routed.push_back(std::move(message)); };
  h.session->handle(
      parse_message(
          R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"code":"async () => 1"}}})"),
      route);
  h.session->handle(parse_message(R"({"jsonrpc":"2.0","id":8,"method":"ping"})"), route);
  h.session->handle(parse_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"),
                    route);
  h.settle();
  REQUIRE(routed.size() == 2);
  CHECK(Json::parse(routed[0])["id"] == 8);  // ping answers at once; the call after it settles
  CHECK(Json::parse(routed[1])["id"] == 7);
  CHECK(Json::parse(routed[1])["result"]["content"][0]["text"].is_string());
  CHECK(h.sent.size() == 1);  // only the initialize answer used the session's own Send
}

TEST_CASE("cancel(id) drops a routed call's answer and tells its route with an empty message",
          "[server][session]") {
  Harness h;
  h.initialize();
  std::vector<std::string> routed;
  h.session->handle(
      parse_message(
          R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"search","arguments":{"code":"async () => 1"}}})"),
      [&](std::string message) { routed.push_back(std::move(message)); });
  h.session->cancel(Json(9));   // before the completion is posted back: it is dropped
  h.session->cancel(Json(10));  // unknown ids are ignored
  h.settle();
  REQUIRE(routed.size() == 1);
  CHECK(routed[0].empty());
  CHECK(h.session->in_flight() == 0);
}

TEST_CASE("a call with a progress token gets progress each second, none after its answer",
          "[server][session][progress]") {
  Harness h;
  h.initialize();
  std::vector<std::string> routed;
  std::vector<Json> notes;
  h.session->handle(
      parse_message(
          R"({"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"search","_meta":{"progressToken":"tok"},"arguments":{"code":"async () => { await new Promise(r => setTimeout(r, 2300)); return 1; }"}}})"),
      [&](std::string message) { routed.push_back(std::move(message)); },
      [&](std::string message) { notes.push_back(Json::parse(message)); });
  h.settle();
  REQUIRE(routed.size() == 1);
  CHECK(Json::parse(routed[0])["result"]["content"][0]["text"].is_string());
  REQUIRE(notes.size() == 2);
  for (std::size_t i = 0; i < notes.size(); ++i) {
    CHECK(notes[i]["method"] == "notifications/progress");
    CHECK(notes[i]["params"]["progressToken"] == "tok");
    CHECK(notes[i]["params"]["progress"] == i + 1);
    CHECK(notes[i]["params"]["message"] == "running for " + std::to_string(i + 1) + " s");
    CHECK_FALSE(notes[i]["params"].contains("total"));
  }
  CHECK(h.sent.size() == 1);  // nothing went to the session-wide Send
  // The timer stopped with the answer: another 1.5 s of running the executor adds nothing.
  auto work = boost::asio::make_work_guard(h.io);
  h.io.restart();
  h.io.run_for(std::chrono::milliseconds(1500));
  CHECK(notes.size() == 2);
  CHECK(routed.size() == 1);
}

TEST_CASE("progress: integer tokens, the session's Send by default, nothing without a token",
          "[server][session][progress]") {
  Harness h;
  h.initialize();
  // A call of 2.5 s gets one notification a second, 1 then 2, then its answer. (At 1.2 s, a
  // machine busy enough to be late with the first notification let the answer overtake it.)
  h.send(
      R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"search","_meta":{"progressToken":7},"arguments":{"code":"async () => { await new Promise(r => setTimeout(r, 2500)); return 1; }"}}})");
  REQUIRE(h.sent.size() >= 3);
  for (std::size_t i = 1; i + 1 < h.sent.size(); ++i) {
    CHECK(h.sent[i]["method"] == "notifications/progress");
    CHECK(h.sent[i]["params"]["progressToken"] == 7);
    CHECK(h.sent[i]["params"]["progress"] == static_cast<int>(i));
  }
  CHECK(h.sent.back()["id"] == 12);
  const std::size_t after_first = h.sent.size();
  // No token, or a token of another type: no notification.
  h.send(
      R"({"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"search","arguments":{"code":"async () => { await new Promise(r => setTimeout(r, 1200)); return 1; }"}}})");
  h.send(
      R"({"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"search","_meta":{"progressToken":1.5},"arguments":{"code":"async () => { await new Promise(r => setTimeout(r, 1200)); return 1; }"}}})");
  REQUIRE(h.sent.size() == after_first + 2);
  CHECK(h.sent[after_first]["id"] == 13);
  CHECK(h.sent[after_first + 1]["id"] == 14);
}

TEST_CASE("a cancelled call's progress stops", "[server][session][progress]") {
  Harness h;
  h.initialize();
  h.session->handle(
      R"({"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"search","_meta":{"progressToken":"c"},"arguments":{"code":"async () => { await new Promise(r => setTimeout(r, 3000)); return 1; }"}}})");
  auto work = boost::asio::make_work_guard(h.io);
  h.io.restart();
  h.io.run_for(std::chrono::milliseconds(1300));
  REQUIRE(h.sent.size() == 2);
  CHECK(h.sent[1]["params"]["progress"] == 1);
  h.session->handle(
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":15}})");
  h.settle();
  CHECK(h.sent.size() == 2);
  CHECK(h.session->in_flight() == 0);
}

TEST_CASE("assume_initialized serves without an initialize exchange (stateless HTTP)",
          "[server][session]") {
  Harness h;
  h.session->assume_initialized("2025-06-18");
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})");
  REQUIRE(h.sent.size() == 1);
  CHECK(h.sent[0]["result"]["tools"].size() == 2);
}

TEST_CASE("a request claiming 2026-07-28 in _meta is served statelessly, without initialize",
          "[server][session][revision]") {
  Harness h;
  const std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                           R"("io.modelcontextprotocol/clientCapabilities":{}})";
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{)" + meta + "}}");
  h.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search",)"
         R"("arguments":{"code":"async () => 6 * 7"},)" +
         meta + "}}");
  h.send(R"({"jsonrpc":"2.0","id":3,"method":"ping","params":{)" + meta + "}}");
  h.send(R"({"jsonrpc":"2.0","id":4,"method":"tools/list"})");  // 2025 rules: not initialized
  REQUIRE(h.sent.size() == 4);
  const Json& discover = h.sent[0]["result"];
  CHECK(discover["resultType"] == "complete");
  CHECK(discover["supportedVersions"] ==
        Json{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"});
  CHECK(discover["capabilities"] == Json{{"tools", Json::object()}});
  CHECK(discover["_meta"]["io.modelcontextprotocol/serverInfo"] ==
        Json{{"name", "codemode-mcp"}, {"version", "9.9.9"}});
  CHECK(h.sent[1]["result"]["resultType"] == "complete");
  CHECK(h.sent[1]["result"]["structuredContent"]["result"] == 42);
  CHECK(h.sent[2]["error"]["code"] == -32601);
  CHECK(h.sent[3]["error"]["code"] == -32600);
}

// What a session's calls leave in the audit trail (observe/call_audit.h), alice's calls on a
// real SQLite file.
TEST_CASE("each tools/call leaves one record with its session's facts", "[server][audit]") {
  TempDir dir;
  const std::filesystem::path file = dir.path() / "audit.db";
  {
    Harness h(writer_on(file, config::Audit::OnFailure::drop));
    h.initialize();
    h.call(1, "async () => 'x'.repeat(20000)",
           R"({"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})");
    h.send(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search",)"
           R"("arguments":{}}})");
    h.send(R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope",)"
           R"("arguments":{}}})");  // a protocol error, no call
    REQUIRE(h.writer->flush(std::chrono::seconds(10)));
  }
  const std::vector<Json> records = records_in(file);
  REQUIRE(records.size() == 2);
  const Json& first = records[0];
  CHECK(first["kind"] == "call");
  CHECK(first["principal"] == "alice");
  CHECK(first["client_name"] == "t");
  CHECK(first["client_version"] == "1");
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
  const std::filesystem::path file = dir.path() / "audit.db";
  Harness h(writer_on(file, config::Audit::OnFailure::fail_closed));
  h.initialize();
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
  const std::vector<Json> records = records_in(file);
  REQUIRE(records.size() == 3);  // calls 1, 2 and 4; 3 never ran
  CHECK(records[1]["code"] == "async () => 2");
  CHECK(records[2]["code"] == "async () => 4");
  CHECK(h.writer->stats().dropped == 0);
}

// Issue 34 item 3: the refusal says which bound a call met, and only the principal whose share
// is full meets that one.
TEST_CASE("fail_closed: a principal holding its share of the queue gets its own refusal",
          "[server][audit]") {
  TempDir dir;
  const std::filesystem::path file = dir.path() / "audit.db";
  Harness h(writer_on(file, config::Audit::OnFailure::fail_closed, 10));  // a share of 1
  h.initialize();
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

TEST_CASE("each call leaves one record however it ends: refused, answered, cancelled, client gone",
          "[server][audit]") {
  TempDir dir;
  const std::filesystem::path file = dir.path() / "audit.db";
  {
    Harness h(writer_on(file, config::Audit::OnFailure::drop));
    h.initialize();
    const std::string slow =
        R"(,"method":"tools/call","params":{"name":"search","arguments":{"code":)"
        R"("async () => { await new Promise(r => setTimeout(r, 10000)); return 1; }"}}})";
    // Cancelled by its client, and one whose client went away (an HTTP disconnect).
    h.session->handle(R"({"jsonrpc":"2.0","id":1)" + slow);
    h.session->handle(
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
    std::vector<std::string> routed;
    h.session->handle(parse_message(R"({"jsonrpc":"2.0","id":2)" + slow),
                      [&](const std::string& message) { routed.push_back(message); });
    h.session->cancel(Json(2));
    h.settle();
    CHECK(routed == std::vector<std::string>{""});
    h.call(3, "async () => 3");
    h.send(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"search",)"
           R"("arguments":{}}})");  // refused for its arguments
    REQUIRE(h.writer->flush(std::chrono::seconds(10)));
  }
  const std::vector<Json> records = records_in(file);
  REQUIRE(records.size() == 4);
  for (const std::size_t i : {0, 1}) {
    CHECK(records[i]["outcome"] == "runtime");
    CHECK(records[i]["message"] == "cancelled");
  }
  CHECK(records[2]["outcome"] == "ok");
  CHECK(records[3]["outcome"] == "input");
}
