// The operations a document declares, as plain data: what spec-aware policy checks requests
// against, and what tool descriptions summarise.
#pragma once

#include <string>
#include <vector>

#include "openapi/document.h"

namespace codemode::openapi {

struct DeclaredOperation {
  std::string method;         // upper-case: GET, POST, ...
  std::string path_template;  // as written in `paths`: "/orders/{orderId}"
  // The OAuth scopes its `security` (else the document's) asks for: one list per alternative
  // requirement, any one of which suffices; only the scopes of oauth2 and openIdConnect schemes
  // count. Empty when it needs none: no security, or an alternative with no OAuth scope (an API
  // key, or `{}`), which a request meets without any.
  std::vector<std::vector<std::string>> scopes;
  std::string operation_id;  // "" when it has none
  std::string summary;       // "" when it has none
  std::vector<std::string> tags;
};

// Every method + path under `paths` (path-item $refs followed), in document order.
std::vector<DeclaredOperation> declared_operations(const Document& document);

// The path part of each `servers[].url` ("https://api.example.com/v1" -> "/v1"; a relative
// "/api" stays), without a trailing slash; "" when the document has none.
std::vector<std::string> server_base_paths(const Document& document);

}  // namespace codemode::openapi
