#include "gateway/http_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <map>

#include "net/ascii.h"

namespace codemode::gateway {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Strand = net::strand<net::io_context::executor_type>;

constexpr std::uint32_t kMaxResponseHeaderBytes = 64 * 1024;
constexpr std::string_view kUserAgent = "codemode-mcp";
// Interim (1xx) responses skipped before the final one; a server that sends more is broken or
// hostile, and each one costs a parse.
constexpr unsigned kMaxInterimResponses = 16;
// Content codings undone on one body; every layer may inflate up to the body cap.
constexpr std::size_t kMaxContentCodings = 4;

using codemode::net::ascii_lower;
using codemode::net::iequals;

http::verb to_verb(Method method) {
  switch (method) {
    case Method::get:
      return http::verb::get;
    case Method::post:
      return http::verb::post;
    case Method::put:
      return http::verb::put;
    case Method::patch:
      return http::verb::patch;
    case Method::del:
      return http::verb::delete_;
    case Method::head:
      return http::verb::head;
  }
  return http::verb::get;
}

bool is_idempotent(Method method) { return method != Method::post && method != Method::patch; }

GatewayError runtime_error(std::string message) {
  return GatewayError{ErrorKind::runtime, std::move(message)};
}

// The elements of every field named `name`, in order, lower-cased and trimmed, empty ones and
// "identity" left out: `Content-Encoding: identity` plus `Content-Encoding: gzip` is {"gzip"}.
std::vector<std::string> codings_of(const Headers& headers, std::string_view name) {
  std::vector<std::string> codings;
  for (const auto& [field, value] : headers) {
    if (!iequals(field, name)) continue;
    std::string coding;
    const auto flush = [&] {
      if (!coding.empty() && coding != "identity") codings.push_back(coding);
      coding.clear();
    };
    for (const char c : value) {
      if (c == ',') {
        flush();
      } else if (c != ' ' && c != '\t') {
        coding += ascii_lower(c);
      }
    }
    flush();
  }
  return codings;
}

// Whether a response that has no body by definition (204, 304) declares one anyway; a server
// that does so may send it, and those bytes would be read as the next response.
bool declares_body(const Headers& headers) {
  return std::any_of(headers.begin(), headers.end(), [](const Header& h) {
    return iequals(h.first, "transfer-encoding") ||
           (iequals(h.first, "content-length") &&
            h.second.find_first_not_of("0 \t") != std::string::npos);
  });
}

// gzip / zlib / raw deflate into at most `cap` bytes. nullopt with `oversize` set: the decoded
// body is larger than the cap; nullopt otherwise: the data is not valid.
std::optional<std::string> inflate_body(std::string_view data, int window_bits, std::size_t cap,
                                        bool& oversize) {
  z_stream zs{};
  if (inflateInit2(&zs, window_bits) != Z_OK) return std::nullopt;
  std::string out;
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  std::array<char, 16384> chunk{};
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    zs.next_out = reinterpret_cast<Bytef*>(chunk.data());
    zs.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    const std::size_t produced = chunk.size() - zs.avail_out;
    if (out.size() + produced > cap) {
      oversize = true;
      break;
    }
    out.append(chunk.data(), produced);
    if (rc == Z_OK && produced == 0 && zs.avail_in == 0) break;  // truncated input
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return std::nullopt;
  return out;
}

// ---------------------------------------------------------------------------------------------

struct Connection {
  std::string origin;
  std::unique_ptr<beast::tcp_stream> plain;  // exactly one of plain / tls is set
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  bool idle = false;
  std::uint64_t idle_generation = 0;
  Clock::time_point idle_since;

  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  // Whether anything arrived since the last response was read: bytes, EOF or an error on the
  // socket, or TLS data already taken off it. An idle connection with input is not reusable;
  // the input would be read as the next request's response.
  bool has_unread_input() {
    if (buffer.size() != 0) return true;
    pollfd polled{lowest().socket().native_handle(), POLLIN, 0};
    if (::poll(&polled, 1, 0) != 0) return true;
    if (!tls) return false;
    SSL* ssl = tls->native_handle();
    return SSL_has_pending(ssl) == 1 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0;
  }
  void close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().close();
  }
  template <class F>
  void visit(F&& f) {
    if (tls) {
      f(*tls);
    } else {
      f(*plain);
    }
  }
};

}  // namespace

