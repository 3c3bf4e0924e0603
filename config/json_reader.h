// Config text to a JSON document, reporting every problem with its place.
//
// A SAX builder instead of json::parse: it sees every error with its byte position (syntax
// errors and number overflow alike), sees duplicate keys, which json::parse silently resolves to
// the last one, and refuses nesting past a bound before the tree grows. Internal to config/.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/problem_path.h"

namespace codemode::config::detail {

// The document, or nothing after a syntax error (reported in `problems`). Duplicate keys are
// reported too, but the document still comes back, so that the schema walk reports the rest.
std::optional<Json> read_json(std::string_view text, std::vector<std::string>& problems);

}  // namespace codemode::config::detail
