// A tool call as the sandbox receives it. Plain data; moves between the I/O thread and a worker.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "channel/call_control.h"
#include "channel/tool.h"
#include "config/config.h"
#include "gateway/request.h"

namespace codemode::gateway {
class Approver;
}  // namespace codemode::gateway

namespace codemode::sandbox {

struct Call {
  channel::Tool tool = channel::Tool::search;
  std::string code;
  // Who calls (a token's name, an MCP session, the stdio client). Calls of different principals
  // never share a sandbox process, and the pool shares processes and turns fairly between them.
  std::string principal;
  // Lets the submitter stop the call from its own thread (notifications/cancelled, shutdown).
  std::shared_ptr<channel::CancelToken> cancel;
  // The call's id in the audit trail (audit::CallRecord::id), which the records of its fetches
  // name; empty when there is no audit trail. The sandbox only passes it to its FetcherFactory.
  std::string audit_id;
  // The call's own span as a W3C traceparent, and the tracestate it came with: the parent of its
  // fetches' spans (observe/tracing.h). Empty when the call is not traced. Passed only to the
  // FetcherFactory, like audit_id.
  std::string traceparent;
  std::string tracestate;
  // The scopes of the OAuth access token the call came with; unset when it is not scoped (a
  // static token, stdio). Passed only to the FetcherFactory: the gateway refuses a request whose
  // method needs a scope the token lacks (config http.oauth.request_scopes).
  std::optional<std::vector<std::string>> scopes;
  // The `principals` entry the token's claims matched ("claim:groups=admins"), used when the
  // principal has none of its own; empty: none. Passed only to the FetcherFactory.
  std::string profile;
  // Who asks the call's user to approve a request (config policy.approve): the session that
  // made the call, when its client can ask; null: nobody can. Passed only to the FetcherFactory.
  std::shared_ptr<gateway::Approver> approver;
  // The OAuth access token the call came with, for upstreams whose token is exchanged for it
  // (gateway/request.h); null without one. Passed only to the FetcherFactory, which runs in the
  // daemon: never sent to a sandbox process (channel::Run holds the tool, code and limits only).
  std::shared_ptr<const gateway::CallerAccessToken> access_token;
};

// Makes one execute call's Fetcher as the call starts, with `limits` in force: the call's own
// subrequest budget and fetch deadline live in what it returns. `call` says whose call it is
// (its principal and audit id, for the audit trail's request records). The daemon builds one over
// its gateway (server/daemon.cpp); the sandbox knows the gateway only through it. Called on the
// thread that starts calls (the pool's executor).
using FetcherFactory =
    std::function<channel::Fetcher(const config::Limits& limits, const Call& call)>;

}  // namespace codemode::sandbox
