// The one observation point of a tool call: whichever way a call ends, the audit trail (a real
// SQLite file), the metrics and the tracer (a real exporter) each hear of it exactly once. What a
// real session reports through it: mcp/mcp_session_test.cpp ([server][audit]).
#include "observe/call_observer.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "observe/call_audit.h"
#include "observe/metrics.h"
#include "observe/test_audit.h"

using namespace codemode;
using namespace codemode::server;
using namespace codemode::server::testing;

namespace {

constexpr const char* kParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

// An exporter whose collector is down: every span it is given ends up counted as dropped once
// stop() has tried to send it, so exported + dropped counts the spans ended.
std::unique_ptr<SpanExporter> exporter_to_nowhere() {
  std::uint16_t closed_port = 0;
  {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    closed_port = probe.local_endpoint().port();
  }  // nothing listens there now
  config::Tracing config;
  config.otlp = "http://127.0.0.1:" + std::to_string(closed_port) + "/v1/traces";
  auto started = SpanExporter::start(config, "9.9", std::nullopt);
  REQUIRE(std::holds_alternative<std::unique_ptr<SpanExporter>>(started));
  return std::move(std::get<std::unique_ptr<SpanExporter>>(started));
}

// The daemon's three observers of a call, real ones.
struct Observers {
  TempDir dir;
  std::filesystem::path file = dir.path() / "audit.db";
  std::unique_ptr<audit::Writer> writer = writer_on(file, config::Audit::OnFailure::drop);
  gateway::UrlPolicy urls{std::vector<config::Upstream>{}};
  CallAudit trail{*writer, gateway::OperationPolicy(), urls};
  Metrics metrics{std::vector<std::string>{}};
  std::unique_ptr<SpanExporter> exporter = exporter_to_nowhere();
  Tracer tracer{exporter.get(), urls};

  SessionAudit all() { return SessionAudit{&trail, "stdio", &metrics, &tracer}; }

  std::vector<nlohmann::json> records() {
    REQUIRE(writer->flush(std::chrono::seconds(10)));
    return records_in(file);
  }
  // The spans ended so far (stops the exporter).
  std::uint64_t spans() {
    exporter->stop();
    const SpanExporter::Stats stats = exporter->stats();
    return stats.exported + stats.dropped;
  }
  bool counted(const std::string& tool, const std::string& outcome, int n) {
    return has_line(metrics.exposition(), R"(codemode_tool_calls_total{outcome=")" + outcome +
                                              R"(",tool=")" + tool + R"("} )" + std::to_string(n));
  }
};

CallStart alice_search() {
  CallStart start;
  start.tool = channel::Tool::search;
  start.principal = "alice";
  start.client_name = "unit-client";
  start.client_version = "3";
  start.session = "stdio-9";
  start.from_meta.traceparent = kParent;
  start.facts.tool = "search";
  start.facts.transport = "stdio";
  start.result_chars = 10;
  return start;
}

}  // namespace

