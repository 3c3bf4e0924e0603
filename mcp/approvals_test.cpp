// What a person is asked about an execute request, and what the answer approves: the request as
// the code made it, shown so that what is read is what is sent (issue 34, findings 11 and 12).
#include "mcp/approvals.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <memory>
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

ApprovalRequest with_body(std::string content_type, std::string body) {
  ApprovalRequest request;
  request.method = "POST";
  request.url = "https://api.example.com/charges";
  request.content_type = content_type;
  if (!content_type.empty()) request.headers = {{"Content-Type", content_type}};
  request.body = std::move(body);
  return request;
}

TEST_CASE("a key given twice is flagged wherever it is, also past the cut", "[server][approvals]") {
  // The second amount is past the 2,000 characters shown: the one a person would not see.
  const std::string body =
      R"({"amount":1,"note":")" + std::string(3000, 'x') + R"(","amount":100000})";
  const std::string message = approval_message(with_body("application/json", body));
  CHECK(message.find("Warning: this body gives a key more than once in one object: \"amount\". "
                     "Servers differ on which of the values they take; some may be in the part "
                     "not shown.") != std::string::npos);
  CHECK(message.find("100000") == std::string::npos);  // cut: but the warning says so
  // What is said about the cut comes before the body, so the body cannot pose as it.
  CHECK(message.find("Body (application/json), " + std::to_string(body.size()) +
                     " bytes; its last " + std::to_string(body.size() - kApprovalBodyChars) +
                     " bytes are not shown, and an accept approves them "
                     "too:\n{\"amount\":1,\"note\":\"xxx") != std::string::npos);

  // In a nested object; spelt with an escape; several, named once each and in order.
  CHECK(approval_message(with_body("", R"({"a":[{"x":1,"x":2}]})")).find("one object: \"x\".") !=
        std::string::npos);
  CHECK(approval_message(with_body("", R"({"amount":1,"\u0061mount":2})"))
            .find("one object: \"amount\".") != std::string::npos);
  CHECK(approval_message(with_body("", R"({"b":1,"b":2,"c":{"d":1,"d":1},"a":0,"a":0})"))
            .find("one object: \"d\", \"a\", \"b\".") != std::string::npos);
  // The same key in different objects is not a repeat.
  CHECK(approval_message(with_body("", R"({"a":{"x":1},"b":{"x":2},"c":[{"x":3},{"x":4}]})"))
            .find("Warning") == std::string::npos);
  // A key shown in the warning is escaped like the body.
  CHECK(approval_message(with_body("", "{\"a\u202e\":1,\"a\u202e\":2}"))
            .find("one object: \"a\\u202e\".") != std::string::npos);
}

TEST_CASE("what a person cannot see as itself is shown as an escape", "[server][approvals]") {
  // Not JSON: ESC and CSI, CR, a right-to-left override, a byte that is not UTF-8, a zero-width
  // space, a tag character, a backslash. A line feed stays a line break.
  const std::string text = "pay \x1b[2J\rto: bob\u202E1000\xff\u200B\U000E0041 \\x1b\nnext line";
  const std::string message = approval_message(with_body("text/plain", text));
  CHECK(
      message.ends_with("):\npay \\x1b[2J\\rto: bob\\u{202e}1000\\xff\\u{200b}\\u{e0041} "
                        "\\\\x1b\nnext line"));
  CHECK(message.find("\\ is shown as \\\\") != std::string::npos);
  for (const std::string raw : {"\x1b", "\r", "\u202E", "\xff", "\u200B", "\U000E0041"}) {
    CHECK(message.find(raw) == std::string::npos);
  }
  // In JSON strings, hidden characters become the JSON escapes that mean the same; the rest,
  // and what the body already escaped, is as sent.
  CHECK(approval_message(with_body("application/json",
                                   "{\"to\": \"bob\u202Eevil\x7f\u0085\U000E0041 \\u202e\"}"))
            .ends_with("bytes:\n{\"to\":\"bob\\u202eevil\\u007f\\u0085\\udb40\\udc41 \\u202e\"}"));
  // A byte order mark, which JSON readers skip, is not hidden either.
  CHECK(approval_message(with_body("application/json", "\xef\xbb\xbf{\"a\":1}"))
            .ends_with("bytes:\n\\u{feff}{\"a\":1}"));
  // Headers, the URL and the operation's words too.
  ApprovalRequest request = with_body("", "");
  request.url = "https://api.example.com/a\\b";
  request.summary = "Pay\x1b[31m";
  request.operation = "POST /charges";
  request.headers = {{"X-Account", "acct\u202E_1"}, {"X-Long", std::string(300, 'v')}};
  const std::string headers = approval_message(request);
  CHECK(headers.find("POST https://api.example.com/a\\\\b\nPay\\x1b[31m") != std::string::npos);
  CHECK(headers.find("X-Account: acct\\u{202e}_1\n") != std::string::npos);
  CHECK(headers.find("X-Long: " + std::string(192, 'v') + " …[108 more bytes not shown]") !=
        std::string::npos);
}

TEST_CASE("a body the code encoded is never put to a person", "[server][approvals]") {
  ApprovalRequest gzip = with_body("application/json", std::string("\x1f\x8b\x08\0\0\0", 6));
  gzip.headers.emplace_back("Content-Encoding", "gzip");
  REQUIRE(unreadable_body(gzip).has_value());
  CHECK(*unreadable_body(gzip) ==
        "its body is sent with Content-Encoding: gzip, which a person cannot read, so nobody is "
        "asked about it; send it unencoded");
  ApprovalRequest identity = with_body("application/json", "{}");
  identity.headers.emplace_back("content-encoding", " identity ");
  CHECK_FALSE(unreadable_body(identity).has_value());
  ApprovalRequest stacked = identity;
  stacked.headers.back().second = "identity, br";
  CHECK(unreadable_body(stacked).has_value());

  // A session's approver answers at once, without a question.
  boost::asio::io_context io;
  auto requests = std::make_shared<ServerRequests>();
  std::vector<std::string> sent;
  auto session = std::make_shared<ElicitingApprover>(
      io.get_executor(), requests, [&](std::string message) { sent.push_back(std::move(message)); },
      "sub:alice", true);
  std::optional<ApprovalAnswer> answer;
  session->ask(1, gzip, [&](ApprovalAnswer a) { answer = std::move(a); });
  io.run();
  REQUIRE(answer);
  CHECK(answer->verdict == Verdict::impossible);
  CHECK(answer->by == "sub:alice; not asked: " + *unreadable_body(gzip));
  CHECK(sent.empty());
  // So does a 2026-07-28 round, which does not stop for it.
  int stops = 0;
  RetryApprover round("c", nullptr, Json::object(), "sub:alice", [&] { ++stops; });
  answer.reset();
  round.ask(1, gzip, [&](ApprovalAnswer a) { answer = std::move(a); });
  REQUIRE(answer);
  CHECK(answer->verdict == Verdict::impossible);
  CHECK(stops == 0);
  CHECK_FALSE(round.stopped_for_input());
}

}  // namespace
