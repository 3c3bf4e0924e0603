// What the code may put into a request besides the URL: method, headers, body; and where the
// upstream's credentials go.
//
// The header rules follow the fetch standard where it is stricter than HTTP (forbidden request
// headers are dropped, values are trimmed), and HTTP where fetch is lenient. Refusals name the
// header, never its value: a value may be a secret the code was handed by the upstream.
// Pure functions; safe on any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"
#include "gateway/request.h"

namespace codemode::gateway {

enum class Method { get, post, put, patch, del, head };

std::string_view to_string(Method method);

// GET, POST, PUT, PATCH, DELETE, HEAD, in any case. Otherwise a policy refusal.
std::optional<Method> parse_method(std::string_view text);

inline constexpr std::size_t kMaxRequestHeaders = 100;
inline constexpr std::size_t kMaxRequestHeaderBytes =
    std::size_t{64} * 1024;  // names + values, the code's

// True for RFC 9110 tokens (the only valid field names).
bool is_header_name(std::string_view name);
// True when the value holds no control character other than HTAB (obs-text is allowed).
bool is_header_value(std::string_view value);

// Headers the gateway owns, dropped from what the code set (as fetch() drops forbidden
// headers): Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, TE,
// Trailer, Expect, Accept-Encoding and Proxy-*. Case-insensitive.
bool is_gateway_owned_header(std::string_view name);

// Headers through which many frameworks let a request name another method or path than its
// request line: X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override, X-Original-URL,
// X-Rewrite-URL. Case-insensitive. The gateway drops them when a policy restricts methods or
// operations.
bool is_override_header(std::string_view name);

struct CheckedHeaders {
  Headers headers;                   // the code's headers, trimmed, minus gateway-owned ones
  std::vector<std::string> dropped;  // names of the dropped headers, as written, for the log
};

// Validates the code's headers: names are tokens, values (after trimming spaces and tabs at
// either end) hold no CR, LF, NUL or other control but HTAB, at most kMaxRequestHeaders and
// kMaxRequestHeaderBytes. The error is a policy error naming the first bad header.
std::variant<CheckedHeaders, GatewayError> check_headers(const Headers& headers);

// The headers to send to `upstream`: `code_headers` without any name the upstream configures
// (case-insensitive), then the upstream's headers, last. Host and framing are added by the
// client, not here.
Headers inject_credentials(Headers code_headers, const config::Upstream& upstream);

// `target` with an upstream's query credentials (`config::Upstream::query`, not empty): every
// parameter of the same name (as servers decode names: %XX decoded, '+' a space) removed, then
// each configured one appended as `name=value`, both percent-encoded except RFC 3986's
// unreserved characters, so the code can neither replace nor precede the gateway's value.
std::string with_query_credentials(std::string_view target,
                                   const std::vector<std::pair<std::string, std::string>>& query);

// Whether any of `values` occurs in `text`; used to keep configured credentials out of our
// own messages and logs.
bool contains_any(std::string_view text, const std::vector<std::string>& values);

}  // namespace codemode::gateway
