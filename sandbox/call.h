// A tool call as the sandbox receives it. Plain data; handed from the submitter to the pool's
// executor, and never sent whole to a sandbox process (channel::Run takes the tool, the code and
// the limits).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "channel/call_control.h"
#include "channel/tool.h"
#include "config/config.h"

namespace codemode::gateway {
struct CallScope;  // gateway/call_scope.h, which this module never includes
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
  // What only an execute call's requests need: whose call it is to the gateway (principal,
  // scopes, profile, approver, access token) and to the observers of its requests (audit id,
  // trace context); gateway/call_scope.h. The sandbox hands it to its FetcherFactory as the call
  // starts and never opens it: this module sees only the declaration. Null for a search call.
  std::shared_ptr<const gateway::CallScope> scope;
};

// Makes one execute call's Fetcher as the call starts, with `limits` in force: the call's own
// subrequest budget and fetch deadline live in what it returns. `scope` is the call's own
// (Call::scope), passed on unopened. The daemon builds one over its gateway and its observers
// (server/assemble.cpp); the sandbox knows the gateway only through it. Called on the thread
// that starts calls (the pool's executor).
using FetcherFactory = std::function<channel::Fetcher(
    const config::Limits& limits, const std::shared_ptr<const gateway::CallScope>& scope)>;

}  // namespace codemode::sandbox
