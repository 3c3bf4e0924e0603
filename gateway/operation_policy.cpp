#include "gateway/operation_policy.h"

#include <algorithm>

#include "net/ascii.h"

namespace codemode::gateway {

namespace {

std::vector<std::string> segments(std::string_view path, bool loose) {
  std::vector<std::string> out;
  std::size_t start = path.empty() || path[0] != '/' ? 0 : 1;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (!loose || end > start) out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool same(std::string_view a, std::string_view b, bool loose) {
  return loose ? net::iequals(a, b) : a == b;
}

bool is_parameter(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

// A template segment matches a request segment: literally, or as a whole-segment parameter
// ({id}) that matches any non-empty segment, or a segment mixing both ("{name}.json").
bool segment_matches(std::string_view pattern, std::string_view segment, bool loose) {
  if (is_parameter(pattern) && pattern.find('}') == pattern.size() - 1) return !segment.empty();
  const std::size_t open = pattern.find('{');
  if (open == std::string_view::npos) return same(pattern, segment, loose);
  const std::size_t close = pattern.find('}', open);
  if (close == std::string_view::npos) return same(pattern, segment, loose);
  const std::string_view prefix = pattern.substr(0, open);
  const std::string_view suffix = pattern.substr(close + 1);
  return segment.size() > prefix.size() + suffix.size() &&
         same(segment.substr(0, prefix.size()), prefix, loose) &&
         same(segment.substr(segment.size() - suffix.size()), suffix, loose);
}

}  // namespace

OperationPolicy::OperationPolicy(OperationPolicyOptions options) : options_(std::move(options)) {
  if (options_.operations) {
    for (const auto& operation : *options_.operations) {
      templates_.push_back(segments(operation.path_template, options_.loose));
    }
  }
  for (auto& base : options_.base_paths) {
    while (!base.empty() && base.back() == '/') base.pop_back();
  }
  if (std::find(options_.base_paths.begin(), options_.base_paths.end(), "") ==
      options_.base_paths.end()) {
    options_.base_paths.emplace_back();
  }
}

std::optional<std::string> OperationPolicy::check(Method method, std::string_view target) const {
  if (!options_.methods.empty() && options_.methods.count(method) == 0) {
    std::string allowed;
    for (Method m : options_.methods)
      allowed += (allowed.empty() ? "" : ", ") + std::string(to_string(m));
    return "method " + std::string(to_string(method)) +
           " is not allowed here (allowed: " + allowed + ")";
  }
  if (!options_.operations) return std::nullopt;
  const std::string_view path = target.substr(0, target.find('?'));
  if (matches(method, path)) return std::nullopt;
  return std::string(to_string(method)) + " " + std::string(path.substr(0, 200)) +
         " matches no operation in the API description";
}

std::optional<std::string> OperationPolicy::operation_of(Method method,
                                                         std::string_view target) const {
  if (!options_.operations) return std::nullopt;
  const Operation* operation = match(method, target.substr(0, target.find('?')));
  if (operation == nullptr) return std::nullopt;
  return std::string(to_string(operation->method)) + " " + operation->path_template;
}

const Operation* OperationPolicy::match(Method method, std::string_view path) const {
  for (const auto& base : options_.base_paths) {
    if (path.size() < base.size() || !same(path.substr(0, base.size()), base, options_.loose)) {
      continue;
    }
    const std::string_view rest = path.substr(base.size());
    if (!base.empty() && !rest.empty() && rest[0] != '/') continue;
    const auto request = segments(rest.empty() ? "/" : rest, options_.loose);
    for (std::size_t i = 0; i < templates_.size(); ++i) {
      // HEAD is allowed wherever GET is, as HTTP defines it.
      const Method declared = (*options_.operations)[i].method;
      if (declared != method && !(method == Method::head && declared == Method::get)) continue;
      const auto& pattern = templates_[i];
      if (pattern.size() != request.size()) continue;
      bool all = true;
      for (std::size_t s = 0; s < pattern.size() && all; ++s) {
        all = segment_matches(pattern[s], request[s], options_.loose);
      }
      if (all) return &(*options_.operations)[i];
    }
  }
  return nullptr;
}

}  // namespace codemode::gateway
