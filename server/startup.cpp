#include "server/startup.h"

#include <map>
#include <random>
#include <utility>

#include <spdlog/spdlog.h>

#include "sandbox/engine.h"
#include "server/assemble.h"
#include "server/upstreams.h"

namespace codemode::server {

namespace {

std::string random_token() {
  std::random_device random;
  std::string token = "demo-";
  constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) token += kHex[random() % 16];
  return token;
}

// The embedded default: the MarketHub demo API, in-process, reachable only with a token
// generated now and known only to this process; its description is given by name to
// load_descriptions.
std::optional<LoadProblems> start_demo(Loaded& loaded,
                                       std::map<std::string, openapi::Document>& built_in) {
  const std::string token = random_token();
  loaded.demo = std::make_unique<fixtures::MarkethubServer>(
      fixtures::MarkethubOptions{"127.0.0.1", 0, token});
  loaded.demo->start();
  config::Api api;
  api.name = std::string(config::kDefaultApiName);
  config::Upstream upstream;
  upstream.origin = loaded.demo->origin();
  upstream.headers = {{"Authorization", "Bearer " + token}};
  api.upstreams.push_back(std::move(upstream));
  loaded.config.apis.push_back(std::move(api));
  auto parsed = openapi::parse_json(fixtures::markethub_openapi_json());
  if (!parsed.document) {
    LoadProblems problems;
    for (const auto& problem : parsed.problems) problems.lines.push_back("openapi: " + problem);
    return problems;
  }
  built_in.emplace(config::kDefaultApiName, std::move(*parsed.document));
  return std::nullopt;
}

}  // namespace

std::variant<Loaded, CliError, LoadProblems> load_served(const ServeOptions& options) {
  Loaded loaded;
  std::map<std::string, openapi::Document> built_in;
  if (options.config_file) {
    auto read = config::load_file(*options.config_file, config::process_environment());
    if (!read.config) {
      LoadProblems problems;
      for (const auto& problem : read.problems) {
        problems.lines.push_back(*options.config_file + ": " + problem);
      }
      return problems;
    }
    loaded.config = std::move(*read.config);
  } else if (auto problems = start_demo(loaded, built_in)) {
    return *std::move(problems);
  }
  config::Config& config = loaded.config;
  if (options.jitless) config.sandbox.jitless = true;
  if (serves_stdio(options)) {
    const auto chosen = stdio_api(options, config);
    if (const auto* error = std::get_if<CliError>(&chosen)) return *error;
    loaded.stdio_api = std::get<std::size_t>(chosen);
    if (!options.http) {
      // Only the API stdio serves is built: the others' descriptions are not even read.
      config::Api only = std::move(config.apis[loaded.stdio_api]);
      config.apis.clear();
      config.apis.push_back(std::move(only));
      loaded.stdio_api = 0;
    }
  }
  auto described = load_descriptions(config, std::move(built_in));
  if (auto* found = std::get_if<std::vector<std::string>>(&described)) {
    // Prefixed as every config problem is: the user looks at the config file first.
    LoadProblems problems;
    for (auto& problem : *found) {
      problems.lines.push_back((options.config_file ? *options.config_file + ": " : std::string()) +
                               problem);
    }
    return problems;
  }
  loaded.documents = std::get<std::vector<openapi::Document>>(std::move(described));
  return loaded;
}

void log_served(const ServeOptions& options, const Loaded& loaded) {
  const config::Config& config = loaded.config;
  for (std::size_t i = 0; i < loaded.documents.size(); ++i) {
    const auto& document = loaded.documents[i];
    const std::string path = path_of(config, config.apis[i]);
    for (const auto& warning : document.warnings) spdlog::warn("{}openapi: {}", path, warning);
    spdlog::info("{}serving {} {}: {} paths, {} $refs ({} circular)",
                 path.empty() ? "" : config.apis[i].name + ": ", document.title, document.version,
                 document.path_count, document.refs.size(), document.refs.circular_count());
    if (options.config_file) warn_unlike_servers(document, config.apis[i], path);
  }
  spdlog::info("code runs on V8 {} (node {}){}", sandbox::engine_v8_version(),
               sandbox::engine_node_version(),
               config.sandbox.jitless ? " without its JIT (sandbox.jitless)" : "");
}

std::variant<std::optional<HttpOptions>, std::string> http_options(const ServeOptions& options,
                                                                   const config::Config& config) {
  if (!options.http) return std::optional<HttpOptions>();
  // OAuth authenticates every /mcp request too: it counts as a way in, like a static token.
  const std::size_t ways_in = config.http.bearer_tokens.size() + (config.http.oauth ? 1 : 0);
  if (auto refusal = refuse_network_bind(options, ways_in)) return *refusal;
  HttpOptions http;
  http.endpoint = *options.http;
  http.mode = options.http_mode;
  http.allowed_origins = config.http.allowed_origins;
  http.bearer_tokens = config.http.bearer_tokens;
  http.oauth = config.http.oauth;
  http.max_requests_per_principal =
      std::size_t{config.sandbox.principal_calls} + config.sandbox.principal_queue;
  return std::optional<HttpOptions>(std::move(http));
}

}  // namespace codemode::server
