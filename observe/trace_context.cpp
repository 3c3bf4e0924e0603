#include "observe/trace_context.h"

#include <openssl/rand.h>

#include <algorithm>
#include <array>

#include "base/check.h"
#include "net/ascii.h"

namespace codemode::server {

namespace {

constexpr std::size_t kTraceParentChars = 55;  // "00-" 32 "-" 16 "-" 2
constexpr std::size_t kMaxTraceState = 512;
constexpr std::size_t kMaxTraceStateMembers = 32;

bool is_lower_hex(std::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

bool all_zeros(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c == '0'; });
}

std::string random_hex(std::size_t bytes) {
  std::array<unsigned char, 16> buffer{};
  CODEMODE_CHECK(bytes <= buffer.size(), "ids are at most 16 bytes");
  std::string out;
  do {
    CODEMODE_CHECK(RAND_bytes(buffer.data(), static_cast<int>(bytes)) == 1,
                   "OpenSSL's generator is seeded from the kernel at start-up");
    out = net::to_hex(std::string_view(reinterpret_cast<const char*>(buffer.data()), bytes));
  } while (all_zeros(out));  // an all-zero id is invalid; the odds are 2^-64 at worst
  return out;
}

}  // namespace

std::optional<TraceParent> parse_traceparent(std::string_view text) {
  if (text.size() < kTraceParentChars) return std::nullopt;
  const std::string_view version = text.substr(0, 2);
  if (!is_lower_hex(version) || version == "ff") return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may append "-" and more.
  if (version == "00" ? text.size() != kTraceParentChars
                      : text.size() > kTraceParentChars && text[kTraceParentChars] != '-') {
    return std::nullopt;
  }
  if (text[2] != '-' || text[35] != '-' || text[52] != '-') return std::nullopt;
  const std::string_view trace_id = text.substr(3, 32);
  const std::string_view parent_id = text.substr(36, 16);
  const std::string_view flags = text.substr(53, 2);
  if (!is_lower_hex(trace_id) || !is_lower_hex(parent_id) || !is_lower_hex(flags) ||
      all_zeros(trace_id) || all_zeros(parent_id)) {
    return std::nullopt;
  }
  const int flag_bits = std::stoi(std::string(flags), nullptr, 16);
  return TraceParent{std::string(trace_id), std::string(parent_id), (flag_bits & 1) != 0};
}

std::string valid_tracestate(std::string_view text) {
  if (text.size() > kMaxTraceState) return "";
  std::size_t members = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view member = text.substr(start, end - start);
    while (!member.empty() && (member.front() == ' ' || member.front() == '\t'))
      member.remove_prefix(1);
    while (!member.empty() && (member.back() == ' ' || member.back() == '\t'))
      member.remove_suffix(1);
    if (!member.empty()) {  // empty members are allowed and skipped
      const std::size_t equals = member.find('=');
      if (equals == 0 || equals == std::string_view::npos || equals + 1 == member.size()) return "";
      if (!std::all_of(member.begin(), member.end(),
                       [](char c) { return c >= 0x20 && c <= 0x7e; })) {
        return "";
      }
      if (++members > kMaxTraceStateMembers) return "";
    }
    start = end + 1;
  }
  return members == 0 ? "" : std::string(text);
}

std::string format_traceparent(std::string_view trace_id, std::string_view span_id, bool sampled) {
  std::string out = "00-";
  out += trace_id;
  out += '-';
  out += span_id;
  out += sampled ? "-01" : "-00";
  return out;
}

std::string new_trace_id() { return random_hex(16); }
std::string new_span_id() { return random_hex(8); }

bool is_trace_header(std::string_view name) {
  return net::iequals(name, "traceparent") || net::iequals(name, "tracestate");
}

}  // namespace codemode::server
