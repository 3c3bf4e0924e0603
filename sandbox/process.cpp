#include "sandbox/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <optional>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "sandbox/channel.h"
#include "sandbox/child.h"
#include "sandbox/isolate_runner.h"

namespace codemode::sandbox {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long past wall_ms a process may take to report on its own, and to honour a Cancel.
constexpr auto kGrace = 1000ms;
constexpr auto kCancelGrace = 1000ms;

std::string errno_text(int error) { return std::strerror(error); }

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<long long>(left.count(), 0, 1 << 30));
}

// Writes all of `bytes` to a non-blocking socket by `deadline`.
bool write_until(int fd, std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(sent));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    pollfd wait{fd, POLLOUT, 0};
    const int ready = ::poll(&wait, 1, remaining_ms(deadline));
    if (ready == 0 || (ready < 0 && errno != EINTR)) return false;
  }
  return true;
}

// Moves what the socket holds into `reader`. false: end of stream or a socket error.
bool drain(int fd, channel::FrameReader& reader) {
  char buffer[65536];
  for (;;) {
    const ssize_t got = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got > 0) {
      reader.append(std::string_view(buffer, static_cast<std::size_t>(got)));
      continue;
    }
    if (got == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

// Result frames hold the call's whole result, which the heap cap bounds.
std::size_t max_frame_from_process(const config::Limits& limits) {
  const std::size_t bytes = (std::size_t{limits.heap_mb} * 2 + 16) << 20;
  return std::min<std::size_t>(bytes, 0xFFFFFFFFu);
}

std::string signal_name(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(signal);
}

}  // namespace

// The channel, on the executor: the socket (owning the descriptor), the call's deadline, the
// frames waiting to be written, and the bytes of the frame being read.
struct SandboxProcess::Channel {
  Channel(int fd, boost::asio::any_io_executor executor)
      : executor(executor), socket(executor, fd), deadline(executor) {}
  boost::asio::any_io_executor executor;
  boost::asio::posix::stream_descriptor socket;
  boost::asio::steady_timer deadline;
  std::deque<std::string> writes;  // the front one is being written
  bool reading = false;
  std::array<char, 65536> buffer;
};

struct SandboxProcess::CurrentCall {
  CurrentCall(std::uint64_t id, Completion done, Fetcher fetch, const config::Limits& limits)
      : id(id),
        done(std::move(done)),
        fetch(std::move(fetch)),
        limits(limits),
        reader(max_frame_from_process(limits)) {}
  std::uint64_t id;
  Completion done;
  Fetcher fetch;
  config::Limits limits;
  channel::FrameReader reader;
  std::optional<CancelRegistration> cancel;  // reset before the call ends
  bool cancel_sent = false;
  Clock::time_point deadline;
};

SandboxProcess::SandboxProcess(pid_t pid, int fd, boost::asio::any_io_executor executor)
    : pid_(pid), channel_(std::make_unique<Channel>(fd, std::move(executor))) {}

SandboxProcess::~SandboxProcess() { kill_and_reap(); }

int kill_and_reap(pid_t pid) {
  int status = 0;
  if (pid <= 0) return status;
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

int SandboxProcess::kill_and_reap() { return sandbox::kill_and_reap(std::exchange(pid_, -1)); }

std::variant<std::shared_ptr<SandboxProcess>, std::string> SandboxProcess::start(
    const ProcessOptions& options, boost::asio::any_io_executor executor) {
  if (options.command.empty()) return std::string("no sandbox program configured");
  int sockets[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) {
    return "socketpair: " + errno_text(errno);
  }
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (devnull < 0) {
    ::close(sockets[0]);
    ::close(sockets[1]);
    return "/dev/null: " + errno_text(errno);
  }
  // Everything the child needs is prepared before fork(): after it, only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  const bool keep_stderr = options.child_stderr == ChildStderr::inherit;
  const int image_fd = options.image_fd;
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    ::close(sockets[0]);
    ::close(sockets[1]);
    ::close(devnull);
    return "fork: " + errno_text(error);
  }
  if (pid == 0) {
    // Out of the way of 0..3 first, then into place; F_DUPFD copies have no close-on-exec.
    const int channel_copy = ::fcntl(sockets[1], F_DUPFD, 10);
    const int null_copy = ::fcntl(devnull, F_DUPFD, 10);
    const int image_copy = image_fd >= 0 ? ::fcntl(image_fd, F_DUPFD, 10) : -1;
    if (channel_copy < 0 || null_copy < 0 || ::dup2(null_copy, 0) < 0 || ::dup2(null_copy, 1) < 0 ||
        (!keep_stderr && ::dup2(null_copy, 2) < 0) || ::dup2(channel_copy, kChannelFd) < 0 ||
        (image_fd >= 0 && (image_copy < 0 || ::dup2(image_copy, kImageFd) < 0))) {
      ::_exit(126);
    }
    ::syscall(SYS_close_range, image_fd >= 0 ? kImageFd + 1 : kChannelFd + 1, ~0U, 0);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);  // the daemon died before the line above
    ::execve(argv[0], argv.data(), envp);
    ::_exit(127);
  }
  ::close(sockets[1]);
  ::close(devnull);
  const int fd = sockets[0];
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::shared_ptr<SandboxProcess> process(new SandboxProcess(pid, fd, std::move(executor)));

  const auto deadline = Clock::now() + options.start_timeout;
  if (!write_until(fd, *options.init_frame, deadline)) {
    return "the sandbox process did not take its start message: " + process->died().error_message;
  }
  channel::FrameReader reader(1 << 20);
  for (;;) {
    auto next = reader.next();
    if (auto* error = std::get_if<channel::DecodeError>(&next)) {
      return "the sandbox process sent " + error->message;
    }
    if (auto& body = std::get<std::optional<std::string>>(next)) {
      auto decoded = channel::decode(*body);
      auto* message = std::get_if<channel::Message>(&decoded);
      auto* ready = message ? std::get_if<channel::Ready>(message) : nullptr;
      if (!ready) return std::string("the sandbox process sent something other than Ready");
      process->layers_ = std::move(ready->layers);
      return process;
    }
    pollfd wait{fd, POLLIN, 0};
    const int polled = ::poll(&wait, 1, remaining_ms(deadline));
    if (polled == 0) {
      return "the sandbox process was not ready within " +
             std::to_string(options.start_timeout.count()) + " ms";
    }
    if (polled < 0 && errno != EINTR) return "poll: " + errno_text(errno);
    if (!drain(fd, reader)) {
      return "the sandbox process ended while starting: " + process->died().error_message;
    }
  }
}

