// MCP's stdio transport: newline-delimited JSON-RPC on file descriptors 0 and 1.
//
// When stdin is a pipe or a socket (what MCP clients hand a server they start), the executor's
// reactor watches it and reads it on the executor's thread: a line reaches its handler without
// waking another thread first. Anything else (a regular file, a terminal, /dev/null: descriptors
// epoll cannot watch, or whose flags a shell shares) is read by a thread of its own with
// poll()+read(), and each complete line is posted to the executor. Neither path leaves the
// descriptor's flags changed: a read follows a poll() that found it readable. A line longer than
// the cap is dropped whole and reported, and reading goes on. stdout carries nothing but protocol
// messages: write_line() writes one whole line at a time under a mutex, from whatever thread
// calls it.
//
// Lifetime: stop() cancels the reactor's wait (it is called on the executor's thread, from a
// handler or once the executor has stopped), or wakes and joins the reader thread; the
// destructor calls it. Handlers run on the executor, which must not run two at once (one
// thread, as the daemon's, or a strand), and capture `this`, so the owner keeps the transport
// alive until the executor has stopped running handlers (the daemon destroys it after
// io_context::run() returns).
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

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

  // Whether stdin is watched by the executor's reactor (a pipe or a socket) rather than read by
  // a thread of its own. Known after construction.
  bool reads_on_executor() const { return input_.has_value(); }

 private:
  enum class Delivery { inline_call, post };
  enum class Read { more, drained, ended };

  void read_loop();
  void wait_for_input();
  void drain();  // reads until nothing is left or the input has ended
  Read read_available(Delivery delivery);
  void consume(std::string_view chunk, Delivery delivery);
  void end(Delivery delivery);
  void deliver(Delivery delivery, std::function<void()> fn);

  boost::asio::any_io_executor executor_;
  int in_fd_;
  int out_fd_;
  std::size_t max_line_bytes_;
  StdioHandlers handlers_;
  std::optional<boost::asio::posix::stream_descriptor> input_;  // the reactor path
  bool stopped_ = false;                                        // the reactor path, executor only
  std::string line_;                                            // the line being read
  bool dropping_ = false;        // inside an oversize line: discard up to the next newline
  int wake_pipe_[2] = {-1, -1};  // the thread path
  std::thread reader_;
  std::mutex write_mutex_;
};

}  // namespace codemode::server
