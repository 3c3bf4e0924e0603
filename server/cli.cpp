#include "server/cli.h"

#include <spdlog/common.h>

namespace codemode::server {

namespace {

constexpr std::string_view kUsage = R"(codemode-mcp — Code Mode for HTTP APIs, as an MCP server.

The model gets two tools and writes a short async JavaScript function for each call:
  search   runs the code with `spec`, the API's OpenAPI document, and nothing else
  execute  runs the code with fetch(), which reaches only the configured upstreams;
           credentials are added by the server and never visible to the code

Usage:
  codemode-mcp                     serve the built-in MarketHub demo API over stdio
  codemode-mcp --config FILE       serve the API described by FILE over stdio
  codemode-mcp --http :8080        serve MCP Streamable HTTP on http://127.0.0.1:8080/mcp
  codemode-mcp --config FILE --api NAME
                                   serve one of the config's APIs ("apis") over stdio

Options:
  --config FILE       JSON config: openapi, upstreams, policy, limits, http, sandbox (README.md);
                      several APIs under "apis": {"NAME": {"openapi": ..., ...}, ...}
  --api NAME          the API that stdio serves, when the config has several (required then;
                      a config with one API needs none). Over HTTP each API of several is
                      served at /mcp/NAME, one alone at /mcp
  --http HOST:PORT    serve Streamable HTTP on /mcp instead of stdio. HOST is an IP address or
                      localhost (default 127.0.0.1: `--http :8080` or `--http 8080`); PORT 0
                      picks a free port. The bound URL is logged: "listening on http://.../mcp"
  --stdio             with --http: serve stdio as well (stdin EOF then stops both)
  --http-stateless    no MCP sessions: every POST is served on its own (any replica can serve
                      any request); no Mcp-Session-Id, no DELETE
  --allow-unauthenticated-network-access
                      allow --http on a non-loopback address with no token in http.tokens
                      or http.bearer_tokens (refused by default: anyone who reaches the
                      port could run tools)
  --metrics HOST:PORT serve the Prometheus metrics (GET /metrics, no token) on a listener of
                      its own, with stdio or --http (HOST, PORT as for --http; the bound URL is
                      logged: "metrics on http://.../metrics"). With --http, /metrics is also
                      served on the MCP port, behind its bearer token
  --jitless           run isolates without V8's JIT compilers (as "sandbox": {"jitless": true}):
                      less attack surface, slower code that computes (README.md, Security)
  --log-level LEVEL   stderr log level: trace, debug, info, warn, error, off (default: info);
                      at debug, sandbox processes write to stderr too
  audit --config FILE tail|query|verify [--since T] [--until T] [--principal NAME]
        [--tool NAME] [--outcome KIND] [--path PREFIX] [--server NAME] [--kind call|request]
        [--limit N] [--format json|table]
                      read the audit trail the config's "audit" section names: follow it
                      (tail), select from it (query; JSON lines by default), or check its
                      hash chains (verify; exit 1 at the first break). T: 2026-12-03T10:00:00Z,
                      2026-12-03, or an age: 30s, 15m, 2h, 7d
  --sandbox-report    start one sandbox process, print which isolation layers (namespaces,
                      seccomp, rlimits, ...) this machine allows, and exit (1 when a layer
                      that --require-sandbox-layers names is not on)
  --require-sandbox-layers LIST
                      refuse to start (exit 1, naming each layer and why it is off) unless
                      a sandbox process gets these layers: all, none (the default), or a
                      comma-separated list of process, namespaces, rlimits, address-space,
                      empty-root, no-new-privs, seccomp. Without the option, the variable
                      CODEMODE_REQUIRE_SANDBOX_LAYERS gives the list (the container image
                      sets it to all)
  --healthcheck HOST:PORT
                      GET http://HOST:PORT/healthz once; exit 0 on 200, else 1 (a container
                      HEALTHCHECK where the image has no shell or curl)
  --version           print the version (and the V8 it runs code on) and exit
  -h, --help          print this help and exit

Tool code runs in sandbox processes that this binary starts from itself (one per core, each
replaced after 1000 calls or any failure); the start-up log names their isolation layers.

Over stdio, MCP messages use stdin and stdout (one JSON-RPC message per line); logs go to
stderr. The server exits 0 when stdin closes (stdio) or on SIGINT/SIGTERM, after running calls
finish.
Exit status 2: bad arguments or config (one line per problem on stderr).
)";

CliError error(std::string message) { return CliError{std::move(message)}; }

