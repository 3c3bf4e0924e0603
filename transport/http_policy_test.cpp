#include "transport/http_policy.h"

#include <set>

#include <catch2/catch.hpp>

using namespace codemode::server;
using Tokens = std::vector<codemode::config::BearerToken>;

namespace {

HttpPolicy loopback_policy(Tokens tokens = {}) {
  return HttpPolicy(HttpPolicyOptions{
      {"http://localhost", "https://app.example.com:8443"}, std::move(tokens), "127.0.0.1", 8080});
}

// A distinct, non-null session pointer: the table only stores and compares them.
std::shared_ptr<McpSession> a_session() {
  static int anchor = 0;
  return std::shared_ptr<McpSession>(std::shared_ptr<int>(),
                                     reinterpret_cast<McpSession*>(&anchor));
}

}  // namespace

TEST_CASE("http endpoints (--http): host defaults to 127.0.0.1, port 0 is ephemeral",
          "[server][http]") {
  CHECK(parse_endpoint("127.0.0.1:8080")->host == "127.0.0.1");
  CHECK(parse_endpoint("127.0.0.1:8080")->port == 8080);
  CHECK(parse_endpoint(":0")->host == "127.0.0.1");
  CHECK(parse_endpoint("9000")->host == "127.0.0.1");
  CHECK(parse_endpoint("9000")->port == 9000);
  CHECK(parse_endpoint("localhost:1")->host == "127.0.0.1");
  CHECK(parse_endpoint("0.0.0.0:80")->host == "0.0.0.0");
  CHECK(parse_endpoint("[::1]:443")->host == "::1");
  CHECK_FALSE(parse_endpoint("::1:443"));
  CHECK_FALSE(parse_endpoint("127.0.0.1:65536"));
  CHECK_FALSE(parse_endpoint("127.0.0.1:"));
  CHECK_FALSE(parse_endpoint("example.com:80"));  // no name resolution: an IP literal
  CHECK_FALSE(parse_endpoint("127.0.0.1:8x"));
  CHECK(is_loopback("127.0.0.1"));
  CHECK(is_loopback("127.1.2.3"));
  CHECK(is_loopback("::1"));
  CHECK_FALSE(is_loopback("0.0.0.0"));
  CHECK_FALSE(is_loopback("192.168.1.1"));
}

TEST_CASE("Host on a loopback bind must be a loopback name with our port", "[server][http]") {
  const auto policy = loopback_policy();
  CHECK_FALSE(policy.check_host("127.0.0.1:8080"));
  CHECK_FALSE(policy.check_host("localhost:8080"));
  CHECK_FALSE(policy.check_host("LOCALHOST:8080"));
  CHECK_FALSE(policy.check_host("[::1]:8080"));
  CHECK(policy.check_host("evil.test:8080")->status == 403);
  CHECK(policy.check_host("evil.test:8080")->message ==
        "forbidden: host evil.test:8080 is not this server (DNS rebinding?)");
  CHECK(policy.check_host("localhost:8081"));
  CHECK(policy.check_host("localhost"));  // port 80 implied
  CHECK(policy.check_host("127.0.0.1.evil.test:8080"));
  CHECK(policy.check_host(std::nullopt)->status == 403);

  const HttpPolicy network(
      HttpPolicyOptions{{}, Tokens{{"token-1", "0123456789abcdef"}}, "0.0.0.0", 8080});
  CHECK_FALSE(network.check_host("api.example.com"));
}

TEST_CASE("Origin: absent passes, present must be listed after normalisation", "[server][http]") {
  const auto policy = loopback_policy();
  CHECK_FALSE(policy.check_origin(std::nullopt));
  CHECK_FALSE(policy.check_origin("http://localhost"));
  CHECK_FALSE(policy.check_origin("HTTP://LocalHost:80"));
  CHECK_FALSE(policy.check_origin("https://app.example.com:8443"));
  CHECK(policy.check_origin("http://localhost:3000"));
  CHECK(policy.check_origin("https://localhost"));
  CHECK(policy.check_origin("null"));
  CHECK(policy.check_origin("http://localhost/"));
  CHECK(policy.check_origin("http://user@localhost"));
  const auto refusal = policy.check_origin("http://evil.test");
  REQUIRE(refusal);
  CHECK(refusal->status == 403);
  CHECK(refusal->message ==
        "forbidden: origin http://evil.test is not allowed (the config's http.allowed_origins "
        "lists those that are)");
  // The endpoint's own origin is same-origin, never rebinding; only on its own port.
  CHECK_FALSE(policy.check_origin("http://127.0.0.1:8080"));
  CHECK_FALSE(policy.check_origin("http://localhost:8080"));
  CHECK_FALSE(policy.check_origin("http://[::1]:8080"));
  CHECK(policy.check_origin("http://127.0.0.1:8081"));
  CHECK(policy.check_origin("https://127.0.0.1:8080"));
  CHECK(normalize_origin("https://[::1]:443") == "https://[::1]");
  CHECK(normalize_origin("http://a.test:8080") == "http://a.test:8080");
}

