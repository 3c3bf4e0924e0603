// What the tool descriptions tell the model about the API, generated from the document.
//
// The model writes good code only if the description says precisely what it can write: the
// shape of `spec` and of fetch() as TypeScript declarations, the API's title, servers and an
// index of its tags, the budgets, and example programs that fit this API. Each description
// stays under kMaxDescriptionChars whatever the document's size (the index is cut, not the
// declarations); specifics are what `search` is for. Pure functions; any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "openapi/document.h"

namespace codemode::openapi {

inline constexpr std::size_t kMaxDescriptionChars = 6000;

// The facts of the deployment that the descriptions mention.
struct DescribeOptions {
  std::vector<std::string> origins;  // the upstreams execute may call, first = base of "/x"
  std::string base_path;             // where "/x" goes on the first ("/api"), "" for the root
  std::uint32_t cpu_ms = 50;
  std::uint32_t wall_ms = 10000;
  std::uint32_t heap_mb = 64;
  std::uint32_t code_chars = 20000;
  std::uint32_t result_chars = 12000;
  std::uint32_t subrequests = 10;
  bool spec_operations_only = false;  // policy.operations == spec
  std::vector<std::string> methods;   // policy.methods; empty: all
};

std::string describe_search(const Document& document, const DescribeOptions& options);
std::string describe_execute(const Document& document, const DescribeOptions& options);

// The TypeScript declarations embedded in the descriptions, for checking them with tsc.
std::string search_declarations();
std::string execute_declarations();

}  // namespace codemode::openapi
