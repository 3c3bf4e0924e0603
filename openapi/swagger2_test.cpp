#include "openapi/swagger2.h"

#include <catch2/catch.hpp>

#include "openapi/document.h"

using namespace codemode::openapi;
using json = nlohmann::ordered_json;

namespace {

const char* kPetstore = R"({
  "swagger": "2.0",
  "info": {"title": "Petstore", "version": "1.0.0"},
  "host": "petstore.example.com", "basePath": "/v1", "schemes": ["https", "http"],
  "consumes": ["application/json"], "produces": ["application/json"],
  "securityDefinitions": {
    "basic": {"type": "basic"},
    "oauth": {"type": "oauth2", "flow": "accessCode", "authorizationUrl": "https://a/auth",
              "tokenUrl": "https://a/token", "scopes": {"read": "read pets"}}},
  "parameters": {
    "limit": {"name": "limit", "in": "query", "type": "integer", "format": "int32", "maximum": 100},
    "newPet": {"name": "pet", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Pet"}}},
  "responses": {"NotFound": {"description": "no such pet", "schema": {"$ref": "#/definitions/Error"}}},
  "paths": {
    "/pets": {
      "parameters": [{"name": "X-Trace", "in": "header", "type": "string"}],
      "get": {"operationId": "listPets", "tags": ["pets"],
              "parameters": [{"$ref": "#/parameters/limit"},
                             {"name": "tags", "in": "query", "type": "array", "items": {"type": "string"},
                              "collectionFormat": "csv"}],
              "responses": {"200": {"description": "pets", "schema": {"type": "array", "items": {"$ref": "#/definitions/Pet"}},
                                    "headers": {"X-Next": {"type": "string"}}}}},
      "post": {"operationId": "createPet", "parameters": [{"$ref": "#/parameters/newPet"}],
               "responses": {"201": {"description": "created"}}}},
    "/pets/{id}": {
      "put": {"operationId": "updatePet", "consumes": ["application/json", "application/xml"],
              "parameters": [{"name": "id", "in": "path", "required": true, "type": "string"},
                             {"name": "pet", "in": "body", "schema": {"$ref": "#/definitions/Pet"}}],
              "responses": {"200": {"description": "ok"}, "404": {"$ref": "#/responses/NotFound"}}},
      "post": {"operationId": "uploadPhoto", "consumes": ["multipart/form-data"],
               "parameters": [{"name": "file", "in": "formData", "type": "file", "required": true},
                              {"name": "note", "in": "formData", "type": "string"}],
               "responses": {"200": {"description": "ok"}}}}},
  "definitions": {
    "Pet": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"},
            "owner": {"$ref": "#/definitions/Owner"}, "tag": {"type": "string", "x-nullable": true}}},
    "Owner": {"type": "object", "properties": {"pets": {"type": "array", "items": {"$ref": "#/definitions/Pet"}}}},
    "Error": {"type": "object", "properties": {"message": {"type": "string"}}}}
})";

}  // namespace

TEST_CASE("Swagger 2.0 loads in the OpenAPI 3.0 shape", "[openapi][swagger2]") {
  auto loaded = parse_json(kPetstore);
  REQUIRE(loaded.document);
  const json& doc = *loaded.document->root;
  CHECK(doc["openapi"] == "3.0.3");
  CHECK(doc["x-swagger-version"] == "2.0");
  CHECK_FALSE(doc.contains("swagger"));
  CHECK_FALSE(doc.contains("definitions"));
  CHECK(doc["servers"] == json::parse(R"([{"url": "https://petstore.example.com/v1"},
                                          {"url": "http://petstore.example.com/v1"}])"));
  CHECK(doc["components"]["schemas"]["Pet"]["properties"]["owner"]["$ref"] ==
        "#/components/schemas/Owner");
  CHECK(doc["components"]["schemas"]["Pet"]["properties"]["tag"]["nullable"] == true);
  CHECK(doc["components"]["parameters"]["limit"] == json::parse(R"({"name": "limit", "in": "query",
                        "schema": {"type": "integer", "format": "int32", "maximum": 100}})"));
  CHECK(doc["components"]["requestBodies"]["newPet"]["content"]["application/json"]["schema"]
           ["$ref"] == "#/components/schemas/Pet");
  CHECK(
      doc["components"]["responses"]["NotFound"]["content"]["application/json"]["schema"]["$ref"] ==
      "#/components/schemas/Error");
  CHECK(doc["components"]["securitySchemes"]["basic"] ==
        json::parse(R"({"type": "http", "scheme": "basic"})"));
  CHECK(doc["components"]["securitySchemes"]["oauth"]["flows"]["authorizationCode"]["tokenUrl"] ==
        "https://a/token");
  // Every ref in the converted document resolves.
  CHECK(loaded.document->warnings.empty());
}

