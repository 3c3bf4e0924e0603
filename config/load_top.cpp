// The top level of the config file, and its small sections: limits, sandbox, tracing. The
// other sections each have a file of their own (config/loader.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/loader.h"
#include "net/ascii.h"

namespace codemode::config::detail {
namespace {

using net::lower;

constexpr std::array<std::string_view, 12> kTopKeys = {"openapi", "upstreams",  "ca_file", "policy",
                                                       "limits",  "http",       "sandbox", "audit",
                                                       "tracing", "principals", "name",    "apis"};
// What each API has of its own: the single-API form's top level, or an entry of `apis`.
constexpr std::array<std::string_view, 5> kApiKeys = {"openapi", "upstreams", "policy", "limits",
                                                      "principals"};
// What every API shares, set once at the top level.
constexpr std::array<std::string_view, 6> kSharedKeys = {"ca_file", "http",    "sandbox",
                                                         "audit",   "tracing", "name"};
constexpr std::array<std::string_view, 4> kTracingKeys = {"otlp", "service_name", "headers",
                                                          "queue"};
constexpr std::array<std::string_view, 8> kSandboxKeys = {
    "jitless",      "process_calls",   "max_processes",   "spare_processes",
    "idle_seconds", "principal_calls", "principal_queue", "memory_mb"};

// The sandbox section's integers, each with its range (config.h).
struct SandboxSpec {
  std::string_view name;
  std::uint32_t SandboxSettings::*field;
  Range range;
};

constexpr std::array<SandboxSpec, 7> kSandboxSpecs = {{
    {"process_calls", &SandboxSettings::process_calls, SandboxSettings::kProcessCallsRange},
    {"max_processes", &SandboxSettings::max_processes, SandboxSettings::kMaxProcessesRange},
    {"spare_processes", &SandboxSettings::spare_processes, SandboxSettings::kSpareProcessesRange},
    {"idle_seconds", &SandboxSettings::idle_seconds, SandboxSettings::kIdleSecondsRange},
    {"principal_calls", &SandboxSettings::principal_calls, SandboxSettings::kPrincipalCallsRange},
    {"principal_queue", &SandboxSettings::principal_queue, SandboxSettings::kPrincipalQueueRange},
    {"memory_mb", &SandboxSettings::memory_mb, SandboxSettings::kMemoryMbRange},
}};

// The limits, each with its range (config.h).
struct LimitSpec {
  std::string_view name;
  std::uint32_t Limits::*field;
  Range range;
};

constexpr std::array<LimitSpec, 7> kLimitSpecs = {{
    {"code_chars", &Limits::code_chars, Limits::kCodeCharsRange},
    {"result_chars", &Limits::result_chars, Limits::kResultCharsRange},
    {"cpu_ms", &Limits::cpu_ms, Limits::kCpuMsRange},
    {"wall_ms", &Limits::wall_ms, Limits::kWallMsRange},
    {"heap_mb", &Limits::heap_mb, Limits::kHeapMbRange},
    {"subrequests", &Limits::subrequests, Limits::kSubrequestsRange},
    {"response_bytes", &Limits::response_bytes, Limits::kResponseBytesRange},
}};

}  // namespace

// Only the "audit" section (load_audit_section).
Config Loader::load_audit_only(const Json& root) {
  Config config;
  if (const auto it = root.find("audit"); it != root.end()) config.audit = load_audit(*it);
  return config;
}

Config Loader::load(const Json& root) {
  Config config;
  Api single;
  single.name = std::string(kDefaultApiName);
  // The single-API form's keys beside `apis` are a problem: two places for one setting would
  // leave the reader guessing which one counts.
  const bool several = root.contains("apis");
  bool saw_openapi = false;
  for (const auto& [key, value] : root.items()) {
    if (std::find(kApiKeys.begin(), kApiKeys.end(), key) != kApiKeys.end()) {
      if (several) {
        add(key, "cannot stand beside \"apis\": with several APIs each has its own (apis.NAME." +
                     key + ")");
        continue;
      }
      saw_openapi |= key == "openapi";
      load_api_key(key, value, single);
    } else if (key == "apis") {
      load_apis(value, config);
    } else if (key == "ca_file") {
      if (auto path = load_file_path(value, key)) config.ca_file = std::move(*path);
    } else if (key == "http") {
      load_http(value, config.http);
    } else if (key == "sandbox") {
      load_sandbox(value, config.sandbox);
    } else if (key == "audit") {
      config.audit = load_audit(value);
    } else if (key == "tracing") {
      config.tracing = load_tracing(value);
    } else if (key == "name") {
      if (auto text = read_required_string(value, key)) {
        const bool word = std::all_of(text->value.begin(), text->value.end(), [](char c) {
          return net::is_alnum(c) || c == '-' || c == '_' || c == '.';
        });
        if (!word || text->value.empty() || text->value.size() > Config::kMaxNameChars) {
          add(key, "must be 1 to " + std::to_string(Config::kMaxNameChars) +
                       " characters of letters, digits, '-', '_' and '.'");
        } else {
          config.name = std::move(text->value);
        }
      }
    } else {
      unknown_key("", key, kTopKeys);
    }
  }
  if (several) {
    // The checks across sections, once every section (http.oauth among them) is read.
    for (const Api& api : config.apis) {
      prefix_ = child_path("apis", api.name) + ".";
      check_api(config, api);
    }
    prefix_.clear();
    return config;
  }
  if (!saw_openapi) {
    add("openapi",
        "required key is missing (the path of the OpenAPI document; or \"apis\" for several)");
  }
  check_api(config, single);
  config.apis.push_back(std::move(single));
  return config;
}

// `apis`: one API per key, each read as the single-API form's top level is, its problems under
// `apis.NAME.`.
void Loader::load_apis(const Json& value, Config& config) {
  if (!expect_object(value, "apis")) return;
  if (value.empty()) add("apis", "must name at least one API");
  for (const auto& [name, entry] : value.items()) {
    const std::string path = child_path("apis", name);
    const bool named = !name.empty() && name.size() <= Api::kMaxNameChars &&
                       std::all_of(name.begin(), name.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || net::is_digit(c) || c == '_' || c == '-';
                       });
    if (!named) {
      add(path, "an API's name is 1 to " + std::to_string(Api::kMaxNameChars) +
                    " characters of a-z, 0-9, '_' and '-' (its path is /mcp/NAME)");
    }
    if (!expect_object(entry, path)) continue;
    Api api;
    api.name = name;
    prefix_ = path + ".";
    bool saw_openapi = false;
    for (const auto& [key, field] : entry.items()) {
      if (std::find(kApiKeys.begin(), kApiKeys.end(), key) != kApiKeys.end()) {
        saw_openapi |= key == "openapi";
        load_api_key(key, field, api);
      } else if (std::find(kSharedKeys.begin(), kSharedKeys.end(), key) != kSharedKeys.end()) {
        add(key, "is shared by every API: set it once, at the top level");
      } else {
        unknown_key("", key, kApiKeys);
      }
    }
    if (!saw_openapi) add("openapi", "required key is missing (the path of the OpenAPI document)");
    prefix_.clear();
    if (named) config.apis.push_back(std::move(api));
  }
}