Outcome SandboxProcess::died() {
  usable_ = false;
  // The channel closed, so the process is gone or going; SIGKILL settles which.
  const int status = kill_and_reap();
  constexpr std::string_view kReplaced = "; it was replaced";
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == kExitOutOfMemory) {
      return Outcome::failure(ErrorKind::memory,
                              "the sandbox process ran out of memory" + std::string(kReplaced));
    }
    return Outcome::failure(ErrorKind::runtime, "the sandbox process exited with status " +
                                                    std::to_string(code) + std::string(kReplaced));
  }
  const int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (signal == SIGXCPU) {
    return Outcome::failure(ErrorKind::timeout, "the sandbox process used up its CPU allowance" +
                                                    std::string(kReplaced));
  }
  if (signal == SIGSYS) {
    return Outcome::failure(
        ErrorKind::runtime,
        "the sandbox process made a forbidden system call and was killed" + std::string(kReplaced));
  }
  return Outcome::failure(ErrorKind::runtime, "the sandbox process was killed by " +
                                                  signal_name(signal) + " during the call" +
                                                  std::string(kReplaced));
}

void SandboxProcess::watch() {
  if (channel_->reading) return;
  channel_->reading = true;
  read_more();
}

void SandboxProcess::run(const Call& call, const config::Limits& limits, Fetcher fetch,
                         Completion done) {
  if (!usable_ || current_) {
    boost::asio::post(channel_->executor, [done = std::move(done)] {
      done(Outcome::failure(ErrorKind::runtime, "the sandbox process is not usable"));
    });
    return;
  }
  ++calls_;
  const std::uint64_t id = ++last_call_id_;
  current_ = std::make_unique<CurrentCall>(id, std::move(done), std::move(fetch), limits);
  if (call.cancel) {
    // Runs on the canceller's thread, under the token's lock: only a post may leave it.
    current_->cancel.emplace(call.cancel.get(),
                             [weak = weak_from_this(), executor = channel_->executor, id] {
                               boost::asio::post(executor, [weak, id] {
                                 if (auto self = weak.lock()) self->cancel_current(id);
                               });
                             });
  }
  arm_deadline(Clock::now() + std::chrono::milliseconds(limits.wall_ms) + kGrace);
  watch();
  send(channel::encode_frame(channel::Run{id, call.tool, call.code, limits}));
}

