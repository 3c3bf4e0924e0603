// The server's side of the audit trail, on a real SQLite file: what a request record holds. What
// a session's calls leave in it is tested with a real session in mcp/mcp_session_test.cpp
// ([server][audit]); the call record itself in call_observer_test.cpp.
#include "observe/call_audit.h"

#include <catch2/catch.hpp>

#include "observe/test_audit.h"

using namespace codemode;
using namespace codemode::server;
using namespace codemode::server::testing;

namespace fs = std::filesystem;
using Json = nlohmann::json;

// What a traceparent is, and which are refused: tracing_test.cpp ([server][tracing]).
TEST_CASE("session names are distinct", "[server][audit]") {
  CHECK(CallAudit::session_name("http") != CallAudit::session_name("http"));
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
  const std::vector<Json> records = records_in(file);
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
  const std::vector<Json> records = records_in(file);
  REQUIRE(records.size() == 1);
  CHECK(records[0]["refusal"] == "policy: subrequest limit reached");
}
