#include "net/ascii.h"

namespace codemode::net {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = ascii_lower(c);
  return out;
}

}  // namespace codemode::net
