// ${NAME}, ${NAME:-fallback} and $$ in a config string value: the one place environment
// values enter a config. Internal to config/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace codemode::config::detail {

// A string value after ${...} expansion.
struct Expanded {
  std::string value;
  bool from_environment = false;  // some ${...} was substituted: never echo `value`
};

// The value of `raw` with every reference replaced; the fallback is literal text up to the first
// `}`, and substituted text is never expanded again. Nothing, with each problem in `problems`
// (prefixed with `path`), when a reference is malformed or names an unset variable. A problem
// never shows a variable's value.
std::optional<Expanded> expand(std::string_view raw, std::string_view path, const Environment& env,
                               std::vector<std::string>& problems);

}  // namespace codemode::config::detail
