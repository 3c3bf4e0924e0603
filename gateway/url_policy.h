// Which URLs a request may go to: parse, normalise, compare the origin with the allowlist.
//
// The allowlist is only as strong as the comparison, so every spelling of a host that a client
// or server could treat as the same one is brought to one form before comparing: scheme and
// host lower-cased, a trailing dot dropped, the default port omitted, percent-encoded hosts
// decoded, international names converted to their xn-- form (IDNA 2008 / UTS 46), IPv4 in any
// form WHATWG accepts (2130706433, 0x7f.1, 0177.0.0.1) written as dotted decimal, IPv6 in its
// compressed form. `\` counts as `/` before the query, as in WHATWG URLs of http(s). What cannot
// be brought to one form is refused: unparsable text, other schemes, userinfo, IPvFuture,
// invalid hosts. The rules, with examples, are in gateway/README.md.
//
// Built once from config at start-up; immutable afterwards and safe to share between threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/config.h"
#include "net/origin.h"

namespace codemode::gateway {

// The origin grammar's scheme, so that URL origins are written by net::serialise_origin in the
// same form as the config's and the HTTP boundary's origins. to_string() comes with it.
using Scheme = net::Scheme;
using net::to_string;

struct NormalisedUrl {
  Scheme scheme = Scheme::http;
  // As in the origin: lower-case name, dotted-decimal IPv4, or "[v6]" with brackets. It is also
  // the Host header value, with ":port" added when the port is not the default.
  std::string host;
  std::uint16_t port = 80;
  // "scheme://host[:port]", the default port omitted: what the allowlist compares.
  std::string origin;
  // Path and query for the request line, never empty: "/", "/products?limit=3". No fragment.
  std::string target;

  // The host to resolve and connect to, and to name in SNI / certificate checks: `host`
  // without IPv6 brackets.
  std::string connect_host() const;
  // `host`, plus ":port" when the port is not the scheme's default.
  std::string host_header() const;
  std::string full() const { return origin + target; }
};

// Normalised, or why not (one line, no "policy: " prefix, e.g. "URL does not parse").
using UrlResult = std::variant<NormalisedUrl, std::string>;

// Resolves `input` (absolute, or a reference such as "/products" or "//host/x") against `base`
// (an absolute http(s) URL; empty: references are refused), then normalises it.
UrlResult normalise_url(std::string_view input, std::string_view base);

// `input` with `base_path` ("/api") put before its path when it is a path-absolute reference
// ("/conversations.list", not "//host/x" nor "https://...") whose path does not start with
// `base_path` already; otherwise `input` unchanged. What makes fetch('/x') go to the API's base
// path: the other references ("x", "?q") resolve against the base URL, which ends in
// base_path + "/".
std::string under_base_path(std::string_view input, std::string_view base_path);

// An allowed request: which upstream (index into the config's list) and where exactly.
struct Allowed {
  std::size_t upstream = 0;
  NormalisedUrl url;
};

// Refused, with one line naming what was refused: "origin http://evil.test is not allowed",
// "URL scheme ftp is not allowed". The sandbox prefixes "policy: ".
struct Refused {
  std::string message;
};

using PolicyDecision = std::variant<Allowed, Refused>;

class UrlPolicy {
 public:
  // Upstream origins are normalised again with the same rules as request URLs (config accepts
  // e.g. "http://0x7f.1" or a long-form IPv6 address), so both sides compare in one form.
  // An origin that does not normalise is left out and reported by problems().
  explicit UrlPolicy(const std::vector<config::Upstream>& upstreams);

  // References resolve against the first upstream's origin and base path (under_base_path);
  // `base` overrides that and has no base path (redirects resolve a Location against the URL
  // that was requested).
  PolicyDecision decide(std::string_view url) const;
  PolicyDecision decide(std::string_view url, std::string_view base) const;

  // Normalised upstream origins, index-aligned with the config's list (empty when left out).
  const std::vector<std::string>& origins() const { return origins_; }
  // One line per upstream origin that could not be normalised; empty for a valid config.
  const std::vector<std::string>& problems() const { return problems_; }
  // Where a relative URL goes: the first upstream's origin and base path, with a trailing "/"
  // ("https://slack.com/api/"); empty when there is no upstream.
  const std::string& base() const { return base_; }
  // The first upstream's base path ("/api"), or "" for the root.
  const std::string& base_path() const { return base_path_; }

 private:
  std::vector<std::string> origins_;
  std::vector<std::string> problems_;
  std::string base_;       // the first upstream's origin + base path + "/", or empty
  std::string base_path_;  // the first upstream's base path; "" for the root
};

}  // namespace codemode::gateway