TEST_CASE("bearer tokens: the Authorization header only, compared in constant time",
          "[server][http]") {
  CHECK(tokens_equal("secret-token-0123456789", "secret-token-0123456789"));
  CHECK_FALSE(tokens_equal("secret-token-0123456789", "secret-token-0123456780"));
  CHECK_FALSE(tokens_equal("secret", "secret-token-0123456789"));
  CHECK_FALSE(tokens_equal("", "x"));

  CHECK_FALSE(loopback_policy().check_bearer(std::nullopt));  // no tokens: no authentication
  const auto policy =
      loopback_policy(Tokens{{"one", "token-one-0123456789"}, {"two", "token-two-0123456789"}});
  CHECK(policy.requires_token());
  CHECK_FALSE(policy.check_bearer("Bearer token-one-0123456789"));
  CHECK_FALSE(policy.check_bearer("bearer token-two-0123456789"));
  const auto missing = policy.check_bearer(std::nullopt);
  REQUIRE(missing);
  CHECK(missing->status == 401);
  CHECK(missing->message == "unauthorized: a valid bearer token is required");
  CHECK(policy.check_bearer("Bearer token-one-012345678"));
  CHECK(policy.check_bearer("Basic token-one-0123456789"));
  CHECK(policy.check_bearer("token-one-0123456789"));
  // The refusal never repeats what was presented.
  CHECK(policy.check_bearer("Bearer guess")->message.find("guess") == std::string::npos);
}

TEST_CASE("content negotiation for POST /mcp", "[server][http]") {
  CHECK(choose_format(std::nullopt) == ResponseFormat::json);
  CHECK(choose_format("application/json, text/event-stream") == ResponseFormat::json);
  CHECK(choose_format("text/event-stream") == ResponseFormat::event_stream);
  CHECK(choose_format("*/*") == ResponseFormat::json);
  CHECK(choose_format("application/*;q=0.5") == ResponseFormat::json);
  CHECK(choose_format("application/json;q=0, text/event-stream") == ResponseFormat::event_stream);
  CHECK(choose_format("text/html") == ResponseFormat::none);
  CHECK(is_json_content_type("application/json"));
  CHECK(is_json_content_type("Application/JSON; charset=utf-8"));
  CHECK_FALSE(is_json_content_type("text/plain"));
  CHECK_FALSE(is_json_content_type(std::nullopt));
}

TEST_CASE("MCP-Protocol-Version: absent or supported passes, else 400", "[server][http]") {
  CHECK_FALSE(check_protocol_version(std::nullopt));
  CHECK_FALSE(check_protocol_version("2025-11-25"));
  CHECK_FALSE(check_protocol_version("2025-06-18"));
  CHECK_FALSE(check_protocol_version("2025-03-26"));
  const auto refusal = check_protocol_version("2024-11-05");
  REQUIRE(refusal);
  CHECK(refusal->status == 400);
  CHECK(refusal->message ==
        "bad request: unsupported MCP-Protocol-Version 2024-11-05 (supported: 2025-11-25, "
        "2025-06-18, 2025-03-26)");
}

TEST_CASE("session ids are 128 random bits in visible ASCII, the table forgets ended ones",
          "[server][http]") {
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    const auto id = new_session_id();
    CHECK(id.size() == 32);
    for (const char c : id) CHECK((c >= 0x21 && c <= 0x7e));
    ids.insert(id);
  }
  CHECK(ids.size() == 100);

  HttpSessionTable table(2, 2);
  const SessionOwner owner{"", "127.0.0.1"};
  CHECK_FALSE(table.add("a", a_session(), owner));
  CHECK_FALSE(table.add("b", a_session(), owner));
  CHECK(table.size() == 2);
  CHECK(table.find("a", ""));
  CHECK(table.remove("a", ""));
  CHECK_FALSE(table.remove("a", ""));
  CHECK_FALSE(table.find("a", ""));
  CHECK_FALSE(table.find("unknown", ""));
}

TEST_CASE("a full session table evicts the least recently used session", "[server][http]") {
  HttpSessionTable table(2, 2);
  const SessionOwner owner{"alice", "alice"};
  table.add("a", a_session(), owner);
  table.add("b", a_session(), owner);
  table.find("a", "alice");  // b is now the least recently used
  CHECK(table.add("c", a_session(), owner) == std::optional<std::string>("b"));
  CHECK(table.size() == 2);
  CHECK_FALSE(table.remove("b", "alice"));
  CHECK(table.remove("a", "alice"));
  CHECK(table.remove("c", "alice"));
}

