#include "net/ascii.h"

#include <catch2/catch.hpp>

namespace codemode::net {
namespace {

TEST_CASE("ascii classes hold only ASCII letters and digits", "[net][ascii]") {
  CHECK(is_alpha('a'));
  CHECK(is_alpha('Z'));
  CHECK_FALSE(is_alpha('0'));
  CHECK_FALSE(is_alpha('\xC3'));
  CHECK(is_digit('7'));
  CHECK_FALSE(is_digit('a'));
  CHECK(is_hex_digit('f'));
  CHECK(is_hex_digit('F'));
  CHECK_FALSE(is_hex_digit('g'));
}

TEST_CASE("ascii case folding leaves other bytes alone", "[net][ascii]") {
  CHECK(ascii_lower('Q') == 'q');
  CHECK(ascii_lower('q') == 'q');
  CHECK(ascii_lower('-') == '-');
  CHECK(lower("Content-Type") == "content-type");
  CHECK(lower("\xC3\x89T\xC3\x89") == "\xC3\x89t\xC3\x89");  // ÉTÉ: only the T folds
  CHECK(lower("") == "");
}

TEST_CASE("iequals and istarts_with ignore ASCII case only", "[net][ascii]") {
  CHECK(iequals("Transfer-Encoding", "transfer-encoding"));
  CHECK_FALSE(iequals("host", "hosts"));
  CHECK_FALSE(iequals("\xC3\x89", "\xC3\xA9"));  // É vs é: not ASCII, not folded
  CHECK(istarts_with("Bearer abc", "bearer "));
  CHECK_FALSE(istarts_with("Bear", "bearer "));
  static_assert(iequals("GET", "get"));
}

TEST_CASE("to_hex writes each byte as two lower-case digits", "[net]") {
  CHECK(to_hex("") == "");
  CHECK(to_hex(std::string_view("\x00\x01\xab\xff", 4)) == "0001abff");
  CHECK(to_hex("Az") == "417a");
}

}  // namespace
}  // namespace codemode::net
