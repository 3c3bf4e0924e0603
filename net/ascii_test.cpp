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

TEST_CASE("hex_value, is_alnum and is_space read ASCII only", "[net][ascii]") {
  CHECK(hex_value('0') == 0);
  CHECK(hex_value('9') == 9);
  CHECK(hex_value('a') == 10);
  CHECK(hex_value('F') == 15);
  CHECK(hex_value('g') == -1);
  CHECK(hex_value('\xB9') == -1);  // superscript one in Latin-1: not a digit in any locale here
  CHECK(is_alnum('z'));
  CHECK(is_alnum('5'));
  CHECK_FALSE(is_alnum('_'));
  CHECK_FALSE(is_alnum('\xE9'));
  for (const char c : std::string_view(" \t\n\v\f\r")) CHECK(is_space(c));
  CHECK_FALSE(is_space('\0'));
  CHECK_FALSE(is_space('\xA0'));  // no-break space in Latin-1
}

TEST_CASE("upper raises a-z only", "[net][ascii]") {
  CHECK(ascii_upper('q') == 'Q');
  CHECK(ascii_upper('Q') == 'Q');
  CHECK(upper("get") == "GET");
  CHECK(upper("p\xC3\xA9t") == "P\xC3\xA9T");  // the é stays as it was
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
