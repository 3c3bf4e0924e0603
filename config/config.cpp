#include "config/config.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <system_error>
#include <variant>

#include <nlohmann/json.hpp>

#include "config/expand.h"
#include "config/json_reader.h"
#include "config/problem_path.h"
#include "net/ascii.h"
#include "net/http_token.h"
#include "net/origin.h"

namespace codemode::config {
namespace {

namespace fs = std::filesystem;

using detail::child_path;
using detail::element_path;
using detail::Expanded;
using detail::Json;
using detail::printable;
using detail::type_phrase;

constexpr std::size_t kMaxFileBytes = std::size_t{16} * 1024 * 1024;
constexpr std::size_t kMinBearerTokenChars = 16;
constexpr std::size_t kMaxTokenNameChars = 64;
constexpr std::size_t kMaxPrincipalNameChars = 160;
constexpr std::size_t kMaxSuggestionDistance = 2;  // edits between an unknown key and a known one

// ---------------------------------------------------------------------------------------------
// Small text helpers.

using net::is_alpha;
using net::is_digit;
using net::lower;

// Optimal string alignment distance, case-insensitive: a transposition counts as one edit.
std::size_t edit_distance(std::string_view a_text, std::string_view b_text) {
  const std::string a = lower(a_text);
  const std::string b = lower(b_text);
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// ---------------------------------------------------------------------------------------------
// Origins: scheme://host[:port] and nothing else, normalised.

struct OriginCheck {
  std::string origin;  // normalised; empty when `problem` is set
  std::string problem;
};

// The grammar is net::parse_origin's, shared with the Origin header check so that both sides
// write the same origin the same way; the words are the config's.
std::string_view describe(net::OriginError error) {
  switch (error) {
    case net::OriginError::no_separator:
      return "expected scheme://host[:port], e.g. https://api.example.com";
    case net::OriginError::scheme:
      return "scheme must be http or https";
    case net::OriginError::path:
      return "must not contain a path (only scheme://host[:port])";
    case net::OriginError::query:
      return "must not contain a query";
    case net::OriginError::fragment:
      return "must not contain a fragment";
    case net::OriginError::userinfo:
      return "must not contain userinfo (user@)";
    case net::OriginError::unterminated_ipv6:
      return "unterminated IPv6 address";
    case net::OriginError::invalid_ipv6:
      return "invalid IPv6 address";
    case net::OriginError::after_ipv6:
      return "unexpected characters after the IPv6 address";
    case net::OriginError::missing_host:
      return "missing host";
    case net::OriginError::empty_label:
      return "host has an empty label";
    case net::OriginError::host_character:
      return "host may contain only ASCII letters, digits, '-', '_' and '.' (write international "
             "names in their xn-- form)";
    case net::OriginError::port:
      return "port must be a number from 1 to 65535";
  }
  return "is not an origin";
}

// A trailing "/" is accepted: people write "https://api.example.com/" for the same origin.
OriginCheck normalise_origin(std::string_view text) {
  const auto result = net::parse_origin(text, net::OriginForm::trailing_slash);
  if (const auto* error = std::get_if<net::OriginError>(&result)) {
    return OriginCheck{{}, std::string(describe(*error))};
  }
  return OriginCheck{std::get<net::Origin>(result).serialised(), {}};
}

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

// ---------------------------------------------------------------------------------------------
// Bearer tokens.

// The name of a `bearer_tokens` entry: config.h promises token-1, token-2, ... by position.
// A principal's name (a token's `name`, a `principals` key): safe unquoted in logs, metrics
// labels and audit records.
bool is_name_char(char c) { return is_alpha(c) || is_digit(c) || c == '.' || c == '_' || c == '-'; }

std::string generated_token_name(std::size_t index) { return "token-" + std::to_string(index + 1); }

// ---------------------------------------------------------------------------------------------
// The schema walk. Every check adds problems and carries on, so that one run reports them all.

constexpr std::array<std::string_view, 11> kTopKeys = {"openapi", "upstreams",  "ca_file", "policy",
                                                       "limits",  "http",       "sandbox", "audit",
                                                       "tracing", "principals", "name"};
constexpr std::array<std::string_view, 2> kPrincipalKeys = {"upstreams", "policy"};
constexpr std::array<std::string_view, 4> kTracingKeys = {"otlp", "service_name", "headers",
                                                          "queue"};
constexpr std::array<std::string_view, 8> kAuditKeys = {
    "sqlite",       "postgres", "server", "on_failure", "queue", "queue_per_principal",
    "max_age_days", "max_mb"};
constexpr std::array<std::string_view, 8> kSandboxKeys = {
    "jitless",      "process_calls",   "max_processes",   "spare_processes",
    "idle_seconds", "principal_calls", "principal_queue", "memory_mb"};
constexpr std::array<std::string_view, 5> kPolicyKeys = {"operations", "methods", "approve",
                                                         "approval_timeout_ms", "approval_key"};
constexpr std::array<std::string_view, 4> kApproveKeys = {"methods", "operations", "tags", "paths"};
constexpr std::array<std::string_view, 6> kMethods = {"GET", "HEAD",  "POST",
                                                      "PUT", "PATCH", "DELETE"};
constexpr std::array<std::string_view, 6> kUpstreamKeys = {"origin", "headers",   "query",
                                                           "basic",  "base_path", "token_exchange"};
constexpr std::array<std::string_view, 2> kBasicKeys = {"user", "password"};
constexpr std::array<std::string_view, 6> kTokenExchangeKeys = {
    "audience", "resource", "scope", "client_id", "client_secret", "token_endpoint"};
constexpr std::array<std::string_view, 7> kIntrospectionKeys = {
    "endpoint",         "client_id",     "client_secret", "cache_s",
    "inactive_cache_s", "cache_entries", "concurrency"};
constexpr std::array<std::string_view, 4> kHttpKeys = {"allowed_origins", "tokens", "bearer_tokens",
                                                       "oauth"};
constexpr std::array<std::string_view, 10> kOAuthKeys = {
    "issuer",         "introspection",     "resource",       "scopes",
    "request_scopes", "extra_scopes",      "jwks_refresh_s", "jwks_min_interval_s",
    "leeway_s",       "require_typ_at_jwt"};
constexpr std::array<std::string_view, 3> kRequestScopeKeys = {"read", "write", "spec"};
constexpr std::array<std::string_view, 2> kScopedTools = {"search", "execute"};

// A scope token (RFC 6749 §3.3): printable ASCII except space, '"' and '\\'.
bool is_scope_token(std::string_view scope) {
  return !scope.empty() && std::all_of(scope.begin(), scope.end(), [](char c) {
    return c >= 0x21 && c <= 0x7e && c != '"' && c != '\\';
  });
}
constexpr std::array<std::string_view, 2> kTokenKeys = {"name", "token"};

// The sandbox section's integers, each with its range (inclusive).
struct SandboxSpec {
  std::string_view name;
  std::uint32_t SandboxSettings::*field;
  std::uint64_t min;
  std::uint64_t max;
};

constexpr std::array<SandboxSpec, 7> kSandboxSpecs = {{
    {"process_calls", &SandboxSettings::process_calls, 1, 1024},
    {"max_processes", &SandboxSettings::max_processes, 1, 1024},
    {"spare_processes", &SandboxSettings::spare_processes, 0, 64},
    {"idle_seconds", &SandboxSettings::idle_seconds, 1, 86400},
    {"principal_calls", &SandboxSettings::principal_calls, 1, 100000},
    {"principal_queue", &SandboxSettings::principal_queue, 0, 100000},
    {"memory_mb", &SandboxSettings::memory_mb, 0, 16777216},
}};

struct LimitSpec {
  std::string_view name;
  std::uint32_t Limits::*field;
  std::uint64_t min;
  std::uint64_t max;
};

// Keep in step with the ranges documented in config.h.
constexpr std::array<LimitSpec, 7> kLimitSpecs = {{
    {"code_chars", &Limits::code_chars, 1, 1000000},
    {"result_chars", &Limits::result_chars, 100, 10000000},
    {"cpu_ms", &Limits::cpu_ms, 1, 600000},
    {"wall_ms", &Limits::wall_ms, 10, 3600000},
    {"heap_mb", &Limits::heap_mb, 8, 4096},
    {"subrequests", &Limits::subrequests, 0, 10000},
    {"response_bytes", &Limits::response_bytes, 1, 1073741824},
}};

class Loader {
 public:
  Loader(const fs::path& base_dir, const Environment& env, std::vector<std::string>& problems)
      : base_dir_(base_dir), env_(env), problems_(problems) {}

  // Only the "audit" section (load_audit_section).
  Config load_audit_only(const Json& root) {
    Config config;
    if (const auto it = root.find("audit"); it != root.end()) config.audit = load_audit(*it);
    return config;
  }

  Config load(const Json& root) {
    Config config;
    bool saw_openapi = false;
    for (const auto& [key, value] : root.items()) {
      if (key == "openapi") {
        saw_openapi = true;
        if (auto path = load_file_path(value, key)) config.openapi = std::move(*path);
      } else if (key == "ca_file") {
        if (auto path = load_file_path(value, key)) config.ca_file = std::move(*path);
      } else if (key == "upstreams") {
        load_upstreams(value, config.upstreams);
      } else if (key == "policy") {
        load_policy(value, config.policy);
      } else if (key == "limits") {
        load_limits(value, config.limits);
      } else if (key == "http") {
        load_http(value, config.http);
      } else if (key == "sandbox") {
        load_sandbox(value, config.sandbox);
      } else if (key == "audit") {
        config.audit = load_audit(value);
      } else if (key == "principals") {
        load_principals(value, config.principals);
      } else if (key == "tracing") {
        config.tracing = load_tracing(value);
      } else if (key == "name") {
        if (auto text = read_required_string(value, key)) {
          const bool word = std::all_of(text->value.begin(), text->value.end(), [](char c) {
            return net::is_alnum(c) || c == '-' || c == '_' || c == '.';
          });
          if (!word || text->value.empty() || text->value.size() > 64) {
            add(key, "must be 1 to 64 characters of letters, digits, '-', '_' and '.'");
          } else {
            config.name = std::move(text->value);
          }
        }
      } else {
        unknown_key("", key, kTopKeys);
      }
    }
    if (!saw_openapi) {
      add("openapi", "required key is missing (the path of the OpenAPI document)");
    }
    check_principal_origins(config);
    check_token_exchanges(config);
    return config;
  }

 private:
  void add(std::string_view path, std::string_view what) {
    problems_.push_back(std::string(path) + ": " + std::string(what));
  }

  bool expect(const Json& value, Json::value_t type, std::string_view phrase,
              std::string_view path) {
    if (value.type() == type) return true;
    add(path, "expected " + std::string(phrase) + ", got " + std::string(type_phrase(value)));
    return false;
  }
  bool expect_object(const Json& value, std::string_view path) {
    return expect(value, Json::value_t::object, "an object", path);
  }
  bool expect_array(const Json& value, std::string_view path) {
    return expect(value, Json::value_t::array, "an array", path);
  }

  void unknown_key(std::string_view parent, std::string_view key,
                   std::span<const std::string_view> known) {
    std::optional<std::string_view> best;
    std::size_t best_distance = kMaxSuggestionDistance + 1;
    for (const std::string_view candidate : known) {
      const std::size_t distance = edit_distance(key, candidate);
      if (distance < best_distance) {
        best = candidate;
        best_distance = distance;
      }
    }
    if (best) {
      add(child_path(parent, key), "unknown key (did you mean \"" + std::string(*best) + "\"?)");
      return;
    }
    std::string list;
    for (const std::string_view candidate : known) {
      list += (list.empty() ? "" : ", ") + std::string(candidate);
    }
    add(child_path(parent, key), "unknown key (known keys: " + list + ")");
  }

  std::optional<Expanded> read_string(const Json& value, std::string_view path) {
    if (!expect(value, Json::value_t::string, "a string", path)) return std::nullopt;
    return detail::expand(value.get_ref<const std::string&>(), path, env_, problems_);
  }

  // A string that must not be empty once expanded.
  std::optional<Expanded> read_required_string(const Json& value, std::string_view path) {
    std::optional<Expanded> text = read_string(value, path);
    if (text && text->value.empty()) {
      add(path, text->from_environment ? "is empty after environment variable expansion"
                                       : "must not be empty");
      return std::nullopt;
    }
    return text;
  }

  // `path_hint` is added to a "must not contain a path" problem: where a path goes instead.
  std::optional<std::string> read_origin(const Json& value, std::string_view path,
                                         std::string_view path_hint = {}) {
    const std::optional<Expanded> text = read_required_string(value, path);
    if (!text) return std::nullopt;
    OriginCheck check = normalise_origin(text->value);
    if (!check.problem.empty()) {
      // Never the value: it may have come from the environment.
      const bool is_path = check.problem == describe(net::OriginError::path);
      add(path, is_path ? check.problem + std::string(path_hint) : check.problem);
      return std::nullopt;
    }
    return std::move(check.origin);
  }

  // A path to a regular, readable file, resolved against the config file's directory.
  std::optional<fs::path> load_file_path(const Json& value, std::string_view key) {
    const std::optional<Expanded> text = read_required_string(value, key);
    if (!text) return std::nullopt;
    if (text->value.starts_with("http://") || text->value.starts_with("https://")) {
      add(key, "must be a local file; URLs are not fetched (download it and name the file)");
      return std::nullopt;
    }
    std::error_code error;
    fs::path path = fs::absolute(base_dir_ / fs::path(text->value), error).lexically_normal();
    // A path written in the file is shown (quoted if it holds control characters, so the
    // problem stays one line); one that came from the environment is not.
    const std::string shown = text->from_environment ? "the file" : printable(path.string());
    if (error) {
      add(key, "cannot read " + shown + ": " + error.message());
      return std::nullopt;
    }
    const fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status)) {
      add(key, "cannot read " + shown + ": " +
                   (error ? error.message()
                          : std::make_error_code(std::errc::no_such_file_or_directory).message()));
      return std::nullopt;
    }
    if (!fs::is_regular_file(status)) {
      add(key, shown + " is not a regular file");
      return std::nullopt;
    }
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                         &std::fclose);
    if (!file) {
      add(key, "cannot read " + shown + ": " +
                   std::error_code(errno, std::generic_category()).message());
      return std::nullopt;
    }
    return path;
  }

