#include "openapi/image.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "fixtures/markethub/fixture_server.h"

using namespace codemode::openapi;
using json = nlohmann::ordered_json;
using Node = DocumentImage::Node;
using Kind = DocumentImage::Kind;

namespace {

DocumentImage image_of(const Document& document) {
  auto built = DocumentImage::build(document);
  if (auto* error = std::get_if<std::string>(&built)) FAIL("no image: " << *error);
  return std::move(std::get<DocumentImage>(built));
}

// The node as JSON, as written (refs not followed); numbers come back as doubles.
json as_json(const DocumentImage& image, Node node) {
  switch (image.kind(node)) {
    case Kind::null:
      return nullptr;
    case Kind::boolean_false:
      return false;
    case Kind::boolean_true:
      return true;
    case Kind::number:
      return image.number(node);
    case Kind::string:
      return std::string(image.string(node));
    case Kind::array: {
      json out = json::array();
      for (std::uint32_t i = 0; i < image.count(node); ++i) {
        out.push_back(as_json(image, image.item(node, i)));
      }
      return out;
    }
    case Kind::object: {
      json out = json::object();
      for (std::uint32_t i = 0; i < image.count(node); ++i) {
        out[std::string(image.key(node, i))] = as_json(image, image.value(node, i));
      }
      return out;
    }
  }
  return nullptr;
}

// What as_json() gives back for a document: the same, with every number a double.
json with_doubles(const json& node) {
  if (node.is_number()) return node.get<double>();
  if (node.is_array()) {
    json out = json::array();
    for (const auto& item : node) out.push_back(with_doubles(item));
    return out;
  }
  if (node.is_object()) {
    json out = json::object();
    for (const auto& [key, value] : node.items()) out[key] = with_doubles(value);
    return out;
  }
  return node;
}

Node member(const DocumentImage& image, Node object, std::string_view name) {
  for (std::uint32_t i = 0; i < image.count(object); ++i) {
    if (image.key(object, i) == name) return image.value(object, i);
  }
  FAIL("no member " << name);
  return 0;
}

}  // namespace

TEST_CASE("an image reads back as the document it was made from", "[openapi][image]") {
  for (std::string_view text :
       {std::string_view(
            R"({"b": 1, "a": [true, false, null, -2.5, 18446744073709551615, "é\u0000x",
                              {}, []], "c": {"z": "", "y": {"x": [[1]]}}})"),
        codemode::fixtures::markethub_openapi_json()}) {
    const Document document = make_document(json::parse(text));
    const DocumentImage image = image_of(document);
    CHECK(as_json(image, image.root()) == with_doubles(*document.root));  // member order kept
    CHECK(as_json(image, image.root()).dump() == with_doubles(*document.root).dump());
  }
}

TEST_CASE("an image knows where each ref leads", "[openapi][image]") {
  const Document document = make_document(json::parse(R"({
    "components": {"schemas": {
      "Pet": {"type": "object", "properties": {"parent": {"$ref": "#/components/schemas/Pet"},
                                               "tag": {"$ref": "#/components/schemas/Tag"}}},
      "Tag": {"type": "string"}}},
    "paths": {"/pets": {"$ref": "#/components/schemas/Pet", "description": "sibling"},
              "/lost": {"$ref": "#/nowhere"}, "/remote": {"$ref": "other.json#/x"}}})"));
  const DocumentImage image = image_of(document);
  const Node root = image.root();
  const Node schemas = member(image, member(image, root, "components"), "schemas");
  const Node pet = member(image, schemas, "Pet");
  const Node tag = member(image, schemas, "Tag");
  const Node properties = member(image, pet, "properties");
  const Node paths = member(image, root, "paths");

  const auto to_tag = image.ref(member(image, properties, "tag"));
  REQUIRE(to_tag);
  CHECK(to_tag->target == tag);
  CHECK_FALSE(to_tag->circular);
  CHECK(to_tag->pointer == "#/components/schemas/Tag");

  const auto to_pets = image.ref(member(image, paths, "/pets"));
  REQUIRE(to_pets);
  CHECK(to_pets->target == pet);
  CHECK(image.count(member(image, paths, "/pets")) == 2);  // the sibling is kept

  const auto to_parent = image.ref(member(image, properties, "parent"));
  REQUIRE(to_parent);
  CHECK(to_parent->circular);

  for (const char* unresolved : {"/lost", "/remote"}) {
    const auto ref = image.ref(member(image, paths, unresolved));
    REQUIRE(ref);
    CHECK(ref->target == 0);
    CHECK_FALSE(ref->circular);
  }
  CHECK_FALSE(image.ref(pet));  // an object without a $ref
  CHECK_FALSE(image.ref(tag));
}

