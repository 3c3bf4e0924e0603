// The sealed requestState of MCP 2026-07-28 approvals: only this server's, unchanged, for its
// principal, before its expiry, once.
#include "mcp/request_state.h"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <optional>
#include <vector>

#include "mcp/approvals.h"
#include "mcp/base64.h"
#include "mcp/mcp_session.h"

namespace {

using namespace codemode::server;

// A time the tests' clocks start at (2027-01-15); they move it on by hand.
constexpr std::chrono::system_clock::time_point kSomeTime{std::chrono::seconds(1'800'000'000)};

TEST_CASE("a requestState opens once, unchanged, for its principal", "[server][approvals]") {
  RequestStates states(*approval_key_bytes(std::string(64, 'b')), std::chrono::seconds(60));
  const std::string sealed = states.seal(Json{{"asked", {{"approval-1", "d1"}}}}, "alice");
  CHECK(sealed.find("approval-1") == std::string::npos);  // not readable by the client
  CHECK(sealed.find("alice") == std::string::npos);

  // Another principal: refused, and the state stays usable by its own.
  CHECK(std::get<std::string>(states.open(sealed, "bob")) ==
        "requestState was issued to another principal");
  const auto opened = states.open(sealed, "alice");
  REQUIRE(std::holds_alternative<Json>(opened));
  CHECK(std::get<Json>(opened)["asked"]["approval-1"] == "d1");
  CHECK(std::get<std::string>(states.open(sealed, "alice")) == "requestState was already used");

  const std::string fresh = states.seal(Json::object(), "alice");
  for (std::size_t i = 0; i < fresh.size(); i += 7) {
    std::string changed = fresh;
    changed[i] = changed[i] == 'A' ? 'B' : 'A';
    CHECK(std::get<std::string>(states.open(changed, "alice")) ==
          "requestState is not one this server issued, or it was changed");
  }
  for (const std::string& junk :
       std::vector<std::string>{"", "x", "====", std::string(4000, 'A')}) {
    CHECK(std::holds_alternative<std::string>(states.open(junk, "alice")));
  }
  // Another server's key (another fleet, or a process without the shared key) cannot open it.
  RequestStates other(*approval_key_bytes(std::string(64, 'c')), std::chrono::seconds(60));
  CHECK(std::holds_alternative<std::string>(other.open(fresh, "alice")));
  CHECK(std::holds_alternative<Json>(states.open(fresh, "alice")));
}

TEST_CASE("a requestState of one API never opens at another, whatever their keys",
          "[server][approvals][apis]") {
  const std::string key = *approval_key_bytes(std::string(64, 'b'));
  const RequestStates::Clock clock = [] { return std::chrono::system_clock::now(); };
  RequestStates github(key, std::chrono::seconds(60), kMaxUsedStatesPerPrincipal, clock, "github");
  RequestStates stripe(key, std::chrono::seconds(60), kMaxUsedStatesPerPrincipal, clock, "stripe");
  RequestStates unnamed(key, std::chrono::seconds(60));
  const std::string sealed = github.seal(Json::object(), "alice");
  CHECK(std::get<std::string>(stripe.open(sealed, "alice")) ==
        "requestState was issued for another API");
  CHECK(std::get<std::string>(unnamed.open(sealed, "alice")) ==
        "requestState was issued for another API");
  CHECK(std::get<std::string>(github.open(unnamed.seal(Json::object(), "alice"), "alice")) ==
        "requestState was issued for another API");
  // Refused ones are not spent: the state still opens once at its own API.
  CHECK(std::holds_alternative<Json>(github.open(sealed, "alice")));
}

TEST_CASE("a requestState expires", "[server][approvals]") {
  auto now = kSomeTime;
  RequestStates states({}, std::chrono::seconds(60), kMaxUsedStatesPerPrincipal,
                       [&now] { return now; });
  const std::string sealed = states.seal(Json::object(), "alice");
  const std::string late = states.seal(Json::object(), "alice");
  // Good for its whole ttl, to the second; not a second more.
  now += std::chrono::seconds(60);
  CHECK(std::holds_alternative<Json>(states.open(sealed, "alice")));
  now += std::chrono::seconds(1);
  CHECK(std::get<std::string>(states.open(late, "alice")) ==
        "requestState has expired; send the call again");
}

TEST_CASE("base64 round-trips bytes and refuses what is not padded base64", "[server][approvals]") {
  const std::string bytes("\0\xff\x10 any bytes\n", 14);
  for (std::size_t n = 0; n <= bytes.size(); ++n) {
    const std::string part = bytes.substr(0, n);
    CHECK(base64_decode(base64_encode(part)).value_or("(refused)") ==
          (n == 0 ? "(refused)" : part));
  }
  CHECK(base64_decode("QQ==") == "A");
  CHECK(base64_decode("QUI=") == "AB");
  // Padding only, padding inside, the wrong length, another alphabet: refused, none crashes.
  for (const char* hostile : {"====", "=", "A===", "Q=Q=", "QQ=", "QQ==QQ==", "-_-_", "QQ\n="}) {
    CAPTURE(hostile);
    CHECK_FALSE(base64_decode(hostile).has_value());
  }
}

TEST_CASE("one principal filling the record of used states refuses only its own retries",
          "[server][approvals]") {
  auto now = kSomeTime;
  RequestStates states({}, std::chrono::seconds(1), 3, [&now] { return now; });
  for (int i = 0; i < 3; ++i) {
    CHECK(std::holds_alternative<Json>(
        states.open(states.seal(Json::object(), "mallory"), "mallory")));
  }
  CHECK(std::get<std::string>(states.open(states.seal(Json::object(), "mallory"), "mallory")) ==
        "too many approvals in flight; retry later");
  CHECK(std::holds_alternative<Json>(states.open(states.seal(Json::object(), "alice"), "alice")));
  // Not while they may still come back (to the last second of their ttl)...
  now += std::chrono::seconds(1);
  CHECK(std::get<std::string>(states.open(states.seal(Json::object(), "mallory"), "mallory")) ==
        "too many approvals in flight; retry later");
  // ...but once they have expired, they are forgotten, and she may go on.
  now += std::chrono::seconds(1);
  CHECK(
      std::holds_alternative<Json>(states.open(states.seal(Json::object(), "mallory"), "mallory")));
}

TEST_CASE("approval keys are 64 hex digits", "[server][approvals]") {
  CHECK(approval_key_bytes(std::string(64, 'f'))->size() == 32);
  CHECK_FALSE(approval_key_bytes(std::string(63, 'f')).has_value());
  CHECK_FALSE(approval_key_bytes(std::string(64, 'g')).has_value());
}

TEST_CASE("the approval question says what will be sent, cut to a bound", "[server][approvals]") {
  codemode::gateway::ApprovalRequest request;
  request.method = "POST";
  request.url = "https://api.example.com/orders";
  request.operation = "POST /orders";
  request.operation_id = "createOrder";
  request.summary = "Create an order";
  request.content_type = "application/json";
  request.body = "{ \"items\" : [ 1, 2 ] }";
  CHECK(approval_message(request) ==
        "Approve this request to the API?\n\nPOST https://api.example.com/orders\nCreate an order "
        "(createOrder)\n\nBody (application/json), 22 bytes:\n{\"items\":[1,2]}");
  request.body = std::string(5000, 'x');
  const std::string cut = approval_message(request);
  CHECK(cut.size() < 2300);
  CHECK(cut.find("3000") != std::string::npos);  // says how much was left out
  const Json params = approval_elicitation(request, true);
  CHECK(params["mode"] == "form");
  CHECK(params["requestedSchema"] == Json{{"type", "object"}, {"properties", Json::object()}});
  CHECK_FALSE(approval_elicitation(request, false).contains("mode"));
  CHECK(verdict_of(Json{{"action", "accept"}}) == codemode::gateway::Verdict::accepted);
  CHECK(verdict_of(Json{{"action", "decline"}}) == codemode::gateway::Verdict::declined);
  CHECK(verdict_of(Json{{"action", "cancel"}}) == codemode::gateway::Verdict::cancelled);
  CHECK(verdict_of(Json{{"action", "yes"}}) == codemode::gateway::Verdict::impossible);
}

TEST_CASE("the question shows the body as sent, and the code's headers", "[server][approvals]") {
  codemode::gateway::ApprovalRequest request;
  request.method = "POST";
  request.url = "https://api.example.com/charges";
  request.headers = {{"Content-Type", "application/json"}, {"Stripe-Account", "acct_other"}};
  request.content_type = "application/json";
  // Both of two repeated keys, and a number no double holds, as they will be sent; whitespace
  // inside strings kept.
  request.body =
      "{\"amount\": 1, \"amount\": 9999, \"n\": 123456789012345678901234567890, "
      "\"note\": \"a  b\\\" c\"}";
  CHECK(approval_message(request) ==
        "Approve this request to the API?\n\nPOST https://api.example.com/charges\n\nHeaders:\n"
        "Stripe-Account: acct_other\n\nWarning: this body gives a key more than once in one "
        "object: \"amount\". Servers differ on which of the values they take.\n\nBody "
        "(application/json), " +
            std::to_string(request.body.size()) +
            " bytes:\n{\"amount\":1,\"amount\":9999,\"n\":123456789012345678901234567890,"
            "\"note\":\"a  b\\\" c\"}");
  // Nested a million deep: shown cut, as text; nothing recurses over it.
  request.body = std::string(1000000, '[') + std::string(1000000, ']');
  const std::string deep = approval_message(request);
  CHECK(deep.size() < 2500);
  CHECK(deep.find("[[[[") != std::string::npos);
  const Json params = approval_elicitation(request, true);
  CHECK(params["message"] == deep);
  // A long header is cut.
  request.headers = {{"X-Long", std::string(5000, 'v')}};
  request.body.clear();
  CHECK(approval_message(request).size() < 400);
}

TEST_CASE("approvers are named with the client's words escaped", "[server][approvals]") {
  CHECK(approver_name("sub:alice", "", "") == "sub:alice");
  CHECK(approver_name("sub:alice", "Claude", "1.2") == "sub:alice via Claude 1.2");
  const std::string forged =
      approver_name("sub:mallory", "x\napproval: POST /orders: approved (sub:bob)", "1");
  CHECK(forged.find('\n') == std::string::npos);
  CHECK(forged.starts_with("sub:mallory via x\\napproval"));
  CHECK(approver_name("sub:alice", std::string(10000, 'c'), "1").size() < 200);
}

TEST_CASE("a 2026-07-28 round: an approved write still in flight when the call stops is made",
          "[server][approvals]") {
  codemode::gateway::ApprovalRequest write;
  write.method = "POST";
  write.url = "https://api.example.com/orders";
  codemode::gateway::ApprovalRequest other = write;
  other.url = "https://api.example.com/refunds";
  const Json state{{"call", "c"}, {"asked", {{"approval-1", question_digest(write)}}}};
  const Json answers{{"approval-1", {{"action", "accept"}}}};
  int stops = 0;
  RetryApprover round("c", &state, answers, "sub:alice", [&] { ++stops; });
  std::vector<codemode::gateway::Verdict> verdicts;
  const auto record = [&](codemode::gateway::ApprovalAnswer answer) {
    verdicts.push_back(answer.verdict);
  };
  round.ask(1, write, record);  // accepted: being sent
  round.ask(2, other, record);  // a new question: the call stops before write's answer
  REQUIRE(verdicts ==
          std::vector{codemode::gateway::Verdict::accepted, codemode::gateway::Verdict::deferred});
  CHECK(stops == 1);
  const Json next = round.next_state();
  REQUIRE(next["done"].size() == 1);
  CHECK(next["done"][0]["d"] == question_digest(write));

  // The next round: the write is not sent again, nor asked about again.
  const Json next_answers{{"approval-1", {{"action", "accept"}}}};
  RetryApprover again("c", &next, next_answers, "sub:alice", [&] { ++stops; });
  std::optional<codemode::gateway::ApprovalAnswer> answer;
  again.ask(1, write, [&](codemode::gateway::ApprovalAnswer a) { answer = std::move(a); });
  REQUIRE(answer.has_value());
  CHECK(answer->verdict == codemode::gateway::Verdict::accepted);
  REQUIRE(answer->replay.has_value());
  const auto* error = std::get_if<codemode::gateway::GatewayError>(&*answer->replay);
  REQUIRE(error != nullptr);
  CHECK(error->message.find("not sent again") != std::string::npos);
  CHECK(stops == 1);
}

TEST_CASE("a requestState carries at most kMaxCarriedResponseBytes over all rounds",
          "[server][approvals]") {
  // An earlier round already carries 60 KB of one response.
  const Json carried{{"d", "digest-a"},
                     {"by", "sub:alice"},
                     {"status", 200},
                     {"headers", Json::array()},
                     {"body", base64_encode(std::string(60000, 'r'))}};
  codemode::gateway::ApprovalRequest write;
  write.method = "POST";
  write.url = "https://api.example.com/orders";
  const Json state{{"call", "c"},
                   {"asked", {{"approval-1", question_digest(write)}}},
                   {"done", Json::array({carried})}};
  const Json answers{{"approval-1", {{"action", "accept"}}}};
  RetryApprover round("c", &state, answers, "sub:alice", [] {});
  round.ask(7, write, [](codemode::gateway::ApprovalAnswer) {});
  codemode::gateway::InboundResponse response;
  response.status = 201;
  response.body = std::string(10000, 's');
  round.sent(7, response);
  const Json next = round.next_state();
  REQUIRE(next["done"].size() == 2);
  CHECK(next["done"][1]["too_large"] == 10000);
  CHECK_FALSE(next["done"][1].contains("body"));
}

TEST_CASE("questions open when a call ends are withdrawn and answered at once",
          "[server][approvals]") {
  boost::asio::io_context io;
  auto requests = std::make_shared<ServerRequests>();
  std::vector<std::string> sent;
  auto approver = std::make_shared<ElicitingApprover>(
      io.get_executor(), requests, [&](std::string message) { sent.push_back(std::move(message)); },
      "sub:alice", true);
  std::vector<codemode::gateway::Verdict> answers;
  codemode::gateway::ApprovalRequest write;
  write.method = "POST";
  write.url = "https://api.example.com/orders";
  for (std::uint64_t ticket : {1, 2}) {
    approver->ask(ticket, write, [&](codemode::gateway::ApprovalAnswer answer) {
      answers.push_back(answer.verdict);
    });
  }
  io.run();
  REQUIRE(sent.size() == 2);
  CHECK(requests->size() == 2);
  approver->close();
  // Both answered now: the gateway need not hold their requests until its timer fires.
  CHECK(answers == std::vector{codemode::gateway::Verdict::impossible,
                               codemode::gateway::Verdict::impossible});
  CHECK(requests->size() == 0);
  REQUIRE(sent.size() == 4);
  CHECK(Json::parse(sent[2])["method"] == "notifications/cancelled");
  // A yes that comes after approves nothing.
  const Json yes{{"action", "accept"}};
  CHECK_FALSE(requests->settle(Json::parse(sent[0])["id"], &yes));
  CHECK(answers.size() == 2);
}

}  // namespace
