#include "gateway/approval.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "net/ascii.h"

namespace codemode::gateway {
namespace {

// Empty segments (a trailing or doubled '/') are skipped, as servers that route `/orders/` to
// `/orders` do, so a rule cannot be walked around by the spelling.
std::vector<std::string_view> segments(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    if (end > start) out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool match_segments(const std::vector<std::string_view>& pattern, std::size_t p,
                    const std::vector<std::string_view>& path, std::size_t s) {
  if (p == pattern.size()) return s == path.size();
  if (pattern[p] == "**") {
    for (std::size_t skip = s; skip <= path.size(); ++skip) {
      if (match_segments(pattern, p + 1, path, skip)) return true;
    }
    return false;
  }
  if (s == path.size()) return false;
  // Literal segments ignore ASCII case, as case-insensitive servers route.
  if (pattern[p] != "*" && !net::iequals(pattern[p], path[s])) return false;
  return match_segments(pattern, p + 1, path, s + 1);
}

}  // namespace

bool path_matches(std::string_view pattern, std::string_view path) {
  return match_segments(segments(pattern), 0, segments(path), 0);
}

bool needs_approval(const ApprovalRules& rules, Method method, std::string_view path,
                    const Operation* operation, const std::vector<std::string>& base_paths) {
  if (!rules.methods.contains(method)) return false;
  if (rules.operations.empty() && rules.tags.empty() && rules.paths.empty()) return true;
  if (operation != nullptr) {
    if (std::find(rules.operations.begin(), rules.operations.end(), operation->id) !=
        rules.operations.end()) {
      return true;
    }
    for (const auto& tag : operation->tags) {
      if (std::find(rules.tags.begin(), rules.tags.end(), tag) != rules.tags.end()) return true;
    }
  }
  for (const auto& pattern : rules.paths) {
    if (path_matches(pattern, path)) return true;
    for (const auto& base : base_paths) {
      if (!base.empty() && path.size() >= base.size() &&
          net::iequals(path.substr(0, base.size()), base) &&
          path_matches(pattern, path.substr(base.size())))
        return true;
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