TEST_CASE("an image is stored once per string and cannot be changed", "[openapi][image]") {
  json doc = json::object();
  for (int i = 0; i < 1000; ++i) {
    doc["k" + std::to_string(i)] = {{"description", std::string(200, 'd')}, {"type", "string"}};
  }
  const Document document = make_document(doc);
  const DocumentImage image = image_of(document);
  CHECK(image.size() < doc.dump().size() / 4);  // 200 bytes stored once, not 1000 times

  const int fd = image.fd();
  REQUIRE(fd >= 0);
  CHECK(::write(fd, "x", 1) < 0);
  CHECK(::ftruncate(fd, 0) < 0);
  CHECK(::mmap(nullptr, image.size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
  CHECK(::fcntl(fd, F_ADD_SEALS, 0) < 0);  // sealed against new seals (and their removal) too
  // What a sandbox process holds, a read-only mapping, cannot be made writable either.
  void* mapped = ::mmap(nullptr, image.size(), PROT_READ, MAP_SHARED, fd, 0);
  REQUIRE(mapped != MAP_FAILED);
  CHECK(::mprotect(mapped, image.size(), PROT_READ | PROT_WRITE) != 0);
  ::munmap(mapped, image.size());
}

TEST_CASE("an image maps in another place and reads the same", "[openapi][image]") {
  const Document document =
      make_document(json::parse(codemode::fixtures::markethub_openapi_json()));
  const DocumentImage built = image_of(document);
  auto mapped = DocumentImage::map(::dup(built.fd()));
  REQUIRE(std::holds_alternative<DocumentImage>(mapped));
  const DocumentImage& copy = std::get<DocumentImage>(mapped);
  CHECK(copy.fd() == -1);
  CHECK(as_json(copy, copy.root()) == as_json(built, built.root()));
}

TEST_CASE("a damaged image is refused or reads as nothing, never out of bounds",
          "[openapi][image]") {
  const int garbage = ::memfd_create("garbage", MFD_CLOEXEC);
  REQUIRE(::write(garbage, "not an image at all, just bytes", 32) == 32);
  auto refused = DocumentImage::map(garbage);
  REQUIRE(std::holds_alternative<std::string>(refused));
  CHECK(std::get<std::string>(refused) == "the document image is damaged (header)");

  const int tiny = ::memfd_create("tiny", MFD_CLOEXEC);
  auto too_small = DocumentImage::map(tiny);
  REQUIRE(std::holds_alternative<std::string>(too_small));
  CHECK(std::get<std::string>(too_small) == "the document image has an impossible size");

  const Document document = make_document(json::parse(R"({"a": [1, "two", {"x": null}]})"));
  const DocumentImage image = image_of(document);
  for (Node bogus : {Node{0}, Node{3}, static_cast<Node>(image.size() - 2),
                     static_cast<Node>(image.size()), Node{0xFFFFFFF0}}) {
    INFO(bogus);
    CHECK(image.kind(bogus) == Kind::null);
    CHECK(image.count(bogus) == 0);
    CHECK(image.string(bogus).empty());
    CHECK(image.item(bogus, 0) == 0);
    CHECK(image.key(bogus, 0).empty());
    CHECK_FALSE(image.ref(bogus));
  }
  const Node array = member(image, image.root(), "a");
  CHECK(image.item(array, 3) == 0);  // one past the end
  CHECK(image.kind(image.item(array, 99)) == Kind::null);
}