void SandboxProcess::kill(ErrorKind kind, std::string message) {
  if (current_) {
    fail(kind, std::move(message));
  } else {
    usable_ = false;
    kill_and_reap();
  }
}

pid_t SandboxProcess::release() {
  usable_ = false;
  boost::system::error_code ignored;
  channel_->socket.close(ignored);  // the pending read ends with operation_aborted
  channel_->deadline.cancel();
  return std::exchange(pid_, -1);
}

void SandboxProcess::read_more() {
  channel_->socket.async_read_some(
      boost::asio::buffer(channel_->buffer),
      [self = shared_from_this()](boost::system::error_code error, std::size_t got) {
        if (error == boost::asio::error::operation_aborted || self->pid_ < 0) return;
        if (error || got == 0) return self->on_closed();
        if (!self->current_) {
          // Bytes between calls: nothing a process may send; it is broken or compromised.
          self->usable_ = false;
          self->kill_and_reap();
          return;
        }
        self->current_->reader.append(std::string_view(self->channel_->buffer.data(), got));
        self->on_frames();
        if (self->usable_) self->read_more();
      });
}

void SandboxProcess::on_frames() {
  auto malformed = [this](const std::string& what) {
    fail(ErrorKind::runtime, "the sandbox process sent " + what + "; it was killed and replaced");
  };
  while (current_) {
    auto next = current_->reader.next();
    if (auto* error = std::get_if<channel::DecodeError>(&next)) return malformed(error->message);
    auto& body = std::get<std::optional<std::string>>(next);
    if (!body) return;
    auto decoded = channel::decode(*body);
    if (auto* error = std::get_if<channel::DecodeError>(&decoded)) return malformed(error->message);
    auto& message = std::get<channel::Message>(decoded);
    if (auto* result = std::get_if<channel::Result>(&message);
        result && result->id == current_->id) {
      // A process sends nothing after its Result until the next Run.
      if (current_->reader.buffered() != 0) return malformed("bytes after its result");
      return finish(std::move(result->outcome));
    }
    auto* request = std::get_if<channel::FetchRequest>(&message);
    if (request && request->call_id == current_->id && current_->cancel_sent) {
      continue;  // a fetch racing the Cancel: it will not be served
    }
    if (!request || request->call_id != current_->id || !current_->fetch) {
      return malformed("a message that does not belong to the call");
    }
    current_->fetch(std::move(request->request), [weak = weak_from_this(),
                                                  executor = channel_->executor, id = current_->id,
                                                  fetch_id = request->fetch_id](
                                                     gateway::FetchResult result) {
      // The gateway completes on its I/O thread: this one in the daemon.
      boost::asio::dispatch(executor, [weak, id, fetch_id, result = std::move(result)]() mutable {
        auto self = weak.lock();
        if (!self || !self->current_ || self->current_->id != id) return;
        self->send(channel::encode_frame(channel::FetchReply{id, fetch_id, std::move(result)}));
      });
    });
  }
}