struct HttpClient::State : std::enable_shared_from_this<HttpClient::State> {
  State(net::io_context& io, ClientOptions opts)
      : strand(net::make_strand(io)), options(std::move(opts)), tls(ssl::context::tls_client) {}

  Strand strand;
  ClientOptions options;
  ssl::context tls;
  std::map<std::string, std::vector<std::shared_ptr<Connection>>> idle;  // on strand
  std::atomic<std::uint64_t> opened{0};
  bool closed = false;  // on strand

  // An idle connection to `origin` that is still usable, or null.
  std::shared_ptr<Connection> take_idle(const std::string& origin) {
    auto found = idle.find(origin);
    if (found == idle.end()) return nullptr;
    auto& list = found->second;
    while (!list.empty()) {
      std::shared_ptr<Connection> conn = std::move(list.back());
      list.pop_back();
      conn->idle = false;
      ++conn->idle_generation;
      beast::error_code ignored;
      conn->lowest().socket().cancel(ignored);  // stops the close watcher
      // The watcher may not have run yet although input has arrived: look again now.
      if (Clock::now() - conn->idle_since < options.idle_timeout && !conn->has_unread_input()) {
        return conn;
      }
      conn->close();
    }
    return nullptr;
  }

  // A sink: the caller gives up its reference (std::move(conn_)), which a const& would keep.
  void release(std::shared_ptr<Connection> conn) {  // NOLINT(performance-unnecessary-value-param)
    auto& list = idle[conn->origin];
    if (closed || list.size() >= options.max_idle_per_origin) {
      conn->close();
      return;
    }
    conn->lowest().expires_never();
    conn->idle = true;
    conn->idle_since = Clock::now();
    const std::uint64_t generation = ++conn->idle_generation;
    list.push_back(conn);
    // A server closes idle connections when it likes; any readability while idle (EOF, reset,
    // unsolicited bytes) makes the connection unusable, so it leaves the pool at once.
    std::weak_ptr<State> weak = weak_from_this();
    conn->lowest().socket().async_wait(
        tcp::socket::wait_read,
        net::bind_executor(strand, [weak, conn, generation](beast::error_code) {
          auto self = weak.lock();
          if (!conn->idle || conn->idle_generation != generation) return;
          conn->idle = false;
          conn->close();
          if (!self) return;
          auto& pool = self->idle[conn->origin];
          std::erase(pool, conn);
        }));
  }

  void close_all() {
    closed = true;
    for (auto& [origin, list] : idle) {
      for (auto& conn : list) {
        conn->idle = false;
        conn->close();
      }
    }
    idle.clear();
  }
};

