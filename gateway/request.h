// The data that crosses between the sandbox and the gateway: a request as the code wrote it, the
// response it gets back, or the reason there is none.
//
// Plain values with no behaviour (but FetchAbort, a thread-safe flag) and no Asio types, so a
// sandbox worker thread can build an
// OutboundRequest, hand it to Gateway::fetch() and later receive the completion posted back to
// its own queue. Nothing in here has been checked: the gateway validates every field (method,
// URL, header names and values, body size) before anything leaves the process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace codemode::gateway {

using Header = std::pair<std::string, std::string>;  // name, value; in the order given
using Headers = std::vector<Header>;

// When a request must have completed, on the steady clock; the sandbox passes the call's wall
// deadline (or earlier).
using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

// The OAuth access token a call came with, kept in the daemon only so the gateway can exchange
// it for a downstream token (RFC 8693, config `token_exchange`). It is never sent upstream as
// is, never logged, and never reaches the sandbox process (it travels in the call's CallScope,
// call_scope.h, which the sandbox carries unopened to the fetch function the daemon runs).
struct CallerAccessToken {
  std::string value;
  std::int64_t expires_at = 0;  // its `exp`, seconds since the epoch
};

struct OutboundRequest {
  // GET, POST, PUT, PATCH, DELETE or HEAD, matched ignoring case (fetch() upper-cases these).
  std::string method = "GET";
  // Absolute http(s) URL, or a reference resolved against the first upstream ("/products").
  std::string url;
  // Set by the code; forbidden framing headers are dropped, credentials override (see README).
  Headers headers;
  // Sent as is with a Content-Length; must be empty for GET and HEAD.
  std::string body;
};

struct InboundResponse {
  unsigned status = 0;
  std::string status_text;
  // As received, in order, repeated names kept, minus the framing (Content-Encoding,
  // Content-Length, Transfer-Encoding: they describe bytes the code does not get). The gateway
  // then redacts and appends a Content-Length of `body` (none for HEAD, 204 and 304).
  Headers headers;
  std::string body;
  // The URL of the request that produced this response (after same-origin redirects),
  // normalised: "http://127.0.0.1:8788/products?limit=3".
  std::string final_url;
  // Same-origin redirects the gateway followed before this response (0..3).
  unsigned redirects = 0;
  // Who approved the request, when it waited for a person (policy.approve); empty otherwise.
  // For the daemon's log and audit trail; not passed to the sandbox.
  std::string approved_by;
};

// Who caused a failure decides its kind; both reach the code as an error whose text starts with
// `to_string(kind) + ": "` (the sandbox adds the prefix; `message` carries none).
enum class ErrorKind {
  policy,   // the gateway refused: origin, method, header, body size, subrequest budget
  runtime,  // the request was allowed but failed: connect, TLS, timeout, malformed or oversize
};

constexpr std::string_view to_string(ErrorKind kind) {
  return kind == ErrorKind::policy ? "policy" : "runtime";
}

// Messages are one line, name origins and header names, and never contain a header value.
struct GatewayError {
  ErrorKind kind = ErrorKind::runtime;
  std::string message;
  // A refusal repeated past the call's bound on refused requests (CallBudget): the bound's first
  // refusal stands for every later one, so an observer that keeps one record per request (the
  // audit trail) skips it, and code looping over refused requests cannot fill the trail.
  bool repeated = false;

  std::string text() const { return std::string(to_string(kind)) + ": " + message; }
};

using FetchResult = std::variant<InboundResponse, GatewayError>;

// Why a fetch was given up on: the code's AbortSignal aborted it, or its call ended first (a
// result, a limit, a cancel) with it in flight.
enum class AbortCause { none, signal, call_ended };

// Stops one fetch that is on its way. Whoever holds a part of the fetch says how to stop it
// (on_abort: the HTTP client closes the connection, which then goes back to no pool; a question
// waiting for a person is withdrawn; the call's ledger notes the abort); whoever gave up on the
// answer says so (abort()). The fetch's completion still runs once, with a `runtime` error
// naming the abort. Thread-safe: abort() comes from a call's thread or the daemon's executor,
// on_abort() from those or the gateway's I/O thread; each `stop` runs under the lock, so it may
// only post or take a lock of its own (cause() takes none).
class FetchAbort {
 public:
  // Runs `stop` now if abort() ran already, else when it does.
  void on_abort(std::function<void()> stop) {
    std::lock_guard lock(mutex_);
    if (aborted()) {
      if (stop) stop();
      return;
    }
    stops_.push_back(std::move(stop));
  }
  // The first call runs every `stop` given so far, in order; later ones do nothing.
  void abort(AbortCause cause = AbortCause::signal) {
    std::lock_guard lock(mutex_);
    if (aborted()) return;
    cause_.store(cause);
    for (auto& stop : std::exchange(stops_, {})) {
      if (stop) stop();
    }
  }
  AbortCause cause() const { return cause_.load(); }
  bool aborted() const { return cause() != AbortCause::none; }

 private:
  mutable std::mutex mutex_;
  std::atomic<AbortCause> cause_{AbortCause::none};
  std::vector<std::function<void()>> stops_;
};

}  // namespace codemode::gateway
