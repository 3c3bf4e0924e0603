#include "server/upstreams.h"

#include <algorithm>
#include <variant>
#include <vector>

#include <spdlog/spdlog.h>

#include "net/origin.h"
#include "openapi/operations.h"

namespace codemode::server {

std::string label_of(const std::string& path) {
  return path.empty() ? path : path.substr(0, path.size() - 1) + ": ";
}

void settle_base_path(const openapi::Document& api, config::Api& config) {
  if (config.upstreams.empty() || config.upstreams.front().base_path) return;
  std::string path = openapi::server_base_paths(api).front();
  // A templated server ("https://{region}.example.com/{version}") names no one path.
  if (path.find('{') != std::string::npos) path.clear();
  config.upstreams.front().base_path = std::move(path);
}

void warn_unlike_servers(const openapi::Document& api, const config::Api& config,
                         const std::string& where) {
  const auto& root = *api.root;
  const auto servers = root.find("servers");
  if (config.upstreams.empty() || servers == root.end() || !servers->is_array() ||
      servers->empty()) {
    return;  // nothing configured, or a description that names no server
  }
  // The origins of the absolute, untemplated server URLs, in the form upstream origins take.
  std::vector<std::string> origins;
  for (const auto& server : *servers) {
    if (!server.is_object() || !server.contains("url") || !server["url"].is_string()) continue;
    const std::string url = server["url"].get<std::string>();
    const auto scheme = url.find("://");
    if (scheme == std::string::npos || url.find('{') != std::string::npos) continue;
    const auto parsed = net::parse_origin(url.substr(0, url.find_first_of("/?#", scheme + 3)),
                                          net::OriginForm::header);
    if (const auto* origin = std::get_if<net::Origin>(&parsed)) {
      const std::string text = origin->serialised();
      if (std::find(origins.begin(), origins.end(), text) == origins.end()) origins.push_back(text);
    }
  }
  const auto join = [](const std::vector<std::string>& items) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
    return out;
  };
  std::vector<std::string> configured;
  configured.reserve(config.upstreams.size());
  for (const auto& upstream : config.upstreams) configured.push_back(upstream.origin);
  const bool shared = std::any_of(configured.begin(), configured.end(), [&](const auto& origin) {
    return std::find(origins.begin(), origins.end(), origin) != origins.end();
  });
  if (!origins.empty() && !shared) {
    // Normal for a test double or a proxy; a mistake when the origin was mistyped.
    spdlog::warn(
        "{}upstreams: {} {} not among the description's servers ({}); the code is told to use "
        "relative URLs, and an absolute URL it copies from the description is refused",
        where, join(configured), configured.size() == 1 ? "is" : "are", join(origins));
  }
  const auto& base_path = config.upstreams.front().base_path;
  if (!base_path) return;  // settle_base_path() takes the servers' path
  std::vector<std::string> paths = openapi::server_base_paths(api);
  std::erase_if(paths, [](const std::string& path) { return path.find('{') != std::string::npos; });
  if (paths.empty() || std::find(paths.begin(), paths.end(), *base_path) != paths.end()) return;
  for (auto& path : paths) {
    if (path.empty()) path = "/";
  }
  spdlog::warn(
      "{}upstreams[0].base_path: {} is not the path of the description's servers ({}); relative "
      "URLs go under {}, and the description's paths are matched below it",
      where, base_path->empty() ? "\"\"" : *base_path, join(paths),
      base_path->empty() ? "/" : *base_path);
}

void log_upstreams(const config::Api& config, bool base_path_configured, const std::string& path) {
  if (config.upstreams.empty()) {
    spdlog::warn(
        "{}no upstreams: every execute request is refused; add \"upstreams\": [{{\"origin\": "
        "\"https://api.example.com\"}}] to the config",
        label_of(path));
    return;
  }
  for (std::size_t i = 0; i < config.upstreams.size(); ++i) {
    const config::Upstream& upstream = config.upstreams[i];
    // Names only: never a value, which may be a credential.
    std::string injects;
    const auto add = [&injects](const std::string& what) {
      injects += (injects.empty() ? "" : ", ") + what;
    };
    for (const auto& header : upstream.headers) add(header.first);
    for (const auto& parameter : upstream.query) add("?" + parameter.first);
    if (upstream.token_exchange) add("Authorization (exchanged)");
    std::string line = label_of(path) + "execute may call " + upstream.origin;
    if (i == 0) {
      const std::string base = upstream.base_path.value_or("");
      line += "; relative URLs go to " + upstream.origin + base + "/" +
              (base.empty()           ? std::string()
               : base_path_configured ? " (" + path + "upstreams[0].base_path)"
                                      : " (the description's servers)");
    }
    line += injects.empty() ? "; injects nothing" : "; injects " + injects;
    spdlog::info("{}", line);
  }
}

}  // namespace codemode::server
