// One MCP client's conversation: lifecycle (initialize, version negotiation), the methods we
// serve, and the tool calls in flight. Transport-agnostic: a transport feeds it whole messages
// and gives it a Send function for whole outgoing messages.
//
// Two eras share it (docs/mcp-2026-07-28.md §7). A request whose `params._meta` claims a
// protocol version is served statelessly by revision 2026-07-28 (stateless_revision.h): it needs
// no initialize, changes no session state, and its results carry `resultType`. Every other
// message follows the 2025 lifecycle negotiated by initialize. A transport that serves only
// stateless requests (HTTP 2026-07-28) uses a fresh session per request.
//
// Answers normally leave through the session's Send. A transport that must answer each request
// on its own channel (HTTP: the response of the POST that carried it) passes a Send per message
// instead; every answer to that message then goes there, including a late tool result.
//
// Progress (MCP basic/utilities/progress): a tools/call whose `params._meta.progressToken` is a
// string or an integer gets `notifications/progress` about once a second while it runs (progress
// = whole seconds elapsed, no total), never after its answer. They leave through the message's
// notification channel: the session's Send unless the transport passes one per message.
//
// Threading: every member function runs on the session's executor (the I/O thread for stdio, a
// strand of its own for an HTTP session, whose requests arrive from many connections). Tool calls
// run in the sandbox; their completions are posted back to the executor, so answers may leave in a
// different order than requests came in, and a slow call never holds up ping or tools/list. The
// session is held by shared_ptr: a completion keeps it alive until the answer is sent.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "audit/record.h"
#include "gateway/call_scope.h"
#include "mcp/approvals.h"
#include "mcp/json_rpc.h"
#include "mcp/request_state.h"
#include "mcp/tools.h"
#include "observe/call_observer.h"
#include "observe/tracing.h"
#include "sandbox/sandbox.h"

namespace codemode::server {

// Newest first; initialize answers with the client's version when listed here, else the first.
inline constexpr std::string_view kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

// The request's progress token (`params._meta.progressToken`, a string or an integer), if any.
std::optional<Json> progress_token(const Json& params);

struct ServerInfo {
  std::string name = "codemode-mcp";
  std::string version;
  std::string instructions;
};

// Which rules a request is served by: the session's negotiated 2025 revision, or 2026-07-28 per
// request (whose responses differ slightly, on the wire and in their headers).
enum class Era { negotiated, stateless };

// Where a request's answer goes: the session's own Send (stdio), or a Send that came with the
// message (an HTTP exchange), which also hears, with an empty message, that a cancelled call
// will get no answer.
enum class ReplyRoute { session, message };

// What the transport knows of one request beyond its message: the W3C trace headers of the HTTP
// request that carried it (used by a tools/call whose `params._meta` has no traceparent), and
// the scopes of the OAuth access token it came with (unset: not scoped, as with a static token
// or stdio), which bound what an execute call's requests may do (config http.oauth), and the
// `principals` entry its claims match.
struct RequestContext {
  IncomingTrace trace;
  std::optional<std::vector<std::string>> scopes;
  std::string profile;  // a `principals` entry the token's claims match (http_transport.h)
  // Whether the request's notification channel can carry our requests to the client (an
  // approval's elicitation/create): stdio can; HTTP when the client takes an event stream.
  bool can_ask = true;
  // The access token itself, when an upstream's token is exchanged for it (gateway::Caller).
  std::shared_ptr<const gateway::CallerAccessToken> access_token;
};

// Who answers a call's approvals, as the log and the audit trail name them: the principal, and
// "via" the client's name and version (escaped, at most 128 bytes of them) when it gave them.
std::string approver_name(const std::string& principal, std::string_view client_name,
                          std::string_view client_version);

class McpSession : public std::enable_shared_from_this<McpSession> {
 public:
  using Send = std::function<void(std::string message)>;

  // `principal`: who the session's calls belong to (sandbox::Call::principal). `max_calls`: its
  // tool calls in flight at once, queued ones included; one more is refused with
  // ErrorCode::too_many_calls (0: no bound).
  McpSession(boost::asio::any_io_executor executor, const ToolCatalog& tools,
             sandbox::Sandbox& sandbox, ServerInfo info, Send send, std::string principal = {},
             std::size_t max_calls = 0, SessionAudit audit = {});

  // One message from the peer (a line without its newline, or an HTTP body).
  void handle(std::string_view message);

  // One already-parsed message whose answer goes to `reply_to` rather than the session's Send.
  // A request gets exactly one call of `reply_to`: its answer, or an empty string when no answer
  // will come (the call was cancelled). Notifications and responses never call it.
  // `notify` carries the request's progress notifications; empty: the session's Send.
  // `context`: what the transport knows of the request beyond its message (RequestContext).
  void handle(Message message, const Send& reply_to, const Send& notify = nullptr,
              const RequestContext& context = {});

  // Treats the session as initialized at `version` without an initialize exchange: stateless
  // HTTP, where every request may reach a fresh session (any replica serves any request).
  void assume_initialized(std::string version);

  // The peer is gone while request `id` runs (HTTP disconnect): the same as its
  // notifications/cancelled. Unknown or finished ids are ignored.
  void cancel(const Json& id);

