// codemode-mcp: parse the command line, load the config and the API description, run the daemon.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <iostream>
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
#include "sandbox/child.h"
#include "sandbox/sandbox.h"
#include "sandbox/v8_platform.h"
#include "server/daemon.h"

namespace {

constexpr std::string_view kUsage = R"(codemode-mcp — Code Mode for one HTTP API, as an MCP server.

The model gets two tools and writes a short async JavaScript function for each call:
  search   runs the code with `spec`, the API's OpenAPI document, and nothing else
  execute  runs the code with fetch(), which reaches only the configured upstreams;
           credentials are added by the server and never visible to the code

Usage:
  codemode-mcp                     serve the built-in MarketHub demo API over stdio
  codemode-mcp --config FILE       serve the API described by FILE over stdio
  codemode-mcp --http :8080        serve MCP Streamable HTTP on http://127.0.0.1:8080/mcp

Options:
  --config FILE       JSON config: openapi, upstreams, policy, limits, http, sandbox (README.md)
  --http HOST:PORT    serve Streamable HTTP on /mcp instead of stdio. HOST is an IP address or
                      localhost (default 127.0.0.1: `--http :8080` or `--http 8080`); PORT 0
                      picks a free port. The bound URL is logged: "listening on http://.../mcp"
  --stdio             with --http: serve stdio as well (stdin EOF then stops both)
  --http-stateless    no MCP sessions: every POST is served on its own (any replica can serve
                      any request); no Mcp-Session-Id, no DELETE
  --allow-unauthenticated-network-access
                      allow --http on a non-loopback address with no http.bearer_tokens
                      (refused by default: anyone who reaches the port could run tools)
  --jitless           run isolates without V8's JIT compilers (as "sandbox": {"jitless": true}):
                      less attack surface, slower code that computes (README.md, Security)
  --log-level LEVEL   stderr log level: trace, debug, info, warn, error, off (default: info);
                      at debug, sandbox processes write to stderr too
  --sandbox-report    start one sandbox process, print which isolation layers (namespaces,
                      seccomp, rlimits, ...) this machine allows, and exit
  --version           print the version (and the V8 it runs code on) and exit
  -h, --help          print this help and exit

Tool code runs in sandbox processes that this binary starts from itself (one per core, each
replaced after 1000 calls or any failure); the start-up log names their isolation layers.

Over stdio, MCP messages use stdin and stdout (one JSON-RPC message per line); logs go to
stderr. The server exits 0 when stdin closes (stdio) or on SIGINT/SIGTERM, after running calls
finish.
Exit status 2: bad arguments or config (one line per problem on stderr).
)";

constexpr const char* kInstructions =
    "Use `search` to find the endpoints you need in the API description, then `execute` to call "
    "them. Both take one async JavaScript arrow function and return its result as JSON.";

struct Arguments {
  std::optional<std::string> config_file;
  std::string log_level = "info";
  std::optional<codemode::server::HttpEndpoint> http;
  bool stdio = false;  // --stdio given
  bool http_stateless = false;
  bool jitless = false;  // --jitless: as the config's sandbox.jitless
  bool allow_unauthenticated_network_access = false;
  bool sandbox_report = false;
};

