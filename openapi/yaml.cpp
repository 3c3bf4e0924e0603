#include "openapi/yaml.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <regex>

namespace codemode::openapi {

namespace {

using json = nlohmann::ordered_json;

std::string where(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
         ": ";
}

constexpr std::size_t kMaxTypedScalarChars = 256;

// A plain (unquoted) scalar under the YAML 1.2 core schema.
json plain_scalar(const std::string& text) {
  static const std::regex kNull("^(~|null|Null|NULL)?$");
  static const std::regex kTrue("^(true|True|TRUE)$");
  static const std::regex kFalse("^(false|False|FALSE)$");
  static const std::regex kInt("^[-+]?[0-9]+$");
  static const std::regex kOctal("^0o[0-7]+$");
  static const std::regex kHex("^0x[0-9a-fA-F]+$");
  static const std::regex kFloat(R"(^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$)");
  // std::regex matching recurses once per character, so a long scalar would overflow the stack.
  // Nulls, booleans and numbers are short; anything this long is text.
  if (text.size() > kMaxTypedScalarChars) return text;
  if (std::regex_match(text, kNull)) return nullptr;
  if (std::regex_match(text, kTrue)) return true;
  if (std::regex_match(text, kFalse)) return false;
  auto integer = [&](std::string_view digits, int base, bool negative) -> json {
    std::uint64_t value = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (error != std::errc() || end != digits.data() + digits.size()) return text;  // too big
    if (!negative) return value;
    if (value > static_cast<std::uint64_t>(INT64_MAX) + 1) return text;
    return static_cast<std::int64_t>(0 - value);
  };
  if (std::regex_match(text, kInt)) {
    std::string_view digits(text);
    const bool negative = digits[0] == '-';
    if (digits[0] == '-' || digits[0] == '+') digits.remove_prefix(1);
    return integer(digits, 10, negative);
  }
  if (std::regex_match(text, kOctal)) return integer(std::string_view(text).substr(2), 8, false);
  if (std::regex_match(text, kHex)) return integer(std::string_view(text).substr(2), 16, false);
  if (std::regex_match(text, kFloat)) return std::strtod(text.c_str(), nullptr);
  // .inf / .nan have no JSON form: kept as the text they are.
  return text;
}

class Converter {
 public:
  explicit Converter(std::size_t max_nodes) : max_nodes_(max_nodes) {}

  // Throws std::runtime_error with a located message; caught by yaml_to_json.
  json convert(const YAML::Node& node, int depth) {
    if (++nodes_ > max_nodes_) {
      throw std::runtime_error(where(node.Mark()) + "the document expands to more than " +
                               std::to_string(max_nodes_) +
                               " values (aliases are copied); refusing to load it");
    }
    if (depth > 1000) throw std::runtime_error(where(node.Mark()) + "nesting deeper than 1000");
    switch (node.Type()) {
      case YAML::NodeType::Null:
      case YAML::NodeType::Undefined:
        return nullptr;
      case YAML::NodeType::Scalar:
        return node.Tag() == "?" ? plain_scalar(node.Scalar()) : json(node.Scalar());
      case YAML::NodeType::Sequence: {
        json out = json::array();
        for (const auto& item : node) out.push_back(convert(item, depth + 1));
        return out;
      }
      case YAML::NodeType::Map: {
        json out = json::object();
        for (const auto& member : node) {
          if (!member.first.IsScalar()) {
            throw std::runtime_error(where(member.first.Mark()) +
                                     "a mapping key must be a scalar to become JSON");
          }
          const std::string key = member.first.Scalar();
          if (out.contains(key)) {
            throw std::runtime_error(where(member.first.Mark()) + "duplicate key \"" + key + "\"");
          }
          out[key] = convert(member.second, depth + 1);
        }
        return out;
      }
    }
    return nullptr;
  }

 private:
  std::size_t max_nodes_;
  std::size_t nodes_ = 0;
};

}  // namespace

std::variant<json, std::string> yaml_to_json(std::string_view text, std::size_t max_nodes) {
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    return Converter(max_nodes).convert(root, 0);
  } catch (const YAML::Exception& e) {
    return where(e.mark) + "YAML syntax error: " + e.msg;
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

}  // namespace codemode::openapi
