#include "net/base64.h"

#include <catch2/catch.hpp>

namespace codemode::net {
namespace {

using enum Base64Alphabet;
using enum Base64Padding;

TEST_CASE("base64_encode writes RFC 4648's test vectors", "[net][base64]") {
  // §10's vectors, standard alphabet, padded: HTTP Basic credentials and the server's state.
  CHECK(base64_encode("") == "");
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foob") == "Zm9vYg==");
  CHECK(base64_encode("fooba") == "Zm9vYmE=");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_encode("user:p@ss") == "dXNlcjpwQHNz");
}

TEST_CASE("the url alphabet writes - and _ and drops padding when asked", "[net][base64]") {
  const std::string bytes("\xfb\xff\xbf", 3);
  CHECK(base64_encode(bytes) == "+/+/");
  CHECK(base64_encode(bytes, url) == "-_-_");
  CHECK(base64_encode("offset:10", url, none) == "b2Zmc2V0OjEw");
  CHECK(base64_encode("offset:1", url, none) == "b2Zmc2V0OjE");
  CHECK(base64_encode("f", url, none) == "Zg");
}

TEST_CASE("base64_decode with padding required reads only padded standard base64",
          "[net][base64]") {
  CHECK(base64_decode("Zm9vYmFy") == "foobar");
  CHECK(base64_decode("Zm9vYg==") == "foob");
  CHECK(base64_decode("Zm9vYmE=") == "fooba");
  CHECK(base64_decode("") == "");
  CHECK(base64_decode("+/+/") == std::string("\xfb\xff\xbf", 3));
  CHECK_FALSE(base64_decode("Zm9vYg"));     // padding missing
  CHECK_FALSE(base64_decode("Zm9v=Yg="));   // '=' inside
  CHECK_FALSE(base64_decode("Z==="));       // three '='
  CHECK_FALSE(base64_decode("-_-_"));       // url alphabet
  CHECK_FALSE(base64_decode(" Zm9vYmE="));  // whitespace, which OpenSSL alone would skip
  CHECK_FALSE(base64_decode("Zm9vYmF\n"));
}

TEST_CASE("base64_decode with padding optional reads either spelling", "[net][base64]") {
  // The `=?base64?…?=` form of Mcp-Name and Mcp-Param-* headers.
  CHECK(base64_decode("Zm9vYg==", standard, optional) == "foob");
  CHECK(base64_decode("Zm9vYg", standard, optional) == "foob");
  CHECK(base64_decode("", standard, optional) == "");
  CHECK_FALSE(base64_decode("Zm9vY", standard, optional));  // a length no encoding has
  CHECK_FALSE(base64_decode("Zg==Zg", standard, optional));
  CHECK_FALSE(base64_decode("Zm9v!", standard, optional));
}

TEST_CASE("base64_decode of the url alphabet without padding", "[net][base64]") {
  // JOSE (RFC 7515 §2) and the fixture's cursors.
  CHECK(base64_decode("-_-_", url, none) == std::string("\xfb\xff\xbf", 3));
  CHECK(base64_decode("b2Zmc2V0OjE", url, none) == "offset:1");
  CHECK(base64_decode("Zg", url, none) == "f");
  CHECK(base64_decode("", url, none) == "");
  CHECK_FALSE(base64_decode("Zg==", url, none));
  CHECK_FALSE(base64_decode("+/+/", url, none));
  CHECK_FALSE(base64_decode("Z", url, none));
  CHECK_FALSE(base64_decode("Zm9.", url, none));
}

TEST_CASE("base64 reads back what it writes, every length mod 3", "[net][base64]") {
  std::string bytes;
  for (int i = 0; i < 260; ++i) {
    for (const auto alphabet : {standard, url}) {
      CHECK(base64_decode(base64_encode(bytes, alphabet), alphabet) == bytes);
      CHECK(base64_decode(base64_encode(bytes, alphabet, none), alphabet, none) == bytes);
    }
    bytes += static_cast<char>(i * 37);
  }
}

}  // namespace
}  // namespace codemode::net
