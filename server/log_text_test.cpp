#include "server/log_text.h"

#include <catch2/catch.hpp>

using codemode::server::escape_log_text;
using codemode::server::kMaxLoggedTextBytes;

TEST_CASE("log text: a newline cannot start a forged log line", "[server][log_text]") {
  CHECK(escape_log_text("claude\n[2026-12-02 12:00:00.000] [info] seccomp: off") ==
        "claude\\n[2026-12-02 12:00:00.000] [info] seccomp: off");
  CHECK(escape_log_text("a\r\nb\tc") == "a\\r\\nb\\tc");
}

TEST_CASE("log text: terminal controls are escaped, C0, DEL and C1", "[server][log_text]") {
  CHECK(escape_log_text("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(escape_log_text(std::string("nul\0byte", 8)) == "nul\\x00byte");
  CHECK(escape_log_text("del\x7f") == "del\\x7f");
  CHECK(escape_log_text("csi\xc2\x9b"
                        "31m") == "csi\\xc2\\x9b31m");  // U+009B, 8-bit CSI
}

TEST_CASE("log text: backslashes are doubled so escapes cannot be faked", "[server][log_text]") {
  CHECK(escape_log_text("\\n") == "\\\\n");
}

TEST_CASE("log text: UTF-8 passes, invalid bytes are escaped", "[server][log_text]") {
  CHECK(escape_log_text("\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80") ==
        "\xc3\xa9t\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");
  CHECK(escape_log_text("\xff\xfe") == "\\xff\\xfe");
  CHECK(escape_log_text("\xc0\xaf") == "\\xc0\\xaf");           // overlong '/'
  CHECK(escape_log_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");  // a surrogate
  CHECK(escape_log_text("cut \xe2\x9c") == "cut \\xe2\\x9c");   // a truncated sequence
  CHECK(escape_log_text("plain text, 1.2.3") == "plain text, 1.2.3");
}

TEST_CASE("log text: long text is cut and says how much was dropped", "[server][log_text]") {
  const std::string long_text(kMaxLoggedTextBytes + 10, 'x');
  CHECK(escape_log_text(long_text) == std::string(kMaxLoggedTextBytes, 'x') + "...(10 more bytes)");
}
