// The upstreams an execute call may reach (top level, or a principal's own headers for them):
// origins, headers, query parameters, HTTP Basic and the base path.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "net/ascii.h"
#include "net/http_token.h"

namespace codemode::config::detail {
namespace {

using net::lower;

constexpr std::array<std::string_view, 6> kUpstreamKeys = {"origin", "headers",   "query",
                                                           "basic",  "base_path", "token_exchange"};
constexpr std::array<std::string_view, 2> kBasicKeys = {"user", "password"};

// ---------------------------------------------------------------------------------------------
// Headers.

// Standard padded base64 (RFC 4648 section 4), for HTTP Basic credentials.
std::string base64(std::string_view bytes) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, bytes.size() - i);
    std::uint32_t chunk = 0;
    for (std::size_t k = 0; k < 3; ++k) {
      chunk = (chunk << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0U);
    }
    for (std::size_t k = 0; k < 4; ++k) {
      out += k <= n ? kAlphabet[(chunk >> (18 - 6 * k)) & 0x3F] : '=';
    }
  }
  return out;
}

// The gateway owns these: Host follows from the origin, the others frame the message, and
// letting configuration set them would allow request smuggling.
std::optional<std::string_view> reserved_header_reason(std::string_view name) {
  const std::string lowered = lower(name);
  if (lowered == "host") return "may not be set (the gateway derives Host from the origin)";
  if (lowered == "content-length" || lowered == "transfer-encoding" || lowered == "connection") {
    return "may not be set (the gateway controls message framing)";
  }
  return std::nullopt;
}

}  // namespace

void Loader::load_upstreams(const Json& value, std::vector<Upstream>& upstreams,
                            const std::string& where) {
  if (!expect_array(value, where)) return;
  std::map<std::string, std::size_t> index_of_origin;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string path = element_path(where, i);
    const Json& item = value[i];
    if (!expect_object(item, path)) continue;
    Upstream upstream;
    bool saw_origin = false;
    bool saw_basic = false;
    for (const auto& [key, field] : item.items()) {
      if (key == "origin") {
        saw_origin = true;
        const std::string origin_path = child_path(path, key);
        std::optional<std::string> origin = read_origin(
            field, origin_path,
            where == "upstreams" ? "; an API served under a path takes it as \"base_path\", "
                                   "e.g. {\"origin\": \"https://slack.com\", \"base_path\": "
                                   "\"/api\"}"
                                 : "");
        if (!origin) continue;
        const auto [it, inserted] = index_of_origin.emplace(*origin, i);
        if (!inserted) {
          add(origin_path, "same origin as " + element_path(where, it->second) +
                               ".origin (one entry per origin)");
        }
        upstream.origin = std::move(*origin);
      } else if (key == "headers") {
        load_headers(field, child_path(path, key), upstream.headers);
      } else if (key == "token_exchange") {
        upstream.token_exchange = load_token_exchange(field, child_path(path, key));
      } else if (key == "query") {
        load_query(field, child_path(path, key), upstream.query);
      } else if (key == "basic") {
        saw_basic = load_basic(field, child_path(path, key), upstream);
      } else if (key == "base_path") {
        if (where != "upstreams" || i != 0) {
          add(child_path(path, key),
              "only the first of the top-level upstreams takes a base_path (relative URLs go "
              "to it; write absolute URLs for the others)");
        } else {
          upstream.base_path = read_base_path(field, child_path(path, key));
        }
      } else {
        unknown_key(path, key, kUpstreamKeys);
      }
    }
    if (!saw_origin) add(child_path(path, "origin"), "required key is missing");
    const auto authorizations =
        std::count_if(upstream.headers.begin(), upstream.headers.end(),
                      [](const auto& header) { return lower(header.first) == "authorization"; });
    if (saw_basic && authorizations > 1) {
      add(child_path(path, "basic"),
          "gives this upstream's Authorization; headers.Authorization cannot be set too");
    } else if (upstream.token_exchange && authorizations > 0) {
      add(saw_basic ? child_path(path, "basic")
                    : child_path(child_path(path, "headers"), "Authorization"),
          "token_exchange gives this upstream's Authorization; a static one cannot be used too");
    }
    upstreams.push_back(std::move(upstream));
  }
}

// "query": {"api_key": "${KEY}"}: parameters the gateway adds to each request's query.
void Loader::load_query(const Json& value, const std::string& path,
                        std::vector<std::pair<std::string, std::string>>& query) {
  if (!expect_object(value, path)) return;
  const auto has_control = [](std::string_view text) {
    return std::any_of(text.begin(), text.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return byte < 0x20 || byte == 0x7F;
    });
  };
  for (const auto& [name, field] : value.items()) {
    const std::string parameter_path = child_path(path, name);
    if (name.empty() || has_control(name)) {
      add(parameter_path, "a parameter name must be non-empty, without control characters");
      continue;
    }
    std::optional<Expanded> text = read_required_string(field, parameter_path);
    if (!text) continue;
    if (has_control(text->value)) {
      add(parameter_path, "value contains a control character");
      continue;
    }
    query.emplace_back(name, std::move(text->value));
  }
}

