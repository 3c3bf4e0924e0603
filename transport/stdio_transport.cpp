#include "transport/stdio_transport.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <system_error>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

namespace codemode::server {

namespace {

constexpr std::size_t kReadBytes = std::size_t{64} * 1024;

// How long the writer waits between looks at stdout, and how long, at the end, it keeps
// handing the queue over to a peer that takes nothing.
constexpr auto kWriterPoll = std::chrono::milliseconds(100);
constexpr auto kFlushPatience = std::chrono::seconds(5);

// Pipes and sockets are what epoll watches and what no shell shares with us as a terminal.
bool reactor_can_watch(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

bool is_socket(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

StdioTransport::StdioTransport(boost::asio::any_io_executor executor, int in_fd, int out_fd,
                               std::size_t max_line_bytes, std::size_t max_queued_bytes)
    : executor_(std::move(executor)),
      in_fd_(in_fd),
      out_fd_(out_fd),
      max_line_bytes_(max_line_bytes),
      max_queued_bytes_(max_queued_bytes),
      out_is_socket_(is_socket(out_fd)) {
  if (reactor_can_watch(in_fd_)) {
    boost::system::error_code ec;
    input_.emplace(executor_);
    input_->assign(in_fd_, ec);
    if (ec) {
      spdlog::debug("stdin: the reactor cannot watch it ({}); a thread reads it", ec.message());
      input_.reset();
    }
  }
  if (!input_ && ::pipe(wake_pipe_) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  writer_ = std::thread([this] { write_loop(); });
}

StdioTransport::~StdioTransport() {
  stop();
  {
    std::lock_guard lock(write_mutex_);
    stop_writer_ = true;
  }
  write_wanted_.notify_one();
  writer_.join();
  if (wake_pipe_[0] >= 0) ::close(wake_pipe_[0]);
  if (wake_pipe_[1] >= 0) ::close(wake_pipe_[1]);
}

void StdioTransport::start(StdioHandlers handlers) {
  handlers_ = std::move(handlers);
  if (input_) {
    // Asio puts a descriptor it waits on in non-blocking mode, once, at the first wait. That
    // flag belongs to the open file, which the client (or whoever started us) may share, so it
    // is put back at once; reads follow a poll() and need no flag, and Asio sets it only once.
    const int flags = ::fcntl(in_fd_, F_GETFL);
    wait_for_input();
    if (flags >= 0 && ::fcntl(in_fd_, F_GETFL) != flags) ::fcntl(in_fd_, F_SETFL, flags);
  } else {
    reader_ = std::thread([this] { read_loop(); });
  }
}

void StdioTransport::stop() {
  if (input_) {
    stopped_ = true;
    if (input_->is_open()) {
      boost::system::error_code ignored;
      input_->cancel(ignored);
      input_->release();  // stdin stays open: the descriptor was lent, not given
    }
    return;
  }
  if (!reader_.joinable()) return;
  const char byte = 0;
  [[maybe_unused]] auto ignored = ::write(wake_pipe_[1], &byte, 1);
  reader_.join();
}

void StdioTransport::wait_for_input() {
  input_->async_wait(boost::asio::posix::descriptor_base::wait_read,
                     [this](const boost::system::error_code& ec) {
                       if (stopped_ || ec == boost::asio::error::operation_aborted) return;
                       if (ec) {
                         spdlog::error("waiting for stdin failed: {}", ec.message());
                         end(Delivery::inline_call);
                         return;
                       }
                       drain();
                       // Each wait re-arms the descriptor in epoll (EPOLL_CTL_MOD), which reports
                       // it at once if it is readable: bytes that came after the last read are
                       // not missed although the reactor is edge-triggered.
                       if (!stopped_) wait_for_input();
                     });
}

void StdioTransport::drain() {
  Read read = Read::more;
  while (!stopped_ && read == Read::more) read = read_available(Delivery::inline_call);
  if (!stopped_ && read == Read::ended) end(Delivery::inline_call);
}

void StdioTransport::read_loop() {
  for (;;) {
    pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll on stdin failed: {}", std::generic_category().message(errno));
      break;
    }
    if (fds[1].revents != 0) return;  // stop(): no EOF event, the owner is shutting down
    if (read_available(Delivery::post) == Read::ended) break;
  }
  end(Delivery::post);
}

StdioTransport::Read StdioTransport::read_available(Delivery delivery) {
  // A read only after poll() finds the descriptor readable: it then returns at once without
  // O_NONBLOCK, a flag that lives on the open file and so would change it for whoever shares it.
  pollfd fd = {in_fd_, POLLIN, 0};
  const int ready = ::poll(&fd, 1, 0);
  if (ready < 0 && errno == EINTR) return Read::more;
  if (ready < 0) {
    spdlog::error("poll on stdin failed: {}", std::generic_category().message(errno));
    return Read::ended;
  }
  if (ready == 0) return Read::drained;
  char buffer[kReadBytes];
  const ssize_t n = ::read(in_fd_, buffer, sizeof buffer);
  if (n < 0 && errno == EINTR) return Read::more;
  if (n < 0 && errno == EAGAIN) return Read::drained;
  if (n < 0) spdlog::error("reading stdin failed: {}", std::generic_category().message(errno));
  if (n <= 0) return Read::ended;
  consume(std::string_view(buffer, static_cast<std::size_t>(n)), delivery);
  return Read::more;
}

void StdioTransport::consume(std::string_view chunk, Delivery delivery) {
  while (!chunk.empty() && !stopped_) {  // a handler run inline may have stopped the transport
    const auto newline = chunk.find('\n');
    const auto piece = chunk.substr(0, newline);
    if (!dropping_) {
      if (line_.size() + piece.size() > max_line_bytes_) {
        dropping_ = true;
        line_.clear();
        line_.shrink_to_fit();
        deliver(delivery, [this] { handlers_.on_oversize(max_line_bytes_); });
      } else {
        line_.append(piece);
      }
    }
    if (newline == std::string_view::npos) break;
    chunk.remove_prefix(newline + 1);
    if (!dropping_) {
      if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      if (!line_.empty())
        deliver(delivery,
                [this, l = std::move(line_)]() mutable { handlers_.on_line(std::move(l)); });
      line_ = std::string();
    }
    dropping_ = false;
  }
}

void StdioTransport::end(Delivery delivery) {
  // A last line without a newline still counts: a client may close stdin right after it.
  if (!dropping_ && !line_.empty()) {
    deliver(delivery, [this, l = std::move(line_)]() mutable { handlers_.on_line(std::move(l)); });
  }
  line_ = std::string();
  if (input_) {
    if (stopped_) return;  // that line's handler stopped the transport: no EOF event
    stopped_ = true;       // nothing more is read: no wait follows
  }
  deliver(delivery, [this] { handlers_.on_eof(); });
}

void StdioTransport::deliver(Delivery delivery, std::function<void()> fn) {
  if (delivery == Delivery::inline_call) {
    fn();
  } else {
    boost::asio::post(executor_, std::move(fn));
  }
}

bool StdioTransport::write_line(std::string_view line) {
  std::lock_guard lock(write_mutex_);
  if (out_failed_) return false;
  std::string out;
  out.reserve(line.size() + 1);
  out.append(line).push_back('\n');
  std::string_view rest(out);
  const std::size_t queued = pending_.size() - pending_offset_;
  if (queued == 0) {
    switch (write_some_now(rest)) {
      case Write::done:
        return true;
      case Write::failed:
        out_failed_ = true;
        return false;
      case Write::would_block:
        break;
    }
  }
  // The first line to wait is always taken whole, however long: any answer can go out.
  if (queued > 0 && queued + rest.size() > max_queued_bytes_) {
    out_failed_ = true;
    spdlog::error(
        "stdout: the stdio client has left {} bytes of answers unread; it is treated as gone "
        "and no more answers are written to it",
        queued);
    return false;
  }
  pending_.append(rest);
  write_wanted_.notify_one();
  return true;
}

StdioTransport::Write StdioTransport::write_some_now(std::string_view& rest) {
  while (!rest.empty()) {
    // A pipe reports POLLOUT while it has a free page, and a socket while most of its buffer
    // is free: a piece of PIPE_BUF bytes then goes in without blocking, whatever the
    // descriptor's blocking mode (a flag of the open file, which the client may share).
    pollfd fd = {out_fd_, POLLOUT, 0};
    const int ready = ::poll(&fd, 1, 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || (fd.revents & POLLNVAL) != 0) return Write::failed;
    if (ready == 0) return Write::would_block;
    const std::size_t piece = std::min<std::size_t>(rest.size(), PIPE_BUF);
    const ssize_t n = out_is_socket_
                          ? ::send(out_fd_, rest.data(), piece, MSG_DONTWAIT | MSG_NOSIGNAL)
                          : ::write(out_fd_, rest.data(), piece);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Write::would_block;
    if (n <= 0) return Write::failed;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return Write::done;
}

void StdioTransport::write_loop() {
  std::unique_lock lock(write_mutex_);
  auto last_progress = std::chrono::steady_clock::now();
  for (;;) {
    const bool was_empty = pending_offset_ == pending_.size();
    write_wanted_.wait(lock, [&] { return stop_writer_ || pending_offset_ < pending_.size(); });
    if (pending_offset_ == pending_.size()) return;  // stopping, and everything is out
    if (was_empty) last_progress = std::chrono::steady_clock::now();  // the peer's clock starts
    lock.unlock();
    pollfd fd = {out_fd_, POLLOUT, 0};
    ::poll(&fd, 1, static_cast<int>(kWriterPoll.count()));
    lock.lock();
    std::string_view rest = std::string_view(pending_).substr(pending_offset_);
    const std::size_t before = rest.size();
    const Write write = write_some_now(rest);
    pending_offset_ += before - rest.size();
    const auto now = std::chrono::steady_clock::now();
    if (rest.size() < before) last_progress = now;
    const bool given_up = stop_writer_ && now - last_progress > kFlushPatience;
    if (write == Write::failed || given_up) {
      if (given_up) spdlog::warn("stdout: {} bytes of answers were never read", rest.size());
      out_failed_ = true;
      pending_offset_ = pending_.size();
    }
    if (pending_offset_ == pending_.size()) {
      pending_.clear();
      pending_offset_ = 0;
    } else if (pending_offset_ > pending_.size() / 2) {
      pending_.erase(0, pending_offset_);
      pending_offset_ = 0;
    }
  }
}

}  // namespace codemode::server
