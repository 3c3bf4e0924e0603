// Fuzzes loading an API description: parse_text (JSON, or YAML through yaml-cpp, with Swagger
// 2.0 converted), the $ref index make_document builds, and what is derived from an accepted
// document (declared operations, server base paths, both tool descriptions).
//
// Invariants: nothing throws (a bad document is a list of problems, never a crash); a document
// comes back exactly when there are no problems; every indexed ref that is not marked circular
// leads to its target, and following those refs from the root never loops (the `spec` view
// search code sees is finite); descriptions stay under kMaxDescriptionChars.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "fuzz/check.h"
#include "openapi/describe.h"
#include "openapi/document.h"
#include "openapi/image.h"
#include "openapi/operations.h"
#include "openapi/ref_index.h"

namespace {

using namespace codemode;
using json = nlohmann::ordered_json;

// Depth-first over the view search code sees: children, and for an indexed ref that is not
// circular, its target instead of the ref object. A grey node met again is a loop.
class ViewWalk {
 public:
  explicit ViewWalk(const openapi::RefIndex& refs) : refs_(refs) {}

  void visit(const json& node, int depth) {
    if (depth > 1000) return;  // RefIndex stops at 2000 levels; no view is that deep
    const json* shown = &node;
    if (const auto* ref = refs_.find(&node)) {
      if (ref->circular || ref->target == nullptr) return;  // shown as a leaf
      shown = ref->target;
    }
    auto [it, fresh] = colors_.try_emplace(shown, Color::grey);
    if (!fresh) {
      FUZZ_CHECK(it->second == Color::black, "following non-circular refs never loops");
      return;
    }
    if (shown->is_structured()) {
      for (const auto& child : *shown) visit(child, depth + 1);
    }
    colors_[shown] = Color::black;
  }

 private:
  enum class Color { grey, black };
  const openapi::RefIndex& refs_;
  std::unordered_map<const json*, Color> colors_;
};

// The image of a document reads back as the document: same kinds, sizes, keys and strings,
// and each indexed ref with its target where the tree has one.
class ImageCompare {
 public:
  ImageCompare(const openapi::DocumentImage& image, const openapi::RefIndex& refs)
      : image_(image), refs_(refs) {}

  void compare(const json& node, openapi::DocumentImage::Node at, int depth) {
    using Kind = openapi::DocumentImage::Kind;
    if (depth > 1000) return;
    const Kind kind = image_.kind(at);
    switch (node.type()) {
      case json::value_t::object: {
        FUZZ_CHECK(kind == Kind::object && image_.count(at) == node.size(), "an object");
        std::uint32_t i = 0;
        for (const auto& [key, value] : node.items()) {
          FUZZ_CHECK(image_.key(at, i) == key, "the same keys in the same order");
          compare(value, image_.value(at, i), depth + 1);
          ++i;
        }
        const auto* ref = refs_.find(&node);
        const auto image_ref = image_.ref(at);
        FUZZ_CHECK((ref != nullptr) == image_ref.has_value(), "the same refs");
        if (ref != nullptr) {
          FUZZ_CHECK(ref->circular == image_ref->circular && ref->pointer == image_ref->pointer &&
                         (ref->target == nullptr) == (image_ref->target == 0),
                     "a ref leads where the index says");
        }
        return;
      }
      case json::value_t::array: {
        FUZZ_CHECK(kind == Kind::array && image_.count(at) == node.size(), "an array");
        for (std::uint32_t i = 0; i < node.size(); ++i)
          compare(node[i], image_.item(at, i), depth + 1);
        return;
      }
      case json::value_t::string:
        FUZZ_CHECK(kind == Kind::string && image_.string(at) == node.get_ref<const std::string&>(),
                   "a string");
        return;
      case json::value_t::boolean:
        FUZZ_CHECK(kind == (node.get<bool>() ? Kind::boolean_true : Kind::boolean_false),
                   "a boolean");
        return;
      case json::value_t::number_integer:
      case json::value_t::number_unsigned:
      case json::value_t::number_float:
        FUZZ_CHECK(kind == Kind::number, "a number");
        return;
      default:
        FUZZ_CHECK(kind == Kind::null, "null");
        return;
    }
  }

 private:
  const openapi::DocumentImage& image_;
  const openapi::RefIndex& refs_;
};

std::size_t code_points(std::string_view text) {
  std::size_t count = 0;
  for (const char c : text) count += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return count;
}

bool valid_utf8(const std::string& text) {
  try {
    (void)json(text).dump();
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

bool looks_like_json(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n\f\v");
  return first != std::string_view::npos && text[first] == '{';
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const openapi::LoadResult result = openapi::parse_text(text);
  FUZZ_CHECK(result.document.has_value() == result.problems.empty(),
             "a document comes back exactly when nothing is wrong");
  if (!result.document) return 0;
  const openapi::Document& document = *result.document;
  FUZZ_CHECK(document.root != nullptr && document.root->is_object(), "a document is an object");

  ViewWalk(document.refs).visit(*document.root, 0);

  auto image = openapi::DocumentImage::build(document);
  FUZZ_CHECK(std::holds_alternative<openapi::DocumentImage>(image), "every document has an image");
  const auto& built = std::get<openapi::DocumentImage>(image);
  ImageCompare(built, document.refs).compare(*document.root, built.root(), 0);

  openapi::declared_operations(document);
  openapi::server_base_paths(document);
  openapi::DescribeOptions options;
  options.origins = {"https://api.test", "http://127.0.0.1:8788"};
  const std::string search = openapi::describe_search(document, options);
  const std::string execute = openapi::describe_execute(document, options);
  FUZZ_CHECK(code_points(search) <= openapi::kMaxDescriptionChars &&
                 code_points(execute) <= openapi::kMaxDescriptionChars,
             "descriptions stay under kMaxDescriptionChars");
  // JSON text is valid UTF-8 once parsed, so what is made of it must be too.
  if (looks_like_json(text)) {
    FUZZ_CHECK(valid_utf8(search) && valid_utf8(execute), "descriptions of JSON are UTF-8");
  }
  return 0;
}
