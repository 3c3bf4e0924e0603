#include "net/percent.h"

#include "net/ascii.h"

namespace codemode::net {

namespace {

// The byte an escape at `text[i]` stands for, or -1 when `text[i]` does not start one.
int escape_at(std::string_view text, std::size_t i) {
  if (text[i] != '%' || text.size() - i < 3) return -1;
  const int high = hex_value(text[i + 1]);
  const int low = hex_value(text[i + 2]);
  return high >= 0 && low >= 0 ? high * 16 + low : -1;
}

}  // namespace

void append_percent_encoded(std::string& out, unsigned char byte) {
  constexpr char kHex[] = "0123456789ABCDEF";
  out += '%';
  out += kHex[byte >> 4];
  out += kHex[byte & 0xf];
}

std::string percent_encode(std::string_view text, const ByteSet& keep) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (keep.contains(c)) {
      out += c;
    } else {
      append_percent_encoded(out, static_cast<unsigned char>(c));
    }
  }
  return out;
}

std::string percent_decode(std::string_view text, PlusMeans plus) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (const int byte = escape_at(text, i); byte >= 0) {
      out += static_cast<char>(byte);
      i += 2;
    } else if (text[i] == '+' && plus == PlusMeans::space) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

std::optional<std::string> percent_decode_strict(std::string_view text, PlusMeans plus) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (const int byte = escape_at(text, i); byte >= 0) {
      out += static_cast<char>(byte);
      i += 2;
    } else if (text[i] == '%') {
      return std::nullopt;
    } else if (text[i] == '+' && plus == PlusMeans::space) {
      out += ' ';
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace codemode::net
