// The client side of /healthz, for `codemode-mcp --healthcheck HOST:PORT`.
//
// A container's HEALTHCHECK runs a program inside the container. The runtime image has no shell
// and no curl (less to exploit, nothing to patch), so the binary probes itself: one GET of
// /healthz with a deadline on the whole exchange, on the Beast stack the server already links.
// Runs on the calling thread with an io_context of its own; no logging (the result is the line).
#pragma once

#include <chrono>
#include <string>

#include "transport/http_policy.h"

namespace codemode::server {

struct HealthProbe {
  bool healthy = false;  // the server answered 200
  std::string line;      // "healthy: 200 ok" or "unhealthy: <why>", one line, for the logs
};

HealthProbe probe_health(const HttpEndpoint& endpoint, std::chrono::milliseconds deadline);

}  // namespace codemode::server
