// The HTTP transport as a library: a real HttpServer on 127.0.0.1:0 over a real (in-process)
// sandbox, driven by a blocking Beast client. What the e2e tests show through the binary, here
// with options the binary does not expose (short deadlines, small limits), so that each bound
// is shown to hold without waiting for its production value.
#include "transport/http_transport.h"

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>

#include "sandbox/test_child.h"

#include "transport/test_http_client.h"

using namespace codemode;
using namespace codemode::server;
using namespace codemode::server::test;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {

// A server on its own I/O thread; destroyed on that thread, after the work guard goes.
struct Server {
  asio::io_context io;
  ToolCatalog tools{ApiSummary{"Search the Test API.", "Call the Test API."}, config::Limits{}};
  sandbox::Sandbox sandbox{sandbox::test_sandbox_options()};
  std::optional<HttpServer> http;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;

  explicit Server(HttpOptions options) {
    options.endpoint = HttpEndpoint{"127.0.0.1", 0};
    http.emplace(io, std::move(options),
                 [this](asio::any_io_executor executor, std::string principal, std::size_t) {
                   return std::make_shared<McpSession>(
                       std::move(executor), tools, sandbox, ServerInfo{"codemode-mcp", "9.9.9", ""},
                       [](std::string) {}, std::move(principal));
                 });
    REQUIRE_FALSE(http->start());
    work.emplace(io.get_executor());
    thread = std::thread([this] { io.run(); });
  }
  ~Server() {
    std::promise<void> drained;
    asio::post(io, [&] { http->drain([&] { drained.set_value(); }); });
    drained.get_future().wait();
    work.reset();
    io.stop();
    thread.join();
  }
  std::uint16_t port() const { return http->local_endpoint().port(); }
};

// True when the server closes `socket` (EOF or reset) within `limit`.
bool closed_within(tcp::socket& socket, std::chrono::milliseconds limit) {
  auto done = std::async(std::launch::async, [&] {
    char byte;
    boost::system::error_code ec;
    socket.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  });
  if (done.wait_for(limit) != std::future_status::ready) {
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);  // ends the read above
    done.wait();
    return false;
  }
  return done.get();
}

}  // namespace

TEST_CASE("a session is made, answers and names itself", "[server][http_transport]") {
  Server server({});
  asio::io_context client;
  tcp::socket socket = connect_to(server.port(), client);
  const auto init = round_trip(socket, post(server.port(), kInitialize));
  CHECK(init.result() == http::status::ok);
  const std::string session(init["Mcp-Session-Id"]);
  CHECK(session.size() == 32);

  auto call = post(server.port(),
                   R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search",)"
                   R"("arguments":{"code":"async () => 1 + 1"}}})");
  call.set("Mcp-Session-Id", session);
  call.set("MCP-Protocol-Version", "2025-11-25");
  const auto answer = round_trip(socket, call);  // the same keep-alive connection
  CHECK(answer.result() == http::status::ok);
  CHECK(Json::parse(answer.body())["result"]["content"][0]["text"] == "2");
}

TEST_CASE("a connection that never sends its header block is closed at header_timeout",
          "[server][http_transport]") {
  HttpOptions options;
  options.header_timeout = 200ms;
  Server server(options);
  asio::io_context client;
  tcp::socket silent = connect_to(server.port(), client);
  CHECK(closed_within(silent, 5s));
}

TEST_CASE("waiting connections per address are bounded: the oldest gives way",
          "[server][http_transport]") {
  HttpOptions options;
  options.max_waiting_per_address = 2;
  Server server(options);
  asio::io_context client;
  tcp::socket first = connect_to(server.port(), client);
  tcp::socket second = connect_to(server.port(), client);
  tcp::socket third = connect_to(server.port(), client);
  CHECK(closed_within(first, 5s));
  // The newest is served at once.
  CHECK(round_trip(third, post(server.port(), kInitialize)).result() == http::status::ok);
}

TEST_CASE("a body over max_body_bytes is 413, and the server serves on",
          "[server][http_transport]") {
  HttpOptions options;
  options.max_body_bytes = 1024;
  Server server(options);
  asio::io_context client;
  tcp::socket socket = connect_to(server.port(), client);
  const auto refused = round_trip(socket, post(server.port(), std::string(4096, ' ') + "{}"));
  CHECK(refused.result() == http::status::payload_too_large);
  tcp::socket next = connect_to(server.port(), client);
  CHECK(round_trip(next, post(server.port(), kInitialize)).result() == http::status::ok);
}

TEST_CASE("with tokens, a request without one is 401 before its body is read",
          "[server][http_transport]") {
  HttpOptions options;
  options.bearer_tokens = {{"token-1", "token-0123456789abcdef"}};
  Server server(options);
  asio::io_context client;
  tcp::socket socket = connect_to(server.port(), client);
  // The header block announces a body that never comes: the answer cannot wait for it.
  const std::string head =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server.port()) +
      "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
  asio::write(socket, asio::buffer(head));
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  CHECK(response.result() == http::status::unauthorized);
  CHECK(response[http::field::www_authenticate] == "Bearer");
  tcp::socket next = connect_to(server.port(), client);
  CHECK(round_trip(next, post(server.port(), kInitialize, "token-0123456789abcdef")).result() ==
        http::status::ok);
}

TEST_CASE("drain: /readyz answers 503 and the callback comes once nothing is in flight",
          "[server][http_transport]") {
  Server server({});
  asio::io_context client;
  {
    tcp::socket socket = connect_to(server.port(), client);
    http::request<http::string_body> ready(http::verb::get, "/readyz", 11);
    ready.set(http::field::host, "127.0.0.1:" + std::to_string(server.port()));
    CHECK(round_trip(socket, ready).result() == http::status::ok);
  }
  std::promise<void> drained;
  asio::post(server.io, [&] { server.http->drain([&] { drained.set_value(); }); });
  CHECK(drained.get_future().wait_for(5s) == std::future_status::ready);
}

TEST_CASE("endpoint_url brackets IPv6", "[server][http_transport]") {
  CHECK(endpoint_url(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 8080)) ==
        "http://127.0.0.1:8080/mcp");
  CHECK(endpoint_url(tcp::endpoint(asio::ip::make_address("::1"), 8080)) ==
        "http://[::1]:8080/mcp");
}