namespace {

// One request from start to completion. Keeps itself (and the client state) alive through the
// handlers it hands to Asio; runs only on the client's strand.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<HttpClient::State> state, ClientRequest request, Deadline deadline,
           HttpClient::Completion done)
      : state_(std::move(state)),
        request_(std::move(request)),
        deadline_(deadline),
        done_(std::move(done)),
        resolver_(state_->strand),
        resolve_timer_(state_->strand) {
    connect_deadline_ = std::min(deadline_, Clock::now() + state_->options.connect_timeout);
  }

  // The fetch's AbortSignal aborted, or its call ended: no answer is wanted any more. The
  // connection is closed rather than pooled (the upstream sees it end and may stop working on
  // the request); handlers still queued find the exchange over and do nothing.
  void abort() {
    if (over()) return;
    resolver_.cancel();
    resolve_timer_.cancel();
    if (conn_) conn_->close();
    finish(runtime_error("request to " + origin() + " aborted before its response arrived"));
  }

  void start() {
    if (over()) return;
    if (Clock::now() >= deadline_) {
      finish(runtime_error("request to " + origin() + " timed out before it was sent"));
      return;
    }
    conn_ = state_->take_idle(origin());
    if (conn_) {
      reused_ = true;
      write();
    } else {
      resolve();
    }
  }

 private:
  enum class Phase { resolve, connect, tls, write, read };

  const std::string& origin() const { return request_.url.origin; }
  // The completion has run (an answer, a failure or an abort): nothing more may happen.
  bool over() const { return !done_; }

  void resolve() {
    phase_ = Phase::resolve;
    const std::string host = request_.url.connect_host();
    beast::error_code ec;
    const net::ip::address address = net::ip::make_address(host, ec);
    if (!ec) {
      connect({tcp::endpoint(address, request_.url.port)});
      return;
    }
    auto self = shared_from_this();
    resolve_timer_.expires_at(connect_deadline_);
    resolve_timer_.async_wait([self](beast::error_code wait_ec) {
      if (!wait_ec) self->resolver_.cancel();
    });
    resolver_.async_resolve(
        host, std::to_string(request_.url.port),
        [self](beast::error_code resolve_ec, const tcp::resolver::results_type& results) {
          self->resolve_timer_.cancel();
          if (self->over()) return;
          if (resolve_ec == net::error::operation_aborted) {
            self->finish(runtime_error("resolving the host of " + self->origin() + " timed out"));
            return;
          }
          if (resolve_ec) {
            self->finish(runtime_error("cannot resolve the host of " + self->origin() + " (" +
                                       resolve_ec.message() + ")"));
            return;
          }
          std::vector<tcp::endpoint> endpoints;
          for (const auto& entry : results) endpoints.push_back(entry.endpoint());
          self->connect(endpoints);
        });
  }

  void connect(const std::vector<tcp::endpoint>& endpoints) {
    phase_ = Phase::connect;
    conn_ = std::make_shared<Connection>();
    conn_->origin = origin();
    conn_->plain = std::make_unique<beast::tcp_stream>(state_->strand);
    conn_->plain->expires_at(connect_deadline_);
    ++state_->opened;
    auto self = shared_from_this();
    conn_->plain->async_connect(
        endpoints, [self](beast::error_code ec, const tcp::endpoint&) { self->on_connect(ec); });
  }

  void on_connect(beast::error_code ec) {
    if (over()) return;
    if (ec) return fail(ec);
    beast::error_code ignored;
    conn_->plain->socket().set_option(tcp::no_delay(true), ignored);
    if (request_.url.scheme == Scheme::https) {
      handshake();
    } else {
      write();
    }
  }

  void handshake() {
    phase_ = Phase::tls;
    conn_->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(std::move(*conn_->plain),
                                                                        state_->tls);
    conn_->plain.reset();
    SSL* ssl = conn_->tls->native_handle();
    const std::string host = request_.url.connect_host();
    beast::error_code ec;
    net::ip::make_address(host, ec);
    if (ec) {  // a name: SNI, and the certificate must name it
      SSL_set_tlsext_host_name(ssl, host.c_str());
      SSL_set1_host(ssl, host.c_str());
    } else {  // an address: no SNI (RFC 6066), the certificate must list the IP
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
    }
    conn_->lowest().expires_at(connect_deadline_);
    auto self = shared_from_this();
    conn_->tls->async_handshake(ssl::stream_base::client, [self](beast::error_code hs_ec) {
      if (self->over()) return;
      if (hs_ec) return self->fail(hs_ec);
      self->write();
    });
  }

  void write() {
    phase_ = Phase::write;
    message_ = {};
    message_.method(to_verb(request_.method));
    message_.target(request_.url.target);
    message_.version(11);
    message_.set(http::field::host, request_.url.host_header());
    bool has_user_agent = false;
    for (const auto& [name, value] : request_.headers) {
      message_.insert(name, value);
      has_user_agent = has_user_agent || iequals(name, "user-agent");
    }
    if (!has_user_agent) message_.set(http::field::user_agent, kUserAgent);
    message_.set(http::field::accept_encoding, "gzip, deflate");
    message_.body() = request_.body;
    message_.prepare_payload();
    conn_->lowest().expires_at(deadline_);
    auto self = shared_from_this();
    conn_->visit([&](auto& stream) {
      http::async_write(stream, message_, [self](beast::error_code ec, std::size_t) {
        if (self->over()) return;
        if (ec) {
          if (self->reused_ && !self->retried_) return self->retry();
          return self->fail(ec);
        }
        self->read();
      });
    });
  }

  void read() {
    phase_ = Phase::read;
    parser_.emplace();
    parser_->body_limit(state_->options.response_bytes);
    parser_->header_limit(kMaxResponseHeaderBytes);
    if (request_.method == Method::head) parser_->skip(true);
    auto self = shared_from_this();
    conn_->visit([&](auto& stream) {
      http::async_read(stream, conn_->buffer, *parser_,
                       [self](beast::error_code ec, std::size_t) { self->on_read(ec); });
    });
  }

  // A kept-alive connection the server closed while it sat idle: send once more on a new one.
  void retry() {
    retried_ = true;
    reused_ = false;
    conn_->close();
    conn_.reset();
    resolve();
  }

  void on_read(beast::error_code ec) {
    if (over()) return;  // aborted: the connection is closed, never back to the pool
    if (ec) {
      if (reused_ && !retried_ && !parser_->got_some() && interim_ == 0 &&
          is_idempotent(request_.method)) {
        return retry();
      }
      return fail(ec);
    }
    auto& message = parser_->get();
    const unsigned status = message.result_int();
    // 1xx responses (100 Continue, 103 Early Hints, ...) are interim: the final response follows
    // on the same connection. Taking one as the answer would leave the real one to be read by
    // whichever request uses the connection next. 101 would hand the connection to another
    // protocol, which we never ask for.
    if (status / 100 == 1) {
      if (status == 101) {
        conn_->close();
        return finish(runtime_error("malformed HTTP response from " + origin() +
                                    " (101 Switching Protocols, never asked for)"));
      }
      if (++interim_ > kMaxInterimResponses) {
        conn_->close();
        return finish(runtime_error("malformed HTTP response from " + origin() + " (more than " +
                                    std::to_string(kMaxInterimResponses) +
                                    " interim 1xx responses)"));
      }
      return read();
    }
    InboundResponse response;
    response.status = status;
    response.status_text = std::string(message.reason());
    for (const auto& field : message) {
      response.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    }
    response.body = std::move(message.body());
    response.final_url = request_.url.full();
    const bool bodyless = request_.method == Method::head || status == 204 || status == 304;
    // Back to the pool only when this response ended exactly where its framing says and nothing
    // follows it. A HEAD response never goes back: a server that sends the body anyway may send
    // it later, after the next request went out on the connection.
    const bool keep_alive = message.keep_alive() && !parser_->need_eof() &&
                            !conn_->has_unread_input() && request_.method != Method::head &&
                            !(bodyless && declares_body(response.headers));

    if (auto error = decode(response, bodyless)) {
      conn_->close();
      finish(std::move(*error));
      return;
    }
    if (keep_alive) {
      state_->release(std::move(conn_));
    } else {
      conn_->close();
    }
    finish(std::move(response));
  }

  // Undoes the Content-Encoding of the body, every field and element of it, last applied first
  // (gzip and deflate; anything else is refused, we only advertise those two), and removes the
  // framing headers: they describe bytes the code does not get. A transfer coding other than
  // chunked is refused: the body would reach the code still encoded.
  std::optional<GatewayError> decode(InboundResponse& response, bool bodyless) {
    const std::vector<std::string> codings = codings_of(response.headers, "content-encoding");
    const std::vector<std::string> transfer = codings_of(response.headers, "transfer-encoding");
    std::erase_if(response.headers, [](const Header& h) {
      return iequals(h.first, "content-encoding") || iequals(h.first, "content-length") ||
             iequals(h.first, "transfer-encoding");
    });
    if (bodyless) return std::nullopt;
    if (!transfer.empty() && transfer != std::vector<std::string>{"chunked"}) {
      return runtime_error("response from " + origin() +
                           " has an unsupported Transfer-Encoding (only chunked is read)");
    }
    if (codings.size() > kMaxContentCodings) {
      return runtime_error("response from " + origin() + " has more than " +
                           std::to_string(kMaxContentCodings) + " Content-Encodings");
    }
    for (const auto& coding : codings) {
      if (coding != "gzip" && coding != "x-gzip" && coding != "deflate") {
        return runtime_error("response from " + origin() +
                             " has an unsupported Content-Encoding (only gzip and deflate are "
                             "decoded)");
      }
    }
    const std::size_t cap = state_->options.response_bytes;
    for (auto coding = codings.rbegin(); coding != codings.rend(); ++coding) {
      const bool deflate = *coding == "deflate";
      bool oversize = false;
      auto decoded = inflate_body(response.body, deflate ? 15 : 15 + 16, cap, oversize);
      if (!decoded && !oversize && deflate) {  // some servers send raw deflate
        decoded = inflate_body(response.body, -15, cap, oversize);
      }
      if (oversize) {
        return runtime_error("response body exceeds " + std::to_string(cap) + " bytes");
      }
      if (!decoded) {
        return runtime_error("response from " + origin() + " has a corrupt " + *coding + " body");
      }
      response.body = std::move(*decoded);
    }
    return std::nullopt;
  }

  void fail(beast::error_code ec) {
    if (conn_) conn_->close();
    finish(runtime_error(describe(ec)));
  }

  std::string describe(beast::error_code ec) const {
    const std::string& where = origin();
    if (ec == beast::error::timeout) {
      return phase_ == Phase::connect || phase_ == Phase::tls
                 ? "connecting to " + where + " timed out"
                 : "request to " + where + " timed out";
    }
    if (ec == http::error::body_limit) {
      return "response body exceeds " + std::to_string(state_->options.response_bytes) + " bytes";
    }
    if (ec == http::error::header_limit) {
      return "response headers from " + where + " exceed " +
             std::to_string(kMaxResponseHeaderBytes) + " bytes";
    }
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::error::broken_pipe || ec == ssl::error::stream_truncated) {
      return "connection to " + where + " closed before a complete response (" + ec.message() + ")";
    }
    if (ec.category() == http::make_error_code(http::error::bad_version).category()) {
      return "malformed HTTP response from " + where + " (" + ec.message() + ")";
    }
    switch (phase_) {
      case Phase::resolve:
      case Phase::connect:
        return "cannot connect to " + where + " (" + ec.message() + ")";
      case Phase::tls: {
        const long verify =
            conn_ && conn_->tls ? SSL_get_verify_result(conn_->tls->native_handle()) : X509_V_OK;
        const std::string reason = verify != X509_V_OK
                                       ? std::string("certificate verification failed: ") +
                                             X509_verify_cert_error_string(verify)
                                       : ec.message();
        return "TLS handshake with " + where + " failed (" + reason + ")";
      }
      case Phase::write:
      case Phase::read:
        break;
    }
    return "request to " + where + " failed (" + ec.message() + ")";
  }

  void finish(ClientResult result) {
    if (!done_) return;
    auto done = std::move(done_);
    done_ = nullptr;
    done(std::move(result));
  }

  std::shared_ptr<HttpClient::State> state_;
  ClientRequest request_;
  Deadline deadline_;
  Deadline connect_deadline_;
  HttpClient::Completion done_;
  tcp::resolver resolver_;
  net::steady_timer resolve_timer_;
  std::shared_ptr<Connection> conn_;
  Phase phase_ = Phase::resolve;
  bool reused_ = false;
  bool retried_ = false;
  unsigned interim_ = 0;  // 1xx responses skipped so far
  http::request<http::string_body> message_;
  std::optional<http::response_parser<http::string_body>> parser_;
};

}  // namespace

