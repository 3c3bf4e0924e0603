// The token grammar of HTTP field names and methods (RFC 9110 §5.6.2), and optional whitespace.
//
// Both the config (headers an upstream gets) and the gateway (headers generated code sets) must
// refuse the same names, or a name the config accepts could be refused on every request, or one
// the gateway refuses could reach the wire through the config. Pure functions; any thread.
#pragma once

#include <string_view>

#include "net/ascii.h"

namespace codemode::net {

// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" /
//         "~" / DIGIT / ALPHA
constexpr bool is_tchar(char c) {
  constexpr std::string_view kSymbols = "!#$%&'*+-.^_`|~";
  return is_alpha(c) || is_digit(c) || kSymbols.find(c) != std::string_view::npos;
}

// token = 1*tchar: a valid field name or method.
constexpr bool is_token(std::string_view text) {
  if (text.empty()) return false;
  for (const char c : text) {
    if (!is_tchar(c)) return false;
  }
  return true;
}

// `text` without leading and trailing OWS (spaces and horizontal tabs, RFC 9110 §5.6.3).
constexpr std::string_view trim_ows(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

}  // namespace codemode::net
