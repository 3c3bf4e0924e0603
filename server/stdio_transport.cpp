#include "server/stdio_transport.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

namespace codemode::server {

StdioTransport::StdioTransport(boost::asio::any_io_executor executor, int in_fd, int out_fd,
                               std::size_t max_line_bytes)
    : executor_(std::move(executor)),
      in_fd_(in_fd),
      out_fd_(out_fd),
      max_line_bytes_(max_line_bytes) {
  if (::pipe(wake_pipe_) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
}

StdioTransport::~StdioTransport() {
  stop();
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void StdioTransport::start(StdioHandlers handlers) {
  handlers_ = std::move(handlers);
  reader_ = std::thread([this] { read_loop(); });
}

void StdioTransport::stop() {
  if (!reader_.joinable()) return;
  const char byte = 0;
  [[maybe_unused]] auto ignored = ::write(wake_pipe_[1], &byte, 1);
  reader_.join();
}

void StdioTransport::read_loop() {
  std::string line;
  bool dropping = false;  // inside an oversize line: discard up to the next newline
  char buffer[64 * 1024];
  auto post = [this](auto fn) { boost::asio::post(executor_, std::move(fn)); };

  for (;;) {
    pollfd fds[2] = {{in_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("poll on stdin failed: {}", std::strerror(errno));
      break;
    }
    if (fds[1].revents != 0) return;  // stop(): no EOF event, the owner is shutting down
    const ssize_t n = ::read(in_fd_, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) spdlog::error("reading stdin failed: {}", std::strerror(errno));
    if (n <= 0) break;

    std::string_view chunk(buffer, static_cast<std::size_t>(n));
    while (!chunk.empty()) {
      const auto newline = chunk.find('\n');
      const auto piece = chunk.substr(0, newline);
      if (!dropping) {
        if (line.size() + piece.size() > max_line_bytes_) {
          dropping = true;
          line.clear();
          line.shrink_to_fit();
          post([this] { handlers_.on_oversize(max_line_bytes_); });
        } else {
          line.append(piece);
        }
      }
      if (newline == std::string_view::npos) break;
      chunk.remove_prefix(newline + 1);
      if (!dropping) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty())
          post([this, l = std::move(line)]() mutable { handlers_.on_line(std::move(l)); });
        line = std::string();
      }
      dropping = false;
    }
  }
  // A last line without a newline still counts: a client may close stdin right after it.
  if (!dropping && !line.empty()) {
    post([this, l = std::move(line)]() mutable { handlers_.on_line(std::move(l)); });
  }
  post([this] { handlers_.on_eof(); });
}

bool StdioTransport::write_line(std::string_view line) {
  std::lock_guard lock(write_mutex_);
  std::string out;
  out.reserve(line.size() + 1);
  out.append(line).push_back('\n');
  std::string_view rest(out);
  while (!rest.empty()) {
    const ssize_t n = ::write(out_fd_, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    rest.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace codemode::server
