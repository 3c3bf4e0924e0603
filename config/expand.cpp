#include "config/expand.h"

#include <algorithm>

#include "config/problem_path.h"
#include "net/ascii.h"

namespace codemode::config::detail {

namespace {

constexpr std::string_view kNameSyntax = "[A-Za-z_][A-Za-z0-9_]*";

bool is_variable_name(std::string_view name) {
  if (name.empty() || !(net::is_alpha(name.front()) || name.front() == '_')) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return net::is_alpha(c) || net::is_digit(c) || c == '_'; });
}

}  // namespace

std::optional<Expanded> expand(std::string_view raw, std::string_view path, const Environment& env,
                               std::vector<std::string>& problems) {
  const auto add = [&](std::string_view where, const std::string& what) {
    problems.push_back(std::string(where) + ": " + what);
  };
  Expanded out;
  bool ok = true;
  std::size_t i = 0;
  while (i < raw.size()) {
    const char c = raw[i];
    if (c != '$' || i + 1 == raw.size() || (raw[i + 1] != '$' && raw[i + 1] != '{')) {
      out.value += c;
      ++i;
      continue;
    }
    if (raw[i + 1] == '$') {
      out.value += '$';
      i += 2;
      continue;
    }
    const std::string at = " at character " + std::to_string(code_points(raw, i) + 1);
    const std::size_t close = raw.find('}', i + 2);
    if (close == std::string_view::npos) {
      add(path, "unterminated \"${\"" + at);
      return std::nullopt;
    }
    const std::string_view inside = raw.substr(i + 2, close - i - 2);
    const std::size_t fallback_mark = inside.find(":-");
    const std::string_view name = inside.substr(0, fallback_mark);
    if (!is_variable_name(name)) {
      add(path, "invalid variable reference" + at + " (expected ${NAME} or ${NAME:-fallback}, " +
                    "NAME matching " + std::string(kNameSyntax) + ")");
      ok = false;
    } else {
      std::optional<std::string> value = env ? env(name) : std::nullopt;
      if (fallback_mark != std::string_view::npos && (!value || value->empty())) {
        value = std::string(inside.substr(fallback_mark + 2));
      }
      if (!value) {
        add(path, "environment variable " + std::string(name) + " is not set");
        ok = false;
      } else {
        out.value += *value;
        out.from_environment = true;
      }
    }
    i = close + 1;
  }
  if (!ok) return std::nullopt;
  return out;
}

}  // namespace codemode::config::detail
