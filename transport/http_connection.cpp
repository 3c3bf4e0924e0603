// HttpConnection's read/write loop (http_connection.h): the header block and the body, the
// hang-up watch while a call runs, the SSE stream's writer, answers and refusals, and close.
#include "transport/http_connection.h"

#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <sstream>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

#include "net/escape.h"

namespace codemode::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// The longest a connection's peer may send ahead of the answer to its request in flight
// (pipelined bytes, kept for the next read). Beyond it the client is not waiting for an answer
// the way HTTP/1.1 has it wait: the call is cancelled and the connection closed.
constexpr std::size_t kMaxBytesAheadOfAnswer = std::size_t{64} * 1024;

bool is_http_parse_error(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

// How long a new connection may go unadmitted before it counts as waiting (http_server_state.h).
constexpr std::chrono::milliseconds kWaitingGrace{200};

}  // namespace

void HttpConnection::run() {
  // A connection joins the waiting list (and its caps) only if it is still not admitted a
  // moment after it came: a client that opens many connections at once and sends a request
  // on each (a burst of calls in flight) is not mistaken for idle sockets, while sockets that
  // stay idle are capped as before.
  waiting_timer_.expires_after(kWaitingGrace);
  waiting_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->admitted_ || self->closed_) return;
    self->waiting_ = self->state_->start_waiting(self->client_, [weak] {
      if (auto self = weak.lock()) {
        self->waiting_.reset();  // already off the list (the state's one thread runs this)
        asio::post(self->stream_.get_executor(), [self] { self->close(); });
      }
    });
  });
  asio::dispatch(stream_.get_executor(),
                 beast::bind_front_handler(&HttpConnection::do_read, shared_from_this()));
}

void HttpConnection::do_read() {
  if (closed_) return;
  // After the client's end of stream only bytes already buffered can hold a request; a read of
  // the socket would wait for a readiness edge that has passed.
  if (peer_eof_ && buffer_.size() == 0) return shut_down();
  exchange_ = Exchange{};  // nothing of the request before is this one's
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
  parser_->body_limit(state_->options.max_body_bytes);
  // Until it is admitted a connection gets the short header deadline for every header block;
  // an admitted one may idle between requests for the read timeout.
  stream_.expires_after(admitted_ ? state_->options.read_timeout : state_->options.header_timeout);
  http::async_read_header(
      stream_, buffer_, *parser_,
      beast::bind_front_handler(&HttpConnection::on_header, shared_from_this()));
}

// Answers a failed read, or ends the connection; false when the read succeeded.
bool HttpConnection::on_read_error(boost::system::error_code ec) {
  if (!ec) return false;
  if (ec == http::error::end_of_stream || ec == beast::error::timeout) {
    shut_down();
    return true;
  }
  exchange_.keep_alive = false;  // every refusal below ends the connection: the parser is spent
  exchange_.mcp = true;
  if (ec == http::error::body_limit) {
    exchange_.linger = true;
    refuse({413, "payload too large: the body exceeds " +
                     std::to_string(state_->options.max_body_bytes) + " bytes"});
  } else if (ec == http::error::header_limit) {
    refuse({431, "request header fields too large: the header exceeds " +
                     std::to_string(state_->options.max_header_bytes) + " bytes"});
  } else if (is_http_parse_error(ec)) {
    refuse({400, "bad request: malformed HTTP request"});
  } else {
    close();
  }
  return true;
}

void HttpConnection::on_header(boost::system::error_code ec, std::size_t) {
  if (on_read_error(ec)) return;
  const auto& request = parser_->get();
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));  // no query is consulted
  const std::optional<std::size_t> api = state_->api_at(path);
  exchange_.mcp = api.has_value();
  exchange_.api = api.value_or(0);
  spdlog::debug("http {} {} from {}", std::string(request.method_string()), net::escape_text(path),
                client_);
  // A refusal on the header block leaves the body, if any, unread: the connection ends after
  // the answer, and what the client still sends is discarded (bounded) so that closing does
  // not reset the connection before the client has read the answer.
  const bool body_unread = !parser_->is_done();
  exchange_.keep_alive = request.keep_alive() && !body_unread;
  if (auto refusal = check_head(request, path)) {
    exchange_.linger = body_unread;
    return refuse(*refusal, std::exchange(exchange_.challenge, {}));
  }
  if (!exchange_.mcp) {
    // Nothing outside /mcp takes a body, and nothing there needs a token: a body is never
    // read (a client without a token must not make the server hold one). The answer ends
    // the connection when one was announced, and what follows is discarded.
    exchange_.linger = body_unread;
    return route_outside_mcp(path, request.method());
  }
  if (exchange_.token_to_verify) {
    exchange_.body_unread = body_unread;
    return verify_token(std::move(*std::exchange(exchange_.token_to_verify, std::nullopt)));
  }
  read_body();
}

void HttpConnection::read_body() {
  exchange_.header_fields = field_count(parser_->get());
  stream_.expires_after(state_->options.read_timeout);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&HttpConnection::on_read, shared_from_this()));
}

