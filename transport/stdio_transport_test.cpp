#include "transport/stdio_transport.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>

using namespace codemode::server;
using namespace std::chrono_literals;

namespace {

enum class Input { socket, pipe, file };

// What a transport delivered, in order, as the handlers saw it: "line:TEXT", "oversize:N", "eof".
class Recorder {
 public:
  StdioHandlers handlers() {
    return StdioHandlers{
        .on_line = [this](std::string line) { add("line:" + line); },
        .on_oversize = [this](std::size_t limit) { add("oversize:" + std::to_string(limit)); },
        .on_eof = [this] { add("eof"); },
    };
  }
  void add(std::string event) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(event));
    changed_.notify_all();
  }
  // Waits (at most 10 s) until `count` events have come; returns all so far.
  std::vector<std::string> wait_for(std::size_t count) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, 10s, [&] { return events_.size() >= count; });
    return events_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> events_;
};

// A descriptor to read from and, for a socket or a pipe, one to write to.
struct Source {
  int read_fd = -1;
  int write_fd = -1;
  ~Source() {
    if (read_fd >= 0) ::close(read_fd);
    if (write_fd >= 0) ::close(write_fd);
  }
  void close_writer() {
    ::close(write_fd);
    write_fd = -1;
  }
  void write(std::string_view text) const {
    REQUIRE(::write(write_fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  }
};

void open_source(Source& source, Input input, std::string_view file_contents = {}) {
  int fds[2];
  switch (input) {
    case Input::socket:
      REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
      source.read_fd = fds[0];
      source.write_fd = fds[1];
      break;
    case Input::pipe:
      REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
      source.read_fd = fds[0];
      source.write_fd = fds[1];
      break;
    case Input::file: {
      std::FILE* file = std::tmpfile();
      REQUIRE(file != nullptr);
      REQUIRE(std::fwrite(file_contents.data(), 1, file_contents.size(), file) ==
              file_contents.size());
      std::fflush(file);
      source.read_fd = ::dup(::fileno(file));
      std::fclose(file);
      REQUIRE(::lseek(source.read_fd, 0, SEEK_SET) == 0);
      break;
    }
  }
}

// The executor's thread, as the daemon's: runs until the test is done with it.
struct Executor {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
  std::thread thread{[this] { io.run(); }};
  ~Executor() { join(); }
  // Runs `fn` on the executor's thread after every handler queued before it.
  void run_on(std::function<void()> fn) {
    std::promise<void> done;
    boost::asio::post(io, [&] {
      fn();
      done.set_value();
    });
    done.get_future().wait();
  }
  void join() {
    if (!thread.joinable()) return;
    work.reset();
    io.stop();
    thread.join();
  }
};

int null_fd() { return ::open("/dev/null", O_WRONLY | O_CLOEXEC); }

// One transport over one input, on a running executor, as the daemon runs it. finish() stops
// the transport where the daemon does, then the executor, before either is destroyed; the
// destructor calls it.
struct Harness {
  explicit Harness(Input input, std::string_view file_contents = {}) {
    open_source(source, input, file_contents);
  }
  ~Harness() {
    finish();
    ::close(out);
  }
  // stdout is /dev/null unless `out_fd` is given.
  StdioTransport& open(std::size_t max_line_bytes = 1024, int out_fd = -1) {
    return transport.emplace(executor.io.get_executor(), source.read_fd, out_fd >= 0 ? out_fd : out,
                             max_line_bytes);
  }
  void finish() {
    // Once the executor has been joined nothing runs on it any more: stop() came before that.
    if (transport && executor.thread.joinable()) executor.run_on([this] { transport->stop(); });
    executor.join();
  }

  int out = null_fd();
  Source source;
  Recorder recorder;
  Executor executor;
  std::optional<StdioTransport> transport;
};

}  // namespace

TEST_CASE("stdio: a pipe or a socket is read on the executor, anything else by a thread",
          "[server][stdio]") {
  for (const Input input : {Input::socket, Input::pipe, Input::file}) {
    Harness h(input, "x\n");
    CHECK(h.open().reads_on_executor() == (input != Input::file));
  }
}

TEST_CASE("stdio: lines, CRLF, blank lines, a last line without a newline, then EOF",
          "[server][stdio]") {
  const std::string text = "{\"a\":1}\r\n\n\r\n{\"b\":2}\nlast";
  const std::vector<std::string> expected = {"line:{\"a\":1}", "line:{\"b\":2}", "line:last",
                                             "eof"};
  for (const Input input : {Input::socket, Input::pipe, Input::file}) {
    CAPTURE(static_cast<int>(input));
    Harness h(input, text);
    const int flags_before = ::fcntl(h.source.read_fd, F_GETFL);
    h.open().start(h.recorder.handlers());
    if (input != Input::file) {
      h.source.write(text.substr(0, 5));  // a line in two reads
      std::this_thread::yield();
      h.source.write(text.substr(5));
      h.source.close_writer();
    }
    CHECK(h.recorder.wait_for(expected.size()) == expected);
    h.finish();
    // The descriptor is lent: still open, and its flags (O_NONBLOCK among them) as they were.
    CHECK(::fcntl(h.source.read_fd, F_GETFL) == flags_before);
  }
}

TEST_CASE("stdio: input that was written and closed before the transport started is read",
          "[server][stdio]") {
  const std::vector<std::string> expected = {"line:a", "line:b", "eof"};
  for (const Input input : {Input::socket, Input::pipe}) {
    CAPTURE(static_cast<int>(input));
    Harness h(input);  // its executor already running when the readable descriptor is registered
    h.source.write("a\nb");
    h.source.close_writer();
    StdioTransport& transport = h.open();
    h.executor.run_on([] {});
    transport.start(h.recorder.handlers());
    CHECK(h.recorder.wait_for(expected.size()) == expected);
  }
}

TEST_CASE("stdio: a line over the cap is dropped whole, and the next one still comes",
          "[server][stdio]") {
  const std::string text = std::string(100, 'x') + "\n" + "ok\n";
  const std::vector<std::string> expected = {"oversize:64", "line:ok", "eof"};
  for (const Input input : {Input::socket, Input::pipe, Input::file}) {
    CAPTURE(static_cast<int>(input));
    Harness h(input, text);
    h.open(64).start(h.recorder.handlers());
    if (input != Input::file) {
      h.source.write(text);
      h.source.close_writer();
    }
    CHECK(h.recorder.wait_for(expected.size()) == expected);
  }
}

// Each line is written only once the one before has been handled, so each comes in a read of its
// own: the transport must wait again after every read, and a wait must notice each new line.
TEST_CASE("stdio: a thousand lines, each written after the last was handled, all arrive",
          "[server][stdio]") {
  for (const Input input : {Input::socket, Input::pipe}) {
    CAPTURE(static_cast<int>(input));
    Harness h(input);
    h.open().start(h.recorder.handlers());
    std::size_t handled = 0;
    for (int i = 0; i < 1000; ++i) {
      h.source.write(std::to_string(i) + "\n");
      const auto events = h.recorder.wait_for(++handled);
      REQUIRE(events.size() == handled);
      REQUIRE(events.back() == "line:" + std::to_string(i));
    }
  }
}

TEST_CASE("stdio: stop() from a handler ends reading and leaves the descriptor open",
          "[server][stdio]") {
  for (const Input input : {Input::socket, Input::pipe}) {
    CAPTURE(static_cast<int>(input));
    Harness h(input);
    StdioTransport& transport = h.open();
    StdioHandlers handlers = h.recorder.handlers();
    handlers.on_line = [&](std::string line) {
      h.recorder.add("line:" + line);
      transport.stop();
    };
    transport.start(std::move(handlers));
    h.source.write("first\nsecond\n");
    CHECK(h.recorder.wait_for(1) == std::vector<std::string>{"line:first"});
    h.executor.run_on([] {});  // every handler queued so far has run
    CHECK(h.recorder.wait_for(1) == std::vector<std::string>{"line:first"});
    // What comes now stays in the descriptor, for its owner to read.
    h.source.write("third\n");
    char buffer[16];
    CHECK(::read(h.source.read_fd, buffer, sizeof buffer) == 6);
    CHECK(std::string_view(buffer, 6) == "third\n");
    CHECK(::fcntl(h.source.read_fd, F_GETFD) != -1);
  }
}

TEST_CASE("stdio: a line is written whole to a non-blocking stdout that fills up",
          "[server][stdio]") {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  REQUIRE(::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK) == 0);
  Harness h(Input::socket);
  StdioTransport& transport = h.open(1024, fds[0]);
  const std::string line(4 * 1024 * 1024, 'y');  // far more than the socket buffers hold
  std::string received;
  std::thread reader([&] {
    char buffer[64 * 1024];
    while (received.size() < line.size() + 1) {
      const ssize_t n = ::read(fds[1], buffer, sizeof buffer);
      if (n <= 0) break;
      received.append(buffer, static_cast<std::size_t>(n));
    }
  });
  CHECK(transport.write_line(line));
  reader.join();
  CHECK(received == line + "\n");
  h.finish();
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST_CASE("stdio: a peer that stops reading never blocks the writer, and gets whole lines in order",
          "[server][stdio][adversarial]") {
  // With --http --stdio the writer is the I/O thread every HTTP client shares.
  for (const bool socket : {false, true}) {
    CAPTURE(socket);
    int out[2];
    if (socket) {
      REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out) == 0);
    } else {
      REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    }
    Source in;
    open_source(in, Input::pipe);
    boost::asio::io_context io;
    constexpr std::size_t kQueue = 256 * 1024;
    std::optional<StdioTransport> transport;
    transport.emplace(io.get_executor(), in.read_fd, out[1], 1024, kQueue);

