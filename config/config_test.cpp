#include "config/config.h"

#include <cstdlib>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

namespace codemode::config {

// How Catch2 shows a token in a failed check (found by argument-dependent lookup); a test's
// tokens are no secret.
std::ostream& operator<<(std::ostream& out, const BearerToken& token) {
  return out << "{" << token.name << ", " << token.token << "}";
}

namespace {

namespace fs = std::filesystem;
using Problems = std::vector<std::string>;
using Headers = std::vector<std::pair<std::string, std::string>>;
using Tokens = std::vector<BearerToken>;

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::random_device random;
    path_ = fs::temp_directory_path() /
            ("codemode-config-test-" + std::to_string(random()) + std::to_string(random()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const fs::path& path() const { return path_; }

  fs::path write(const fs::path& relative, std::string_view text) const {
    const fs::path file = path_ / relative;
    fs::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }

 private:
  fs::path path_;
};

Environment env_of(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](std::string_view name) -> std::optional<std::string> {
    const auto it = variables.find(std::string(name));
    if (it == variables.end()) return std::nullopt;
    return it->second;
  };
}

// A directory holding `openapi.json`, so configs can say {"openapi": "openapi.json"}.
class Workspace {
 public:
  Workspace() { dir_.write("openapi.json", R"({"openapi": "3.0.3", "paths": {}})"); }

  const fs::path& dir() const { return dir_.path(); }
  const TempDir& temp() const { return dir_; }

  LoadResult parse(std::string_view text, std::map<std::string, std::string> env = {}) const {
    return config::parse(text, dir_.path(), env_of(std::move(env)));
  }

  Problems problems(std::string_view text, std::map<std::string, std::string> env = {}) const {
    LoadResult result = parse(text, std::move(env));
    CHECK(result.config.has_value() == result.problems.empty());
    return result.problems;
  }

  // Parses text that must load without problems.
  Config load(std::string_view text, std::map<std::string, std::string> env = {}) const {
    LoadResult result = parse(text, std::move(env));
    INFO("text: " << text);
    REQUIRE(result.problems == Problems{});
    REQUIRE(result.config.has_value());
    return std::move(*result.config);
  }

 private:
  TempDir dir_;
};

// A config whose only upstream has the given origin (a JSON string literal's contents).
std::string with_origin(std::string_view origin) {
  return R"({"openapi": "openapi.json", "upstreams": [{"origin": ")" + std::string(origin) +
         R"("}]})";
}

const std::vector<std::string> kDefaultAllowedOrigins = {
    "http://localhost", "http://localhost:6274", "http://127.0.0.1:6274"};

// What an upstream origin with a path is told.
constexpr std::string_view kBasePathHint =
    "; an API served under a path takes it as \"base_path\", e.g. {\"origin\": "
    "\"https://slack.com\", \"base_path\": \"/api\"}";

std::string with_headers(std::string_view headers_object) {
  return R"({"openapi": "openapi.json", "upstreams": [{"origin": "http://api.test", "headers": )" +
         std::string(headers_object) + "}]}";
}

std::string with_http(std::string_view http_object) {
  return R"({"openapi": "openapi.json", "http": )" + std::string(http_object) + "}";
}

std::string with_limits(std::string_view limits_object) {
  return R"({"openapi": "openapi.json", "limits": )" + std::string(limits_object) + "}";
}

void check_default_limits(const Limits& limits) {
  CHECK(limits.code_chars == 20000);
  CHECK(limits.result_chars == 12000);
  CHECK(limits.cpu_ms == 50);
  CHECK(limits.wall_ms == 10000);
  CHECK(limits.heap_mb == 64);
  CHECK(limits.subrequests == 10);
  CHECK(limits.response_bytes == 1048576);
}

// ---------------------------------------------------------------------------------------------
// Valid files and defaults.

TEST_CASE("a minimal config takes every default", "[config]") {
  const Workspace workspace;
  const Config config = workspace.load(R"({"openapi": "openapi.json"})");
  CHECK(config.apis.at(0).openapi == workspace.dir() / "openapi.json");
  CHECK(config.apis.at(0).upstreams.empty());
  check_default_limits(config.apis.at(0).limits);
  CHECK(config.http.allowed_origins == kDefaultAllowedOrigins);
  CHECK(config.http.bearer_tokens.empty());
}

TEST_CASE("a full config with ${ENV} references loads as written", "[config]") {
  const TempDir dir;
  dir.write("fixtures/markethub/openapi.json", "{}");
  const fs::path file = dir.write("conf/codemode.json", R"({
  "openapi": "../fixtures/markethub/openapi.json",
  "upstreams": [ { "origin": "http://127.0.0.1:8788",
                   "headers": { "Authorization": "Bearer ${MARKETHUB_TOKEN}" } } ],
  "limits": { "code_chars": 20000, "result_chars": 12000, "cpu_ms": 50, "wall_ms": 10000,
              "heap_mb": 64, "subrequests": 10, "response_bytes": 1048576 },
  "http": { "allowed_origins": ["http://localhost"], "bearer_tokens": ["${CODEMODE_TOKEN}"] }
})");
  const LoadResult result =
      load_file(file, env_of({{"MARKETHUB_TOKEN", "mh-demo-token"},
                              {"CODEMODE_TOKEN", "codemode-token-0123456789"}}));
  REQUIRE(result.problems == Problems{});
  REQUIRE(result.config.has_value());
  const Config& config = *result.config;
  CHECK(config.apis.at(0).openapi == dir.path() / "fixtures/markethub/openapi.json");
  REQUIRE(config.apis.at(0).upstreams.size() == 1);
  CHECK(config.apis.at(0).upstreams[0].origin == "http://127.0.0.1:8788");
  CHECK(config.apis.at(0).upstreams[0].headers ==
        Headers{{"Authorization", "Bearer mh-demo-token"}});
  check_default_limits(config.apis.at(0).limits);
  CHECK(config.http.allowed_origins == std::vector<std::string>{"http://localhost"});
  CHECK(config.http.bearer_tokens == Tokens{{"token-1", "codemode-token-0123456789"}});
}

TEST_CASE("present keys replace defaults and absent ones keep them", "[config][limits]") {
  const Workspace workspace;

  const Config partial = workspace.load(with_limits(R"({"cpu_ms": 100, "subrequests": 0})"));
  CHECK(partial.apis.at(0).limits.cpu_ms == 100);
  CHECK(partial.apis.at(0).limits.subrequests == 0);
  CHECK(partial.apis.at(0).limits.wall_ms == 10000);
  CHECK(partial.apis.at(0).limits.heap_mb == 64);

  const Config tokens_only = workspace.load(with_http(R"({"bearer_tokens": [], "tokens": []})"));
  CHECK(tokens_only.http.allowed_origins == kDefaultAllowedOrigins);
  CHECK(tokens_only.http.bearer_tokens.empty());

  const Config no_origins = workspace.load(with_http(R"({"allowed_origins": []})"));
  CHECK(no_origins.http.allowed_origins.empty());

  const Config no_upstreams = workspace.load(R"({"openapi": "openapi.json", "upstreams": []})");
  CHECK(no_upstreams.apis.at(0).upstreams.empty());
}

TEST_CASE("limits accept both ends of their ranges", "[config][limits]") {
  const Workspace workspace;
  const Config low = workspace.load(with_limits(
      R"({"code_chars": 1, "result_chars": 100, "cpu_ms": 1, "wall_ms": 10, "heap_mb": 8,
          "subrequests": 0, "response_bytes": 1})"));
  CHECK(low.apis.at(0).limits.code_chars == 1);
  CHECK(low.apis.at(0).limits.result_chars == 100);
  CHECK(low.apis.at(0).limits.cpu_ms == 1);
  CHECK(low.apis.at(0).limits.wall_ms == 10);
  CHECK(low.apis.at(0).limits.heap_mb == 8);
  CHECK(low.apis.at(0).limits.subrequests == 0);
  CHECK(low.apis.at(0).limits.response_bytes == 1);

  const Config high = workspace.load(with_limits(
      R"({"code_chars": 1000000, "result_chars": 10000000, "cpu_ms": 600000,
          "wall_ms": 3600000, "heap_mb": 4096, "subrequests": 10000,
          "response_bytes": 1073741824})"));
  CHECK(high.apis.at(0).limits.code_chars == 1000000);
  CHECK(high.apis.at(0).limits.result_chars == 10000000);
  CHECK(high.apis.at(0).limits.cpu_ms == 600000);
  CHECK(high.apis.at(0).limits.wall_ms == 3600000);
  CHECK(high.apis.at(0).limits.heap_mb == 4096);
  CHECK(high.apis.at(0).limits.subrequests == 10000);
  CHECK(high.apis.at(0).limits.response_bytes == 1073741824);

  const Config equal = workspace.load(with_limits(R"({"cpu_ms": 500, "wall_ms": 500})"));
  CHECK(equal.apis.at(0).limits.cpu_ms == 500);
}

// ---------------------------------------------------------------------------------------------
// Limits problems.

TEST_CASE("limits outside their ranges are problems", "[config][limits]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_limits(
            R"({"code_chars": 0, "result_chars": 99, "cpu_ms": 600001, "wall_ms": 9,
                "heap_mb": 4097, "subrequests": 10001, "response_bytes": 1073741825})")) ==
        Problems{
            "limits.code_chars: 0 is out of range 1..1000000",
            "limits.result_chars: 99 is out of range 100..10000000",
            "limits.cpu_ms: 600001 is out of range 1..600000",
            "limits.wall_ms: 9 is out of range 10..3600000",
            "limits.heap_mb: 4097 is out of range 8..4096",
            "limits.subrequests: 10001 is out of range 0..10000",
            "limits.response_bytes: 1073741825 is out of range 1..1073741824",
        });
}

TEST_CASE("limits must be integers", "[config][limits]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_limits(
            R"({"cpu_ms": 50.0, "wall_ms": "10000", "heap_mb": -64, "subrequests": true,
                "code_chars": null, "response_bytes": 1e3,
                "result_chars": 99999999999999999999})")) ==
        Problems{
            "limits.cpu_ms: expected an integer, got a floating-point number",
            "limits.wall_ms: expected an integer, got a string",
            "limits.heap_mb: -64 is out of range 8..4096",
            "limits.subrequests: expected an integer, got a boolean",
            "limits.code_chars: expected an integer, got null",
            "limits.response_bytes: expected an integer, got a floating-point number",
            "limits.result_chars: expected an integer, got a floating-point number",
        });
  CHECK(workspace.problems(with_limits(R"({"cpu_ms": "${CPU_MS}"})"), {{"CPU_MS", "50"}}) ==
        Problems{"limits.cpu_ms: expected an integer, got a string"});
}

TEST_CASE("cpu_ms may not exceed wall_ms", "[config][limits]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_limits(R"({"cpu_ms": 20000, "wall_ms": 10000})")) ==
        Problems{"limits.cpu_ms: 20000 exceeds limits.wall_ms (10000); CPU time cannot outlast "
                 "the wall-clock deadline"});
  // Against the default wall_ms too.
  CHECK(workspace.problems(with_limits(R"({"cpu_ms": 10001})")) ==
        Problems{"limits.cpu_ms: 10001 exceeds limits.wall_ms (10000); CPU time cannot outlast "
                 "the wall-clock deadline"});
  // A wall_ms that is itself wrong is not compared.
  CHECK(workspace.problems(with_limits(R"({"cpu_ms": 100, "wall_ms": 5})")) ==
        Problems{"limits.wall_ms: 5 is out of range 10..3600000"});
}

// ---------------------------------------------------------------------------------------------
// Keys and types.

