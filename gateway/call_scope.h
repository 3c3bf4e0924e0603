// Whose call an execute call's requests belong to, and what the daemon knows of that call: what
// travels with the call from the session to its requests and to nothing else.
//
// The session fills in a CallScope when it accepts an execute call (mcp/mcp_session.cpp); the
// sandbox carries it, as one opaque pointer (sandbox::Call::scope), to the fetch function the
// daemon handed it, and never opens it: sandbox/ sees only a declaration of this type, so the
// compiler keeps it out. The fetch function gives `caller` to the gateway and the rest to the
// observers of the call's requests (observe/fetch_observer.h). Nothing here reaches a sandbox
// process (channel::Run carries the tool, the code and the limits only).
//
// Plain data, header-only (no link to the gateway's library); immutable once the call is
// submitted, so any thread may read it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/request.h"

namespace codemode::gateway {

class Approver;  // approval.h

// Whose call a request belongs to: its principal (whose profile applies) and, when the call came
// with an OAuth access token, the scopes that token grants (unset: not scoped).
struct Caller {
  std::string principal;
  std::optional<std::vector<std::string>> scopes;
  // A profile to use when `principal` has none of its own (an access token's claims matched a
  // "claim:NAME=VALUE" entry); empty: none.
  std::string profile;
  // Who asks the call's person when a request needs approval (policy.approve); null: nobody can,
  // and such requests are refused.
  std::shared_ptr<Approver> approver;
  // The call's OAuth access token, for upstreams whose token is exchanged for it
  // (GatewayOptions::exchange_token); null: the call came without one (a static token, stdio).
  // Never sent upstream as is, never logged.
  std::shared_ptr<const CallerAccessToken> access_token;
};

struct CallScope {
  // What the gateway checks a request against: principal, scopes, profile, approver, token.
  Caller caller;
  // The call's id in the audit trail (audit::CallRecord::id), which the records of its requests
  // name; empty when there is no audit trail.
  std::string audit_id;
  // The call's own span as a W3C traceparent, and the tracestate it came with: the parent of its
  // requests' spans (observe/tracing.h). Empty when the call is not traced.
  std::string traceparent;
  std::string tracestate;
};

}  // namespace codemode::gateway
