#include "openapi/ref_index.h"

#include <functional>

#include <catch2/catch.hpp>

using namespace codemode::openapi;
using json = nlohmann::ordered_json;

namespace {

// Expands the document the way the sandbox's lazy view does, to check the index end to end:
// resolved refs become their targets, circular ones markers, unresolved ones stay as written.
json expand(const json& node, const RefIndex& index) {
  if (const auto* ref = index.find(&node)) {
    if (ref->circular) return json{{"$circular", ref->pointer}};
    if (ref->target != nullptr) return expand(*ref->target, index);
    return node;
  }
  if (node.is_object()) {
    json out = json::object();
    for (const auto& [key, value] : node.items()) out[key] = expand(value, index);
    return out;
  }
  if (node.is_array()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(expand(item, index));
    return out;
  }
  return node;
}

}  // namespace

TEST_CASE("local pointers resolve with escapes", "[openapi][refs]") {
  const json doc = json::parse(R"({"a":{"b/c":{"d~e":[10,{"f":1}]}},"p q":2})");
  CHECK(resolve_local_ref(doc, "#") == &doc);
  CHECK(resolve_local_ref(doc, "#/a/b~1c/d~0e/0")->get<int>() == 10);
  CHECK(resolve_local_ref(doc, "#/a/b~1c/d~0e/1/f")->get<int>() == 1);
  CHECK(resolve_local_ref(doc, "#/p%20q")->get<int>() == 2);
  CHECK(resolve_local_ref(doc, "#/a/missing") == nullptr);
  CHECK(resolve_local_ref(doc, "#/a/b~1c/d~0e/2") == nullptr);
  CHECK(resolve_local_ref(doc, "#/a/b~1c/d~0e/01") == nullptr);
  CHECK(resolve_local_ref(doc, "other.json#/a") == nullptr);
  CHECK(resolve_local_ref(doc, "#a") == nullptr);
}

TEST_CASE("nested refs resolve to their targets", "[openapi][refs]") {
  const json doc = json::parse(R"({
    "paths": {"/o": {"get": {"responses": {"200": {"$ref": "#/components/responses/Order"}}}}},
    "components": {
      "responses": {"Order": {"content": {"schema": {"$ref": "#/components/schemas/Order"}}}},
      "schemas": {"Order": {"properties": {"total": {"$ref": "#/components/schemas/Money"}}},
                  "Money": {"type": "integer"}}}})");
  std::vector<std::string> warnings;
  const auto index = RefIndex::build(doc, warnings);
  CHECK(warnings.empty());
  CHECK(index.size() == 3);
  CHECK(index.circular_count() == 0);
  const json expanded = expand(doc, index);
  CHECK(expanded["paths"]["/o"]["get"]["responses"]["200"]["content"]["schema"]["properties"]
                ["total"] == json{{"type", "integer"}});
}

TEST_CASE("cycles are marked, never expanded forever", "[openapi][refs]") {
  const json doc = json::parse(R"({
    "paths": {"/tree": {"schema": {"$ref": "#/components/schemas/Node"}}},
    "components": {"schemas": {
      "Node": {"properties": {"children": {"items": {"$ref": "#/components/schemas/Node"}},
                              "owner": {"$ref": "#/components/schemas/A"}}},
      "A": {"properties": {"b": {"$ref": "#/components/schemas/B"}}},
      "B": {"properties": {"a": {"$ref": "#/components/schemas/A"}}}}}})");
  std::vector<std::string> warnings;
  const auto index = RefIndex::build(doc, warnings);
  CHECK(index.circular_count() >= 2);        // Node -> Node, and one edge of A <-> B
  const json expanded = expand(doc, index);  // terminates: the view is acyclic
  const json& node = expanded["paths"]["/tree"]["schema"];
  CHECK(node["properties"]["children"]["items"] ==
        json{{"$circular", "#/components/schemas/Node"}});
  // Somewhere along A -> B -> A the walk stops at a marker.
  const std::string text = expanded.dump();
  const bool marked = text.find(R"({"$circular":"#/components/schemas/A"})") != std::string::npos ||
                      text.find(R"({"$circular":"#/components/schemas/B"})") != std::string::npos;
  CHECK(marked);
}

TEST_CASE("a ref to its own ancestor is circular", "[openapi][refs]") {
  const json doc =
      json::parse(R"({"components":{"schemas":{"L":{"next":{"$ref":"#/components/schemas/L"}}}},
                                   "paths":{"/l":{"$ref":"#/components/schemas/L"}}})");
  std::vector<std::string> warnings;
  const auto index = RefIndex::build(doc, warnings);
  const json expanded = expand(doc, index);
  CHECK(expanded["paths"]["/l"] == json{{"next", {{"$circular", "#/components/schemas/L"}}}});
}

TEST_CASE("unresolvable refs are kept and reported once each", "[openapi][refs]") {
  const json doc = json::parse(R"({"a":{"$ref":"#/nope"},"b":{"$ref":"#/nope"},
                                   "c":{"$ref":"common.yaml#/X"}})");
  std::vector<std::string> warnings;
  const auto index = RefIndex::build(doc, warnings);
  CHECK(warnings ==
        std::vector<std::string>{"$ref #/nope names nothing in the document; kept as written",
                                 "$ref common.yaml#/X is not local; kept as written"});
  CHECK(expand(doc, index) == doc);
}
