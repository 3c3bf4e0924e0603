#include "openapi/document.h"

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

TEST_CASE("a missing file is one problem naming it", "[openapi]") {
  auto loaded = load_file("/nonexistent/spec.json");
  CHECK(loaded.problems == std::vector<std::string>{"cannot read /nonexistent/spec.json"});
}
