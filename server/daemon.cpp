#include "server/daemon.h"

#include <unistd.h>

#include <csignal>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "server/stdio_transport.h"

namespace codemode::server {

ApiSummary summarize(const openapi::Document& api, const config::Config& config) {
  ApiSummary summary{api.title, api.version, api.path_count, {}};
  for (const auto& upstream : config.upstreams) summary.origins.push_back(upstream.origin);
  return summary;
}

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {}

int Daemon::run() {
  boost::asio::io_context io;
  const ToolCatalog tools(summarize(options_.api, options_.config), options_.config.limits);
  gateway::GatewayOptions gateway_options;
  gateway_options.upstreams = options_.config.upstreams;
  gateway_options.limits = options_.config.limits;
  gateway_options.ca_file = options_.config.ca_file;
  auto created = gateway::Gateway::create(io, std::move(gateway_options));
  if (auto* problems = std::get_if<std::vector<std::string>>(&created)) {
    for (const auto& problem : *problems) spdlog::error("gateway: {}", problem);
    return 2;
  }
  std::unique_ptr<gateway::Gateway> gateway = std::move(std::get<0>(created));
  sandbox::Sandbox sandbox(
      sandbox::SandboxOptions{options_.config.limits, 0, &options_.api, gateway.get()});
  StdioTransport stdio(io.get_executor(), STDIN_FILENO, STDOUT_FILENO, options_.max_message_bytes);

  auto session = std::make_shared<McpSession>(
      io.get_executor(), tools, sandbox, options_.info, [&stdio](std::string message) {
        if (!stdio.write_line(message)) spdlog::warn("stdout is closed; a message was lost");
      });

  bool stopping = false;
  boost::asio::steady_timer grace(io);
  auto shut_down = [&](std::string_view why, bool bounded) {
    if (stopping) return;
    stopping = true;
    spdlog::info("{}: finishing {} running call(s)", why, session->in_flight());
    stdio.stop();
    if (bounded) {
      grace.expires_after(options_.shutdown_grace);
      grace.async_wait([&](boost::system::error_code ec) {
        if (ec) return;
        spdlog::warn("shutdown grace period over; cancelling {} call(s)", session->in_flight());
        sandbox.cancel_all();  // the workers finish at once; their answers are not awaited
        io.stop();
      });
    }
    session->when_idle([&] {
      grace.cancel();
      io.stop();
    });
  };

  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  signals.async_wait([&](boost::system::error_code ec, int signal) {
    if (!ec) shut_down(signal == SIGINT ? "SIGINT" : "SIGTERM", true);
  });

  stdio.start(StdioHandlers{
      .on_line =
          [&](std::string line) {
            if (!stopping) session->handle(line);
          },
      .on_oversize =
          [&](std::size_t limit) {
            if (!stopping) session->reject_oversize(limit);
          },
      .on_eof = [&] { shut_down("stdin closed", false); },
  });

  io.run();
  stdio.stop();
  spdlog::info("stopped");
  return 0;
}

}  // namespace codemode::server
