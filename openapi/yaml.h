// YAML API descriptions, read into the same JSON value a JSON document gives.
//
// OpenAPI documents are often YAML. yaml-cpp parses them; this converts the result with the
// YAML 1.2 core schema for plain scalars (null, booleans, integers, floats; anything else and
// every quoted scalar is a string) and refuses what JSON cannot hold (non-string keys that are
// not scalars). Aliases are expanded as copies, so the conversion counts what it builds and
// stops at `max_nodes`: a "billion laughs" document is an error, not an out-of-memory.
// Stateless; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace codemode::openapi {

// The document, or one line saying what is wrong and where ("line 3, column 5: ...").
std::variant<nlohmann::ordered_json, std::string> yaml_to_json(std::string_view text,
                                                               std::size_t max_nodes);

}  // namespace codemode::openapi
