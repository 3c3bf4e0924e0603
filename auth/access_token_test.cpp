// verify_access_token and KeySet, with keys OpenSSL makes here and tokens it signs: every
// refusal a hostile or stale token must meet, and the principal and scopes a good one gives.
#include "auth/access_token.h"

#include <catch2/catch.hpp>

#include "auth/jwks.h"
#include "auth/test_keys.h"

namespace codemode::auth {
namespace {

using nlohmann::json;
using testing::TestKey;

constexpr std::string_view kIssuer = "https://as.example.com/";
constexpr std::string_view kResource = "https://mcp.example.com/mcp";
constexpr std::chrono::system_clock::time_point kNow{std::chrono::seconds(1'800'000'000)};
constexpr std::int64_t kNowS = 1'800'000'000;

json good_claims() {
  return {{"iss", kIssuer},
          {"aud", kResource},
          {"sub", "alice"},
          {"client_id", "app-1"},
          {"exp", kNowS + 300},
          {"iat", kNowS - 10},
          {"scope", "mcp:read mcp:execute"}};
}

KeySet key_set(const std::vector<const TestKey*>& keys) {
  json jwks = {{"keys", json::array()}};
  for (const TestKey* key : keys) jwks["keys"].push_back(key->jwk);
  auto read = KeySet::from_jwks(jwks.dump());
  REQUIRE(std::holds_alternative<KeySet::Read>(read));
  return std::get<KeySet::Read>(read).keys;
}

Verification check(const std::string& token, const KeySet& keys) {
  return verify_access_token(
      token, keys,
      Expectations{std::string(kIssuer), std::string(kResource), std::chrono::seconds(60)}, kNow);
}

std::string refusal(const Verification& result) {
  const auto* refused = std::get_if<TokenRefusal>(&result);
  return refused ? refused->message : "(accepted)";
}

const TestKey& rsa() {
  static const TestKey kKey = testing::make_rsa_key("rsa-1");
  return kKey;
}
const TestKey& ec() {
  static const TestKey kKey = testing::make_ec_key("ec-1");
  return kKey;
}

}  // namespace

TEST_CASE("a token's claims pick the first principals entry of the form claim:NAME=VALUE",
          "[auth][token][claims]") {
  const json claims = {
      {"sub", "alice"}, {"groups", {"staff", "mcp-admins"}}, {"department", "ops"}, {"level", 3}};
  const std::vector<std::string> keys = {"alice", "claim:groups=finance", "claim:groups=mcp-admins",
                                         "claim:department=ops"};
  CHECK(claim_profile_of(claims, keys) == "claim:groups=mcp-admins");  // an array holding it
  CHECK(claim_profile_of(claims, {"claim:department=ops"}) == "claim:department=ops");
  CHECK(claim_profile_of(claims, {"claim:department=op"}) == "");  // whole values only
  CHECK(claim_profile_of(claims, {"claim:level=3"}) == "");        // strings only
  CHECK(claim_profile_of(claims, {"claim:=ops", "claim:groups", "sub:alice"}) == "");
  CHECK(claim_profile_of(claims, {"claim:missing=x"}) == "");
  CHECK(claim_profile_of(json::object(), keys) == "");
}

TEST_CASE("a token signed by the issuer's RSA key for this resource passes", "[auth][token]") {
  const KeySet keys = key_set({&rsa(), &ec()});
  const Verification result = check(testing::sign(rsa(), good_claims()), keys);
  REQUIRE(refusal(result) == "(accepted)");
  const auto& token = std::get<VerifiedToken>(result);
  CHECK(token.principal == "sub:alice");
  CHECK(token.subject == "alice");
  CHECK(token.client_id == "app-1");
  CHECK(token.scopes == std::vector<std::string>{"mcp:read", "mcp:execute"});
  CHECK(token.expires_at == kNowS + 300);
}

TEST_CASE("an ES256 token passes and the aud may be an array", "[auth][token]") {
  const KeySet keys = key_set({&rsa(), &ec()});
  json claims = good_claims();
  claims["aud"] = json::array({"https://other.example.com", kResource});
  claims.erase("scope");
  claims["scp"] = json::array({"mcp:read"});
  const Verification result = check(testing::sign(ec(), claims), keys);
  REQUIRE(refusal(result) == "(accepted)");
  CHECK(std::get<VerifiedToken>(result).scopes == std::vector<std::string>{"mcp:read"});
}

TEST_CASE("an EdDSA (Ed25519) token passes, and its key takes no other algorithm",
          "[auth][token]") {
  const TestKey ed = testing::make_ed25519_key("ed-1");
  const KeySet keys = key_set({&rsa(), &ed});
  CHECK(refusal(check(testing::sign(ed, good_claims()), keys)) == "(accepted)");
  CHECK(refusal(check(testing::sign(rsa(), good_claims(), {{"kid", "ed-1"}}), keys)) ==
        "invalid_token: the token's algorithm is not its key's");
  const TestKey other = testing::make_ed25519_key("ed-1");
  CHECK(refusal(check(testing::sign(other, good_claims()), keys)) ==
        "invalid_token: the signature does not verify");
}

TEST_CASE("a client's own token is the client's principal", "[auth][token]") {
  const KeySet keys = key_set({&rsa()});
  json claims = good_claims();
  claims["sub"] = "app-1";
  auto result = check(testing::sign(rsa(), claims), keys);
  REQUIRE(refusal(result) == "(accepted)");
  CHECK(std::get<VerifiedToken>(result).principal == "client:app-1");
  claims.erase("sub");
  claims.erase("client_id");
  claims["azp"] = "app-2";
  result = check(testing::sign(rsa(), claims), keys);
  REQUIRE(refusal(result) == "(accepted)");
  CHECK(std::get<VerifiedToken>(result).principal == "client:app-2");
}

TEST_CASE("a subject unsafe in a log line becomes a digest", "[auth][token]") {
  CHECK(principal_of("alice@example.com", "") == "sub:alice@example.com");
  const std::string hashed = principal_of("evil\nname", "");
  CHECK(hashed.rfind("sub-sha256:", 0) == 0);
  CHECK(hashed.size() == std::string_view("sub-sha256:").size() + 16);
  CHECK(principal_of(std::string(200, 'a'), "") != "sub:" + std::string(200, 'a'));
}

TEST_CASE("a subject and a client id hashed are never one principal", "[auth][token]") {
  // The same unsafe text as a user's subject and as a client acting for itself: two callers.
  const std::string unsafe = "evil name";
  const std::string as_subject = principal_of(unsafe, "app-1");
  const std::string as_client = principal_of("", unsafe);
  CHECK(as_subject.rfind("sub-sha256:", 0) == 0);
  CHECK(as_client.rfind("client-sha256:", 0) == 0);
  CHECK(as_client.size() == std::string_view("client-sha256:").size() + 16);
  CHECK(as_subject != as_client);
  CHECK(as_subject.substr(as_subject.find(':')) == as_client.substr(as_client.find(':')));
}

TEST_CASE(
    "a JWT typed as another kind is no access token, and with require_typ_at_jwt only at+jwt is",
    "[auth][token][hostile]") {
  const KeySet keys = key_set({&rsa()});
  // Every claim an access token has, signed by the issuer's key, under the given header `typ`
  // (null: none).
  const auto typed = [&](const json& typ) {
    return testing::sign(rsa(), good_claims(), json{{"typ", typ}});
  };
  const Expectations strict{std::string(kIssuer), std::string(kResource), std::chrono::seconds(60),
                            TokenTyp::at_jwt};
  const auto strictly = [&](const json& typ) {
    return refusal(verify_access_token(typed(typ), keys, strict, kNow));
  };
  const std::string other_kind =
      "invalid_token: the token is typed as another kind of JWT (typ not at+jwt or JWT)";
  const std::string not_at_jwt =
      "invalid_token: the token is not typed as an access token (typ at+jwt, RFC 9068)";

  // By default (http.oauth.require_typ_at_jwt false): at+jwt, and the JWT or nothing that
  // Keycloak, Entra ID, Auth0, Okta and Cognito write on their access tokens.
  for (const json& accepted :
       {json("at+jwt"), json("AT+JWT"), json("application/at+jwt"), json("Application/At+Jwt"),
        json("JWT"), json("jwt"), json("application/jwt"), json(nullptr)}) {
    INFO(accepted.dump());
    CHECK(refusal(check(typed(accepted), keys)) == "(accepted)");
  }
  // A logout token, a security event, a DPoP proof, ...: JWTs the issuer may sign with the
  // same keys and the same claims, never access tokens.
  for (const json& other :
       {json("logout+jwt"), json("secevent+jwt"), json("dpop+jwt"), json("application/logout+jwt"),
        json("at+jwt2"), json("jwt+at"), json("application/"), json("")}) {
    INFO(other.dump());
    CHECK(refusal(check(typed(other), keys)) == other_kind);
  }
  CHECK(refusal(check(typed(5), keys)) == "invalid_token: the token is not a signed JWT");
  CHECK(refusal(check(typed(json::array({"at+jwt"})), keys)) ==
        "invalid_token: the token is not a signed JWT");

  // Required (true): at+jwt only; JWT, or none, is what an ID token has too.
  CHECK(strictly("at+jwt") == "(accepted)");
  CHECK(strictly("application/AT+JWT") == "(accepted)");
  for (const json& refused :
       {json("JWT"), json("application/jwt"), json(nullptr), json("logout+jwt"), json("")}) {
    INFO(refused.dump());
    CHECK(strictly(refused) == not_at_jwt);
  }
}

TEST_CASE("claims that do not fit are refused, each with its reason", "[auth][token]") {
  const KeySet keys = key_set({&rsa()});
  const auto with = [](const char* name, const json& value) {
    json claims = good_claims();
    claims[name] = value;
    return claims;
  };
  const auto without = [](const char* name) {
    json claims = good_claims();
    claims.erase(name);
    return claims;
  };
  CHECK(refusal(check(testing::sign(rsa(), with("iss", "https://evil.example.com/")), keys)) ==
        "invalid_token: the token is from another issuer");
  CHECK(refusal(check(testing::sign(rsa(), with("iss", "https://as.example.com")), keys)) ==
        "invalid_token: the token is from another issuer");
  CHECK(refusal(check(testing::sign(rsa(), with("aud", "https://other.example.com/mcp")), keys)) ==
        "invalid_token: the token is not for this resource (aud)");
  CHECK(refusal(check(testing::sign(rsa(), without("aud")), keys)) ==
        "invalid_token: the token is not for this resource (aud)");
  CHECK(refusal(check(testing::sign(rsa(), with("exp", kNowS - 61)), keys)) ==
        "invalid_token: the token has expired");
  CHECK(refusal(check(testing::sign(rsa(), without("exp")), keys)) ==
        "invalid_token: the token has no exp");
  CHECK(refusal(check(testing::sign(rsa(), with("nbf", kNowS + 61)), keys)) ==
        "invalid_token: the token is not valid yet (nbf)");
  json anonymous = without("sub");
  anonymous.erase("client_id");
  CHECK(refusal(check(testing::sign(rsa(), anonymous), keys)) ==
        "invalid_token: the token names no subject or client");
}

TEST_CASE("exp and nbf allow the leeway and no more", "[auth][token]") {
  const KeySet keys = key_set({&rsa()});
  json claims = good_claims();
  claims["exp"] = kNowS - 59;
  claims["nbf"] = kNowS + 59;
  CHECK(refusal(check(testing::sign(rsa(), claims), keys)) == "(accepted)");
  claims["exp"] = kNowS - 60;
  CHECK(refusal(check(testing::sign(rsa(), claims), keys)) ==
        "invalid_token: the token has expired");
}

TEST_CASE("the key decides the algorithm: none and HS256 with the public key are refused",
          "[auth][token][hostile]") {
  const KeySet keys = key_set({&rsa(), &ec()});
  const json none_header = {{"alg", "none"}, {"kid", "rsa-1"}};
  CHECK(refusal(check(testing::unsigned_token(none_header, good_claims()), keys)) ==
        "invalid_token: the token is not a signed JWT");
  CHECK(refusal(check(testing::unsigned_token(none_header, good_claims(), "c2ln"), keys)) ==
        "invalid_token: the token's algorithm is not accepted");
  // libjwt 1.10 (Debian 12) would accept this one if handed the key as PEM: it takes the
  // header's algorithm and uses the PEM text as the HMAC secret.
  const std::string confused = testing::sign_hs256(rsa().public_key_pem, "rsa-1", good_claims());
  CHECK(refusal(check(confused, keys)) == "invalid_token: the token's algorithm is not accepted");
  // An algorithm we accept, but not the key's: an RS256 header on the EC key's kid.
  json rs_on_ec = {{"kid", "ec-1"}};
  const std::string swapped = testing::sign(rsa(), good_claims(), rs_on_ec);
  CHECK(refusal(check(swapped, keys)) == "invalid_token: the token's algorithm is not its key's");
}

TEST_CASE("a signature by another key, an unknown kid, a changed claim are refused",
          "[auth][token][hostile]") {
  const KeySet keys = key_set({&rsa()});
  const TestKey impostor = testing::make_rsa_key("rsa-1");  // same kid, another key
  CHECK(refusal(check(testing::sign(impostor, good_claims()), keys)) ==
        "invalid_token: the signature does not verify");
  const TestKey stranger = testing::make_rsa_key("rsa-unknown");
  CHECK(refusal(check(testing::sign(stranger, good_claims()), keys)) ==
        "invalid_token: no key of the issuer has the token's kid");
  // The payload of one token with the signature of another.
  const std::string token = testing::sign(rsa(), good_claims());
  json claims = good_claims();
  claims["sub"] = "mallory";
  const std::string other = testing::sign(rsa(), claims);
  const std::string spliced = token.substr(0, token.find('.')) +
                              other.substr(other.find('.'), other.rfind('.') - other.find('.')) +
                              token.substr(token.rfind('.'));
  CHECK(refusal(check(spliced, keys)) == "invalid_token: the signature does not verify");
}

TEST_CASE("malformed and oversized tokens are refused before any parsing",
          "[auth][token][hostile]") {
  const KeySet keys = key_set({&rsa()});
  for (const std::string token : {"", "abc", "a.b", "a.b.c.d", "a..c", ".b.c", "a b.c.d",
                                  "eyJhbGciOiJSUzI1NiJ9.e30.!!", "e30.e30.e30"}) {
    CAPTURE(token);
    CHECK(refusal(check(token, keys)) == "invalid_token: the token is not a signed JWT");
  }
  json claims = good_claims();
  claims["padding"] = std::string(kMaxTokenBytes, 'x');
  CHECK(refusal(check(testing::sign(rsa(), claims), keys)) ==
        "invalid_token: the token is longer than 8192 bytes");
  // A critical header extension we cannot know is refused (RFC 7515 §4.1.11).
  CHECK(refusal(check(testing::sign(rsa(), good_claims(), {{"crit", json::array({"x"})}}), keys)) ==
        "invalid_token: the token is not a signed JWT");
}

TEST_CASE("a token without kid uses the one key of its algorithm", "[auth][token]") {
  json jwk = rsa().jwk;
  jwk.erase("kid");
  auto read = KeySet::from_jwks(json{{"keys", json::array({jwk})}}.dump());
  REQUIRE(std::holds_alternative<KeySet::Read>(read));
  const KeySet& keys = std::get<KeySet::Read>(read).keys;
  CHECK(keys.find("", Algorithm::rs256) != nullptr);
  CHECK(keys.find("", Algorithm::es256) == nullptr);
}

TEST_CASE("the key set skips what cannot sign, and says why", "[auth][jwks]") {
  const TestKey small = testing::make_rsa_key("small", 1024);
  json oct = {{"kty", "oct"}, {"kid", "hmac"}, {"k", "c2VjcmV0"}};
  json enc = rsa().jwk;
  enc["use"] = "enc";
  enc["kid"] = "enc";
  json ps = rsa().jwk;
  ps["alg"] = "PS256";
  ps["kid"] = "ps";
  json bad_point = ec().jwk;
  bad_point["kid"] = "off-curve";
  bad_point["y"] = bad_point["x"];
  auto read = KeySet::from_jwks(
      json{{"keys", json::array({oct, small.jwk, enc, ps, bad_point, rsa().jwk, ec().jwk})}}
          .dump());
  REQUIRE(std::holds_alternative<KeySet::Read>(read));
  const auto& result = std::get<KeySet::Read>(read);
  CHECK(result.keys.size() == 2);
  const std::string small_key =
      "key 1 (kid small): the RSA key has 1024 bits (at least 2048 are required)";
  CHECK(result.skipped ==
        std::vector<std::string>{"key 0 (kid hmac): kty oct is not accepted", small_key,
                                 "key 2 (kid enc): use is not sig",
                                 "key 3 (kid ps): alg PS256 is not accepted",
                                 "key 4 (kid off-curve): OpenSSL refused the EC point"});
  CHECK(std::get<std::string>(KeySet::from_jwks("[]")) == "the JWKS is not a JSON object");
  CHECK(std::get<std::string>(KeySet::from_jwks("{}")) == "the JWKS has no keys array");
}

TEST_CASE("base64url decodes without padding and refuses other characters", "[auth][jwks]") {
  CHECK(base64url_decode("") == std::string());
  CHECK(base64url_decode("YQ") == std::string("a"));
  CHECK(base64url_decode("YWI") == std::string("ab"));
  CHECK(base64url_decode("YWJj") == std::string("abc"));
  CHECK(base64url_decode("-_8") == std::string("\xfb\xff"));
  CHECK_FALSE(base64url_decode("YQ=="));
  CHECK_FALSE(base64url_decode("Y+Q"));
  CHECK_FALSE(base64url_decode("Y"));
}

TEST_CASE("missing scopes are listed in the order needed", "[auth][scopes]") {
  CHECK(missing_scopes({"a", "b", "c"}, {"b"}) == std::vector<std::string>{"a", "c"});
  CHECK(missing_scopes({}, {"b"}).empty());
}

}  // namespace codemode::auth