// "basic": {"user": "${USER}", "password": "${PASSWORD}"}: HTTP Basic (RFC 7617), sent as the
// Authorization header. True when it was given (even with problems).
bool Loader::load_basic(const Json& value, const std::string& path, Upstream& upstream) {
  if (!expect_object(value, path)) return true;
  std::optional<std::string> user;
  std::optional<std::string> password;
  for (const auto& [key, field] : value.items()) {
    const std::string field_path = child_path(path, key);
    if (key == "user" || key == "password") {
      std::optional<Expanded> text = read_required_string(field, field_path);
      if (!text) continue;
      const bool bad = std::any_of(text->value.begin(), text->value.end(), [&](char c) {
        const auto byte = static_cast<unsigned char>(c);
        return byte < 0x20 || byte == 0x7F || (key == "user" && c == ':');
      });
      if (bad) {
        add(field_path, key == "user" ? "may hold no ':' and no control character"
                                      : "may hold no control character");
        continue;
      }
      (key == "user" ? user : password) = std::move(text->value);
    } else {
      unknown_key(path, key, kBasicKeys);
    }
  }
  if (!value.contains("user")) add(child_path(path, "user"), "required key is missing");
  if (!value.contains("password")) add(child_path(path, "password"), "required key is missing");
  if (!user || !password) return true;
  upstream.headers.emplace_back("Authorization", "Basic " + base64(*user + ":" + *password));
  upstream.withheld.push_back(*user + ":" + *password);
  upstream.withheld.push_back(*password);
  return true;
}

// "/api": a path of non-empty segments, without dot segments, query or fragment; "" or "/" is
// the root. Stored without a trailing '/'.
std::optional<std::string> Loader::read_base_path(const Json& value, const std::string& path) {
  const std::optional<Expanded> text = read_string(value, path);
  if (!text) return std::nullopt;
  std::string base = text->value;
  if (base == "/") base.clear();
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const auto pchar = [](char c) {
    return net::is_alnum(c) ||
           std::string_view("-._~!$&'()*+,;=:@%").find(c) != std::string_view::npos;
  };
  bool ok = base.empty() || base.front() == '/';
  for (std::size_t start = 1; ok && start <= base.size();) {
    std::size_t end = std::min(base.find('/', start), base.size());
    const std::string_view segment = std::string_view(base).substr(start, end - start);
    ok = !segment.empty() && segment != "." && segment != ".." &&
         std::all_of(segment.begin(), segment.end(), pchar);
    start = end + 1;
  }
  if (!ok) {
    add(path,
        "must be a path such as \"/api\" or \"/v2\" (segments of URL path characters, no "
        "query, fragment or dot segments), or \"\" for the root");
    return std::nullopt;
  }
  return base;
}

void Loader::load_headers(const Json& value, const std::string& path,
                          std::vector<std::pair<std::string, std::string>>& headers) {
  if (!expect_object(value, path)) return;
  std::map<std::string, std::string> first_spelling;  // lower-case name -> name as written
  for (const auto& [name, field] : value.items()) {
    const std::string header_path = child_path(path, name);
    bool name_ok = false;
    if (!net::is_token(name)) {
      add(header_path, "not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)");
    } else if (const auto reason = reserved_header_reason(name)) {
      add(header_path, *reason);
    } else if (const auto [it, inserted] = first_spelling.emplace(lower(name), name); !inserted) {
      add(header_path,
          "duplicate of header \"" + it->second + "\" (header names are case-insensitive)");
    } else {
      name_ok = true;
    }
    std::optional<Expanded> text = read_required_string(field, header_path);
    if (!text) continue;
    const std::string& header_value = text->value;
    const bool has_control = std::any_of(header_value.begin(), header_value.end(), [](char c) {
      const auto byte = static_cast<unsigned char>(c);
      return (byte < 0x20 && byte != '\t') || byte == 0x7F;
    });
    if (has_control) {
      add(header_path,
          "value contains a control character (CR, LF, NUL or another; only "
          "horizontal tab is allowed)");
      continue;
    }
    const auto is_space = [](char c) { return c == ' ' || c == '\t'; };
    if (is_space(header_value.front()) || is_space(header_value.back())) {
      add(header_path, "value begins or ends with whitespace");
      continue;
    }
    if (name_ok) headers.emplace_back(name, std::move(text->value));
  }
}

}  // namespace codemode::config::detail