TEST_CASE("unknown keys are problems, with a suggestion when one is close", "[config][keys]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_limits(R"({"cpu_msec": 10})")) ==
        Problems{R"(limits.cpu_msec: unknown key (did you mean "cpu_ms"?))"});
  CHECK(workspace.problems(with_limits(R"({"CPU_MS": 10})")) ==
        Problems{R"(limits.CPU_MS: unknown key (did you mean "cpu_ms"?))"});
  CHECK(workspace.problems(with_limits(R"({"heap_bm": 10})")) ==
        Problems{R"(limits.heap_bm: unknown key (did you mean "heap_mb"?))"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "limit": {}})") ==
        Problems{R"(limit: unknown key (did you mean "limits"?))"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json",
                               "upstreams": [{"origin": "http://a", "header": {}}]})") ==
        Problems{R"(upstreams[0].header: unknown key (did you mean "headers"?))"});
  CHECK(
      workspace.problems(with_http(R"({"bearer_token": [], "allowed_origin": [], "token": []})")) ==
      Problems{R"(http.bearer_token: unknown key (did you mean "bearer_tokens"?))",
               R"(http.allowed_origin: unknown key (did you mean "allowed_origins"?))",
               R"(http.token: unknown key (did you mean "tokens"?))"});
}

TEST_CASE("unknown keys far from any known key list the known keys", "[config][keys]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_limits(R"({"timeout": 10})")) ==
        Problems{"limits.timeout: unknown key (known keys: code_chars, result_chars, cpu_ms, "
                 "wall_ms, heap_mb, subrequests, response_bytes)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "servers": []})") ==
        Problems{"servers: unknown key (known keys: openapi, upstreams, ca_file, policy, limits, "
                 "http, sandbox, audit, tracing, principals, name, apis)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "nmae": "stripe"})") ==
        Problems{R"(nmae: unknown key (did you mean "name"?))"});
  // Keys that are not plain words are quoted, so a problem stays one line.
  CHECK(
      workspace.problems(R"({"openapi": "openapi.json", "a b": 1, "x\ny": 2})") ==
      Problems{
          R"(["a b"]: unknown key (known keys: openapi, upstreams, ca_file, policy, limits, http, sandbox, audit, tracing, principals, name, apis))",
          R"(["x\ny"]: unknown key (known keys: openapi, upstreams, ca_file, policy, limits, http, sandbox, audit, tracing, principals, name, apis))"});
}

TEST_CASE("duplicate keys are problems", "[config][keys]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_limits(R"({"cpu_ms": 10, "cpu_ms": 20})")) ==
        Problems{"limits.cpu_ms: duplicate key (a later value would silently replace an earlier "
                 "one)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "upstreams": [
          {"origin": "http://a"}, {"origin": "http://b", "origin": "http://c"}]})") ==
        Problems{"upstreams[1].origin: duplicate key (a later value would silently replace an "
                 "earlier one)"});
}

TEST_CASE("a config nested past 64 levels is one problem, found before the tree grows",
          "[config][keys][adversarial]") {
  const Workspace workspace;
  // 100,000 levels: each open level used to keep its own path string, so memory grew with the
  // square of the depth.
  std::string deep = R"({"openapi": "openapi.json", "x": )";
  for (int i = 0; i < 100'000; ++i) deep += "[";
  const Problems problems = workspace.problems(deep);
  std::string path = "x";
  for (int i = 0; i < 63; ++i) path += "[0]";
  CHECK(problems == Problems{path + ": nested deeper than 64 levels"});
}

TEST_CASE("values of the wrong type name the path and the expected type", "[config][keys]") {
  const Workspace workspace;
  CHECK(workspace.problems(R"({"openapi": 5, "upstreams": {}, "limits": [], "http": "x"})") ==
        Problems{
            "openapi: expected a string, got an integer",
            "upstreams: expected an array, got an object",
            "limits: expected an object, got an array",
            "http: expected an object, got a string",
        });
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "upstreams": ["http://a",
          {"origin": 8788}, {"origin": "http://b", "headers": ["Authorization"]},
          {"origin": "http://c", "headers": {"X-Count": 3}}]})") ==
        Problems{
            "upstreams[0]: expected an object, got a string",
            "upstreams[1].origin: expected a string, got an integer",
            "upstreams[2].headers: expected an object, got an array",
            "upstreams[3].headers.X-Count: expected a string, got an integer",
        });
  CHECK(workspace.problems(
            with_http(R"({"allowed_origins": [null], "bearer_tokens": "x", "tokens": {}})")) ==
        Problems{
            "http.allowed_origins[0]: expected a string, got null",
            "http.bearer_tokens: expected an array, got a string",
            "http.tokens: expected an array, got an object",
        });
}

TEST_CASE("required keys that are missing are problems", "[config][keys]") {
  const Workspace workspace;
  CHECK(workspace.problems("{}") ==
        Problems{"openapi: required key is missing (the path of the OpenAPI document; or \"apis\" "
                 "for several)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "upstreams": [{"headers": {}}]})") ==
        Problems{"upstreams[0].origin: required key is missing"});
}

TEST_CASE("a top level that is not an object is one problem", "[config][syntax]") {
  const Workspace workspace;
  CHECK(workspace.problems("[]") ==
        Problems{"expected a JSON object at the top level, got an array"});
  CHECK(workspace.problems(R"("openapi.json")") ==
        Problems{"expected a JSON object at the top level, got a string"});
  CHECK(workspace.problems("null") ==
        Problems{"expected a JSON object at the top level, got null"});
}

TEST_CASE("a syntax error is one problem with line and column", "[config][syntax]") {
  const Workspace workspace;
  CHECK(workspace.problems("{\n  \"openapi\": \"openapi.json\",\n"
                           "  \"limits\": {\"cpu_ms\": 5,}\n}") ==
        Problems{"line 3, column 26: syntax error: unexpected '}'; expected string literal"});
  CHECK(workspace.problems(R"({"openapi": tru})") ==
        Problems{"line 1, column 16: syntax error: invalid literal"});
  CHECK(workspace.problems("") ==
        Problems{"line 1, column 1: syntax error: unexpected end of input; expected '[', '{', or "
                 "a literal"});
  // Columns count characters, not bytes.
  CHECK(workspace.problems("{\"\xC3\xBC\": 1 x}") ==
        Problems{"line 1, column 9: syntax error: invalid literal; expected '}'"});
  CHECK(workspace.problems(with_limits(R"({"cpu_ms": 1e999})")) ==
        Problems{"line 1, column 54: number out of range"});
  // Other problems in the text are not reported alongside a syntax error.
  CHECK(workspace.problems("{\"limitz\": {},\n\"openapi\": 5,,}") ==
        Problems{"line 2, column 14: syntax error: unexpected ','; expected string literal"});
}

// ---------------------------------------------------------------------------------------------
// Environment expansion.

TEST_CASE("${NAME} and ${NAME:-fallback} expand in every string value", "[config][env]") {
  const Workspace workspace;
  const std::string text = R"({
    "openapi": "${SPEC_DIR}/openapi.json",
    "upstreams": [{"origin": "http://127.0.0.1:${PORT:-8788}",
                   "headers": {"Authorization": "Bearer ${TOKEN}",
                               "X-Both": "${A}-${B}",
                               "X-Empty-Falls-Back": "${EMPTY:-fallback}",
                               "X-Set-Wins": "${A:-unused}"}}],
    "http": {"allowed_origins": ["${UI_ORIGIN:-http://localhost:5173}"],
             "bearer_tokens": ["${CODEMODE_TOKEN}"]}
  })";
  const Config config = workspace.load(text, {{"SPEC_DIR", workspace.dir().string()},
                                              {"TOKEN", "t0ken"},
                                              {"A", "alpha"},
                                              {"B", "beta"},
                                              {"EMPTY", ""},
                                              {"CODEMODE_TOKEN", "abcdefghijklmnopqrstuvwxyz"}});
  CHECK(config.apis.at(0).openapi == workspace.dir() / "openapi.json");
  REQUIRE(config.apis.at(0).upstreams.size() == 1);
  CHECK(config.apis.at(0).upstreams[0].origin == "http://127.0.0.1:8788");
  CHECK(config.apis.at(0).upstreams[0].headers == Headers{{"Authorization", "Bearer t0ken"},
                                                          {"X-Both", "alpha-beta"},
                                                          {"X-Empty-Falls-Back", "fallback"},
                                                          {"X-Set-Wins", "alpha"}});
  CHECK(config.http.allowed_origins == std::vector<std::string>{"http://localhost:5173"});
  CHECK(config.http.bearer_tokens == Tokens{{"token-1", "abcdefghijklmnopqrstuvwxyz"}});

  const Config port_set =
      workspace.load(with_origin("http://127.0.0.1:${PORT:-8788}"), {{"PORT", "9000"}});
  CHECK(port_set.apis.at(0).upstreams[0].origin == "http://127.0.0.1:9000");
}

TEST_CASE("$$ is a literal $, and a lone $ stays literal", "[config][env]") {
  const Workspace workspace;
  const Config config = workspace.load(with_headers(R"({
      "X-Dollars": "a$$b", "X-Escaped": "$${NOT_EXPANDED}", "X-Price": "cost $5",
      "X-End": "end$", "X-Not-Again": "${INDIRECT}", "X-Fallback-Literal": "${NO:-$$x}",
      "X-$$": "key"})"),
                                       {{"INDIRECT", "${A}"}, {"A", "alpha"}});
  CHECK(config.apis.at(0).upstreams[0].headers == Headers{{"X-Dollars", "a$b"},
                                                          {"X-Escaped", "${NOT_EXPANDED}"},
                                                          {"X-Price", "cost $5"},
                                                          {"X-End", "end$"},
                                                          {"X-Not-Again", "${A}"},
                                                          {"X-Fallback-Literal", "$$x"},
                                                          {"X-$$", "key"}});
}

TEST_CASE("an unset variable without a fallback is a problem", "[config][env]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_headers(R"({"Authorization": "Bearer ${MARKETHUB_TOKEN}"})")) ==
        Problems{
            "upstreams[0].headers.Authorization: environment variable MARKETHUB_TOKEN is not set"});
  // Every unset variable in a value is named.
  CHECK(workspace.problems(with_headers(R"({"X-Pair": "${USER_NAME}:${PASSWORD}"})")) ==
        Problems{"upstreams[0].headers.X-Pair: environment variable USER_NAME is not set",
                 "upstreams[0].headers.X-Pair: environment variable PASSWORD is not set"});
}

