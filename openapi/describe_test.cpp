#include "openapi/describe.h"

#include <catch2/catch.hpp>

#include "fixtures/markethub/fixture_server.h"

using namespace codemode::openapi;

namespace {
Document markethub() {
  auto loaded = parse_json(codemode::fixtures::markethub_openapi_json());
  REQUIRE(loaded.document);
  return std::move(*loaded.document);
}
DescribeOptions options() {
  DescribeOptions o;
  o.origins = {"http://127.0.0.1:8788"};
  return o;
}
bool has(const std::string& text, std::string_view part) {
  INFO(text);
  return text.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("the search description names the API, its tags and fitting examples",
          "[openapi][describe]") {
  const std::string text = describe_search(markethub(), options());
  CHECK(has(text, "MarketHub API"));
  CHECK(has(text, "Tags (operations): "));
  CHECK(has(text, "Products (2)"));
  CHECK(has(text, "declare const spec"));
  CHECK(has(text, "spec.paths['/products/{productId}'].get"));
  CHECK(has(text, "describe(operation: string): string;"));
  CHECK(has(text, "spec.describe('GET /products/{productId}')"));
  CHECK(has(text, "50 ms CPU"));
  CHECK(text.size() <= kMaxDescriptionChars);
}

TEST_CASE("the execute description names origins, budgets, policy and fetch",
          "[openapi][describe]") {
  DescribeOptions o = options();
  o.subrequests = 7;
  std::string text = describe_execute(markethub(), o);
  CHECK(has(text, "Requests may go only to: http://127.0.0.1:8788"));
  CHECK(has(text, "At most 7 requests per call"));
  CHECK(has(text, "declare function fetch"));
  CHECK(has(text, "fetch('/products?limit=3')"));
  // The web globals a model reaches for and could not assume in a sandbox.
  for (std::string_view global :
       {"AbortController", "Blob", "FormData", "TextEncoder/Decoder", "structuredClone",
        "atob/btoa", "URLSearchParams", "crypto.randomUUID/getRandomValues/subtle.digest",
        "performance.now"}) {
    CHECK(has(text, global));
  }
  CHECK(has(text, "Limits: as for `search`."));
  CHECK_FALSE(has(text, "Only operations declared"));
  o.spec_operations_only = true;
  o.methods = {"GET", "HEAD"};
  text = describe_execute(markethub(), o);
  CHECK(has(text, "Only operations declared in the API description"));
  CHECK(has(text, "Allowed methods: GET, HEAD."));
  CHECK(has(describe_execute(markethub(), DescribeOptions{}), "No upstream is configured"));
}

TEST_CASE("descriptions stay bounded whatever the document's size", "[openapi][describe]") {
  nlohmann::ordered_json doc = {{"openapi", "3.0.3"},
                                {"info", {{"title", std::string(500, 'T')}, {"version", "1"}}},
                                {"paths", nlohmann::ordered_json::object()}};
  for (int i = 0; i < 3000; ++i) {
    doc["paths"]["/resource" + std::to_string(i)]["get"] = {
        {"tags", {"tag-with-a-rather-long-name-" + std::to_string(i)}}, {"summary", "x"}};
  }
  auto loaded = parse_json(doc.dump());
  REQUIRE(loaded.document);
  const std::string search = describe_search(*loaded.document, options());
  CHECK(search.size() <= kMaxDescriptionChars);
  CHECK(has(search, "more tags"));
  CHECK(has(search, "3000 paths, 3000 operations"));
  CHECK(describe_execute(*loaded.document, options()).size() <= kMaxDescriptionChars);
}

namespace {
Document parsed(std::string_view text) {
  auto loaded = parse_json(text);
  REQUIRE(loaded.document);
  return std::move(*loaded.document);
}
}  // namespace

TEST_CASE("the execute example pages with the parameter the API declares, or with none",
          "[openapi][describe]") {
  // GitHub pages with per_page (a shared parameter, by $ref); the example must not invent limit.
  const Document github =
      parsed(R"({"openapi": "3.0.3", "info": {"title": "GitHub", "version": "1"},
    "paths": {
      "/advisories": {"get": {"parameters": [{"$ref": "#/components/parameters/per-page"}],
                              "responses": {"200": {"description": "ok"}}}},
      "/advisories/{ghsa_id}": {"get": {"responses": {"200": {"description": "ok"}}}}},
    "components": {"parameters": {"per-page": {"name": "per_page", "in": "query",
                                               "schema": {"type": "integer"}}}}})");
  std::string text = describe_execute(github, options());
  CHECK(has(text, "fetch('/advisories?per_page=3')"));
  CHECK_FALSE(has(text, "limit=3"));

  const Document plain = parsed(R"({"openapi": "3.0.3", "info": {"title": "Plain", "version": "1"},
    "paths": {"/pets": {"get": {"responses": {"200": {"description": "ok"}}}}}})");
  text = describe_execute(plain, options());
  CHECK(has(text, "fetch('/pets');"));
}

TEST_CASE("the search description leaves the tags line out when no operation has a tag",
          "[openapi][describe]") {
  const Document untagged =
      parsed(R"({"openapi": "3.0.3", "info": {"title": "Untagged", "version": "1"},
    "paths": {"/v1/balance": {"get": {"responses": {"200": {"description": "ok"}}}}}})");
  const std::string text = describe_search(untagged, options());
  CHECK_FALSE(has(text, "Tags (operations)"));
  CHECK_FALSE(has(text, "untagged"));
  CHECK(has(text, "1 paths, 1 operations."));
}