// `audit --config FILE ACTION [FILTERS]`, options in any order.
CommandLine parse_audit(std::span<const std::string_view> args) {
  audit::ReadCommand command;
  std::optional<std::string_view> action;
  bool saw_config = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    if (!arg.starts_with("--")) {
      if (action) return error("audit: one action only (tail, query or verify)");
      action = arg;
      continue;
    }
    if (i + 1 >= args.size()) return error("audit: " + std::string(arg) + " needs a value");
    std::string value(args[++i]);
    std::optional<std::string>* field = nullptr;
    if (arg == "--config") {
      command.config_file = value;
      saw_config = true;
    } else if (arg == "--since") {
      field = &command.since;
    } else if (arg == "--until") {
      field = &command.until;
    } else if (arg == "--server") {
      field = &command.server;
    } else if (arg == "--principal") {
      field = &command.principal;
    } else if (arg == "--tool") {
      field = &command.tool;
    } else if (arg == "--outcome") {
      field = &command.outcome;
    } else if (arg == "--path") {
      field = &command.path;
    } else if (arg == "--kind") {
      if (value != "call" && value != "request") return error("audit: --kind is call or request");
      field = &command.kind;
    } else if (arg == "--format") {
      if (value != "json" && value != "table") return error("audit: --format is json or table");
      command.format =
          value == "json" ? audit::ReadCommand::Format::json : audit::ReadCommand::Format::table;
    } else if (arg == "--limit") {
      const bool digits = !value.empty() && value.size() <= 7 &&
                          value.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoul(value) == 0) {
        return error("audit: --limit is a number from 1 to 9999999");
      }
      command.limit = std::stoul(value);
    } else {
      return error("audit: unknown argument '" + std::string(arg) + "'");
    }
    if (field) *field = std::move(value);
  }
  if (!action) return error("audit: which action? tail, query or verify");
  if (*action == "tail") {
    command.action = audit::ReadCommand::Action::tail;
  } else if (*action == "query") {
    command.action = audit::ReadCommand::Action::query;
  } else if (*action == "verify") {
    command.action = audit::ReadCommand::Action::verify;
  } else {
    return error("audit: unknown action '" + std::string(*action) + "' (tail, query or verify)");
  }
  if (!saw_config) return error("audit: --config FILE is needed (the config names the store)");
  return command;
}

// `--healthcheck HOST:PORT`, alone on the command line.
CommandLine parse_healthcheck(std::span<const std::string_view> args) {
  if (args.size() != 2) return error("--healthcheck takes HOST:PORT and no other option");
  auto endpoint = parse_endpoint(args[1]);
  if (!endpoint) {
    return error("--healthcheck: '" + std::string(args[1]) +
                 "' is not HOST:PORT (HOST an IP address or localhost, PORT 0-65535)");
  }
  return Healthcheck{*endpoint};
}

// Options that are each well formed but make no sense together: the ones that only --http
// serves without it, and --api over HTTP alone (where every API has its own path).
std::optional<CliError> options_conflict(const ServeOptions& options) {
  if (!options.http) {
    if (options.stdio_too)
      return error("--stdio only makes sense with --http (stdio is the default)");
    if (options.http_mode == HttpMode::stateless || options.allow_unauthenticated_network_access) {
      return error("--http-stateless and --allow-unauthenticated-network-access need --http");
    }
  }
  if (options.api && options.http && !options.stdio_too) {
    return error("--api picks the API stdio serves; over HTTP each API is served at /mcp/NAME");
  }
  return std::nullopt;
}

}  // namespace

std::string_view usage_text() { return kUsage; }

