#include "transport/http_transport.h"

#include <sys/socket.h>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "transport/http_server_state.h"

namespace codemode::server {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using State = HttpServer::State;

namespace {

void do_accept(const std::shared_ptr<State>& state) {
  state->acceptor.async_accept(asio::make_strand(state->io),
                               [state](boost::system::error_code ec, tcp::socket socket) {
                                 if (ec == asio::error::operation_aborted) return;
                                 // Accepted before the drain closed the listener: served, so
                                 // its request gets the 503 that says it ran nothing.
                                 if (state->draining) {
                                   if (!ec) serve_connection(std::move(socket), state);
                                   return;
                                 }
                                 if (ec) {
                                   spdlog::warn("http accept failed: {}", ec.message());
                                 } else {
                                   serve_connection(std::move(socket), state);
                                 }
                                 do_accept(state);
                               });
}

}  // namespace

std::string endpoint_url(const tcp::endpoint& endpoint) {
  const auto address = endpoint.address();
  const std::string host = address.is_v6() ? "[" + address.to_string() + "]" : address.to_string();
  return "http://" + host + ":" + std::to_string(endpoint.port()) + "/mcp";
}

HttpServer::HttpServer(asio::io_context& io, HttpOptions options, SessionFactory make_session)
    : state_(std::make_shared<State>(io, std::move(options), std::move(make_session))) {}

HttpServer::~HttpServer() {
  boost::system::error_code ec;
  state_->acceptor.close(ec);
}

std::optional<std::string> HttpServer::start() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(state_->options.endpoint.host, ec);
  if (ec) return "invalid address " + state_->options.endpoint.host;
  const tcp::endpoint endpoint(address, state_->options.endpoint.port);
  auto& acceptor = state_->acceptor;
  // The reason is read before close(), which would overwrite `ec` with its own success.
  auto fail = [&](std::string_view what) {
    std::string reason = ec.message();
    if (ec == asio::error::address_in_use) {
      reason += " (another process listens there: stop it or choose another port)";
    } else if (ec == asio::error::access_denied) {
      reason += " (ports below 1024 need privileges: choose a port of 1024 or more)";
    }
    boost::system::error_code ignored;
    acceptor.close(ignored);
    return std::string(what) + " " + endpoint_url(endpoint) + ": " + reason;
  };
  if (acceptor.open(endpoint.protocol(), ec)) return fail("cannot open");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor.bind(endpoint, ec)) return fail("cannot bind");
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec)) return fail("cannot listen");
  state_->policy.emplace(HttpPolicyOptions{state_->options.allowed_origins,
                                           state_->options.bearer_tokens, address.to_string(),
                                           acceptor.local_endpoint().port()});
  do_accept(state_);
  return std::nullopt;
}

tcp::endpoint HttpServer::local_endpoint() const {
  boost::system::error_code ec;
  return state_->acceptor.local_endpoint(ec);
}

void HttpServer::drain(std::function<void()> on_drained) {
  state_->draining = true;
  // shutdown() first: a sandbox process being forked holds a copy of every descriptor until it
  // closes them, and while a copy is open close() alone leaves the socket listening (a new
  // connection is then accepted by the kernel and reset, not refused).
  ::shutdown(state_->acceptor.native_handle(), SHUT_RDWR);
  boost::system::error_code ec;
  state_->acceptor.close(ec);
  state_->on_drained = std::move(on_drained);
  asio::post(state_->io, [state = state_] { state->maybe_drained(); });
}

}  // namespace codemode::server