TEST_CASE("malformed references are problems", "[config][env]") {
  const Workspace workspace;
  const std::string invalid =
      " (expected ${NAME} or ${NAME:-fallback}, NAME matching "
      "[A-Za-z_][A-Za-z0-9_]*)";
  CHECK(workspace.problems(with_headers(R"({"X-A": "${1ABC}", "X-B": "x${}", "X-C": "${A-B}",
                                             "X-D": "${A:B}", "X-E": "${A B}"})")) ==
        Problems{
            "upstreams[0].headers.X-A: invalid variable reference at character 1" + invalid,
            "upstreams[0].headers.X-B: invalid variable reference at character 2" + invalid,
            "upstreams[0].headers.X-C: invalid variable reference at character 1" + invalid,
            "upstreams[0].headers.X-D: invalid variable reference at character 1" + invalid,
            "upstreams[0].headers.X-E: invalid variable reference at character 1" + invalid,
        });
  CHECK(workspace.problems(with_headers(R"({"Authorization": "Bearer ${TOKEN"})")) ==
        Problems{R"(upstreams[0].headers.Authorization: unterminated "${" at character 8)"});
  CHECK(workspace.problems(with_origin("http://${HOST:-localhost")) ==
        Problems{R"(upstreams[0].origin: unterminated "${" at character 8)"});
}

TEST_CASE("a required value that expands to nothing is a problem", "[config][env]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_http(R"({"bearer_tokens": ["${CODEMODE_TOKEN}"]})"),
                           {{"CODEMODE_TOKEN", ""}}) ==
        Problems{"http.bearer_tokens[0]: is empty after environment variable expansion"});
  CHECK(workspace.problems(with_origin("${ORIGIN:-}")) ==
        Problems{"upstreams[0].origin: is empty after environment variable expansion"});
  CHECK(workspace.problems(R"({"openapi": "${SPEC}"})", {{"SPEC", ""}}) ==
        Problems{"openapi: is empty after environment variable expansion"});
  CHECK(workspace.problems(with_headers(R"({"Authorization": "${TOKEN}"})"), {{"TOKEN", ""}}) ==
        Problems{"upstreams[0].headers.Authorization: is empty after environment variable "
                 "expansion"});
  CHECK(workspace.problems(R"({"openapi": ""})") == Problems{"openapi: must not be empty"});
}

TEST_CASE("problem messages never contain expanded values", "[config][env][secrets]") {
  const Workspace workspace;
  const std::string secret = "sk_live_9f8e7d6c5b4a39281706";
  const std::string short_secret = "s3cr3t-shrt";
  const std::string text = R"({
    "openapi": "${SPEC}",
    "upstreams": [
      {"origin": "${ORIGIN_WITH_PATH}",
       "headers": {"Authorization": "Bearer ${SMUGGLER}", "X-Key": "${TRAILING}",
                   "X-Other": "${NUL}"}},
      {"origin": "${ORIGIN_FTP}"}
    ],
    "http": {"allowed_origins": ["${UI_ORIGIN}"],
             "bearer_tokens": ["${SPACEY}", "${SHORT}", "${NOT_ASCII}"]}
  })";
  const std::map<std::string, std::string> env = {
      {"SPEC", "/nonexistent/" + secret + ".json"},
      {"ORIGIN_WITH_PATH", "https://" + secret + ".example.com/v1"},
      {"SMUGGLER", secret + "\r\nX-Evil: 1"},
      {"TRAILING", secret + " "},
      {"NUL", secret + std::string(1, '\0')},
      {"ORIGIN_FTP", "ftp://" + secret + ".example.com"},
      {"UI_ORIGIN", "http://user:" + secret + "@localhost"},
      {"SPACEY", secret + " tail"},
      {"SHORT", short_secret},
      {"NOT_ASCII", secret + "\xC3\xA9"},
  };
  const Problems problems = workspace.problems(text, env);
  CHECK(problems ==
        Problems{
            "openapi: cannot read the file: No such file or directory",
            "upstreams[0].origin: must not contain a path (only scheme://host[:port])" +
                std::string(kBasePathHint),
            "upstreams[0].headers.Authorization: value contains a control character (CR, LF, NUL "
            "or another; only horizontal tab is allowed)",
            "upstreams[0].headers.X-Key: value begins or ends with whitespace",
            "upstreams[0].headers.X-Other: value contains a control character (CR, LF, NUL or "
            "another; only horizontal tab is allowed)",
            "upstreams[1].origin: scheme must be http or https",
            "http.allowed_origins[0]: must not contain userinfo (user@)",
            "http.bearer_tokens[0]: contains whitespace",
            "http.bearer_tokens[1]: shorter than 16 characters; short tokens are guessable",
            "http.bearer_tokens[2]: may contain only visible ASCII characters",
        });
  for (const std::string& problem : problems) {
    INFO(problem);
    CHECK(problem.find(secret) == std::string::npos);
    CHECK(problem.find(short_secret) == std::string::npos);
    CHECK(problem.find('\n') == std::string::npos);
    CHECK(problem.find('\r') == std::string::npos);
  }
}

TEST_CASE("problem messages never echo string values written in the file", "[config][secrets]") {
  const Workspace workspace;
  const std::string secret = "sk_live_literal_0a1b2c3d4e5f";
  // A credential written in place with a smuggled line break.
  const Problems header = workspace.problems(
      with_headers(R"({"Authorization": "Bearer )" + secret + R"(\r\nX-Evil: 1"})"));
  REQUIRE(header.size() == 1);
  CHECK(header[0].find(secret) == std::string::npos);
  // A syntax error inside a string holding one: the parser's "last read" text is not repeated.
  const Problems syntax = workspace.problems(
      R"({"openapi": "openapi.json", "upstreams": [{"origin": "http://a", "headers": {"X": ")" +
      secret);
  CHECK(syntax ==
        Problems{"line 1, column 112: syntax error: invalid string: missing closing quote"});
  for (const std::string& problem : syntax) CHECK(problem.find(secret) == std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The OpenAPI path.

TEST_CASE("the openapi path resolves against the base directory", "[config][openapi]") {
  const Workspace workspace;
  workspace.temp().write("specs/api.json", "{}");
  CHECK(workspace.load(R"({"openapi": "specs/api.json"})").apis.at(0).openapi ==
        workspace.dir() / "specs/api.json");
  CHECK(workspace.load(R"({"openapi": "./specs/../specs/api.json"})").apis.at(0).openapi ==
        workspace.dir() / "specs/api.json");
  const std::string absolute = (workspace.dir() / "specs/api.json").string();
  CHECK(workspace.load(R"({"openapi": ")" + absolute + R"("})").apis.at(0).openapi == absolute);
}

TEST_CASE("the openapi file must exist and be a regular file", "[config][openapi]") {
  const Workspace workspace;
  workspace.temp().write("specs/api.json", "{}");
  CHECK(workspace.problems(R"({"openapi": "missing.json"})") ==
        Problems{"openapi: cannot read " + (workspace.dir() / "missing.json").string() +
                 ": No such file or directory"});
  CHECK(workspace.problems(R"({"openapi": "specs"})") ==
        Problems{"openapi: " + (workspace.dir() / "specs").string() + " is not a regular file"});
  // A path with a line break is quoted, so the problem stays one line.
  CHECK(workspace.problems(R"({"openapi": "two\nlines.json"})") ==
        Problems{"openapi: cannot read \"" + workspace.dir().string() +
                 "/two\\nlines.json\": No such file or directory"});
  // A URL is not fetched, and not read as a path under the config's directory either.
  CHECK(workspace.problems(R"({"openapi": "https://example.com/openapi.json"})") ==
        Problems{"openapi: must be a local file; URLs are not fetched (download it and name the "
                 "file)"});
  // A path from the environment is not shown.
  CHECK(workspace.problems(R"({"openapi": "${SPEC}"})", {{"SPEC", "missing.json"}}) ==
        Problems{"openapi: cannot read the file: No such file or directory"});
  CHECK(workspace.problems(R"({"openapi": "${SPEC}"})", {{"SPEC", "specs"}}) ==
        Problems{"openapi: the file is not a regular file"});
}

TEST_CASE("ca_file is optional and resolved like openapi", "[config][tls]") {
  const Workspace workspace;
  CHECK_FALSE(workspace.load(R"({"openapi": "openapi.json"})").ca_file.has_value());
  workspace.temp().write("certs/ca.pem", "-----BEGIN CERTIFICATE-----\n");
  CHECK(workspace.load(R"({"openapi": "openapi.json", "ca_file": "certs/ca.pem"})").ca_file ==
        workspace.dir() / "certs/ca.pem");
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "ca_file": "nope.pem"})") ==
        Problems{"ca_file: cannot read " + (workspace.dir() / "nope.pem").string() +
                 ": No such file or directory"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "ca_file": 5})").size() == 1);
}

TEST_CASE("policy narrows execute: operations and methods", "[config][policy]") {
  const Workspace workspace;
  const Config open = workspace.load(R"({"openapi": "openapi.json"})");
  CHECK(open.apis.at(0).policy.operations == Policy::Operations::any);
  CHECK(open.apis.at(0).policy.methods.empty());
  const Config narrow = workspace.load(
      R"({"openapi": "openapi.json", "policy": {"operations": "spec", "methods": ["get", "HEAD", "GET"]}})");
  CHECK(narrow.apis.at(0).policy.operations == Policy::Operations::spec);
  CHECK(narrow.apis.at(0).policy.methods == std::vector<std::string>{"GET", "HEAD"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "policy": {"operations": "some",
                               "methods": ["GET", "TRACE"], "method": []}})") ==
        Problems{R"(policy.operations: must be "any" or "spec")",
                 "policy.methods[1]: must be one of GET, HEAD, POST, PUT, PATCH, DELETE",
                 R"(policy.method: unknown key (did you mean "methods"?))"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "policy": {"methods": []}})") ==
        Problems{"policy.methods: must name at least one method (omit it to allow all)"});
}

TEST_CASE("policy.approve names the requests that wait for a person", "[config][policy]") {
  const Workspace workspace;
  const Config none = workspace.load(R"({"openapi": "openapi.json"})");
  CHECK_FALSE(none.apis.at(0).policy.approve.has_value());
  CHECK(none.apis.at(0).policy.approval_timeout_ms == 120000);
  const Config writes =
      workspace.load(R"({"openapi": "openapi.json", "policy": {"approve": true}})");
  REQUIRE(writes.apis.at(0).policy.approve.has_value());
  CHECK(writes.apis.at(0).policy.approve->methods ==
        std::vector<std::string>{"POST", "PUT", "PATCH", "DELETE"});
  CHECK_FALSE(workspace.load(R"({"openapi": "openapi.json", "policy": {"approve": false}})")
                  .apis.at(0)
                  .policy.approve.has_value());
  const Config narrow = workspace.load(R"({"openapi": "openapi.json", "policy": {
      "approve": {"methods": ["delete", "post"], "operations": ["createOrder"], "tags": ["admin"],
                  "paths": ["/orders/*/cancel"]},
      "approval_timeout_ms": 30000}})");
  REQUIRE(narrow.apis.at(0).policy.approve.has_value());
  CHECK(narrow.apis.at(0).policy.approve->methods == std::vector<std::string>{"DELETE", "POST"});
  CHECK(narrow.apis.at(0).policy.approve->operations == std::vector<std::string>{"createOrder"});
  CHECK(narrow.apis.at(0).policy.approve->tags == std::vector<std::string>{"admin"});
  CHECK(narrow.apis.at(0).policy.approve->paths == std::vector<std::string>{"/orders/*/cancel"});
  CHECK(narrow.apis.at(0).policy.approval_timeout_ms == 30000);
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "policy": {
      "approve": {"methods": ["FETCH"], "paths": ["orders"], "tag": ["x"], "operations": []},
      "approval_timeout_ms": 5}})") ==
        Problems{"policy.approve.methods[0]: must be one of GET, HEAD, POST, PUT, PATCH, DELETE",
                 "policy.approve.paths[0]: must be a path pattern starting with /",
                 R"(policy.approve.tag: unknown key (did you mean "tags"?))",
                 "policy.approve.operations: must name at least one (omit it for the default)",
                 "policy.approval_timeout_ms: 5 is out of range 1000..3600000"});
  CHECK(
      workspace
          .load(
              R"({"openapi": "openapi.json", "policy": {"approve": true, "approval_key": "${K}"}})",
              {{"K", std::string(64, 'e')}})
          .apis.at(0)
          .policy.approval_key == std::string(64, 'e'));
  CHECK(
      workspace.problems(R"({"openapi": "openapi.json", "policy": {"approval_key": "secret"}})") ==
      Problems{"policy.approval_key: must be 64 hex digits (a 256-bit key: openssl rand -hex 32)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "policy": {"approve": "yes"}})") ==
        Problems{"policy.approve: must be true, false or an object (methods, operations, tags, "
                 "paths)"});
  CHECK(workspace.problems(
            R"({"openapi": "openapi.json", "upstreams": [{"origin": "https://api.test"}],
      "principals": {"bob": {"policy": {"approve": true}}}})") ==
        Problems{"principals.bob.policy.approve: approval is set for every principal at once, in "
                 "the top-level policy"});
}

