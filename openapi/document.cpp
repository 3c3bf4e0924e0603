#include "openapi/document.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>

#include "net/ascii.h"
#include "openapi/swagger2.h"
#include "openapi/yaml.h"

namespace codemode::openapi {

namespace {

using json = nlohmann::ordered_json;

// What the JSON parser throws besides parse_error: a number beyond a double (1e999).
constexpr std::string_view kNumberOutOfRange = "not valid JSON: a number is too large to represent";

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

// How deep arrays and objects nest, without recursion (the document is untrusted input).
std::size_t nesting_depth(const json& root) {
  std::size_t deepest = 0;
  std::vector<std::pair<const json*, std::size_t>> stack{{&root, 1}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth);
    if (deepest > kMaxDocumentNesting) break;
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

// The checks every served document passes, and its summary.
LoadResult check_document(json root) {
  LoadResult out;
  // Two wrong files people often take for the description: a documentation page saved from the
  // browser (YAML reads it as one string) and a Postman collection.
  if (root.is_string() && root.get_ref<const std::string&>().starts_with("<")) {
    out.problems.push_back(
        "this is an HTML page, not an API description: download the raw OpenAPI JSON or YAML");
    return out;
  }
  if (!root.is_object()) {
    out.problems.push_back("the document must be an object (a JSON object or a YAML mapping)");
    return out;
  }
  if (const auto info = root.find("info");
      info != root.end() && info->is_object() && !root.contains("openapi") &&
      !root.contains("swagger") && (info->contains("_postman_id") || root.contains("item"))) {
    out.problems.push_back(
        "this is a Postman collection, not an OpenAPI description: export the API's OpenAPI "
        "document instead");
    return out;
  }
  if (nesting_depth(root) > kMaxDocumentNesting) {
    out.problems.push_back("the document nests arrays and objects deeper than " +
                           std::to_string(kMaxDocumentNesting) + " levels");
    return out;
  }
  const bool v3 = root.contains("openapi") && root["openapi"].is_string() &&
                  root["openapi"].get<std::string>().rfind("3.", 0) == 0;
  const bool v2 = root.contains("swagger") && root["swagger"] == "2.0";
  if (!v3 && !v2) {
    out.problems.push_back("\"openapi\" must be a 3.x version string (or \"swagger\": \"2.0\")");
  }
  // OpenAPI 3.1 allows a document of webhooks or components only: it has no paths to call. The
  // empty paths go in before any iterator into the root is taken: the root is an ordered map, a
  // vector, which the insertion may move (a use after free the fuzzer found).
  const bool v31 = v3 && root["openapi"].get<std::string>().rfind("3.1", 0) == 0;
  if (v31 && !root.contains("paths")) root["paths"] = json::object();
  const auto info = root.find("info");
  if (info == root.end() || !info->is_object() || !info->contains("title") ||
      !(*info)["title"].is_string()) {
    out.problems.push_back("info.title must be a string");
  }
  const auto paths = root.find("paths");
  if (paths == root.end() || !paths->is_object()) {
    out.problems.push_back(v3 && !v31 ? "paths must be an object (OpenAPI 3.0 requires it)"
                                      : "paths must be an object");
  }
  if (!out.problems.empty()) return out;

  std::string title = (*info)["title"].get<std::string>();
  // YAML reads `version: 1.0` as a number; it is shown as written, as any number is.
  const auto version_field = info->find("version");
  std::string version = version_field == info->end() ? std::string("unversioned")
                        : version_field->is_string() ? version_field->get<std::string>()
                        : version_field->is_number() ? version_field->dump()
                                                     : std::string("unversioned");
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
  const auto first = std::find_if_not(text.begin(), text.end(), net::is_space);
  return first != text.end() && *first == '{';
}

}  // namespace

Document make_document(json root) {
  return make_document(std::make_shared<const json>(std::move(root)));
}

Document make_document(std::shared_ptr<const json> root) {
  Document doc;
  doc.refs = RefIndex::build(*root, doc.warnings);
  doc.root = std::move(root);
  return doc;
}

LoadResult parse_json(std::string_view text) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    return LoadResult{std::nullopt,
                      {position_of(text, e.byte == 0 ? 0 : e.byte - 1) + ": not valid JSON"}};
  } catch (const json::out_of_range&) {
    return LoadResult{std::nullopt, {std::string(kNumberOutOfRange)}};
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

namespace {

namespace fs = std::filesystem;

// A document file read into a value: by extension (.json, .yaml/.yml), else by its first byte.
std::variant<json, std::string> read_value(const fs::path& file) {
  std::error_code error;
  const auto size = fs::file_size(file, error);
  if (!error && size > kMaxDocumentBytes) {
    return "larger than " + std::to_string(kMaxDocumentBytes) + " bytes; refusing to load it";
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::string("cannot read it");
  std::ostringstream stream;
  stream << in.rdbuf();
  const std::string text = stream.str();
  const std::string extension = file.extension().string();
  const bool yaml = extension == ".yaml" || extension == ".yml" ||
                    (extension != ".json" && !looks_like_json(text));
  if (yaml) return yaml_to_json(text, kMaxDocumentValues);
  try {
    json value = json::parse(text);  // iterative: any depth is built without recursion
    // The bundler's walk recurses, so the bound comes before it (YAML's is in the conversion).
    if (nesting_depth(value) > kMaxDocumentNesting) {
      return "nests arrays and objects deeper than " + std::to_string(kMaxDocumentNesting) +
             " levels";
    }
    return value;
  } catch (const json::parse_error& e) {
    return position_of(text, e.byte == 0 ? 0 : e.byte - 1) + ": not valid JSON";
  } catch (const json::out_of_range&) {
    return std::string(kNumberOutOfRange);
  }
}

std::string escape_pointer_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

// Brings the files a document's $refs name ("common.yaml#/Pet", "schemas/pet.json") into the
// document under `x-external`, keyed by their path relative to the document's directory, and
// rewrites those refs to local ones, so the ref index and the lazy spec resolve them like any
// other. Only .json/.yaml/.yml files inside the document's directory tree are read: a spec
// from a third party must not make `search` read /etc/passwd. Remote refs stay as written.
class Bundler {
 public:
  Bundler(const fs::path& main_file, std::vector<std::string>& warnings,
          std::vector<std::string>& problems)
      : main_file_(fs::absolute(main_file).lexically_normal()),
        root_dir_(main_file_.parent_path()),
        warnings_(warnings),
        problems_(problems) {}

  void bundle(json& root) {
    rewrite(root, root_dir_, "");
    while (!queue_.empty()) {
      const std::string rel = queue_.front();
      queue_.erase(queue_.begin());
      rewrite(files_.at(rel), (root_dir_ / rel).parent_path(), rel);
    }
    if (files_.empty()) return;
    json external = json::object();
    for (auto& [rel, value] : files_) external[rel] = std::move(value);
    root["x-external"] = std::move(external);
  }

 private:
  static constexpr std::size_t kMaxFiles = 1000;

  void rewrite(json& node, const fs::path& dir, const std::string& owner) {
    if (node.is_array()) {
      for (auto& item : node) rewrite(item, dir, owner);
      return;
    }
    if (!node.is_object()) return;
    for (auto& [key, value] : node.items()) {
      if (key == "$ref" && value.is_string()) {
        value = new_ref(value.get<std::string>(), dir, owner);
      } else {
        rewrite(value, dir, owner);
      }
    }
  }

  // The local ref for `ref` written in a file of `dir`; `owner` is that file ("" for the main).
  std::string new_ref(const std::string& ref, const fs::path& dir, const std::string& owner) {
    const std::size_t hash = ref.find('#');
    const std::string file_part = ref.substr(0, hash);
    const std::string fragment = hash == std::string::npos ? "" : ref.substr(hash + 1);
    auto prefixed = [&](const std::string& rel) {
      return rel.empty() ? "#" + fragment : "#/x-external/" + escape_pointer_token(rel) + fragment;
    };
    if (file_part.empty()) return prefixed(owner);  // local to the file it is written in
    if (file_part.find("://") != std::string::npos) {
      warn("$ref " + ref + " is remote; it is not fetched and stays as written");
      return ref;
    }
    const fs::path target = (dir / file_part).lexically_normal();
    if (target == main_file_) return prefixed("");
    const std::string rel = target.lexically_relative(root_dir_).generic_string();
    const std::string extension = target.extension().string();
    if (rel.empty() || rel.rfind("..", 0) == 0 || fs::path(file_part).is_absolute()) {
      warn("$ref " + ref + " points outside the document's directory; not read");
      return ref;
    }
    if (extension != ".json" && extension != ".yaml" && extension != ".yml") {
      warn("$ref " + ref + " is not a .json, .yaml or .yml file; not read");
      return ref;
    }
    if (files_.count(rel) == 0) {
      if (files_.size() >= kMaxFiles) {
        warn("more than " + std::to_string(kMaxFiles) + " referenced files; the rest are not read");
        return ref;
      }
      auto value = read_value(target);
      if (auto* error = std::get_if<std::string>(&value)) {
        problems_.push_back("$ref " + ref + ": " + rel + ": " + *error);
        files_.emplace(rel, json(nullptr));
        return ref;
      }
      files_.emplace(rel, std::move(std::get<json>(value)));
      queue_.push_back(rel);
    }
    return prefixed(rel);
  }

  void warn(std::string message) {
    if (std::find(warnings_.begin(), warnings_.end(), message) == warnings_.end()) {
      warnings_.push_back(std::move(message));
    }
  }

  fs::path main_file_;
  fs::path root_dir_;
  std::vector<std::string>& warnings_;
  std::vector<std::string>& problems_;
  std::map<std::string, json> files_;  // relative path -> its value (stable while rewriting)
  std::vector<std::string> queue_;     // files read but not yet rewritten
};

}  // namespace

LoadResult load_file(const std::filesystem::path& file) {
  auto value = read_value(file);
  if (auto* error = std::get_if<std::string>(&value)) {
    return LoadResult{std::nullopt, {file.string() + ": " + *error}};
  }
  json& root = std::get<json>(value);
  std::vector<std::string> warnings;
  std::vector<std::string> problems;
  if (root.is_object()) Bundler(file, warnings, problems).bundle(root);
  LoadResult out = problems.empty() ? check_document(std::move(root)) : LoadResult{};
  out.problems.insert(out.problems.begin(), problems.begin(), problems.end());
  const std::string prefix = file.string() + ": ";
  for (auto& problem : out.problems) problem.insert(0, prefix);
  if (out.document) {
    // A ref the bundler left as written (remote, outside the directory, not JSON or YAML) has
    // been warned about already; the ref index's "not local" would say it a second time.
    std::erase_if(out.document->warnings, [&](const std::string& warning) {
      constexpr std::string_view kSuffix = " is not local; kept as written";
      if (!warning.starts_with("$ref ") || !warning.ends_with(kSuffix)) return false;
      const std::string ref = warning.substr(0, warning.size() - kSuffix.size()) + " ";
      return std::any_of(warnings.begin(), warnings.end(),
                         [&](const std::string& earlier) { return earlier.starts_with(ref); });
    });
    out.document->warnings.insert(out.document->warnings.begin(), warnings.begin(), warnings.end());
  }
  return out;
}

}  // namespace codemode::openapi
