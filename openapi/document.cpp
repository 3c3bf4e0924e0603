#include "openapi/document.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "openapi/swagger2.h"
#include "openapi/yaml.h"

namespace codemode::openapi {

namespace {

using json = nlohmann::ordered_json;

// "line L, column C" of a byte offset, for JSON syntax errors.
std::string position_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::size_t line =
      1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  const std::size_t line_start = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  const std::size_t column =
      line_start == std::string_view::npos || line == 1 ? offset : offset - line_start - 1;
  return "line " + std::to_string(line) + ", column " + std::to_string(column + 1);
}

// The checks every served document passes, and its summary.
LoadResult check_document(json root) {
  LoadResult out;
  if (!root.is_object()) {
    out.problems.push_back("the document must be an object (a JSON object or a YAML mapping)");
    return out;
  }
  const bool v3 = root.contains("openapi") && root["openapi"].is_string() &&
                  root["openapi"].get<std::string>().rfind("3.", 0) == 0;
  const bool v2 = root.contains("swagger") && root["swagger"] == "2.0";
  if (!v3 && !v2) {
    out.problems.push_back("\"openapi\" must be a 3.x version string (or \"swagger\": \"2.0\")");
  }
  const auto info = root.find("info");
  if (info == root.end() || !info->is_object() || !info->contains("title") ||
      !(*info)["title"].is_string()) {
    out.problems.push_back("info.title must be a string");
  }
  const auto paths = root.find("paths");
  if (paths == root.end() || !paths->is_object()) {
    out.problems.push_back("paths must be an object");
  }
  if (!out.problems.empty()) return out;

  std::string title = (*info)["title"].get<std::string>();
  std::string version = info->value("version", std::string("unversioned"));
  const std::size_t path_count = paths->size();
  std::vector<std::string> warnings;
  if (v2) root = normalise_swagger2(root, warnings);
  Document doc = make_document(std::move(root));
  doc.warnings.insert(doc.warnings.begin(), warnings.begin(), warnings.end());
  doc.title = std::move(title);
  doc.version = std::move(version);
  doc.path_count = path_count;
  out.document = std::move(doc);
  return out;
}

bool looks_like_json(std::string_view text) {
  const auto first = std::find_if_not(text.begin(), text.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
  });
  return first != text.end() && *first == '{';
}

}  // namespace

Document make_document(json root) {
  Document doc;
  auto shared = std::make_shared<const json>(std::move(root));
  doc.refs = RefIndex::build(*shared, doc.warnings);
  doc.root = std::move(shared);
  return doc;
}

LoadResult parse_json(std::string_view text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    return LoadResult{std::nullopt,
                      {position_of(text, e.byte == 0 ? 0 : e.byte - 1) + ": not valid JSON"}};
  }
  return check_document(std::move(root));
}

LoadResult parse_yaml(std::string_view text) {
  auto converted = yaml_to_json(text, kMaxDocumentValues);
  if (auto* error = std::get_if<std::string>(&converted)) {
    return LoadResult{std::nullopt, {std::move(*error)}};
  }
  return check_document(std::move(std::get<json>(converted)));
}

LoadResult parse_text(std::string_view text) {
  return looks_like_json(text) ? parse_json(text) : parse_yaml(text);
}

LoadResult load_file(const std::filesystem::path& file) {
  std::error_code error;
  const auto size = std::filesystem::file_size(file, error);
  if (!error && size > kMaxDocumentBytes) {
    return LoadResult{std::nullopt,
                      {file.string() + ": larger than " + std::to_string(kMaxDocumentBytes) +
                       " bytes; refusing to load it"}};
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return LoadResult{std::nullopt, {"cannot read " + file.string()}};
  std::ostringstream text;
  text << in.rdbuf();
  const std::string extension = file.extension().string();
  LoadResult out = extension == ".json"                          ? parse_json(text.str())
                   : extension == ".yaml" || extension == ".yml" ? parse_yaml(text.str())
                                                                 : parse_text(text.str());
  for (auto& problem : out.problems) problem = file.string() + ": " + problem;
  return out;
}

}  // namespace codemode::openapi