TEST_CASE("principals get their own headers and policy for configured upstreams",
          "[config][principals]") {
  const Workspace workspace;
  CHECK(workspace.load(R"({"openapi": "openapi.json"})").apis.at(0).principals.empty());
  const Config config = workspace.load(R"({"openapi": "openapi.json",
      "upstreams": [{"origin": "https://API.test:443", "headers": {"Authorization": "Bearer shared"}},
                    {"origin": "http://other.test"}],
      "principals": {
        "alice": {"upstreams": [{"origin": "https://api.test",
                                 "headers": {"Authorization": "Bearer ${ALICE_KEY}"}}],
                  "policy": {"methods": ["get"]}},
        "ops.team-1": {}, "sub:auth0|5f1e@example.com": {}}})",
                                       {{"ALICE_KEY", "alice-secret"}});
  REQUIRE(config.apis.at(0).principals.size() == 3);
  const PrincipalSettings& alice = config.apis.at(0).principals.at("alice");
  REQUIRE(alice.upstreams.size() == 1);
  CHECK(alice.upstreams[0].origin == "https://api.test");
  CHECK(alice.upstreams[0].headers ==
        std::vector<std::pair<std::string, std::string>>{{"Authorization", "Bearer alice-secret"}});
  REQUIRE(alice.policy.has_value());
  CHECK(alice.policy->methods == std::vector<std::string>{"GET"});
  CHECK_FALSE(config.apis.at(0).principals.at("ops.team-1").policy.has_value());

  CHECK(workspace.problems(R"({"openapi": "openapi.json",
      "upstreams": [{"origin": "https://api.test"}],
      "principals": {
        "alice": {"upstreams": [{"origin": "https://elsewhere.test"},
                                {"origin": "https://api.test", "headers": {"Host": "x"}},
                                {"origin": "https://api.test"}],
                  "policy": {"methods": ["TRACE"]}, "polcy": {}},
        "bob smith": {},
        "carol": []}})") ==
        Problems{"principals.alice.upstreams[1].headers.Host: may not be set (the gateway derives "
                 "Host from the origin)",
                 "principals.alice.upstreams[2].origin: same origin as "
                 "principals.alice.upstreams[1].origin (one entry per origin)",
                 "principals.alice.policy.methods[0]: must be one of GET, HEAD, POST, PUT, PATCH, "
                 "DELETE",
                 R"(principals.alice.polcy: unknown key (did you mean "policy"?))",
                 "principals: a principal is a token's name or what an access token names "
                 "(sub:SUBJECT, client:ID): 1 to 160 characters of A-Z, a-z, 0-9 and ._-@:+=|",
                 "principals.carol: expected an object, got an array",
                 "principals.alice.upstreams[0].origin: not one of the top-level upstreams (a "
                 "principal's entry gives headers for a configured origin; it does not add one)"});
}

TEST_CASE("sandbox.jitless turns V8's JIT off, absent, it stays on", "[config][sandbox]") {
  const Workspace workspace;
  CHECK_FALSE(workspace.load(R"({"openapi": "openapi.json"})").sandbox.jitless);
  CHECK(workspace.load(R"({"openapi": "openapi.json", "sandbox": {"jitless": true}})")
            .sandbox.jitless);
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "sandbox": {"jitless": "yes",
                               "jit": false}})") ==
        Problems{"sandbox.jitless: expected true or false, got a string",
                 "sandbox.jit: unknown key (known keys: jitless, process_calls, max_processes, "
                 "spare_processes, idle_seconds, principal_calls, principal_queue, memory_mb)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "sandbox": []})") ==
        Problems{"sandbox: expected an object, got an array"});
}

TEST_CASE("the sandbox's sharing settings have defaults and ranges", "[config][sandbox]") {
  const Workspace workspace;
  const config::SandboxSettings defaults = workspace.load(R"({"openapi": "openapi.json"})").sandbox;
  CHECK(defaults.process_calls == 64);
  CHECK(defaults.max_processes == 128);
  CHECK(defaults.spare_processes == 1);
  CHECK(defaults.idle_seconds == 60);
  CHECK(defaults.principal_calls == 256);
  CHECK(defaults.principal_queue == 256);
  CHECK(defaults.memory_mb == 0);
  const config::SandboxSettings set = workspace
                                          .load(R"({"openapi": "openapi.json", "sandbox": {
      "process_calls": 8, "max_processes": 4, "spare_processes": 0, "idle_seconds": 5,
      "principal_calls": 16, "principal_queue": 0, "memory_mb": 2048}})")
                                          .sandbox;
  CHECK(set.process_calls == 8);
  CHECK(set.max_processes == 4);
  CHECK(set.spare_processes == 0);
  CHECK(set.idle_seconds == 5);
  CHECK(set.principal_calls == 16);
  CHECK(set.principal_queue == 0);
  CHECK(set.memory_mb == 2048);
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "sandbox": {"process_calls": 0,
      "max_processes": 1025, "idle_seconds": -1, "principal_calls": 1.5,
      "principal_queue": "10"}})") ==
        Problems{"sandbox.process_calls: 0 is out of range 1..1024",
                 "sandbox.max_processes: 1025 is out of range 1..1024",
                 "sandbox.idle_seconds: -1 is out of range 1..86400",
                 "sandbox.principal_calls: expected an integer, got a floating-point number",
                 "sandbox.principal_queue: expected an integer, got a string"});
}

// ---------------------------------------------------------------------------------------------
// The audit trail.

std::string with_audit(std::string_view audit_object) {
  return R"({"openapi": "openapi.json", "audit": )" + std::string(audit_object) + "}";
}

TEST_CASE("audit is absent by default, and sqlite takes its defaults", "[config][audit]") {
  const Workspace workspace;
  CHECK_FALSE(workspace.load(R"({"openapi": "openapi.json"})").audit.has_value());
  const Config config = workspace.load(with_audit(R"({"sqlite": "audit.db"})"));
  REQUIRE(config.audit.has_value());
  const Audit& audit = *config.audit;
  CHECK(audit.store == Audit::Store::sqlite);
  CHECK(audit.sqlite == workspace.dir() / "audit.db");  // need not exist yet
  CHECK(audit.server.empty());
  CHECK(audit.on_failure == Audit::OnFailure::drop);
  CHECK(audit.queue == 10000);
  CHECK(audit.queue_per_principal == 0);  // a tenth of queue
  CHECK(audit.max_age_days == 90);
  CHECK(audit.max_mb == 1024);
}

TEST_CASE("audit on postgres fails closed by default and has no size bound", "[config][audit]") {
  const Workspace workspace;
  const Config config = workspace.load(
      with_audit(R"({"postgres": "postgresql://audit@db.internal/audit", "server": "web-1.a_b",
                     "queue": 1, "max_age_days": 0})"));
  REQUIRE(config.audit.has_value());
  CHECK(config.audit->store == Audit::Store::postgres);
  CHECK(config.audit->postgres == "postgresql://audit@db.internal/audit");
  CHECK(config.audit->server == "web-1.a_b");
  CHECK(config.audit->on_failure == Audit::OnFailure::fail_closed);
  CHECK(config.audit->queue == 1);
  CHECK(config.audit->max_age_days == 0);
  CHECK(config.audit->max_mb == 0);
  CHECK(workspace.load(with_audit(R"({"postgres": "host=/tmp dbname=a", "on_failure": "drop"})"))
            .audit->on_failure == Audit::OnFailure::drop);
  CHECK(workspace
            .load(with_audit(R"({"sqlite": "a.db", "on_failure": "fail_closed",
                                      "max_mb": 0, "queue": 1000000, "max_age_days": 36500})"))
            .audit->on_failure == Audit::OnFailure::fail_closed);
}

TEST_CASE("audit names exactly one store, with no password in a postgres string",
          "[config][audit][secrets]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_audit("{}")) ==
        Problems{"audit: names no store: give \"sqlite\": \"audit.db\" or \"postgres\": "
                 "\"postgresql://...\""});
  CHECK(workspace.problems(with_audit(R"({"sqlite": "a.db", "postgres": "host=/tmp"})")) ==
        Problems{"audit: names two stores (sqlite and postgres); give one"});
  const std::string password_problem =
      "audit.postgres: holds a password; give it in PGPASSWORD or ~/.pgpass instead (libpq "
      "reads them), so the connection string is safe to show";
  for (const std::string text :
       {"postgresql://audit:s3cret-pw@db/audit", "postgres://a:s3cret-pw@h:5432/d?x=y",
        "postgresql://db/audit?password=s3cret-pw", "host=db password=s3cret-pw"}) {
    INFO(text);
    const Problems problems = workspace.problems(with_audit(R"({"postgres": ")" + text + "\"}"));
    CHECK(problems == Problems{password_problem});
  }
  const Problems from_env = workspace.problems(
      with_audit(R"({"postgres": "postgresql://a:${PW}@db/x"})"), {{"PW", "s3cret-pw"}});
  CHECK(from_env == Problems{password_problem});
  CHECK(workspace.problems(with_audit(R"({"postgres": ""})")) ==
        Problems{"audit.postgres: must not be empty"});
}

TEST_CASE("audit settings have ranges and known values", "[config][audit]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_audit(R"({"sqlite": "no-such-dir/a.db", "server": "a b",
      "on_failure": "retry", "queue": 0, "max_age_days": 36501, "max_mb": 1048577,
      "retention": 1})")) ==
        Problems{"audit.sqlite: the directory of " +
                     (workspace.dir() / "no-such-dir/a.db").string() + " does not exist",
                 "audit.server: may contain only ASCII letters, digits, '.', '_' and '-'",
                 "audit.on_failure: must be \"fail_closed\" or \"drop\"",
                 "audit.queue: 0 is out of range 1..1000000",
                 "audit.max_age_days: 36501 is out of range 0..36500",
                 "audit.max_mb: 1048577 is out of range 0..1048576",
                 "audit.retention: unknown key (known keys: sqlite, postgres, server, on_failure, "
                 "queue, queue_per_principal, max_age_days, max_mb)"});
  CHECK(workspace.problems(with_audit(R"({"sqlite": "a.db", "queue": 100,
                                          "queue_per_principal": 101})")) ==
        Problems{"audit.queue_per_principal: must be at most audit.queue (100)"});
  CHECK(workspace.problems(with_audit(R"({"sqlite": "a.db", "queue_per_principal": 0})")) ==
        Problems{"audit.queue_per_principal: 0 is out of range 1..1000000"});
  CHECK(workspace.load(with_audit(R"({"sqlite": "a.db", "queue_per_principal": 10})"))
            .audit->queue_per_principal == 10);
  workspace.temp().write("sub/file", "");
  CHECK(workspace.problems(with_audit(R"({"sqlite": "sub"})")) ==
        Problems{"audit.sqlite: " + (workspace.dir() / "sub").string() + " is a directory"});
  CHECK(workspace.problems(with_audit(R"({"postgres": "host=db", "max_mb": 10})")) ==
        Problems{"audit.max_mb: applies to sqlite only (the size of a PostgreSQL database is its "
                 "operator's)"});
  CHECK(workspace.problems(with_audit("[]")) ==
        Problems{"audit: expected an object, got an array"});
}

TEST_CASE("load_audit_section reads the audit section and nothing else", "[config][audit]") {
  const Workspace workspace;
  const fs::path file = workspace.temp().write(
      "c.json", R"({"openapi": "missing.json", "upstreams": [{"origin": "http://api.test",
      "headers": {"Authorization": "Bearer ${UNSET_SECRET}"}}], "bogus": 1,
      "audit": {"sqlite": "a.db", "server": "${NAME}"}})");
  const LoadResult loaded = load_audit_section(file, env_of({{"NAME", "web-1"}}));
  REQUIRE(loaded.problems == Problems{});
  REQUIRE(loaded.config->audit.has_value());
  CHECK(loaded.config->audit->sqlite == workspace.dir() / "a.db");
  CHECK(loaded.config->audit->server == "web-1");
  CHECK(loaded.config->apis.empty());
  const fs::path none = workspace.temp().write("none.json", R"({"openapi": "x.json"})");
  CHECK_FALSE(load_audit_section(none, env_of({})).config->audit.has_value());
  const fs::path bad = workspace.temp().write("bad.json", R"({"audit": {"sqlite": 1}})");
  CHECK(load_audit_section(bad, env_of({})).problems ==
        Problems{"audit.sqlite: expected a string, got an integer"});
}

