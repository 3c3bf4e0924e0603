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
