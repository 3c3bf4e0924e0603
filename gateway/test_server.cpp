#include "gateway/test_server.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <zlib.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace codemode::gateway::testing {
namespace {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Request = http::request<http::string_body>;

tcp::socket& raw_socket(tcp::socket& socket) { return socket; }
tcp::socket& raw_socket(ssl::stream<tcp::socket>& stream) { return stream.next_layer(); }

std::size_t number_after(std::string_view path, std::string_view prefix) {
  return static_cast<std::size_t>(std::stoull(std::string(path.substr(prefix.size()))));
}

// A whole response, sent where no response was asked for.
constexpr std::string_view kSmuggled = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled";

std::string percent_encode_all(std::string_view text) {
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    out += '%';
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
  return out;
}

}  // namespace

std::string compress(const std::string& data, int window_bits) {
  z_stream zs{};
  deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, static_cast<uLong>(data.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct TestServer::Impl {
  net::io_context io;
  tcp::acceptor acceptor{io};
  std::uint16_t port = 0;
  std::optional<ssl::context> tls;
  std::thread thread;
  std::atomic<std::uint64_t> connections{0};
  std::atomic<std::uint64_t> requests{0};
  mutable std::mutex mutex;
  mutable std::condition_variable held_changed;  // a connection joined `held`
  std::map<std::string, std::pair<unsigned, std::string>> redirects;
  // /then-junk connections waiting for release_held(): their timer, and what they promise once
  // their bytes are written.
  std::vector<std::pair<std::shared_ptr<net::steady_timer>, std::shared_ptr<std::promise<void>>>>
      held;

  // Waits until the connection becomes readable (the client's next request) or 300 ms pass.
  template <class Stream>
  net::awaitable<void> hold(Stream& stream) {
    auto timer = std::make_shared<net::steady_timer>(io, std::chrono::milliseconds(300));
    raw_socket(stream).async_wait(tcp::socket::wait_read, [timer](beast::error_code ec) {
      if (!ec) timer->cancel();
    });
    beast::error_code ec;
    co_await timer->async_wait(net::redirect_error(net::use_awaitable, ec));
    raw_socket(stream).cancel(ec);
  }

  // Waits until the peer's kernel has acknowledged every byte written on `stream` (its send
  // queue is empty: SIOCOUTQ), at most 5 s: then the bytes are in the peer's socket, not on
  // their way.
  template <class Stream>
  net::awaitable<void> acknowledged(Stream& stream) {
    const int fd = raw_socket(stream).native_handle();
    net::steady_timer timer(io);
    for (int tries = 0; tries < 5000; ++tries) {
      int unacknowledged = 0;
      if (::ioctl(fd, SIOCOUTQ, &unacknowledged) != 0 || unacknowledged == 0) co_return;
      timer.expires_after(std::chrono::milliseconds(1));
      beast::error_code ec;
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
  }

  net::awaitable<void> accept_loop() {
    for (;;) {
      beast::error_code ec;
      tcp::socket socket =
          co_await acceptor.async_accept(net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return;
      ++connections;
      net::co_spawn(io, session(std::move(socket)), net::detached);
    }
  }

  net::awaitable<void> session(tcp::socket socket) {
    if (!tls) {
      co_await serve(socket);
      co_return;
    }
    ssl::stream<tcp::socket> stream(std::move(socket), *tls);
    beast::error_code ec;
    co_await stream.async_handshake(ssl::stream_base::server,
                                    net::redirect_error(net::use_awaitable, ec));
    if (!ec) co_await serve(stream);
  }

  template <class Stream>
  net::awaitable<void> serve(Stream& stream) {
    beast::flat_buffer buffer;
    for (;;) {
      Request request;
      beast::error_code ec;
      co_await http::async_read(stream, buffer, request,
                                net::redirect_error(net::use_awaitable, ec));
      if (ec) co_return;
      ++requests;
      const bool keep_going = co_await respond(stream, request);
      if (!keep_going || !request.keep_alive()) co_return;
    }
  }

  template <class Stream>
  net::awaitable<void> send(Stream& stream, http::response<http::string_body> response) {
    response.prepare_payload();
    beast::error_code ec;
    co_await http::async_write(stream, response, net::redirect_error(net::use_awaitable, ec));
  }

  template <class Stream>
  net::awaitable<void> send_raw(Stream& stream, std::string bytes) {
    beast::error_code ec;
    co_await net::async_write(stream, net::buffer(bytes),
                              net::redirect_error(net::use_awaitable, ec));
  }

  // False: the connection ends after this response.
  template <class Stream>
  net::awaitable<bool> respond(Stream& stream, const Request& request) {
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    http::response<http::string_body> response{http::status::ok, 11};
    response.set(http::field::content_type, "text/plain");

    std::optional<std::pair<unsigned, std::string>> redirect;
    {
      std::lock_guard lock(mutex);
      if (auto found = redirects.find(path); found != redirects.end()) redirect = found->second;
    }
    if (redirect) {
      response.result(redirect->first);
      response.set(http::field::location, redirect->second);
      response.body() = "redirect";
    } else if (path.starts_with("/echo")) {
      std::string body = std::string(request.method_string()) + " " + target + "\n";
      for (const auto& field : request) {
        body += std::string(field.name_string()) + ": " + std::string(field.value()) + "\n";
      }
      response.body() = body + "\n" + request.body();
    } else if (path.starts_with("/status/")) {
      response.result(static_cast<unsigned>(number_after(path, "/status/")));
      response.body() = "status " + path.substr(8);
    } else if (path == "/reset") {
      beast::error_code ec;
      raw_socket(stream).set_option(net::socket_base::linger(true, 0), ec);
      raw_socket(stream).close(ec);
      co_return false;
    } else if (path == "/slow") {
      net::steady_timer timer(io, std::chrono::seconds(5));
      beast::error_code ec;
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      response.body() = "late";
    } else if (path == "/stall") {
      co_await send_raw(stream, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n");
      net::steady_timer timer(io, std::chrono::seconds(5));
      beast::error_code ec;
      co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
      co_return false;
    } else if (path.starts_with("/big/")) {
      response.body() = std::string(number_after(path, "/big/"), 'x');
    } else if (path == "/chunked") {
      co_await send_raw(stream,
                        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        "6\r\nhello \r\n8\r\nchunked \r\n5\r\nworld\r\n0\r\n\r\n");
      co_return true;
    } else if (path.starts_with("/big-chunked/")) {
      std::size_t left = number_after(path, "/big-chunked/");
      std::string bytes = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
      while (left > 0) {
        const std::size_t n = std::min<std::size_t>(left, 1000);
        char size[16];
        (void)std::snprintf(size, sizeof size, "%zx\r\n", n);
        bytes += size + std::string(n, 'y') + "\r\n";
        left -= n;
      }
      co_await send_raw(stream, bytes + "0\r\n\r\n");
      co_return true;
    } else if (path == "/malformed") {
      co_await send_raw(stream, "HTTP/1.1 2x0 What\r\nno-colon-here\r\n\r\n");
      co_return false;
    } else if (path == "/truncated") {
      co_await send_raw(stream, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
      co_return false;
    } else if (path == "/gzip" || path == "/deflate") {
      const bool gzip = path == "/gzip";
      response.set(http::field::content_encoding, gzip ? "gzip" : "deflate");
      response.body() = compress("hello compressed", gzip ? 31 : 15);
    } else if (path.starts_with("/gzip-bomb/")) {
      response.set(http::field::content_encoding, "gzip");
      response.body() = compress(std::string(number_after(path, "/gzip-bomb/"), '\0'), 31);
    } else if (path == "/br") {
      response.set(http::field::content_encoding, "br");
      response.body() = "\x0b\x02\x80hello";
    } else if (path.starts_with("/early-hints/")) {
      co_await send_raw(stream,
                        "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n");
      co_await hold(stream);
      response.body() = "private body of " + path.substr(13);
    } else if (path == "/interim") {
      co_await send_raw(stream,
                        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\n"
                        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                        "HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nafter interim");
      co_return true;
    } else if (path == "/interim-flood") {
      std::string bytes;
      for (int i = 0; i < 17; ++i) bytes += "HTTP/1.1 103 Early Hints\r\n\r\n";
      co_await send_raw(stream, bytes + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
      co_return true;
    } else if (path == "/switching") {
      co_await send_raw(stream,
                        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                        "Connection: Upgrade\r\n\r\n");
      co_return false;
    } else if (path.starts_with("/late-body/")) {
      const std::size_t status =
          request.method() == http::verb::head ? 200 : number_after(path, "/late-body/");
      co_await send_raw(stream, "HTTP/1.1 " + std::to_string(status) +
                                    " Whatever\r\nContent-Length: " +
                                    std::to_string(kSmuggled.size()) + "\r\n\r\n");
      co_await hold(stream);
      co_await send_raw(stream, std::string(kSmuggled));
      co_return true;
    } else if (path == "/then-junk") {
      response.body() = "first";
      co_await send(stream, std::move(response));
      auto timer = std::make_shared<net::steady_timer>(io, std::chrono::seconds(5));
      auto written = std::make_shared<std::promise<void>>();
      {
        std::lock_guard lock(mutex);
        held.emplace_back(timer, written);
      }
      held_changed.notify_all();
      beast::error_code ec;
      co_await timer->async_wait(net::redirect_error(net::use_awaitable, ec));
      co_await send_raw(stream, std::string(kSmuggled));
      co_await acknowledged(stream);
      written->set_value();
      co_return true;
    } else if (path == "/reason") {
      co_await send_raw(stream, "HTTP/1.1 200 " + std::string(request[http::field::authorization]) +
                                    "\r\nContent-Length: 2\r\n\r\nok");
      co_return true;
    } else if (path == "/json-escaped") {
      // The credential as a JSON encoder may write it: every byte as \u00xx (and \u00XX), and
      // with its '/' and '+' escaped the way PHP and .NET do.
      const std::string auth(request[http::field::authorization]);
      std::string lower, upper, mixed;
      for (const unsigned char c : auth) {
        char hex[8];
        (void)std::snprintf(hex, sizeof hex, "\\u%04x", c);
        lower += hex;
        (void)std::snprintf(hex, sizeof hex, "\\u%04X", c);
        upper += hex;
        mixed += c == '/'   ? std::string("\\/")
                 : c == '+' ? std::string("\\u002B")
                            : std::string(1, static_cast<char>(c));
      }
      response.body() =
          R"({"lower":")" + lower + R"(","upper":")" + upper + R"(","mixed":")" + mixed + R"("})";
    } else if (path == "/header-name") {
      const std::string auth(request[http::field::authorization]);
      response.insert("x-" + auth.substr(auth.rfind(' ') + 1) + "-seen", "1");
      response.body() = "ok";
    } else if (path == "/reflect-location") {
      response.result(http::status::found);
      response.set(http::field::location,
                   "/echo/landed?auth=" +
                       percent_encode_all(std::string(request[http::field::authorization])));
      response.body() = "redirect";
    } else if (path == "/stacked-encoding") {
      response.insert(http::field::content_encoding, "identity");
      response.insert(http::field::content_encoding, "gzip, gzip");
      response.body() =
          compress(compress("auth=" + std::string(request[http::field::authorization]), 31), 31);
    } else if (path == "/stacked-unknown") {
      response.insert(http::field::content_encoding, "gzip");
      response.insert(http::field::content_encoding, "x-custom");
      response.body() = compress("hello", 31);
    } else if (path == "/transfer-gzip") {
      const std::string gz = compress("hello", 31);
      char size[16];
      (void)std::snprintf(size, sizeof size, "%zx\r\n", gz.size());
      co_await send_raw(stream, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" +
                                    std::string(size) + gz + "\r\n0\r\n\r\n");
      co_return true;
    } else if (path == "/close-silently") {
      response.body() = "kept alive, then dropped";
      co_await send(stream, std::move(response));
      co_return false;
    } else if (path == "/close") {
      response.keep_alive(false);
      response.body() = "bye";
      co_await send(stream, std::move(response));
      co_return false;
    } else {
      response.result(http::status::not_found);
      response.body() = "not found";
    }
    co_await send(stream, std::move(response));
    co_return true;
  }
};

TestServer::TestServer(std::optional<TlsIdentity> tls) : impl_(std::make_unique<Impl>()) {
  if (tls) {
    impl_->tls.emplace(ssl::context::tls_server);
    impl_->tls->use_certificate_chain(net::buffer(tls->cert_pem));
    impl_->tls->use_private_key(net::buffer(tls->key_pem), ssl::context::pem);
  }
  const tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.bind(endpoint);
  impl_->acceptor.listen();
  impl_->port = impl_->acceptor.local_endpoint().port();
  net::co_spawn(impl_->io, impl_->accept_loop(), net::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

TestServer::~TestServer() {
  impl_->io.stop();
  impl_->thread.join();
}

std::uint16_t TestServer::port() const { return impl_->port; }

std::string TestServer::origin() const {
  return std::string(impl_->tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port());
}

std::uint64_t TestServer::connections() const { return impl_->connections.load(); }
std::uint64_t TestServer::requests() const { return impl_->requests.load(); }

void TestServer::add_redirect(const std::string& path, unsigned status,
                              const std::string& location) {
  std::lock_guard lock(impl_->mutex);
  impl_->redirects[path] = {status, location};
}

bool TestServer::wait_held(std::size_t n, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mutex);
  return impl_->held_changed.wait_for(lock, timeout, [&] { return impl_->held.size() >= n; });
}

std::size_t TestServer::release_held() {
  decltype(impl_->held) held;
  {
    std::lock_guard lock(impl_->mutex);
    held.swap(impl_->held);
  }
  for (auto& [timer, written] : held) {
    net::post(impl_->io, [timer = timer] { timer->cancel(); });
  }
  for (auto& [timer, written] : held) written->get_future().wait();
  return held.size();
}

}  // namespace codemode::gateway::testing