std::variant<std::unique_ptr<HttpClient>, std::vector<std::string>> HttpClient::create(
    boost::asio::io_context& io, ClientOptions options) {
  auto state = std::make_shared<State>(io, std::move(options));
  std::vector<std::string> problems;
  beast::error_code ec;
  state->tls.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1);
  state->tls.set_verify_mode(ssl::verify_peer);
  if (state->options.system_trust == ClientOptions::SystemTrust::use_system_store) {
    state->tls.set_default_verify_paths(ec);
    if (ec) problems.push_back("cannot load the system CA store (" + ec.message() + ")");
  }
  if (state->options.ca_file) {
    state->tls.load_verify_file(state->options.ca_file->string(), ec);
    if (ec) {
      problems.push_back("CA file " + state->options.ca_file->string() +
                         ": cannot load certificates (" + ec.message() + ")");
    }
  }
  if (!problems.empty()) return problems;
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(state)));
}

HttpClient::HttpClient(std::shared_ptr<State> state) : state_(std::move(state)) {}

HttpClient::~HttpClient() {
  net::post(state_->strand, [state = state_] { state->close_all(); });
}

void HttpClient::send(ClientRequest request, Deadline deadline, Completion done,
                      const std::shared_ptr<FetchAbort>& abort) {
  auto exchange = std::make_shared<Exchange>(state_, std::move(request), deadline, std::move(done));
  net::post(state_->strand, [exchange] { exchange->start(); });
  if (abort) {
    // Weak: an exchange that has completed is not kept alive by the abort its fetch holds.
    abort->on_abort([weak = std::weak_ptr<Exchange>(exchange), strand = state_->strand] {
      net::post(strand, [weak] {
        if (auto exchange = weak.lock()) exchange->abort();
      });
    });
  }
}

std::uint64_t HttpClient::connections_opened() const { return state_->opened.load(); }

}  // namespace codemode::gateway
