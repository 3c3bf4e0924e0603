// A blocking HTTP/1.1 client for the server's C++ tests (http_transport_test, daemon_test): the
// bytes an MCP client sends to 127.0.0.1, built and read with Beast. Test-only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace codemode::server::test {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

inline constexpr const char* kInitialize =
    R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
    R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

inline boost::asio::ip::tcp::endpoint loopback(std::uint16_t port) {
  return {boost::asio::ip::make_address("127.0.0.1"), port};
}

inline boost::asio::ip::tcp::socket connect_to(std::uint16_t port, boost::asio::io_context& io) {
  boost::asio::ip::tcp::socket socket(io);
  socket.connect(loopback(port));
  return socket;
}

// POST /mcp with a JSON body, as the MCP clients send it (and a bearer token when given).
inline HttpRequest post(std::uint16_t port, std::string body, const std::string& token = {}) {
  namespace http = boost::beast::http;
  HttpRequest request(http::verb::post, "/mcp", 11);
  request.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "application/json, text/event-stream");
  if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
  request.body() = std::move(body);
  request.prepare_payload();
  return request;
}

// One request and its response on `socket`; throws when the connection fails.
inline HttpResponse round_trip(boost::asio::ip::tcp::socket& socket, const HttpRequest& request) {
  boost::beast::http::write(socket, request);
  boost::beast::flat_buffer buffer;
  HttpResponse response;
  boost::beast::http::read(socket, buffer, response);
  return response;
}

// The same on a fresh connection; nothing when no server answered.
inline std::optional<HttpResponse> try_round_trip(std::uint16_t port, const HttpRequest& request) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  boost::system::error_code ec;
  socket.connect(loopback(port), ec);
  if (ec) return std::nullopt;
  boost::beast::http::write(socket, request, ec);
  if (ec) return std::nullopt;
  boost::beast::flat_buffer buffer;
  HttpResponse response;
  boost::beast::http::read(socket, buffer, response, ec);
  if (ec) return std::nullopt;
  return response;
}

}  // namespace codemode::server::test
