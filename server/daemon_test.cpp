// The daemon as main() runs it, on HTTP only (stdin stays untouched): what run() returns, and
// the shutdown rule for a signal. Real sandbox processes; real sockets on 127.0.0.1.
#include "server/daemon.h"

#include "sandbox/test_child.h"

#include <chrono>
#include <csignal>
#include <future>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <catch2/catch.hpp>

#include "sandbox/test_child.h"

#include "fixtures/markethub/fixture_server.h"
#include "mcp/tools.h"
#include "openapi/document.h"
#include "transport/test_http_client.h"

using namespace codemode;
using namespace codemode::server;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

DaemonOptions http_only(std::uint16_t port) {
  DaemonOptions options;
  auto loaded = openapi::parse_json(fixtures::markethub_openapi_json());
  REQUIRE(loaded.document);
  options.config.apis.emplace_back().name = "default";
  options.apis.push_back(std::move(*loaded.document));
  options.info = ServerInfo{"codemode-mcp", "9.9.9", ""};
  options.serve_stdio = false;
  options.http = HttpOptions{.endpoint = HttpEndpoint{"127.0.0.1", port}};
  options.engine_dir = sandbox::test_engine_dir();
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
  const auto response = test::try_round_trip(port, test::post(port, test::kInitialize));
  return response ? response->result_int() : 0;
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

TEST_CASE("execute is annotated read-only when every policy allows only GET and HEAD",
          "[server][daemon][tools]") {
  auto loaded = openapi::parse_json(fixtures::markethub_openapi_json());
  REQUIRE(loaded.document);
  const auto annotations = [&](const config::Api& config) {
    return ToolCatalog(summarize(*loaded.document, config), config.limits).list()[1]["annotations"];
  };
  config::Api config;
  CHECK(annotations(config)["readOnlyHint"] == false);  // no list: every method
  CHECK(annotations(config)["destructiveHint"] == true);
  config.policy.methods = {"GET", "HEAD"};
  CHECK(annotations(config)["readOnlyHint"] == true);
  CHECK(annotations(config)["destructiveHint"] == false);
  CHECK(annotations(config)["idempotentHint"] == true);
  CHECK(annotations(config)["openWorldHint"] == true);
  // A principal whose own policy may write makes the tool one that may write.
  config::PrincipalSettings writer;
  writer.policy = config::Policy{};
  writer.policy->methods = {"GET", "POST"};
  config.principals.emplace("writer", writer);
  CHECK(annotations(config)["readOnlyHint"] == false);
}
