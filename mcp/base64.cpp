#include "mcp/base64.h"

#include "net/base64.h"

namespace codemode::server {

std::string base64_encode(std::string_view bytes) { return net::base64_encode(bytes); }

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.empty()) return std::nullopt;
  return net::base64_decode(text);
}

}  // namespace codemode::server
