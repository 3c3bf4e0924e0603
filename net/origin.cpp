#include "net/origin.h"

#include <algorithm>

#include "net/ascii.h"

namespace codemode::net {
namespace {

bool is_host_char(char c) { return is_alpha(c) || is_digit(c) || c == '-' || c == '_'; }

// Dot-separated labels, none empty, of letters, digits, '-' and '_'.
std::optional<OriginError> check_name(std::string_view host) {
  if (host.empty()) return OriginError::missing_host;
  std::size_t label_length = 0;
  for (const char c : host) {
    if (c == '.') {
      if (label_length == 0) return OriginError::empty_label;
      label_length = 0;
    } else if (is_host_char(c)) {
      ++label_length;
    } else {
      return OriginError::host_character;
    }
  }
  if (label_length == 0) return OriginError::empty_label;
  return std::nullopt;
}

// Digits only, 1..65535; leading zeros are allowed (":0080" is port 80).
std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit)) return std::nullopt;
  std::uint32_t port = 0;
  for (const char c : text) {
    port = port * 10 + static_cast<std::uint32_t>(c - '0');
    if (port > 65535) return std::nullopt;  // before it can overflow
  }
  if (port == 0) return std::nullopt;
  return static_cast<std::uint16_t>(port);
}

}  // namespace

std::optional<Scheme> parse_scheme(std::string_view text) {
  if (iequals(text, "http")) return Scheme::http;
  if (iequals(text, "https")) return Scheme::https;
  return std::nullopt;
}

std::string Origin::serialised() const { return serialise_origin(scheme, host, port); }

std::string serialise_origin(Scheme scheme, std::string_view host, std::uint16_t port) {
  std::string out = std::string(to_string(scheme)) + "://" + std::string(host);
  if (port != default_port(scheme)) out += ":" + std::to_string(port);
  return out;
}

std::variant<Origin, OriginError> parse_origin(std::string_view text, OriginForm form) {
  const std::size_t separator = text.find("://");
  if (separator == std::string_view::npos) return OriginError::no_separator;
  const std::optional<Scheme> scheme = parse_scheme(text.substr(0, separator));
  if (!scheme) return OriginError::scheme;

  const std::string_view rest = text.substr(separator + 3);
  const std::size_t authority_end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, authority_end);
  if (authority_end != std::string_view::npos) {
    const std::string_view tail = rest.substr(authority_end);
    const std::size_t path_end = tail.find_first_of("?#");
    const std::string_view path = tail.substr(0, path_end);
    const bool slash_allowed = form == OriginForm::trailing_slash && path == "/";
    if (!path.empty() && !slash_allowed) return OriginError::path;
    if (path_end != std::string_view::npos) {
      return tail[path_end] == '?' ? OriginError::query : OriginError::fragment;
    }
  }
  if (authority.find('@') != std::string_view::npos) return OriginError::userinfo;

  std::string_view host;
  std::string_view port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return OriginError::unterminated_ipv6;
    host = authority.substr(0, close + 1);
    const std::string_view inner = host.substr(1, host.size() - 2);
    const bool valid = !inner.empty() && std::all_of(inner.begin(), inner.end(), [](char c) {
      return is_hex_digit(c) || c == ':' || c == '.';
    });
    if (!valid) return OriginError::invalid_ipv6;
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return OriginError::after_ipv6;
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = authority.substr(colon + 1);
    }
    if (const auto problem = check_name(host)) return *problem;
  }

  Origin origin{*scheme, lower(host), default_port(*scheme)};
  if (has_port) {
    const std::optional<std::uint16_t> port = parse_port(port_text);
    if (!port) return OriginError::port;
    origin.port = *port;
  }
  return origin;
}

}  // namespace codemode::net
