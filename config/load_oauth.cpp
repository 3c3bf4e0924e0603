// OAuth settings: http.oauth (the authorization server whose access tokens /mcp accepts, with
// its introspection endpoint for opaque ones) and an upstream's token_exchange (RFC 8693).
#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "config/loader.h"

namespace codemode::config::detail {
namespace {

constexpr std::array<std::string_view, 6> kTokenExchangeKeys = {
    "audience", "resource", "scope", "client_id", "client_secret", "token_endpoint"};
constexpr std::array<std::string_view, 7> kIntrospectionKeys = {
    "endpoint",         "client_id",     "client_secret", "cache_s",
    "inactive_cache_s", "cache_entries", "concurrency"};
constexpr std::array<std::string_view, 10> kOAuthKeys = {
    "issuer",         "introspection",     "resource",       "scopes",
    "request_scopes", "extra_scopes",      "jwks_refresh_s", "jwks_min_interval_s",
    "leeway_s",       "require_typ_at_jwt"};
constexpr std::array<std::string_view, 3> kRequestScopeKeys = {"read", "write", "spec"};
constexpr std::array<std::string_view, 2> kScopedTools = {"search", "execute"};

// A scope token (RFC 6749 §3.3): printable ASCII except space, '"' and '\\'.
bool is_scope_token(std::string_view scope) {
  return !scope.empty() && std::all_of(scope.begin(), scope.end(), [](char c) {
    return c >= 0x21 && c <= 0x7e && c != '"' && c != '\\';
  });
}

}  // namespace

// A URL that OAuth settings may name (is_acceptable_oauth_url), or "" and a problem.
std::string Loader::read_oauth_url(const Json& field, const std::string& field_path) {
  const std::optional<Expanded> text = read_required_string(field, field_path);
  if (!text) return "";
  if (!is_acceptable_oauth_url(text->value)) {
    add(field_path,
        "must be an https URL (http only on a loopback host) without query or "
        "fragment");
    return "";
  }
  return text->value;
}

std::vector<std::string> Loader::read_scope_list(const Json& field, const std::string& field_path) {
  std::vector<std::string> scopes;
  if (!expect_array(field, field_path)) return scopes;
  for (std::size_t i = 0; i < field.size(); ++i) {
    const std::string scope_path = element_path(field_path, i);
    const std::optional<Expanded> text = read_required_string(field[i], scope_path);
    if (!text) continue;
    if (!is_scope_token(text->value)) {
      add(scope_path, "is not a scope (printable ASCII, no space, '\"' or '\\')");
      continue;
    }
    scopes.push_back(text->value);
  }
  return scopes;
}

// A client id or secret: visible ASCII, no space (it goes into HTTP Basic credentials).
std::string Loader::read_client_text(const Json& field, const std::string& field_path) {
  const std::optional<Expanded> text = read_required_string(field, field_path);
  if (!text) return "";
  const bool visible = std::all_of(text->value.begin(), text->value.end(),
                                   [](char c) { return c > 0x20 && c < 0x7F; });
  if (!visible) {
    add(field_path, "must be visible ASCII without spaces");
    return "";
  }
  return text->value;
}

std::optional<TokenExchange> Loader::load_token_exchange(const Json& value,
                                                         const std::string& path) {
  if (!expect_object(value, path)) return std::nullopt;
  TokenExchange exchange;
  const std::size_t problems_before = problems_.size();
  for (const auto& [key, field] : value.items()) {
    const std::string field_path = child_path(path, key);
    if (key == "audience") {
      if (auto text = read_required_string(field, field_path)) {
        const bool clean = std::none_of(text->value.begin(), text->value.end(), [](char c) {
          return static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
        });
        if (clean) {
          exchange.audience = text->value;
        } else {
          add(field_path, "contains a control character");
        }
      }
    } else if (key == "resource") {
      exchange.resource = read_oauth_url(field, field_path);
    } else if (key == "scope") {
      exchange.scopes = read_scope_list(field, field_path);
    } else if (key == "client_id") {
      exchange.client_id = read_client_text(field, field_path);
    } else if (key == "client_secret") {
      exchange.client_secret = read_client_text(field, field_path);
    } else if (key == "token_endpoint") {
      exchange.token_endpoint = read_oauth_url(field, field_path);
    } else {
      unknown_key(path, key, kTokenExchangeKeys);
    }
  }
  if (!value.contains("audience") && !value.contains("resource")) {
    add(path, "needs an audience or a resource (what the exchanged token is for)");
  }
  if (!value.contains("client_id")) add(child_path(path, "client_id"), "is required");
  if (!value.contains("client_secret")) add(child_path(path, "client_secret"), "is required");
  if (problems_.size() != problems_before) return std::nullopt;
  return exchange;
}

std::optional<Introspection> Loader::load_introspection(const Json& value,
                                                        const std::string& path) {
  if (!expect_object(value, path)) return std::nullopt;
  Introspection introspection;
  const std::size_t problems_before = problems_.size();
  for (const auto& [key, field] : value.items()) {
    const std::string field_path = child_path(path, key);
    if (key == "endpoint") {
      introspection.endpoint = read_oauth_url(field, field_path);
    } else if (key == "client_id") {
      introspection.client_id = read_client_text(field, field_path);
    } else if (key == "client_secret") {
      introspection.client_secret = read_client_text(field, field_path);
    } else if (key == "cache_s") {
      read_u32(field, field_path, Introspection::kCacheSRange, introspection.cache_s);
    } else if (key == "inactive_cache_s") {
      read_u32(field, field_path, Introspection::kInactiveCacheSRange,
               introspection.inactive_cache_s);
    } else if (key == "cache_entries") {
      read_u32(field, field_path, Introspection::kCacheEntriesRange, introspection.cache_entries);
    } else if (key == "concurrency") {
      read_u32(field, field_path, Introspection::kConcurrencyRange, introspection.concurrency);
    } else {
      unknown_key(path, key, kIntrospectionKeys);
    }
  }
  if (!value.contains("client_id")) add(child_path(path, "client_id"), "is required");
  if (!value.contains("client_secret")) add(child_path(path, "client_secret"), "is required");
  if (problems_.size() != problems_before) return std::nullopt;
  return introspection;
}

// token_exchange asks the authorization server of http.oauth for tokens.
void Loader::check_token_exchanges(const Config& config, const Api& api) {
  if (config.http.oauth) return;
  for (std::size_t i = 0; i < api.upstreams.size(); ++i) {
    if (api.upstreams[i].token_exchange) {
      add(child_path(element_path("upstreams", i), "token_exchange"),
          "needs http.oauth (the authorization server that exchanges tokens)");
    }
  }
  for (const auto& [name, settings] : api.principals) {
    for (std::size_t i = 0; i < settings.upstreams.size(); ++i) {
      if (settings.upstreams[i].token_exchange) {
        add(child_path(element_path(child_path(child_path("principals", name), "upstreams"), i),
                       "token_exchange"),
            "needs http.oauth (the authorization server that exchanges tokens)");
      }
    }
  }
}

std::optional<OAuth> Loader::load_oauth(const Json& value, const std::string& path) {
  if (!expect_object(value, path)) return std::nullopt;
  OAuth oauth;
  const std::size_t problems_before = problems_.size();
  for (const auto& [key, field] : value.items()) {
    const std::string field_path = child_path(path, key);
    if (key == "issuer") {
      oauth.issuer = read_oauth_url(field, field_path);
    } else if (key == "resource") {
      oauth.resource = read_oauth_url(field, field_path);
    } else if (key == "scopes") {
      if (!expect_object(field, field_path)) continue;
      for (const auto& [tool, scopes] : field.items()) {
        if (std::find(kScopedTools.begin(), kScopedTools.end(), tool) == kScopedTools.end()) {
          unknown_key(field_path, tool, kScopedTools);
          continue;
        }
        oauth.tool_scopes[tool] = read_scope_list(scopes, child_path(field_path, tool));
      }
    } else if (key == "request_scopes") {
      if (!expect_object(field, field_path)) continue;
      for (const auto& [kind, scopes] : field.items()) {
        if (kind == "read") {
          oauth.read_scopes = read_scope_list(scopes, child_path(field_path, kind));
        } else if (kind == "write") {
          oauth.write_scopes = read_scope_list(scopes, child_path(field_path, kind));
        } else if (kind == "spec") {
          if (scopes.is_boolean()) {
            oauth.spec_scopes = scopes.get<bool>();
          } else {
            add(child_path(field_path, kind),
                "expected true or false, got " + std::string(type_phrase(scopes)));
          }
        } else {
          unknown_key(field_path, kind, kRequestScopeKeys);
        }
      }
    } else if (key == "extra_scopes") {
      oauth.extra_scopes = read_scope_list(field, field_path);
    } else if (key == "jwks_refresh_s") {
      read_u32(field, field_path, OAuth::kJwksRefreshSRange, oauth.jwks_refresh_s);
    } else if (key == "jwks_min_interval_s") {
      read_u32(field, field_path, OAuth::kJwksMinIntervalSRange, oauth.jwks_min_interval_s);
    } else if (key == "leeway_s") {
      read_u32(field, field_path, OAuth::kLeewaySRange, oauth.leeway_s);
    } else if (key == "require_typ_at_jwt") {
      if (field.is_boolean()) {
        oauth.require_typ_at_jwt = field.get<bool>();
      } else {
        add(field_path, "expected true or false, got " + std::string(type_phrase(field)));
      }
    } else if (key == "introspection") {
      oauth.introspection = load_introspection(field, field_path);
    } else {
      unknown_key(path, key, kOAuthKeys);
    }
  }
  if (!value.contains("issuer")) add(child_path(path, "issuer"), "is required");
  if (!value.contains("resource")) add(child_path(path, "resource"), "is required");
  if (problems_.size() != problems_before) return std::nullopt;
  return oauth;
}

}  // namespace codemode::config::detail
