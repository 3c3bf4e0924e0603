// The API description the daemon serves: loaded once at start-up, immutable afterwards, read by
// every thread. A document that cannot be used is a start-up problem, reported like a config
// problem (one line each, exit 2), never a crash.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace codemode::openapi {

struct Document {
  nlohmann::json root;  // the document as written ($refs not yet resolved)
  std::string title;
  std::string version;  // info.version
  std::size_t path_count = 0;
};

struct LoadResult {
  std::optional<Document> document;  // set exactly when problems is empty
  std::vector<std::string> problems;
};

// Accepts an OpenAPI 3.x (or Swagger 2.0) document in JSON with an `info.title` and a `paths`
// object.
LoadResult parse_json(std::string_view text);
LoadResult load_file(const std::filesystem::path& file);

}  // namespace codemode::openapi