TEST_CASE("an answered call is recorded, traced and counted once, with what began it",
          "[server][observer]") {
  Observers o;
  CallObservation call = observe_call(o.all(), alice_search());
  const std::string id = call.audit_id();
  CHECK(id.size() == 32);
  CHECK(call.span().trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(call.span().parent_id == "00f067aa0ba902b7");
  call.set_code("async () => 'abcdefghijkl'");
  channel::Outcome ok = channel::Outcome::success(R"("abcdefghijkl")");  // 14 > 10 characters
  ok.queued_us = 5;
  ok.sandbox_us = 2000;
  ok.cpu_us = 300;
  call.end(ok, 0.004);
  CHECK(call.ended());

  const auto records = o.records();
  REQUIRE(records.size() == 1);
  const auto& record = records[0];
  CHECK(record["id"] == id);
  CHECK(record["principal"] == "alice");
  CHECK(record["client_name"] == "unit-client");
  CHECK(record["client_version"] == "3");
  CHECK(record["session"] == "stdio-9");
  CHECK(record["transport"] == "stdio");
  CHECK(record["tool"] == "search");
  CHECK(record["code"] == "async () => 'abcdefghijkl'");
  CHECK(record["outcome"] == "ok");
  CHECK(record["message"] == "");
  CHECK(record["result_chars"] == 14);
  CHECK(record["result_cut"] == true);  // longer than result_chars
  CHECK(record["queue_us"] == 5);
  CHECK(record["run_us"] == 2000);
  CHECK(record["cpu_us"] == 300);
  CHECK(record["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736");
  CHECK(o.counted("search", "ok", 1));
  CHECK(has_line(o.metrics.exposition(),
                 R"(codemode_tool_call_duration_seconds_bucket{tool="search",le="0.005"} 1)"));
  CHECK(o.spans() == 1);
}

TEST_CASE("a call ends exactly once, whichever way ends it first", "[server][observer]") {
  Observers o;
  // Refused for its arguments before it ran: no time, no code.
  CallObservation refused = observe_call(o.all(), alice_search());
  refused.end(channel::Outcome::failure(channel::ErrorKind::input, "arguments must be ..."));
  refused.end(channel::Outcome::success("1"), 1.0);
  // Answered, then told again (a second completion would be a bug elsewhere: it reports nothing).
  CallObservation answered = observe_call(o.all(), alice_search());
  answered.end(channel::Outcome::success("1"), 0.002);
  answered.end(channel::Outcome::failure(channel::ErrorKind::runtime, "again"), 0.002);
  // Cancelled by its client: the sandbox's outcome says so, and that is the end.
  CallObservation cancelled = observe_call(o.all(), alice_search());
  cancelled.end(channel::Outcome::failure(channel::ErrorKind::runtime, "cancelled"), 0.001);
  cancelled.end(channel::Outcome::success("1"), 0.001);

  const auto records = o.records();
  REQUIRE(records.size() == 3);
  CHECK(records[0]["outcome"] == "input");
  CHECK(records[0]["message"] == "arguments must be ...");
  CHECK(records[0]["code"] == "");
  CHECK(records[1]["outcome"] == "ok");
  CHECK(records[2]["outcome"] == "runtime");
  CHECK(records[2]["message"] == "cancelled");
  CHECK(o.counted("search", "input", 1));
  CHECK(o.counted("search", "ok", 1));
  CHECK(o.counted("search", "runtime", 1));
  CHECK(o.spans() == 3);
}

TEST_CASE("a call never ended, or moved from, reports nothing", "[server][observer]") {
  Observers o;
  {
    // The request turned out to be no call, or its completion never ran: dropped unended.
    CallObservation dropped = observe_call(o.all(), alice_search());
  }
  CallObservation first = observe_call(o.all(), alice_search());
  CallObservation moved = std::move(first);
  CHECK(first.ended());  // NOLINT(bugprone-use-after-move): what a moved-from one does is the test
  first.end(channel::Outcome::success("1"), 0.001);  // NOLINT(bugprone-use-after-move)
  CHECK_FALSE(moved.ended());
  moved.end(channel::Outcome::success("2"), 0.001);

  const auto records = o.records();
  REQUIRE(records.size() == 1);
  CHECK(records[0]["outcome"] == "ok");
  CHECK(o.counted("search", "ok", 1));
  CHECK(o.spans() == 1);
}

TEST_CASE("without observers a call still carries the trace it came with", "[server][observer]") {
  CallStart start = alice_search();
  start.from_meta = {};
  start.from_transport.traceparent = kParent;
  CallObservation call = observe_call(SessionAudit{}, start);
  CHECK(call.audit_id().empty());  // no trail, no record id for its requests to name
  CHECK(call.span().traceparent().starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"));
  call.set_code("async () => 1");
  call.end(channel::Outcome::success("1"), 0.001);
  CHECK(call.ended());
  // Without a tracer, a call that brings no trace is not traced.
  CallObservation untraced = observe_call(SessionAudit{}, CallStart{});
  CHECK_FALSE(untraced.span().traced());
}
