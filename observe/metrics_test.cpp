#include "observe/metrics.h"

#include <catch2/catch.hpp>

#include <string>

namespace codemode::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

}  // namespace

TEST_CASE("calls are counted by tool and outcome, with their times", "[server][metrics]") {
  Metrics metrics({"http://127.0.0.1:8788"});
  channel::Outcome ok = channel::Outcome::success("1");
  ok.sandbox_us = 2000;
  ok.cpu_us = 300;
  ok.queued_us = 50;
  metrics.call_finished(channel::Tool::search, ok, 0.004);
  metrics.call_finished(channel::Tool::search, ok, 0.004);
  metrics.call_finished(channel::Tool::execute,
                        channel::Outcome::failure(channel::ErrorKind::timeout, "wall"), 2.0);
  const std::string text = metrics.exposition();
  CHECK(has_line(text, R"(codemode_tool_calls_total{outcome="ok",tool="search"} 2)"));
  CHECK(has_line(text, R"(codemode_tool_calls_total{outcome="timeout",tool="execute"} 1)"));
  CHECK(has_line(text, R"(codemode_tool_call_duration_seconds_count{tool="search"} 2)"));
  CHECK(has_line(text, R"(codemode_tool_call_cpu_seconds_bucket{tool="search",le="0.00025"} 0)"));
  CHECK(has_line(text, R"(codemode_tool_call_cpu_seconds_bucket{tool="search",le="0.0005"} 2)"));
  CHECK(has_line(text, R"(codemode_tool_call_duration_seconds_bucket{tool="execute",le="1"} 0)"));
  CHECK(has_line(text, R"(codemode_tool_call_duration_seconds_bucket{tool="execute",le="2.5"} 1)"));
  // A call that never ran has no queue or CPU time to observe.
  CHECK(text.find(R"(codemode_tool_call_cpu_seconds_count{tool="execute"})") == std::string::npos);
}

TEST_CASE("gateway requests by upstream and status class, refusals by reason",
          "[server][metrics]") {
  Metrics metrics({"http://127.0.0.1:8788", "https://api.example.com"});
  auto finish = [&](const gateway::OutboundRequest& request, const gateway::FetchResult& result,
                    double seconds) {
    metrics.request_finished(request.url, request.body.size(), result, seconds);
  };
  gateway::OutboundRequest relative{"POST", "/orders", {}, "12345"};
  gateway::InboundResponse created;
  created.status = 201;
  created.body = "1234567890";
  created.final_url = "http://127.0.0.1:8788/orders";
  finish(relative, created, 0.01);

  gateway::OutboundRequest elsewhere{"GET", "https://api.example.com/x?q=1", {}, ""};
  gateway::InboundResponse missing;
  missing.status = 404;
  missing.final_url = "https://api.example.com/x?q=1";
  finish(elsewhere, missing, 0.02);
  finish(elsewhere, gateway::GatewayError{gateway::ErrorKind::runtime, "connect refused"}, 0.001);
  // The code chose this URL; it must not become a label value.
  gateway::OutboundRequest wild{"GET", "http://attacker.test/a", {}, ""};
  finish(wild,
         gateway::GatewayError{gateway::ErrorKind::policy,
                               "origin http://attacker.test is not allowed"},
         0);
  finish(elsewhere, gateway::GatewayError{gateway::ErrorKind::policy, "subrequest limit 3 reached"},
         0);

  const std::string text = metrics.exposition();
  CHECK(has_line(
      text, R"(codemode_gateway_requests_total{status="2xx",upstream="http://127.0.0.1:8788"} 1)"));
  CHECK(has_line(
      text,
      R"(codemode_gateway_requests_total{status="4xx",upstream="https://api.example.com"} 1)"));
  CHECK(has_line(
      text,
      R"(codemode_gateway_requests_total{status="failed",upstream="https://api.example.com"} 1)"));
  CHECK(has_line(text, R"(codemode_gateway_refusals_total{reason="origin"} 1)"));
  CHECK(has_line(text, R"(codemode_gateway_refusals_total{reason="budget"} 1)"));
  CHECK(has_line(text, R"(codemode_gateway_bytes_total{direction="sent"} 5)"));
  CHECK(has_line(text, R"(codemode_gateway_bytes_total{direction="received"} 10)"));
  CHECK(text.find("attacker") == std::string::npos);
}

TEST_CASE("levels are read at each scrape, and the pool counts only grow", "[server][metrics]") {
  Metrics metrics({});
  Metrics::Levels levels;
  levels.pool.running = 3;
  levels.pool.queued = 2;
  levels.pool.processes = 4;
  levels.pool.started = 5;
  levels.pool.retired = {{"idle", 1}};
  metrics.set_levels([&] { return levels; });
  std::string text = metrics.exposition();
  CHECK(has_line(text, "codemode_tool_calls_running 3"));
  CHECK(has_line(text, "codemode_tool_calls_queued 2"));
  CHECK(has_line(text, "codemode_sandbox_processes 4"));
  CHECK(has_line(text, "codemode_sandbox_processes_started_total 5"));
  CHECK(has_line(text, R"(codemode_sandbox_processes_retired_total{reason="idle"} 1)"));
  CHECK(has_line(text, R"(codemode_sandbox_processes_retired_total{reason="room"} 0)"));
  CHECK(text.find("codemode_audit_queue_depth ") == std::string::npos);

  levels.pool.running = 0;
  levels.pool.started = 7;
  levels.audit = true;
  levels.audit_queue = 9;
  levels.audit_dropped = 2;
  text = metrics.exposition();
  CHECK(has_line(text, "codemode_tool_calls_running 0"));
  CHECK(has_line(text, "codemode_sandbox_processes_started_total 7"));
  CHECK(has_line(text, "codemode_audit_queue_depth 9"));
  CHECK(has_line(text, "codemode_audit_records_dropped_total 2"));
}

TEST_CASE("refusal reasons come from the gateway's messages", "[server][metrics]") {
  CHECK(refusal_reason("origin http://x is not allowed") == "origin");
  CHECK(refusal_reason("method TRACE is not allowed (GET, POST, PUT, PATCH, DELETE, HEAD)") ==
        "method");
  CHECK(refusal_reason("GET request cannot have a body") == "method");
  CHECK(refusal_reason("GET /nope matches no operation in the API description") == "operation");
  CHECK(refusal_reason("subrequest limit 10 reached") == "budget");
  CHECK(refusal_reason("header \"host\" is not allowed") == "header");
  CHECK(refusal_reason("request body exceeds 1048576 bytes") == "body");
  CHECK(refusal_reason("URL contains a control character") == "url");
  CHECK(refusal_reason("something new") == "other");
}

}  // namespace codemode::server