TEST_CASE("a session belongs to the principal that made it: others see an unknown id",
          "[server][http][sessions]") {
  HttpSessionTable table(8, 8);
  table.add("a", a_session(), SessionOwner{"alice", "alice"});
  CHECK(table.find("a", "alice"));
  CHECK_FALSE(table.find("a", "bob"));
  CHECK_FALSE(table.find("a", ""));
  CHECK_FALSE(table.remove("a", "bob"));
  CHECK(table.size() == 1);
  CHECK(table.remove("a", "alice"));
}

TEST_CASE("a session belongs to the API whose path made it: another API's sees an unknown id",
          "[server][http][sessions][apis]") {
  HttpSessionTable table(8, 8);
  table.add("a", a_session(), SessionOwner{"alice", "alice", 1});
  CHECK(table.find("a", "alice", 1));
  CHECK_FALSE(table.find("a", "alice", 0));
  CHECK_FALSE(table.find("a", "alice"));  // the one API at /mcp is API 0
  CHECK_FALSE(table.remove("a", "alice", 2));
  CHECK(table.size() == 1);
  CHECK(table.remove("a", "alice", 1));
}

TEST_CASE("one owner's new sessions evict only its own, or those of the largest owner",
          "[server][http][sessions]") {
  HttpSessionTable table(4, 2);
  const SessionOwner a{"alice", "alice"};
  const SessionOwner b{"bob", "bob"};
  table.add("a1", a_session(), a);
  for (int i = 0; i < 100; ++i) {
    const auto evicted = table.add("b" + std::to_string(i), a_session(), b);
    if (i >= 2) CHECK(evicted == "b" + std::to_string(i - 2));  // b's own, oldest first
  }
  CHECK(table.owned_by("bob") == 2);
  CHECK(table.find("a1", "alice"));

  // Without tokens the quota is the peer address.
  const SessionOwner c{"", "10.0.0.3"};
  table.add("c1", a_session(), c);
  CHECK(table.size() == 4);
  // The table is full: a newcomer evicts from the owner holding the most (b), not from a or c.
  const auto evicted = table.add("d1", a_session(), SessionOwner{"", "10.0.0.4"});
  REQUIRE(evicted);
  CHECK(evicted->front() == 'b');
  CHECK(table.find("a1", "alice"));
  CHECK(table.find("c1", ""));
}

TEST_CASE("headers that decide routing or identity may appear once", "[server][http]") {
  CHECK_FALSE(check_repeated_headers({"Host", "Accept", "Accept", "Content-Length"}));
  for (const std::string_view name :
       {"Host", "Content-Length", "Authorization", "Origin", "Mcp-Session-Id",
        "MCP-Protocol-Version", "Mcp-Method", "Mcp-Name", "Content-Type"}) {
    const auto refusal = check_repeated_headers({name, "Accept", "x-other"});
    CHECK_FALSE(refusal);
    const auto repeated = check_repeated_headers({name, "Accept", "x-other", name});
    REQUIRE(repeated);
    CHECK(repeated->status == 400);
    CHECK(repeated->message ==
          "bad request: the " + std::string(name) + " header appears more than once");
  }
  CHECK(check_repeated_headers({"host", "HOST"}));
}

TEST_CASE("authentication names the principal: the name of the token that matched",
          "[server][http]") {
  CHECK(loopback_policy().authenticate(std::nullopt).principal.empty());
  CHECK_FALSE(loopback_policy().authenticate(std::nullopt).refusal);
  CHECK(loopback_policy().authenticate("Bearer anything-0123456789").principal.empty());
  // As config::parse gives them: named ones, then the plain list's token-1, token-2, ...
  const auto policy = loopback_policy(Tokens{{"alice", "alice-token-0123456789"},
                                             {"bob", "bob-token-0123456789"},
                                             {"token-1", "plain-token-0123456789"}});
  const auto alice = policy.authenticate("Bearer alice-token-0123456789");
  CHECK_FALSE(alice.refusal);
  CHECK(alice.principal == "alice");
  CHECK(policy.authenticate("bearer  bob-token-0123456789 ").principal == "bob");
  CHECK(policy.authenticate("Bearer plain-token-0123456789").principal == "token-1");
}

TEST_CASE("a token that is not configured is refused, with no principal", "[server][http]") {
  const auto policy = loopback_policy(Tokens{{"alice", "alice-token-0123456789"}});
  using Header = std::optional<std::string_view>;
  for (const Header authorization : {
           Header("Bearer alice-token-012345678"),    // one character short
           Header("Bearer alice-token-01234567890"),  // one character more
           Header("Bearer ALICE-TOKEN-0123456789"),   // another case
           Header("Bearer alice"),                    // the name, not the token
           Header("Bearer "),
           Header(),
           Header("Basic alice-token-0123456789"),
       }) {
    INFO(authorization.value_or("(no header)"));
    const auto wrong = policy.authenticate(authorization);
    REQUIRE(wrong.refusal);
    CHECK(wrong.refusal->status == 401);
    CHECK(wrong.refusal->message == "unauthorized: a valid bearer token is required");
    CHECK(wrong.principal.empty());
  }
}
