#include "isolate/spec_view.h"

#include <catch2/catch.hpp>

#include "fixtures/markethub/fixture_server.h"
#include "isolate/isolate_runner.h"

using namespace codemode;
using namespace codemode::isolate;
using json = nlohmann::ordered_json;

namespace {

openapi::Document document(std::string_view text) {
  return openapi::make_document(nlohmann::ordered_json::parse(text));
}

std::string search(const openapi::Document& doc, std::string_view code) {
  config::Limits limits;
  limits.cpu_ms = 1000;
  const auto image = std::get<openapi::DocumentImage>(openapi::DocumentImage::build(doc));
  channel::Outcome o =
      run_in_fresh_isolate(RunRequest{channel::Tool::search, code, &limits, &image, nullptr});
  INFO(code << " -> " << to_string(o.error_kind) << ": " << o.error_message);
  REQUIRE(o.ok);
  return o.result_json;
}

const char* kDoc = R"({
  "openapi": "3.1.0", "info": {"title": "T"},
  "paths": {
    "/pets": {"get": {"responses": {"200": {"$ref": "#/components/responses/Pets"}}}},
    "/owners": {"get": {"responses": {"200": {"$ref": "#/components/responses/Pets",
                                               "description": "overridden"}}}}},
  "components": {
    "responses": {"Pets": {"description": "pets", "content": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
    "schemas": {
      "Pet": {"type": "object", "properties": {"id": {"type": "integer", "maximum": 18446744073709551615},
                                               "weight": {"type": "number", "example": 1.5},
                                               "tags": {"type": "array", "items": {"enum": ["a", "b", null, true]}},
                                               "parent": {"$ref": "#/components/schemas/Pet"}}},
      "__proto__": {"polluting": true},
      "ünïcode": {"ok": "✓"}}}})";

}  // namespace

TEST_CASE("spec reads like the document with refs resolved", "[sandbox][spec]") {
  const auto doc = document(kDoc);
  CHECK(search(doc, "async () => Object.keys(spec.paths)") == R"(["/pets","/owners"])");
  CHECK(search(doc, "async () => spec.paths['/pets'].get.responses['200'].content.schema.type") ==
        R"("object")");
  CHECK(search(doc, "async () => spec.components.schemas.Pet.properties.tags.items.enum") ==
        R"(["a","b",null,true])");
  CHECK(search(doc, "async () => spec.components.schemas.Pet.properties.weight.example") == "1.5");
  CHECK(search(doc, "async () => spec.components.schemas['ünïcode'].ok") == R"("✓")");
}

TEST_CASE("a cyclic ref shows as a $circular marker", "[sandbox][spec]") {
  const auto doc = document(kDoc);
  CHECK(search(doc, "async () => spec.components.schemas.Pet.properties.parent") ==
        R"({"$circular":"#/components/schemas/Pet"})");
  // The whole document serialises: the view is finite.
  CHECK_NOTHROW(json::parse(search(doc, "async () => spec")));
}

TEST_CASE("one object per ref target within a call, siblings override", "[sandbox][spec]") {
  const auto doc = document(kDoc);
  CHECK(search(doc,
               "async () => spec.paths['/pets'].get.responses['200'] === "
               "spec.components.responses.Pets") == "true");
  CHECK(search(doc,
               "async () => [spec.paths['/owners'].get.responses['200'].description, "
               "spec.paths['/owners'].get.responses['200'].content.schema.type, "
               "spec.components.responses.Pets.description]") ==
        R"(["overridden","object","pets"])");
}

TEST_CASE("a __proto__ key is data, never a prototype", "[sandbox][spec]") {
  const auto doc = document(kDoc);
  CHECK(search(doc,
               "async () => [Object.keys(spec.components.schemas).includes('__proto__'), "
               "({}).polluting, Object.getPrototypeOf(spec.components.schemas) === "
               "Object.prototype]") == "[true,null,true]");
}

TEST_CASE("serialising the view equals expanding the document", "[sandbox][spec]") {
  const auto doc =
      document(R"({"a": {"$ref": "#/b"}, "b": {"c": [1, {"$ref": "#/d"}]}, "d": "x"})");
  // JSON.stringify in the code expands every ref; the result's serialiser writes a shared
  // target met again as {"$ref"} (README: "Success").
  CHECK(json::parse(search(doc, "async () => JSON.stringify(spec)")) ==
        json::parse(R"({"a": {"c": [1, "x"]}, "b": {"c": [1, "x"]}, "d": "x"})").dump());
  CHECK(json::parse(search(doc, "async () => spec")) ==
        json::parse(R"({"a": {"c": [1, "x"]}, "b": {"$ref": "#/b"}, "d": "x"})"));
}

TEST_CASE("the MarketHub spec resolves end to end", "[sandbox][spec]") {
  auto loaded = openapi::parse_json(fixtures::markethub_openapi_json());
  REQUIRE(loaded.document);
  const std::string text =
      search(*loaded.document, "async () => JSON.stringify(spec.paths['/orders'].post)");
  CHECK(text.find("$ref") == std::string::npos);
  CHECK(text.find("customer_id") != std::string::npos);
}
