#include "auth/resource_metadata.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace codemode::auth {
namespace {

config::OAuth settings() {
  config::OAuth oauth;
  oauth.issuer = "https://as.example.com/";
  oauth.resource = "https://mcp.example.com/mcp";
  oauth.tool_scopes = {{"execute", {"mcp:read", "mcp:execute"}}, {"search", {"mcp:read"}}};
  oauth.extra_scopes = {"offline_access", "mcp:read"};
  return oauth;
}

}  // namespace

TEST_CASE("the metadata URL puts the well-known path before the resource's path",
          "[auth][metadata]") {
  CHECK(resource_metadata_url("https://mcp.example.com/mcp") ==
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp");
  CHECK(resource_metadata_url("https://mcp.example.com") ==
        "https://mcp.example.com/.well-known/oauth-protected-resource");
  CHECK(resource_metadata_url("http://127.0.0.1:8080/a/mcp/") ==
        "http://127.0.0.1:8080/.well-known/oauth-protected-resource/a/mcp");
}

TEST_CASE("the metadata names the issuer, the resource and every scope once", "[auth][metadata]") {
  const auto document = nlohmann::json::parse(resource_metadata_document(settings()));
  CHECK(document["resource"] == "https://mcp.example.com/mcp");
  CHECK(document["authorization_servers"] == nlohmann::json::array({"https://as.example.com/"}));
  CHECK(document["scopes_supported"] ==
        nlohmann::json::array({"mcp:read", "mcp:execute", "offline_access"}));
  CHECK(document["bearer_methods_supported"] == nlohmann::json::array({"header"}));
}

TEST_CASE("challenges name the metadata, the error and the scopes", "[auth][metadata]") {
  CHECK(challenge_unauthorized(settings(), Presented::no_token) ==
        "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/"
        "mcp\", scope=\"mcp:read mcp:execute offline_access\"");
  CHECK(challenge_unauthorized(settings(), Presented::refused_token) ==
        "Bearer resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/"
        "mcp\", error=\"invalid_token\", scope=\"mcp:read mcp:execute offline_access\"");
  CHECK(challenge_insufficient_scope(settings(), {"mcp:execute"}) ==
        "Bearer error=\"insufficient_scope\", scope=\"mcp:execute\", "
        "resource_metadata=\"https://mcp.example.com/.well-known/oauth-protected-resource/mcp\"");
}

}  // namespace codemode::auth
