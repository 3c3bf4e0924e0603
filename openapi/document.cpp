#include "openapi/document.h"

#include <fstream>
#include <sstream>

namespace codemode::openapi {

Document make_document(nlohmann::ordered_json root) {
  Document doc;
  auto shared = std::make_shared<const nlohmann::ordered_json>(std::move(root));
  doc.refs = RefIndex::build(*shared, doc.warnings);
  doc.root = std::move(shared);
  return doc;
}

LoadResult parse_json(std::string_view text) {
  LoadResult out;
  nlohmann::ordered_json root;
  try {
    root = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    out.problems.push_back("not valid JSON at byte " + std::to_string(e.byte));
    return out;
  }
  if (!root.is_object()) {
    out.problems.push_back("the document must be a JSON object");
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
  Document doc = make_document(std::move(root));
  doc.title = std::move(title);
  doc.version = std::move(version);
  doc.path_count = path_count;
  out.document = std::move(doc);
  return out;
}

LoadResult load_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return LoadResult{std::nullopt, {"cannot read " + file.string()}};
  std::ostringstream text;
  text << in.rdbuf();
  LoadResult out = parse_json(text.str());
  for (auto& problem : out.problems) problem = file.string() + ": " + problem;
  return out;
}

}  // namespace codemode::openapi
