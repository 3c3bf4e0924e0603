// Method, header and credential rules: what the code may send, what the gateway owns, and
// that configured headers always win.
#include "gateway/request_check.h"

#include <catch2/catch.hpp>
#include <string>

#include "gateway/gateway.h"

namespace {

using namespace codemode::gateway;
using codemode::config::Upstream;

GatewayError error_of(const std::variant<CheckedHeaders, GatewayError>& result) {
  REQUIRE(std::holds_alternative<GatewayError>(result));
  return std::get<GatewayError>(result);
}

}  // namespace

TEST_CASE("the six fetch methods are accepted in any case", "[gateway][request]") {
  CHECK(parse_method("GET") == Method::get);
  CHECK(parse_method("get") == Method::get);
  CHECK(parse_method("Post") == Method::post);
  CHECK(parse_method("PUT") == Method::put);
  CHECK(parse_method("patch") == Method::patch);
  CHECK(parse_method("DELETE") == Method::del);
  CHECK(parse_method("HEAD") == Method::head);
  CHECK_FALSE(parse_method("CONNECT"));
  CHECK_FALSE(parse_method("TRACE"));
  CHECK_FALSE(parse_method("OPTIONS"));
  CHECK_FALSE(parse_method(""));
  CHECK_FALSE(parse_method("GET "));
}

TEST_CASE("header names are tokens, values hold no CR, LF or controls", "[gateway][request]") {
  CHECK(is_header_name("X-Custom_1"));
  CHECK_FALSE(is_header_name(""));
  CHECK_FALSE(is_header_name("X Custom"));
  CHECK_FALSE(is_header_name("X:Custom"));
  CHECK_FALSE(is_header_name("X\r\nInjected"));
  CHECK(is_header_value("a\tb c"));
  CHECK(is_header_value("caf\xc3\xa9"));  // obs-text
  CHECK_FALSE(is_header_value("a\r\nX-Injected: 1"));
  CHECK_FALSE(is_header_value("a\nb"));
  CHECK_FALSE(is_header_value(std::string("a\0b", 3)));
  CHECK_FALSE(is_header_value("a\x7f"));
  CHECK_FALSE(is_header_value("a\x01"));

  const auto crlf = error_of(check_headers({{"X-Token", "secret-value\r\nX-Injected: 1"}}));
  CHECK(crlf.kind == ErrorKind::policy);
  CHECK(crlf.message ==
        "header X-Token has an invalid value (CR, LF, NUL or another control character)");
  CHECK(crlf.message.find("secret-value") == std::string::npos);
  CHECK(error_of(check_headers({{"Bad Name", "v"}})).message ==
        "invalid header name (not an HTTP token)");
  CHECK(error_of(check_headers({{"", "v"}})).message == "empty header name");
  CHECK(error_of(check_headers({{"X-Nul", std::string("a\0b", 3)}}))
            .message.starts_with("header X-Nul has an invalid value"));
}

TEST_CASE("values are trimmed and gateway-owned headers are dropped", "[gateway][request]") {
  const auto result = check_headers({{"Accept", "  application/json\t"},
                                     {"Host", "evil.test"},
                                     {"content-length", "5"},
                                     {"Transfer-Encoding", "chunked"},
                                     {"Connection", "close"},
                                     {"Keep-Alive", "1"},
                                     {"Upgrade", "h2c"},
                                     {"TE", "trailers"},
                                     {"Trailer", "x"},
                                     {"Expect", "100-continue"},
                                     {"Accept-Encoding", "br"},
                                     {"Proxy-Authorization", "x"},
                                     {"Cookie", "a=b"}});
  REQUIRE(std::holds_alternative<CheckedHeaders>(result));
  const auto& checked = std::get<CheckedHeaders>(result);
  CHECK(checked.headers == Headers{{"Accept", "application/json"}, {"Cookie", "a=b"}});
  CHECK(checked.dropped.size() == 11);
}

TEST_CASE("header count and size are bounded", "[gateway][request]") {
  Headers many(kMaxRequestHeaders + 1, Header{"X-A", "1"});
  CHECK(error_of(check_headers(many)).message == "more than 100 request headers");
  Headers big{{"X-Big", std::string(kMaxRequestHeaderBytes, 'a')}};
  CHECK(error_of(check_headers(big)).message == "request headers exceed 65536 bytes");
}

TEST_CASE("credentials are injected last and override case-insensitively", "[gateway][request]") {
  const Upstream upstream{"http://127.0.0.1:8788",
                          {{"Authorization", "Bearer real"}, {"X-Api-Key", "k"}}};
  const Headers sent = inject_credentials({{"authorization", "Bearer fake"},
                                           {"Accept", "application/json"},
                                           {"X-API-KEY", "fake"},
                                           {"AUTHORIZATION", "again"}},
                                          upstream);
  CHECK(sent == Headers{{"Accept", "application/json"},
                        {"Authorization", "Bearer real"},
                        {"X-Api-Key", "k"}});
  CHECK(inject_credentials({}, Upstream{"http://a.test", {}}).empty());
}

TEST_CASE("the subrequest budget counts fetches", "[gateway][budget]") {
  CallBudget budget(3);
  CHECK(budget.try_spend());
  CHECK(budget.try_spend());
  CHECK(budget.try_spend());
  CHECK_FALSE(budget.try_spend());
  CHECK_FALSE(budget.try_spend());
  CHECK(budget.used() == 3);
  CHECK(budget.limit() == 3);
  CallBudget none(0);
  CHECK_FALSE(none.try_spend());
}

TEST_CASE("credential text is recognised in our own messages", "[gateway][request]") {
  CHECK(contains_any("echo Bearer abc123", {"abc123"}));
  CHECK_FALSE(contains_any("nothing here", {"abc123", ""}));
}