TEST_CASE("Swagger 2.0 operations: parameters, bodies, forms, responses", "[openapi][swagger2]") {
  auto loaded = parse_json(kPetstore);
  REQUIRE(loaded.document);
  const json& paths = (*loaded.document->root)["paths"];
  const json& list = paths["/pets"]["get"];
  CHECK(list["parameters"][0] == json{{"$ref", "#/components/parameters/limit"}});
  CHECK(list["parameters"][1] ==
        json::parse(R"({"name": "tags", "in": "query", "style": "form", "explode": false,
                        "schema": {"type": "array", "items": {"type": "string"}}})"));
  CHECK(list["responses"]["200"]["content"]["application/json"]["schema"]["items"]["$ref"] ==
        "#/components/schemas/Pet");
  CHECK(list["responses"]["200"]["headers"]["X-Next"] ==
        json::parse(R"({"schema": {"type": "string"}})"));
  CHECK(paths["/pets"]["parameters"][0]["schema"] == json{{"type", "string"}});
  CHECK(paths["/pets"]["post"]["requestBody"] ==
        json{{"$ref", "#/components/requestBodies/newPet"}});
  CHECK_FALSE(paths["/pets"]["post"].contains("parameters"));

  const json& update = paths["/pets/{id}"]["put"];
  CHECK(update["parameters"].size() == 1);
  CHECK(update["requestBody"]["content"].size() == 2);
  CHECK(update["requestBody"]["content"]["application/xml"]["schema"]["$ref"] ==
        "#/components/schemas/Pet");
  CHECK(update["responses"]["404"] == json{{"$ref", "#/components/responses/NotFound"}});

  const json& upload = paths["/pets/{id}"]["post"]["requestBody"]["content"];
  REQUIRE(upload.contains("multipart/form-data"));
  CHECK(upload["multipart/form-data"]["schema"] == json::parse(R"({"type": "object", "properties": {
                          "file": {"type": "string", "format": "binary"},
                          "note": {"type": "string"}},
                        "required": ["file"]})"));
}

TEST_CASE("a Swagger 2.0 document without host serves relative to basePath",
          "[openapi][swagger2]") {
  std::vector<std::string> warnings;
  const json out = normalise_swagger2(
      json::parse(R"({"swagger": "2.0", "info": {"title": "T"}, "basePath": "api", "paths": {}})"),
      warnings);
  CHECK(out["servers"] == json::parse(R"([{"url": "/api"}])"));
}

TEST_CASE("members of the wrong type read as absent, never thrown", "[openapi][swagger2]") {
  // Found by fuzz/openapi: json::value() throws when a member's type differs from the default.
  const json wrong = json::parse(R"({
    "swagger": "2.0", "info": {"title": "T"}, "host": 7, "basePath": ["/v1"],
    "parameters": {"p": {"in": null, "name": 1}},
    "securityDefinitions": {"s": {"type": "oauth2", "flow": 3, "scopes": []}},
    "paths": {"/a": {"parameters": {"not": "an array"},
                     "post": {"parameters": [{"in": "body", "$ref": 5, "schema": "x", "required": "yes"},
                                             {"in": "formData", "name": 2, "type": 3, "required": true},
                                             {"in": ["query"]}, {"in": "query", "$ref": 6}]}}}})");
  std::vector<std::string> warnings;
  const json out = normalise_swagger2(wrong, warnings);
  CHECK(out["servers"] == json::parse(R"([{"url": "/"}])"));
  const json& body = out["paths"]["/a"]["post"]["requestBody"];
  CHECK(body["content"]["application/x-www-form-urlencoded"]["schema"]["required"] ==
        json::parse(R"([""])"));
  CHECK(out["components"]["securitySchemes"]["s"]["flows"][""]["scopes"] == json::object());
  CHECK(out["paths"]["/a"]["post"]["parameters"].back() ==
        json::parse(R"({"in": "query", "$ref": 6})"));
}
