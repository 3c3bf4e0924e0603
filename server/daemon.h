// The running server: the io_context, and the parts assemble() builds from one config and its
// API descriptions (assemble.h), with the shutdown rules of the contract:
//   - stdin EOF (when serving stdio): stop reading and accepting, let running calls finish on
//     every transport, exit 0 (the client that launched us owns our lifetime);
//   - SIGINT/SIGTERM: the same, bounded by a grace period, then exit 0 regardless. HTTP drains:
//     no new connections, /readyz 503, new /mcp requests 503, in-flight ones answered.
//
// Threading: run() runs the io_context on the calling thread; every transport and session
// handler runs there. The sandboxes own their worker threads.
#pragma once

#include "server/assemble.h"

namespace codemode::server {

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);
  // Serves MCP until stdin EOF or a shutdown signal. Returns the process exit code: 0, or 2
  // when the parts cannot be built (every problem logged, one per line).
  int run();

 private:
  DaemonOptions options_;
};

}  // namespace codemode::server
