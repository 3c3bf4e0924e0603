#include "config/problem_path.h"

#include <algorithm>

#include "net/ascii.h"

namespace codemode::config::detail {

namespace {

bool is_plain_key(std::string_view key) {
  if (key.empty()) return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return net::is_alpha(c) || net::is_digit(c) || c == '_' || c == '-';
  });
}

}  // namespace

std::size_t code_points(std::string_view text, std::size_t offset) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++count;
  }
  return count;
}

std::string child_path(std::string_view parent, std::string_view key) {
  if (!is_plain_key(key)) {
    return std::string(parent) + "[" + Json(std::string(key)).dump(-1, ' ', /*ensure_ascii=*/true) +
           "]";
  }
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

std::string element_path(std::string_view parent, std::size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string printable(const std::string& text) {
  const bool plain = std::none_of(text.begin(), text.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7F;
  });
  return plain ? text : Json(text).dump(-1, ' ', /*ensure_ascii=*/true);
}

std::string_view type_phrase(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a floating-point number";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

}  // namespace codemode::config::detail
