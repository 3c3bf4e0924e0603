// Text from outside (client names, versions, methods, header values, what an audit record holds)
// made safe for a log line or a terminal. The log goes to stderr, which an operator reads on a
// terminal or a collector splits by line: a raw newline in a client name would forge a whole log
// line ("seccomp: off"), and an ESC or 8-bit CSI sequence would reach the terminal. Every piece of
// peer-supplied text the server logs, and every cell `codemode-mcp audit --format table` prints,
// passes through escape_text; pure, any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace codemode::net {

// Logged peer text is cut to this many bytes of input (a long value still makes one short line).
inline constexpr std::size_t kMaxLoggedTextBytes = 256;

// `text` with every byte that could end a line or drive a terminal written as an escape:
// C0 controls and DEL as \n, \r, \t or \xNN; the C1 controls U+0080..U+009F (8-bit CSI and
// friends) and bytes that are not valid UTF-8 as \xNN; the backslash as \\, so an escape in the
// output always comes from the escaper. Other UTF-8 passes unchanged. Beyond `max_bytes` of
// input the rest is dropped and "...(N more bytes)" says how much.
std::string escape_text(std::string_view text, std::size_t max_bytes = kMaxLoggedTextBytes);

}  // namespace codemode::net