  void load_upstreams(const Json& value, std::vector<Upstream>& upstreams,
                      const std::string& where = "upstreams") {
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
  void load_query(const Json& value, const std::string& path,
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
  bool load_basic(const Json& value, const std::string& path, Upstream& upstream) {
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
  std::optional<std::string> read_base_path(const Json& value, const std::string& path) {
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

  void load_headers(const Json& value, const std::string& path,
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

  // An integer in the JSON (not a float, not a string) within min..max.
  std::optional<std::uint64_t> read_integer(const Json& field, const std::string& path,
                                            std::uint64_t min, std::uint64_t max) {
    if (!field.is_number_integer()) {
      add(path, "expected an integer, got " + std::string(type_phrase(field)));
      return std::nullopt;
    }
    const std::string range =
        " is out of range " + std::to_string(min) + ".." + std::to_string(max);
    if (!field.is_number_unsigned()) {  // nlohmann stores only negative integers as signed
      add(path, std::to_string(field.get<std::int64_t>()) + range);
      return std::nullopt;
    }
    const auto number = field.get<std::uint64_t>();
    if (number < min || number > max) {
      add(path, std::to_string(number) + range);
      return std::nullopt;
    }
    return number;
  }

  // read_integer into a 32-bit setting, left as it was when the value is refused.
  void read_u32(const Json& field, const std::string& path, std::uint32_t min, std::uint32_t max,
                std::uint32_t& setting) {
    if (auto n = read_integer(field, path, min, max)) setting = static_cast<std::uint32_t>(*n);
  }

  void load_limits(const Json& value, Limits& limits) {
    if (!expect_object(value, "limits")) return;
    std::vector<std::string_view> known;
    known.reserve(kLimitSpecs.size());
    for (const LimitSpec& spec : kLimitSpecs) known.push_back(spec.name);
    std::map<std::string_view, bool> valid;  // limit name -> read without problems
    for (const auto& [key, field] : value.items()) {
      const auto spec = std::find_if(kLimitSpecs.begin(), kLimitSpecs.end(),
                                     [&key = key](const LimitSpec& s) { return s.name == key; });
      if (spec == kLimitSpecs.end()) {
        unknown_key("limits", key, known);
        continue;
      }
      const std::string path = child_path("limits", key);
      valid[spec->name] = false;
      const std::optional<std::uint64_t> number = read_integer(field, path, spec->min, spec->max);
      if (!number) continue;
      limits.*(spec->field) = static_cast<std::uint32_t>(*number);
      valid[spec->name] = true;
    }
    const auto usable = [&valid](std::string_view name) {
      const auto it = valid.find(name);
      return it == valid.end() || it->second;
    };
    if (usable("cpu_ms") && usable("wall_ms") && limits.cpu_ms > limits.wall_ms) {
      add("limits.cpu_ms", std::to_string(limits.cpu_ms) + " exceeds limits.wall_ms (" +
                               std::to_string(limits.wall_ms) +
                               "); CPU time cannot outlast the wall-clock deadline");
    }
  }

  void load_policy(const Json& value, Policy& policy, const std::string& where = "policy") {
    if (!expect_object(value, where)) return;
    for (const auto& [key, field] : value.items()) {
      const std::string path = child_path(where, key);
      if (key == "operations") {
        const std::optional<Expanded> text = read_required_string(field, path);
        if (!text) continue;
        if (text->value == "any") {
          policy.operations = Policy::Operations::any;
        } else if (text->value == "spec") {
          policy.operations = Policy::Operations::spec;
        } else {
          add(path, "must be \"any\" or \"spec\"");
        }
      } else if (key == "methods") {
        if (!expect_array(field, path)) continue;
        if (field.empty()) add(path, "must name at least one method (omit it to allow all)");
        read_methods(field, path, policy.methods);
      } else if (key == "approve" && where == "policy") {
        load_approval(field, policy.approve, path);
      } else if (key == "approval_timeout_ms" && where == "policy") {
        read_u32(field, path, 1000, 3600000, policy.approval_timeout_ms);
      } else if (key == "approval_key" && where == "policy") {
        const std::optional<Expanded> text = read_required_string(field, path);
        if (!text) continue;
        const bool hex = text->value.size() == 64 &&
                         std::all_of(text->value.begin(), text->value.end(), net::is_hex_digit);
        if (!hex) {
          add(path, "must be 64 hex digits (a 256-bit key: openssl rand -hex 32)");
          continue;
        }
        policy.approval_key = text->value;
      } else if (key == "approve" || key == "approval_timeout_ms" || key == "approval_key") {
        add(path, "approval is set for every principal at once, in the top-level policy");
      } else {
        unknown_key(where, key, kPolicyKeys);
      }
    }
  }

  // Upper-cased methods of `field` (an array) appended to `methods`, each once.
  void read_methods(const Json& field, const std::string& path, std::vector<std::string>& methods) {
    for (std::size_t i = 0; i < field.size(); ++i) {
      const std::optional<Expanded> text = read_required_string(field[i], element_path(path, i));
      if (!text) continue;
      std::string method = net::upper(text->value);
      if (std::find(kMethods.begin(), kMethods.end(), method) == kMethods.end()) {
        add(element_path(path, i), "must be one of GET, HEAD, POST, PUT, PATCH, DELETE");
      } else if (std::find(methods.begin(), methods.end(), method) == methods.end()) {
        methods.push_back(std::move(method));
      }
    }
  }

  // `policy.approve`: true (writes), false (none), or an object narrowing it.
  void load_approval(const Json& value, std::optional<Approval>& approval,
                     const std::string& where) {
    if (value.is_boolean()) {
      if (value.get<bool>()) approval.emplace();
      return;
    }
    if (!value.is_object()) {
      add(where, "must be true, false or an object (methods, operations, tags, paths)");
      return;
    }
    Approval& rules = approval.emplace();
    for (const auto& [key, field] : value.items()) {
      const std::string path = child_path(where, key);
      if (key != "methods" && key != "operations" && key != "tags" && key != "paths") {
        unknown_key(where, key, kApproveKeys);
        continue;
      }
      if (!expect_array(field, path)) continue;
      if (field.empty()) add(path, "must name at least one (omit it for the default)");
      if (key == "methods") {
        rules.methods.clear();
        read_methods(field, path, rules.methods);
        continue;
      }
      auto& list = key == "operations" ? rules.operations
                   : key == "tags"     ? rules.tags
                                       : rules.paths;
      for (std::size_t i = 0; i < field.size(); ++i) {
        const std::optional<Expanded> text = read_required_string(field[i], element_path(path, i));
        if (!text) continue;
        if (key == "paths" && (text->value.empty() || text->value.front() != '/')) {
          add(element_path(path, i), "must be a path pattern starting with /");
          continue;
        }
        list.push_back(text->value);
      }
    }
  }

  void load_principals(const Json& value, std::map<std::string, PrincipalSettings>& principals) {
    if (!expect_object(value, "principals")) return;
    for (const auto& [name, entry] : value.items()) {
      const std::string path = child_path("principals", name);
      if (!is_principal_name(name)) {
        add("principals",
            "a principal is a token's name or what an access token names (sub:SUBJECT, "
            "client:ID): 1 to 160 characters of A-Z, a-z, 0-9 and ._-@:+=|");
        continue;
      }
      if (!expect_object(entry, path)) continue;
      PrincipalSettings settings;
      for (const auto& [key, field] : entry.items()) {
        if (key == "upstreams") {
          load_upstreams(field, settings.upstreams, child_path(path, key));
        } else if (key == "policy") {
          load_policy(field, settings.policy.emplace(), child_path(path, key));
        } else {
          unknown_key(path, key, kPrincipalKeys);
        }
      }
      principals.emplace(name, std::move(settings));
    }
  }

  // A token's name, or the principal an OAuth access token names ("sub:<subject>",
  // "client:<client id>", "sub-sha256:<hex>", "client-sha256:<hex>": auth/access_token.h).
  static bool is_principal_name(std::string_view name) {
    return !name.empty() && name.size() <= kMaxPrincipalNameChars &&
           std::all_of(name.begin(), name.end(), [](char c) {
             return is_name_char(c) || c == '@' || c == ':' || c == '+' || c == '=' || c == '|';
           });
  }

  // A principal's headers are for an origin the top-level upstreams allow: never a way to widen
  // the allowlist.
  void check_principal_origins(const Config& config) {
    for (const auto& [name, settings] : config.principals) {
      for (std::size_t i = 0; i < settings.upstreams.size(); ++i) {
        const std::string& origin = settings.upstreams[i].origin;
        if (origin.empty()) continue;  // already a problem
        const bool known = std::any_of(config.upstreams.begin(), config.upstreams.end(),
                                       [&](const Upstream& u) { return u.origin == origin; });
        if (!known) {
          add(child_path(element_path(child_path(child_path("principals", name), "upstreams"), i),
                         "origin"),
              "not one of the top-level upstreams (a principal's entry gives headers for a "
              "configured origin; it does not add one)");
        }
      }
    }
  }

  void load_sandbox(const Json& value, SandboxSettings& sandbox) {
    if (!expect_object(value, "sandbox")) return;
    for (const auto& [key, field] : value.items()) {
      const std::string path = child_path("sandbox", key);
      const auto spec = std::find_if(kSandboxSpecs.begin(), kSandboxSpecs.end(),
                                     [&key = key](const SandboxSpec& s) { return s.name == key; });
      if (key == "jitless") {
        if (expect(field, Json::value_t::boolean, "true or false", path)) {
          sandbox.jitless = field.get<bool>();
        }
      } else if (spec != kSandboxSpecs.end()) {
        if (auto number = read_integer(field, path, spec->min, spec->max)) {
          sandbox.*(spec->field) = static_cast<std::uint32_t>(*number);
        }
      } else {
        unknown_key("sandbox", key, kSandboxKeys);
      }
    }
  }

  // The audit section: one store, its bounds and what happens when it is down.
  std::optional<Audit> load_audit(const Json& value) {
    if (!expect_object(value, "audit")) return std::nullopt;
    Audit audit;
    std::vector<std::string_view> stores;
    std::optional<Audit::OnFailure> on_failure;
    bool saw_max_mb = false;
    for (const auto& [key, field] : value.items()) {
      const std::string path = child_path("audit", key);
      if (key == "sqlite") {
        stores.push_back("sqlite");
        audit.store = Audit::Store::sqlite;
        if (auto file = load_new_file_path(field, path)) audit.sqlite = std::move(*file);
      } else if (key == "postgres") {
        stores.push_back("postgres");
        audit.store = Audit::Store::postgres;
        if (auto text = read_required_string(field, path)) {
          if (holds_password(text->value)) {
            add(path,
                "holds a password; give it in PGPASSWORD or ~/.pgpass instead (libpq reads "
                "them), so the connection string is safe to show");
          } else {
            audit.postgres = std::move(text->value);
          }
        }
      } else if (key == "server") {
        if (auto name = read_token_name(field, path)) audit.server = std::move(*name);
      } else if (key == "on_failure") {
        if (auto text = read_required_string(field, path)) {
          if (text->value == "fail_closed") {
            on_failure = Audit::OnFailure::fail_closed;
          } else if (text->value == "drop") {
            on_failure = Audit::OnFailure::drop;
          } else {
            add(path, "must be \"fail_closed\" or \"drop\"");
          }
        }
      } else if (key == "queue") {
        read_u32(field, path, 1, 1000000, audit.queue);
      } else if (key == "queue_per_principal") {
        read_u32(field, path, 1, 1000000, audit.queue_per_principal);
      } else if (key == "max_age_days") {
        read_u32(field, path, 0, 36500, audit.max_age_days);
      } else if (key == "max_mb") {
        saw_max_mb = true;
        read_u32(field, path, 0, 1048576, audit.max_mb);
      } else {
        unknown_key("audit", key, kAuditKeys);
      }
    }
    if (stores.empty()) {
      add("audit",
          "names no store: give \"sqlite\": \"audit.db\" or \"postgres\": \"postgresql://...\"");
    } else if (stores.size() > 1) {
      add("audit", "names two stores (sqlite and postgres); give one");
    }
    if (audit.queue_per_principal > audit.queue) {
      add("audit.queue_per_principal",
          "must be at most audit.queue (" + std::to_string(audit.queue) + ")");
    }
    if (audit.store == Audit::Store::postgres) {
      if (saw_max_mb) {
        add("audit.max_mb",
            "applies to sqlite only (the size of a PostgreSQL database is its operator's)");
      }
      audit.max_mb = 0;
    }
    audit.on_failure =
        on_failure.value_or(audit.store == Audit::Store::postgres ? Audit::OnFailure::fail_closed
                                                                  : Audit::OnFailure::drop);
    return audit;
  }

  // The tracing section: where spans go and what they are sent with.
  std::optional<Tracing> load_tracing(const Json& value) {
    if (!expect_object(value, "tracing")) return std::nullopt;
    Tracing tracing;
    bool saw_otlp = false;
    for (const auto& [key, field] : value.items()) {
      const std::string path = child_path("tracing", key);
      if (key == "otlp") {
        saw_otlp = true;
        if (auto text = read_required_string(field, path)) {
          const std::string scheme = lower(text->value.substr(0, 8));
          if (!scheme.starts_with("http://") && !scheme.starts_with("https://")) {
            add(path, "must be an http:// or https:// URL (the collector's OTLP/HTTP traces URL)");
          } else {
            tracing.otlp = std::move(text->value);
          }
        }
      } else if (key == "service_name") {
        if (auto text = read_required_string(field, path)) {
          const bool printable = std::all_of(text->value.begin(), text->value.end(),
                                             [](char c) { return c >= 0x20 && c < 0x7f; });
          if (!printable || text->value.size() > 128) {
            add(path, "must be 1 to 128 printable ASCII characters");
          } else {
            tracing.service_name = std::move(text->value);
          }
        }
      } else if (key == "headers") {
        load_headers(field, path, tracing.headers);
      } else if (key == "queue") {
        read_u32(field, path, 1, 1000000, tracing.queue);
      } else {
        unknown_key("tracing", key, kTracingKeys);
      }
    }
    if (!saw_otlp) add("tracing.otlp", "required key is missing (the collector's traces URL)");
    return tracing;
  }

  // A libpq connection string that carries a password: a URI's userinfo with a ':' or a
  // password parameter, in either form.
  static bool holds_password(std::string_view text) {
    if (lower(text).find("password") != std::string::npos) return true;
    for (std::string_view scheme : {"postgresql://", "postgres://"}) {
      if (!lower(text).starts_with(scheme)) continue;
      std::string_view rest = text.substr(scheme.size());
      rest = rest.substr(0, rest.find_first_of("/?"));
      const std::size_t at = rest.rfind('@');
      return at != std::string_view::npos && rest.substr(0, at).find(':') != std::string_view::npos;
    }
    return false;
  }

  // A path to a file that may not exist yet, resolved against the config file's directory; its
  // directory must exist.
  std::optional<fs::path> load_new_file_path(const Json& value, std::string_view path) {
    const std::optional<Expanded> text = read_required_string(value, path);
    if (!text) return std::nullopt;
    std::error_code error;
    fs::path file = fs::absolute(base_dir_ / fs::path(text->value), error).lexically_normal();
    const std::string shown = text->from_environment ? "the file" : printable(file.string());
    if (error || !fs::is_directory(file.parent_path(), error)) {
      add(path, "the directory of " + shown + " does not exist");
      return std::nullopt;
    }
    if (fs::is_directory(file, error)) {
      add(path, shown + " is a directory");
      return std::nullopt;
    }
    return file;
  }

  // One token as read from either key, with where it was written, for the checks that span both
  // lists. A part that is missing or has a problem (already reported) is nullopt.
  struct TokenEntry {
    std::optional<std::string> name;
    std::optional<std::string> token;
    std::string name_path;   // empty: the name is generated (a `bearer_tokens` entry)
    std::string token_path;  // `http.tokens[0].token` or `http.bearer_tokens[0]`
  };

  void load_http(const Json& value, Http& http) {
    if (!expect_object(value, "http")) return;
    std::vector<TokenEntry> named;
    std::vector<TokenEntry> plain;
    for (const auto& [key, field] : value.items()) {
      const std::string path = child_path("http", key);
      if (key == "allowed_origins") {
        if (!expect_array(field, path)) continue;
        http.allowed_origins.clear();
        for (std::size_t i = 0; i < field.size(); ++i) {
          if (auto origin = read_origin(field[i], element_path(path, i))) {
            http.allowed_origins.push_back(std::move(*origin));
          }
        }
      } else if (key == "tokens") {
        load_named_tokens(field, path, named);
      } else if (key == "oauth") {
        http.oauth = load_oauth(field, path);
      } else if (key == "bearer_tokens") {
        if (!expect_array(field, path)) continue;
        for (std::size_t i = 0; i < field.size(); ++i) {
          const std::string token_path = element_path(path, i);
          plain.push_back(TokenEntry{generated_token_name(i),
                                     read_bearer_token(field[i], token_path), "", token_path});
        }
      } else {
        unknown_key("http", key, kHttpKeys);
      }
    }
    check_token_entries(named, plain);
    for (std::vector<TokenEntry>* entries : {&named, &plain}) {
      for (TokenEntry& entry : *entries) {
        if (entry.name && entry.token) {
          http.bearer_tokens.push_back(
              BearerToken{std::move(*entry.name), std::move(*entry.token)});
        }
      }
    }
  }

  // A URL that OAuth settings may name (is_acceptable_oauth_url), or "" and a problem.
  std::string read_oauth_url(const Json& field, const std::string& field_path) {
    const std::optional<Expanded> text = read_required_string(field, field_path);
    if (!text) return "";
    if (!is_acceptable_oauth_url(text->value)) {
      add(field_path,
          "must be an https URL (http only on a loopback host) without query or "
          "fragment");
      return "";
    }
    return text->value;
  }

  std::vector<std::string> read_scope_list(const Json& field, const std::string& field_path) {
    std::vector<std::string> scopes;
    if (!expect_array(field, field_path)) return scopes;
    for (std::size_t i = 0; i < field.size(); ++i) {
      const std::string scope_path = element_path(field_path, i);
      const std::optional<Expanded> text = read_required_string(field[i], scope_path);
      if (!text) continue;
      if (!is_scope_token(text->value)) {
        add(scope_path, "is not a scope (printable ASCII, no space, '\"' or '\\')");
        continue;
      }
      scopes.push_back(text->value);
    }
    return scopes;
  }

  // A client id or secret: visible ASCII, no space (it goes into HTTP Basic credentials).
  std::string read_client_text(const Json& field, const std::string& field_path) {
    const std::optional<Expanded> text = read_required_string(field, field_path);
    if (!text) return "";
    const bool visible = std::all_of(text->value.begin(), text->value.end(),
                                     [](char c) { return c > 0x20 && c < 0x7F; });
    if (!visible) {
      add(field_path, "must be visible ASCII without spaces");
      return "";
    }
    return text->value;
  }

  std::optional<TokenExchange> load_token_exchange(const Json& value, const std::string& path) {
    if (!expect_object(value, path)) return std::nullopt;
    TokenExchange exchange;
    const std::size_t problems_before = problems_.size();
    for (const auto& [key, field] : value.items()) {
      const std::string field_path = child_path(path, key);
      if (key == "audience") {
        if (auto text = read_required_string(field, field_path)) {
          const bool clean = std::none_of(text->value.begin(), text->value.end(), [](char c) {
            return static_cast<unsigned char>(c) < 0x20 || c == 0x7F;
          });
          if (clean) {
            exchange.audience = text->value;
          } else {
            add(field_path, "contains a control character");
          }
        }
      } else if (key == "resource") {
        exchange.resource = read_oauth_url(field, field_path);
      } else if (key == "scope") {
        exchange.scopes = read_scope_list(field, field_path);
      } else if (key == "client_id") {
        exchange.client_id = read_client_text(field, field_path);
      } else if (key == "client_secret") {
        exchange.client_secret = read_client_text(field, field_path);
      } else if (key == "token_endpoint") {
        exchange.token_endpoint = read_oauth_url(field, field_path);
      } else {
        unknown_key(path, key, kTokenExchangeKeys);
      }
    }
    if (!value.contains("audience") && !value.contains("resource")) {
      add(path, "needs an audience or a resource (what the exchanged token is for)");
    }
    if (!value.contains("client_id")) add(child_path(path, "client_id"), "is required");
    if (!value.contains("client_secret")) add(child_path(path, "client_secret"), "is required");
    if (problems_.size() != problems_before) return std::nullopt;
    return exchange;
  }

  std::optional<Introspection> load_introspection(const Json& value, const std::string& path) {
    if (!expect_object(value, path)) return std::nullopt;
    Introspection introspection;
    const std::size_t problems_before = problems_.size();
    for (const auto& [key, field] : value.items()) {
      const std::string field_path = child_path(path, key);
      if (key == "endpoint") {
        introspection.endpoint = read_oauth_url(field, field_path);
      } else if (key == "client_id") {
        introspection.client_id = read_client_text(field, field_path);
      } else if (key == "client_secret") {
        introspection.client_secret = read_client_text(field, field_path);
      } else if (key == "cache_s") {
        read_u32(field, field_path, 1, 3600, introspection.cache_s);
      } else if (key == "inactive_cache_s") {
        read_u32(field, field_path, 0, 3600, introspection.inactive_cache_s);
      } else if (key == "cache_entries") {
        read_u32(field, field_path, 16, 1000000, introspection.cache_entries);
      } else if (key == "concurrency") {
        read_u32(field, field_path, 1, 256, introspection.concurrency);
      } else {
        unknown_key(path, key, kIntrospectionKeys);
      }
    }
    if (!value.contains("client_id")) add(child_path(path, "client_id"), "is required");
    if (!value.contains("client_secret")) add(child_path(path, "client_secret"), "is required");
    if (problems_.size() != problems_before) return std::nullopt;
    return introspection;
  }

  // token_exchange asks the authorization server of http.oauth for tokens.
  void check_token_exchanges(const Config& config) {
    if (config.http.oauth) return;
    for (std::size_t i = 0; i < config.upstreams.size(); ++i) {
      if (config.upstreams[i].token_exchange) {
        add(child_path(element_path("upstreams", i), "token_exchange"),
            "needs http.oauth (the authorization server that exchanges tokens)");
      }
    }
    for (const auto& [name, settings] : config.principals) {
      for (std::size_t i = 0; i < settings.upstreams.size(); ++i) {
        if (settings.upstreams[i].token_exchange) {
          add(child_path(element_path(child_path(child_path("principals", name), "upstreams"), i),
                         "token_exchange"),
              "needs http.oauth (the authorization server that exchanges tokens)");
        }
      }
    }
  }

  std::optional<OAuth> load_oauth(const Json& value, const std::string& path) {
    if (!expect_object(value, path)) return std::nullopt;
    OAuth oauth;
    const std::size_t problems_before = problems_.size();
    for (const auto& [key, field] : value.items()) {
      const std::string field_path = child_path(path, key);
      if (key == "issuer") {
        oauth.issuer = read_oauth_url(field, field_path);
      } else if (key == "resource") {
        oauth.resource = read_oauth_url(field, field_path);
      } else if (key == "scopes") {
        if (!expect_object(field, field_path)) continue;
        for (const auto& [tool, scopes] : field.items()) {
          if (std::find(kScopedTools.begin(), kScopedTools.end(), tool) == kScopedTools.end()) {
            unknown_key(field_path, tool, kScopedTools);
            continue;
          }
          oauth.tool_scopes[tool] = read_scope_list(scopes, child_path(field_path, tool));
        }
      } else if (key == "request_scopes") {
        if (!expect_object(field, field_path)) continue;
        for (const auto& [kind, scopes] : field.items()) {
          if (kind == "read") {
            oauth.read_scopes = read_scope_list(scopes, child_path(field_path, kind));
          } else if (kind == "write") {
            oauth.write_scopes = read_scope_list(scopes, child_path(field_path, kind));
          } else if (kind == "spec") {
            if (scopes.is_boolean()) {
              oauth.spec_scopes = scopes.get<bool>();
            } else {
              add(child_path(field_path, kind),
                  "expected true or false, got " + std::string(type_phrase(scopes)));
            }
          } else {
            unknown_key(field_path, kind, kRequestScopeKeys);
          }
        }
      } else if (key == "extra_scopes") {
        oauth.extra_scopes = read_scope_list(field, field_path);
      } else if (key == "jwks_refresh_s") {
        read_u32(field, field_path, 60, 86400, oauth.jwks_refresh_s);
      } else if (key == "jwks_min_interval_s") {
        read_u32(field, field_path, 0, 3600, oauth.jwks_min_interval_s);
      } else if (key == "leeway_s") {
        read_u32(field, field_path, 0, 300, oauth.leeway_s);
      } else if (key == "require_typ_at_jwt") {
        if (field.is_boolean()) {
          oauth.require_typ_at_jwt = field.get<bool>();
        } else {
          add(field_path, "expected true or false, got " + std::string(type_phrase(field)));
        }
      } else if (key == "introspection") {
        oauth.introspection = load_introspection(field, field_path);
      } else {
        unknown_key(path, key, kOAuthKeys);
      }
    }
    if (!value.contains("issuer")) add(child_path(path, "issuer"), "is required");
    if (!value.contains("resource")) add(child_path(path, "resource"), "is required");
    if (problems_.size() != problems_before) return std::nullopt;
    return oauth;
  }

  void load_named_tokens(const Json& value, const std::string& path,
                         std::vector<TokenEntry>& entries) {
    if (!expect_array(value, path)) return;
    for (std::size_t i = 0; i < value.size(); ++i) {
      const std::string entry_path = element_path(path, i);
      const Json& item = value[i];
      if (!expect_object(item, entry_path)) continue;
      TokenEntry entry;
      entry.name_path = child_path(entry_path, "name");
      entry.token_path = child_path(entry_path, "token");
      bool saw_name = false;
      bool saw_token = false;
      for (const auto& [key, field] : item.items()) {
        if (key == "name") {
          saw_name = true;
          entry.name = read_token_name(field, entry.name_path);
        } else if (key == "token") {
          saw_token = true;
          entry.token = read_bearer_token(field, entry.token_path);
        } else {
          unknown_key(entry_path, key, kTokenKeys);
        }
      }
      if (!saw_name) add(entry.name_path, "required key is missing");
      if (!saw_token) add(entry.token_path, "required key is missing");
      entries.push_back(std::move(entry));
    }
  }

  // Names appear in logs, metrics and audit records: a small alphabet keeps them safe there
  // unquoted. A problem never shows the name, which may have come from the environment.
  std::optional<std::string> read_token_name(const Json& value, const std::string& path) {
    std::optional<Expanded> text = read_required_string(value, path);
    if (!text) return std::nullopt;
    const std::string& name = text->value;
    const bool allowed = std::all_of(name.begin(), name.end(), is_name_char);
    if (!allowed) {
      add(path, "may contain only ASCII letters, digits, '.', '_' and '-'");
      return std::nullopt;
    }
    if (name.size() > kMaxTokenNameChars) {
      add(path, "longer than " + std::to_string(kMaxTokenNameChars) + " characters");
      return std::nullopt;
    }
    return std::move(text->value);
  }

  // Across both lists: a name names one principal (ignoring case), and a token stands for one
  // principal. Problems name where the other one was written, never a token.
  void check_token_entries(const std::vector<TokenEntry>& named,
                           const std::vector<TokenEntry>& plain) {
    std::map<std::string, const TokenEntry*> generated;  // generated names are lower-case
    for (const TokenEntry& entry : plain) generated.emplace(*entry.name, &entry);
    std::map<std::string, const TokenEntry*> given;  // lower-case name -> first entry with it
    for (const TokenEntry& entry : named) {
      if (!entry.name) continue;
      const std::string key = lower(*entry.name);
      // A clash with a generated name is reported at the given one: that is the name the author
      // chose and can change.
      if (key == kStdioPrincipal) {
        // The stdio client's principal: a token of that name would share its sandbox
        // processes, memory share, turns and audit name with whoever holds stdin.
        add(entry.name_path, "\"stdio\" is the stdio client's principal; choose another name");
      } else if (const auto it = generated.find(key); it != generated.end()) {
        add(entry.name_path, "\"" + it->first + "\" is the name of " + it->second->token_path +
                                 " (entries of http.bearer_tokens are named token-1, token-2, "
                                 "... in file order); choose another");
      } else if (const auto [first, inserted] = given.emplace(key, &entry); !inserted) {
        add(entry.name_path,
            "same name as " + first->second->name_path + " (names are unique, ignoring case)");
      }
    }
    std::map<std::string, const TokenEntry*> by_token;
    for (const std::vector<TokenEntry>* entries : {&named, &plain}) {
      for (const TokenEntry& entry : *entries) {
        if (!entry.token) continue;
        if (const auto [first, inserted] = by_token.emplace(*entry.token, &entry); !inserted) {
          add(entry.token_path,
              "same token as " + first->second->token_path + " (a token stands for one principal)");
        }
      }
    }
  }

  std::optional<std::string> read_bearer_token(const Json& value, const std::string& path) {
    std::optional<Expanded> text = read_required_string(value, path);
    if (!text) return std::nullopt;
    const std::string& token = text->value;
    const auto is_whitespace = [](char c) {
      return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    };
    if (std::any_of(token.begin(), token.end(), is_whitespace)) {
      add(path, "contains whitespace");
      return std::nullopt;
    }
    const bool visible_ascii = std::all_of(token.begin(), token.end(), [](char c) {
      return static_cast<unsigned char>(c) > 0x20 && static_cast<unsigned char>(c) < 0x7F;
    });
    if (!visible_ascii) {
      add(path, "may contain only visible ASCII characters");
      return std::nullopt;
    }
    if (token.size() < kMinBearerTokenChars) {
      add(path, "shorter than " + std::to_string(kMinBearerTokenChars) +
                    " characters; short tokens are guessable");
      return std::nullopt;
    }
    return std::move(text->value);
  }

  const fs::path& base_dir_;
  const Environment& env_;
  std::vector<std::string>& problems_;
};

}  // namespace

Environment process_environment() {
  return [](std::string_view name) -> std::optional<std::string> {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): nothing in the daemon changes its environment
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

namespace {

enum class Sections { all, audit_only };

LoadResult parse_sections(std::string_view text, const std::filesystem::path& base_dir,
                          const Environment& env, Sections sections) {
  LoadResult result;
  try {
    // On a syntax error the reader has reported it; nothing else is worth saying.
    const std::optional<Json> document = detail::read_json(text, result.problems);
    if (!document) return result;
    const Json& root = *document;
    if (!root.is_object()) {
      result.problems.push_back("expected a JSON object at the top level, got " +
                                std::string(type_phrase(root)));
      return result;
    }
    Loader loader(base_dir, env, result.problems);
    Config config = sections == Sections::all ? loader.load(root) : loader.load_audit_only(root);
    if (result.problems.empty()) result.config = std::move(config);
  } catch (const nlohmann::json::exception& error) {
    // Every access above is type-checked first; reaching this is a bug, reported as a problem
    // rather than thrown so that a start-up never dies on a config file.
    result.config.reset();
    result.problems.push_back("internal error while reading the configuration (json error " +
                              std::to_string(error.id) + ")");
  }
  return result;
}

}  // namespace

LoadResult parse(std::string_view text, const std::filesystem::path& base_dir,
                 const Environment& env) {
  return parse_sections(text, base_dir, env, Sections::all);
}

namespace {

LoadResult load_sections(const std::filesystem::path& file, const Environment& env,
                         Sections sections) {
  std::error_code error;
  const fs::path absolute = fs::absolute(file, error);
  // A relative path is shown with where it was taken from: a client that starts the server
  // usually says nothing of its working directory (Claude Desktop's is /).
  const auto cannot_read = [&](const std::string& why) {
    LoadResult result;
    std::string shown = file.string();
    if (file.is_relative() && !error) {
      shown = absolute.lexically_normal().string() + " (" + file.string() +
              " from the working directory " + fs::current_path(error).string() + ")";
    }
    result.problems.push_back("cannot read " + shown + ": " + why);
    return result;
  };
  if (error) return cannot_read(error.message());

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stream(std::fopen(absolute.c_str(), "rb"),
                                                         &std::fclose);
  if (!stream) return cannot_read(std::error_code(errno, std::generic_category()).message());
  std::string text;
  std::array<char, 65536> buffer{};
  while (true) {
    const std::size_t count = std::fread(buffer.data(), 1, buffer.size(), stream.get());
    text.append(buffer.data(), count);
    if (text.size() > kMaxFileBytes) {
      return cannot_read("larger than " +
                         std::to_string(kMaxFileBytes / (std::size_t{1024} * 1024)) +
                         " MiB, which no config file is");
    }
    if (count < buffer.size()) break;
  }
  if (std::ferror(stream.get())) {
    return cannot_read(std::error_code(errno, std::generic_category()).message());
  }
  return parse_sections(text, absolute.parent_path(), env, sections);
}

}  // namespace

LoadResult load_file(const std::filesystem::path& file, const Environment& env) {
  return load_sections(file, env, Sections::all);
}

LoadResult load_audit_section(const std::filesystem::path& file, const Environment& env) {
  return load_sections(file, env, Sections::audit_only);
}

bool is_acceptable_oauth_url(std::string_view url) {
  const std::size_t separator = url.find("://");
  if (separator == std::string_view::npos) return false;
  const std::size_t path_start = url.find('/', separator + 3);
  const std::string_view origin = url.substr(0, path_start);
  if (url.find_first_of("?#") != std::string_view::npos) return false;
  const auto parsed = net::parse_origin(origin, net::OriginForm::header);
  const auto* ok = std::get_if<net::Origin>(&parsed);
  if (!ok) return false;
  if (ok->scheme == net::Scheme::https) return true;
  return ok->host == "127.0.0.1" || ok->host == "localhost" || ok->host == "[::1]";
}

}  // namespace codemode::config
