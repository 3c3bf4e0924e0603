// Fuzzes the config loader (config::parse): the text an operator writes, with `${NAME}`
// expansion from an injected environment. Relative paths resolve against a scratch directory
// that holds the files the seeds name (openapi.json, ca.pem).
//
// Invariants: parse never throws and never reports an internal error (every JSON access is
// type-checked); a config is returned exactly when there are no problems; problems never carry
// an expanded environment value; an accepted config, written back out (with `$` escaped as
// `$$`), parses again to the same config, so normalisation is idempotent.
#include <unistd.h>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "fuzz/check.h"

namespace {

namespace fs = std::filesystem;
using namespace codemode;
using Json = nlohmann::ordered_json;

constexpr std::string_view kSecret = "S3cr3t-Fuzz-Token-Value";

const std::map<std::string, std::string, std::less<>>& environment_values() {
  static const auto* const kValues =
      new std::map<std::string, std::string, std::less<>>{{"TOKEN", std::string(kSecret)},
                                                          {"PORT", "8788"},
                                                          {"EMPTY", ""},
                                                          {"ORIGIN", "http://127.0.0.1:8788"},
                                                          {"BRACES", "${TOKEN}$$"}};
  return *kValues;
}

const config::Environment& environment() {
  static const config::Environment kEnv = [](std::string_view name) -> std::optional<std::string> {
    const auto& values = environment_values();
    const auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
  return kEnv;
}

// A scratch directory of this process's own holding the files the seeds name; removed when
// libFuzzer exits normally, left behind after a crash.
fs::path make_base_dir() {
  fs::path path = fs::temp_directory_path() / ("codemode-config-fuzz-" + std::to_string(getpid()));
  fs::create_directories(path / "specs");
  std::ofstream(path / "openapi.json") << R"({"openapi": "3.0.3", "paths": {}})";
  std::ofstream(path / "specs" / "api.yaml") << "openapi: 3.0.3\npaths: {}\n";
  std::ofstream(path / "ca.pem") << "not really a certificate\n";
  return path;
}

const fs::path& base_dir() {
  static const fs::path* const kDir = new fs::path(make_base_dir());
  return *kDir;
}

void remove_base_dir() {
  std::error_code ignored;
  fs::remove_all(base_dir(), ignored);
}

// Written so that parse() reads it back without expanding anything.
std::string escaped(std::string_view text) {
  std::string out;
  for (const char c : text) {
    out += c;
    if (c == '$') out += '$';
  }
  return out;
}

// One API's own keys, as the single-API form's top level or an entry of `apis` writes them.
Json api_json(const config::Api& api) {
  Json root = Json::object();
  root["openapi"] = escaped(api.openapi.string());
  Json upstreams = Json::array();
  for (const auto& upstream : api.upstreams) {
    Json headers = Json::object();
    for (const auto& [name, value] : upstream.headers) headers[name] = escaped(value);
    upstreams.push_back({{"origin", escaped(upstream.origin)}, {"headers", headers}});
  }
  root["upstreams"] = upstreams;
  Json policy = Json::object();
  policy["operations"] = api.policy.operations == config::Policy::Operations::spec ? "spec" : "any";
  if (!api.policy.methods.empty()) policy["methods"] = api.policy.methods;
  root["policy"] = policy;
  const config::Limits& limits = api.limits;
  root["limits"] = {{"code_chars", limits.code_chars},
                    {"result_chars", limits.result_chars},
                    {"cpu_ms", limits.cpu_ms},
                    {"wall_ms", limits.wall_ms},
                    {"heap_mb", limits.heap_mb},
                    {"subrequests", limits.subrequests},
                    {"response_bytes", limits.response_bytes}};
  return root;
}

Json to_json(const config::Config& config) {
  Json root = Json::object();
  if (config.apis.size() == 1 && config.apis[0].name == config::kDefaultApiName) {
    root = api_json(config.apis[0]);
  } else {
    Json apis = Json::object();
    for (const auto& api : config.apis) apis[api.name] = api_json(api);
    root["apis"] = apis;
  }
  if (config.ca_file) root["ca_file"] = escaped(config.ca_file->string());
  Json origins = Json::array();
  for (const auto& origin : config.http.allowed_origins) origins.push_back(escaped(origin));
  // Every token written back with its name, generated ones included: the same list reads back.
  Json tokens = Json::array();
  for (const auto& token : config.http.bearer_tokens) {
    tokens.push_back({{"name", escaped(token.name)}, {"token", escaped(token.token)}});
  }
  root["http"] = {{"allowed_origins", origins}, {"tokens", tokens}};
  root["sandbox"] = {{"jitless", config.sandbox.jitless}};
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  base_dir();
  (void)std::atexit(remove_base_dir);  // if it fails, the directory stays, as after a crash
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const config::LoadResult result = config::parse(text, base_dir(), environment());

  FUZZ_CHECK(result.config.has_value() == result.problems.empty(),
             "a config comes back exactly when nothing is wrong");
  const bool secret_in_input = text.find(kSecret) != std::string_view::npos;
  for (const auto& problem : result.problems) {
    FUZZ_CHECK(!problem.empty() && problem.find('\n') == std::string::npos,
               "a problem is one non-empty line");
    // The loader's catch-all; a problem about a path reads "path: what".
    FUZZ_CHECK(problem.rfind("internal error while reading", 0) != 0 ||
                   problem.find(": ") != std::string::npos,
               "every JSON access in the loader is type-checked");
    FUZZ_CHECK(secret_in_input || problem.find(kSecret) == std::string::npos,
               "problems never show an expanded environment value");
  }
  if (!result.config) return 0;

  const std::string written =
      to_json(*result.config).dump(2, ' ', false, Json::error_handler_t::strict);
  const config::LoadResult again = config::parse(written, base_dir(), environment());
  if (!again.config) {
    for (const auto& problem : again.problems)
      (void)std::fprintf(stderr, "reparse: %s\n", problem.c_str());
  }
  FUZZ_CHECK(again.config.has_value(), "an accepted config, written back out, is accepted");
  FUZZ_CHECK(to_json(*again.config) == to_json(*result.config),
             "an accepted config, written back out, reads back the same");
  return 0;
}
