// Where a problem in a config file is, and how its values are named in a problem: the paths
// (`upstreams[0].headers.Authorization`), positions in characters, and type phrases. Shared by
// the JSON reader and the schema walk; internal to config/.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace codemode::config::detail {

// Ordered, so that problems come out in the order the author wrote the keys.
using Json = nlohmann::ordered_json;

// Characters (UTF-8 code points) in text[0, offset), so positions match what an editor shows.
std::size_t code_points(std::string_view text, std::size_t offset);

// Paths name where a problem is: `upstreams[0].headers.Authorization`. Keys that are not plain
// words are quoted as JSON (`headers["X Y"]`), which also keeps every problem on one line.
std::string child_path(std::string_view parent, std::string_view key);
std::string element_path(std::string_view parent, std::size_t index);

// `text` as it may appear in a problem: quoted as JSON when it holds control characters.
std::string printable(const std::string& text);

// "an integer", "an object", … for "expected X, got Y".
std::string_view type_phrase(const Json& value);

}  // namespace codemode::config::detail
