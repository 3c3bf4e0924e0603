// Which of the two tools a call is: `search` (the code sees `spec`) or `execute` (the code gets
// `fetch`). Plain data that both processes read: the daemon's Call and the channel's Run carry it.
#pragma once

#include <string_view>

namespace codemode::channel {

enum class Tool { search, execute };

constexpr std::string_view to_string(Tool tool) {
  return tool == Tool::search ? "search" : "execute";
}

}  // namespace codemode::channel
