#include "openapi/operations.h"

#include <algorithm>

#include "net/ascii.h"

namespace codemode::openapi {

namespace {
constexpr const char* kMethods[] = {"get",     "put",  "post",  "delete",
                                    "options", "head", "patch", "trace"};

using Json = nlohmann::ordered_json;

// The scope alternatives of a `security` array (DeclaredOperation::scopes).
std::vector<std::vector<std::string>> scope_alternatives(const Json& security,
                                                         const Json& schemes) {
  std::vector<std::vector<std::string>> alternatives;
  if (!security.is_array()) return alternatives;
  for (const auto& requirement : security) {
    if (!requirement.is_object()) continue;
    std::vector<std::string> scopes;
    for (const auto& [name, listed] : requirement.items()) {
      const auto scheme = schemes.find(name);
      if (scheme == schemes.end() || !scheme->is_object()) continue;
      const auto type = scheme->find("type");
      if (type == scheme->end() || !type->is_string() ||
          (*type != "oauth2" && *type != "openIdConnect") || !listed.is_array()) {
        continue;
      }
      for (const auto& scope : listed) {
        if (scope.is_string()) scopes.push_back(scope.get<std::string>());
      }
    }
    if (scopes.empty()) return {};  // an alternative met without any scope
    alternatives.push_back(std::move(scopes));
  }
  return alternatives;
}
}  // namespace

std::vector<DeclaredOperation> declared_operations(const Document& document) {
  std::vector<DeclaredOperation> out;
  const auto& root = *document.root;
  const auto paths = root.find("paths");
  if (paths == root.end() || !paths->is_object()) return out;
  static const Json kNone = Json::object();
  const Json* schemes = &kNone;
  if (const auto components = root.find("components");
      components != root.end() && components->is_object()) {
    if (const auto found = components->find("securitySchemes");
        found != components->end() && found->is_object()) {
      schemes = &*found;
    }
  }
  const auto root_security = root.find("security");
  for (const auto& [path, item] : paths->items()) {
    const nlohmann::ordered_json* node = &item;
    if (const auto* ref = document.refs.find(node); ref != nullptr && ref->target != nullptr) {
      node = ref->target;
    }
    if (!node->is_object()) continue;
    for (const char* method : kMethods) {
      if (!node->contains(method)) continue;
      std::string upper = net::upper(method);
      const Json& operation = (*node)[method];
      const auto own = operation.is_object() ? operation.find("security") : operation.end();
      std::vector<std::vector<std::string>> scopes;
      if (operation.is_object() && own != operation.end()) {
        scopes = scope_alternatives(*own, *schemes);
      } else if (root_security != root.end()) {
        scopes = scope_alternatives(*root_security, *schemes);
      }
      DeclaredOperation declared{std::move(upper), path, std::move(scopes), {}, {}, {}};
      if (operation.is_object()) {
        const auto text = [&operation](const char* key) {
          const auto found = operation.find(key);
          return found != operation.end() && found->is_string() ? found->get<std::string>()
                                                                : std::string();
        };
        declared.operation_id = text("operationId");
        declared.summary = text("summary");
        if (const auto tags = operation.find("tags"); tags != operation.end() && tags->is_array()) {
          for (const auto& tag : *tags) {
            if (tag.is_string()) declared.tags.push_back(tag.get<std::string>());
          }
        }
      }
      out.push_back(std::move(declared));
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
