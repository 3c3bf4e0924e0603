// The running server: the io_context, the sandbox, the tool catalog and the transports (stdio,
// Streamable HTTP, or both), wired from one config and one API description, with the shutdown
// rules of the contract:
//   - stdin EOF (when serving stdio): stop reading and accepting, let running calls finish on
//     every transport, exit 0 (the client that launched us owns our lifetime);
//   - SIGINT/SIGTERM: the same, bounded by a grace period, then exit 0 regardless. HTTP drains:
//     no new connections, /readyz 503, new /mcp requests 503, in-flight ones answered.
//
// Threading: run() runs the io_context on the calling thread; every transport and session
// handler runs there. The sandbox owns its worker threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "config/config.h"
#include "mcp/mcp_session.h"
#include "openapi/document.h"
#include "sandbox/engine.h"
#include "sandbox/sandbox.h"
#include "transport/http_transport.h"

namespace codemode::server {

struct DaemonOptions {
  config::Config config;
  openapi::Document api;
  ServerInfo info;
  std::size_t max_message_bytes = std::size_t{4} * 1024 * 1024;
  // Which transports run: stdio (stdin/stdout), HTTP (when set), or both.
  bool serve_stdio = true;
  std::optional<HttpOptions> http;
  // `--metrics HOST:PORT`: /metrics on a listener of its own (transport/metrics_listener.h).
  std::optional<HttpEndpoint> metrics;
  // How long a shutdown signal waits for running calls before giving up on them.
  std::chrono::milliseconds shutdown_grace{5000};
  // Where tool code runs: sandbox processes of the engine in this folder (sandbox/engine.h).
  std::string engine_dir = sandbox::default_engine_dir();
  sandbox::ChildStderr sandbox_stderr = sandbox::ChildStderr::discard;
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  // Serves MCP until stdin EOF or a shutdown signal. Returns the process exit code: 0, or 2
  // when the HTTP listener cannot start.
  int run();

 private:
  DaemonOptions options_;
};

// Settles where relative URLs go when the config does not say (upstreams[0].base_path unset):
// the path of the API description's first `servers` URL ("https://slack.com/api" -> "/api").
void settle_base_path(const openapi::Document& api, config::Config& config);

// Warns when the configured upstreams look unlike the API description's `servers`: none of
// their origins is a server's (a test double or a proxy, or a mistyped origin), or
// upstreams[0].base_path is none of the servers' paths. Only for a config the user wrote.
void warn_unlike_servers(const openapi::Document& api, const config::Config& config);

// Logs where execute may go and what the gateway injects there (header and parameter names,
// never values), or warns that it can go nowhere.
void log_upstreams(const config::Config& config, bool base_path_configured);

// The ApiSummary the tool descriptions use.
ApiSummary summarize(const openapi::Document& api, const config::Config& config);

}  // namespace codemode::server
