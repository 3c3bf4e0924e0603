// Web origins: `scheme://host[:port]` for http and https, parsed by one grammar and written in
// one form (RFC 6454 §6.2 serialisation): scheme and host lower-cased, IPv6 in brackets, the
// port omitted when it is the scheme's default.
//
// The Origin check compares an Origin header (transport/http_policy) with the allowlist the config
// normalised (config/config); it is right only if both sides read and write origins the same
// way, so both call parse_origin and compare `serialised()`. The gateway's URL normaliser reads
// far more (WHATWG hosts, IDNA) but writes its origins with serialise_origin too, so an upstream
// origin in the config and a request URL's origin compare in the same form.
//
// Why a text is not an origin is a value (OriginError); each caller words it for its audience
// (the config names the problem, the HTTP boundary only refuses). Pure functions; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace codemode::net {

enum class Scheme { http, https };

constexpr std::string_view to_string(Scheme scheme) {
  return scheme == Scheme::http ? "http" : "https";
}
constexpr std::uint16_t default_port(Scheme scheme) { return scheme == Scheme::http ? 80 : 443; }
// "http" or "https" in any case; nullopt for every other scheme.
std::optional<Scheme> parse_scheme(std::string_view text);

// What may follow the authority. A browser's Origin header never has anything after it; people
// writing an origin in a config often end it with "/", which names the same origin.
enum class OriginForm {
  header,          // scheme://host[:port] exactly
  trailing_slash,  // the same, or followed by a lone "/"
};

// Why a text is not an origin, in the order parse_origin checks (the first one found wins).
enum class OriginError {
  no_separator,       // no "://"
  scheme,             // not http or https
  path,               // a path (other than the allowed trailing "/")
  query,              // "?..."
  fragment,           // "#..."
  userinfo,           // "user@"
  unterminated_ipv6,  // "[" without "]"
  invalid_ipv6,       // other than hex digits, ':' and '.' inside the brackets, or nothing
  after_ipv6,         // "]" followed by other than ":port"
  missing_host,       // nothing before the port
  empty_label,        // "a..b", ".a", "a." (a trailing dot would compare unequal to "a")
  host_character,     // other than ASCII letters, digits, '-', '_', '.' (IDN must be xn--)
  port,               // not a number from 1 to 65535 (leading zeros allowed)
};

struct Origin {
  Scheme scheme = Scheme::http;
  std::string host;  // lower case; an IPv6 address keeps its brackets: "[::1]"
  std::uint16_t port = 80;

  std::string serialised() const;  // "https://example.com", "http://[::1]:8080"
};

std::variant<Origin, OriginError> parse_origin(std::string_view text, OriginForm form);

// "scheme://host[:port]", the port omitted when it is the scheme's default. `host` is written
// as given: callers pass it already in its one form (lower case, IPv6 bracketed).
std::string serialise_origin(Scheme scheme, std::string_view host, std::uint16_t port);

}  // namespace codemode::net
