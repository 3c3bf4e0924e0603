#include "gateway/operation_policy.h"

#include <algorithm>

#include "gateway/path_match.h"

namespace codemode::gateway {

OperationPolicy::OperationPolicy(OperationPolicyOptions options) : options_(std::move(options)) {
  if (options_.operations) {
    for (const auto& operation : *options_.operations) {
      templates_.push_back(declared_segments(operation.path_template));
    }
  }
  for (const auto& base : options_.base_paths) {
    auto segments = declared_segments(base);
    if (!segments.empty()) bases_.push_back(std::move(segments));
  }
  bases_.emplace_back();  // the root is always tried, last
}

const std::vector<Operation>& OperationPolicy::operations() const {
  static const std::vector<Operation> kNone;
  return options_.operations ? *options_.operations : kNone;
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
  const std::vector<std::string> request = route_segments(path);
  for (const auto& base : bases_) {
    if (request.size() < base.size()) continue;
    bool under = true;
    for (std::size_t s = 0; s < base.size() && under; ++s) {
      under = match_segment(base[s], request[s], false) == SegmentMatch::literal;
    }
    if (!under) continue;
    const std::size_t first = base.size();
    // The most specific declared paths the rest matches: each segment's match, left to right.
    std::vector<SegmentMatch> best;
    std::vector<std::size_t> tied;  // operations of the paths that match as well as `best`
    for (std::size_t i = 0; i < templates_.size(); ++i) {
      const auto& pattern = templates_[i];
      if (pattern.size() != request.size() - first) continue;
      std::vector<SegmentMatch> rank;
      rank.reserve(pattern.size());
      for (std::size_t s = 0; s < pattern.size(); ++s) {
        rank.push_back(match_segment(pattern[s], request[first + s], s + 1 == pattern.size()));
        if (rank.back() == SegmentMatch::none) break;
      }
      if (!rank.empty() && rank.back() == SegmentMatch::none) continue;
      if (tied.empty() || rank > best) {
        best = std::move(rank);
        tied = {i};
      } else if (rank == best) {
        tied.push_back(i);
      }
    }
    if (tied.empty()) continue;
    const auto& operations = *options_.operations;
    for (const std::size_t i : tied) {
      if (operations[i].method == method) return &operations[i];
    }
    // HEAD is allowed wherever GET is, as HTTP defines it.
    if (method == Method::head) {
      for (const std::size_t i : tied) {
        if (operations[i].method == Method::get) return &operations[i];
      }
    }
    return nullptr;  // the path is declared, without this method
  }
  return nullptr;
}

}  // namespace codemode::gateway
