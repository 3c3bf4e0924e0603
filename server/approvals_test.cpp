// What a person is asked about an execute request, and what the answer approves: the request as
// the code made it, shown so that what is read is what is sent (issue 34, findings 11 and 12).
#include "server/approvals.h"

#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace codemode::server;
using codemode::gateway::ApprovalAnswer;
using codemode::gateway::ApprovalRequest;
using codemode::gateway::Verdict;

ApprovalRequest order_write() {
  ApprovalRequest request;
  request.method = "POST";
  request.url = "https://api.example.com/orders";
  request.content_type = "application/json";
  request.headers = {{"Content-Type", "application/json"}, {"X-Tenant", "t1"}};
  request.body = R"({"order":"A"})";
  return request;
}

// The request as the gateway hands it over in a traced call: the host's trace context on it
// (a new span id for every request), and the gateway's digest over all of it.
ApprovalRequest traced(ApprovalRequest request, const std::string& span_id) {
  request.headers.emplace_back("traceparent",
                               "00-4bf92f3577b34da6a3ce929d0e0e4736-" + span_id + "-01");
  request.headers.emplace_back("tracestate", "vendor=x");
  request.digest = codemode::gateway::approval_digest(request.method, request.url, request.headers,
                                                      request.body);
  return request;
}

TEST_CASE("the host's trace context is neither shown nor approved: a traced retry completes",
          "[server][approvals]") {
  const ApprovalRequest first = traced(order_write(), "00f067aa0ba902b7");
  const ApprovalRequest retried = traced(order_write(), "b7ad6b7169203331");
  REQUIRE(first.digest != retried.digest);  // what 7d258f9 bound the approval to
  CHECK(question_digest(first) == question_digest(retried));
  CHECK(question_digest(first) == question_digest(order_write()));
  // What the code set still counts: another tenant is another request.
  ApprovalRequest other_tenant = order_write();
  other_tenant.headers[1].second = "t2";
  CHECK(question_digest(traced(other_tenant, "b7ad6b7169203331")) != question_digest(first));

  const std::string message = approval_message(first);
  CHECK(message.find("traceparent") == std::string::npos);
  CHECK(message.find("tracestate") == std::string::npos);
  CHECK(message.find("X-Tenant: t1") != std::string::npos);

  // Round one asks; round two, with a new span id on the request, finds the accept.
  int stops = 0;
  RetryApprover round("c", nullptr, Json::object(), "sub:alice", [&] { ++stops; });
  std::optional<ApprovalAnswer> answer;
  round.ask(1, first, [&](ApprovalAnswer a) { answer = std::move(a); });
  REQUIRE(answer);
  CHECK(answer->verdict == Verdict::deferred);
  CHECK(round.input_requests()["approval-1"]["params"]["message"] == message);
  const Json state = round.next_state();
  RetryApprover again("c", &state, Json{{"approval-1", {{"action", "accept"}}}}, "sub:alice",
                      [&] { ++stops; });
  answer.reset();
  again.ask(1, retried, [&](ApprovalAnswer a) { answer = std::move(a); });
  REQUIRE(answer);
  CHECK(answer->verdict == Verdict::accepted);
  CHECK(stops == 1);
}

}  // namespace
