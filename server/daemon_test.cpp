// The daemon as main() runs it, on HTTP only (stdin stays untouched): what run() returns, and
// the shutdown rule for a signal. In-process sandbox workers; real sockets on 127.0.0.1.
#include "server/daemon.h"

#include <chrono>
#include <csignal>
#include <future>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "fixtures/markethub/fixture_server.h"
#include "openapi/document.h"

using namespace codemode;
using namespace codemode::server;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

DaemonOptions http_only(std::uint16_t port) {
  DaemonOptions options;
  auto loaded = openapi::parse_json(fixtures::markethub_openapi_json());
  REQUIRE(loaded.document);
  options.api = std::move(*loaded.document);
  options.info = ServerInfo{"codemode-mcp", "9.9.9", ""};
  options.serve_stdio = false;
  options.http = HttpOptions{.endpoint = HttpEndpoint{"127.0.0.1", port}};
  options.sandbox_command = {};  // in-process workers
  options.shutdown_grace = 2s;
  return options;
}

// A log sink that hands over the port of the daemon's "listening on http://127.0.0.1:PORT/mcp".
class ListeningSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::future<std::uint16_t> port() { return promise_.get_future(); }

 protected:
  void sink_it_(const spdlog::details::log_msg& message) override {
    const std::string_view text(message.payload.data(), message.payload.size());
    constexpr std::string_view kPrefix = "listening on http://127.0.0.1:";
    if (told_ || !text.starts_with(kPrefix)) return;
    told_ = true;
    promise_.set_value(
        static_cast<std::uint16_t>(std::stoi(std::string(text.substr(kPrefix.size())))));
  }
  void flush_() override {}

 private:
  std::promise<std::uint16_t> promise_;
  bool told_ = false;
};

// POSTs an initialize; the status, or 0 when nothing answered.
unsigned initialize(std::uint16_t port) {
  asio::io_context io;
  tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (ec) return 0;
  http::request<http::string_body> request(http::verb::post, "/mcp", 11);
  request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json");
  request.body() =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
      R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";
  request.prepare_payload();
  http::write(socket, request, ec);
  if (ec) return 0;
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response, ec);
  return ec ? 0 : response.result_int();
}

}  // namespace

TEST_CASE("a listener that cannot start makes run() return 2 at once", "[server][daemon]") {
  asio::io_context io;
  tcp::acceptor taken(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  Daemon daemon(http_only(taken.local_endpoint().port()));
  CHECK(daemon.run() == 2);
}

TEST_CASE("SIGTERM drains HTTP and run() returns 0", "[server][daemon]") {
  // The port comes from the daemon's own "listening on" line (port 0, no guessing).
  auto sink = std::make_shared<ListeningSink>();
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("daemon_test", sink));
  std::future<std::uint16_t> listening = sink->port();
  Daemon daemon(http_only(0));
  auto running = std::async(std::launch::async, [&] { return daemon.run(); });
  REQUIRE(listening.wait_for(10s) == std::future_status::ready);
  const std::uint16_t port = listening.get();
  // An answered request means the daemon's io_context runs, so its signal set is installed.
  REQUIRE(initialize(port) == 200);
  REQUIRE(std::raise(SIGTERM) == 0);
  REQUIRE(running.wait_for(10s) == std::future_status::ready);
  CHECK(running.get() == 0);
  CHECK(initialize(port) == 0);  // the listener is gone
  spdlog::set_default_logger(previous);
}
