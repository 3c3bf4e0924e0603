// The one observation point of a tool call, as fetch_observer.h is of its requests: the audit
// trail's call record, the call's SERVER span and the metrics' count and times are begun in one
// place when a call is accepted, and written in one place when it ends, whichever way it ends
// (refused for its arguments, answered with an outcome, cancelled by its client).
//
// Knows no protocol: the session (mcp/mcp_session.h) says who calls, through which client and
// session, and the facts of the span; this file decides what each observer gets of them.
//
// Threading: a CallObservation lives on the thread of the session that began it (its executor)
// and is ended there. The observers it reports to (SessionAudit) are built once by the daemon
// and outlive every session, so every observation, that holds pointers to them.
#pragma once

#include <memory>
#include <string>

#include "audit/record.h"
#include "channel/outcome.h"
#include "channel/tool.h"
#include "observe/tracing.h"

namespace codemode::server {

class CallAudit;
class Metrics;

// What a session reports its calls to: the audit trail, the metrics and the tracer, each when
// there is one, and the transport it serves ("stdio", "http") as the records name it.
struct SessionAudit {
  CallAudit* trail = nullptr;  // outlives the session; null: nothing is recorded
  std::string transport;
  Metrics* metrics = nullptr;      // outlives the session; counts every call answered
  const Tracer* tracer = nullptr;  // outlives the session; null: calls start no trace of their
                                   // own and export no span (an incoming traceparent is still
                                   // passed on and recorded)
};

// What is known of a call when it is accepted, before its arguments are looked at.
struct CallStart {
  channel::Tool tool = channel::Tool::search;
  std::string principal;
  std::string client_name;     // clientInfo, as sent; empty if none
  std::string client_version;  // clientInfo, as sent; empty if none
  std::string session;         // the session's name in records and spans ("http-7"); or empty
  // The trace context of `params._meta`, and of the transport (HTTP headers); the first valid
  // one wins (begin_call_span).
  IncomingTrace from_meta;
  IncomingTrace from_transport;
  CallFacts facts;  // what its span says besides the outcome; unused when no span is exported
  // The tool result's bound (limits.result_chars): a longer result is recorded as cut.
  std::size_t result_chars = 0;
};

// One call's observation: begun by observe_call, ended by end(), which reports it to each
// observer exactly once. end() consumes it; a second end(), or one on an observation moved from,
// reports nothing.
//
// An observation dropped without end() reports nothing: the request turned out to be no call (a
// protocol error after it was begun), or the daemon is tearing down with the call's completion
// never run, when the observers may be gone already.
class CallObservation {
 public:
  CallObservation();
  CallObservation(CallObservation&&) noexcept;
  CallObservation& operator=(CallObservation&&) noexcept;
  CallObservation(const CallObservation&) = delete;
  CallObservation& operator=(const CallObservation&) = delete;
  ~CallObservation();

  // The call's audit record id, which its requests' records name; empty without a trail.
  const std::string& audit_id() const;
  // The call's span: its traceparent and tracestate go on with the call to its requests.
  const CallSpan& span() const;
  // The code the call runs, for the audit record (kept only when there is a trail).
  void set_code(const std::string& code);

  // The call ended with `outcome` after `seconds` in the server (0 for a call refused before it
  // ran): one audit record, one span, one count. Only the first end() reports.
  void end(const channel::Outcome& outcome, double seconds = 0);

  bool ended() const { return state_ == nullptr; }

 private:
  friend CallObservation observe_call(const SessionAudit& observers, CallStart start);
  struct State;
  std::unique_ptr<State> state_;
};

// Begins observing a call accepted now: its span begins (the tracer's, or the one the context
// names when there is no tracer) and its audit record is filled in with what `start` knows.
CallObservation observe_call(const SessionAudit& observers, CallStart start);

}  // namespace codemode::server
