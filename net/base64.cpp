#include "net/base64.h"

#include <openssl/evp.h>

#include "net/ascii.h"

namespace codemode::net {

namespace {

// `c` in the standard alphabet, from `alphabet`; '\0' when it is not one of its 64.
char to_standard(char c, Base64Alphabet alphabet) {
  if (is_alnum(c)) return c;
  if (alphabet == Base64Alphabet::standard) return c == '+' || c == '/' ? c : '\0';
  if (c == '-') return '+';
  if (c == '_') return '/';
  return '\0';
}

}  // namespace

std::string base64_encode(std::string_view bytes, Base64Alphabet alphabet, Base64Padding padding) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');  // EVP_EncodeBlock writes a NUL
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  if (padding == Base64Padding::none) {
    while (!out.empty() && out.back() == '=') out.pop_back();
  }
  if (alphabet == Base64Alphabet::url) {
    for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  }
  return out;
}

std::optional<std::string> base64_decode(std::string_view text, Base64Alphabet alphabet,
                                         Base64Padding padding) {
  std::size_t pad = 0;
  if (padding == Base64Padding::required) {
    if (text.size() % 4 != 0) return std::nullopt;
    pad = text.ends_with("==") ? 2 : text.ends_with('=') ? 1 : 0;
    text.remove_suffix(pad);
  } else if (padding == Base64Padding::optional) {
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  }
  if (text.size() % 4 == 1) return std::nullopt;
  std::string standard;
  standard.reserve(text.size() + 3);
  for (const char c : text) {
    const char mapped = to_standard(c, alphabet);
    if (mapped == '\0') return std::nullopt;
    standard += mapped;
  }
  // OpenSSL reads whole blocks of four and counts the padding as data bytes.
  const std::size_t fill = (4 - standard.size() % 4) % 4;
  standard.append(fill, '=');
  std::string out(standard.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(standard.data()),
                                static_cast<int>(standard.size()));
  if (n < 0 || static_cast<std::size_t>(n) < fill) return std::nullopt;
  out.resize(static_cast<std::size_t>(n) - fill);
  return out;
}

}  // namespace codemode::net
