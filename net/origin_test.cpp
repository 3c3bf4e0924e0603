#include "net/origin.h"

#include <catch2/catch.hpp>

namespace codemode::net {
namespace {

// The config reads allowlist entries with OriginForm::trailing_slash; the HTTP boundary reads
// Origin headers with OriginForm::header.
std::string serialised(std::string_view text, OriginForm form) {
  const auto result = parse_origin(text, form);
  const auto* origin = std::get_if<Origin>(&result);
  return origin == nullptr ? "<error>" : origin->serialised();
}

OriginError error_of(std::string_view text, OriginForm form = OriginForm::trailing_slash) {
  const auto result = parse_origin(text, form);
  REQUIRE(std::holds_alternative<OriginError>(result));
  return std::get<OriginError>(result);
}

TEST_CASE("origins are written in one form", "[net][origin]") {
  const auto form = OriginForm::header;
  CHECK(serialised("HTTP://Example.COM:80", form) == "http://example.com");
  CHECK(serialised("https://example.com:443", form) == "https://example.com");
  CHECK(serialised("https://example.com:80", form) == "https://example.com:80");
  CHECK(serialised("http://example.com:0080", form) == "http://example.com");
  CHECK(serialised("http://a.test:8080", form) == "http://a.test:8080");
  CHECK(serialised("https://[::1]:443", form) == "https://[::1]");
  CHECK(serialised("http://[FE80::1]:8080", form) == "http://[fe80::1]:8080");
  CHECK(serialised("http://under_score.test", form) == "http://under_score.test");
  CHECK(serialise_origin(Scheme::https, "example.com", 443) == "https://example.com");
  CHECK(serialise_origin(Scheme::http, "[::1]", 3000) == "http://[::1]:3000");
}

TEST_CASE("a config origin and an Origin header for the same origin compare equal",
          "[net][origin]") {
  // What config::Http::allowed_origins holds is compared by string with what the HTTP boundary
  // makes of the header; any spelling difference here would refuse a listed page or let in
  // an unlisted one.
  const std::pair<std::string_view, std::string_view> same[] = {
      {"HTTP://Example.COM:80", "http://example.com"},
      {"http://example.com/", "http://example.com"},
      {"https://App.Example.com:443/", "https://app.example.com"},
      {"https://app.example.com:8443", "https://APP.example.com:8443"},
      {"http://[::1]:80", "http://[::1]"},
      {"http://127.0.0.1:3000", "http://127.0.0.1:3000"},
  };
  for (const auto& [config_text, header_text] : same) {
    INFO(config_text << " vs " << header_text);
    const std::string listed = serialised(config_text, OriginForm::trailing_slash);
    CHECK(listed != "<error>");
    CHECK(listed == serialised(header_text, OriginForm::header));
  }
  // Different origins stay different.
  CHECK(serialised("http://example.com", OriginForm::trailing_slash) !=
        serialised("https://example.com", OriginForm::header));
  CHECK(serialised("http://example.com:8080", OriginForm::trailing_slash) !=
        serialised("http://example.com", OriginForm::header));
}

TEST_CASE("an Origin header has nothing after the authority", "[net][origin]") {
  CHECK(error_of("http://localhost/", OriginForm::header) == OriginError::path);
  CHECK(serialised("http://localhost/", OriginForm::trailing_slash) == "http://localhost");
  CHECK(error_of("http://localhost/x") == OriginError::path);
  CHECK(error_of("http://localhost//") == OriginError::path);
  CHECK(error_of("http://localhost/?a") == OriginError::query);
  CHECK(error_of("http://localhost#f") == OriginError::fragment);
}

TEST_CASE("what is not an origin says why", "[net][origin]") {
  CHECK(error_of("null") == OriginError::no_separator);
  CHECK(error_of("example.com") == OriginError::no_separator);
  CHECK(error_of("ftp://example.com") == OriginError::scheme);
  CHECK(error_of("http://user@example.com") == OriginError::userinfo);
  CHECK(error_of("http://[::1") == OriginError::unterminated_ipv6);
  CHECK(error_of("http://[]") == OriginError::invalid_ipv6);
  CHECK(error_of("http://[g::1]") == OriginError::invalid_ipv6);
  CHECK(error_of("http://[::1]x") == OriginError::after_ipv6);
  CHECK(error_of("http://:80") == OriginError::missing_host);
  CHECK(error_of("http://") == OriginError::missing_host);
  CHECK(error_of("http://a..b") == OriginError::empty_label);
  CHECK(error_of("http://example.com.") == OriginError::empty_label);
  CHECK(error_of("http://ex ample.com") == OriginError::host_character);
  CHECK(error_of("http://b\xC3\xBC"
                 "cher.example") == OriginError::host_character);
  CHECK(error_of("http://a:0") == OriginError::port);
  CHECK(error_of("http://a:65536") == OriginError::port);
  CHECK(error_of("http://a:99999999999999999999") == OriginError::port);
  CHECK(error_of("http://a:") == OriginError::port);
  CHECK(error_of("http://a:+80") == OriginError::port);
  CHECK(error_of("http://[::1]:") == OriginError::port);
}

TEST_CASE("schemes are http and https in any case", "[net][origin]") {
  CHECK(parse_scheme("HTTPS") == Scheme::https);
  CHECK(parse_scheme("http") == Scheme::http);
  CHECK_FALSE(parse_scheme("ws"));
  CHECK(default_port(Scheme::http) == 80);
  CHECK(default_port(Scheme::https) == 443);
}

}  // namespace
}  // namespace codemode::net