void HttpConnection::on_read(boost::system::error_code ec, std::size_t) {
  if (on_read_error(ec)) return;
  // Beast adds a chunked body's trailer fields to the request, after check_head looked at
  // the header block: a trailer could carry a second Host or a session id that a proxy
  // routing on the header block never saw. A request with trailers is refused.
  if (field_count(parser_->get()) != exchange_.header_fields) {
    exchange_.keep_alive = false;
    return refuse({400, "bad request: trailer fields are not accepted"});
  }
  route(parser_->release());
}

std::size_t HttpConnection::field_count(const http::request_header<>& request) {
  return static_cast<std::size_t>(std::distance(request.begin(), request.end()));
}

// While a request waits for its answer the socket is still read, so that a client that hangs
// up cancels the call (the 2026-07-28 revision requires it; for 2025 it frees the sandbox):
//   - bytes the client sends ahead (pipelining, a stray CRLF) are kept for the next request,
//     up to kMaxBytesAheadOfAnswer, and the watch goes on;
//   - a reset or a read error means it is gone: cancel;
//   - end of stream is either a client that closed, or one that only shut down its write side
//     after its request (`nc -N`, some HTTP/1.0 clients) and still waits for the answer. Only
//     a write tells them apart, so an HTTP/1.1 client is sent an interim `100 Continue`
//     (every HTTP/1.1 client must accept one) and a reset in reply cancels; an event stream
//     already writes progress events, and an HTTP/1.0 client, to which no interim response may
//     go, is taken to wait and is answered.
// The watch runs beside the answer's write (a stream reads and writes at once) and stops with
// the request: on_write waits for it before reading the next request.
void HttpConnection::watch_for_hangup() {
  if (watching_ || closed_) return;
  if (buffer_.size() > kMaxBytesAheadOfAnswer) {
    spdlog::info("http {}: {} bytes sent ahead of an answer; closing", client_, buffer_.size());
    return close();
  }
  watching_ = true;
  stream_.expires_never();
  if (peer_eof_) {
    stream_.socket().async_wait(
        tcp::socket::wait_error,
        [self = shared_from_this(), generation = generation_](boost::system::error_code ec) {
          self->watching_ = false;
          self->on_watch_error(generation, ec);
        });
    return;
  }
  stream_.async_read_some(buffer_.prepare(4096),
                          [self = shared_from_this(), generation = generation_](
                              boost::system::error_code ec, std::size_t n) {
                            self->watching_ = false;
                            self->buffer_.commit(n);
                            self->on_watch_read(generation, ec);
                          });
}

// False once the request the watch was started for is answered (or gone): the next read
// waits for the watch to end, and is started here.
bool HttpConnection::still_watched(std::uint64_t generation) {
  if (!closed_ && pending_ && pending_->generation == generation) return true;
  if (std::exchange(read_after_watch_, false)) do_read();
  return false;
}

void HttpConnection::on_watch_read(std::uint64_t generation, boost::system::error_code ec) {
  if (ec == asio::error::eof) peer_eof_ = true;  // also when the answer went out meanwhile
  if (!still_watched(generation)) return;
  if (!ec) return watch_for_hangup();
  if (ec != asio::error::eof) return close();  // reset, or another failure: nobody is there
  if (exchange_.http_10) return;  // no interim response may go to it; it gets the answer
  if (!pending_->streaming) {
    // The one write while the request is in flight (a stream writes through its queue); it
    // fits any empty send buffer, so a non-blocking send takes it whole.
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    const auto sent = ::send(stream_.socket().native_handle(), kContinue.data(), kContinue.size(),
                             MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return close();
  }
  watch_for_hangup();
}

// Woken by an error or hang-up condition on the socket (or urgent data): a reset in reply to
// our write means the client is gone; otherwise it still waits and the watch goes on.
void HttpConnection::on_watch_error(std::uint64_t generation, boost::system::error_code ec) {
  if (!still_watched(generation)) return;
  if (ec) return close();
  int error = 0;
  socklen_t size = sizeof error;
  ::getsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_ERROR, &error, &size);
  tcp_info info{};
  socklen_t info_size = sizeof info;
  const bool closed_by_peer = ::getsockopt(stream_.socket().native_handle(), IPPROTO_TCP, TCP_INFO,
                                           &info, &info_size) == 0 &&
                              info.tcpi_state == TCP_CLOSE;
  if (error != 0 || closed_by_peer) return close();
  watch_for_hangup();
}

// --- the SSE stream of a request with progress: raw chunked HTTP/1.1 through a queue, so that
// a progress event and the answer never write at the same time

void HttpConnection::start_stream(Era era) {
  http::response<http::empty_body> head(http::status::ok, 11);
  head.set(http::field::server, "codemode-mcp");
  head.set(http::field::content_type, "text/event-stream");
  head.set(http::field::cache_control, "no-cache");
  if (era == Era::stateless) head.set("X-Accel-Buffering", "no");
  head.keep_alive(exchange_.keep_alive && !state_->draining);
  head.chunked(true);
  stream_eof_ = head.need_eof();
  std::ostringstream out;
  out << head.base();
  enqueue(out.str());
}

