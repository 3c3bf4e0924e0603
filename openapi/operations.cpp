#include "openapi/operations.h"

#include <algorithm>
#include <cctype>

namespace codemode::openapi {

namespace {
constexpr const char* kMethods[] = {"get",     "put",  "post",  "delete",
                                    "options", "head", "patch", "trace"};
}

std::vector<DeclaredOperation> declared_operations(const Document& document) {
  std::vector<DeclaredOperation> out;
  const auto& root = *document.root;
  const auto paths = root.find("paths");
  if (paths == root.end() || !paths->is_object()) return out;
  for (const auto& [path, item] : paths->items()) {
    const nlohmann::ordered_json* node = &item;
    if (const auto* ref = document.refs.find(node); ref != nullptr && ref->target != nullptr) {
      node = ref->target;
    }
    if (!node->is_object()) continue;
    for (const char* method : kMethods) {
      if (!node->contains(method)) continue;
      std::string upper(method);
      std::transform(upper.begin(), upper.end(), upper.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      out.push_back({std::move(upper), path});
    }
  }
  return out;
}

std::vector<std::string> server_base_paths(const Document& document) {
  std::vector<std::string> out;
  const auto& root = *document.root;
  const auto servers = root.find("servers");
  if (servers != root.end() && servers->is_array()) {
    for (const auto& server : *servers) {
      if (!server.is_object() || !server.contains("url") || !server["url"].is_string()) continue;
      std::string url = server["url"].get<std::string>();
      if (const auto scheme = url.find("://"); scheme != std::string::npos) {
        const auto path = url.find('/', scheme + 3);
        url = path == std::string::npos ? "" : url.substr(path);
      }
      url = url.substr(0, url.find_first_of("?#"));
      while (!url.empty() && url.back() == '/') url.pop_back();
      if (std::find(out.begin(), out.end(), url) == out.end()) out.push_back(url);
    }
  }
  if (out.empty()) out.emplace_back();
  return out;
}

}  // namespace codemode::openapi
