#include "openapi/yaml.h"

#include <catch2/catch.hpp>

#include "openapi/document.h"

using namespace codemode::openapi;
using json = nlohmann::ordered_json;

namespace {
json yaml(std::string_view text) {
  auto converted = yaml_to_json(text, 1000);
  INFO(text);
  REQUIRE(std::holds_alternative<json>(converted));
  return std::get<json>(converted);
}
std::string yaml_error(std::string_view text, std::size_t max_nodes = 1000) {
  auto converted = yaml_to_json(text, max_nodes);
  REQUIRE(std::holds_alternative<std::string>(converted));
  return std::get<std::string>(converted);
}
}  // namespace

TEST_CASE("plain scalars follow the YAML 1.2 core schema, quoted ones are strings",
          "[openapi][yaml]") {
  CHECK(
      yaml(
          "[~, null, '', true, False, 42, -7, 0x1F, 0o17, 1.5, 2e3, '42', \"true\", 1.2.3, yes]") ==
      json::parse(R"([null, null, "", true, false, 42, -7, 31, 15, 1.5, 2000.0, "42", "true",
                        "1.2.3", "yes"])"));
  CHECK(yaml("big: 99999999999999999999999").at("big") == "99999999999999999999999");
  CHECK(yaml("inf: .inf").at("inf") == ".inf");
}

TEST_CASE("mappings keep their order, and response codes stay strings", "[openapi][yaml]") {
  const json doc = yaml(
      "paths:\n  /b: {}\n  /a:\n    get:\n      responses:\n        '200': {}\n        404: {}\n");
  CHECK(doc.dump() == R"({"paths":{"/b":{},"/a":{"get":{"responses":{"200":{},"404":{}}}}}})");
}

TEST_CASE("YAML problems name the line and column", "[openapi][yaml]") {
  CHECK(yaml_error("a: [1, 2\nb: 3\n").rfind("line ", 0) == 0);
  CHECK(yaml_error("a: 1\na: 2\n") == "line 2, column 1: duplicate key \"a\"");
  CHECK(yaml_error("? [1, 2]\n: x\n") ==
        "line 1, column 3: a mapping key must be a scalar to become JSON");
}

TEST_CASE("aliases are expanded, and a billion laughs is refused", "[openapi][yaml]") {
  CHECK(yaml("base: &b {type: string}\nother: *b\n") ==
        json::parse(R"({"base": {"type": "string"}, "other": {"type": "string"}})"));
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char previous = 'a';
  for (char name = 'b'; name <= 'j'; ++name) {
    bomb += std::string(1, name) + ": &" + name + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + previous;
    bomb += "]\n";
    previous = name;
  }
  const std::string error = yaml_error(bomb, 100000);
  CHECK(error.find("expands to more than 100000 values") != std::string::npos);
}

TEST_CASE("a YAML OpenAPI document loads like its JSON twin", "[openapi][yaml]") {
  const auto from_yaml = parse_yaml(R"(openapi: 3.0.3
info:
  title: Pets
  version: "1.0"
paths:
  /pets:
    get:
      responses:
        '200':
          $ref: '#/components/responses/Pets'
components:
  responses:
    Pets: {description: pets}
)");
  REQUIRE(from_yaml.document);
  CHECK(from_yaml.document->title == "Pets");
  CHECK(from_yaml.document->version == "1.0");
  CHECK(from_yaml.document->refs.size() == 1);
  const auto from_json = parse_json(from_yaml.document->root->dump());
  REQUIRE(from_json.document);
  CHECK(*from_json.document->root == *from_yaml.document->root);
  CHECK(parse_text(" {\"openapi\": \"3.0.3\"}").problems.size() == 2);  // sniffed as JSON
  CHECK(parse_text("openapi: 3.0.3\n").problems.size() == 2);           // YAML; 3.0.3 is a string
  CHECK(parse_text("openapi: 3.1\n").problems.size() == 3);             // 3.1 is a number: refused
}

TEST_CASE("JSON syntax errors name the line and column", "[openapi]") {
  CHECK(parse_json("{\n  \"a\": 1,\n  oops\n}").problems ==
        std::vector<std::string>{"line 3, column 3: not valid JSON"});
}

TEST_CASE("a long plain scalar is text, whatever it looks like", "[openapi][yaml]") {
  // Found by fuzz/openapi: matching 7 KB of digits against the number patterns overflowed the
  // stack (std::regex recurses per character).
  const std::string digits(100000, '1');
  CHECK(yaml("x: " + digits)["x"] == digits);
  CHECK(yaml("x: 12345")["x"] == 12345);
}
