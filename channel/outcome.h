// What running one tool call produced: a value or a classified failure, plus captured logs.
//
// Everything generated code can cause ends here as a value; nothing it does throws across the
// sandbox boundary. The failure kinds are part of the external contract: the MCP result text
// starts with `to_string(kind) + ": "`, and tests pin those prefixes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace codemode::channel {

enum class ErrorKind {
  input,    // the arguments were refused before any isolate existed (type, length, form)
  compile,  // the code is not a single async function expression, or does not parse
  runtime,  // the code threw, or the call failed in a way the code could observe
  timeout,  // cpu_ms or wall_ms ran out
  memory,   // heap_mb or the ArrayBuffer budget ran out
  policy,   // the gateway refused a request, or a budget (subrequests) ran out
};

constexpr std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::input:
      return "input";
    case ErrorKind::compile:
      return "compile";
    case ErrorKind::runtime:
      return "runtime";
    case ErrorKind::timeout:
      return "timeout";
    case ErrorKind::memory:
      return "memory";
    case ErrorKind::policy:
      return "policy";
  }
  return "runtime";
}

// One fetch() of an execute call, for its ledger (ledger.h).
struct RequestRecord {
  std::string method;
  std::string path;     // the URL as the code wrote it, without its query or fragment
  unsigned status = 0;  // the response's status; 0 when there was none
  // When there was no response: the gateway's `policy: …` or `runtime: …`; a request the code's
  // AbortSignal gave up on says `runtime: aborted by the code's AbortSignal …`.
  std::string error;
  double ms = 0;             // from the request to its answer; 0 if the call ended first
  std::string content_type;  // the response's media type (no parameters), when it had one
};

struct Outcome {
  bool ok = false;
  // ok: the JSON text of the value the code's promise resolved to. "null" stands for undefined.
  // The sandbox serialises within result_chars: a larger value comes back cut (result_cut),
  // still valid JSON, each shortened array, object or string marked where it was cut.
  std::string result_json;
  bool result_cut = false;
  // !ok: the kind and a one-line fact, without the kind prefix and without host stack frames.
  ErrorKind error_kind = ErrorKind::runtime;
  std::string error_message;
  // !ok: what helps the code's author after that line, possibly several lines: where in the
  // code (its line as sent, a caret at the column) and what to do for a usual mistake. Empty
  // when there is nothing to add. Not part of the pinned message.
  std::string error_detail;
  // console.* lines in call order, already bounded by the sandbox.
  std::vector<std::string> logs;
  // For the log: how long the call took inside its sandbox process, from the Run frame read to
  // the Result ready (microseconds; 0 when not measured). The rest of a call's time is the
  // daemon's and the channel's.
  std::uint64_t sandbox_us = 0;
  // For the log: how long the call waited for a sandbox process before it started
  // (microseconds). Not part of wall_ms, which counts from the start.
  std::uint64_t queued_us = 0;
  // CPU time of the call's own thread while its code ran (microseconds; 0 when not measured):
  // what cpu_ms bounds.
  std::uint64_t cpu_us = 0;
  // execute: the code's fetches in order (the first RequestLedger::kMaxKept of them), how many
  // it made in all, and how many of those the gateway let through, which is what the
  // subrequest budget counts (a refused request costs none of it).
  std::vector<RequestRecord> requests;
  std::uint32_t fetches = 0;
  std::uint32_t subrequests = 0;

  static Outcome success(std::string json, std::vector<std::string> logs = {}) {
    Outcome o;
    o.ok = true;
    o.result_json = std::move(json);
    o.logs = std::move(logs);
    return o;
  }
  static Outcome failure(ErrorKind kind, std::string message, std::vector<std::string> logs = {}) {
    Outcome o;
    o.error_kind = kind;
    o.error_message = std::move(message);
    o.logs = std::move(logs);
    return o;
  }
};

}  // namespace codemode::channel
