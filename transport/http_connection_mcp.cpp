// HttpConnection on /mcp (or an API's /mcp/NAME; http_connection.h): a POST goes through
// plan_post (http_routing.h) to a session, a DELETE ends one, and a call's answer (and its
// progress events, as an SSE stream) comes back here.
#include "transport/http_connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "mcp/stateless_revision.h"
#include "net/escape.h"
#include "transport/http_routing.h"

namespace codemode::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

// The W3C trace context headers of a request, for the session's tools/call (tracing.h). Two
// traceparent fields are invalid (W3C Trace Context, 3.2): none is taken, and a new trace starts.
// Several tracestate fields are one list, joined.
IncomingTrace trace_headers(const http::fields& fields) {
  IncomingTrace trace;
  if (fields.count("traceparent") == 1) {
    const auto it = fields.find("traceparent");
    trace.traceparent = std::string(it->value());
  }
  const auto [first, end] = fields.equal_range("tracestate");
  for (auto it = first; it != end; ++it) {
    std::string joined = trace.tracestate ? *trace.tracestate + "," : std::string();
    trace.tracestate = joined + std::string(it->value());
  }
  return trace;
}

}  // namespace

// A request whose header block passed check_head, with its body.
void HttpConnection::route(http::request<http::string_body> request) {
  exchange_.keep_alive = request.keep_alive();
  exchange_.http_10 = request.version() < 11;
  if (state_->draining) {
    exchange_.keep_alive = false;
    return refuse({503, "unavailable: the server is shutting down"});
  }
  // 2026-07-28 has no sessions: a DELETE that names that revision ends nothing.
  const auto version = header(request, "MCP-Protocol-Version");
  const bool stateless =
      state_->options.mode == HttpMode::stateless || (version && is_stateless_version(*version));
  switch (request.method()) {
    case http::verb::post:
      return on_post(std::move(request));
    case http::verb::delete_:
      if (!stateless) return on_delete(request);
      [[fallthrough]];
    default: {
      // Every SDK client tries the optional GET stream once and goes on without it: for a GET
      // the refusal is normal and logged only at debug.
      HttpResponse response = make_refusal(
          {405, "method not allowed: /mcp takes POST" + std::string(stateless ? "" : ", DELETE")},
          {}, request.method() == http::verb::get ? spdlog::level::debug : spdlog::level::info);
      response.set(http::field::allow, stateless ? "POST" : "POST, DELETE");
      return write(std::move(response));
    }
  }
}

