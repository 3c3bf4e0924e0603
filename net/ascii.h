// ASCII character classes and case folding, as HTTP, URLs and our config read them.
//
// Protocol text is compared byte by byte in ASCII, whatever the process locale: <cctype> would
// fold per locale and is undefined for negative chars, so these never call it. Bytes >= 0x80 are
// neither letters nor digits and are never folded. Pure functions; any thread.
#pragma once

#include <string>
#include <string_view>

namespace codemode::net {

constexpr bool is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
constexpr bool is_digit(char c) { return c >= '0' && c <= '9'; }
constexpr bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// The value of one hex digit (either case); -1 for any other byte.
constexpr int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
constexpr bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
// The whitespace of the C locale: space, \t \n \v \f \r.
constexpr bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

constexpr char ascii_upper(char c) {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c;
}
constexpr char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// `text` with A-Z lowered; every other byte as it was.
std::string lower(std::string_view text);

// `text` with a-z raised; every other byte as it was.
std::string upper(std::string_view text);

// Each byte of `bytes` as two lower-case hex digits ("\x01\xab" -> "01ab").
std::string to_hex(std::string_view bytes);

// Equal ignoring ASCII case (header names, schemes, methods, tokens).
constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  }
  return true;
}

constexpr bool istarts_with(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && iequals(text.substr(0, prefix.size()), prefix);
}

}  // namespace codemode::net
