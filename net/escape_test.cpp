#include "net/escape.h"

#include <catch2/catch.hpp>

using codemode::net::escape_text;
using codemode::net::kMaxLoggedTextBytes;

TEST_CASE("escaped text: a newline cannot start a forged log line", "[net][escape]") {
  CHECK(escape_text("claude\n[2026-12-02 12:00:00.000] [info] seccomp: off") ==
        "claude\\n[2026-12-02 12:00:00.000] [info] seccomp: off");
  CHECK(escape_text("a\r\nb\tc") == "a\\r\\nb\\tc");
}

TEST_CASE("escaped text: terminal controls are escaped, C0, DEL and C1", "[net][escape]") {
  CHECK(escape_text("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(escape_text(std::string("nul\0byte", 8)) == "nul\\x00byte");
  CHECK(escape_text("del\x7f") == "del\\x7f");
  CHECK(escape_text("csi\xc2\x9b"
                    "31m") == "csi\\xc2\\x9b31m");  // U+009B, 8-bit CSI
}

TEST_CASE("escaped text: backslashes are doubled so escapes cannot be faked", "[net][escape]") {
  CHECK(escape_text("\\n") == "\\\\n");
}

TEST_CASE("escaped text: UTF-8 passes, invalid bytes are escaped", "[net][escape]") {
  CHECK(escape_text("\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80") ==
        "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");
  CHECK(escape_text("\xff\xfe") == "\\xff\\xfe");
  CHECK(escape_text("\xc0\xaf") == "\\xc0\\xaf");           // overlong '/'
  CHECK(escape_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(escape_text("cut \xe2\x9c") == "cut \\xe2\\x9c");   // a truncated sequence
  CHECK(escape_text("plain text, 1.2.3") == "plain text, 1.2.3");
}

TEST_CASE("escaped text: long text is cut and says how much was dropped", "[net][escape]") {
  const std::string long_text(kMaxLoggedTextBytes + 10, 'x');
  CHECK(escape_text(long_text) == std::string(kMaxLoggedTextBytes, 'x') + "...(10 more bytes)");
}