// ---------------------------------------------------------------------------------------------
// Origins.

TEST_CASE("origins are stored normalised", "[config][origin]") {
  const Workspace workspace;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"HTTP://Example.COM:80/", "http://example.com"},
      {"https://x:443", "https://x"},
      {"http://x:8080", "http://x:8080"},
      {"https://x:80", "https://x:80"},
      {"http://x:443", "http://x:443"},
      {"http://127.0.0.1:08788", "http://127.0.0.1:8788"},
      {"https://API.example.com/", "https://api.example.com"},
      {"http://[::1]:8080", "http://[::1]:8080"},
      {"http://[::1]:80", "http://[::1]"},
      {"http://my_host-1.test", "http://my_host-1.test"},
  };
  for (const auto& [written, stored] : cases) {
    INFO(written);
    const Config config = workspace.load(with_origin(written));
    REQUIRE(config.apis.at(0).upstreams.size() == 1);
    CHECK(config.apis.at(0).upstreams[0].origin == stored);
  }
}

TEST_CASE("origins with anything but scheme, host and port are problems", "[config][origin]") {
  const Workspace workspace;
  const std::string port = "port must be a number from 1 to 65535";
  const std::string host_chars =
      "host may contain only ASCII letters, digits, '-', '_' and '.' "
      "(write international names in their xn-- form)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ftp://x", "scheme must be http or https"},
      {"ws://x", "scheme must be http or https"},
      {"http://user@x", "must not contain userinfo (user@)"},
      {"http://user:pw@x", "must not contain userinfo (user@)"},
      {"http://x/path",
       "must not contain a path (only scheme://host[:port])" + std::string(kBasePathHint)},
      {"http://x//",
       "must not contain a path (only scheme://host[:port])" + std::string(kBasePathHint)},
      {"http://x?q", "must not contain a query"},
      {"http://x/?", "must not contain a query"},
      {"http://x#top", "must not contain a fragment"},
      {"http://", "missing host"},
      {"http://:80", "missing host"},
      {"example.com", "expected scheme://host[:port], e.g. https://api.example.com"},
      {"http:/x", "expected scheme://host[:port], e.g. https://api.example.com"},
      {"http://x:0", port},
      {"http://x:65536", port},
      {"http://x:", port},
      {"http://x:8a", port},
      {"http://x:1:2", port},
      {"http://ex ample.com", host_chars},
      {"http://b\u00fccher.de", host_chars},
      {"http://a..b", "host has an empty label"},
      {"http://x.", "host has an empty label"},
      {"http://[::1", "unterminated IPv6 address"},
      {"http://[zz]", "invalid IPv6 address"},
  };
  for (const auto& [written, problem] : cases) {
    INFO(written);
    CHECK(workspace.problems(with_origin(written)) == Problems{"upstreams[0].origin: " + problem});
  }
}

TEST_CASE("allowed_origins follow the same rules and are normalised", "[config][origin][http]") {
  const Workspace workspace;
  const Config config = workspace.load(with_http(R"({"allowed_origins": ["HTTP://LocalHost:80",
                                                        "http://localhost:5173/",
                                                        "https://App.Example.com:443"]})"));
  CHECK(config.http.allowed_origins == std::vector<std::string>{"http://localhost",
                                                                "http://localhost:5173",
                                                                "https://app.example.com"});
  CHECK(workspace.problems(with_http(R"({"allowed_origins": ["*", "http://x/app"]})")) ==
        Problems{
            "http.allowed_origins[0]: expected scheme://host[:port], e.g. https://api.example.com",
            "http.allowed_origins[1]: must not contain a path (only scheme://host[:port])",
        });
}

TEST_CASE("two upstreams with one origin are a problem", "[config][origin]") {
  const Workspace workspace;
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "upstreams": [
          {"origin": "http://a"}, {"origin": "http://b"}, {"origin": "HTTP://A:80/"}]})") ==
        Problems{"upstreams[2].origin: same origin as upstreams[0].origin (one entry per origin)"});
}

// ---------------------------------------------------------------------------------------------
// Upstream headers.

TEST_CASE("upstream headers keep their order", "[config][headers]") {
  const Workspace workspace;
  const Config config =
      workspace.load(with_headers(R"({"X-B": "2", "Authorization": "Bearer x", "X-A": "a\tb",
                       "X-Api.Key": "k"})"));
  CHECK(config.apis.at(0).upstreams[0].headers ==
        Headers{{"X-B", "2"}, {"Authorization", "Bearer x"}, {"X-A", "a\tb"}, {"X-Api.Key", "k"}});
}

TEST_CASE("header names must be tokens, unique, and not owned by the gateway",
          "[config][headers]") {
  const Workspace workspace;
  const std::string invalid = "not a valid header name (letters, digits and !#$%&'*+-.^_`|~ only)";
  CHECK(workspace.problems(with_headers(R"json({"X Api": "1", "X(y)": "2", "": "3",
          "Host": "a", "host": "b", "Content-Length": "1", "Transfer-Encoding": "chunked",
          "Connection": "close", "Authorization": "a", "authorization": "b"})json")) ==
        Problems{
            R"(upstreams[0].headers["X Api"]: )" + invalid,
            R"json(upstreams[0].headers["X(y)"]: )json" + invalid,
            R"(upstreams[0].headers[""]: )" + invalid,
            "upstreams[0].headers.Host: may not be set (the gateway derives Host from the origin)",
            "upstreams[0].headers.host: may not be set (the gateway derives Host from the origin)",
            "upstreams[0].headers.Content-Length: may not be set (the gateway controls message "
            "framing)",
            "upstreams[0].headers.Transfer-Encoding: may not be set (the gateway controls message "
            "framing)",
            "upstreams[0].headers.Connection: may not be set (the gateway controls message "
            "framing)",
            R"(upstreams[0].headers.authorization: duplicate of header "Authorization" )"
            "(header names are case-insensitive)",
        });
}

TEST_CASE("header values must not hold control characters", "[config][headers]") {
  const Workspace workspace;
  const std::string control =
      "value contains a control character (CR, LF, NUL or another; "
      "only horizontal tab is allowed)";
  CHECK(workspace.problems(with_headers(R"({"X-Cr": "a\rb", "X-Lf": "a\nb", "X-Nul": "a\u0000b",
          "X-Esc": "\u001b[0m", "X-Del": "a\u007fb", "X-Lead": " a", "X-Trail": "a\t",
          "X-Empty": ""})")) ==
        Problems{
            "upstreams[0].headers.X-Cr: " + control,
            "upstreams[0].headers.X-Lf: " + control,
            "upstreams[0].headers.X-Nul: " + control,
            "upstreams[0].headers.X-Esc: " + control,
            "upstreams[0].headers.X-Del: " + control,
            "upstreams[0].headers.X-Lead: value begins or ends with whitespace",
            "upstreams[0].headers.X-Trail: value begins or ends with whitespace",
            "upstreams[0].headers.X-Empty: must not be empty",
        });
  // Non-ASCII bytes (obs-text) are allowed.
  CHECK(
      workspace.load(with_headers(R"({"X-Name": "Jos\u00e9"})")).apis.at(0).upstreams[0].headers ==
      Headers{{"X-Name", "Jos\xC3\xA9"}});
}

// ---------------------------------------------------------------------------------------------
// Bearer tokens.

TEST_CASE("bearer tokens are long, visible ASCII, without whitespace", "[config][http]") {
  const Workspace workspace;
  CHECK(
      workspace.load(with_http(R"({"bearer_tokens": ["0123456789abcdef"]})")).http.bearer_tokens ==
      Tokens{{"token-1", "0123456789abcdef"}});
  CHECK(workspace.problems(with_http(R"({"bearer_tokens": ["0123456789abcde", "",
          "0123456789 abcdef", "0123456789abcdef\t", "0123456789abcdef\u00e9"]})")) ==
        Problems{
            "http.bearer_tokens[0]: shorter than 16 characters; short tokens are guessable",
            "http.bearer_tokens[1]: must not be empty",
            "http.bearer_tokens[2]: contains whitespace",
            "http.bearer_tokens[3]: contains whitespace",
            "http.bearer_tokens[4]: may contain only visible ASCII characters",
        });
}

TEST_CASE("named tokens and plain bearer_tokens make one list, plain ones named token-N",
          "[config][http][tokens]") {
  const Workspace workspace;
  // Named entries first, then the plain ones, whichever key the file writes first.
  const Config both = workspace.load(with_http(R"({
      "bearer_tokens": ["plain-one-0123456789", "plain-two-0123456789"],
      "tokens": [{"name": "alice", "token": "alice-0123456789abc"},
                 {"token": "bob-0123456789abcdef", "name": "Bob.ops_2"}]})"));
  CHECK(both.http.bearer_tokens == Tokens{{"alice", "alice-0123456789abc"},
                                          {"Bob.ops_2", "bob-0123456789abcdef"},
                                          {"token-1", "plain-one-0123456789"},
                                          {"token-2", "plain-two-0123456789"}});
  const Config named_only = workspace.load(
      with_http(R"({"tokens": [{"name": "ci-runner", "token": "ci-runner-0123456789"}]})"));
  CHECK(named_only.http.bearer_tokens == Tokens{{"ci-runner", "ci-runner-0123456789"}});
  // A given name may look like a generated one that no plain entry takes.
  const Config free_name = workspace.load(with_http(R"({
      "tokens": [{"name": "token-2", "token": "given-0123456789abc"}],
      "bearer_tokens": ["plain-one-0123456789"]})"));
  CHECK(free_name.http.bearer_tokens ==
        Tokens{{"token-2", "given-0123456789abc"}, {"token-1", "plain-one-0123456789"}});
}

TEST_CASE("no token may take the stdio client's principal", "[config][http][tokens]") {
  const Workspace workspace;
  // A token named so would share the stdio client's processes, memory share and audit name.
  CHECK(workspace.problems(with_http(R"({"tokens": [
      {"name": "alice", "token": "alice-0123456789abc"},
      {"name": "stdio", "token": "stdio-0123456789abc"},
      {"name": "STDIO", "token": "stdio-0123456789ABC"}]})")) ==
        Problems{"http.tokens[1].name: \"stdio\" is the stdio client's principal; choose another "
                 "name",
                 "http.tokens[2].name: \"stdio\" is the stdio client's principal; choose another "
                 "name"});
  CHECK(workspace
            .load(with_http(R"({"tokens": [{"name": "stdio-bot", "token": "bot-0123456789abc"}]})"))
            .http.bearer_tokens.size() == 1);
}

TEST_CASE("a named token and its name expand ${VAR} like every string value",
          "[config][http][tokens][env]") {
  const Workspace workspace;
  const Config config = workspace.load(with_http(R"({"tokens": [
      {"name": "${WHO}", "token": "${ALICE_TOKEN}"},
      {"name": "bob", "token": "$${literal}-0123456789"}]})"),
                                       {{"WHO", "alice"}, {"ALICE_TOKEN", "from-env-0123456789"}});
  CHECK(config.http.bearer_tokens ==
        Tokens{{"alice", "from-env-0123456789"}, {"bob", "${literal}-0123456789"}});
  CHECK(workspace.problems(with_http(R"({"tokens": [{"name": "a", "token": "${UNSET}"}]})")) ==
        Problems{"http.tokens[0].token: environment variable UNSET is not set"});
  CHECK(workspace.problems(with_http(R"({"tokens": [{"name": "a", "token": "${EMPTY}"}]})"),
                           {{"EMPTY", ""}}) ==
        Problems{"http.tokens[0].token: is empty after environment variable expansion"});
}

