#include "net/escape.h"

namespace codemode::net {

namespace {

void append_hex(std::string& out, unsigned char byte) {
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xf];
}

// The length of the valid UTF-8 sequence at the front of `text` (2..4), or 0 when the bytes
// there are not one (overlong forms, surrogates and values past U+10FFFF included).
std::size_t utf8_sequence(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  std::size_t size = 0;
  unsigned min_second = 0x80;
  unsigned max_second = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    size = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    size = 3;
    if (lead == 0xe0) min_second = 0xa0;  // overlong
    if (lead == 0xed) max_second = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    size = 4;
    if (lead == 0xf0) min_second = 0x90;  // overlong
    if (lead == 0xf4) max_second = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (text.size() < size) return 0;
  if (byte(1) < min_second || byte(1) > max_second) return 0;
  for (std::size_t i = 2; i < size; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xbf) return 0;
  }
  return size;
}

}  // namespace

std::string escape_text(std::string_view text, std::size_t max_bytes) {
  const std::size_t dropped = text.size() > max_bytes ? text.size() - max_bytes : 0;
  text = text.substr(0, max_bytes);
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text.front());
    if (c >= 0x80) {
      const std::size_t size = utf8_sequence(text);
      // U+0080..U+009F are C2 80..C2 9F: the C1 controls, which some terminals obey.
      const bool c1_control = size == 2 && c == 0xc2 && static_cast<unsigned char>(text[1]) < 0xa0;
      if (size == 0 || c1_control) {
        append_hex(out, c);
        text.remove_prefix(1);
      } else {
        out.append(text.substr(0, size));
        text.remove_prefix(size);
      }
      continue;
    }
    text.remove_prefix(1);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      append_hex(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (dropped > 0) out += "...(" + std::to_string(dropped) + " more bytes)";
  return out;
}

}  // namespace codemode::net
