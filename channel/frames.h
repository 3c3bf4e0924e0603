// The wire between the daemon and one sandbox process: length-prefixed messages on a socketpair.
//
// A frame is a 4-byte little-endian body length followed by the body, a MessagePack map with a
// string "t" naming the message and the fields below. Nothing else crosses: the parent sends a
// sandbox process its settings once (Init; the document comes as a mapped image), then one call at
// up to Init::concurrency at a time (Run, maybe Cancel, and the answers to its fetches); the
// process answers Ready once, then FetchRequests (maybe AbortFetches) and one Result per call,
// the calls' frames interleaved; a fetch waiting for a person's approval also gets FetchWaits.
// Plain data, no V8, no Asio: both sides and the fuzzer use the same decoder.
//
// Trust: the parent treats every byte from a sandbox process as hostile (it may be running
// compromised code). decode() never throws and never trusts a length: a frame longer than the
// reader's limit, a body that is not a map of the expected shape, an unknown type or a field of
// the wrong type is a DecodeError, and the parent kills the process that sent it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "channel/outcome.h"
#include "channel/tool.h"
#include "config/config.h"
#include "gateway/request.h"

namespace codemode::channel {

// Parent -> process, first frame: whether `search` code has a `spec` (its document image is
// then descriptor kImageFd, a sealed memfd the process maps: openapi/image.h), whether `execute`
// code gets fetch(), the limits every call runs under (they size the process's address-space
// cap), the process's total CPU allowance in seconds, and how many calls it runs at once.
struct Init {
  bool spec = false;
  bool fetch = false;
  config::Limits limits;
  std::uint32_t cpu_seconds = 0;
  bool jitless = false;           // config's sandbox.jitless: V8 starts with --jitless
  std::uint32_t concurrency = 1;  // calls at once (config's sandbox.process_calls); >= 1
  std::string fetch_base;         // SandboxOptions::fetch_base
};

// Process -> parent, once, when the process is locked down and ready for calls. `layers` is one
// line per isolation layer ("seccomp: on", "namespaces: off (EPERM)", ...), for the start-up log
// and --sandbox-report.
struct Ready {
  std::vector<std::string> layers;
};

// Parent -> process: run one call. `id` is chosen by the parent and echoed in every message of
// the call; a process runs up to Init::concurrency calls at once.
struct Run {
  std::uint64_t id = 0;
  Tool tool = Tool::search;
  std::string code;
  config::Limits limits;
};

// Parent -> process: stop call `id` (the process still answers with a Result).
struct Cancel {
  std::uint64_t id = 0;
};

// Process -> parent: fetch() inside call `call_id`; `fetch_id` pairs it with its FetchReply.
struct FetchRequest {
  std::uint64_t call_id = 0;
  std::uint64_t fetch_id = 0;
  gateway::OutboundRequest request;
};

// Process -> parent: the code gave up on fetch `fetch_id` of call `call_id` (its AbortSignal
// aborted): the daemon stops the request (gateway::FetchAbort) and the answer it still sends is
// dropped. A fetch already answered is not an error: the two frames cross.
struct AbortFetch {
  std::uint64_t call_id = 0;
  std::uint64_t fetch_id = 0;
};

// Parent -> process: the gateway's answer to one FetchRequest.
struct FetchReply {
  std::uint64_t call_id = 0;
  std::uint64_t fetch_id = 0;
  gateway::FetchResult result;
};

// Parent -> process: fetch `fetch_id` of call `call_id` starts (true) or stops (false) waiting
// for a person's approval; the call's wall clock stands still in between (call_control.h,
// FetchDone).
struct FetchWait {
  std::uint64_t call_id = 0;
  std::uint64_t fetch_id = 0;
  bool waiting = false;
};

// Process -> parent: how call `id` ended. `last`: the process ends right after this frame (a
// call it could not stop), so no further call may be sent to it.
struct Result {
  std::uint64_t id = 0;
  Outcome outcome;
  bool last = false;
};

using Message =
    std::variant<Init, Ready, Run, Cancel, FetchRequest, AbortFetch, FetchReply, FetchWait, Result>;

struct DecodeError {
  std::string message;  // one line, for the log; never echoes the body
};

// The body of one frame (without the length prefix).
std::string encode_body(const Message& message);
// The whole frame: length prefix + body.
std::string encode_frame(const Message& message);
std::variant<Message, DecodeError> decode(std::string_view body);

// Collects bytes as they arrive and cuts them into frame bodies. Not thread-safe; one per
// direction of one socket.
class FrameReader {
 public:
  explicit FrameReader(std::size_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}

  void append(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete body, nullopt when more bytes are needed; a DecodeError when the length
  // prefix is over the limit (the stream cannot be resynchronised after that).
  std::variant<std::optional<std::string>, DecodeError> next();
  std::size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  std::size_t max_body_bytes_;
  std::string buffer_;
  std::size_t consumed_ = 0;
};

inline constexpr std::size_t kFramePrefixBytes = 4;

// Blocking helpers for the sandbox process side (the parent polls non-blocking sockets).
// send_all: false when the peer is gone. read_some: bytes read, 0 at end of stream, -1 on error.
bool send_all(int fd, std::string_view bytes);
long read_some(int fd, char* buffer, std::size_t size);

}  // namespace codemode::channel
