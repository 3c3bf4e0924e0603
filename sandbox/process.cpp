#include "sandbox/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>

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

struct SandboxProcess::Inbox {
  Inbox() : event_fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Inbox() {
    if (event_fd >= 0) ::close(event_fd);
  }
  void wake() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t ignored = ::write(event_fd, &one, sizeof one);
  }
  void post(channel::FetchReply reply) {
    {
      std::lock_guard lock(mutex);
      replies.push_back(std::move(reply));
    }
    wake();
  }
  void request_cancel() {
    {
      std::lock_guard lock(mutex);
      cancel = true;
    }
    wake();
  }

  int event_fd;
  std::mutex mutex;
  std::deque<channel::FetchReply> replies;  // under mutex
  bool cancel = false;                      // under mutex
};

SandboxProcess::SandboxProcess(pid_t pid, int fd)
    : pid_(pid), fd_(fd), inbox_(std::make_shared<Inbox>()) {}

SandboxProcess::~SandboxProcess() {
  kill_and_reap();
  if (fd_ >= 0) ::close(fd_);
}

int SandboxProcess::kill_and_reap() {
  int status = 0;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  return status;
}

std::variant<std::unique_ptr<SandboxProcess>, std::string> SandboxProcess::start(
    const ProcessOptions& options) {
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
  std::unique_ptr<SandboxProcess> process(new SandboxProcess(pid, fd));

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

Outcome SandboxProcess::fail(ErrorKind kind, std::string message) {
  usable_ = false;
  kill_and_reap();
  return Outcome::failure(kind, std::move(message));
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

Outcome SandboxProcess::run(const Call& call, const config::Limits& limits, const Fetcher* fetch) {
  if (!usable_) return Outcome::failure(ErrorKind::runtime, "the sandbox process is not usable");
  ++calls_;
  const std::uint64_t id = ++last_call_id_;
  {
    std::lock_guard lock(inbox_->mutex);
    inbox_->replies.clear();
    inbox_->cancel = false;
  }
  auto inbox = inbox_;
  CancelRegistration registration(call.cancel.get(), [inbox] { inbox->request_cancel(); });

  auto deadline = Clock::now() + std::chrono::milliseconds(limits.wall_ms) + kGrace;
  if (!write_until(fd_, channel::encode_frame(channel::Run{id, call.tool, call.code, limits}),
                   deadline)) {
    return died();
  }
  channel::FrameReader reader(max_frame_from_process(limits));
  bool cancel_sent = false;
  auto malformed = [this](const std::string& what) {
    return fail(ErrorKind::runtime,
                "the sandbox process sent " + what + "; it was killed and replaced");
  };
  for (;;) {
    for (;;) {
      auto next = reader.next();
      if (auto* error = std::get_if<channel::DecodeError>(&next)) return malformed(error->message);
      auto& body = std::get<std::optional<std::string>>(next);
      if (!body) break;
      auto decoded = channel::decode(*body);
      if (auto* error = std::get_if<channel::DecodeError>(&decoded)) {
        return malformed(error->message);
      }
      auto& message = std::get<channel::Message>(decoded);
      if (auto* result = std::get_if<channel::Result>(&message); result && result->id == id) {
        return std::move(result->outcome);
      }
      auto* request = std::get_if<channel::FetchRequest>(&message);
      if (!request || request->call_id != id || fetch == nullptr || cancel_sent) {
        if (request && cancel_sent) continue;  // a fetch racing the Cancel: it will not be served
        return malformed("a message that does not belong to the call");
      }
      (*fetch)(std::move(request->request),
               [inbox, id, fetch_id = request->fetch_id](gateway::FetchResult result) {
                 inbox->post(channel::FetchReply{id, fetch_id, std::move(result)});
               });
    }

    pollfd waits[2] = {{fd_, POLLIN, 0}, {inbox_->event_fd, POLLIN, 0}};
    const int polled = ::poll(waits, 2, remaining_ms(deadline));
    if (polled < 0 && errno != EINTR) return fail(ErrorKind::runtime, "poll: " + errno_text(errno));
    if (polled == 0) {
      if (cancel_sent) return fail(ErrorKind::runtime, "cancelled");
      return fail(ErrorKind::timeout, "wall limit " + std::to_string(limits.wall_ms) +
                                          " ms exceeded; the sandbox process did not stop and "
                                          "was killed and replaced");
    }
    if (waits[1].revents != 0) {
      std::uint64_t count;
      [[maybe_unused]] const ssize_t ignored = ::read(inbox_->event_fd, &count, sizeof count);
      std::deque<channel::FetchReply> replies;
      bool cancel;
      {
        std::lock_guard lock(inbox_->mutex);
        replies.swap(inbox_->replies);
        cancel = inbox_->cancel;
      }
      for (auto& reply : replies) {
        if (reply.call_id != id) continue;
        if (!write_until(fd_, channel::encode_frame(reply), deadline)) return died();
      }
      if (cancel && !cancel_sent) {
        cancel_sent = true;
        // The frame reaches code that waits; the signal code that runs (child.h).
        if (!write_until(fd_, channel::encode_frame(channel::Cancel{id}), deadline)) {
          return died();
        }
        sigval value{};
        value.sival_int = static_cast<int>(static_cast<std::uint32_t>(id));
        ::sigqueue(pid_, cancel_signal(), value);
        deadline = std::min(deadline, Clock::now() + kCancelGrace);
      }
    }
    if (waits[0].revents != 0 && !drain(fd_, reader)) {
      // Frames that arrived with the end of the stream still count (a Result, then exit).
      auto next = reader.next();
      if (auto* body = std::get_if<std::optional<std::string>>(&next); body && *body) {
        auto decoded = channel::decode(**body);
        if (auto* message = std::get_if<channel::Message>(&decoded)) {
          if (auto* result = std::get_if<channel::Result>(message); result && result->id == id) {
            Outcome outcome = std::move(result->outcome);
            died();
            return outcome;
          }
        }
      }
      return died();
    }
  }
}

}  // namespace codemode::sandbox
