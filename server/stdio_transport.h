// MCP's stdio transport: newline-delimited JSON-RPC on file descriptors 0 and 1.
//
// stdin is read by a thread of its own with poll()+read(), because Asio cannot watch every kind
// of descriptor a client may hand us (regular files, for one); each complete line is posted to
// the executor. A line longer than the cap is dropped whole and reported, and reading goes on.
// stdout carries nothing but protocol messages: write_line() writes one whole line at a time
// under a mutex, from whatever thread calls it.
//
// Lifetime: stop() wakes and joins the reader; the destructor calls it. Handlers run on the
// executor and capture `this`, so the owner keeps the transport alive until the executor has
// stopped running handlers (the daemon destroys it after io_context::run() returns).
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/any_io_executor.hpp>

namespace codemode::server {

struct StdioHandlers {
  std::function<void(std::string line)> on_line;
  std::function<void(std::size_t limit)> on_oversize;
  std::function<void()> on_eof;  // stdin closed (or failed); no more lines will come
};

class StdioTransport {
 public:
  StdioTransport(boost::asio::any_io_executor executor, int in_fd, int out_fd,
                 std::size_t max_line_bytes);
  ~StdioTransport();
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  void start(StdioHandlers handlers);
  void stop();

  // Writes `line` and a newline. Returns false when stdout is gone (the client exited).
  bool write_line(std::string_view line);

 private:
  void read_loop();

  boost::asio::any_io_executor executor_;
  int in_fd_;
  int out_fd_;
  std::size_t max_line_bytes_;
  StdioHandlers handlers_;
  int wake_pipe_[2] = {-1, -1};
  std::thread reader_;
  std::mutex write_mutex_;
};

}  // namespace codemode::server
