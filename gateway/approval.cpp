#include "gateway/approval.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "gateway/path_match.h"
#include "net/ascii.h"

namespace codemode::gateway {
namespace {

bool match_segments(const std::vector<std::string>& pattern, std::size_t p,
                    const std::vector<std::string>& path, std::size_t s) {
  if (p == pattern.size()) return s == path.size();
  if (pattern[p] == "**") {
    for (std::size_t skip = s; skip <= path.size(); ++skip) {
      if (match_segments(pattern, p + 1, path, skip)) return true;
    }
    return false;
  }
  if (s == path.size()) return false;
  if (pattern[p] != "*" &&
      match_segment(pattern[p], path[s], s + 1 == path.size()) == SegmentMatch::none) {
    return false;
  }
  return match_segments(pattern, p + 1, path, s + 1);
}

bool covers(const std::set<Method>& methods, Method method) {
  // HEAD is GET without the body, as the operations policy treats it.
  return methods.contains(method) || (method == Method::head && methods.contains(Method::get));
}

}  // namespace

bool path_matches(std::string_view pattern, std::string_view path) {
  return match_segments(declared_segments(pattern), 0, route_segments(path), 0);
}

bool needs_approval(const ApprovalRules& rules, Method method, std::string_view path,
                    const Operation* operation, const std::vector<std::string>& base_paths) {
  if (!covers(rules.methods, method)) return false;
  if (rules.operations.empty() && rules.tags.empty() && rules.paths.empty()) return true;
  if (operation == nullptr && (!rules.operations.empty() || !rules.tags.empty())) {
    // Matching no declared operation, the request cannot be shown not to be one the rules name
    // (a spelling the matcher does not know, an undocumented route): it is asked about.
    return true;
  }
  if (operation != nullptr) {
    if (std::find(rules.operations.begin(), rules.operations.end(), operation->id) !=
        rules.operations.end()) {
      return true;
    }
    for (const auto& tag : operation->tags) {
      if (std::find(rules.tags.begin(), rules.tags.end(), tag) != rules.tags.end()) return true;
    }
  }
  const std::vector<std::string> segments = route_segments(path);
  for (const auto& pattern : rules.paths) {
    const std::vector<std::string> wanted = declared_segments(pattern);
    if (match_segments(wanted, 0, segments, 0)) return true;
    for (const auto& base : base_paths) {
      const std::vector<std::string> prefix = declared_segments(base);
      if (prefix.empty() || prefix.size() > segments.size()) continue;
      bool under = true;
      for (std::size_t s = 0; s < prefix.size() && under; ++s) {
        under = match_segment(prefix[s], segments[s], false) == SegmentMatch::literal;
      }
      if (under && match_segments(wanted, 0, segments, prefix.size())) return true;
    }
  }
  return false;
}

std::string approval_digest(std::string_view method, std::string_view url, const Headers& headers,
                            std::string_view body) {
  // One line per header: checked names and values hold no line break, so the text is unique.
  std::vector<std::string> lines;
  lines.reserve(headers.size());
  for (const auto& [name, value] : headers) lines.push_back(net::lower(name) + ": " + value + "\n");
  std::sort(lines.begin(), lines.end());
  std::string header_block;
  for (const auto& line : lines) header_block += line;

  std::array<unsigned char, EVP_MAX_MD_SIZE> hash{};
  unsigned int size = 0;
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  const std::string_view separator("\n", 1);
  bool ok = context != nullptr && EVP_DigestInit_ex(context, EVP_sha256(), nullptr) == 1;
  for (const std::string_view part :
       {method, separator, url, separator, std::string_view(header_block), separator, body}) {
    ok = ok && EVP_DigestUpdate(context, part.data(), part.size()) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(context, hash.data(), &size) == 1;
  EVP_MD_CTX_free(context);
  if (!ok) return {};
  return net::to_hex(std::string_view(reinterpret_cast<const char*>(hash.data()), size));
}

}  // namespace codemode::gateway
