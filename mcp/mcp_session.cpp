#include "mcp/mcp_session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include "base/check.h"
#include "mcp/stateless_revision.h"
#include "net/escape.h"
#include "observe/call_audit.h"

namespace codemode::server {

namespace {

std::string id_key(const Json& id) { return dump(id); }

bool supported(std::string_view version) {
  return std::find(std::begin(kProtocolVersions), std::end(kProtocolVersions), version) !=
         std::end(kProtocolVersions);
}

}  // namespace

std::optional<Json> progress_token(const Json& params) {
  if (!params.is_object()) return std::nullopt;
  auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return std::nullopt;
  auto token = meta->find("progressToken");
  if (token == meta->end() || !(token->is_string() || token->is_number_integer())) {
    return std::nullopt;
  }
  return *token;
}

McpSession::McpSession(boost::asio::any_io_executor executor, const ToolCatalog& tools,
                       sandbox::Sandbox& sandbox, ServerInfo info, Send send, std::string principal,
                       std::size_t max_calls, SessionAudit audit)
    : executor_(std::move(executor)),
      tools_(tools),
      sandbox_(sandbox),
      info_(std::move(info)),
      send_(std::move(send)),
      principal_(std::move(principal)),
      max_calls_(max_calls),
      audit_(std::move(audit)) {
  if (audit_.trail || (audit_.tracer && audit_.tracer->exporting())) {
    audit_session_ = CallAudit::session_name(audit_.transport);
  }
}

void McpSession::handle(std::string_view message) {
  dispatch(parse_message(message), send_, ReplyRoute::session, send_, RequestContext{});
}

void McpSession::handle(Message message, const Send& reply_to, const Send& notify,
                        const RequestContext& context) {
  dispatch(std::move(message), reply_to, ReplyRoute::message, notify ? notify : send_, context);
}

void McpSession::dispatch(Message parsed, const Send& out, ReplyRoute route, const Send& notify,
                          const RequestContext& context) {
  if (auto* request = std::get_if<Request>(&parsed)) {
    on_request(std::move(*request), out, route, notify, context);
  } else if (auto* notification = std::get_if<Notification>(&parsed)) {
    on_notification(*notification);
  } else if (auto* error = std::get_if<JsonRpcError>(&parsed)) {
    spdlog::debug("refused a message: {}", net::escape_text(error->message));
    out(serialize_error(*error));
  }
  if (auto* response = std::get_if<Response>(&parsed)) {
    // The answers to our requests (approvals); anything else is not waited for.
    if (!server_requests_->settle(response->id, response->error ? nullptr : &response->result)) {
      spdlog::debug("ignored a response to no request of ours: id {}",
                    net::escape_text(dump(response->id)));
    }
  }
}

void McpSession::assume_initialized(std::string version) {
  protocol_version_ = std::move(version);
  initialized_ = true;
  assumed_ = true;
}

void McpSession::cancel(const Json& id) {
  if (auto call = calls_.find(id_key(id)); call != calls_.end()) {
    call->second.cancel->cancel();
    if (call->second.progress) call->second.progress->cancel();
    spdlog::info("call {} cancelled: the client went away", net::escape_text(call->first));
  }
}

void McpSession::reject_oversize(std::size_t limit) {
  spdlog::warn("dropped a message over {} bytes", limit);
  send_(serialize_error(
      nullptr, ErrorCode::invalid_request,
      "invalid request: the message exceeds " + std::to_string(limit) + " bytes and was dropped"));
}

void McpSession::on_request(Request request, const Send& out, ReplyRoute route, const Send& notify,
                            const RequestContext& context) {
  if (claims_stateless_revision(request.params)) {
    return on_stateless_request(request, out, route, notify, context);
  }
  const std::string& method = request.method;
  if (method == "initialize") {
    if (initialized_) {
      return reply_error(out, request.id, ErrorCode::invalid_request,
                         "invalid request: the session is already initialized");
    }
    if (!request.params.is_object() || !request.params.contains("protocolVersion") ||
        !request.params["protocolVersion"].is_string()) {
      return reply_error(out, request.id, ErrorCode::invalid_params,
                         "invalid params: initialize needs params.protocolVersion (a string)");
    }
    return reply(out, request.id, initialize(request.params));
  }
  if (method == "ping") return reply(out, request.id, Json::object());
  if (!initialized_) {
    return reply_error(out, request.id, ErrorCode::invalid_request,
                       "invalid request: the session is not initialized; send initialize first");
  }
  if (method == "tools/list") return reply(out, request.id, Json{{"tools", tools_.list()}});
  if (method == "tools/call") {
    return call_tool(request.id, request.params, out, route, Era::negotiated, notify, context);
  }
  reply_error(out, request.id, ErrorCode::method_not_found, "method not found: " + method);
}

void McpSession::on_stateless_request(const Request& request, const Send& out, ReplyRoute route,
                                      const Send& notify, const RequestContext& context) {
  // No header layer here: an HTTP transport checks the headers before the request gets here.
  if (auto refusal = check_stateless_request(request, std::nullopt)) {
    return out(serialize_error(*refusal));
  }
  if (request.method == "server/discover") {
    return reply(out, request.id, shaped(discover(), Era::stateless));
  }
  if (request.method == "tools/list") {
    // The tool set is fixed for the life of the process and the same for every client.
    Json result{{"tools", tools_.list()}, {"ttlMs", 300000}, {"cacheScope", "public"}};
    return reply(out, request.id, shaped(std::move(result), Era::stateless));
  }
  call_tool(request.id, request.params, out, route, Era::stateless, notify,
            context);  // the ladder leaves no other
}

Json McpSession::discover() const {
  Json versions = Json::array();
  for (const auto v : kAllProtocolVersions) versions.push_back(v);
  Json result{{"supportedVersions", versions},
              {"capabilities", {{"tools", Json::object()}}},
              {"ttlMs", 300000},
              {"cacheScope", "public"}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return result;
}

Json McpSession::shaped(Json result, Era era) const {
  if (era == Era::negotiated) return result;
  result["resultType"] = "complete";
  result["_meta"][kMetaServerInfo] = {{"name", info_.name}, {"version", info_.version}};
  return result;
}

void McpSession::on_notification(const Notification& notification) {
  if (notification.method == "notifications/initialized") return;
  if (notification.method == "notifications/cancelled") {
    if (!notification.params.is_object()) return;
    auto request_id = notification.params.find("requestId");
    if (request_id == notification.params.end()) return;
    if (auto call = calls_.find(id_key(*request_id)); call != calls_.end()) {
      call->second.cancel->cancel();  // the isolate stops; the outcome is dropped unsent
      if (call->second.progress) call->second.progress->cancel();
      spdlog::info("call {} cancelled by the client", net::escape_text(call->first));
    }
    return;
  }
  spdlog::debug("ignored notification {}", net::escape_text(notification.method));
}

Json McpSession::initialize(const Json& params) {
  const auto requested = params["protocolVersion"].get<std::string>();
  protocol_version_ = supported(requested) ? requested : std::string(kProtocolVersions[0]);
  initialized_ = true;
  std::string client = "unknown client";
  if (auto info = params.find("clientInfo"); info != params.end() && info->is_object()) {
    // Only strings are read: Json::value would throw on a number here.
    const auto text = [&](const char* key) {
      const auto it = info->find(key);
      return it != info->end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    if (!text("name").empty()) client = text("name");
    client += " " + text("version");
    client_name_ = text("name");
    client_version_ = text("version");
  }
  // Form mode: an empty `elicitation` object (2025-06-18's only mode), or one naming `form`.
  if (const auto capabilities = params.find("capabilities");
      capabilities != params.end() && capabilities->is_object()) {
    const auto elicitation = capabilities->find("elicitation");
    elicitation_ = elicitation != capabilities->end() && elicitation->is_object() &&
                   (elicitation->contains("form") || !elicitation->contains("url"));
  }
  spdlog::info("initialized: {} asked for {}, speaking {}", net::escape_text(client),
               net::escape_text(requested), protocol_version_);
  Json result{{"protocolVersion", protocol_version_},
              {"capabilities", {{"tools", {{"listChanged", false}}}}},
              {"serverInfo", {{"name", info_.name}, {"version", info_.version}}}};
  if (!info_.instructions.empty()) result["instructions"] = info_.instructions;
  return result;
}

namespace {

// The 2026-07-28 request's `_meta` entry `key`, or null.
const Json* meta_entry(const Json& params, std::string_view key) {
  const auto meta = params.find("_meta");
  if (meta == params.end() || !meta->is_object()) return nullptr;
  const auto it = meta->find(std::string(key));
  return it == meta->end() ? nullptr : &*it;
}

std::string string_at(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The W3C trace headers a tools/call's `params._meta` carries (traceparent, tracestate), if any.
IncomingTrace meta_trace(const Json& params) {
  IncomingTrace trace;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object()) {
    for (const auto& [key, target] : {std::pair{"traceparent", &trace.traceparent},
                                      std::pair{"tracestate", &trace.tracestate}}) {
      if (const auto it = meta->find(key); it != meta->end() && it->is_string()) {
        *target = it->get<std::string>();
      }
    }
  }
  return trace;
}

}  // namespace

std::string approver_name(const std::string& principal, std::string_view client_name,
                          std::string_view client_version) {
  if (client_name.empty()) return principal;
  // The client's own words go into log lines and the audit trail: escaped, and bounded.
  return principal + " via " +
         net::escape_text(std::string(client_name) + " " + std::string(client_version), 128);
}

bool McpSession::stateless_client_can_ask(const Json& params) {
  const Json* capabilities = meta_entry(params, kMetaClientCapabilities);
  if (capabilities == nullptr || !capabilities->is_object()) return false;
  const auto elicitation = capabilities->find("elicitation");
  return elicitation != capabilities->end() && elicitation->is_object() &&
         (elicitation->contains("form") || !elicitation->contains("url"));
}

std::string McpSession::stateless_client(const Json& params) const {
  const Json* info = meta_entry(params, "io.modelcontextprotocol/clientInfo");
  if (info == nullptr || !info->is_object()) return principal_;
  return approver_name(principal_, string_at(*info, "name"), string_at(*info, "version"));
}

std::shared_ptr<const gateway::CallScope> McpSession::call_scope(
    const CallState& state, const RequestContext& context) const {
  auto scope = std::make_shared<gateway::CallScope>();
  scope->caller = gateway::Caller{principal_, context.scopes, context.profile,
                                  state.retry ? std::shared_ptr<gateway::Approver>(state.retry)
                                              : std::shared_ptr<gateway::Approver>(state.approver),
                                  context.access_token};
  scope->audit_id = state.observed.audit_id();
  scope->traceparent = state.observed.span().traceparent();
  scope->tracestate = state.observed.span().tracestate;
  return scope;
}

void McpSession::call_tool(const Json& id, const Json& params, const Send& out, ReplyRoute route,
                           Era era, const Send& notify, const RequestContext& context) {
  const std::string key = id_key(id);
  const auto called = tool_to_call(params, key);
  if (const auto* refused = std::get_if<JsonRpcError>(&called)) {
    return reply_error(out, id, refused->code, refused->message);
  }
  const channel::Tool tool = std::get<channel::Tool>(called);
  const auto name = params["name"].get<std::string>();
  // The call's trace: the one `params._meta` (else the HTTP request) names, or a new one when
  // spans are exported; its id is the audit record's.
  CallObservation observed = observe_call(
      audit_,
      CallStart{tool, principal_, client_name_, client_version_, audit_session_, meta_trace(params),
                context.trace, call_facts(id, name, params, era), tools_.limits().result_chars});
  // Refusals for the arguments are tool results, not protocol errors, so the model can correct
  // itself; the call ends there.
  const auto refuse = [&](const channel::Outcome& refused) {
    observed.end(refused);
    reply(out, id, shaped(tools_.result(refused, tool), era));
  };
  const Json arguments = params.value("arguments", Json::object());
  if (!arguments.is_object() || !arguments.contains("code") || !arguments["code"].is_string()) {
    return refuse(channel::Outcome::failure(
        channel::ErrorKind::input,
        "arguments must be an object with \"code\", a string holding an async arrow function"));
  }
  std::string code = arguments["code"].get<std::string>();
  observed.set_code(code);
  if (auto refused = sandbox::check_input(code, tools_.limits())) return refuse(*refused);

  auto cancel = std::make_shared<channel::CancelToken>();
  std::shared_ptr<RetryApprover> retry;
  if (tool == channel::Tool::execute && era == Era::stateless && request_states_ &&
      stateless_client_can_ask(params)) {
    auto approver = retry_approver(id, params, call_digest(name, code), cancel);
    if (auto* refused = std::get_if<std::string>(&approver)) {
      return reply_error(out, id, ErrorCode::invalid_params, "invalid params: " + *refused);
    }
    retry = std::move(std::get<std::shared_ptr<RetryApprover>>(approver));
  }
  auto& state = calls_
                    .emplace(key, CallState{cancel, out, route, era, nullptr, tool, nullptr, retry,
                                            std::move(observed)})
                    .first->second;
  if (tool == channel::Tool::execute && era == Era::negotiated && elicitation_ && context.can_ask) {
    state.approver = std::make_shared<ElicitingApprover>(
        executor_, server_requests_, notify,
        approver_name(principal_, client_name_, client_version_),
        protocol_version_ >= "2025-11-25");
  }
  const auto started = std::chrono::steady_clock::now();
  if (auto token = progress_token(params)) {
    state.progress = std::make_shared<boost::asio::steady_timer>(executor_);
    schedule_progress(key, std::move(*token), notify, started, 1);
  }
  sandbox::Call call{tool, std::move(code), principal_, std::move(cancel),
                     tool == channel::Tool::execute ? call_scope(state, context) : nullptr};
  // The outcome arrives on the sandbox's executor; the session handles it on its own.
  auto on_outcome = [self = shared_from_this(), id, name, started](channel::Outcome outcome) {
    boost::asio::post(self->executor_,
                      [self, id, name, started, outcome = std::move(outcome)]() mutable {
                        self->on_call_outcome(id, name, started, std::move(outcome));
                      });
  };
  sandbox_.submit(std::move(call), std::move(on_outcome));
}

std::variant<channel::Tool, JsonRpcError> McpSession::tool_to_call(const Json& params,
                                                                   const std::string& key) const {
  if (!params.is_object() || !params.contains("name") || !params["name"].is_string()) {
    return JsonRpcError{ErrorCode::invalid_params,
                        "invalid params: tools/call needs params.name (a string)"};
  }
  const auto name = params["name"].get<std::string>();
  const auto tool = tools_.find(name);
  if (!tool) return JsonRpcError{ErrorCode::invalid_params, "invalid params: unknown tool " + name};
  if (calls_.count(key) != 0) {
    return JsonRpcError{ErrorCode::invalid_request,
                        "invalid request: id " + key + " is already in use by a running call"};
  }
  if (max_calls_ != 0 && calls_.size() >= max_calls_) {
    return JsonRpcError{ErrorCode::too_many_calls,
                        "too many calls: " + std::to_string(calls_.size()) +
                            " tool calls of this client are running or queued; retry when one "
                            "has finished"};
  }
  if (const auto refused = audit_.trail ? audit_.trail->refusal(principal_) : std::nullopt) {
    return JsonRpcError{ErrorCode::audit_unavailable, *refused};
  }
  return *tool;
}

std::variant<std::shared_ptr<RetryApprover>, std::string> McpSession::retry_approver(
    const Json& id, const Json& params, const std::string& digest,
    const std::shared_ptr<channel::CancelToken>& cancel) const {
  // MCP 2026-07-28 (multi round-trip requests): a retry brings its state and the answers.
  Json opened;
  const auto sealed = params.find("requestState");
  if (sealed != params.end()) {
    std::variant<Json, std::string> state =
        sealed->is_string() ? request_states_->open(sealed->get<std::string>(), principal_)
                            : std::variant<Json, std::string>(std::string("must be a string"));
    if (auto* refused = std::get_if<std::string>(&state)) {
      spdlog::info("tools/call id={}: requestState refused: {}", net::escape_text(dump(id)),
                   *refused);
      return std::move(*refused);
    }
    opened = std::move(std::get<Json>(state));
    if (!opened.contains("call") || opened["call"] != digest) {
      return std::string("requestState belongs to another call (another tool or code)");
    }
  }
  const auto responses = params.find("inputResponses");
  return std::make_shared<RetryApprover>(digest, sealed != params.end() ? &opened : nullptr,
                                         responses != params.end() ? *responses : Json::object(),
                                         stateless_client(params), [cancel] { cancel->cancel(); });
}

void McpSession::on_call_outcome(const Json& id, const std::string& name,
                                 std::chrono::steady_clock::time_point started,
                                 channel::Outcome outcome) {
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  if (const auto call = calls_.find(id_key(id));
      call != calls_.end() && call->second.retry && call->second.retry->stopped_for_input()) {
    outcome = channel::Outcome::failure(
        channel::ErrorKind::policy,
        "stopped for the user's approval; the client is to call again with the answer");
  }
  // The answer first: the log line is a write to stderr, which the client often reads
  // too, and its wake-up would come ahead of the answer's.
  finish_call(id, outcome).end(outcome, ms / 1000);
  // A refusal says which request and why: the operator's first question. The gateway's
  // text names origins, methods and paths, never a header value; the code chose the
  // path, so it is escaped.
  std::string how(outcome.ok ? "ok" : channel::to_string(outcome.error_kind));
  if (!outcome.ok && outcome.error_kind == channel::ErrorKind::policy) {
    how += " (" + net::escape_text(outcome.error_message) + ")";
  }
  if (outcome.sandbox_us > 0) {
    spdlog::info(
        "tools/call {} id={}: {} in {:.2f} ms (queued {:.2f} ms, sandbox process {:.2f} ms)", name,
        net::escape_text(dump(id)), how, ms, static_cast<double>(outcome.queued_us) / 1000,
        static_cast<double>(outcome.sandbox_us) / 1000);
  } else {
    spdlog::info("tools/call {} id={}: {} in {:.2f} ms", name, net::escape_text(dump(id)), how, ms);
  }
}

CallObservation McpSession::finish_call(const Json& id, const channel::Outcome& outcome) {
  auto call = calls_.find(id_key(id));
  CODEMODE_CHECK(call != calls_.end(), "a call stays in calls_ until its one completion arrives");
  CallState state = std::move(call->second);
  calls_.erase(call);
  if (state.progress) state.progress->cancel();  // no progress after the answer
  if (state.approver) state.approver->close();   // no question after the answer
  if (state.retry && state.retry->stopped_for_input()) {
    // MCP 2026-07-28: the questions go back with the call, which the client sends again.
    Json result{{"inputRequests", state.retry->input_requests()},
                {"requestState", request_states_->seal(state.retry->next_state(), principal_)}};
    result = shaped(std::move(result), Era::stateless);
    result["resultType"] = "input_required";
    reply(state.reply_to, id, result);
    maybe_idle();  // the call is over here too: a shutdown waiting for this session goes on
    return std::move(state.observed);
  }
  if (!state.cancel->cancelled()) {
    reply(state.reply_to, id, shaped(tools_.result(outcome, state.tool), state.era));
  } else if (state.route == ReplyRoute::message) {
    state.reply_to(std::string());  // the exchange hears that no answer will come
  }
  maybe_idle();
  return std::move(state.observed);
}

CallFacts McpSession::call_facts(const Json& id, const std::string& tool, const Json& params,
                                 Era era) const {
  CallFacts facts;
  if (!audit_.tracer || !audit_.tracer->exporting()) return facts;  // no span to describe
  facts.tool = tool;
  facts.request_id = dump(id);
  if (era == Era::negotiated && !assumed_) facts.session = audit_session_;
  facts.protocol_version = protocol_version_;
  if (era == Era::stateless) {
    // The era rule found `_meta` an object naming the revision.
    const auto meta = params.find("_meta");
    if (meta != params.end() && meta->is_object()) {
      const auto version = meta->find(std::string(kMetaProtocolVersion));
      if (version != meta->end() && version->is_string()) {
        facts.protocol_version = version->get<std::string>();
      }
    }
  }
  facts.transport = audit_.transport;
  facts.principal = principal_;
  return facts;
}

void McpSession::schedule_progress(const std::string& key, Json token, Send notify,
                                   std::chrono::steady_clock::time_point started, int n) {
  auto call = calls_.find(key);
  if (call == calls_.end() || !call->second.progress) return;
  auto timer = call->second.progress;
  timer->expires_at(started + std::chrono::seconds(n));
  timer->async_wait([self = shared_from_this(), timer, key, token = std::move(token),
                     notify = std::move(notify), started, n](boost::system::error_code ec) mutable {
    if (ec) return;  // cancelled: the call finished or was cancelled
    auto call = self->calls_.find(key);
    // A finished call's id may be reused by a newer call: only this call's own timer counts.
    if (call == self->calls_.end() || call->second.progress != timer ||
        call->second.cancel->cancelled()) {
      return;
    }
    notify(serialize_notification("notifications/progress",
                                  Json{{"progressToken", token},
                                       {"progress", n},
                                       {"message", "running for " + std::to_string(n) + " s"}}));
    self->schedule_progress(key, std::move(token), std::move(notify), started, n + 1);
  });
}

void McpSession::reply(const Send& out, const Json& id, const Json& result) {
  out(serialize_result(id, result));
}

void McpSession::reply_error(const Send& out, const Json& id, ErrorCode code,
                             std::string_view message) {
  out(serialize_error(id, code, message));
}

void McpSession::when_idle(std::function<void()> on_idle) {
  on_idle_ = std::move(on_idle);
  maybe_idle();
}

void McpSession::maybe_idle() {
  if (calls_.empty() && on_idle_) std::exchange(on_idle_, nullptr)();
}

}  // namespace codemode::server
