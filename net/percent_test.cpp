#include "net/percent.h"

#include <catch2/catch.hpp>

namespace codemode::net {
namespace {

TEST_CASE("kUnreserved leaves ALPHA DIGIT - . _ ~ and encodes every other byte", "[net][percent]") {
  // The gateway's query components and the OAuth client's form fields and Basic credentials.
  CHECK(percent_encode("AZaz09-._~", kUnreserved) == "AZaz09-._~");
  CHECK(percent_encode("a b+c&d=e/f?g#h%i", kUnreserved) == "a%20b%2Bc%26d%3De%2Ff%3Fg%23h%25i");
  CHECK(percent_encode("[]!*'();:@$,", kUnreserved) == "%5B%5D%21%2A%27%28%29%3B%3A%40%24%2C");
  CHECK(percent_encode(std::string_view("\x00\x7f\xc3\xa9", 4), kUnreserved) == "%00%7F%C3%A9");
  CHECK(percent_encode("", kUnreserved).empty());
}

TEST_CASE("kPrintable leaves 0x21-0x7e and encodes space, controls and non-ASCII",
          "[net][percent]") {
  // The ledger's methods and paths: bytes the code chose, made safe for JSON and a log line.
  CHECK(percent_encode("/a?b=%41&c[]=~", kPrintable) == "/a?b=%41&c[]=~");
  CHECK(percent_encode("a b\tc\x7f", kPrintable) == "a%20b%09c%7F");
  CHECK(percent_encode("\xc3\xa9", kPrintable) == "%C3%A9");
  CHECK(percent_encode("a b", kPrintableWithSpace) == "a b");
  CHECK(percent_encode("a\nb", kPrintableWithSpace) == "a%0Ab");
}

TEST_CASE("a ByteSet holds exactly the bytes it was built from", "[net][percent]") {
  constexpr ByteSet kSet = ByteSet("ab") | ByteSet::range('0', '2');
  static_assert(kSet.contains('a') && kSet.contains('1') && !kSet.contains('3'));
  CHECK(percent_encode("ab012c3", kSet) == "ab012%63%33");
  std::string out = "x";
  append_percent_encoded(out, 0xab);
  CHECK(out == "x%AB");
}

TEST_CASE("percent_decode keeps a bad escape as written", "[net][percent]") {
  // The gateway's query names, its path segments and the OpenAPI $ref pointers.
  CHECK(percent_decode("a%20b%2fc%2F", PlusMeans::plus) == "a b/c/");
  CHECK(percent_decode("a+b", PlusMeans::plus) == "a+b");
  CHECK(percent_decode("a+b%2B", PlusMeans::space) == "a b+");
  CHECK(percent_decode("%", PlusMeans::plus) == "%");
  CHECK(percent_decode("%4", PlusMeans::plus) == "%4");
  CHECK(percent_decode("%zz%41", PlusMeans::plus) == "%zzA");
  CHECK(percent_decode("%41", PlusMeans::plus) == "A");
  CHECK(percent_decode("%%41", PlusMeans::plus) == "%A");
  CHECK(percent_decode("%00", PlusMeans::plus) == std::string("\0", 1));
  CHECK(percent_decode("%C3%A9", PlusMeans::plus) == "\xc3\xa9");
}

TEST_CASE("percent_decode_strict refuses a bad escape", "[net][percent]") {
  // The MarketHub fixture's paths ('+' itself) and query strings ('+' a space).
  CHECK(percent_decode_strict("a%20b", PlusMeans::plus) == "a b");
  CHECK(percent_decode_strict("a+b", PlusMeans::plus) == "a+b");
  CHECK(percent_decode_strict("a+b%2B", PlusMeans::space) == "a b+");
  CHECK_FALSE(percent_decode_strict("%", PlusMeans::plus));
  CHECK_FALSE(percent_decode_strict("a%4", PlusMeans::plus));
  CHECK_FALSE(percent_decode_strict("%zz", PlusMeans::space));
  CHECK(percent_decode_strict("", PlusMeans::plus) == "");
}

TEST_CASE("what percent_encode writes percent_decode reads back", "[net][percent]") {
  const std::string bytes("a b+c/\x00\xff~%", 10);
  CHECK(percent_decode(percent_encode(bytes, kUnreserved), PlusMeans::space) == bytes);
  CHECK(percent_decode_strict(percent_encode(bytes, kUnreserved), PlusMeans::plus) == bytes);
  // kPrintable keeps '%': the ledger's text is for reading, not for decoding back.
  CHECK(percent_encode("100%", kPrintable) == "100%");
}

}  // namespace
}  // namespace codemode::net
