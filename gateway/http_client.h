// An HTTP/1.1 client for requests the policy has already allowed: one request in, one
// response (or a runtime error) out, with keep-alive reuse, TLS, deadlines and size caps.
//
// It knows nothing about policy or credentials; Gateway decides what to send and hands over a
// finished ClientRequest. Everything that can go wrong on the wire (resolve, connect, TLS,
// reset, timeout, malformed or oversize response, unsupported encoding) comes back as a
// GatewayError of kind runtime whose message names the origin and the phase, never a header
// value.
//
// Threading: all state (the idle pool, every connection and timer) lives on one strand of the
// io_context the caller provides, normally the daemon's I/O thread. send() may be called from
// any thread; the completion runs on that strand. Each exchange holds the client's state alive
// until it completes, so the HttpClient object may go away first; the io_context must keep
// running until the completions it owes have run.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "gateway/request.h"
#include "gateway/request_check.h"
#include "gateway/url_policy.h"

namespace codemode::gateway {

struct ClientOptions {
  // Trusted for HTTPS in addition to the system CA store (PEM, one or more certificates).
  std::optional<std::filesystem::path> ca_file;
  // Leave the system CA store out (tests that must prove a CA file is what makes a
  // certificate trusted). Long name on purpose: production never wants this.
  enum class SystemTrust { use_system_store, ignore_system_store_for_tests };
  SystemTrust system_trust = SystemTrust::use_system_store;
  // Resolve + TCP connect + TLS handshake, also bounded by the request's deadline.
  std::chrono::milliseconds connect_timeout{5000};
  // Largest response body accepted, after decoding; larger is an error, never a truncation.
  std::size_t response_bytes = 1048576;
  // Idle keep-alive connections kept per origin, and for how long.
  std::size_t max_idle_per_origin = 4;
  std::chrono::milliseconds idle_timeout{30000};
};

// A request that has passed the policy: the client sends exactly this, plus Host,
// Content-Length, User-Agent (unless given) and Accept-Encoding.
struct ClientRequest {
  Method method = Method::get;
  NormalisedUrl url;
  Headers headers;
  std::string body;
};

using ClientResult = std::variant<InboundResponse, GatewayError>;

class HttpClient {
 public:
  using Completion = std::function<void(ClientResult)>;

  // Start-up problems (an unreadable CA file) are returned as lines, not thrown.
  static std::variant<std::unique_ptr<HttpClient>, std::vector<std::string>> create(
      boost::asio::io_context& io, ClientOptions options);
  ~HttpClient();  // closes idle connections; exchanges in flight run to completion
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request` and calls `done` exactly once, on the client's strand, by `deadline` (plus
  // the time to run the completion). `final_url` of the response is set, `redirects` is 0.
  // Once `abort` aborts, the exchange stops where it is: its connection is closed (never pooled)
  // and `done` gets a runtime error saying the request was aborted.
  void send(ClientRequest request, Deadline deadline, Completion done,
            const std::shared_ptr<FetchAbort>& abort = nullptr);

  // New TCP connections opened so far (keep-alive reuse shows as fewer). Any thread.
  std::uint64_t connections_opened() const;

  struct State;

 private:
  explicit HttpClient(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

}  // namespace codemode::gateway
