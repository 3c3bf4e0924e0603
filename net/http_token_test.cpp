#include "net/http_token.h"

#include <catch2/catch.hpp>

namespace codemode::net {
namespace {

TEST_CASE("tokens are 1*tchar", "[net][http_token]") {
  CHECK(is_token("X-Api-Key"));
  CHECK(is_token("!#$%&'*+-.^_`|~09azAZ"));
  CHECK_FALSE(is_token(""));
  CHECK_FALSE(is_token("X Api"));
  CHECK_FALSE(is_token("X-Api:"));
  CHECK_FALSE(is_token("a\r\nb"));
  CHECK_FALSE(is_token("(comment)"));
  CHECK_FALSE(is_token("\xC3\xA9"));
  static_assert(is_tchar('~') && !is_tchar('"') && !is_tchar('/'));
}

TEST_CASE("trim_ows drops spaces and tabs only", "[net][http_token]") {
  CHECK(trim_ows(" \tvalue\t ") == "value");
  CHECK(trim_ows("a b") == "a b");
  CHECK(trim_ows("\r\nvalue") == "\r\nvalue");
  CHECK(trim_ows("  ") == "");
}

}  // namespace
}  // namespace codemode::net