void SandboxProcess::on_closed() {
  if (!current_) {
    usable_ = false;
    kill_and_reap();
    return;
  }
  // Frames that arrived with the end of the stream still count (a Result, then exit).
  auto next = current_->reader.next();
  if (auto* body = std::get_if<std::optional<std::string>>(&next); body && *body) {
    auto decoded = channel::decode(**body);
    if (auto* message = std::get_if<channel::Message>(&decoded)) {
      if (auto* result = std::get_if<channel::Result>(message);
          result && result->id == current_->id) {
        Outcome outcome = std::move(result->outcome);
        died();
        return finish(std::move(outcome));
      }
    }
  }
  finish(died());
}

void SandboxProcess::send(std::string frame) {
  Channel& channel = *channel_;
  if (channel.writes.empty()) {
    // Most frames fit the socket buffer at once: no queue, no completion handler.
    const ssize_t sent = ::send(channel.socket.native_handle(), frame.data(), frame.size(),
                                MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent == static_cast<ssize_t>(frame.size())) return;
    if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return;  // the process is gone; the read side sees the end of the stream
    }
    frame.erase(0, sent > 0 ? static_cast<std::size_t>(sent) : 0);
  }
  channel.writes.push_back(std::move(frame));
  if (channel.writes.size() == 1) write_front();  // else a write is in flight; this one follows
}

void SandboxProcess::write_front() {
  boost::asio::async_write(
      channel_->socket, boost::asio::buffer(channel_->writes.front()),
      [self = shared_from_this()](boost::system::error_code error, std::size_t) {
        if (error) {
          self->channel_->writes.clear();  // the reader sees the end
          return;
        }
        self->channel_->writes.pop_front();
        if (!self->channel_->writes.empty()) self->write_front();
      });
}

void SandboxProcess::cancel_current(std::uint64_t id) {
  if (!current_ || current_->id != id || current_->cancel_sent) return;
  current_->cancel_sent = true;
  // The frame reaches code that waits; the signal code that runs (child.h).
  send(channel::encode_frame(channel::Cancel{id}));
  sigval value{};
  value.sival_int = static_cast<int>(static_cast<std::uint32_t>(id));
  ::sigqueue(pid_, cancel_signal(), value);
  arm_deadline(std::min(current_->deadline, Clock::now() + kCancelGrace));
}

void SandboxProcess::arm_deadline(Clock::time_point deadline) {
  current_->deadline = deadline;
  channel_->deadline.expires_at(deadline);
  channel_->deadline.async_wait([weak = weak_from_this(),
                                 id = current_->id](boost::system::error_code error) {
    auto self = weak.lock();
    if (error || !self || !self->current_ || self->current_->id != id) return;
    if (self->current_->deadline > Clock::now()) return;  // re-armed for a later time
    if (self->current_->cancel_sent) return self->fail(ErrorKind::runtime, "cancelled");
    self->fail(ErrorKind::timeout, "wall limit " + std::to_string(self->current_->limits.wall_ms) +
                                       " ms exceeded; the sandbox process did not stop and "
                                       "was killed and replaced");
  });
}

void SandboxProcess::finish(Outcome outcome) {
  std::unique_ptr<CurrentCall> call = std::move(current_);
  call->cancel.reset();  // no cancel reaches a call that has ended
  channel_->deadline.cancel();
  call->done(std::move(outcome));
}

void SandboxProcess::fail(ErrorKind kind, std::string message) {
  usable_ = false;
  kill_and_reap();
  if (current_) finish(Outcome::failure(kind, std::move(message)));
}

}  // namespace codemode::sandbox
