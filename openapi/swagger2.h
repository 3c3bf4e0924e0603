// Swagger 2.0 documents, normalised to the OpenAPI 3.0 shape, so `search` code and the tool
// descriptions deal with one shape whatever the user's document is.
//
// What changes (the mapping of the OpenAPI 3.0 specification's own migration notes):
//   swagger: "2.0"                  -> openapi: "3.0.3", plus x-swagger-version: "2.0"
//   host, basePath, schemes         -> servers: [{url: scheme://host/basePath}, ...]
//   definitions                     -> components.schemas
//   parameters (non-body / body)    -> components.parameters / components.requestBodies
//   responses, securityDefinitions  -> components.responses, components.securitySchemes
//   in: body / in: formData params  -> requestBody (content by `consumes`)
//   type/format/items/enum/... on a parameter or header -> its `schema`
//   a response's schema             -> content[type].schema for each of `produces`
//   every $ref                      -> rewritten to the new locations
// Everything else (x- extensions, descriptions, tags, security) is kept as it was.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace codemode::openapi {

// `root` must be a Swagger 2.0 object. Things that cannot be carried over are noted in
// `warnings` (one line each) and dropped.
nlohmann::ordered_json normalise_swagger2(const nlohmann::ordered_json& root,
                                          std::vector<std::string>& warnings);

}  // namespace codemode::openapi
