// `--metrics HOST:PORT`: the Prometheus exposition on an address of its own.
//
// A server that speaks MCP over stdio has no HTTP listener to put `/metrics` on, and an operator
// may want metrics off the MCP port (a scrape network, no token to hand the scraper). This
// listener serves `GET /metrics` and nothing else, without authentication: what it exposes is
// counts under labels the server chose (observe/metrics.h), never a principal, a URL or a token.
// On a loopback bind, `Host` must name a loopback host, as on the MCP listener (DNS rebinding).
//
// Built for hostile clients, as the port may face a network: one request per connection
// (answered with `Connection: close`), a header block of at most 8 KiB, a few seconds for the
// whole exchange, and a bound on connections at once (past it a new connection is closed
// unanswered), so a slow or flooding client costs the daemon a bounded amount and never a call.
// Runs on the daemon's io_context; start() and stop() on its thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "transport/http_policy.h"

namespace codemode::server {

struct MetricsListenerOptions {
  HttpEndpoint endpoint;
  std::function<std::string()> exposition;  // the text of one scrape (Metrics::exposition)
  std::size_t max_connections = 16;
  std::chrono::milliseconds exchange_timeout{5000};  // accept to the answer's last byte
};

class MetricsListener {
 public:
  MetricsListener(boost::asio::io_context& io, MetricsListenerOptions options);
  ~MetricsListener();
  MetricsListener(const MetricsListener&) = delete;
  MetricsListener& operator=(const MetricsListener&) = delete;

  // Binds and starts accepting; the problem ("127.0.0.1:9464: Address already in use") if it
  // cannot.
  std::optional<std::string> start();
  // The bound address (the actual port after a bind to port 0).
  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Stops accepting; open exchanges end at their timeout or when the io_context stops.
  void stop();

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace codemode::server
