#include "openapi/operations.h"

#include <catch2/catch.hpp>

#include "fixtures/markethub/fixture_server.h"

using namespace codemode::openapi;

TEST_CASE("declared operations and server base paths", "[openapi][operations]") {
  auto loaded = parse_json(R"({"openapi": "3.1.0", "info": {"title": "T"},
    "servers": [{"url": "https://api.example.com/v1/"}, {"url": "/v1"}, {"url": "http://x"}],
    "paths": {"/b": {"get": {}, "post": {}, "parameters": []}, "/a/{id}": {"$ref": "#/components/pathItems/A"}},
    "components": {"pathItems": {"A": {"delete": {}}}}})");
  REQUIRE(loaded.document);
  const auto operations = declared_operations(*loaded.document);
  REQUIRE(operations.size() == 3);
  CHECK(operations[0].method == "GET");
  CHECK(operations[0].path_template == "/b");
  CHECK(operations[1].method == "POST");
  CHECK(operations[2].method == "DELETE");
  CHECK(operations[2].path_template == "/a/{id}");
  CHECK(server_base_paths(*loaded.document) == std::vector<std::string>{"/v1", ""});
}

TEST_CASE("MarketHub declares the operations its fixture serves", "[openapi][operations]") {
  auto loaded = parse_json(codemode::fixtures::markethub_openapi_json());
  REQUIRE(loaded.document);
  const auto operations = declared_operations(*loaded.document);
  CHECK(operations.size() >= 11);
  const bool cancel = std::any_of(operations.begin(), operations.end(), [](const auto& op) {
    return op.method == "POST" && op.path_template == "/orders/{orderId}/cancel";
  });
  CHECK(cancel);
}

TEST_CASE("an operation's OAuth scopes come from its security, else the document's",
          "[openapi][operations][scopes]") {
  auto loaded = parse_json(R"({"openapi": "3.0.3", "info": {"title": "T"},
    "security": [{"oauth": ["items:read"]}],
    "components": {"securitySchemes": {
      "oauth": {"type": "oauth2", "flows": {}},
      "oidc": {"type": "openIdConnect", "openIdConnectUrl": "https://as.example.com"},
      "key": {"type": "apiKey", "in": "header", "name": "X-Key"}}},
    "paths": {"/items": {
        "get": {},
        "post": {"security": [{"oauth": ["items:write", "items:read"]}, {"oidc": ["admin"]}]},
        "delete": {"security": [{"oauth": ["items:write"]}, {"key": []}]},
        "put": {"security": []},
        "patch": {"security": [{"key": [], "oauth": ["items:write"]}]}}}})");
  REQUIRE(loaded.document);
  const auto operations = declared_operations(*loaded.document);
  REQUIRE(operations.size() == 5);
  using Alternatives = std::vector<std::vector<std::string>>;
  CHECK(operations[0].method == "GET");
  CHECK(operations[0].scopes == Alternatives{{"items:read"}});  // the document's
  CHECK(operations[1].method == "PUT");
  CHECK(operations[1].scopes.empty());  // `security: []`: none
  CHECK(operations[2].method == "POST");
  CHECK(operations[2].scopes == Alternatives{{"items:write", "items:read"}, {"admin"}});
  CHECK(operations[3].method == "DELETE");
  CHECK(operations[3].scopes.empty());  // an API key alone is an alternative with no scope
  CHECK(operations[4].method == "PATCH");
  CHECK(operations[4].scopes == Alternatives{{"items:write"}});  // both schemes: only OAuth's
}
