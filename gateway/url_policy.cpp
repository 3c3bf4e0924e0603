#include "gateway/url_policy.h"

#include <idn2.h>

#include <algorithm>
#include <array>
#include <boost/url.hpp>
#include <cstdlib>

#include "net/ascii.h"
#include "net/percent.h"

namespace codemode::gateway {
namespace {

namespace urls = boost::urls;

constexpr std::size_t kMaxHostChars = 253;  // DNS name limit; longer names cannot resolve
constexpr std::size_t kMaxUrlChars = std::size_t{64} * 1024;

using net::default_port;
using net::is_alpha;
using net::is_digit;
using net::lower;

bool is_control(unsigned char c) { return c < 0x20 || c == 0x7F; }

// ---------------------------------------------------------------------------------------------
// Before RFC 3986 parsing: the WHATWG leniencies browsers (and so models) rely on, applied so
// that they cannot change which host is meant. The fragment is cut (never sent), `\` before the
// query becomes `/`, and bytes RFC 3986 does not allow but WHATWG percent-encodes (non-ASCII,
// space, "<>`^{|} and, outside the authority, [ ] \) are percent-encoded. A host written with
// such bytes then decodes back to them and is validated as a host.

bool needs_encoding(unsigned char c, bool in_authority) {
  if (c >= 0x80) return true;
  switch (c) {
    case ' ':
    case '"':
    case '<':
    case '>':
    case '`':
    case '^':
    case '{':
    case '|':
    case '}':
      return true;
    case '[':
    case ']':
    case '\\':
      return !in_authority;
    default:
      return false;
  }
}

// Where the authority sits in `text` (after backslash conversion): [begin, end), or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> authority_span(std::string_view text) {
  std::size_t start = 0;
  if (!text.empty() && is_alpha(text[0])) {
    std::size_t i = 1;
    while (i < text.size() && (is_alpha(text[i]) || is_digit(text[i]) || text[i] == '+' ||
                               text[i] == '-' || text[i] == '.')) {
      ++i;
    }
    if (i < text.size() && text[i] == ':') start = i + 1;
  }
  if (text.substr(start, 2) != "//") return std::nullopt;
  const std::size_t begin = start + 2;
  const std::size_t end = std::min(text.find_first_of("/?", begin), text.size());
  return std::make_pair(begin, end);
}

// `raw_query`: the query as written (after the trimming), before any percent-encoding.
std::variant<std::string, std::string> prepare(std::string_view input, std::string& raw_query) {
  const auto is_trimmed = [](char c) { return static_cast<unsigned char>(c) <= 0x20; };
  while (!input.empty() && is_trimmed(input.front())) input.remove_prefix(1);
  while (!input.empty() && is_trimmed(input.back())) input.remove_suffix(1);
  if (input.size() > kMaxUrlChars) {
    return std::variant<std::string, std::string>(
        std::in_place_index<1>, "URL is longer than " + std::to_string(kMaxUrlChars) + " bytes");
  }
  input = input.substr(0, input.find('#'));
  if (std::any_of(input.begin(), input.end(),
                  [](char c) { return is_control(static_cast<unsigned char>(c)); })) {
    return std::variant<std::string, std::string>(std::in_place_index<1>,
                                                  "URL contains a control character");
  }
  std::string slashed(input);
  const std::size_t query = std::min(slashed.find('?'), slashed.size());
  raw_query = query < slashed.size() ? slashed.substr(query + 1) : std::string();
  std::replace(slashed.begin(), slashed.begin() + static_cast<std::ptrdiff_t>(query), '\\', '/');

  const auto authority = authority_span(slashed);
  // Boost.URL 1.81 reads a host that starts like an IPv4 address as one and ends the authority
  // early ("http://1.2.3.4.5/" becomes host 1.2.3.4, path ".5/"). Writing the host's first digit
  // percent-encoded makes it a reg-name; it is decoded again and parsed by the WHATWG IPv4 rules
  // below, which handle dotted decimal too.
  std::size_t first_digit = std::string::npos;
  if (authority) {
    const std::string_view text(slashed);
    const std::size_t at = text.substr(0, authority->second).rfind('@');
    const std::size_t host =
        (at == std::string_view::npos || at < authority->first) ? authority->first : at + 1;
    if (host < authority->second && is_digit(text[host])) first_digit = host;
  }
  std::string out;
  out.reserve(slashed.size());
  for (std::size_t i = 0; i < slashed.size(); ++i) {
    const auto c = static_cast<unsigned char>(slashed[i]);
    const bool in_authority = authority && i >= authority->first && i < authority->second;
    if (needs_encoding(c, in_authority) || i == first_digit) {
      net::append_percent_encoded(out, c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(out));
}

// The query as sent: percent-encoded as prepare() does, but with `[` and `]` as written. They
// are outside WHATWG's query percent-encode set, so browsers and node send `expand[]=x` as is,
// and an upstream that signs or matches the raw query expects that; RFC 3986 parsing needs them
// encoded, which is why prepare() encodes them first.
std::string query_with_brackets(std::string_view raw_query) {
  std::string out;
  out.reserve(raw_query.size());
  for (const char ch : raw_query) {
    const auto c = static_cast<unsigned char>(ch);
    if (c != '[' && c != ']' && needs_encoding(c, false)) {
      net::append_percent_encoded(out, c);
    } else {
      out += ch;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Hosts.

// One WHATWG IPv4 part: decimal, 0x-hex (digits may be empty) or 0-octal. nullopt: not a number.
std::optional<std::uint64_t> ipv4_number(std::string_view part) {
  if (part.empty()) return std::nullopt;
  int radix = 10;
  if (part.size() >= 2 && part[0] == '0' && (part[1] == 'x' || part[1] == 'X')) {
    radix = 16;
    part.remove_prefix(2);
  } else if (part.size() >= 2 && part[0] == '0') {
    radix = 8;
    part.remove_prefix(1);
  }
  if (part.empty()) return 0;
  if (part.size() > 16) return std::nullopt;  // far above 2^32 in any radix; avoids overflow
  std::uint64_t value = 0;
  for (const char c : part) {
    int digit = -1;
    if (is_digit(c)) digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0 || digit >= radix) return std::nullopt;
    value = value * static_cast<std::uint64_t>(radix) + static_cast<std::uint64_t>(digit);
  }
  return value;
}

std::vector<std::string_view> split_labels(std::string_view host) {
  std::vector<std::string_view> labels;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = host.find('.', start);
    labels.push_back(host.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return labels;
}

// WHATWG "ends in a number": such a host is an IPv4 address or invalid, never a name.
bool ends_in_number(std::vector<std::string_view> labels) {
  if (labels.size() > 1 && labels.back().empty()) labels.pop_back();
  const std::string_view last = labels.back();
  if (!last.empty() && std::all_of(last.begin(), last.end(), is_digit)) return true;
  return ipv4_number(last).has_value();
}

std::optional<std::string> parse_ipv4(std::vector<std::string_view> labels) {
  if (labels.size() > 1 && labels.back().empty()) labels.pop_back();
  if (labels.size() > 4) return std::nullopt;
  std::vector<std::uint64_t> numbers;
  for (const std::string_view label : labels) {
    const auto number = ipv4_number(label);
    if (!number) return std::nullopt;
    numbers.push_back(*number);
  }
  for (std::size_t i = 0; i + 1 < numbers.size(); ++i) {
    if (numbers[i] > 255) return std::nullopt;
  }
  const std::size_t remaining = 5 - numbers.size();  // bytes the last number covers
  if (numbers.back() >= (std::uint64_t{1} << (8 * remaining))) return std::nullopt;
  std::uint64_t address = numbers.back();
  for (std::size_t i = 0; i + 1 < numbers.size(); ++i) address += numbers[i] << (8 * (3 - i));
  return urls::ipv4_address(static_cast<std::uint32_t>(address)).to_string();
}

std::variant<std::string, std::string> to_ascii(const std::string& host) {
  char* output = nullptr;
  const int rc = idn2_to_ascii_8z(host.c_str(), &output, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
  if (rc != IDN2_OK) {
    return std::variant<std::string, std::string>(
        std::in_place_index<1>,
        std::string("international host name is not valid IDNA (") + idn2_strerror(rc) + ")");
  }
  std::string ascii(output);
  idn2_free(output);
  return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(ascii));
}

// A decoded reg-name to its one form: IDNA for non-ASCII, lower case, no trailing dot, WHATWG
// IPv4 forms as dotted decimal. Labels hold only letters, digits, '-' and '_' afterwards.
std::variant<std::string, std::string> normalise_name(std::string host) {
  const auto fail = [](std::string why) {
    return std::variant<std::string, std::string>(std::in_place_index<1>, std::move(why));
  };
  if (host.empty()) return fail("URL has no host");
  // IDNA takes a C string: a decoded %00 would cut the name short rather than be refused.
  if (host.find('\0') != std::string::npos) return fail("host is not a valid name");
  const bool ascii = std::none_of(host.begin(), host.end(),
                                  [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
  if (!ascii) {
    auto converted = to_ascii(host);
    if (converted.index() == 1) return converted;
    host = std::move(std::get<0>(converted));
  }
  host = lower(host);
  const auto labels = split_labels(host);
  if (ends_in_number(labels)) {
    auto address = parse_ipv4(labels);
    if (!address) return fail("host is neither a valid IPv4 address nor a name");
    return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(*address));
  }
  // IDNA maps some names to nothing (U+00AD alone), so the name may be empty here.
  if (!host.empty() && host.back() == '.') host.pop_back();
  if (host.empty() || host.size() > kMaxHostChars) return fail("host is not a valid name");
  for (const std::string_view label : split_labels(host)) {
    const bool valid = !label.empty() && std::all_of(label.begin(), label.end(), [](char c) {
      return is_alpha(c) || is_digit(c) || c == '-' || c == '_';
    });
    if (!valid) {
      return fail(
          "host is not a valid name (letters, digits, '-', '_' and non-empty labels between "
          "dots)");
    }
  }
  return std::variant<std::string, std::string>(std::in_place_index<0>, std::move(host));
}

// RFC 3986 section 5.2.4 on an absolute path, applied after Boost.URL's own pass, which keeps
// ".." segments that climb above the root ("/a/../../c" stays "/../c" in 1.81).
std::string remove_dot_segments(std::string_view path) {
  std::vector<std::string_view> out;
  const std::vector<std::string_view> segments = [&] {
    std::vector<std::string_view> parts;
    std::string_view rest = path.substr(1);
    while (true) {
      const std::size_t slash = rest.find('/');
      parts.push_back(rest.substr(0, slash));
      if (slash == std::string_view::npos) break;
      rest.remove_prefix(slash + 1);
    }
    return parts;
  }();
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const bool last = i + 1 == segments.size();
    if (segments[i] == "." || segments[i] == "..") {
      if (segments[i] == ".." && !out.empty()) out.pop_back();
      if (last) out.emplace_back();
      continue;
    }
    out.push_back(segments[i]);
  }
  std::string joined;
  for (const std::string_view segment : out) {
    joined += '/';
    joined += segment;
  }
  return joined.empty() ? "/" : joined;
}

UrlResult refuse(std::string why) { return UrlResult(std::in_place_index<1>, std::move(why)); }

}  // namespace

std::string NormalisedUrl::connect_host() const {
  if (host.size() >= 2 && host.front() == '[') return host.substr(1, host.size() - 2);
  return host;
}

std::string NormalisedUrl::host_header() const {
  if (port == default_port(scheme)) return host;
  return host + ":" + std::to_string(port);
}

UrlResult normalise_url(std::string_view input, std::string_view base) {
  std::string raw_query;
  auto prepared = prepare(input, raw_query);
  if (prepared.index() == 1) return refuse(std::move(std::get<1>(prepared)));
  const std::string& text = std::get<0>(prepared);
  const std::size_t query_at = text.find('?');
  const std::string_view prepared_query = query_at == std::string::npos
                                              ? std::string_view()
                                              : std::string_view(text).substr(query_at + 1);

  const auto reference = urls::parse_uri_reference(text);
  if (!reference) return refuse("URL does not parse");
  urls::url resolved;
  if (reference->has_scheme()) {
    resolved = urls::url(*reference);
    // Resolving against itself applies RFC 3986 dot-segment removal to absolute URLs too.
    urls::url copy = resolved;
    if (!resolved.resolve(copy)) return refuse("URL does not parse");
  } else {
    if (base.empty()) return refuse("relative URL with no base (no upstream is configured)");
    const auto base_url = urls::parse_uri(base);
    if (!base_url) return refuse("base URL does not parse");
    resolved = urls::url(*base_url);
    if (!resolved.resolve(*reference)) return refuse("URL does not parse");
  }

  // After an authority the path is empty or absolute; anything else means Boost.URL ended the
  // authority early (see prepare()), so the host was not read as written.
  if (resolved.has_authority() && !resolved.encoded_path().empty() &&
      resolved.encoded_path().front() != '/') {
    return refuse("URL does not parse (host or port)");
  }

  NormalisedUrl out;
  const std::optional<Scheme> scheme = net::parse_scheme(resolved.scheme());
  if (!scheme) {
    return refuse("URL scheme " + lower(resolved.scheme()) +
                  " is not allowed (only http and https)");
  }
  out.scheme = *scheme;
  if (!resolved.has_authority()) return refuse("URL has no host");
  if (resolved.has_userinfo()) return refuse("URL must not contain userinfo (user:password@)");

  switch (resolved.host_type()) {
    case urls::host_type::ipv4:
      out.host = resolved.host_ipv4_address().to_string();
      break;
    case urls::host_type::ipv6:
      out.host = "[" + resolved.host_ipv6_address().to_string() + "]";
      break;
    case urls::host_type::name: {
      auto name = normalise_name(resolved.host());
      if (name.index() == 1) return refuse(std::move(std::get<1>(name)));
      out.host = std::move(std::get<0>(name));
      break;
    }
    case urls::host_type::ipvfuture:
      return refuse("IPvFuture hosts are not supported");
    case urls::host_type::none:
    default:
      return refuse("URL has no host");
  }

  out.port = default_port(out.scheme);
  const std::string_view port_text = resolved.port();
  if (!port_text.empty()) {
    std::uint32_t port = 0;
    for (const char c : port_text) {
      port = port * 10 + static_cast<std::uint32_t>(c - '0');  // the grammar allows digits only
      if (port > 65535) return refuse("URL port is out of range (1-65535)");
    }
    if (port == 0) return refuse("URL port is out of range (1-65535)");
    out.port = static_cast<std::uint16_t>(port);
  }

  out.origin = net::serialise_origin(out.scheme, out.host, out.port);
  resolved.normalize_path();
  out.target = resolved.encoded_path().empty() ? "/" : remove_dot_segments(resolved.encoded_path());
  if (resolved.has_query()) {
    // The reference's own query, as prepare() left it: its brackets go back to how they were
    // written.
    const std::string_view query = resolved.encoded_query();
    out.target += "?" + (query == prepared_query && query_at != std::string::npos
                             ? query_with_brackets(raw_query)
                             : std::string(query));
  }
  return UrlResult(std::in_place_index<0>, std::move(out));
}

UrlPolicy::UrlPolicy(const std::vector<config::Upstream>& upstreams) {
  for (std::size_t i = 0; i < upstreams.size(); ++i) {
    const UrlResult result = normalise_url(upstreams[i].origin, "");
    const auto* url = std::get_if<NormalisedUrl>(&result);
    if (url == nullptr) {
      problems_.push_back("upstreams[" + std::to_string(i) + "].origin: " + std::get<1>(result));
      origins_.emplace_back();
      continue;
    }
    if (std::find(origins_.begin(), origins_.end(), url->origin) != origins_.end()) {
      problems_.push_back("upstreams[" + std::to_string(i) +
                          "].origin: same origin as an earlier "
                          "upstream once normalised (" +
                          url->origin + ")");
      origins_.emplace_back();
      continue;
    }
    origins_.push_back(url->origin);
  }
  if (!origins_.empty() && !origins_.front().empty()) {
    base_path_ = upstreams.front().base_path.value_or("");
    base_ = origins_.front() + base_path_ + "/";
  }
}

std::string under_base_path(std::string_view input, std::string_view base_path) {
  std::size_t start = 0;
  while (start < input.size() && static_cast<unsigned char>(input[start]) <= 0x20) ++start;
  // '\' is '/' here as in prepare(): "\\host" is a network-path reference too.
  const auto slash = [&](std::size_t i) {
    return i < input.size() && (input[i] == '/' || input[i] == '\\');
  };
  if (base_path.empty() || !slash(start) || slash(start + 1)) return std::string(input);
  const std::string_view rest = input.substr(start);
  const bool already =
      rest.substr(0, base_path.size()) == base_path &&
      (rest.size() == base_path.size() ||
       std::string_view("/\\?#").find(rest[base_path.size()]) != std::string_view::npos);
  if (already) return std::string(input);
  return std::string(base_path) + std::string(rest);
}

PolicyDecision UrlPolicy::decide(std::string_view url) const {
  if (base_path_.empty()) return decide(url, base_);
  return decide(under_base_path(url, base_path_), base_);
}

PolicyDecision UrlPolicy::decide(std::string_view url, std::string_view base) const {
  UrlResult result = normalise_url(url, base);
  if (result.index() == 1) return Refused{std::move(std::get<1>(result))};
  NormalisedUrl& normalised = std::get<0>(result);
  const auto found = std::find(origins_.begin(), origins_.end(), normalised.origin);
  if (found == origins_.end() || normalised.origin.empty()) {
    return Refused{"origin " + normalised.origin + " is not allowed"};
  }
  return Allowed{static_cast<std::size_t>(found - origins_.begin()), std::move(normalised)};
}

}  // namespace codemode::gateway
