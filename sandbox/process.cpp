#include "sandbox/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
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
#include <map>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include "channel/frames.h"
#include "channel/process_contract.h"

namespace codemode::sandbox {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long past wall_ms a process may take to report on its own, and to honour a Cancel.
constexpr auto kGrace = 1000ms;
constexpr auto kCancelGrace = 1000ms;

std::string errno_text(int error) { return std::generic_category().message(error); }

// Enters the sandbox process's namespaces in the forked child, before exec: new user, network (no
// interfaces), mount and IPC namespaces. A user namespace needs a single-threaded process, and
// the child is one until exec, while node has threads before the addon runs. Inside, the
// daemon's user is root (uid_map "0 <euid> 1"), so the exec keeps the capabilities the process
// needs in its namespaces to mount its empty root (isolate/lockdown.h) and nothing outside them.
// Without a user namespace the others need privileges (root in a container may have them).
// Everything is prepared before fork; enter() makes only async-signal-safe calls and returns the
// namespaces argument (channel/process_contract.h) for the process's command line.
class NamespaceEntry {
 public:
  NamespaceEntry()
      : uid_map_("0 " + std::to_string(::geteuid()) + " 1"),
        gid_map_("0 " + std::to_string(::getegid()) + " 1"),
        all_(channel::namespaces_argument({channel::Namespaces::Entered::all, 0})),
        without_user_(
            channel::namespaces_argument({channel::Namespaces::Entered::without_user, 0})),
        none_(channel::namespaces_argument({channel::Namespaces::Entered::none, 0})) {
    // Room for any errno in place of the 0.
    without_user_.append(4, '\0');
    none_.append(4, '\0');
  }

  // In the forked child only.
  char* enter() {
    constexpr int kOthers = CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC;
    if (::unshare(CLONE_NEWUSER | kOthers) == 0) {
      // A map that fails leaves the process unmapped: it then keeps no capability through exec,
      // and its empty root reports off.
      write_file("/proc/self/uid_map", uid_map_);
      write_file("/proc/self/setgroups", "deny");
      write_file("/proc/self/gid_map", gid_map_);
      return all_.data();
    }
    const int user_error = errno;
    if (::unshare(kOthers) == 0) return with_error(without_user_, user_error);
    return with_error(none_, user_error);
  }

 private:
  static void write_file(const char* path, std::string_view text) {
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return;
    (void)::write(fd, text.data(), text.size());
    ::close(fd);
  }
  // Replaces the trailing "0" with `error`'s digits.
  static char* with_error(std::string& argument, int error) {
    const std::size_t zero = std::strlen(argument.c_str()) - 1;
    char digits[8];
    int count = 0;
    do {
      digits[count++] = static_cast<char>('0' + error % 10);
      error /= 10;
    } while (error > 0 && count < 4);
    for (int i = 0; i < count; ++i)
      argument[zero + static_cast<std::size_t>(i)] = digits[count - 1 - i];
    argument[zero + static_cast<std::size_t>(count)] = '\0';
    return argument.data();
  }