CommandLine parse_command_line(std::span<const std::string_view> args) {
  if (!args.empty() && args[0] == "audit") return parse_audit(args.subspan(1));
  if (!args.empty() && args[0] == "--healthcheck") return parse_healthcheck(args);
  ServeOptions options;
  bool sandbox_report = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    // `--config=FILE` as well as `--config FILE`, as most command lines accept.
    std::optional<std::string> inline_value;
    if (const auto equals = arg.find('=');
        arg.starts_with("--") && equals != std::string_view::npos) {
      inline_value = std::string(arg.substr(equals + 1));
      arg = arg.substr(0, equals);
    }
    bool value_taken = false;
    auto value = [&]() -> std::optional<std::string> {
      value_taken = true;
      if (inline_value) return inline_value;
      if (i + 1 >= args.size()) return std::nullopt;
      return std::string(args[++i]);
    };
    if (arg == "--config" && options.config_file) {
      return error("--config is given twice; one config file is read (it names everything)");
    }
    if (arg == "-h" || arg == "--help") {
      return CliAction::help;
    } else if (arg == "--version") {  // NOLINT(readability-else-after-return): one chain of options
      return CliAction::version;
    } else if (arg == "--config") {
      options.config_file = value();
      if (!options.config_file) return error("--config needs a file");
    } else if (arg == "--log-level") {
      auto level = value();
      if (!level) return error("--log-level needs a level");
      if (spdlog::level::from_str(*level) == spdlog::level::off && *level != "off") {
        return error("unknown log level '" + *level + "'");
      }
      options.log_level = *level;
    } else if (arg == "--http") {
      auto text = value();
      if (!text) return error("--http needs HOST:PORT, e.g. 127.0.0.1:8080 or :8080");
      options.http = parse_endpoint(*text);
      if (!options.http) {
        return error("--http: '" + *text +
                     "' is not HOST:PORT (HOST an IP address or localhost, PORT 0-65535)");
      }
    } else if (arg == "--metrics") {
      auto text = value();
      if (!text) return error("--metrics needs HOST:PORT, e.g. 127.0.0.1:9464 or :9464");
      options.metrics = parse_endpoint(*text);
      if (!options.metrics) {
        return error("--metrics: '" + *text +
                     "' is not HOST:PORT (HOST an IP address or localhost, PORT 0-65535)");
      }
    } else if (arg == "--api") {
      options.api = value();
      if (!options.api) return error("--api needs the name of one of the config's APIs");
    } else if (arg == "--stdio") {
      options.stdio_too = true;
    } else if (arg == "--http-stateless") {
      options.http_mode = HttpMode::stateless;
    } else if (arg == "--allow-unauthenticated-network-access") {
      options.allow_unauthenticated_network_access = true;
    } else if (arg == "--sandbox-report") {
      sandbox_report = true;
    } else if (arg == "--jitless") {
      options.jitless = true;
    } else if (arg == "--require-sandbox-layers") {
      auto text = value();
      if (!text) return error("--require-sandbox-layers needs a list, e.g. all");
      auto parsed = sandbox::parse_layer_set(*text);
      if (auto* bad = std::get_if<sandbox::LayerSetError>(&parsed)) {
        return error("--require-sandbox-layers: " + bad->message);
      }
      options.required_layers = std::get<sandbox::LayerSet>(parsed);
    } else if (arg == "--healthcheck") {
      return error("--healthcheck takes HOST:PORT and no other option");
    } else {
      return error("unknown argument '" + std::string(args[i]) + "'");
    }
    if (inline_value && !value_taken) return error(std::string(arg) + " takes no value");
  }
  if (auto problem = options_conflict(options)) return *problem;
  if (sandbox_report) return SandboxReport{options.required_layers};
  return options;
}

std::variant<std::size_t, CliError> stdio_api(const ServeOptions& options,
                                              const config::Config& config) {
  std::string names;
  for (const auto& api : config.apis) names += (names.empty() ? "" : ", ") + api.name;
  if (!options.api) {
    if (config.apis.size() == 1) return std::size_t{0};
    return error("the config has several APIs (" + names +
                 "): choose the one stdio serves with --api NAME");
  }
  for (std::size_t i = 0; i < config.apis.size(); ++i) {
    if (config.apis[i].name == *options.api) return i;
  }
  return error("--api " + *options.api + ": the config has no such API (it has " + names + ")");
}

std::variant<sandbox::LayerSet, CliError> required_layers(
    const std::optional<sandbox::LayerSet>& flag, const char* environment_value) {
  if (flag) return *flag;
  if (environment_value == nullptr) return sandbox::LayerSet{};
  auto parsed = sandbox::parse_layer_set(environment_value);
  if (auto* bad = std::get_if<sandbox::LayerSetError>(&parsed)) {
    return error("CODEMODE_REQUIRE_SANDBOX_LAYERS: " + bad->message);
  }
  return std::get<sandbox::LayerSet>(parsed);
}

std::optional<std::string> refuse_network_bind(const ServeOptions& options,
                                               std::size_t bearer_tokens) {
  if (!options.http || is_loopback(options.http->host) || bearer_tokens > 0 ||
      options.allow_unauthenticated_network_access) {
    return std::nullopt;
  }
  return "refusing to serve --http on " + options.http->host +
         ", which is not a loopback address, without authentication: set http.tokens (or "
         "http.bearer_tokens) in the config, bind 127.0.0.1, or pass "
         "--allow-unauthenticated-network-access";
}

}  // namespace codemode::server
