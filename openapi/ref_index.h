// Where every $ref of a document leads, worked out once at load time.
//
// The `spec` a search isolate sees has its local $refs resolved. Copying the resolved document
// into every isolate would cost the expanded size (GitHub's REST API: 13 MB as published, 73 MB
// expanded) on every call, so nothing is copied here: the index maps each `{"$ref": ...}` object
// of the parsed document to the node it names, and the sandbox materialises that node lazily,
// only when code touches it. Cycles are broken once, here: a walk of the document that follows
// refs depth-first marks every ref that leads back into a node still being walked as circular;
// the sandbox shows those as `{"$circular": "<the ref>"}` and all others as the target itself,
// so the view code sees is finite and acyclic.
//
// Immutable after build(); read concurrently by every worker. It holds pointers into the
// document, which must outlive it and never change (Document owns both).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace codemode::openapi {

class RefIndex {
 public:
  struct Ref {
    std::string pointer;  // the $ref text as written
    const nlohmann::ordered_json* target =
        nullptr;            // nullptr: not resolvable (external or missing)
    bool circular = false;  // following it would lead back into itself
  };

  // Indexes every `$ref` under `root`. Refs it cannot resolve are kept as written and each
  // distinct one is reported once in `warnings`.
  static RefIndex build(const nlohmann::ordered_json& root, std::vector<std::string>& warnings);

  // The ref an object node stands for; nullptr when the node is not a `{"$ref": string}` object.
  const Ref* find(const nlohmann::ordered_json* node) const {
    auto it = refs_.find(node);
    return it == refs_.end() ? nullptr : &it->second;
  }

  std::size_t size() const { return refs_.size(); }
  // Every indexed occurrence and where it leads, in no particular order.
  const std::unordered_map<const nlohmann::ordered_json*, Ref>& entries() const { return refs_; }
  std::size_t circular_count() const;

 private:
  std::unordered_map<const nlohmann::ordered_json*, Ref> refs_;
};

// Resolves a local reference ("#", "#/components/schemas/Pet", with ~0 ~1 and %-escapes)
// against `root`; nullptr when it is not local or names nothing.
const nlohmann::ordered_json* resolve_local_ref(const nlohmann::ordered_json& root,
                                                std::string_view ref);

}  // namespace codemode::openapi
