#include "gateway/request_check.h"

#include <algorithm>
#include <array>

#include "net/ascii.h"
#include "net/http_token.h"
#include "net/percent.h"

namespace codemode::gateway {
namespace {

using net::iequals;
using net::istarts_with;
using net::trim_ows;

// A name the code wrote, safe to quote in a message: it is a token (checked first) and bounded.
std::string quoted_name(std::string_view name) {
  constexpr std::size_t kMaxQuoted = 64;
  if (name.size() > kMaxQuoted) return std::string(name.substr(0, kMaxQuoted)) + "...";
  return std::string(name);
}

GatewayError policy_error(std::string message) {
  return GatewayError{ErrorKind::policy, std::move(message)};
}

// A query component's bytes as a form parameter carries them: all but unreserved
// (RFC 3986) percent-encoded. redaction.cpp withholds a query value in this form too.
std::string query_encode(std::string_view text) {
  return codemode::net::percent_encode(text, codemode::net::kUnreserved);
}

// A query parameter's name as servers read it: %XX decoded, '+' a space.
std::string query_decode(std::string_view text) {
  return codemode::net::percent_decode(text, codemode::net::PlusMeans::space);
}

}  // namespace

std::string_view to_string(Method method) {
  switch (method) {
    case Method::get:
      return "GET";
    case Method::post:
      return "POST";
    case Method::put:
      return "PUT";
    case Method::patch:
      return "PATCH";
    case Method::del:
      return "DELETE";
    case Method::head:
      return "HEAD";
  }
  return "GET";
}

std::optional<Method> parse_method(std::string_view text) {
  static constexpr std::array kAll = {Method::get,   Method::post, Method::put,
                                      Method::patch, Method::del,  Method::head};
  for (const Method method : kAll) {
    if (iequals(text, to_string(method))) return method;
  }
  return std::nullopt;
}

bool is_header_name(std::string_view name) { return net::is_token(name); }

bool is_header_value(std::string_view value) {
  return std::none_of(value.begin(), value.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && byte != '\t') || byte == 0x7F;
  });
}

bool is_gateway_owned_header(std::string_view name) {
  static constexpr std::array<std::string_view, 10> kOwned = {
      "host",    "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te",
      "trailer", "expect",         "accept-encoding"};
  return istarts_with(name, "proxy-") ||
         std::any_of(kOwned.begin(), kOwned.end(),
                     [&](std::string_view owned) { return iequals(name, owned); });
}

bool is_override_header(std::string_view name) {
  static constexpr std::array<std::string_view, 5> kOverrides = {
      "x-http-method-override", "x-http-method", "x-method-override", "x-original-url",
      "x-rewrite-url"};
  return std::any_of(kOverrides.begin(), kOverrides.end(),
                     [&](std::string_view override) { return iequals(name, override); });
}

std::variant<CheckedHeaders, GatewayError> check_headers(const Headers& headers) {
  if (headers.size() > kMaxRequestHeaders) {
    return policy_error("more than " + std::to_string(kMaxRequestHeaders) + " request headers");
  }
  CheckedHeaders out;
  std::size_t bytes = 0;
  for (const auto& [name, value] : headers) {
    if (!is_header_name(name)) {
      return policy_error(name.empty() ? std::string("empty header name")
                                       : "invalid header name (not an HTTP token)");
    }
    const std::string_view trimmed = trim_ows(value);
    if (!is_header_value(trimmed)) {
      return policy_error("header " + quoted_name(name) +
                          " has an invalid value (CR, LF, NUL or another control character)");
    }
    bytes += name.size() + trimmed.size();
    if (bytes > kMaxRequestHeaderBytes) {
      return policy_error("request headers exceed " + std::to_string(kMaxRequestHeaderBytes) +
                          " bytes");
    }
    if (is_gateway_owned_header(name)) {
      out.dropped.push_back(name);
      continue;
    }
    out.headers.emplace_back(name, std::string(trimmed));
  }
  return out;
}

Headers inject_credentials(Headers code_headers, const config::Upstream& upstream) {
  std::erase_if(code_headers, [&](const Header& header) {
    return std::any_of(
        upstream.headers.begin(), upstream.headers.end(),
        [&](const auto& configured) { return iequals(header.first, configured.first); });
  });
  for (const auto& configured : upstream.headers) code_headers.push_back(configured);
  return code_headers;
}

std::string with_query_credentials(std::string_view target,
                                   const std::vector<std::pair<std::string, std::string>>& query) {
  const std::size_t mark = target.find('?');
  std::string out(target.substr(0, mark));
  std::string kept;
  if (mark != std::string_view::npos) {
    std::string_view rest = target.substr(mark + 1);
    while (true) {
      const std::size_t amp = rest.find('&');
      const std::string_view pair = rest.substr(0, amp);
      const std::string name = query_decode(pair.substr(0, pair.find('=')));
      const bool configured =
          std::any_of(query.begin(), query.end(), [&](const auto& q) { return q.first == name; });
      if (!configured && !pair.empty()) kept += (kept.empty() ? "" : "&") + std::string(pair);
      if (amp == std::string_view::npos) break;
      rest.remove_prefix(amp + 1);
    }
  }
  for (const auto& [name, value] : query) {
    kept += (kept.empty() ? "" : "&") + query_encode(name) + "=" + query_encode(value);
  }
  return out + "?" + kept;
}

bool contains_any(std::string_view text, const std::vector<std::string>& values) {
  return std::any_of(values.begin(), values.end(), [&](const std::string& value) {
    return !value.empty() && text.find(value) != std::string_view::npos;
  });
}

}  // namespace codemode::gateway