  // The transport dropped a message for being larger than `limit` bytes.
  void reject_oversize(std::size_t limit);

  // Calls `on_idle` once no tool call is in flight (right away when none is). Used to drain
  // on EOF and on shutdown signals.
  void when_idle(std::function<void()> on_idle);

  // Where 2026-07-28 calls seal the state their questions go out with (config policy.approve):
  // without, such a call's writes that need approval are refused.
  void use_request_states(std::shared_ptr<RequestStates> states) {
    request_states_ = std::move(states);
  }

  std::size_t in_flight() const { return calls_.size(); }
  const std::string& principal() const { return principal_; }
  const boost::asio::any_io_executor& executor() const { return executor_; }

 private:
  struct CallState {
    std::shared_ptr<channel::CancelToken> cancel;
    Send reply_to;
    ReplyRoute route = ReplyRoute::session;
    Era era = Era::negotiated;
    std::shared_ptr<boost::asio::steady_timer> progress;  // set when the call has a token
    channel::Tool tool = channel::Tool::search;
    std::shared_ptr<ElicitingApprover> approver;  // set when the call's user can be asked
    std::shared_ptr<RetryApprover> retry;         // 2026-07-28: asks by stopping the call (MRTR)
    CallObservation observed;                     // ended once the call is answered (or cancelled)
  };

  void dispatch(Message message, const Send& reply_to, ReplyRoute route, const Send& notify,
                const RequestContext& context);
  void on_request(Request request, const Send& out, ReplyRoute route, const Send& notify,
                  const RequestContext& context);
  void on_stateless_request(const Request& request, const Send& out, ReplyRoute route,
                            const Send& notify, const RequestContext& context);
  void on_notification(const Notification& notification);
  Json initialize(const Json& params);
  Json discover() const;
  void call_tool(const Json& id, const Json& params, const Send& out, ReplyRoute route, Era era,
                 const Send& notify, const RequestContext& context);
  // The tool a tools/call (its id's key `key`) names and may start now, or the JSON-RPC error it
  // is refused with: params without a name, an unknown tool, an id in use by a running call, too
  // many calls, an audit trail that cannot take its record.
  std::variant<channel::Tool, JsonRpcError> tool_to_call(const Json& params,
                                                         const std::string& key) const;
  // The approver of a 2026-07-28 execute call whose client can be asked (MRTR), holding the
  // requestState and inputResponses a retry brings; the text: why `params` are invalid.
  std::variant<std::shared_ptr<RetryApprover>, std::string> retry_approver(
      const Json& id, const Json& params, const std::string& digest,
      const std::shared_ptr<channel::CancelToken>& cancel) const;
  // What an execute call's requests carry to the gateway and its observers, and no further
  // (sandbox::Call::scope): the principal, the token's scopes, profile and the token itself
  // (`context`), the call's approver, audit id and span (`state`).
  std::shared_ptr<const gateway::CallScope> call_scope(const CallState& state,
                                                       const RequestContext& context) const;
  // A call's outcome, on the executor: answered, its observation ended, then logged.
  void on_call_outcome(const Json& id, const std::string& name,
                       std::chrono::steady_clock::time_point started, channel::Outcome outcome);
  // 2026-07-28: whether the request's client declared form-mode elicitation, and who answers
  // its questions (the principal, via the client its _meta names).
  static bool stateless_client_can_ask(const Json& params);
  std::string stateless_client(const Json& params) const;
  // The facts of a call's span (tracing.h).
  CallFacts call_facts(const Json& id, const std::string& tool, const Json& params, Era era) const;
  // Arms the next progress tick (number `n`, due `n` seconds after `started`) of call `key`.
  void schedule_progress(const std::string& key, Json token, Send notify,
                         std::chrono::steady_clock::time_point started, int n);
  // Takes call `id` out of the calls in flight and answers it with `outcome`; its observation,
  // still to be ended, is returned.
  CallObservation finish_call(const Json& id, const channel::Outcome& outcome);
  // A result as `era` shapes it: 2026-07-28 adds resultType and the serverInfo `_meta`.
  Json shaped(Json result, Era era) const;
  void reply(const Send& out, const Json& id, const Json& result);
  void reply_error(const Send& out, const Json& id, ErrorCode code, std::string_view message);
  void maybe_idle();

  boost::asio::any_io_executor executor_;
  const ToolCatalog& tools_;
  sandbox::Sandbox& sandbox_;
  ServerInfo info_;
  Send send_;
  const std::string principal_;
  const std::size_t max_calls_;
  bool initialized_ = false;
  bool assumed_ = false;  // initialized without initialize: a stateless exchange, no MCP session
  std::string protocol_version_;
  std::map<std::string, CallState> calls_;  // key: dumped id, so 1 and "1" stay distinct
  std::function<void()> on_idle_;
  SessionAudit audit_;
  std::string audit_session_;  // the session's name in audit records and spans
  std::string client_name_;    // clientInfo from initialize, for the audit trail
  std::string client_version_;
  // The client declared form-mode elicitation at initialize: its user can approve requests.
  bool elicitation_ = false;
  std::shared_ptr<ServerRequests> server_requests_ = std::make_shared<ServerRequests>();
  std::shared_ptr<RequestStates> request_states_;
};

}  // namespace codemode::server
