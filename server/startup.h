// What `codemode-mcp` serves, read before anything is built: the config (or, without --config,
// the embedded MarketHub demo, started in-process), the API stdio serves, and each API's
// description; then the start-up log that says what is served and how HTTP is set up.
//
// A problem here ends the start with exit status 2 before any part is built: a config problem,
// an --api that names none of the config's APIs, a description that does not load (each under its
// API's config path), a non-loopback --http bind without a token. main() prints what these
// functions return; assemble() (assemble.h) then reports every problem of building the parts.
//
// Threading: called on the main thread before the daemon runs. The demo's server runs on a
// thread of its own (fixtures/markethub/fixture_server.h).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/config.h"
#include "fixtures/markethub/fixture_server.h"
#include "openapi/document.h"
#include "server/cli.h"
#include "transport/http_transport.h"

namespace codemode::server {

// Whether the options serve MCP on stdio: without --http, or with --stdio beside it.
inline bool serves_stdio(const ServeOptions& options) { return !options.http || options.stdio_too; }

// The config and the descriptions the daemon is built from.
struct Loaded {
  config::Config config;
  std::vector<openapi::Document> documents;  // in the order of config.apis
  std::size_t stdio_api = 0;                 // the API stdio serves, when it is served
  // Without --config: the embedded MarketHub demo, listening on 127.0.0.1 with a token generated
  // at start and known only to this process; it lives as long as the daemon.
  std::unique_ptr<fixtures::MarkethubServer> demo;
};

// Why loading failed: the lines to print on stderr (exit status 2).
struct LoadProblems {
  std::vector<std::string> lines;
};

// Reads the config (or starts the demo), applies --jitless, picks the API stdio serves (serving
// stdio alone, only that API is kept: the others' descriptions are not even read), and reads
// each API's description. A config or description problem is prefixed with the config file's
// name, as the user looks there first; an --api problem is a usage error.
std::variant<Loaded, CliError, LoadProblems> load_served(const ServeOptions& options);

// Logs what is served: each API's description (its warnings, its title and size, and, for a
// config the user wrote, how its upstreams differ from its servers), then the V8 code runs on.
void log_served(const ServeOptions& options, const Loaded& loaded);

// The HTTP transport's options from --http and the config's `http` (none without --http), or why
// the bind is refused (refuse_network_bind): one line, printed after "codemode-mcp: ".
std::variant<std::optional<HttpOptions>, std::string> http_options(const ServeOptions& options,
                                                                   const config::Config& config);

}  // namespace codemode::server