  std::string uid_map_;
  std::string gid_map_;
  std::string all_;
  std::string without_user_;
  std::string none_;
};

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

// The channel, on the executor: the socket (owning the descriptor), the frames waiting to be
// written, and the bytes of the frames being read (all calls' frames share the stream).
struct SandboxProcess::Channel {
  Channel(int fd, boost::asio::any_io_executor executor)
      : executor(std::move(executor)), socket(this->executor, fd) {}
  boost::asio::any_io_executor executor;
  boost::asio::posix::stream_descriptor socket;
  std::deque<std::string> writes;  // the front one is being written
  bool reading = false;
  std::array<char, 65536> buffer;
  std::optional<channel::FrameReader> reader;  // sized by the first call's limits
};

struct SandboxProcess::RunningCall {
  RunningCall(std::uint64_t id, Completion done, channel::Fetcher fetch,
              const config::Limits& limits, const boost::asio::any_io_executor& executor)
      : id(id),
        done(std::move(done)),
        fetch(std::move(fetch)),
        limits(limits),
        deadline_timer(executor) {}
  std::uint64_t id;
  Completion done;
  channel::Fetcher fetch;
  config::Limits limits;
  std::optional<channel::CancelRegistration> cancel;  // reset before the call ends
  bool cancel_sent = false;
  Clock::time_point deadline;
  // Fetches waiting for a person (FetchDone::waiting): the wall clock stands still, and the
  // deadline's remaining time is kept until the last of them stops waiting.
  unsigned waiting = 0;
  Clock::duration remaining{};
  boost::asio::steady_timer deadline_timer;
  // Fetches not yet answered, by fetch id: what stops each when the code gives up on it
  // (AbortFetch) or the call ends first.
  std::map<std::uint64_t, std::shared_ptr<gateway::FetchAbort>> in_flight;
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
  // The last argument says which namespaces the child entered; its slot is filled in there.
  std::vector<char*> argv;
  argv.reserve(options.command.size() + 2);
  for (const auto& arg : options.command) argv.push_back(const_cast<char*>(arg.c_str()));
  const std::size_t namespaces_slot = argv.size();
  argv.push_back(nullptr);
  argv.push_back(nullptr);
  NamespaceEntry entry;
  std::vector<char*> envp;
  envp.reserve(options.environment.size() + 1);
  for (const auto& variable : options.environment) {
    envp.push_back(const_cast<char*>(variable.c_str()));
  }
  envp.push_back(nullptr);
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
        (!keep_stderr && ::dup2(null_copy, 2) < 0) ||
        ::dup2(channel_copy, channel::kChannelFd) < 0 ||
        (image_fd >= 0 && (image_copy < 0 || ::dup2(image_copy, channel::kImageFd) < 0))) {
      ::_exit(126);
    }
    ::syscall(SYS_close_range, image_fd >= 0 ? channel::kImageFd + 1 : channel::kChannelFd + 1, ~0U,
              0);
    sigset_t none;
    ::sigemptyset(&none);
    // NOLINTNEXTLINE(concurrency-mt-unsafe): a forked child has one thread until execve
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);  // the daemon died before the line above
    argv[namespaces_slot] = entry.enter();
    ::execve(argv[0], argv.data(), envp.data());
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

channel::Outcome SandboxProcess::died() {
  usable_ = false;
  // The channel closed, so the process is gone or going; SIGKILL settles which.
  const int status = kill_and_reap();
  constexpr std::string_view kReplaced = "; it was replaced";
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == channel::kExitOutOfMemory) {
      return channel::Outcome::failure(
          channel::ErrorKind::memory,
          "the sandbox process ran out of memory" + std::string(kReplaced));
    }
    if (code == channel::kExitRunaway) {
      return channel::Outcome::failure(
          channel::ErrorKind::runtime,
          "the sandbox process was ended: another call in it ran past its CPU "
          "limit where it could not be stopped" +
              std::string(kReplaced));
    }
    return channel::Outcome::failure(
        channel::ErrorKind::runtime,
        "the sandbox process exited with status " + std::to_string(code) + std::string(kReplaced));
  }
  const int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (signal == SIGXCPU) {
    return channel::Outcome::failure(
        channel::ErrorKind::timeout,
        "the sandbox process used up its CPU allowance" + std::string(kReplaced));
  }
  if (signal == SIGSYS) {
    return channel::Outcome::failure(
        channel::ErrorKind::runtime,
        "the sandbox process made a forbidden system call and was killed" + std::string(kReplaced));
  }
  return channel::Outcome::failure(channel::ErrorKind::runtime,
                                   "the sandbox process was killed by " + signal_name(signal) +
                                       " during the call" + std::string(kReplaced));
}

void SandboxProcess::watch() {
  if (channel_->reading) return;
  channel_->reading = true;
  read_more();
}

void SandboxProcess::run(const Call& call, const config::Limits& limits, channel::Fetcher fetch,
                         Completion done) {
  if (!usable()) {
    boost::asio::post(channel_->executor, [done = std::move(done)] {
      done(channel::Outcome::failure(channel::ErrorKind::runtime,
                                     "the sandbox process is not usable"));
    });
    return;
  }
  if (!channel_->reader) channel_->reader.emplace(max_frame_from_process(limits));
  ++calls_;
  const std::uint64_t id = ++last_call_id_;
  auto& running =
      *calls_running_
           .emplace(id, std::make_unique<RunningCall>(id, std::move(done), std::move(fetch), limits,
                                                      channel_->executor))
           .first->second;
  if (call.cancel) {
    // Runs on the canceller's thread, under the token's lock: only a post may leave it.
    running.cancel.emplace(call.cancel.get(),
                           [weak = weak_from_this(), executor = channel_->executor, id] {
                             boost::asio::post(executor, [weak, id] {
                               if (auto self = weak.lock()) self->cancel_call(id);
                             });
                           });
  }
  arm_deadline(running, Clock::now() + std::chrono::milliseconds(limits.wall_ms) + kGrace);
  watch();
  send(channel::encode_frame(channel::Run{id, call.tool, call.code, limits}));
}

