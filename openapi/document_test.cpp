#include "openapi/document.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include <catch2/catch.hpp>

using namespace codemode::openapi;

TEST_CASE("a minimal OpenAPI 3 document loads with its summary", "[openapi]") {
  auto loaded = parse_json(R"({"openapi":"3.1.0","info":{"title":"T","version":"2"},
                              "paths":{"/a":{},"/b":{}}})");
  REQUIRE(loaded.document);
  CHECK(loaded.document->title == "T");
  CHECK(loaded.document->version == "2");
  CHECK(loaded.document->path_count == 2);
}

TEST_CASE("every problem of an unusable document is reported", "[openapi]") {
  auto loaded = parse_json(R"({"openapi":"1.0","info":{},"paths":[]})");
  CHECK_FALSE(loaded.document);
  CHECK(loaded.problems == std::vector<std::string>{
                               "\"openapi\" must be a 3.x version string (or \"swagger\": \"2.0\")",
                               "info.title must be a string", "paths must be an object"});
  CHECK(parse_json("{").problems.size() == 1);
  CHECK(
      parse_json("[]").problems ==
      std::vector<std::string>{"the document must be an object (a JSON object or a YAML mapping)"});
}

TEST_CASE("an HTML page or a Postman collection is named for what it is", "[openapi]") {
  CHECK(parse_text("<!DOCTYPE html>\n<html><body>Swagger UI</body></html>\n").problems ==
        std::vector<std::string>{
            "this is an HTML page, not an API description: download the raw OpenAPI JSON or YAML"});
  CHECK(
      parse_json(
          R"({"info":{"_postman_id":"x","name":"API","schema":"https://schema.getpostman.com/json/collection/v2.1.0/collection.json"},"item":[]})")
          .problems ==
      std::vector<std::string>{"this is a Postman collection, not an OpenAPI description: export "
                               "the API's OpenAPI document instead"});
}

TEST_CASE("OpenAPI 3.1 may have no paths, 3.0 may not", "[openapi]") {
  auto webhooks =
      parse_json(R"({"openapi":"3.1.0","info":{"title":"Hooks"},"webhooks":{"ping":{"post":{}}}})");
  REQUIRE(webhooks.document);
  CHECK(webhooks.document->path_count == 0);
  // Four keys fill the root's vector (capacity 1, 2, 4): the empty paths added to it move it,
  // which once left the loader reading `info` through a freed iterator (the ASan build saw it).
  auto full = parse_json(
      R"({"openapi":"3.1.0","info":{"title":"Hooks","version":"1"},"components":{},"webhooks":{}})");
  REQUIRE(full.document);
  CHECK(full.document->title == "Hooks");
  CHECK(full.document->path_count == 0);
  CHECK(parse_json(R"({"openapi":"3.0.3","info":{"title":"T"}})").problems ==
        std::vector<std::string>{"paths must be an object (OpenAPI 3.0 requires it)"});
}

TEST_CASE("documents nested deeper than the bound are refused, up to it they load", "[openapi]") {
  auto nested = [](std::size_t levels) {
    // The root object is level 1; each "x":[ ... ] adds one.
    std::string text = R"({"openapi":"3.1.0","info":{"title":"T"},"paths":{},"x-deep":)";
    text += std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
    return text;
  };
  CHECK(parse_json(nested(kMaxDocumentNesting)).document);
  auto refused = parse_json(nested(kMaxDocumentNesting + 1));
  CHECK_FALSE(refused.document);
  CHECK(refused.problems ==
        std::vector<std::string>{"the document nests arrays and objects deeper than 1000 levels"});
  CHECK_FALSE(parse_json(nested(200000)).document);  // no recursion anywhere on the way
}

TEST_CASE("a missing file is one problem naming it", "[openapi]") {
  auto loaded = load_file("/nonexistent/spec.json");
  CHECK(loaded.problems == std::vector<std::string>{"/nonexistent/spec.json: cannot read it"});
}

namespace {
// A directory of spec files, removed afterwards.
struct SpecDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("codemode-openapi-test-" + std::to_string(std::random_device{}()));
  SpecDir() { std::filesystem::create_directories(path / "schemas"); }
  ~SpecDir() { std::filesystem::remove_all(path); }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return path / name;
  }
};
}  // namespace

TEST_CASE("a file nested past the bound is refused before the bundler walks it, refs too",
          "[openapi][refs][adversarial]") {
  // The bundler's walk recursed per level: a million-deep file crashed the daemon at start-up.
  SpecDir dir;
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  const auto main = dir.write(
      "api.json", R"({"openapi":"3.1.0","info":{"title":"T"},"paths":{},"x-deep":)" + deep + "}");
  auto loaded = load_file(main);
  CHECK_FALSE(loaded.document);
  CHECK(loaded.problems ==
        std::vector<std::string>{main.string() +
                                 ": nests arrays and objects deeper than 1000 levels"});

  dir.write("schemas/deep.json", deep);
  const auto referring = dir.write(
      "refs.json",
      R"({"openapi":"3.1.0","info":{"title":"T"},"paths":{},"x-a":{"$ref":"schemas/deep.json"}})");
  loaded = load_file(referring);
  CHECK_FALSE(loaded.document);
  REQUIRE(loaded.problems.size() == 1);
  CHECK(
      loaded.problems[0].ends_with("$ref schemas/deep.json: schemas/deep.json: nests arrays and "
                                   "objects deeper than 1000 levels"));
}

