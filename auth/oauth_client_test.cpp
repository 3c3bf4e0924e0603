// What the resource server sends to and reads from the authorization server, as pure functions:
// an introspection answer held to the rules of a JWT's claims (RFC 7662), the form and client
// credentials of its POSTs, the metadata it reads, the cache key of a token.
#include "auth/oauth_client.h"

#include <catch2/catch.hpp>

#include "auth/access_token.h"

namespace codemode::auth {
namespace {

using nlohmann::json;

constexpr std::string_view kIssuer = "https://as.example.com/";
constexpr std::string_view kResource = "https://mcp.example.com/mcp";
constexpr std::chrono::system_clock::time_point kNow{std::chrono::seconds(1'800'000'000)};
constexpr std::int64_t kNowS = 1'800'000'000;

json active_answer() {
  return {{"active", true},
          {"iss", kIssuer},
          {"aud", kResource},
          {"client_id", "app-1"},
          {"sub", "alice"},
          {"exp", kNowS + 300},
          {"scope", "mcp:read mcp:execute"},
          {"token_type", "Bearer"}};
}

Verification introspected(const json& answer) {
  return verify_introspection(
      answer, Expectations{std::string(kIssuer), std::string(kResource), std::chrono::seconds(60)},
      kNow);
}

std::string refusal_of(const json& answer) {
  const Verification result = introspected(answer);
  REQUIRE(std::holds_alternative<TokenRefusal>(result));
  return std::get<TokenRefusal>(result).message;
}

TEST_CASE("an active introspection answer for this resource gives principal and scopes",
          "[auth][introspection]") {
  const Verification result = introspected(active_answer());
  REQUIRE(std::holds_alternative<VerifiedToken>(result));
  const auto& token = std::get<VerifiedToken>(result);
  CHECK(token.principal == "sub:alice");
  CHECK(token.client_id == "app-1");
  CHECK(token.scopes == std::vector<std::string>{"mcp:read", "mcp:execute"});
  CHECK(token.expires_at == kNowS + 300);

  json own = active_answer();
  own.erase("sub");
  own.erase("iss");  // the issuer's own endpoint speaks for it
  own["aud"] = json::array({"https://other.example.com", kResource});
  const Verification client = introspected(own);
  REQUIRE(std::holds_alternative<VerifiedToken>(client));
  CHECK(std::get<VerifiedToken>(client).principal == "client:app-1");
}

TEST_CASE("introspection answers that do not fit are refused, each with its reason",
          "[auth][introspection]") {
  CHECK(refusal_of(json{{"active", false}}) ==
        "invalid_token: the token is not active (introspection)");
  CHECK(refusal_of(json::array()) ==
        "invalid_token: the introspection answer is not a JSON object");
  json answer = active_answer();
  answer["active"] = "true";
  CHECK(refusal_of(answer) == "invalid_token: the token is not active (introspection)");
  answer = active_answer();
  answer["iss"] = "https://evil.example.com/";
  CHECK(refusal_of(answer) == "invalid_token: the token is from another issuer");
  answer = active_answer();
  answer["aud"] = "https://other.example.com/mcp";
  CHECK(refusal_of(answer) == "invalid_token: the token is not for this resource (aud)");
  answer.erase("aud");
  CHECK(refusal_of(answer) == "invalid_token: the token is not for this resource (aud)");
  answer = active_answer();
  answer.erase("exp");
  CHECK(refusal_of(answer) == "invalid_token: the token has no exp");
  answer["exp"] = kNowS - 61;
  CHECK(refusal_of(answer) == "invalid_token: the token has expired");
  answer = active_answer();
  answer["nbf"] = kNowS + 61;
  CHECK(refusal_of(answer) == "invalid_token: the token is not valid yet (nbf)");
  answer = active_answer();
  answer.erase("sub");
  answer.erase("client_id");
  CHECK(refusal_of(answer) == "invalid_token: the token names no subject or client");
}

TEST_CASE("the form and the client credentials of a POST to the authorization server",
          "[auth][introspection]") {
  CHECK(form_encode({{"token", "a b+c/d=&é"}, {"token_type_hint", "access_token"}}) ==
        "token=a%20b%2Bc%2Fd%3D%26%C3%A9&token_type_hint=access_token");
  // RFC 6749 §2.3.1: id and secret are form-encoded, then base64 of "id:secret".
  CHECK(basic_authorization("mcp", "secret") == "Basic bWNwOnNlY3JldA==");
  CHECK(basic_authorization("a:b", "c d") == "Basic YSUzQWI6YyUyMGQ=");
}

TEST_CASE("a token is cached under its SHA-256, and only a b64token is sent on",
          "[auth][introspection]") {
  CHECK(token_digest("abc") == "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
  CHECK(is_b64token("2YotnFZFEjr1zCsicMWpAA", 64));
  CHECK(is_b64token("a-b.c_d~e+f/g==", 64));
  CHECK_FALSE(is_b64token("", 64));
  CHECK_FALSE(is_b64token("==", 64));
  CHECK_FALSE(is_b64token("a=b", 64));
  CHECK_FALSE(is_b64token("has\"quote", 64));
  CHECK_FALSE(is_b64token("sp ace", 64));
  CHECK_FALSE(is_b64token(std::string(65, 'a'), 64));
}

TEST_CASE("the issuer's metadata: where it is, whose it is, what endpoints it names",
          "[auth][metadata]") {
  CHECK(metadata_urls("https://as.example.com/tenant/") ==
        std::vector<std::string>{
            "https://as.example.com/.well-known/oauth-authorization-server/tenant",
            "https://as.example.com/tenant/.well-known/openid-configuration"});
  CHECK(metadata_urls("https://as.example.com") ==
        std::vector<std::string>{"https://as.example.com/.well-known/oauth-authorization-server",
                                 "https://as.example.com/.well-known/openid-configuration"});
  const std::string url = "https://as.example.com/.well-known/openid-configuration";
  CHECK(std::get<std::string>(read_issuer_metadata("[]", url, "https://as.example.com")) ==
        url + " is not a JSON object");
  CHECK(std::get<std::string>(read_issuer_metadata(R"({"issuer": "https://evil.example.com"})", url,
                                                   "https://as.example.com")) ==
        url + " names another issuer");
  const auto read = read_issuer_metadata(
      R"({"issuer": "https://as.example.com", "token_endpoint": "https://as.example.com/token",
          "introspection_endpoint": "http://as.example.com/introspect"})",
      url, "https://as.example.com");
  REQUIRE(std::holds_alternative<json>(read));
  CHECK(metadata_endpoint(std::get<json>(read), "token_endpoint") ==
        "https://as.example.com/token");
  // Plain http off loopback is refused, as for the configured URLs.
  CHECK_FALSE(metadata_endpoint(std::get<json>(read), "introspection_endpoint"));
  CHECK_FALSE(metadata_endpoint(std::get<json>(read), "jwks_uri"));
}

}  // namespace
}  // namespace codemode::auth
