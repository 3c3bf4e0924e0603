#include "auth/resource_metadata.h"

#include <algorithm>

#include <nlohmann/json.hpp>

namespace codemode::auth {
namespace {

std::string joined(const std::vector<std::string>& scopes) {
  std::string text;
  for (const std::string& scope : scopes) text += (text.empty() ? "" : " ") + scope;
  return text;
}

}  // namespace

std::string resource_metadata_url(std::string_view resource) {
  const std::size_t separator = resource.find("://");
  const std::size_t path_start = separator == std::string_view::npos
                                     ? std::string_view::npos
                                     : resource.find('/', separator + 3);
  const std::string_view origin = resource.substr(0, path_start);
  std::string_view path =
      path_start == std::string_view::npos ? std::string_view() : resource.substr(path_start);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return std::string(origin) + "/.well-known/oauth-protected-resource" + std::string(path);
}

std::vector<std::string> all_scopes(const config::OAuth& oauth) {
  std::vector<std::string> scopes;
  const auto add = [&scopes](const std::string& scope) {
    if (std::find(scopes.begin(), scopes.end(), scope) == scopes.end()) scopes.push_back(scope);
  };
  for (const auto& [tool, needed] : oauth.tool_scopes) {
    for (const std::string& scope : needed) add(scope);
  }
  for (const std::string& scope : oauth.read_scopes) add(scope);
  for (const std::string& scope : oauth.write_scopes) add(scope);
  for (const std::string& scope : oauth.extra_scopes) add(scope);
  return scopes;
}

std::string resource_metadata_document(const config::OAuth& oauth) {
  nlohmann::ordered_json document = {
      {"resource", oauth.resource},
      {"authorization_servers", nlohmann::json::array({oauth.issuer})},
      {"scopes_supported", all_scopes(oauth)},
      {"bearer_methods_supported", nlohmann::json::array({"header"})},
      {"resource_name", "codemode-mcp"},
  };
  return document.dump();
}

std::string challenge_unauthorized(const config::OAuth& oauth, Presented presented) {
  // Scopes and URLs hold no '"' or '\' (config checks both), so they are quoted as they are.
  std::string challenge =
      "Bearer resource_metadata=\"" + resource_metadata_url(oauth.resource) + "\"";
  if (presented == Presented::refused_token) challenge += ", error=\"invalid_token\"";
  if (const auto scopes = all_scopes(oauth); !scopes.empty()) {
    challenge += ", scope=\"" + joined(scopes) + "\"";
  }
  return challenge;
}

std::string challenge_insufficient_scope(const config::OAuth& oauth,
                                         const std::vector<std::string>& missing) {
  return "Bearer error=\"insufficient_scope\", scope=\"" + joined(missing) +
         "\", resource_metadata=\"" + resource_metadata_url(oauth.resource) + "\"";
}

}  // namespace codemode::auth