// One of an API's own keys (kApiKeys), at the top level or in `apis.NAME`.
void Loader::load_api_key(std::string_view key, const Json& value, Api& api) {
  if (key == "openapi") {
    if (auto path = load_file_path(value, key)) api.openapi = std::move(*path);
  } else if (key == "upstreams") {
    load_upstreams(value, api.upstreams);
  } else if (key == "policy") {
    load_policy(value, api.policy);
  } else if (key == "limits") {
    load_limits(value, api.limits);
  } else if (key == "principals") {
    load_principals(value, api.principals);
  }
}

// The checks across an API's sections, once they are all read.
void Loader::check_api(const Config& config, const Api& api) {
  check_principal_origins(api);
  check_token_exchanges(config, api);
}

void Loader::load_limits(const Json& value, Limits& limits) {
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
    const std::optional<std::uint32_t> number = read_integer(field, path, spec->range);
    if (!number) continue;
    limits.*(spec->field) = *number;
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

void Loader::load_sandbox(const Json& value, SandboxSettings& sandbox) {
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
      if (auto number = read_integer(field, path, spec->range)) {
        sandbox.*(spec->field) = *number;
      }
    } else {
      unknown_key("sandbox", key, kSandboxKeys);
    }
  }
}

// The tracing section: where spans go and what they are sent with.
std::optional<Tracing> Loader::load_tracing(const Json& value) {
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
        if (!printable || text->value.size() > Tracing::kMaxServiceNameChars) {
          add(path, "must be 1 to " + std::to_string(Tracing::kMaxServiceNameChars) +
                        " printable ASCII characters");
        } else {
          tracing.service_name = std::move(text->value);
        }
      }
    } else if (key == "headers") {
      load_headers(field, path, tracing.headers);
    } else if (key == "queue") {
      read_u32(field, path, Tracing::kQueueRange, tracing.queue);
    } else {
      unknown_key("tracing", key, kTracingKeys);
    }
  }
  if (!saw_otlp) add("tracing.otlp", "required key is missing (the collector's traces URL)");
  return tracing;
}

}  // namespace codemode::config::detail
