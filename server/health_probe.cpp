#include "server/health_probe.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace codemode::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

HealthProbe probe_health(const HttpEndpoint& endpoint, std::chrono::milliseconds deadline) {
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(endpoint.host, ec);
  if (ec) return {false, "unhealthy: '" + endpoint.host + "' is not an IP address"};
  const std::string host = address.is_v6() ? "[" + endpoint.host + "]" : endpoint.host;

  asio::io_context io;
  beast::tcp_stream stream(io);
  http::request<http::empty_body> request(http::verb::get, "/healthz", 11);
  request.set(http::field::host, host + ":" + std::to_string(endpoint.port));
  request.set(http::field::connection, "close");
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(4096);
  std::string failure;

  // The deadline covers connect, write and read together.
  stream.expires_after(deadline);
  stream.async_connect(asio::ip::tcp::endpoint(address, endpoint.port), [&](auto error) {
    if (error) {
      failure = "connect: " + error.message();
      return;
    }
    http::async_write(stream, request, [&](auto error, std::size_t) {
      if (error) {
        failure = "write: " + error.message();
        return;
      }
      http::async_read(stream, buffer, parser, [&](auto error, std::size_t) {
        if (error) failure = "read: " + error.message();
      });
    });
  });
  io.run();

  const std::string where = "http://" + host + ":" + std::to_string(endpoint.port) + "/healthz";
  if (!failure.empty()) return {false, "unhealthy: " + where + ": " + failure};
  const auto& response = parser.get();
  const unsigned status = response.result_int();
  std::string body = response.body();
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  if (body.size() > 80) body = body.substr(0, 80) + "...";
  for (char& c : body) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  const std::string answer = std::to_string(status) + " " + body;
  if (status != 200) return {false, "unhealthy: " + where + " answered " + answer};
  return {true, "healthy: " + where + " answered " + answer};
}

}  // namespace codemode::server
