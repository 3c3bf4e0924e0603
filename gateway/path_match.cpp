#include "gateway/path_match.h"

#include <algorithm>

#include "net/ascii.h"
#include "net/percent.h"

namespace codemode::gateway {
namespace {

bool is_parameter(std::string_view segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}' &&
         segment.find('}') == segment.size() - 1;
}

}  // namespace

std::vector<std::string> route_segments(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    std::string_view segment = path.substr(start, end - start);
    segment = segment.substr(0, segment.find(';'));
    if (!segment.empty()) out.push_back(net::percent_decode(segment, net::PlusMeans::plus));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> declared_segments(std::string_view path) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (end > start) out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

SegmentMatch match_segment(std::string_view declared, std::string_view segment, bool last) {
  if (segment.empty()) return SegmentMatch::none;
  if (is_parameter(declared)) return SegmentMatch::parameter;
  const std::size_t open = declared.find('{');
  const std::size_t close = open == std::string_view::npos ? open : declared.find('}', open);
  if (close == std::string_view::npos) {
    if (net::iequals(declared, segment)) return SegmentMatch::literal;
    // `orders.json`, `orders.tar.gz`, `orders.` for `orders`: whatever follows the first '.' is
    // a format (Spring's suffix pattern is `orders.*`).
    if (last && segment.size() > declared.size() && segment[declared.size()] == '.' &&
        net::iequals(segment.substr(0, declared.size()), declared)) {
      return SegmentMatch::suffixed;
    }
    return SegmentMatch::none;
  }
  const std::string_view prefix = declared.substr(0, open);
  const std::string_view suffix = declared.substr(close + 1);
  if (segment.size() > prefix.size() + suffix.size() &&
      net::iequals(segment.substr(0, prefix.size()), prefix) &&
      net::iequals(segment.substr(segment.size() - suffix.size()), suffix)) {
    return SegmentMatch::partial;
  }
  return SegmentMatch::none;
}

}  // namespace codemode::gateway