TEST_CASE("a token entry needs a string name and token and no other key",
          "[config][http][tokens][keys]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_http(R"({"tokens": [
      {"token": "zero-0123456789abcdef"},
      {"name": "one"},
      {},
      {"name": "three", "token": "three-0123456789abc", "tokn": "x", "role": "admin"},
      "four-0123456789abcdef",
      {"name": 5, "token": ["five-0123456789abcdef"]}]})")) ==
        Problems{
            "http.tokens[0].name: required key is missing",
            "http.tokens[1].token: required key is missing",
            "http.tokens[2].name: required key is missing",
            "http.tokens[2].token: required key is missing",
            R"(http.tokens[3].tokn: unknown key (did you mean "token"?))",
            "http.tokens[3].role: unknown key (known keys: name, token)",
            "http.tokens[4]: expected an object, got a string",
            "http.tokens[5].name: expected a string, got an integer",
            "http.tokens[5].token: expected a string, got an array",
        });
}

TEST_CASE("a named token follows the bearer token rules", "[config][http][tokens]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_http(R"({"tokens": [
      {"name": "a", "token": "0123456789abcde"},
      {"name": "b", "token": ""},
      {"name": "c", "token": "0123456789 abcdef"},
      {"name": "d", "token": "0123456789abcdef\u00e9"}]})")) ==
        Problems{
            "http.tokens[0].token: shorter than 16 characters; short tokens are guessable",
            "http.tokens[1].token: must not be empty",
            "http.tokens[2].token: contains whitespace",
            "http.tokens[3].token: may contain only visible ASCII characters",
        });
}

TEST_CASE("token names are 1 to 64 ASCII letters, digits, dots, underscores and hyphens",
          "[config][http][tokens]") {
  const Workspace workspace;
  const std::string longest(64, 'n');
  CHECK(workspace
            .load(with_http(R"({"tokens": [{"name": ")" + longest +
                            R"(", "token": "0123456789abcdef"}]})"))
            .http.bearer_tokens == Tokens{{longest, "0123456789abcdef"}});
  const std::string text = R"({"tokens": [
      {"name": ")" + longest +
                           R"(n", "token": "token-0-0123456789"},
      {"name": "", "token": "token-1-0123456789"},
      {"name": "al ice", "token": "token-2-0123456789"},
      {"name": "al\u00efce", "token": "token-3-0123456789"},
      {"name": "a/b", "token": "token-4-0123456789"},
      {"name": "a\nb", "token": "token-5-0123456789"},
      {"name": "${WHO}", "token": "token-6-0123456789"}]})";
  const std::string charset = "may contain only ASCII letters, digits, '.', '_' and '-'";
  CHECK(workspace.problems(with_http(text), {{"WHO", ""}}) ==
        Problems{
            "http.tokens[0].name: longer than 64 characters",
            "http.tokens[1].name: must not be empty",
            "http.tokens[2].name: " + charset,
            "http.tokens[3].name: " + charset,
            "http.tokens[4].name: " + charset,
            "http.tokens[5].name: " + charset,
            "http.tokens[6].name: is empty after environment variable expansion",
        });
}

TEST_CASE("token names are unique ignoring case", "[config][http][tokens]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_http(R"({"tokens": [
      {"name": "alice", "token": "token-0-0123456789"},
      {"name": "Alice", "token": "token-1-0123456789"},
      {"name": "bob", "token": "token-2-0123456789"},
      {"name": "alice", "token": "token-3-0123456789"}]})")) ==
        Problems{
            "http.tokens[1].name: same name as http.tokens[0].name (names are unique, ignoring "
            "case)",
            "http.tokens[3].name: same name as http.tokens[0].name (names are unique, ignoring "
            "case)",
        });
}

TEST_CASE("a given name that a plain bearer token is named by is a problem",
          "[config][http][tokens]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_http(R"({
      "bearer_tokens": ["plain-one-0123456789", "plain-two-0123456789"],
      "tokens": [{"name": "token-2", "token": "given-a-0123456789"},
                 {"name": "TOKEN-1", "token": "given-b-0123456789"}]})")) ==
        Problems{
            R"(http.tokens[0].name: "token-2" is the name of http.bearer_tokens[1] (entries of )"
            "http.bearer_tokens are named token-1, token-2, ... in file order); choose another",
            R"(http.tokens[1].name: "token-1" is the name of http.bearer_tokens[0] (entries of )"
            "http.bearer_tokens are named token-1, token-2, ... in file order); choose another",
        });
}

TEST_CASE("one token value twice is a problem that does not show it", "[config][http][tokens]") {
  const Workspace workspace;
  const std::string secret = "twice-0123456789abcdef";
  const std::string text = R"({
      "bearer_tokens": [")" +
                           secret + R"(", ")" + secret + R"(", "${SAME_AGAIN}"],
      "tokens": [{"name": "alice", "token": ")" +
                           secret + R"("},
                 {"name": "bob", "token": "bob-0123456789abcdef"},
                 {"name": "carol", "token": "${SAME_AS_BOB}"}]})";
  const Problems problems = workspace.problems(
      with_http(text), {{"SAME_AGAIN", secret}, {"SAME_AS_BOB", "bob-0123456789abcdef"}});
  CHECK(problems ==
        Problems{
            "http.tokens[2].token: same token as http.tokens[1].token (a token stands for one "
            "principal)",
            "http.bearer_tokens[0]: same token as http.tokens[0].token (a token stands for one "
            "principal)",
            "http.bearer_tokens[1]: same token as http.tokens[0].token (a token stands for one "
            "principal)",
            "http.bearer_tokens[2]: same token as http.tokens[0].token (a token stands for one "
            "principal)",
        });
  for (const std::string& problem : problems) {
    INFO(problem);
    CHECK(problem.find(secret) == std::string::npos);
    CHECK(problem.find("bob-0123456789abcdef") == std::string::npos);
  }
}

TEST_CASE("no token problem shows the token, written in the file or from the environment",
          "[config][http][tokens][secrets]") {
  const Workspace workspace;
  const std::string secret = "sk_live_9f8e7d6c5b4a39281706";
  const std::string text = R"({"tokens": [
      {"name": "a", "token": ")" +
                           secret + R"( tail"},
      {"name": "b", "token": "${SPACEY}"},
      {"name": "c", "token": ")" +
                           secret + R"(\u00e9"},
      {"name": "d", "token": "${NOT_ASCII}"},
      {"name": "e", "token": ")" +
                           secret + R"(", "extra": ")" + secret + R"("},
      {"name": "f", "token": "${SAME}"},
      {"name": "${SECRET_NAME}", "token": "g-0123456789abcdef"}],
    "bearer_tokens": [")" + secret +
                           R"(\t"]})";
  const Problems problems = workspace.problems(with_http(text), {{"SPACEY", secret + " x"},
                                                                 {"NOT_ASCII", secret + "\x01"},
                                                                 {"SAME", secret},
                                                                 {"SECRET_NAME", secret + "!"}});
  CHECK(problems.size() == 8);
  for (const std::string& problem : problems) {
    INFO(problem);
    CHECK(problem.find(secret) == std::string::npos);
    CHECK(problem.find("sk_live") == std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// All at once, files, the process environment.

TEST_CASE("every problem in a file is reported together", "[config]") {
  const Workspace workspace;
  const LoadResult result = workspace.parse(R"({
    "openapi": "missing.json",
    "upstreams": [{"origin": "ftp://files", "headers": {"Host": "x", "Authorization": "${TOKEN}"}}],
    "limits": {"cpu_msec": 5, "heap_mb": 1.5},
    "http": {"bearer_tokens": ["short"]},
    "extra": true
  })");
  CHECK_FALSE(result.config.has_value());
  CHECK(result.problems ==
        Problems{
            "openapi: cannot read " + (workspace.dir() / "missing.json").string() +
                ": No such file or directory",
            "upstreams[0].origin: scheme must be http or https",
            "upstreams[0].headers.Host: may not be set (the gateway derives Host from the origin)",
            "upstreams[0].headers.Authorization: environment variable TOKEN is not set",
            R"(limits.cpu_msec: unknown key (did you mean "cpu_ms"?))",
            "limits.heap_mb: expected an integer, got a floating-point number",
            "http.bearer_tokens[0]: shorter than 16 characters; short tokens are guessable",
            "extra: unknown key (known keys: openapi, upstreams, ca_file, policy, limits, http, "
            "sandbox, audit, tracing, principals, name, apis)",
        });
}

TEST_CASE("load_file reports a file it cannot read as one problem", "[config][file]") {
  const TempDir dir;
  const fs::path missing = dir.path() / "absent.json";
  CHECK(load_file(missing, env_of({})).problems ==
        Problems{"cannot read " + missing.string() + ": No such file or directory"});
  const LoadResult directory = load_file(dir.path(), env_of({}));
  CHECK_FALSE(directory.config.has_value());
  CHECK(directory.problems == Problems{"cannot read " + dir.path().string() + ": Is a directory"});
}

TEST_CASE("load_file shows a relative path it cannot read with the working directory",
          "[config][file]") {
  const fs::path cwd = fs::current_path();
  CHECK(load_file("absent-37n.json", env_of({})).problems ==
        Problems{"cannot read " + (cwd / "absent-37n.json").string() +
                 " (absent-37n.json from the working directory " + cwd.string() +
                 "): No such file or directory"});
}

TEST_CASE("load_file resolves paths against the file's directory", "[config][file]") {
  const TempDir dir;
  dir.write("deploy/specs/api.json", "{}");
  const fs::path file = dir.write("deploy/codemode.json", R"({"openapi": "specs/api.json"})");
  const LoadResult result = load_file(file, env_of({}));
  REQUIRE(result.problems == Problems{});
  CHECK(result.config->apis.at(0).openapi == dir.path() / "deploy/specs/api.json");
}

TEST_CASE("config/markethub.json loads with MARKETHUB_TOKEN set", "[config][markethub]") {
  const fs::path source = CODEMODE_SOURCE_DIR;
  const fs::path file = source / "config/markethub.json";

  const LoadResult result = load_file(file, env_of({{"MARKETHUB_TOKEN", "demo-token"}}));
  REQUIRE(result.problems == Problems{});
  const Config& config = *result.config;
  CHECK(config.apis.at(0).openapi ==
        (source / "fixtures/markethub/openapi.json").lexically_normal());
  REQUIRE(config.apis.at(0).upstreams.size() == 1);
  CHECK(config.apis.at(0).upstreams[0].origin == "http://127.0.0.1:8788");
  CHECK(config.apis.at(0).upstreams[0].headers == Headers{{"Authorization", "Bearer demo-token"}});
  check_default_limits(config.apis.at(0).limits);

  const LoadResult other_port =
      load_file(file, env_of({{"MARKETHUB_TOKEN", "demo-token"}, {"MARKETHUB_PORT", "41234"}}));
  REQUIRE(other_port.problems == Problems{});
  CHECK(other_port.config->apis.at(0).upstreams[0].origin == "http://127.0.0.1:41234");

  CHECK(load_file(file, env_of({})).problems ==
        Problems{
            "upstreams[0].headers.Authorization: environment variable MARKETHUB_TOKEN is not set"});
}

TEST_CASE("process_environment reads the process environment", "[config][env]") {
  ::setenv("CODEMODE_CONFIG_TEST_VARIABLE", "from-the-process", 1);
  ::unsetenv("CODEMODE_CONFIG_TEST_UNSET");
  const Environment env = process_environment();
  CHECK(env("CODEMODE_CONFIG_TEST_VARIABLE") == std::optional<std::string>("from-the-process"));
  CHECK(env("CODEMODE_CONFIG_TEST_UNSET") == std::nullopt);
  ::unsetenv("CODEMODE_CONFIG_TEST_VARIABLE");
}

TEST_CASE("parse never throws, whatever the text", "[config][syntax]") {
  const Workspace workspace;
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  const std::vector<std::string> texts = {
      deep,
      "\xFF\xFE{}",
      "{\"openapi\": \"\xC3\"}",
      std::string(3, '\0'),
      "{} {}",
      "1e999999",
      R"({"openapi": {"nested": [1, 2, {"x": null}]}})",
  };
  for (const std::string& text : texts) {
    LoadResult result;
    REQUIRE_NOTHROW(result = workspace.parse(text));
    CHECK_FALSE(result.config.has_value());
    CHECK(result.problems.size() == 1);
  }
}

TEST_CASE("tracing is absent by default, and names its collector", "[config][tracing]") {
  const Workspace workspace;
  CHECK_FALSE(workspace.load(R"({"openapi": "openapi.json"})").tracing.has_value());
  const Config config = workspace.load(
      R"({"openapi": "openapi.json", "tracing": {"otlp": "${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT}",
          "headers": {"Authorization": "Bearer ${COLLECTOR_TOKEN}"}}})",
      {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4318/v1/traces"},
       {"COLLECTOR_TOKEN", "collector-token-value"}});
  REQUIRE(config.tracing.has_value());
  CHECK(config.tracing->otlp == "http://127.0.0.1:4318/v1/traces");
  CHECK(config.tracing->service_name == "codemode-mcp");
  CHECK(config.tracing->queue == 2048);
  CHECK(config.tracing->headers == std::vector<std::pair<std::string, std::string>>{
                                       {"Authorization", "Bearer collector-token-value"}});
}