void SandboxProcess::kill(channel::ErrorKind kind, std::string message) {
  if (!calls_running_.empty()) {
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
  return std::exchange(pid_, -1);
}

void SandboxProcess::read_more() {
  channel_->socket.async_read_some(
      boost::asio::buffer(channel_->buffer),
      [self = shared_from_this()](boost::system::error_code error, std::size_t got) {
        if (error == boost::asio::error::operation_aborted || self->pid_ < 0) return;
        if (error || got == 0) return self->on_closed();
        if (self->calls_running_.empty()) {
          // Bytes while no call runs: nothing a process may send; it is broken or compromised.
          self->usable_ = false;
          self->kill_and_reap();
          return;
        }
        self->channel_->reader->append(std::string_view(self->channel_->buffer.data(), got));
        self->on_frames();
        if (self->usable_) self->read_more();
      });
}

void SandboxProcess::on_frames() {
  auto malformed = [this](const std::string& what) {
    fail(channel::ErrorKind::runtime,
         "the sandbox process sent " + what + "; it was killed and replaced");
  };
  while (usable_ && !calls_running_.empty()) {
    auto next = channel_->reader->next();
    if (auto* error = std::get_if<channel::DecodeError>(&next)) return malformed(error->message);
    auto& body = std::get<std::optional<std::string>>(next);
    if (!body) return;
    auto decoded = channel::decode(*body);
    if (auto* error = std::get_if<channel::DecodeError>(&decoded)) return malformed(error->message);
    auto& message = std::get<channel::Message>(decoded);
    if (auto* result = std::get_if<channel::Result>(&message)) {
      if (!calls_running_.contains(result->id)) {
        return malformed("a result for a call it does not run");
      }
      if (result->last) ending_ = true;  // no call goes to it any more; its end is still read
      finish(result->id, std::move(result->outcome));
      continue;
    }
    if (auto* abort = std::get_if<channel::AbortFetch>(&message)) {
      const auto call = calls_running_.find(abort->call_id);
      if (call == calls_running_.end()) {
        return malformed("an abort for a call it does not run");
      }
      // An unknown fetch was answered already (the frames crossed), or never served (a Cancel).
      auto node = call->second->in_flight.extract(abort->fetch_id);
      if (!node.empty()) node.mapped()->abort(gateway::AbortCause::signal);
      continue;
    }
    auto* request = std::get_if<channel::FetchRequest>(&message);
    const auto call = request ? calls_running_.find(request->call_id) : calls_running_.end();
    if (call != calls_running_.end() && call->second->cancel_sent) {
      continue;  // a fetch racing the Cancel: it will not be served
    }
    if (call == calls_running_.end() || !call->second->fetch) {
      return malformed("a message that does not belong to a call it runs");
    }
    auto abort = std::make_shared<gateway::FetchAbort>();
    call->second->in_flight[request->fetch_id] = abort;
    channel::FetchDone done(
        [weak = weak_from_this(), executor = channel_->executor, id = call->first,
         fetch_id = request->fetch_id, abort](gateway::FetchResult result) {
          // The gateway completes on its I/O thread: this one in the daemon.
          boost::asio::dispatch(executor, [weak, id, fetch_id, abort,
                                           result = std::move(result)]() mutable {
            auto self = weak.lock();
            if (!self || !self->usable_) return;
            const auto it = self->calls_running_.find(id);
            if (it == self->calls_running_.end()) return;
            if (auto found = it->second->in_flight.find(fetch_id);
                found != it->second->in_flight.end() && found->second == abort) {
              it->second->in_flight.erase(found);
            }
            self->send(channel::encode_frame(channel::FetchReply{id, fetch_id, std::move(result)}));
          });
        },
        [weak = weak_from_this(), executor = channel_->executor, id = call->first,
         fetch_id = request->fetch_id](bool waiting) {
          boost::asio::dispatch(executor, [weak, id, fetch_id, waiting] {
            if (auto self = weak.lock()) self->fetch_waiting(id, fetch_id, waiting);
          });
        });
    done.set_abort(std::move(abort));
    call->second->fetch(std::move(request->request), std::move(done));
  }
}

void SandboxProcess::on_closed() {
  if (calls_running_.empty()) {
    usable_ = false;
    kill_and_reap();
    return;
  }
  // Frames that arrived with the end of the stream still count (a Result, then exit: a call
  // that ran away in a builtin is answered, then its process ends).
  while (!calls_running_.empty()) {
    auto next = channel_->reader->next();
    auto* body = std::get_if<std::optional<std::string>>(&next);
    if (!body || !*body) break;
    auto decoded = channel::decode(**body);
    auto* message = std::get_if<channel::Message>(&decoded);
    auto* result = message ? std::get_if<channel::Result>(message) : nullptr;
    if (result == nullptr || !calls_running_.contains(result->id)) continue;
    const channel::Outcome ended = died();
    finish(result->id, std::move(result->outcome));
    fail_all(ended);
    return;
  }
  fail_all(died());
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

void SandboxProcess::fetch_waiting(std::uint64_t id, std::uint64_t fetch_id, bool waiting) {
  const auto it = calls_running_.find(id);
  if (it == calls_running_.end() || !usable_) return;
  RunningCall& call = *it->second;
  send(channel::encode_frame(channel::FetchWait{id, fetch_id, waiting}));
  if (call.cancel_sent) return;  // its deadline is the cancel's now
  const auto now = Clock::now();
  if (waiting) {
    if (call.waiting++ > 0) return;
    call.remaining = call.deadline - now;
    // The gateway bounds the wait (policy.approval_timeout_ms, at most an hour); this only
    // keeps a backstop should it never say the wait ended.
    arm_deadline(call, now + call.remaining + std::chrono::hours(1));
  } else if (call.waiting > 0 && --call.waiting == 0) {
    arm_deadline(call, now + call.remaining);
  }
}

void SandboxProcess::cancel_call(std::uint64_t id) {
  const auto it = calls_running_.find(id);
  if (it == calls_running_.end() || it->second->cancel_sent || !usable_) return;
  RunningCall& call = *it->second;
  call.cancel_sent = true;
  // The process's main thread only reads the channel, so the frame reaches the call at once.
  send(channel::encode_frame(channel::Cancel{id}));
  arm_deadline(call, std::min(call.deadline, Clock::now() + kCancelGrace));
}

void SandboxProcess::arm_deadline(RunningCall& call, Clock::time_point deadline) {
  call.deadline = deadline;
  call.deadline_timer.expires_at(deadline);
  call.deadline_timer.async_wait(
      [weak = weak_from_this(), id = call.id](boost::system::error_code error) {
        auto self = weak.lock();
        if (error || !self) return;
        const auto it = self->calls_running_.find(id);
        if (it == self->calls_running_.end()) return;
        const RunningCall& call = *it->second;
        if (call.deadline > Clock::now()) return;  // re-armed for a later time
        // The process did not answer one of its calls in time: it is stuck or compromised, and
        // every call in it ends with it (they are all of one principal).
        const channel::Outcome outcome =
            call.cancel_sent ? channel::Outcome::failure(
                                   channel::ErrorKind::runtime,
                                   "cancelled; the sandbox process did not stop and was killed and "
                                   "replaced")
                             : channel::Outcome::failure(
                                   channel::ErrorKind::timeout,
                                   "wall limit " + std::to_string(call.limits.wall_ms) +
                                       " ms exceeded; the sandbox process did not stop and was "
                                       "killed and replaced");
        self->usable_ = false;
        self->kill_and_reap();
        self->finish(id, outcome);
        self->fail_all(channel::Outcome::failure(
            channel::ErrorKind::runtime,
            "the sandbox process was killed and replaced: another call in it did not stop"));
      });
}

void SandboxProcess::finish(std::uint64_t id, channel::Outcome outcome) {
  auto node = calls_running_.extract(id);
  if (node.empty()) return;
  std::unique_ptr<RunningCall> call = std::move(node.mapped());
  call->cancel.reset();  // no cancel reaches a call that has ended
  call->deadline_timer.cancel();
  // Nobody waits for these answers any more: their upstream connections are closed now rather
  // than when the upstream answers or the gateway's deadline passes.
  for (auto& [fetch_id, abort] : call->in_flight) abort->abort(gateway::AbortCause::call_ended);
  call->in_flight.clear();
  call->done(std::move(outcome));
}

void SandboxProcess::fail(channel::ErrorKind kind, std::string message) {
  usable_ = false;
  kill_and_reap();
  fail_all(channel::Outcome::failure(kind, std::move(message)));
}

void SandboxProcess::fail_all(const channel::Outcome& outcome) {
  usable_ = false;
  while (!calls_running_.empty()) finish(calls_running_.begin()->first, outcome);
}

}  // namespace codemode::sandbox