int sandbox_report() {
  auto layers = codemode::sandbox::probe_layers(codemode::sandbox::daemon_child_command());
  if (auto* error = std::get_if<std::string>(&layers)) {
    std::cerr << "codemode-mcp: no sandbox process could start: " << *error << "\n";
    return 1;
  }
  std::cout << "Isolation layers of a sandbox process on this machine:\n";
  for (const auto& layer : std::get<std::vector<std::string>>(layers)) {
    std::cout << "  " << layer << "\n";
  }
  return 0;
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
  // The sandbox-process role (sandbox/child.h): started by the daemon itself, never by users.
  if (argc == 2 && std::string_view(argv[1]) == "--sandbox-child") {
    ::_exit(codemode::sandbox::child_main());
  }
  Arguments args;
  std::vector<std::string_view> argv_list(argv + 1, argv + argc);
  for (std::size_t i = 0; i < argv_list.size(); ++i) {
    const std::string_view arg = argv_list[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= argv_list.size()) return std::nullopt;
      return std::string(argv_list[++i]);
    };
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--version") {
      std::cout << "codemode-mcp " << CODEMODE_VERSION << "\n"
                << "V8 " << codemode::sandbox::v8_version() << " (Debian's libnode108)\n";
      return 0;
    } else if (arg == "--config") {
      args.config_file = value();
      if (!args.config_file) return usage_error("--config needs a file");
    } else if (arg == "--log-level") {
      auto level = value();
      if (!level) return usage_error("--log-level needs a level");
      if (spdlog::level::from_str(*level) == spdlog::level::off && *level != "off") {
        return usage_error("unknown log level '" + *level + "'");
      }
      args.log_level = *level;
    } else if (arg == "--http") {
      auto text = value();
      if (!text) return usage_error("--http needs HOST:PORT, e.g. 127.0.0.1:8080 or :8080");
      args.http = codemode::server::parse_endpoint(*text);
      if (!args.http) {
        return usage_error("--http: '" + *text +
                           "' is not HOST:PORT (HOST an IP address or localhost, PORT 0-65535)");
      }
    } else if (arg == "--stdio") {
      args.stdio = true;
    } else if (arg == "--http-stateless") {
      args.http_stateless = true;
    } else if (arg == "--allow-unauthenticated-network-access") {
      args.allow_unauthenticated_network_access = true;
    } else if (arg == "--sandbox-report") {
      args.sandbox_report = true;
    } else if (arg == "--jitless") {
      args.jitless = true;
    } else {
      return usage_error("unknown argument '" + std::string(arg) + "'");
    }
  }

  if (!args.http &&
      (args.stdio || args.http_stateless || args.allow_unauthenticated_network_access)) {
    return usage_error(args.stdio ? "--stdio only makes sense with --http (stdio is the default)"
                                  : "--http-stateless and --allow-unauthenticated-network-access "
                                    "need --http");
  }

  if (args.sandbox_report) return sandbox_report();

  // stdout is the protocol channel: every log line goes to stderr.
  auto logger = spdlog::stderr_color_mt("codemode");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(spdlog::level::from_str(args.log_level));
  spdlog::set_default_logger(logger);
  // A client that exits mid-write must not kill us with SIGPIPE; the write reports it instead.
  std::signal(SIGPIPE, SIG_IGN);

  codemode::config::Config config;
  codemode::openapi::LoadResult api;
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
    api = codemode::openapi::load_file(config.openapi);
  } else {
    // The embedded default: the MarketHub demo API, in-process, reachable only with a token
    // generated now and known only to this process.
    const std::string token = random_token();
    demo.emplace(codemode::fixtures::MarkethubOptions{"127.0.0.1", 0, token});
    demo->start();
    config.upstreams.push_back({demo->origin(), {{"Authorization", "Bearer " + token}}});
    api = codemode::openapi::parse_json(codemode::fixtures::markethub_openapi_json());
  }
  if (args.jitless) config.sandbox.jitless = true;
  if (!api.document) {
    for (const auto& problem : api.problems) std::cerr << "openapi: " << problem << "\n";
    return 2;
  }

  for (const auto& warning : api.document->warnings) spdlog::warn("openapi: {}", warning);
  spdlog::info("serving {} {}: {} paths, {} $refs ({} circular)", api.document->title,
               api.document->version, api.document->path_count, api.document->refs.size(),
               api.document->refs.circular_count());
  spdlog::info("code runs on V8 {}{}", codemode::sandbox::v8_version(),
               config.sandbox.jitless ? " without its JIT (sandbox.jitless)" : "");

  const bool serve_stdio = !args.http || args.stdio;
  std::optional<codemode::server::HttpOptions> http;
  if (args.http) {
    if (!codemode::server::is_loopback(args.http->host) && config.http.bearer_tokens.empty() &&
        !args.allow_unauthenticated_network_access) {
      std::cerr << "codemode-mcp: refusing to serve --http on " << args.http->host
                << ", which is not a loopback address, without authentication: set "
                   "http.bearer_tokens in the config, bind 127.0.0.1, or pass "
                   "--allow-unauthenticated-network-access\n";
      return 2;
    }
    http = codemode::server::HttpOptions{
        .endpoint = *args.http,
        .mode = args.http_stateless ? codemode::server::HttpMode::stateless
                                    : codemode::server::HttpMode::stateful,
        .allowed_origins = config.http.allowed_origins,
        .bearer_tokens = config.http.bearer_tokens,
    };
  }

  if (serve_stdio && ::isatty(STDIN_FILENO)) {
    std::cerr << "codemode-mcp " << CODEMODE_VERSION << ": serving MCP on stdio for "
              << api.document->title
              << (demo ? " (the built-in demo at " + demo->origin() + ")" : "")
              << ".\nIt expects an MCP client on stdin/stdout, one JSON-RPC message per line; "
                 "add this command to your client's MCP servers (see README.md).\n"
                 "Press Ctrl-D or Ctrl-C to stop.\n";
  }

  codemode::server::Daemon daemon(codemode::server::DaemonOptions{
      .config = std::move(config),
      .api = std::move(*api.document),
      .info = {.name = "codemode-mcp", .version = CODEMODE_VERSION, .instructions = kInstructions},
      .serve_stdio = serve_stdio,
      .http = std::move(http),
      .sandbox_stderr = logger->level() <= spdlog::level::debug
                            ? codemode::sandbox::ChildStderr::inherit
                            : codemode::sandbox::ChildStderr::discard,
  });
  const int status = daemon.run();
  codemode::sandbox::shutdown_v8();  // every sandbox worker has been joined by now
  return status;
}
