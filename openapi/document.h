// The API description the daemon serves: loaded once at start-up, immutable afterwards, read by
// every thread. A document that cannot be used is a start-up problem, reported like a config
// problem (one line each, exit 2), never a crash.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "openapi/ref_index.h"

namespace codemode::openapi {

// Documents keep their keys in the order written (paths read in the API's own order).
struct Document {
  // The document as written. Shared and never modified, so the node addresses `refs` and the
  // sandbox hold stay valid for as long as any copy of the Document lives.
  std::shared_ptr<const nlohmann::ordered_json> root;
  RefIndex refs;
  std::vector<std::string> warnings;  // usable, but worth a log line (e.g. unresolved $refs)
  std::string title;
  std::string version;  // info.version
  std::size_t path_count = 0;
};

struct LoadResult {
  std::optional<Document> document;  // set exactly when problems is empty
  std::vector<std::string> problems;
};

// Wraps a parsed document: shares it and indexes its $refs. No checks: parse_json() is the
// door for served APIs; this one also serves tests that need a document of any shape.
Document make_document(nlohmann::ordered_json root);
Document make_document(std::shared_ptr<const nlohmann::ordered_json> root);

// Bounds on what is loaded: the file, and the values a YAML document may expand to through
// aliases (GitHub's 13 MB REST description holds about 1.2 million values).
inline constexpr std::size_t kMaxDocumentBytes = std::size_t{256} * 1024 * 1024;
inline constexpr std::size_t kMaxDocumentValues = 20'000'000;
// Real descriptions nest a few dozen levels; deeper ones are refused, because every consumer
// that walks a document recursively (serialisers, the sandbox channel) needs a bound.
inline constexpr std::size_t kMaxDocumentNesting = 1000;

// Each accepts an OpenAPI 3.x (or Swagger 2.0) document with an `info.title` and a `paths`
// object. Problems name the line and column of a syntax error.
LoadResult parse_json(std::string_view text);
LoadResult parse_yaml(std::string_view text);
// JSON when the text starts with `{`, else YAML.
LoadResult parse_text(std::string_view text);
// By extension: .json, .yaml/.yml; otherwise as parse_text.
LoadResult load_file(const std::filesystem::path& file);

}  // namespace codemode::openapi
