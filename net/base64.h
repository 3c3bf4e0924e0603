// Base64 (RFC 4648): the standard alphabet of §4 (HTTP Basic credentials, the sealed state and
// approval bodies the server hands to clients, `=?base64?…?=` headers) and the URL-safe one of
// §5 (JOSE, RFC 7515 §2; the fixture's cursors). OpenSSL's EVP_EncodeBlock/EVP_DecodeBlock do
// the bytes; this file only maps the alphabet and checks the padding each grammar asks for,
// because OpenSSL's decoder skips whitespace and reads the padding loosely. Pure functions; any
// thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace codemode::net {

enum class Base64Alphabet {
  standard,  // A-Z a-z 0-9 + /
  url,       // A-Z a-z 0-9 - _
};

enum class Base64Padding {
  required,  // '=' to a multiple of four characters (encode: written; decode: needed)
  none,      // no '=' (encode: not written; decode: refused)
  optional,  // decode only: trailing '='s are dropped before reading (either spelling)
};

// `bytes` in base64. `padding` is required or none.
std::string base64_encode(std::string_view bytes,
                          Base64Alphabet alphabet = Base64Alphabet::standard,
                          Base64Padding padding = Base64Padding::required);

// The bytes `text` encodes; nullopt when it has a character outside `alphabet`, padding other
// than `padding` allows ('=' anywhere but at the end), or a length no encoding has. Bits past
// the last whole byte are ignored.
std::optional<std::string> base64_decode(std::string_view text,
                                         Base64Alphabet alphabet = Base64Alphabet::standard,
                                         Base64Padding padding = Base64Padding::required);

}  // namespace codemode::net