void HttpConnection::on_post(http::request<http::string_body> request) {
  if (!is_json_content_type(header(request, "Content-Type"))) {
    return refuse({415, "unsupported media type: Content-Type must be application/json"});
  }
  const ResponseFormat format = choose_format(header(request, "Accept"));
  exchange_.event_stream_ok = accepts_event_stream(header(request, "Accept"));
  if (format == ResponseFormat::none) {
    return refuse({406, "not acceptable: Accept must allow application/json or text/event-stream"});
  }
  Message message = parse_message(request.body());
  exchange_.trace = trace_headers(request);
  if (auto* error = std::get_if<JsonRpcError>(&message)) {
    return write(json_response(http::status::bad_request, serialize_error(*error)));
  }
  const auto* rpc_request = std::get_if<Request>(&message);
  if (rpc_request) {
    if (auto refused = check_tool_scopes(*rpc_request)) {
      return refuse(refused->refusal, refused->challenge);
    }
  }
  const auto version = header(request, "MCP-Protocol-Version");
  const auto session_id = header(request, "Mcp-Session-Id");
  const PostPlan plan = plan_post(PostFacts{
      .mode = state_->options.mode,
      .is_request = rpc_request != nullptr,
      .initialize = rpc_request && rpc_request->method == "initialize",
      .claims_revision = rpc_request && claims_stateless_revision(rpc_request->params),
      .has_session_id = session_id.has_value(),
      .version = version,
  });
  switch (plan.route) {
    case PostRoute::refused:
      return refuse(*plan.refusal);
    case PostRoute::accepted:
      return write(empty_response(http::status::accepted));
    case PostRoute::stateless_revision: {
      const RevisionHeaders headers{version, header(request, "Mcp-Method"),
                                    header(request, "Mcp-Name")};
      if (auto refusal = check_stateless_request(*rpc_request, headers)) {
        spdlog::info("http {} from {}: {}", http_status_of(*refusal), client_,
                     net::escape_text(refusal->message));
        return write(json_response(static_cast<http::status>(http_status_of(*refusal)),
                                   serialize_error(*refusal)));
      }
      // A fresh session serves the one request and is dropped.
      return dispatch(state_->make_session(asio::make_strand(state_->io), sessionless_principal(),
                                           exchange_.api),
                      std::move(message), format, std::nullopt, Era::stateless);
    }
    case PostRoute::new_session: {
      std::string id = new_session_id();
      // Without tokens, each session is a principal of its own (named by a count: the id is
      // the session's only credential, and principals are logged).
      std::string principal = exchange_.principal.empty()
                                  ? "session-" + std::to_string(++state_->sessions_started)
                                  : exchange_.principal;
      return dispatch(
          state_->make_session(asio::make_strand(state_->io), std::move(principal), exchange_.api),
          std::move(message), format, std::move(id), Era::negotiated);
    }
    case PostRoute::named_session: {
      auto session = state_->sessions.find(*session_id, exchange_.principal, exchange_.api);
      if (!session) return refuse({404, "not found: no session with this Mcp-Session-Id"});
      if (auto refusal = check_protocol_version(version)) return refuse(*refusal);
      return dispatch(session, std::move(message), format, std::nullopt, Era::negotiated);
    }
    case PostRoute::fresh_session: {
      auto session = state_->make_session(asio::make_strand(state_->io), sessionless_principal(),
                                          exchange_.api);
      // Fresh and not yet shared with any other executor: set up before the first post.
      if (!rpc_request || rpc_request->method != "initialize") {
        session->assume_initialized(std::string(version.value_or(kDefaultHttpProtocolVersion)));
      }
      return dispatch(session, std::move(message), format, std::nullopt, Era::negotiated);
    }
  }
}

// Hands a message that passed the transport's checks to `session`; a request's answer comes
// back to on_answer on this connection.
void HttpConnection::dispatch(const std::shared_ptr<McpSession>& session, Message message,
                              ResponseFormat format, std::optional<std::string> new_id, Era era) {
  const auto* rpc_request = std::get_if<Request>(&message);
  if (!rpc_request) {  // a notification or a response: accepted, nothing to answer
    asio::post(session->executor(), [session, message = std::move(message)]() mutable {
      session->handle(std::move(message), [](const std::string&) {});
    });
    return write(empty_response(http::status::accepted));
  }

  auto& by_principal = state_->in_flight_by_principal[session->principal()];
  if (by_principal >= state_->options.max_requests_per_principal) {
    if (by_principal == 0) state_->in_flight_by_principal.erase(session->principal());
    return refuse({429, "too many requests: " + std::to_string(by_principal) +
                            " calls of this client are in flight or queued; retry when one has "
                            "finished"});
  }
  ++by_principal;
  ++state_->in_flight;
  // A tools/call with a progress token, from a client that takes event streams, is answered
  // as a stream at once: its progress notifications, then its response.
  const bool streaming = exchange_.event_stream_ok && rpc_request->method == "tools/call" &&
                         progress_token(rpc_request->params).has_value();
  pending_ = Pending{session, rpc_request->id, format,    std::move(new_id),
                     era,     ++generation_,   streaming, session->principal()};
  McpSession::Send reply_to = [self = shared_from_this(),
                               generation = generation_](std::string answer) {
    asio::post(self->stream_.get_executor(), [self, generation, answer = std::move(answer)] {
      self->on_answer(generation, answer);
    });
  };
  // A call's messages to the client (progress, an approval's question) need an event stream;
  // one that has none yet starts it with its first message.
  const bool can_stream = exchange_.event_stream_ok && rpc_request->method == "tools/call";
  McpSession::Send notify = [](const std::string&) {};  // no stream: nowhere to send them
  if (can_stream) {
    notify = [self = shared_from_this(), generation = generation_](std::string note) {
      asio::post(self->stream_.get_executor(), [self, generation, note = std::move(note)] {
        self->on_progress(generation, note);
      });
    };
    if (streaming) start_stream(era);
  }
  asio::post(session->executor(),
             [session, message = std::move(message), reply_to = std::move(reply_to),
              notify = std::move(notify),
              context = RequestContext{std::exchange(exchange_.trace, {}), exchange_.granted_scopes,
                                       exchange_.claim_profile, can_stream,
                                       exchange_.access_token}]() mutable {
               session->handle(std::move(message), reply_to, notify, context);
             });
  watch_for_hangup();
}

