#include "openapi/ref_index.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "net/percent.h"

namespace codemode::openapi {

namespace {

using json = nlohmann::ordered_json;

// Deeper than any real document; a bound so a pathological one cannot exhaust the stack.
constexpr int kMaxDepth = 2000;

class Walker {
 public:
  Walker(const json& root, std::unordered_map<const json*, RefIndex::Ref>& refs,
         std::vector<std::string>& warnings)
      : root_(root), refs_(refs), warnings_(warnings) {}

  void walk(const json& node, int depth) {
    if (depth > kMaxDepth) {
      if (!depth_warned_) warnings_.push_back("nesting deeper than 2000 levels is not indexed");
      depth_warned_ = true;
      return;
    }
    if (node.is_array()) {
      for (const auto& item : node) walk(item, depth + 1);
      return;
    }
    if (!node.is_object()) return;
    const auto ref = node.find("$ref");
    if (ref != node.end() && ref->is_string()) {
      follow(node, ref->get_ref<const std::string&>(), depth);
    }
    for (const auto& [key, value] : node.items()) {
      if (key != "$ref") walk(value, depth + 1);
    }
  }

 private:
  enum class Color { grey, black };  // absent: not yet walked through a ref

  void follow(const json& occurrence, const std::string& pointer, int depth) {
    auto& entry = refs_[&occurrence];
    entry.pointer = pointer;
    const json* target = resolve_local_ref(root_, pointer);
    if (target == nullptr) {
      if (reported_.insert(pointer).second) {
        warnings_.push_back(pointer.rfind('#', 0) == 0
                                ? "$ref " + pointer +
                                      " names nothing in the document; kept as written"
                                : "$ref " + pointer + " is not local; kept as written");
      }
      return;
    }
    entry.target = target;
    auto color = colors_.find(target);
    if (color != colors_.end()) {
      if (color->second == Color::grey) entry.circular = true;  // sticky: never unmarked
      return;
    }
    colors_[target] = Color::grey;
    walk(*target, depth + 1);
    colors_[target] = Color::black;
  }

  const json& root_;
  std::unordered_map<const json*, RefIndex::Ref>& refs_;
  std::vector<std::string>& warnings_;
  std::unordered_map<const json*, Color> colors_;
  std::set<std::string> reported_;
  bool depth_warned_ = false;
};

}  // namespace

const json* resolve_local_ref(const json& root, std::string_view ref) {
  if (ref.empty() || ref[0] != '#') return nullptr;
  const std::string pointer = net::percent_decode(ref.substr(1), net::PlusMeans::plus);
  if (pointer.empty()) return &root;
  if (pointer[0] != '/') return nullptr;
  const json* node = &root;
  std::size_t start = 1;
  for (;;) {
    const std::size_t end = std::min(pointer.find('/', start), pointer.size());
    std::string token;
    for (std::size_t i = start; i < end; ++i) {
      if (pointer[i] == '~' && i + 1 < end && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token += pointer[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += pointer[i];
      }
    }
    if (node->is_object()) {
      auto it = node->find(token);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array()) {
      if (token.empty() || token.size() > 9 ||
          !std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          (token.size() > 1 && token[0] == '0')) {
        return nullptr;
      }
      const std::size_t index = std::stoul(token);
      if (index >= node->size()) return nullptr;
      node = &(*node)[index];
    } else {
      return nullptr;
    }
    if (end == pointer.size()) return node;
    start = end + 1;
  }
}

RefIndex RefIndex::build(const json& root, std::vector<std::string>& warnings) {
  RefIndex index;
  Walker(root, index.refs_, warnings).walk(root, 0);
  return index;
}

std::size_t RefIndex::circular_count() const {
  return static_cast<std::size_t>(
      std::count_if(refs_.begin(), refs_.end(), [](const auto& r) { return r.second.circular; }));
}

}  // namespace codemode::openapi
