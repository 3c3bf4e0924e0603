// The running server: the io_context, the sandbox, the tool catalog and the transports, wired
// from one config and one API description, with the shutdown rules of the contract:
//   - stdin EOF: stop reading, let running calls finish, exit 0;
//   - SIGINT/SIGTERM: the same, bounded by a grace period, then exit 0 regardless.
//
// Threading: run() runs the io_context on the calling thread; every transport and session
// handler runs there. The sandbox owns its worker threads.
#pragma once

#include <chrono>
#include <cstddef>

#include "config/config.h"
#include "openapi/document.h"
#include "server/mcp_session.h"

namespace codemode::server {

struct DaemonOptions {
  config::Config config;
  openapi::Document api;
  ServerInfo info;
  std::size_t max_message_bytes = 4 * 1024 * 1024;
  // How long a shutdown signal waits for running calls before giving up on them.
  std::chrono::milliseconds shutdown_grace{5000};
};

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  // Serves MCP on stdio until EOF or a shutdown signal. Returns the process exit code.
  int run();

 private:
  DaemonOptions options_;
};

// The ApiSummary the tool descriptions use.
ApiSummary summarize(const openapi::Document& api, const config::Config& config);

}  // namespace codemode::server