TEST_CASE("refs to relative files are bundled under x-external and resolved", "[openapi][refs]") {
  SpecDir dir;
  dir.write("schemas/pet.yaml",
            "type: object\nproperties:\n  owner: {$ref: 'owner.json'}\n"
            "  kind: {$ref: '#/definitions/Kind'}\n"
            "definitions:\n  Kind: {enum: [cat, dog]}\n");
  dir.write("schemas/owner.json", R"({"type": "object", "properties": {"pets": {"type": "array",
                                      "items": {"$ref": "pet.yaml"}}}})");
  const auto main = dir.write("api.yaml", R"(openapi: 3.0.3
info: {title: Pets, version: "1"}
paths:
  /pets:
    get:
      responses:
        '200': {description: ok, content: {application/json: {schema: {$ref: 'schemas/pet.yaml'}}}}
  /self:
    get: {responses: {'200': {$ref: 'api.yaml#/components/responses/Ok'}}}
components:
  responses:
    Ok: {description: fine}
)");
  const auto loaded = load_file(main);
  INFO((loaded.problems.empty() ? "" : loaded.problems[0]));
  REQUIRE(loaded.document);
  const auto& root = *loaded.document->root;
  CHECK(root["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
            ["$ref"] == "#/x-external/schemas~1pet.yaml");
  CHECK(root["x-external"]["schemas/pet.yaml"]["properties"]["kind"]["$ref"] ==
        "#/x-external/schemas~1pet.yaml/definitions/Kind");
  CHECK(root["x-external"]["schemas/owner.json"]["properties"]["pets"]["items"]["$ref"] ==
        "#/x-external/schemas~1pet.yaml");
  CHECK(root["paths"]["/self"]["get"]["responses"]["200"]["$ref"] == "#/components/responses/Ok");
  // Every ref resolves; pet -> owner -> pet is a cycle, marked once.
  CHECK(loaded.document->warnings.empty());
  CHECK(loaded.document->refs.circular_count() == 1);
}

TEST_CASE("refs outside the document's directory or to other kinds of files are not read",
          "[openapi][refs]") {
  SpecDir dir;
  const auto main = dir.write("api.json", R"({"openapi": "3.0.3", "info": {"title": "T"}, "paths": {
    "/a": {"$ref": "../../etc/passwd.json"}, "/b": {"$ref": "/etc/hosts.yaml"},
    "/c": {"$ref": "notes.txt"}, "/d": {"$ref": "https://example.com/x.yaml"}}})");
  const auto loaded = load_file(main);
  REQUIRE(loaded.document);
  CHECK_FALSE(loaded.document->root->contains("x-external"));
  const auto& warnings = loaded.document->warnings;
  auto has = [&](std::string_view text) {
    return std::any_of(warnings.begin(), warnings.end(),
                       [&](const std::string& w) { return w.find(text) != std::string::npos; });
  };
  CHECK(has("$ref ../../etc/passwd.json points outside the document's directory; not read"));
  CHECK(has("$ref /etc/hosts.yaml points outside the document's directory; not read"));
  CHECK(has("$ref notes.txt is not a .json, .yaml or .yml file; not read"));
  CHECK(has("$ref https://example.com/x.yaml is remote; it is not fetched and stays as written"));
  // Said once: the ref index does not add its own "not local" for a ref the bundler warned of.
  CHECK_FALSE(has("$ref https://example.com/x.yaml is not local"));
  CHECK_FALSE(has("$ref notes.txt is not local"));
}

TEST_CASE("a referenced file that is missing or broken is a problem naming it", "[openapi][refs]") {
  SpecDir dir;
  dir.write("broken.yaml", "a: [1,\n");
  const auto main = dir.write("api.json", R"({"openapi": "3.0.3", "info": {"title": "T"}, "paths": {
    "/a": {"$ref": "missing.json"}, "/b": {"$ref": "broken.yaml#/a"}}})");
  const auto loaded = load_file(main);
  CHECK_FALSE(loaded.document);
  REQUIRE(loaded.problems.size() == 2);
  CHECK(loaded.problems[0] == main.string() + ": $ref missing.json: missing.json: cannot read it");
  CHECK(loaded.problems[1].rfind(main.string() + ": $ref broken.yaml#/a: broken.yaml: line ", 0) ==
        0);
}

TEST_CASE("a version that is not a string is shown as written, never thrown", "[openapi]") {
  // Found by fuzz/openapi: `info.version` was read as a string unchecked.
  auto yaml = parse_yaml("openapi: 3.0.3\ninfo: {title: T, version: 1.5}\npaths: {}\n");
  REQUIRE(yaml.document);
  CHECK(yaml.document->version == "1.5");
  auto integer = parse_json(R"({"openapi":"3.0.3","info":{"title":"T","version":2},"paths":{}})");
  REQUIRE(integer.document);
  CHECK(integer.document->version == "2");
  auto object = parse_json(R"({"openapi":"3.0.3","info":{"title":"T","version":{}},"paths":{}})");
  REQUIRE(object.document);
  CHECK(object.document->version == "unversioned");
}

TEST_CASE("a number beyond a double is a problem, never thrown", "[openapi]") {
  // Found by fuzz/openapi: json::parse throws out_of_range, not parse_error, for 1e999.
  auto loaded = parse_json(R"({"openapi":"3.0.3","info":{"title":"T"},"paths":{},"x":1e999})");
  CHECK_FALSE(loaded.document);
  CHECK(loaded.problems ==
        std::vector<std::string>{"not valid JSON: a number is too large to represent"});
}
