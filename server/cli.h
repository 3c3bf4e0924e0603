// The command line: what `codemode-mcp ARGS…` asks for, as a value main() acts on.
//
// Pure: parsing reads only its arguments (no I/O, no environment), so every rule (which option
// needs a value, which needs --http, what an unknown argument says) is tested without starting
// a process. main() prints the usage or the error and chooses the exit status; the daemon never
// sees an argument.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "audit/cli.h"
#include "config/config.h"
#include "sandbox/layers.h"
#include "transport/http_policy.h"
#include "transport/http_transport.h"

namespace codemode::server {

// What a command line asks main() to serve.
struct ServeOptions {
  std::optional<std::string> config_file;  // --config FILE; absent: the embedded MarketHub demo
  // --api NAME: the API stdio serves (stdio_api). Absent: the config's only API.
  std::optional<std::string> api;
  std::string log_level = "info";           // --log-level: trace, debug, info, warn, error, off
  std::optional<HttpEndpoint> http;         // --http HOST:PORT; absent: stdio only
  std::optional<HttpEndpoint> metrics;      // --metrics HOST:PORT: /metrics on its own listener
  bool stdio_too = false;                   // --stdio: with --http, serve stdio as well
  HttpMode http_mode = HttpMode::stateful;  // --http-stateless
  bool jitless = false;                     // --jitless: as the config's sandbox.jitless
  // --allow-unauthenticated-network-access: a non-loopback --http bind without bearer tokens.
  bool allow_unauthenticated_network_access = false;
  // --require-sandbox-layers LIST: start-up fails unless a probe sandbox process reports these
  // layers on. Absent: main() reads CODEMODE_REQUIRE_SANDBOX_LAYERS (same grammar), else none.
  std::optional<sandbox::LayerSet> required_layers;
};

// The one-shot actions that exit before serving.
enum class CliAction { help, version };

// --sandbox-report: print the layers a sandbox process gets here; with --require-sandbox-layers
// (or its variable), exit 1 when one of those is not on.
struct SandboxReport {
  std::optional<sandbox::LayerSet> required_layers;
};

// --healthcheck HOST:PORT: GET http://HOST:PORT/healthz once and exit 0 on 200, 1 otherwise.
// For a container's HEALTHCHECK, where the image has no shell and no curl.
struct Healthcheck {
  HttpEndpoint endpoint;
};

// A usage error: one line, printed after "codemode-mcp: "; exit status 2.
struct CliError {
  std::string message;
};

// `codemode-mcp audit ...` reads the audit trail (audit/cli.h) instead of serving.
using CommandLine =
    std::variant<ServeOptions, CliAction, SandboxReport, Healthcheck, CliError, audit::ReadCommand>;

// Parses the arguments after the program name. A first argument `audit` starts the audit
// reader's own grammar: `audit --config FILE tail|query|verify [FILTERS]`. The first of --help,
// --version wins at once (as they print and exit); --sandbox-report is checked after every argument
// parsed; --healthcheck takes no other option.
CommandLine parse_command_line(std::span<const std::string_view> args);

// Which of the config's APIs stdio serves (an index into config.apis): the one --api names, or
// the only one; a config with several and no --api, or an --api naming none of them, is a usage
// error naming the choices. Checked once the config is read, before anything is built.
std::variant<std::size_t, CliError> stdio_api(const ServeOptions& options,
                                              const config::Config& config);

// The text of --help.
std::string_view usage_text();

// CODEMODE_REQUIRE_SANDBOX_LAYERS's value as the layer set it names (`all`, `none`, a list), or
// the one-line error; `flag` is what --require-sandbox-layers gave, which wins. Pure: main()
// passes the variable's value (nullptr when unset).
std::variant<sandbox::LayerSet, CliError> required_layers(
    const std::optional<sandbox::LayerSet>& flag, const char* environment_value);

// Why a daemon with these options and `bearer_tokens` configured tokens (config::Http's one list,
// from both `http.tokens` and `http.bearer_tokens`) must not serve HTTP,
// or nothing: a non-loopback address with no token is refused (anyone who reaches the port
// could run tools) unless the long-named opt-out was given.
std::optional<std::string> refuse_network_bind(const ServeOptions& options,
                                               std::size_t bearer_tokens);

}  // namespace codemode::server
