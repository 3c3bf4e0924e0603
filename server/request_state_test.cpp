// The sealed requestState of MCP 2026-07-28 approvals: only this server's, unchanged, for its
// principal, before its expiry, once.
#include "server/request_state.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "server/approvals.h"
#include "server/base64.h"

namespace {

using namespace codemode::server;

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

TEST_CASE("a requestState expires", "[server][approvals]") {
  RequestStates states({}, std::chrono::seconds(0));
  const std::string sealed = states.seal(Json::object(), "alice");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  CHECK(std::get<std::string>(states.open(sealed, "alice")) ==
        "requestState has expired; send the call again");
}

TEST_CASE("base64 round-trips bytes and refuses what is not padded base64", "[server][approvals]") {
  const std::string bytes("\0\xff\x10 any bytes\n", 16);
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

}  // namespace
