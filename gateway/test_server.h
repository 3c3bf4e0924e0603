// Test-only: a loopback HTTP(S) server on port 0 that misbehaves on request, so the client and
// the gateway can be tested against real sockets. It counts connections and requests, which is
// how tests prove keep-alive reuse and that a forbidden origin was never contacted.
//
// Routes (by path; the query is ignored):
//   /echo...          200, body "METHOD TARGET\n" + one "name: value\n" per header + "\n" + body
//   /status/NNN       status NNN
//   /reset            reads the request, then resets the connection (RST)
//   /slow             answers after 5 s (tests use a shorter deadline)
//   /stall            sends the status line and headers, then nothing
//   /big/N            200 with an N-byte body and Content-Length
//   /chunked          "hello chunked world" in three chunks
//   /big-chunked/N    N bytes in 1000-byte chunks, no Content-Length
//   /malformed        a status line that is not HTTP, then close
//   /truncated        Content-Length 100, 5 bytes, then close
//   /gzip, /deflate   "hello compressed" with that Content-Encoding
//   /gzip-bomb/N      N zero bytes, gzip-compressed
//   /br               Content-Encoding: br
//   /close            200 with Connection: close
//   /close-silently   200 without Connection: close, then the server closes the connection
//   redirects added with add_redirect(path, status, location)
//   anything else     404
//
// Hostile or careless upstreams; "holds" means: sends nothing more until the connection becomes
// readable (the client's next request on it) or 300 ms pass, whichever is first.
//   /early-hints/NAME 103 Early Hints, holds, then 200 "private body of NAME" (kept alive)
//   /interim          100, 102 and 103, then 200 "after interim", in one write
//   /interim-flood    17 x 103, then 200
//   /switching        101 Switching Protocols, then close
//   /late-body/NNN    status NNN (200 for HEAD) declaring a body by Content-Length, holds, then
//                     sends that body: the bytes of a whole response, 200 "smuggled"
//   /then-junk        200 "first", then, once release_held() is called, a 200 "smuggled" nobody
//                     asked for
//   /reason           status 200 whose reason phrase is the request's Authorization value
//   /header-name      a header named x-WORD-seen, WORD the last word of Authorization
//   /reflect-location 302 to /echo/landed?auth= + Authorization, every byte percent-encoded
//   /stacked-encoding Content-Encoding: identity, then a second field: gzip, gzip; the body
//                     "auth=" + Authorization, gzipped twice
//   /stacked-unknown  Content-Encoding: gzip and a second field x-custom
//   /transfer-gzip    Transfer-Encoding: gzip, chunked (a transfer coding we cannot undo)
//
// Threading: the server owns an io_context and one thread running it; the constructor returns
// once it is listening. The destructor stops the thread and drops every connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/test_tls.h"

namespace codemode::gateway::testing {

class TestServer {
 public:
  explicit TestServer(std::optional<TlsIdentity> tls = std::nullopt);
  ~TestServer();
  TestServer(const TestServer&) = delete;
  TestServer& operator=(const TestServer&) = delete;

  std::uint16_t port() const;
  // "http://127.0.0.1:PORT" (https when built with a TLS identity)
  std::string origin() const;
  std::uint64_t connections() const;  // accepted TCP connections
  std::uint64_t requests() const;     // complete requests read

  void add_redirect(const std::string& path, unsigned status, const std::string& location);
  // Lets every /then-junk connection send its unrequested bytes; returns once the client's
  // kernel has acknowledged them (they wait in its socket), with how many connections did.
  std::size_t release_held();
  // Waits until `n` /then-junk connections wait for release_held() (each registers once "first"
  // is sent), at most `timeout`; false if they did not.
  bool wait_held(std::size_t n, std::chrono::milliseconds timeout) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// The client side's I/O thread: an io_context kept running until destruction, like the
// daemon's. Declare it before anything that posts to it, so it is destroyed last.
class IoThread {
 public:
  IoThread() : guard_(io_.get_executor()), thread_([this] { io_.run(); }) {}
  ~IoThread() {
    guard_.reset();
    io_.stop();
    thread_.join();
  }
  boost::asio::io_context& io() { return io_; }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::thread thread_;
};

// gzip (window_bits 31) or zlib (15) compression of `data`.
std::string compress(const std::string& data, int window_bits);

}  // namespace codemode::gateway::testing
