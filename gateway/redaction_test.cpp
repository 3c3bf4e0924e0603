// What the gateway withholds of a credential, as pure functions: the forms a configured one is
// looked for in, and where in a response and in our own text it is replaced. The same behaviour
// end to end, against a hostile upstream, is in gateway_test.cpp ([gateway][hostile],
// [gateway][credentials]).
#include "gateway/redaction.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace {

using namespace codemode::gateway;
using codemode::config::Upstream;

// The one upstream of these tests: a bearer token and an API key.
Upstream bearer_upstream() {
  return Upstream{"http://127.0.0.1:9",
                  {{"Authorization", "Bearer realsecrettoken123"}, {"X-Api-Key", "key-abc"}}};
}

std::vector<std::string> bearer_secrets() { return secrets_of({bearer_upstream()}); }

// `body` as the code gets it from a GET, with the bearer upstream's secrets.
std::string redacted_body(std::string body) {
  InboundResponse response;
  response.status = 200;
  response.body = std::move(body);
  redact(response, Method::get, bearer_secrets());
  return response.body;
}

std::vector<std::string> content_lengths(const InboundResponse& response) {
  std::vector<std::string> values;
  for (const auto& [name, value] : response.headers) {
    if (name == "Content-Length") values.push_back(value);
  }
  return values;
}

}  // namespace

TEST_CASE("secrets are each header value and each long word of it", "[gateway][redaction]") {
  const std::vector<std::string> secrets = bearer_secrets();
  CHECK(secrets ==
        std::vector<std::string>{"Bearer realsecrettoken123", "realsecrettoken123", "key-abc"});
  // "Bearer" (6 bytes) is too common a word to withhold; a word of 8 bytes is withheld, split at
  // tabs as at spaces; a value of one word is listed once.
  const auto split = secrets_of(
      {Upstream{"http://a.test", {{"A", "Token\tabcdefgh short"}, {"B", "onewordvalue"}}}});
  CHECK(split == std::vector<std::string>{"Token\tabcdefgh short", "abcdefgh", "onewordvalue"});
  CHECK(secrets_of({Upstream{"http://a.test", {{"A", "Key 1234567"}}}}) ==
        std::vector<std::string>{"Key 1234567"});
}

TEST_CASE("secrets include query values as sent and withheld texts", "[gateway][redaction]") {
  Upstream upstream{"http://a.test", {}};
  upstream.query = {{"api_key", "qsecret-4f9a2c"}, {"sig", "a b&c=d"}};
  upstream.withheld = {"user:pass-word-99", "pass-word-99"};
  // The encoded form is listed only when it differs: it is what the upstream sees, and what a
  // reflected URL shows.
  CHECK(secrets_of({upstream}) == std::vector<std::string>{"qsecret-4f9a2c", "a b&c=d",
                                                           "a%20b%26c%3Dd", "user:pass-word-99",
                                                           "pass-word-99"});
  // Every upstream's, in order.
  CHECK(secrets_of({upstream, bearer_upstream()}).size() == 5 + 3);
  CHECK(secrets_of({}).empty());
}

TEST_CASE("a secret is redacted as written, wherever it stands in the body",
          "[gateway][redaction]") {
  CHECK(redacted_body("Authorization: Bearer realsecrettoken123\nX-Api-Key: key-abc\n") ==
        "Authorization: [redacted]\nX-Api-Key: [redacted]\n");
  CHECK(redacted_body("token=realsecrettoken123&again=realsecrettoken123") ==
        "token=[redacted]&again=[redacted]");
  CHECK(redacted_body("realsecrettoken12") == "realsecrettoken12");  // not the secret
  CHECK(redacted_body("") == "");
}

TEST_CASE("a percent-encoded secret is redacted with the escapes it spans",
          "[gateway][redaction]") {
  // Every byte encoded, in either case of hex digit.
  CHECK(redacted_body("auth=%72%65%61%6C%73%65%63%72%65%74%74%6F%6B%65%6E%31%32%33&x=1") ==
        "auth=[redacted]&x=1");
  CHECK(redacted_body("auth=%72%65%61%6c%73%65%63%72%65%74%74%6f%6b%65%6e%31%32%33") ==
        "auth=[redacted]");
  // Partly encoded (a space as %20): the occurrence starts and ends on escapes and plain bytes.
  CHECK(redacted_body("a=Bearer%20realsecrettoken123;") == "a=[redacted];");
  CHECK(redacted_body("x%72ealsecrettoken12%33y") == "x[redacted]y");
  // An escape cut short, or not hex, is a plain byte.
  CHECK(redacted_body("%7") == "%7");
  CHECK(redacted_body("%zzrealsecrettoken123") == "%zz[redacted]");
}

TEST_CASE("a JSON-escaped secret is redacted, ASCII escapes only", "[gateway][redaction]") {
  const Upstream escaped{"http://a.test", {{"Authorization", "Bearer abc/def+ghi=0123456789"}}};
  const auto body = [&](std::string text) {
    InboundResponse response;
    response.body = std::move(text);
    redact(response, Method::get, secrets_of({escaped}));
    return response.body;
  };
  // \/ (PHP), \u002B and \u002b (.NET), every byte as \u00XX, and mixed with a %XX escape.
  CHECK(body(R"({"a":"abc\/def+ghi=0123456789"})") == R"({"a":"[redacted]"})");
  CHECK(body(R"({"a":"abc/def\u002Bghi=0123456789"})") == R"({"a":"[redacted]"})");
  CHECK(body(R"({"a":"abc/def\u002bghi\u003d0123456789"})") == R"({"a":"[redacted]"})");
  CHECK(body(R"({"a":"abc\/def%2Bghi=0123456789"})") == R"({"a":"[redacted]"})");
  const Upstream quoted{"http://a.test", {{"X-Key", R"(sec"ret\value)"}}};
  InboundResponse response;
  response.body = R"({"k":"sec\"ret\\value"})";
  redact(response, Method::get, secrets_of({quoted}));
  CHECK(response.body == R"({"k":"[redacted]"})");
  // \u0080 and above are not ASCII: not decoded, so not matched through.
  const Upstream high{"http://a.test", {{"X-Key", "caf\xc3\xa9-secret-value"}}};
  response.body = R"(caf\u00e9-secret-value)";
  redact(response, Method::get, secrets_of({high}));
  CHECK(response.body == R"(caf\u00e9-secret-value)");
}