void HttpConnection::send_event(const std::string& message) {
  const std::string event = "event: message\ndata: " + message + "\n\n";
  std::ostringstream chunk;
  chunk << std::hex << event.size() << "\r\n" << event << "\r\n";
  enqueue(chunk.str());
}

void HttpConnection::end_stream() {
  end_after_queue_ = true;
  enqueue("0\r\n\r\n");
}

void HttpConnection::enqueue(std::string bytes) {
  out_queue_.push_back(std::move(bytes));
  if (!writing_) write_next();
}

void HttpConnection::write_next() {
  if (closed_) return;
  if (out_queue_.empty()) {
    writing_ = false;
    if (std::exchange(end_after_queue_, false)) on_write(stream_eof_, {});
    return;
  }
  writing_ = true;
  stream_.expires_after(state_->options.read_timeout);
  asio::async_write(stream_, asio::buffer(out_queue_.front()),
                    [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                      self->stream_.expires_never();
                      if (ec || self->closed_) {
                        self->writing_ = false;
                        self->out_queue_.clear();
                        self->end_after_queue_ = false;
                        return self->close();
                      }
                      self->out_queue_.pop_front();
                      self->write_next();
                    });
}

// --- answers

HttpConnection::HttpResponse HttpConnection::empty_response(http::status status) {
  HttpResponse response(status, 11);
  return response;
}

HttpConnection::HttpResponse HttpConnection::json_response(http::status status, std::string body) {
  HttpResponse response(status, 11);
  response.set(http::field::content_type, "application/json");
  response.body() = std::move(body);
  return response;
}

void HttpConnection::respond_text(http::status status, std::string body) {
  HttpResponse response(status, 11);
  response.set(http::field::content_type, "text/plain; charset=utf-8");
  response.body() = std::move(body);
  write(std::move(response));
}

// On /mcp a refusal is a JSON-RPC error without an id (the transport spec allows one in the
// body); elsewhere plain text.
HttpConnection::HttpResponse HttpConnection::make_refusal(const HttpRefusal& refusal,
                                                          std::string_view challenge,
                                                          spdlog::level::level_enum level) {
  spdlog::log(level, "http {} from {}: {}", refusal.status, client_,
              net::escape_text(refusal.message));
  const auto status = static_cast<http::status>(refusal.status);
  if (!exchange_.mcp) {
    HttpResponse response(status, 11);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = refusal.message + "\n";
    return response;
  }
  HttpResponse response = json_response(
      status, serialize_error(nullptr, ErrorCode::transport_refused, refusal.message));
  if (!challenge.empty()) {
    response.set(http::field::www_authenticate, challenge);
  } else if (refusal.status == 401) {
    response.set(http::field::www_authenticate, "Bearer");
  }
  if (refusal.status == 429) response.set(http::field::retry_after, "1");
  return response;
}

void HttpConnection::refuse(const HttpRefusal& refusal, std::string_view challenge) {
  write(make_refusal(refusal, challenge));
}

void HttpConnection::write(HttpResponse response) {
  response.set(http::field::server, "codemode-mcp");
  response.keep_alive(exchange_.keep_alive && !state_->draining);
  response.prepare_payload();
  auto message = std::make_shared<HttpResponse>(std::move(response));
  stream_.expires_after(state_->options.read_timeout);
  http::async_write(
      stream_, *message,
      [self = shared_from_this(), message](boost::system::error_code ec, std::size_t) {
        self->on_write(message->need_eof(), ec);
      });
}

void HttpConnection::on_write(bool need_eof, boost::system::error_code ec) {
  if (ec) return close();
  if (watching_) {
    // The watch of the request just answered is the only operation left: end it, and read the
    // next request (if any) once it has.
    read_after_watch_ = !need_eof;
    boost::system::error_code ignored;
    stream_.socket().cancel(ignored);
    if (!need_eof) return;
  }
  if (!need_eof) return do_read();
  if (exchange_.linger) return linger();
  shut_down();
}

// After refusing a body mid-upload, read and discard what the client still sends (bounded),
// so that closing does not reset the connection before it has read our answer.
void HttpConnection::linger() {
  boost::system::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream_.expires_after(std::chrono::seconds(5));
  discard_more();
}

void HttpConnection::discard_more() {
  discard_.resize(std::size_t{64} * 1024);
  stream_.async_read_some(asio::buffer(discard_),
                          [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                            self->discarded_ += n;
                            if (ec || self->discarded_ > 4 * self->state_->options.max_body_bytes) {
                              return self->close();
                            }
                            self->discard_more();
                          });
}

void HttpConnection::shut_down() {
  boost::system::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  closed_ = true;
}

void HttpConnection::close() {
  closed_ = true;
  if (pending_) {  // a read or write failed while a call ran: nobody reads its answer now
    state_->request_done(pending_->principal);
    asio::post(pending_->session->executor(),
               [session = pending_->session, id = pending_->id] { session->cancel(id); });
    pending_.reset();
  }
  boost::system::error_code ec;
  stream_.socket().close(ec);
}
void serve_connection(tcp::socket socket, std::shared_ptr<HttpServer::State> state) {
  std::make_shared<HttpConnection>(std::move(socket), std::move(state))->run();
}

}  // namespace codemode::server
