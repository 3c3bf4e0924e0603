#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace codemode::server {

// Standard base64 (RFC 4648 §4, padded), for what the server carries through clients: the sealed
// requestState and the responses a 2026-07-28 call replays. OpenSSL does the coding.
std::string base64_encode(std::string_view bytes);
// Nullopt unless `text` is padded base64 of the standard alphabet, '=' only at its end.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace codemode::server
