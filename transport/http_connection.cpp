#include "transport/http_server_state.h"

#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <deque>
#include <sstream>

#include <spdlog/spdlog.h>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "auth/resource_metadata.h"
#include "mcp/stateless_revision.h"
#include "net/ascii.h"
#include "net/escape.h"
#include "net/http_token.h"
#include "observe/metrics.h"

namespace codemode::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using HttpResponse = http::response<http::string_body>;

namespace {

using State = HttpServer::State;

std::optional<std::string_view> header(const http::fields& fields, std::string_view name) {
  auto it = fields.find(name);
  if (it == fields.end()) return std::nullopt;
  return std::string_view(it->value().data(), it->value().size());
}

// The W3C trace context headers of a request, for the session's tools/call (tracing.h). Two
// traceparent fields are invalid (W3C Trace Context, 3.2): none is taken, and a new trace starts.
// Several tracestate fields are one list, joined.
IncomingTrace trace_headers(const http::fields& fields) {
  IncomingTrace trace;
  if (fields.count("traceparent") == 1)
    trace.traceparent = std::string(*header(fields, "traceparent"));
  const auto [first, end] = fields.equal_range("tracestate");
  for (auto it = first; it != end; ++it) {
    std::string joined = trace.tracestate ? *trace.tracestate + "," : std::string();
    trace.tracestate = joined + std::string(it->value());
  }
  return trace;
}

// The longest a connection's peer may send ahead of the answer to its request in flight
// (pipelined bytes, kept for the next read). Beyond it the client is not waiting for an answer
// the way HTTP/1.1 has it wait: the call is cancelled and the connection closed.
constexpr std::size_t kMaxBytesAheadOfAnswer = std::size_t{64} * 1024;

bool is_http_parse_error(const boost::system::error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_target).category();
}

// A refusal with the WWW-Authenticate challenge of an OAuth 401 or 403 (auth/resource_metadata.h).
struct ChallengedRefusal {
  HttpRefusal refusal;
  std::string challenge;
};

// How long a new connection may go unadmitted before it counts as waiting (http_server_state.h).
constexpr std::chrono::milliseconds kWaitingGrace{200};

