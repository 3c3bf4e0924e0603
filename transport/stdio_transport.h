// MCP's stdio transport: newline-delimited JSON-RPC on file descriptors 0 and 1.
//
// When stdin is a pipe or a socket (what MCP clients hand a server they start), the executor's
// reactor watches it and reads it on the executor's thread: a line reaches its handler without
// waking another thread first. Anything else (a regular file, a terminal, /dev/null: descriptors
// epoll cannot watch, or whose flags a shell shares) is read by a thread of its own with
// poll()+read(), and each complete line is posted to the executor. Neither path leaves the
// descriptor's flags changed: a read follows a poll() that found it readable. A line longer than
// the cap is dropped whole and reported, and reading goes on.
//
// stdout carries nothing but protocol messages, one whole line at a time, and a peer that stops
// reading it never blocks the caller: with `--http --stdio` that caller is the I/O thread every
// HTTP client shares. write_line() writes on the calling thread while stdout takes the bytes at
// once (pieces of at most PIPE_BUF after poll() finds it writable, which a pipe or socket then
// takes without blocking), and queues the rest for a writer thread of the transport's own.
// The queue is bounded (`max_queued_bytes`): a line that does not fit is refused, and so is
// every later one, so the peer sees whole lines in order and then nothing, as if stdout had
// closed. The destructor gives the writer a few seconds to hand the queue over.
//
// Lifetime: stop() cancels the reactor's wait (it is called on the executor's thread, from a
// handler or once the executor has stopped), or wakes and joins the reader thread; the
// destructor calls it. Handlers run on the executor, which must not run two at once (one
// thread, as the daemon's, or a strand), and capture `this`, so the owner keeps the transport
// alive until the executor has stopped running handlers (the daemon destroys it after
// io_context::run() returns).
#pragma once

#include <condition_variable>
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
  // What stdout may hold back from a peer that does not read: hundreds of the largest answers.
  static constexpr std::size_t kDefaultMaxQueuedBytes = std::size_t{16} * 1024 * 1024;

  StdioTransport(boost::asio::any_io_executor executor, int in_fd, int out_fd,
                 std::size_t max_line_bytes, std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  ~StdioTransport();
  StdioTransport(const StdioTransport&) = delete;
  StdioTransport& operator=(const StdioTransport&) = delete;

  void start(StdioHandlers handlers);
  void stop();

  // Writes `line` and a newline, or queues what stdout does not take at once; never waits for
  // the peer. Returns false when the line is lost: stdout is gone (the client exited) or the
  // peer left more than `max_queued_bytes` unread.
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

  enum class Write { done, would_block, failed };
  Write write_some_now(std::string_view& rest);  // under write_mutex_
  void write_loop();

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

  // stdout. pending_ holds whole lines from pending_offset_ on; only the writer thread empties
  // it, and while it is not empty write_line() appends instead of writing, so lines keep their
  // order.
  std::size_t max_queued_bytes_;
  bool out_is_socket_ = false;
  std::mutex write_mutex_;
  std::condition_variable write_wanted_;  // pending_ got bytes, or the writer must stop
  std::string pending_;
  std::size_t pending_offset_ = 0;
  bool out_failed_ = false;  // stdout is gone or overflowed: every later line is refused
  bool stop_writer_ = false;
  std::thread writer_;
};

}  // namespace codemode::server