TEST_CASE("other transformations of a secret are not recognised", "[gateway][redaction]") {
  // base64("realsecrettoken123"): the documented limit, pinned so a change is deliberate.
  CHECK(redacted_body("cmVhbHNlY3JldHRva2VuMTIz") == "cmVhbHNlY3JldHRva2VuMTIz");
  CHECK(redacted_body("REALSECRETTOKEN123") == "REALSECRETTOKEN123");  // case counts
}

TEST_CASE("overlapping secrets are replaced as one, in any order", "[gateway][redaction]") {
  InboundResponse response;
  response.body = "xx Bearer realsecrettoken123 yy abcdefghij zz";
  redact(response, Method::get,
         {"abcdefgh", "realsecrettoken123", "Bearer realsecrettoken123", "cdefghij"});
  CHECK(response.body == "xx [redacted] yy [redacted] zz");
  response.body = "xx Bearer realsecrettoken123 yy abcdefghij zz";
  redact(response, Method::get,
         {"cdefghij", "Bearer realsecrettoken123", "realsecrettoken123", "abcdefgh"});
  CHECK(response.body == "xx [redacted] yy [redacted] zz");
}

TEST_CASE("every part of a response the code sees is redacted", "[gateway][redaction]") {
  InboundResponse response;
  response.status = 302;
  response.status_text = "Found realsecrettoken123";
  response.final_url = "http://127.0.0.1:9/landed?auth=Bearer%20realsecrettoken123";
  response.headers = {
      {"Location", "/next?key=key-abc"}, {"X-realsecrettoken123-Seen", "1"}, {"X-Plain", "plain"}};
  response.body = "moved";
  redact(response, Method::get, bearer_secrets());
  CHECK(response.status_text == "Found [redacted]");
  CHECK(response.final_url == "http://127.0.0.1:9/landed?auth=[redacted]");
  // A header name stays a token: `redacted`, no brackets.
  CHECK(response.headers == Headers{{"Location", "/next?key=[redacted]"},
                                    {"X-redacted-Seen", "1"},
                                    {"X-Plain", "plain"},
                                    {"Content-Length", "5"}});
  CHECK(response.body == "moved");
  CHECK(response.status == 302);
}

TEST_CASE("an exchanged token is redacted like a configured secret", "[gateway][redaction]") {
  InboundResponse response;
  response.body = "Authorization: Bearer downstream-token-77\nX-Api-Key: key-abc\n";
  redact(response, Method::get, bearer_secrets(), "downstream-token-77");
  CHECK(response.body == "Authorization: Bearer [redacted]\nX-Api-Key: [redacted]\n");
  // With no configured secret at all, the token alone.
  response.body = "echo downstream-token-77";
  response.headers.clear();
  redact(response, Method::get, {}, "downstream-token-77");
  CHECK(response.body == "echo [redacted]");
}

TEST_CASE("Content-Length counts the redacted body, and HEAD, 204 and 304 get none",
          "[gateway][redaction]") {
  InboundResponse get;
  get.status = 200;
  get.body = "token realsecrettoken123";  // 24 bytes as received, 16 as handed over
  redact(get, Method::get, bearer_secrets());
  CHECK(get.body == "token [redacted]");
  CHECK(content_lengths(get) == std::vector<std::string>{"16"});
  // No secrets to look for: still the body's length.
  InboundResponse plain;
  plain.status = 200;
  plain.body = "abc";
  redact(plain, Method::post, {});
  CHECK(content_lengths(plain) == std::vector<std::string>{"3"});
  // A HEAD answer has no body, so no length that could hint at what the GET's would be.
  InboundResponse head;
  head.status = 200;
  redact(head, Method::head, bearer_secrets());
  CHECK(content_lengths(head).empty());
  for (const unsigned status : {204U, 304U}) {
    InboundResponse bodyless;
    bodyless.status = status;
    redact(bodyless, Method::get, bearer_secrets());
    CHECK(content_lengths(bodyless).empty());
  }
}

TEST_CASE("our own text that would show a secret is withheld whole", "[gateway][redaction]") {
  const std::vector<std::string> secrets = bearer_secrets();
  CHECK(scrub("origin http://evil.test is not allowed", secrets) ==
        "origin http://evil.test is not allowed");
  CHECK(scrub("origin http://realsecrettoken123.evil.test is not allowed", secrets) ==
        "(withheld: it would show a configured credential)");
  CHECK(scrub("x key-abc", secrets) == "(withheld: it would show a configured credential)");
  // As written only: our messages quote what the code wrote, and a query value is listed in
  // the encoded form the gateway sends too.
  Upstream upstream{"http://a.test", {}};
  upstream.query = {{"sig", "a b&c=d"}};
  CHECK(scrub("GET /x?sig=a%20b%26c%3Dd", secrets_of({upstream})) ==
        "(withheld: it would show a configured credential)");
  CHECK(scrub("anything", {}) == "anything");
}
