// The daemon's handle on one sandbox process (isolate/child.h): start it, run calls in it, kill it.
//
// start() is blocking (fork, the namespaces, exec, the Init frame, then the process's Ready), for
// a thread that may wait; everything else runs on one executor, the I/O thread that owns the
// process's channel: run() writes the Run frame there, the channel is read there as frames arrive,
// the gateway's fetch completions write their replies there, and a call's completion is invoked
// there. So a call crosses no thread in the daemon on its way in or out. A process runs several
// calls at once (the Init frame says how many; the owner keeps to it).
//
// Every byte from the process is hostile: a malformed or unexpected message, silence past a
// call's deadline, or death all end with the process killed, every call in it given an error
// that says what happened, and usable() false (the owner starts a fresh process for the next call).
// The last reference's destructor kills the process (SIGKILL) and reaps it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "channel/call_control.h"
#include "channel/outcome.h"
#include "config/config.h"
#include "gateway/request.h"
#include "sandbox/call.h"

namespace codemode::sandbox {

enum class ChildStderr {
  discard,  // /dev/null (default: a compromised process must not write into the daemon's log)
  inherit,  // the daemon's stderr (debug logging: V8's own fatal messages become visible)
};

// SIGKILL and waitpid (blocking); the wait status, 0 when `pid` <= 0 (no process).
int kill_and_reap(pid_t pid);

struct ProcessOptions {
  // The program and its arguments (engine_command() in engine.h). The process gets one more,
  // the namespaces argument of channel/process_contract.h.
  std::vector<std::string> command;
  // Its whole environment, "NAME=value" each (engine_environment()); nothing is inherited.
  std::vector<std::string> environment;
  // The encoded channel::Init frame, shared by every process of a Sandbox.
  std::shared_ptr<const std::string> init_frame;
  // The document image's sealed memfd (openapi::DocumentImage::fd()), handed to the process as
  // kImageFd; -1: none (Init then says there is no spec).
  int image_fd = -1;
  ChildStderr child_stderr = ChildStderr::discard;
  // How long a process may take from fork to Ready (it maps the document and starts V8).
  std::chrono::milliseconds start_timeout{60000};
};

class SandboxProcess : public std::enable_shared_from_this<SandboxProcess> {
 public:
  using Completion = std::function<void(channel::Outcome)>;

  // Starts a process and waits for its Ready (blocking); the error says why there is none. The
  // process then lives on `executor`.
  static std::variant<std::shared_ptr<SandboxProcess>, std::string> start(
      const ProcessOptions& options, boost::asio::any_io_executor executor);
  ~SandboxProcess();
  SandboxProcess(const SandboxProcess&) = delete;
  SandboxProcess& operator=(const SandboxProcess&) = delete;

  // On the executor: runs one call beside the others. `fetch` (the daemon's gateway, see Fetcher)
  // may be null: no fetch in this call; it is called on the executor and may complete on it.
  // `done` is invoked exactly once, on the executor, never from inside run(). After an Outcome
  // that says the process failed, usable() is false.
  void run(const Call& call, const config::Limits& limits, channel::Fetcher fetch, Completion done);

  // On the executor: starts reading the channel, so that a process that dies or talks while idle
  // is noticed (run() does it too).
  void watch();
  // On the executor: kills the process now; every running call completes with `message`.
  void kill(channel::ErrorKind kind, std::string message);
  // On the executor, with no call running: stops using the process and hands over its pid, for a
  // thread that may block to kill and reap it (the destructor then does neither). -1: already
  // gone.
  pid_t release();

  bool usable() const { return usable_ && !ending_; }
  pid_t pid() const { return pid_; }
  unsigned calls() const { return calls_; }  // calls started in its life
  std::size_t running() const { return calls_running_.size(); }
  // The isolation layers the process reported, one line each ("seccomp: on (...)").
  const std::vector<std::string>& layers() const { return layers_; }

 private:
  struct Channel;
  struct RunningCall;
  SandboxProcess(pid_t pid, int fd, boost::asio::any_io_executor executor);

  void read_more();
  void on_frames();
  void on_closed();
  void send(std::string frame);
  void write_front();
  void cancel_call(std::uint64_t id);
  // A fetch of call `id` starts or stops waiting for a person: tells the process, and stops or
  // restarts the call's deadline.
  void fetch_waiting(std::uint64_t id, std::uint64_t fetch_id, bool waiting);
  void arm_deadline(RunningCall& call, std::chrono::steady_clock::time_point deadline);
  // Ends call `id` with `outcome`.
  void finish(std::uint64_t id, channel::Outcome outcome);
  // Kills the process; every running call ends with the failure.
  void fail(channel::ErrorKind kind, std::string message);
  void fail_all(const channel::Outcome& outcome);
  // sandbox::kill_and_reap() of this process, once; then there is no process left.
  int kill_and_reap();
  // Kills, reaps, and describes how the process ended (for the call's error).
  channel::Outcome died();

  pid_t pid_;
  bool usable_ = true;
  bool ending_ = false;  // it said it ends after its last Result (channel::Result::last)
  unsigned calls_ = 0;
  std::uint64_t last_call_id_ = 0;
  std::vector<std::string> layers_;
  std::unique_ptr<Channel> channel_;
  std::map<std::uint64_t, std::unique_ptr<RunningCall>> calls_running_;
};

}  // namespace codemode::sandbox