// One TCP connection: reads a request, answers it, reads the next (keep-alive). At most one
// request is in flight per connection (HTTP/1.1 without pipelining); while it runs, the socket is
// watched so that a client that hangs up cancels the call.
// A request is read in two steps: the header block, which is checked (repeated headers, Host,
// Origin, the bearer token) before a byte of the body is read, so an unauthenticated client never
// makes the server hold a body; then the body. A connection not admitted within kWaitingGrace
// starts waiting (State::Waiting); until admitted it has a short deadline for each header block,
// and is admitted (one of max_connections) by its first authenticated /mcp request.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket socket, std::shared_ptr<State> state)
      : stream_(std::move(socket)),
        state_(std::move(state)),
        waiting_timer_(stream_.get_executor()) {
    boost::system::error_code ec;
    client_ = stream_.socket().remote_endpoint(ec).address().to_string();
  }
  ~HttpConnection() {
    if (waiting_) state_->stop_waiting(*waiting_);
    if (admitted_) --state_->admitted;
  }

  void run() {
    // A connection joins the waiting list (and its caps) only if it is still not admitted a
    // moment after it came: a client that opens many connections at once and sends a request
    // on each (a burst of calls in flight) is not mistaken for idle sockets, while sockets that
    // stay idle are capped as before.
    waiting_timer_.expires_after(kWaitingGrace);
    waiting_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->admitted_ || self->closed_) return;
      self->waiting_ = self->state_->start_waiting(self->client_, [weak] {
        if (auto self = weak.lock()) {
          self->waiting_.reset();  // already off the list (the state's one thread runs this)
          asio::post(self->stream_.get_executor(), [self] { self->close(); });
        }
      });
    });
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&HttpConnection::do_read, shared_from_this()));
  }

 private:
  struct Pending {
    std::shared_ptr<McpSession> session;
    Json id;
    ResponseFormat format;
    std::optional<std::string> new_session_id;  // an initialize of the stateful mode
    Era era;
    std::uint64_t generation;
    bool streaming = false;  // answered as an SSE stream: progress events, then the response
    std::string principal;   // whose in-flight count it holds
  };

  // Who a request is that no stateful session carries: its token's name, else its address.
  std::string sessionless_principal() const {
    return principal_.empty() ? "client " + client_ : principal_;
  }

  void do_read() {
    if (closed_) return;
    // After the client's end of stream only bytes already buffered can hold a request; a read of
    // the socket would wait for a readiness edge that has passed.
    if (peer_eof_ && buffer_.size() == 0) return shut_down();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(state_->options.max_header_bytes));
    parser_->body_limit(state_->options.max_body_bytes);
    // Until it is admitted a connection gets the short header deadline for every header block;
    // an admitted one may idle between requests for the read timeout.
    stream_.expires_after(admitted_ ? state_->options.read_timeout
                                    : state_->options.header_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&HttpConnection::on_header, shared_from_this()));
  }

  // Answers a failed read, or ends the connection; false when the read succeeded.
  bool on_read_error(boost::system::error_code ec) {
    if (!ec) return false;
    if (ec == http::error::end_of_stream || ec == beast::error::timeout) {
      shut_down();
      return true;
    }
    keep_alive_ = false;  // every refusal below ends the connection: the parser is spent
    mcp_ = true;
    if (ec == http::error::body_limit) {
      linger_ = true;
      refuse({413, "payload too large: the body exceeds " +
                       std::to_string(state_->options.max_body_bytes) + " bytes"});
    } else if (ec == http::error::header_limit) {
      refuse({431, "request header fields too large: the header exceeds " +
                       std::to_string(state_->options.max_header_bytes) + " bytes"});
    } else if (is_http_parse_error(ec)) {
      refuse({400, "bad request: malformed HTTP request"});
    } else {
      close();
    }
    return true;
  }

  void on_header(boost::system::error_code ec, std::size_t) {
    if (on_read_error(ec)) return;
    const auto& request = parser_->get();
    const std::string_view target(request.target().data(), request.target().size());
    const std::string_view path = target.substr(0, target.find('?'));  // no query is consulted
    const std::optional<std::size_t> api = state_->api_at(path);
    mcp_ = api.has_value();
    api_ = api.value_or(0);
    spdlog::debug("http {} {} from {}", std::string(request.method_string()),
                  net::escape_text(path), client_);
    // A refusal on the header block leaves the body, if any, unread: the connection ends after
    // the answer, and what the client still sends is discarded (bounded) so that closing does
    // not reset the connection before the client has read the answer.
    const bool body_unread = !parser_->is_done();
    keep_alive_ = request.keep_alive() && !body_unread;
    if (auto refusal = check_head(request, path)) {
      linger_ = body_unread;
      return refuse(*refusal, std::exchange(challenge_, {}));
    }
    if (!mcp_) {
      // Nothing outside /mcp takes a body, and nothing there needs a token: a body is never
      // read (a client without a token must not make the server hold one). The answer ends
      // the connection when one was announced, and what follows is discarded.
      linger_ = body_unread;
      return route_outside_mcp(path, request.method());
    }
    if (token_to_verify_) {
      body_unread_ = body_unread;
      return verify_token(std::move(*std::exchange(token_to_verify_, std::nullopt)));
    }
    read_body();
  }

  void read_body() {
    header_fields_ = field_count(parser_->get());
    stream_.expires_after(state_->options.read_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&HttpConnection::on_read, shared_from_this()));
  }

  // An OAuth access token is checked by the verifier (auth/token_verifier.h), which may wait for
  // the issuer's keys; the connection reads nothing meanwhile and resumes on its own strand.
  void verify_token(std::string token) {
    if (state_->options.pass_access_token) presented_token_ = token;
    endpoint().verifier->verify(
        std::move(token), [self = shared_from_this()](auth::VerifierResult result) {
          asio::post(self->stream_.get_executor(), [self, result = std::move(result)]() mutable {
            self->on_token_verified(std::move(result));
          });
        });
  }

  void on_token_verified(auth::VerifierResult result) {
    std::string presented = std::exchange(presented_token_, {});
    if (closed_) return;
    if (auto* refused = std::get_if<auth::VerifierRefusal>(&result)) {
      linger_ = body_unread_;
      std::string challenge;
      if (refused->status == 401) {
        challenge = auth::challenge_unauthorized(*endpoint().oauth, auth::Presented::refused_token);
      }
      return refuse({refused->status, std::move(refused->message)}, challenge);
    }
    auto& token = std::get<auth::VerifiedToken>(result);
    spdlog::info("http: access token of {} from {}", token.principal, client_);
    principal_ = std::move(token.principal);
    granted_scopes_ = std::move(token.scopes);
    claim_profile_ = auth::claim_profile_of(token.claims, endpoint().claim_profiles);
    if (!presented.empty()) {
      access_token_ = std::make_shared<const gateway::CallerAccessToken>(
          gateway::CallerAccessToken{std::move(presented), token.expires_at});
    }
    if (auto refusal = admit()) {
      linger_ = body_unread_;
      return refuse(*refusal);
    }
    read_body();
  }

  // `Authorization: Bearer TOKEN`: the token, or nullopt.
  static std::optional<std::string_view> bearer_token(std::optional<std::string_view> header) {
    if (!header) return std::nullopt;
    const std::string_view value = net::trim_ows(*header);
    if (!net::istarts_with(value, "bearer ")) return std::nullopt;
    const std::string_view token = net::trim_ows(value.substr(7));
    if (token.empty()) return std::nullopt;
    return token;
  }

  // With OAuth: a static token names its principal at once; any other bearer token is checked as
  // a JWT access token (verify_token); no token at all is a 401 that points to the metadata.
  std::optional<HttpRefusal> authenticate_oauth(const HttpPolicy& policy,
                                                std::optional<std::string_view> authorization) {
    if (policy.requires_token()) {
      auto authentication = policy.authenticate(authorization);
      if (!authentication.refusal) {
        principal_ = std::move(authentication.principal);
        return admit();
      }
    }
    const auto token = bearer_token(authorization);
    if (!token) {
      challenge_ = auth::challenge_unauthorized(*endpoint().oauth, auth::Presented::no_token);
      return HttpRefusal{401, "unauthorized: a valid bearer token is required"};
    }
    token_to_verify_ = std::string(*token);
    return std::nullopt;
  }

  // A tools/call whose tool needs scopes the caller's access token lacks: 403 naming them all.
  // Static tokens carry no scopes and are not limited (granted_scopes_ unset).
  std::optional<ChallengedRefusal> check_tool_scopes(const Request& request) const {
    if (!granted_scopes_ || request.method != "tools/call" || !request.params.is_object()) {
      return std::nullopt;
    }
    const auto name = request.params.find("name");
    if (name == request.params.end() || !name->is_string()) return std::nullopt;
    const auto& scopes = endpoint().oauth->tool_scopes;
    const auto needed = scopes.find(name->get_ref<const std::string&>());
    if (needed == scopes.end()) return std::nullopt;
    const auto missing = auth::missing_scopes(needed->second, *granted_scopes_);
    if (missing.empty()) return std::nullopt;
    std::string list;
    for (const std::string& scope : missing) list += (list.empty() ? "" : " ") + scope;
    return ChallengedRefusal{
        {403, "insufficient_scope: the tool " + needed->first + " needs scope " + list},
        auth::challenge_insufficient_scope(*endpoint().oauth, missing)};
  }

  // The rules that need only the header block, in order: repeated headers, Host, Origin, then
  // for /mcp the bearer token and a place among the admitted connections.
  std::optional<HttpRefusal> check_head(const http::request_header<>& request,
                                        std::string_view path) {
    std::vector<std::string_view> names;
    for (const auto& field : request) {
      names.emplace_back(field.name_string().data(), field.name_string().size());
    }
    if (auto refusal = check_repeated_headers(names)) return refusal;
    const HttpPolicy& policy = *state_->policy;
    if (auto refusal = policy.check_host(header(request, "Host"))) return refusal;
    if (auto refusal = policy.check_origin(header(request, "Origin"))) return refusal;
    if (path == "/metrics" && state_->options.metrics) {
      // What the server has done is for its operators: the same token as /mcp. With OAuth that
      // is a static token (an access token names a user, not an operator): without static
      // tokens, an OAuth server (which may bind any address) keeps /metrics shut.
      if (endpoint().verifier && !policy.requires_token()) {
        return HttpRefusal{401, "unauthorized: /metrics needs a static token (http.tokens)"};
      }
      return policy.authenticate(header(request, "Authorization")).refusal;
    }
    if (!mcp_) return std::nullopt;
    granted_scopes_.reset();
    claim_profile_.clear();
    access_token_.reset();
    if (endpoint().verifier) return authenticate_oauth(policy, header(request, "Authorization"));
    auto authentication = policy.authenticate(header(request, "Authorization"));
    if (authentication.refusal) return authentication.refusal;
    principal_ = std::move(authentication.principal);
    return admit();
  }

  // A place among the admitted connections, for a request that passed authentication.
  std::optional<HttpRefusal> admit() {
    if (!admitted_) {
      if (state_->admitted >= state_->options.max_connections) {
        keep_alive_ = false;
        return HttpRefusal{503, "unavailable: too many connections"};
      }
      admitted_ = true;
      ++state_->admitted;
      waiting_timer_.cancel();
      if (waiting_) state_->stop_waiting(*std::exchange(waiting_, std::nullopt));
    }
    return std::nullopt;
  }

  void on_read(boost::system::error_code ec, std::size_t) {
    if (on_read_error(ec)) return;
    // Beast adds a chunked body's trailer fields to the request, after check_head looked at
    // the header block: a trailer could carry a second Host or a session id that a proxy
    // routing on the header block never saw. A request with trailers is refused.
    if (field_count(parser_->get()) != header_fields_) {
      keep_alive_ = false;
      return refuse({400, "bad request: trailer fields are not accepted"});
    }
    route(parser_->release());
  }

  static std::size_t field_count(const http::request_header<>& request) {
    return static_cast<std::size_t>(std::distance(request.begin(), request.end()));
  }

  void route_outside_mcp(std::string_view path, http::verb method) {
    keep_alive_ = keep_alive_ && !linger_;
    const bool get = method == http::verb::get;
    if (path == "/healthz" && get) return respond_text(http::status::ok, "ok\n");
    if (path == "/metrics" && get && state_->options.metrics) {
      HttpResponse response(http::status::ok, 11);
      response.set(http::field::content_type, Metrics::kContentType);
      response.body() = state_->options.metrics();
      return write(std::move(response));
    }
    if (const HttpApi* api = get ? metadata_of(path) : nullptr) {
      HttpResponse response(http::status::ok, 11);
      response.set(http::field::content_type, "application/json");
      response.body() = auth::resource_metadata_document(*api->oauth);
      return write(std::move(response));
    }
    if (path == "/mcp") {  // several APIs, none at /mcp: say where they are
      std::string paths;
      for (const auto& api : state_->options.apis) paths += (paths.empty() ? "" : ", ") + api.path;
      return respond_text(
          http::status::not_found,
          "not found: this server serves several APIs, each at its own path: " + paths + "\n");
    }
    if (path == "/readyz" && get) {
      if (state_->draining) return respond_text(http::status::service_unavailable, "draining\n");
      return respond_text(http::status::ok, "ready\n");
    }
    return respond_text(http::status::not_found, "not found\n");
  }

  // RFC 9728: the API whose metadata `path` asks for, or null. Each API's is at the well-known
  // path suffixed with its own path (the form clients try first, e.g.
  // /.well-known/oauth-protected-resource/mcp) and with its resource's path; the one API's also
  // at the bare well-known path.
  const HttpApi* metadata_of(std::string_view path) const {
    static constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";
    const auto& apis = state_->options.apis;
    for (const HttpApi& api : apis) {
      if (!api.oauth) continue;
      if (path == std::string(kWellKnown) + api.path) return &api;
      if (path == kWellKnown && apis.size() == 1) return &api;
      const std::string url = auth::resource_metadata_url(api.oauth->resource);
      const std::size_t start = url.find('/', url.find("://") + 3);
      if (start != std::string::npos && path == std::string_view(url).substr(start)) return &api;
    }
    return nullptr;
  }

  // The API of the current request's path (api_ is 0 outside an API's path).
  const HttpApi& endpoint() const { return state_->options.apis[api_]; }

  // A request whose header block passed check_head, with its body.
  void route(http::request<http::string_body> request) {
    keep_alive_ = request.keep_alive();
    http_10_ = request.version() < 11;
    if (state_->draining) {
      keep_alive_ = false;
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

  void on_post(http::request<http::string_body> request) {
    if (!is_json_content_type(header(request, "Content-Type"))) {
      return refuse({415, "unsupported media type: Content-Type must be application/json"});
    }
    const ResponseFormat format = choose_format(header(request, "Accept"));
    event_stream_ok_ = accepts_event_stream(header(request, "Accept"));
    if (format == ResponseFormat::none) {
      return refuse(
          {406, "not acceptable: Accept must allow application/json or text/event-stream"});
    }
    Message message = parse_message(request.body());
    trace_ = trace_headers(request);
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
        return dispatch(
            state_->make_session(asio::make_strand(state_->io), sessionless_principal(), api_),
            std::move(message), format, std::nullopt, Era::stateless);
      }
      case PostRoute::new_session: {
        std::string id = new_session_id();
        // Without tokens, each session is a principal of its own (named by a count: the id is
        // the session's only credential, and principals are logged).
        std::string principal = principal_.empty()
                                    ? "session-" + std::to_string(++state_->sessions_started)
                                    : principal_;
        return dispatch(
            state_->make_session(asio::make_strand(state_->io), std::move(principal), api_),
            std::move(message), format, std::move(id), Era::negotiated);
      }
      case PostRoute::named_session: {
        auto session = state_->sessions.find(*session_id, principal_, api_);
        if (!session) return refuse({404, "not found: no session with this Mcp-Session-Id"});
        if (auto refusal = check_protocol_version(version)) return refuse(*refusal);
        return dispatch(session, std::move(message), format, std::nullopt, Era::negotiated);
      }
      case PostRoute::fresh_session: {
        auto session =
            state_->make_session(asio::make_strand(state_->io), sessionless_principal(), api_);
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
  void dispatch(const std::shared_ptr<McpSession>& session, Message message, ResponseFormat format,
                std::optional<std::string> new_id, Era era) {
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
    const bool streaming = event_stream_ok_ && rpc_request->method == "tools/call" &&
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
    const bool can_stream = event_stream_ok_ && rpc_request->method == "tools/call";
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
                context = RequestContext{std::exchange(trace_, {}), granted_scopes_, claim_profile_,
                                         can_stream, access_token_}]() mutable {
                 session->handle(std::move(message), reply_to, notify, context);
               });
    watch_for_hangup();
  }

  void on_delete(const http::request<http::string_body>& request) {
    const auto session_id = header(request, "Mcp-Session-Id");
    if (!session_id) return refuse({400, "bad request: Mcp-Session-Id header is required"});
    // Calls still running for the session finish and answer; only new requests are refused.
    if (!state_->sessions.remove(*session_id, principal_, api_)) {
      return refuse({404, "not found: no session with this Mcp-Session-Id"});
    }
    spdlog::info("http session ended by the client ({} left)", state_->sessions.size());
    write(empty_response(http::status::no_content));
  }

  void on_answer(std::uint64_t generation, const std::string& answer) {
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
        SessionOwner owner{principal_, principal_ + " from " + client_, api_};
        if (state_->sessions.add(*pending.new_session_id, pending.session, std::move(owner))) {
          spdlog::info("http session table: a least recently used session was ended for room");
        }
        response.set("Mcp-Session-Id", *pending.new_session_id);
        spdlog::info("http session started ({} live)", state_->sessions.size());
      }
    }
    write(std::move(response));
  }

  void on_progress(std::uint64_t generation, const std::string& note) {
    if (closed_ || !pending_ || pending_->generation != generation) return;
    if (!pending_->streaming) {
      pending_->streaming = true;
      start_stream(pending_->era);
    }
    send_event(note);
  }

  // --- the SSE stream of a request with progress: raw chunked HTTP/1.1 through a queue, so
  // that a progress event and the answer never write at the same time ----------------------

  void start_stream(Era era) {
    http::response<http::empty_body> head(http::status::ok, 11);
    head.set(http::field::server, "codemode-mcp");
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-cache");
    if (era == Era::stateless) head.set("X-Accel-Buffering", "no");
    head.keep_alive(keep_alive_ && !state_->draining);
    head.chunked(true);
    stream_eof_ = head.need_eof();
    std::ostringstream out;
    out << head.base();
    enqueue(out.str());
  }

  void send_event(const std::string& message) {
    const std::string event = "event: message\ndata: " + message + "\n\n";
    std::ostringstream chunk;
    chunk << std::hex << event.size() << "\r\n" << event << "\r\n";
    enqueue(chunk.str());
  }

  void end_stream() {
    end_after_queue_ = true;
    enqueue("0\r\n\r\n");
  }

  void enqueue(std::string bytes) {
    out_queue_.push_back(std::move(bytes));
    if (!writing_) write_next();
  }

  void write_next() {
    if (closed_) return;
    if (out_queue_.empty()) {
      writing_ = false;
      if (std::exchange(end_after_queue_, false)) on_write(stream_eof_, {});
      return;
    }
    writing_ = true;
    stream_.expires_after(state_->options.read_timeout);
    asio::async_write(stream_, asio::buffer(out_queue_.front()),
                      [self = shared_from_this()](boost::system::error_code ec, std::size_t) {
                        self->stream_.expires_never();
                        if (ec || self->closed_) {
                          self->writing_ = false;
                          self->out_queue_.clear();
                          self->end_after_queue_ = false;
                          return self->close();
                        }
                        self->out_queue_.pop_front();
                        self->write_next();
                      });
  }

  // While a request waits for its answer the socket is still read, so that a client that hangs
  // up cancels the call (the 2026-07-28 revision requires it; for 2025 it frees the sandbox):
  //   - bytes the client sends ahead (pipelining, a stray CRLF) are kept for the next request,
  //     up to kMaxBytesAheadOfAnswer, and the watch goes on;
  //   - a reset or a read error means it is gone: cancel;
  //   - end of stream is either a client that closed, or one that only shut down its write side
  //     after its request (`nc -N`, some HTTP/1.0 clients) and still waits for the answer. Only
  //     a write tells them apart, so an HTTP/1.1 client is sent an interim `100 Continue`
  //     (every HTTP/1.1 client must accept one) and a reset in reply cancels; an event stream
  //     already writes progress events, and an HTTP/1.0 client, to which no interim response may
  //     go, is taken to wait and is answered.
  // The watch runs beside the answer's write (a stream reads and writes at once) and stops with
  // the request: on_write waits for it before reading the next request.
  void watch_for_hangup() {
    if (watching_ || closed_) return;
    if (buffer_.size() > kMaxBytesAheadOfAnswer) {
      spdlog::info("http {}: {} bytes sent ahead of an answer; closing", client_, buffer_.size());
      return close();
    }
    watching_ = true;
    stream_.expires_never();
    if (peer_eof_) {
      stream_.socket().async_wait(
          tcp::socket::wait_error,
          [self = shared_from_this(), generation = generation_](boost::system::error_code ec) {
            self->watching_ = false;
            self->on_watch_error(generation, ec);
          });
      return;
    }
    stream_.async_read_some(buffer_.prepare(4096),
                            [self = shared_from_this(), generation = generation_](
                                boost::system::error_code ec, std::size_t n) {
                              self->watching_ = false;
                              self->buffer_.commit(n);
                              self->on_watch_read(generation, ec);
                            });
  }

  // False once the request the watch was started for is answered (or gone): the next read
  // waits for the watch to end, and is started here.
  bool still_watched(std::uint64_t generation) {
    if (!closed_ && pending_ && pending_->generation == generation) return true;
    if (std::exchange(read_after_watch_, false)) do_read();
    return false;
  }

  void on_watch_read(std::uint64_t generation, boost::system::error_code ec) {
    if (ec == asio::error::eof) peer_eof_ = true;  // also when the answer went out meanwhile
    if (!still_watched(generation)) return;
    if (!ec) return watch_for_hangup();
    if (ec != asio::error::eof) return close();  // reset, or another failure: nobody is there
    if (http_10_) return;  // no interim response may go to it; it gets the answer
    if (!pending_->streaming) {
      // The one write while the request is in flight (a stream writes through its queue); it
      // fits any empty send buffer, so a non-blocking send takes it whole.
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      const auto sent = ::send(stream_.socket().native_handle(), kContinue.data(), kContinue.size(),
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return close();
    }
    watch_for_hangup();
  }

  // Woken by an error or hang-up condition on the socket (or urgent data): a reset in reply to
  // our write means the client is gone; otherwise it still waits and the watch goes on.
  void on_watch_error(std::uint64_t generation, boost::system::error_code ec) {
    if (!still_watched(generation)) return;
    if (ec) return close();
    int error = 0;
    socklen_t size = sizeof error;
    ::getsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_ERROR, &error, &size);
    tcp_info info{};
    socklen_t info_size = sizeof info;
    const bool closed_by_peer = ::getsockopt(stream_.socket().native_handle(), IPPROTO_TCP,
                                             TCP_INFO, &info, &info_size) == 0 &&
                                info.tcpi_state == TCP_CLOSE;
    if (error != 0 || closed_by_peer) return close();
    watch_for_hangup();
  }

  // --- answers ----------------------------------------------------------------------------

  HttpResponse empty_response(http::status status) {
    HttpResponse response(status, 11);
    return response;
  }

  HttpResponse json_response(http::status status, std::string body) {
    HttpResponse response(status, 11);
    response.set(http::field::content_type, "application/json");
    response.body() = std::move(body);
    return response;
  }

  void respond_text(http::status status, std::string body) {
    HttpResponse response(status, 11);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = std::move(body);
    write(std::move(response));
  }

  // On /mcp a refusal is a JSON-RPC error without an id (the transport spec allows one in the
  // body); elsewhere plain text.
  HttpResponse make_refusal(const HttpRefusal& refusal, std::string_view challenge = {},
                            spdlog::level::level_enum level = spdlog::level::info) {
    spdlog::log(level, "http {} from {}: {}", refusal.status, client_,
                net::escape_text(refusal.message));
    const auto status = static_cast<http::status>(refusal.status);
    if (!mcp_) {
      HttpResponse response(status, 11);
      response.set(http::field::content_type, "text/plain; charset=utf-8");
      response.body() = refusal.message + "\n";
      return response;
    }
    HttpResponse response = json_response(
        status, serialize_error(nullptr, ErrorCode::transport_refused, refusal.message));
    if (!challenge.empty()) {
      response.set(http::field::www_authenticate, challenge);
    } else if (refusal.status == 401) {
      response.set(http::field::www_authenticate, "Bearer");
    }
    if (refusal.status == 429) response.set(http::field::retry_after, "1");
    return response;
  }

  void refuse(const HttpRefusal& refusal, std::string_view challenge = {}) {
    write(make_refusal(refusal, challenge));
  }

  void write(HttpResponse response) {
    response.set(http::field::server, "codemode-mcp");
    response.keep_alive(keep_alive_ && !state_->draining);
    response.prepare_payload();
    auto message = std::make_shared<HttpResponse>(std::move(response));
    stream_.expires_after(state_->options.read_timeout);
    http::async_write(
        stream_, *message,
        [self = shared_from_this(), message](boost::system::error_code ec, std::size_t) {
          self->on_write(message->need_eof(), ec);
        });
  }

  void on_write(bool need_eof, boost::system::error_code ec) {
    if (ec) return close();
    if (watching_) {
      // The watch of the request just answered is the only operation left: end it, and read the
      // next request (if any) once it has.
      read_after_watch_ = !need_eof;
      boost::system::error_code ignored;
      stream_.socket().cancel(ignored);
      if (!need_eof) return;
    }
    if (!need_eof) return do_read();
    if (linger_) return linger();
    shut_down();
  }

  // After refusing a body mid-upload, read and discard what the client still sends (bounded),
  // so that closing does not reset the connection before it has read our answer.
  void linger() {
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.expires_after(std::chrono::seconds(5));
    discard_more();
  }
  void discard_more() {
    discard_.resize(std::size_t{64} * 1024);
    stream_.async_read_some(
        asio::buffer(discard_),
        [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
          self->discarded_ += n;
          if (ec || self->discarded_ > 4 * self->state_->options.max_body_bytes) {
            return self->close();
          }
          self->discard_more();
        });
  }

  void shut_down() {
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    closed_ = true;
  }

  void close() {
    closed_ = true;
    if (pending_) {  // a read or write failed while a call ran: nobody reads its answer now
      state_->request_done(pending_->principal);
      asio::post(pending_->session->executor(),
                 [session = pending_->session, id = pending_->id] { session->cancel(id); });
      pending_.reset();
    }
    boost::system::error_code ec;
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::shared_ptr<State> state_;
  std::string client_;  // the peer's IP address: the unit of the per-client request limit
  asio::steady_timer waiting_timer_;  // until it expires, a new connection is not yet waiting
  std::optional<State::WaitingList::iterator> waiting_;  // set while not admitted
  bool admitted_ = false;                                // counted in State::admitted
  std::string principal_;  // who the current request's token names (HttpPolicy::authenticate)
  bool http_10_ = false;   // the current request is HTTP/1.0: no interim responses
  bool watching_ = false;  // watch_for_hangup has an operation outstanding
  bool read_after_watch_ = false;  // the next request is read once the watch ends
  bool peer_eof_ = false;          // the client has shut down its side of the connection
  bool keep_alive_ = false;
  bool mcp_ = false;          // the current request is for /mcp: refusals are JSON-RPC errors
  std::size_t api_ = 0;       // which API's path (HttpOptions::apis) the current request names
  bool linger_ = false;       // drain the unread body before closing
  bool body_unread_ = false;  // the request waiting for its token's check announced a body
  // An access token check_head leaves to the verifier (OAuth), taken by on_header.
  std::optional<std::string> token_to_verify_;
  // The WWW-Authenticate challenge of the 401 check_head returns (OAuth); taken by on_header.
  std::string challenge_;
  // The scopes of the current request's access token; unset for a static token (unscoped).
  std::optional<std::vector<std::string>> granted_scopes_;
  // The `principals` entry of the form "claim:NAME=VALUE" the current request's access token
  // matches (auth::claim_profile_of); empty: none.
  std::string claim_profile_;
  // The current request's access token itself, kept only with options.pass_access_token (an
  // upstream's token is exchanged for it); null otherwise, and for a static token.
  std::shared_ptr<const gateway::CallerAccessToken> access_token_;
  std::string presented_token_;    // the token being verified, until on_token_verified
  std::size_t header_fields_ = 0;  // fields of the /mcp request's header block (no trailers)
  bool closed_ = false;
  bool event_stream_ok_ = false;  // the current request's Accept allows text/event-stream
  IncomingTrace trace_;           // the current request's trace headers, for its session
  std::optional<Pending> pending_;
  std::deque<std::string> out_queue_;  // the stream's bytes not yet written
  bool writing_ = false;
  bool end_after_queue_ = false;  // the stream ends once the queue is written
  bool stream_eof_ = false;       // the connection closes after the stream
  std::uint64_t generation_ = 0;
  std::vector<char> discard_;
  std::size_t discarded_ = 0;
};

}  // namespace

void serve_connection(tcp::socket socket, std::shared_ptr<HttpServer::State> state) {
  std::make_shared<HttpConnection>(std::move(socket), std::move(state))->run();
}

}  // namespace codemode::server
