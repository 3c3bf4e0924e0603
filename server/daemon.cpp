#include "server/daemon.h"

#include <unistd.h>

#include <csignal>
#include <optional>

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "transport/stdio_transport.h"

namespace codemode::server {

namespace {

// After the grace period has ended the calls: how long their answers may take to be written.
constexpr std::chrono::milliseconds kAnswerFlush{2000};

// How long a shutdown lets running calls finish: a signal gives them the shutdown grace
// (an orchestrator waits for the process), stdin closing lets them all answer.
enum class Grace { bounded, unbounded };

// A signal's shutdown: once `period` is over, the calls still running or queued end, and their
// answers have kAnswerFlush to be written before io stops. `grace` is cancelled when every
// transport has finished first.
void end_calls_after(std::chrono::milliseconds period, boost::asio::steady_timer& grace,
                     Parts& parts, boost::asio::io_context& io) {
  grace.expires_after(period);
  grace.async_wait([&grace, &parts, &io](boost::system::error_code ec) {
    if (ec) return;
    // Every accepted call is answered: the queued ones and the running ones end now with an
    // error that says why, and the transports send those answers before the server stops.
    spdlog::warn("shutdown grace period over; ending the calls still running or queued");
    parts.stop_all("the server is shutting down");
    grace.expires_after(kAnswerFlush);
    grace.async_wait([&io](boost::system::error_code ec) {
      if (ec) return;
      spdlog::warn("answers not sent within {} ms of shutdown; stopping", kAnswerFlush.count());
      io.stop();
    });
  });
}

// The line whoever started the server waits for: one API at /mcp; several, each at /mcp/NAME.
void log_listening(Parts& parts, HttpMode mode) {
  const std::string url = endpoint_url(parts.http->local_endpoint());
  std::string urls;
  for (const auto& api : parts.apis) {
    urls += (urls.empty() ? "" : " and ") + url + "/" + api->name;
  }
  spdlog::info("listening on {}{}", parts.apis.size() == 1 ? url : urls,
               mode == HttpMode::stateless ? " (stateless)" : "");
}

// Once io has stopped: the audit writer and the span exporter write what they hold, and say
// how much they wrote and dropped.
void flush_observers(Parts& parts) {
  if (parts.audit_writer) {
    parts.audit_writer->stop();
    const audit::Writer::Stats stats = parts.audit_writer->stats();
    spdlog::info("audit: {} records written, {} dropped", stats.written, stats.dropped);
  }
  if (parts.span_exporter) {
    parts.span_exporter->stop();
    const SpanExporter::Stats stats = parts.span_exporter->stats();
    spdlog::info("tracing: {} spans exported, {} dropped", stats.exported, stats.dropped);
  }
}

}  // namespace

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {}

int Daemon::run() {
  boost::asio::io_context io;
  // First: from here on SIGINT and SIGTERM are held for the handler below, however early they
  // come (an orchestrator may stop the server while it starts), instead of killing the process.
  boost::asio::signal_set signals(io, SIGINT, SIGTERM);
  auto assembled = assemble(io, options_);
  if (auto* problems = std::get_if<std::vector<std::string>>(&assembled)) {
    for (const std::string& problem : *problems) spdlog::error("{}", problem);
    return 2;
  }
  Parts& parts = *std::get<std::unique_ptr<Parts>>(assembled);

  std::optional<StdioTransport> stdio;
  std::shared_ptr<McpSession> stdio_session;
  bool stdout_gone = false;  // the stdio session's answers are lost: see its send, below
  if (options_.serve_stdio) {
    stdio.emplace(io.get_executor(), STDIN_FILENO, STDOUT_FILENO, options_.max_message_bytes);
  }

  bool stopping = false;
  int busy = 0;  // transports still finishing their calls
  boost::asio::steady_timer grace(io);
  auto one_done = [&] {
    if (--busy > 0) return;
    grace.cancel();
    io.stop();
  };
  auto shut_down = [&](std::string_view why, Grace grace_period) {
    if (stopping) return;
    stopping = true;
    spdlog::info("{}: finishing running calls", why);
    if (stdio) stdio->stop();
    if (grace_period == Grace::bounded) end_calls_after(options_.shutdown_grace, grace, parts, io);
    busy = (stdio_session ? 1 : 0) + (parts.http ? 1 : 0);
    if (stdio_session) stdio_session->when_idle(one_done);
    if (parts.http) parts.http->drain(one_done);
  };

  if (stdio) {
    // Once stdout is gone (closed, or a client that left 16 MiB unread) nobody reads what the
    // stdio session answers: it takes no more lines, and the server stops as at stdin EOF,
    // unless it serves HTTP as well, which goes on. Posted: shutting down waits for this
    // session, which is inside its own send here.
    stdio_session = parts.apis[options_.stdio_api]->session(
        io.get_executor(), options_.info,
        [&](const std::string& message) {
          if (stdio->write_line(message) || stdout_gone) return;
          stdout_gone = true;
          spdlog::warn("stdout is gone; stdio answers are lost and stdin is no longer read");
          boost::asio::post(io, [&] {
            if (parts.http) return stdio->stop();
            shut_down("stdout is gone", Grace::unbounded);
          });
        },
        std::string(config::kStdioPrincipal), "stdio", *parts.metrics);
  }

  signals.async_wait([&](boost::system::error_code ec, int signal) {
    if (!ec) shut_down(signal == SIGINT ? "SIGINT" : "SIGTERM", Grace::bounded);
  });
  // Once the signal handler is armed: whoever waits for this line (a supervisor, a test) may
  // send SIGTERM at once, and it drains.
  if (parts.http) log_listening(parts, options_.http->mode);

  if (stdio) {
    stdio->start(StdioHandlers{
        .on_line =
            [&](const std::string& line) {
              if (!stopping && !stdout_gone) stdio_session->handle(line);
            },
        .on_oversize =
            [&](std::size_t limit) {
              if (!stopping) stdio_session->reject_oversize(limit);
            },
        .on_eof = [&] { shut_down("stdin closed", Grace::unbounded); },
    });
  }

  io.run();
  if (stdio) stdio->stop();
  flush_observers(parts);
  spdlog::info("stopped");
  return 0;
}

}  // namespace codemode::server