    std::vector<std::string> lines;
    for (int i = 0; i < 2000; ++i) lines.push_back(std::to_string(i) + std::string(10'000, 'z'));
    std::size_t accepted = 0;
    auto writing = std::async(std::launch::async, [&] {
      for (const auto& line : lines) {
        if (!transport->write_line(line)) return;
        ++accepted;
      }
    });
    const bool returned = writing.wait_for(10s) == std::future_status::ready;
    if (!returned) ::close(out[0]);  // the old transport blocks; EPIPE lets the test end
    REQUIRE(returned);
    // 20 MB offered: what the descriptor holds and the queue's bound, then refusals.
    CHECK(accepted >= kQueue / 10'000);
    CHECK(accepted < lines.size());
    CHECK_FALSE(transport->write_line("{}"));  // refused from then on, not interleaved

    std::string received;
    std::thread reader([&] {
      char buffer[64 * 1024];
      for (;;) {
        const ssize_t n = ::read(out[0], buffer, sizeof buffer);
        if (n <= 0) break;
        received.append(buffer, static_cast<std::size_t>(n));
      }
    });
    transport.reset();  // hands the queue over, then lets go of stdout
    ::close(out[1]);
    reader.join();
    std::string expected;
    for (std::size_t i = 0; i < accepted; ++i) expected += lines[i] + "\n";
    CHECK(received.size() == expected.size());
    CHECK(received == expected);
    ::close(out[0]);
  }
}