TEST_CASE("tracing problems are reported together, never echoing a value", "[config][tracing]") {
  const Workspace workspace;
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "tracing": {}})") ==
        Problems{"tracing.otlp: required key is missing (the collector's traces URL)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "tracing": {"otlp": "ftp://x",
          "service_name": "a\nb", "queue": 0, "sampler": "always",
          "headers": {"Host": "x"}}})") ==
        Problems{
            "tracing.otlp: must be an http:// or https:// URL (the collector's OTLP/HTTP traces "
            "URL)",
            "tracing.service_name: must be 1 to 128 printable ASCII characters",
            "tracing.queue: 0 is out of range 1..1000000",
            "tracing.sampler: unknown key (known keys: otlp, service_name, headers, queue)",
            "tracing.headers.Host: may not be set (the gateway derives Host from the origin)",
        });
}

// ---------------------------------------------------------------------------------------------
// http.oauth: the resource server's settings.

TEST_CASE("http.oauth with every key is read, the rest default", "[config][oauth]") {
  const Workspace workspace;
  const Config config = workspace.load(with_http(R"({"oauth": {
    "issuer": "https://tenant.auth0.com/", "resource": "https://mcp.example.com/mcp",
    "scopes": {"search": ["mcp:read"], "execute": ["mcp:read", "mcp:execute"]},
    "extra_scopes": ["offline_access"], "jwks_refresh_s": 600, "jwks_min_interval_s": 0,
    "leeway_s": 30, "require_typ_at_jwt": true}})"));
  REQUIRE(config.http.oauth);
  const OAuth& oauth = *config.http.oauth;
  CHECK(oauth.issuer == "https://tenant.auth0.com/");
  CHECK(oauth.resource == "https://mcp.example.com/mcp");
  CHECK(oauth.tool_scopes.at("execute") == std::vector<std::string>{"mcp:read", "mcp:execute"});
  CHECK(oauth.extra_scopes == std::vector<std::string>{"offline_access"});
  CHECK(oauth.jwks_refresh_s == 600);
  CHECK(oauth.jwks_min_interval_s == 0);
  CHECK(oauth.leeway_s == 30);
  CHECK(oauth.require_typ_at_jwt);

  const Config minimal = workspace.load(with_http(
      R"({"oauth": {"issuer": "http://127.0.0.1:9000", "resource": "http://localhost:8080/mcp"}})"));
  REQUIRE(minimal.http.oauth);
  CHECK(minimal.http.oauth->tool_scopes.empty());
  CHECK(minimal.http.oauth->jwks_refresh_s == 3600);
  CHECK(minimal.http.oauth->jwks_min_interval_s == 10);
  CHECK(minimal.http.oauth->leeway_s == 60);
  CHECK_FALSE(minimal.http.oauth->require_typ_at_jwt);  // at+jwt, JWT or none
  CHECK_FALSE(workspace.load(R"({"openapi": "openapi.json"})").http.oauth);
}

TEST_CASE("http.oauth.request_scopes names the scopes reads and writes need", "[config][oauth]") {
  const Workspace workspace;
  const Config config = workspace.load(with_http(R"({"oauth": {
    "issuer": "https://as.example.com", "resource": "https://mcp.example.com/mcp",
    "request_scopes": {"read": ["api:read"], "write": ["api:write", "api:audit"]}}})"));
  REQUIRE(config.http.oauth);
  CHECK(config.http.oauth->read_scopes == std::vector<std::string>{"api:read"});
  CHECK(config.http.oauth->write_scopes == std::vector<std::string>{"api:write", "api:audit"});
  CHECK_FALSE(config.http.oauth->spec_scopes);
  CHECK(workspace
            .load(with_http(R"({"oauth": {"issuer": "https://as.example.com",
              "resource": "https://mcp.example.com/mcp", "request_scopes": {"spec": true}}})"))
            .http.oauth->spec_scopes);
  CHECK(workspace.problems(with_http(R"({"oauth": {
    "issuer": "https://as.example.com", "resource": "https://mcp.example.com/mcp",
    "request_scopes": {"delete": [], "write": ["has space"], "spec": "yes"}}})")) ==
        Problems{R"(http.oauth.request_scopes.delete: unknown key (known keys: read, write, spec))",
                 "http.oauth.request_scopes.write[0]: is not a scope (printable ASCII, no space, "
                 "'\"' or '\\')",
                 "http.oauth.request_scopes.spec: expected true or false, got a string"});
}

TEST_CASE("http.oauth problems are all reported", "[config][oauth]") {
  const Workspace workspace;
  CHECK(workspace.problems(with_http(R"({"oauth": {}})")) ==
        Problems{"http.oauth.issuer: is required", "http.oauth.resource: is required"});
  const std::string not_a_url =
      ": must be an https URL (http only on a loopback host) without query or fragment";
  CHECK(
      workspace.problems(with_http(R"({"oauth": {
    "issuer": "http://as.example.com", "resource": "https://mcp.example.com/mcp?x=1",
    "scopes": {"search": ["has space"], "fetch": []}, "jwks_refresh_s": 5, "leeway": 1,
    "require_typ_at_jwt": "yes"}})")) ==
      Problems{
          "http.oauth.issuer" + not_a_url, "http.oauth.resource" + not_a_url,
          R"(http.oauth.scopes.search[0]: is not a scope (printable ASCII, no space, '"' or '\'))",
          "http.oauth.scopes.fetch: unknown key (known keys: search, execute)",
          "http.oauth.jwks_refresh_s: 5 is out of range 60..86400",
          "http.oauth.leeway: unknown key (did you mean \"leeway_s\"?)",
          "http.oauth.require_typ_at_jwt: expected true or false, got a string"});
}

TEST_CASE("http.oauth.introspection is read with its defaults, and its problems reported",
          "[config][oauth]") {
  const Workspace workspace;
  const Config config = workspace.load(with_http(R"({"oauth": {
    "issuer": "https://as.example.com", "resource": "https://mcp.example.com/mcp",
    "introspection": {"client_id": "mcp", "client_secret": "s3cret-value", "cache_s": 60}}})"));
  REQUIRE(config.http.oauth);
  REQUIRE(config.http.oauth->introspection);
  const Introspection& introspection = *config.http.oauth->introspection;
  CHECK(introspection.endpoint.empty());
  CHECK(introspection.client_id == "mcp");
  CHECK(introspection.client_secret == "s3cret-value");
  CHECK(introspection.cache_s == 60);
  CHECK(introspection.inactive_cache_s == 10);
  CHECK(introspection.cache_entries == 10000);
  CHECK(introspection.concurrency == 8);
  CHECK(workspace.problems(with_http(R"({"oauth": {
    "issuer": "https://as.example.com", "resource": "https://mcp.example.com/mcp",
    "introspection": {"endpoint": "http://as.example.com/introspect", "client_id": "has space",
                      "cache_s": 0, "concurrency": 1000}}})")) ==
        Problems{"http.oauth.introspection.endpoint: must be an https URL (http only on a "
                 "loopback host) without query or fragment",
                 "http.oauth.introspection.client_id: must be visible ASCII without spaces",
                 "http.oauth.introspection.cache_s: 0 is out of range 1..3600",
                 "http.oauth.introspection.concurrency: 1000 is out of range 1..256",
                 "http.oauth.introspection.client_secret: is required"});
}

TEST_CASE("token_exchange on an upstream or a principal's upstream, with http.oauth",
          "[config][oauth]") {
  const Workspace workspace;
  const std::string oauth =
      R"("http": {"oauth": {"issuer": "https://as.example.com", "resource": "https://m.example.com/mcp"}})";
  const Config config = workspace.load(R"({"openapi": "openapi.json", )" + oauth + R"(,
    "upstreams": [{"origin": "https://api.example.com", "headers": {"X-Version": "2"},
                   "token_exchange": {"audience": "orders", "scope": ["orders:read"],
                                      "client_id": "mcp", "client_secret": "s3cret-value"}}],
    "principals": {"ci": {"upstreams": [{"origin": "https://api.example.com",
                                         "headers": {"Authorization": "Bearer ci-key"}}]}}})");
  REQUIRE(config.apis.at(0).upstreams.size() == 1);
  REQUIRE(config.apis.at(0).upstreams[0].token_exchange);
  const TokenExchange& exchange = *config.apis.at(0).upstreams[0].token_exchange;
  CHECK(exchange.audience == "orders");
  CHECK(exchange.resource.empty());
  CHECK(exchange.scopes == std::vector<std::string>{"orders:read"});
  CHECK(exchange.client_id == "mcp");
  CHECK(exchange.token_endpoint.empty());
  CHECK_FALSE(config.apis.at(0).principals.at("ci").upstreams[0].token_exchange);

  CHECK(workspace.problems(R"({"openapi": "openapi.json",
    "upstreams": [{"origin": "https://api.example.com", "headers": {"Authorization": "Bearer x"},
                   "token_exchange": {"client_id": "mcp", "client_secret": "s", "scopes": []}}]})") ==
        Problems{"upstreams[0].token_exchange.scopes: unknown key (did you mean \"scope\"?)",
                 "upstreams[0].token_exchange: needs an audience or a resource (what the "
                 "exchanged token is for)"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json",
    "upstreams": [{"origin": "https://api.example.com", "headers": {"Authorization": "Bearer x"},
                   "token_exchange": {"resource": "https://api.example.com", "client_id": "mcp",
                                      "client_secret": "s"}}]})") ==
        Problems{"upstreams[0].headers.Authorization: token_exchange gives this upstream's "
                 "Authorization; a static one cannot be used too",
                 "upstreams[0].token_exchange: needs http.oauth (the authorization server that "
                 "exchanges tokens)"});
}

TEST_CASE("OAuth URLs: https anywhere, http on loopback only", "[config][oauth]") {
  CHECK(is_acceptable_oauth_url("https://as.example.com"));
  CHECK(is_acceptable_oauth_url("https://as.example.com/realms/x/"));
  CHECK(is_acceptable_oauth_url("http://127.0.0.1:8080/mcp"));
  CHECK(is_acceptable_oauth_url("http://[::1]/mcp"));
  CHECK_FALSE(is_acceptable_oauth_url("http://as.example.com"));
  CHECK_FALSE(is_acceptable_oauth_url("https://as.example.com/#x"));
  CHECK_FALSE(is_acceptable_oauth_url("https://user@as.example.com/"));
  CHECK_FALSE(is_acceptable_oauth_url("as.example.com"));
}

