// The one place where the daemon watches an execute call's requests: the metrics, the audit
// trail and the tracer each see every fetch() as it leaves for the gateway and as it is answered,
// timed once, here, instead of each wrapping the call's Fetcher with a timer of its own.
//
// An observer may change the request before the gateway sees it (the tracer puts the call's
// `traceparent` on it); it never sees the credentials, which the gateway adds afterwards.
// (sandbox/ledger.h keeps the call's own ledger inside the sandbox, which may not import this
// module; it times its requests itself.)
//
// Threading: on_send runs on the thread that calls the Fetcher (the I/O thread for sandbox
// processes), on_answer on the gateway's I/O thread. Observers are built once by the daemon and
// outlive the sandbox; what they hold per call lives in ObservedCall.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "channel/call_control.h"
#include "gateway/request.h"

namespace codemode::server {

// What observers need of the call a fetch belongs to, taken from its gateway::CallScope once per
// call (server/assemble.cpp).
struct ObservedCall {
  std::string audit_id;   // empty: no audit trail
  std::string principal;  // who calls
  // The call's own span as a W3C traceparent (the parent of its requests' client spans), and
  // the tracestate that came with the call; empty: the call is not traced.
  std::string traceparent;
  std::string tracestate;
};

// One fetch() of the call.
struct ObservedFetch {
  std::string method;  // as the code wrote it
  std::string url;     // as the code wrote it (the gateway has not normalised it yet)
  std::size_t sent_bytes = 0;
  std::int64_t started_unix_us = 0;  // when it reached the observation point (system clock)
  std::chrono::steady_clock::time_point started;
  double seconds = 0;  // until the gateway's answer; set before on_answer
  // The id of this request's client span, set by the tracer in on_send when the call is traced.
  std::string span_id;
};

class FetchObserver {
 public:
  virtual ~FetchObserver() = default;
  // Before the gateway: may add to `fetch` and change `request` (later observers see the change).
  virtual void on_send(const ObservedCall& call, ObservedFetch& fetch,
                       gateway::OutboundRequest& request);
  // The gateway's answer: a response, a refusal (policy) or a failure (runtime).
  virtual void on_answer(const ObservedCall& call, const ObservedFetch& fetch,
                         const gateway::FetchResult& result) = 0;
};

// One call's `fetch` with each of its requests shown to `observers`, in order (null entries are
// skipped), as requests of `call`; `fetch` itself when there are none.
channel::Fetcher observe_fetches(channel::Fetcher fetch, ObservedCall call,
                                 std::vector<FetchObserver*> observers);

}  // namespace codemode::server