void HttpConnection::on_delete(const http::request<http::string_body>& request) {
  const auto session_id = header(request, "Mcp-Session-Id");
  if (!session_id) return refuse({400, "bad request: Mcp-Session-Id header is required"});
  // Calls still running for the session finish and answer; only new requests are refused.
  if (!state_->sessions.remove(*session_id, exchange_.principal, exchange_.api)) {
    return refuse({404, "not found: no session with this Mcp-Session-Id"});
  }
  spdlog::info("http session ended by the client ({} left)", state_->sessions.size());
  write(empty_response(http::status::no_content));
}

void HttpConnection::on_answer(std::uint64_t generation, const std::string& answer) {
  if (closed_ || !pending_ || pending_->generation != generation) return;  // the client left
  Pending pending = std::move(*pending_);
  pending_.reset();
  state_->request_done(pending.principal);
  if (pending.streaming) {
    if (!answer.empty()) send_event(answer);  // empty: cancelled, the stream just ends
    return end_stream();
  }
  if (answer.empty()) return write(empty_response(http::status::no_content));  // cancelled
  HttpResponse response;
  if (pending.format == ResponseFormat::event_stream) {
    response = HttpResponse(http::status::ok, 11);
    response.set(http::field::content_type, "text/event-stream");
    response.set(http::field::cache_control, "no-cache");
    if (pending.era == Era::stateless) response.set("X-Accel-Buffering", "no");
    response.body() = "event: message\ndata: " + answer + "\n\n";
  } else {
    response = json_response(http::status::ok, answer);
  }
  if (pending.new_session_id) {
    const Json parsed = Json::parse(answer, nullptr, false);
    if (parsed.is_object() && parsed.contains("result")) {
      // Counted per principal and address: with one token shared by several clients (or none
      // configured), a client that opens sessions in a loop evicts only those from its own
      // address. (Behind a proxy the proxy is the address; a token per client separates them.)
      SessionOwner owner{exchange_.principal, exchange_.principal + " from " + client_,
                         exchange_.api};
      if (state_->sessions.add(*pending.new_session_id, pending.session, std::move(owner))) {
        spdlog::info("http session table: a least recently used session was ended for room");
      }
      response.set("Mcp-Session-Id", *pending.new_session_id);
      spdlog::info("http session started ({} live)", state_->sessions.size());
    }
  }
  write(std::move(response));
}

void HttpConnection::on_progress(std::uint64_t generation, const std::string& note) {
  if (closed_ || !pending_ || pending_->generation != generation) return;
  if (!pending_->streaming) {
    pending_->streaming = true;
    start_stream(pending_->era);
  }
  send_event(note);
}

// Who a request is that no stateful session carries: its token's name, else its address.
std::string HttpConnection::sessionless_principal() const {
  return exchange_.principal.empty() ? "client " + client_ : exchange_.principal;
}
}  // namespace codemode::server