TEST_CASE("base_path, query credentials and HTTP Basic on upstreams", "[config][upstreams]") {
  const Workspace workspace;
  const Config config =
      workspace.load(R"({"openapi": "openapi.json", "upstreams": [
      {"origin": "https://slack.com", "base_path": "/api/", "query": {"api_key": "${KEY}", "v": "2"}},
      {"origin": "https://other.example.com", "basic": {"user": "${USER}", "password": "${PASS}"}}],
    "principals": {"ci": {"upstreams": [{"origin": "https://slack.com",
                                         "query": {"api_key": "ci-key"}}]}}})",
                     {{"KEY", "k-123"}, {"USER", "Aladdin"}, {"PASS", "open sesame"}});
  CHECK(config.apis.at(0).upstreams[0].base_path == "/api");
  CHECK(config.apis.at(0).upstreams[0].query ==
        std::vector<std::pair<std::string, std::string>>{{"api_key", "k-123"}, {"v", "2"}});
  CHECK_FALSE(config.apis.at(0).upstreams[1].base_path);
  // RFC 7617's own example.
  CHECK(config.apis.at(0).upstreams[1].headers ==
        std::vector<std::pair<std::string, std::string>>{
            {"Authorization", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="}});
  CHECK(config.apis.at(0).upstreams[1].withheld ==
        std::vector<std::string>{"Aladdin:open sesame", "open sesame"});
  CHECK(config.apis.at(0).principals.at("ci").upstreams[0].query ==
        std::vector<std::pair<std::string, std::string>>{{"api_key", "ci-key"}});
  CHECK(workspace
            .load(R"({"openapi": "openapi.json", "upstreams": [{"origin": "http://a.test",
                          "base_path": "/"}]})")
            .apis.at(0)
            .upstreams[0]
            .base_path == "");

  CHECK(workspace.problems(R"({"openapi": "openapi.json", "upstreams": [
      {"origin": "http://a.test", "base_path": "api"},
      {"origin": "http://b.test", "base_path": "/v1"}]})") ==
        Problems{"upstreams[0].base_path: must be a path such as \"/api\" or \"/v2\" (segments of "
                 "URL path characters, no query, fragment or dot segments), or \"\" for the root",
                 "upstreams[1].base_path: only the first of the top-level upstreams takes a "
                 "base_path (relative URLs go to it; write absolute URLs for the others)"});
  for (const char* bad : {"/a/../b", "/a//b", "/a?x", "/a#x", "/a b", "/./a"}) {
    INFO(bad);
    CHECK(workspace
              .problems(R"({"openapi": "openapi.json", "upstreams": [{"origin": "http://a.test",
                               "base_path": ")" +
                        std::string(bad) + R"("}]})")
              .size() == 1);
  }
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "upstreams": [{"origin": "http://a.test",
      "basic": {"user": "a:b", "pass": "x"}, "query": {"k": "", "": "v"}}]})") ==
        Problems{"upstreams[0].basic.user: may hold no ':' and no control character",
                 "upstreams[0].basic.pass: unknown key (known keys: user, password)",
                 "upstreams[0].basic.password: required key is missing",
                 "upstreams[0].query.k: must not be empty",
                 "upstreams[0].query[\"\"]: a parameter name must be non-empty, without control "
                 "characters"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "upstreams": [{"origin": "http://a.test",
      "headers": {"Authorization": "Bearer x"}, "basic": {"user": "u", "password": "p"}}]})") ==
        Problems{"upstreams[0].basic: gives this upstream's Authorization; "
                 "headers.Authorization cannot be set too"});
}

TEST_CASE("name is the server's name to its clients", "[config][name]") {
  const Workspace workspace;
  CHECK(workspace.load(R"({"openapi": "openapi.json"})").name == "codemode-mcp");
  CHECK(workspace.load(R"({"openapi": "openapi.json", "name": "stripe-test.v1"})").name ==
        "stripe-test.v1");
  const Problems bad{"name: must be 1 to 64 characters of letters, digits, '-', '_' and '.'"};
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "name": "two words"})") == bad);
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "name": ""})") ==
        Problems{"name: must not be empty"});
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "name": 3})") ==
        Problems{"name: expected a string, got an integer"});
}

// ---------------------------------------------------------------------------------------------
// Several APIs: `apis`.

TEST_CASE("the single-API form is one API named default", "[config][apis]") {
  const Workspace workspace;
  const Config config = workspace.load(
      R"({"openapi": "openapi.json", "upstreams": [{"origin": "http://a.test"}], "name": "shop"})");
  REQUIRE(config.apis.size() == 1);
  CHECK(config.apis[0].name == "default");
  CHECK(config.name == "shop");
  CHECK(config.find_api("default") == &config.apis[0]);
  CHECK(config.find_api("shop") == nullptr);
}

TEST_CASE("apis holds each API's own description, upstreams, policy, limits and principals",
          "[config][apis]") {
  const Workspace workspace;
  workspace.temp().write("slack.json", R"({"openapi": "3.0.3", "paths": {}})");
  const Config config = workspace.load(R"({
    "apis": {
      "shop": {"openapi": "openapi.json",
               "upstreams": [{"origin": "http://shop.test", "headers": {"Authorization": "Bearer s"}}],
               "policy": {"methods": ["GET"]},
               "limits": {"subrequests": 3}},
      "slack": {"openapi": "slack.json",
                "upstreams": [{"origin": "https://slack.com", "base_path": "/api"}],
                "principals": {"alice": {"upstreams": [{"origin": "https://slack.com",
                                                        "headers": {"Authorization": "Bearer a"}}]}}}
    },
    "ca_file": "openapi.json",
    "http": {"tokens": [{"name": "alice", "token": "0123456789abcdef0123"}]},
    "sandbox": {"max_processes": 8}
  })");
  REQUIRE(config.apis.size() == 2);
  const Api& shop = config.apis[0];  // in file order
  const Api& slack = config.apis[1];
  CHECK(shop.name == "shop");
  CHECK(shop.openapi == workspace.dir() / "openapi.json");
  REQUIRE(shop.upstreams.size() == 1);
  CHECK(shop.upstreams[0].origin == "http://shop.test");
  CHECK(shop.upstreams[0].headers == Headers{{"Authorization", "Bearer s"}});
  CHECK(shop.policy.methods == std::vector<std::string>{"GET"});
  CHECK(shop.limits.subrequests == 3);
  CHECK(shop.principals.empty());
  CHECK(slack.name == "slack");
  CHECK(slack.openapi == workspace.dir() / "slack.json");
  CHECK(slack.upstreams[0].base_path == "/api");
  CHECK(slack.policy.methods.empty());
  check_default_limits(slack.limits);
  REQUIRE(slack.principals.count("alice") == 1);
  CHECK(slack.principals.at("alice").upstreams[0].headers ==
        Headers{{"Authorization", "Bearer a"}});
  CHECK(config.ca_file == workspace.dir() / "openapi.json");
  CHECK(config.sandbox.max_processes == 8);
  CHECK(config.find_api("slack") == &slack);
  CHECK(config.find_api("github") == nullptr);
}

TEST_CASE("apis beside the single-API form's keys is a problem naming both", "[config][apis]") {
  const Workspace workspace;
  CHECK(workspace.problems(R"({"openapi": "openapi.json", "limits": {"cpu_ms": 0},
                               "apis": {"a": {"openapi": "openapi.json"}}})") ==
        Problems{
            "openapi: cannot stand beside \"apis\": with several APIs each has its own "
            "(apis.NAME.openapi)",
            "limits: cannot stand beside \"apis\": with several APIs each has its own "
            "(apis.NAME.limits)",
        });
}

TEST_CASE("every API's problems are reported at once, each under apis.NAME", "[config][apis]") {
  const Workspace workspace;
  CHECK(workspace.problems(R"({"apis": {
      "a": {"openapi": "missing.json", "upstreams": [{"origin": "ftp://a.test"}],
            "limits": {"cpu_ms": 0}},
      "b": {"upstreams": [{"origin": "http://b.test", "headers": {"X-Key": "${B_KEY}"}}],
            "policy": {"methods": ["FETCH"]},
            "principals": {"alice": {"upstreams": [{"origin": "ftp://a.test"}]}}},
      "c": {"openapi": "openapi.json", "opneapi": "x", "http": {}, "ca_file": "openapi.json",
            "principals": {"bob": {"upstreams": [{"origin": "http://a.test"}]}}}
    }, "sandbox": {"max_processes": 0}})") ==
        Problems{
            "apis.a.openapi: cannot read " + (workspace.dir() / "missing.json").string() +
                ": No such file or directory",
            "apis.a.upstreams[0].origin: scheme must be http or https",
            "apis.a.limits.cpu_ms: 0 is out of range 1..600000",
            "apis.b.upstreams[0].headers.X-Key: environment variable B_KEY is not set",
            "apis.b.policy.methods[0]: must be one of GET, HEAD, POST, PUT, PATCH, DELETE",
            "apis.b.principals.alice.upstreams[0].origin: scheme must be http or https",
            "apis.b.openapi: required key is missing (the path of the OpenAPI document)",
            "apis.c.opneapi: unknown key (did you mean \"openapi\"?)",
            "apis.c.http: is shared by every API: set it once, at the top level",
            "apis.c.ca_file: is shared by every API: set it once, at the top level",
            "sandbox.max_processes: 0 is out of range 1..1024",
            // The checks across an API's sections come last, as in the single-API form.
            "apis.c.principals.bob.upstreams[0].origin: not one of the top-level upstreams (a "
            "principal's entry gives headers for a configured origin; it does not add one)",
        });
}

TEST_CASE("an API's name is a path segment", "[config][apis]") {
  const Workspace workspace;
  const std::string kRule =
      "an API's name is 1 to 32 characters of a-z, 0-9, '_' and '-' (its path is /mcp/NAME)";
  CHECK(workspace.problems(R"({"apis": {"GitHub": {"openapi": "openapi.json"},
                                        "a/b": {"openapi": "openapi.json"},
                                        "": {"openapi": "openapi.json"},
                                        "abcdefghijklmnopqrstuvwxyz0123456": {"openapi": "openapi.json"},
                                        "ok_name-2": {"openapi": "openapi.json"}}})") ==
        Problems{"apis.GitHub: " + kRule, R"(apis["a/b"]: )" + kRule, R"(apis[""]: )" + kRule,
                 "apis.abcdefghijklmnopqrstuvwxyz0123456: " + kRule});
  CHECK(workspace
            .load(R"({"apis": {"abcdefghijklmnopqrstuvwxyz012345": {"openapi":
                          "openapi.json"}}})")
            .apis[0]
            .name == "abcdefghijklmnopqrstuvwxyz012345");
  CHECK(workspace.problems(R"({"apis": {}})") == Problems{"apis: must name at least one API"});
  CHECK(workspace.problems(R"({"apis": []})") ==
        Problems{"apis: expected an object, got an array"});
  CHECK(workspace.problems(R"({"apis": {"a": 5}})") ==
        Problems{"apis.a: expected an object, got an integer"});
}

TEST_CASE("an API's token exchange needs the shared http.oauth", "[config][apis][oauth]") {
  const Workspace workspace;
  CHECK(workspace.problems(R"({"apis": {"a": {"openapi": "openapi.json", "upstreams": [
      {"origin": "https://a.test", "token_exchange": {"audience": "a", "client_id": "c",
                                                     "client_secret": "s"}}]}}})") ==
        Problems{"apis.a.upstreams[0].token_exchange: needs http.oauth (the authorization server "
                 "that exchanges tokens)"});
}

}  // namespace
}  // namespace codemode::config
