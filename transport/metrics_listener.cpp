#include "transport/metrics_listener.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "observe/metrics.h"

namespace codemode::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::uint32_t kHeaderLimit = 8 * 1024;

}  // namespace

struct MetricsListener::State {
  State(asio::io_context& io, MetricsListenerOptions options)
      : options(std::move(options)), acceptor(io) {}

  MetricsListenerOptions options;
  tcp::acceptor acceptor;
  std::optional<HttpPolicy> policy;  // Host on a loopback bind; made once the port is known
  std::size_t connections = 0;
  bool stopped = false;
};

namespace {

// One exchange: read a header block, answer, close.
class MetricsExchange : public std::enable_shared_from_this<MetricsExchange> {
 public:
  MetricsExchange(std::shared_ptr<MetricsListener::State> state, tcp::socket socket)
      : state_(std::move(state)), stream_(std::move(socket)) {
    ++state_->connections;
    parser_.header_limit(kHeaderLimit);
    parser_.body_limit(0);
  }
  ~MetricsExchange() { --state_->connections; }
  MetricsExchange(const MetricsExchange&) = delete;
  MetricsExchange& operator=(const MetricsExchange&) = delete;

  void start() {
    stream_.expires_after(state_->options.exchange_timeout);
    http::async_read(
        stream_, buffer_, parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec == http::error::header_limit)
      return answer(http::status::request_header_fields_too_large, "header block too large\n");
    // A body on GET /metrics, or anything cut short: nothing sensible to say but 400 (and for
    // a timeout or a client gone, nobody to say it to).
    if (ec == http::error::body_limit)
      return answer(http::status::bad_request, "no body expected\n");
    if (ec) return;
    const auto& request = parser_.get();
    auto host = request.find(http::field::host);
    std::optional<std::string_view> host_value;
    if (host != request.end())
      host_value = std::string_view(host->value().data(), host->value().size());
    if (auto refusal = state_->policy->check_host(host_value)) {
      return answer(static_cast<http::status>(refusal->status), refusal->message + "\n");
    }
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    if (target != "/metrics")
      return answer(http::status::not_found, "not found: only /metrics is served here\n");
    if (request.method() != http::verb::get) {
      return answer(http::status::method_not_allowed, "method not allowed: GET /metrics\n");
    }
    answer(http::status::ok, state_->options.exposition(), Metrics::kContentType);
  }

  void answer(http::status status, std::string body, std::string_view type = "text/plain") {
    response_.result(status);
    response_.version(11);
    response_.set(http::field::content_type, type);
    response_.set(http::field::connection, "close");
    if (status == http::status::method_not_allowed) response_.set(http::field::allow, "GET");
    response_.body() = std::move(body);
    response_.prepare_payload();
    http::async_write(stream_, response_,
                      [self = shared_from_this()](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
                      });
  }

  std::shared_ptr<MetricsListener::State> state_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> response_;
};

void accept(const std::shared_ptr<MetricsListener::State>& state) {
  state->acceptor.async_accept([state](beast::error_code ec, tcp::socket socket) {
    if (state->stopped || ec == asio::error::operation_aborted) return;
    if (!ec) {
      // Past the bound, the connection closes unanswered: a flood costs a descriptor for the
      // moment of an accept, never an exchange's buffers.
      if (state->connections < state->options.max_connections) {
        std::make_shared<MetricsExchange>(state, std::move(socket))->start();
      }
    }
    accept(state);
  });
}

}  // namespace

MetricsListener::MetricsListener(asio::io_context& io, MetricsListenerOptions options)
    : state_(std::make_shared<State>(io, std::move(options))) {}

MetricsListener::~MetricsListener() { stop(); }

std::optional<std::string> MetricsListener::start() {
  const HttpEndpoint& at = state_->options.endpoint;
  const std::string where =
      (at.host.find(':') != std::string::npos ? "[" + at.host + "]" : at.host) + ":" +
      std::to_string(at.port);
  beast::error_code ec;
  const auto address = asio::ip::make_address(at.host, ec);
  if (ec) return where + ": not an IP address";
  const tcp::endpoint endpoint(address, at.port);
  tcp::acceptor& acceptor = state_->acceptor;
  if (acceptor.open(endpoint.protocol(), ec); ec) return where + ": " + ec.message();
  if (acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
    return where + ": " + ec.message();
  }
  if (acceptor.bind(endpoint, ec); ec) return where + ": " + ec.message();
  if (acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return where + ": " + ec.message();
  }
  state_->policy.emplace(HttpPolicyOptions{.allowed_origins = {},
                                           .bearer_tokens = {},
                                           .bound_host = at.host,
                                           .bound_port = acceptor.local_endpoint().port()});
  accept(state_);
  return std::nullopt;
}

tcp::endpoint MetricsListener::local_endpoint() const {
  beast::error_code ec;
  return state_->acceptor.local_endpoint(ec);
}

void MetricsListener::stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  beast::error_code ignored;
  state_->acceptor.close(ignored);
}

}  // namespace codemode::server
