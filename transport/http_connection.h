// One connection of the HTTP transport. Internal to the transport: the listener
// (http_transport.cpp) makes one per accepted socket through serve_connection. The class is
// defined over four files, one job each:
//   http_connection.cpp         the read/write loop: header block, body, hang-up watch, the SSE
//                               stream's writer, answers and refusals, close
//   http_connection_auth.cpp    the header block's rules: repeated headers, Host, Origin, the
//                               bearer token (static or OAuth), admission, a tool's scopes
//   http_connection_mcp.cpp     /mcp (or /mcp/NAME): POST through plan_post to a session,
//                               DELETE, the answer and its progress events
//   http_connection_routes.cpp  everything outside /mcp: /healthz, /readyz, /metrics and the
//                               OAuth protected resource metadata
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "auth/resource_metadata.h"
#include "transport/http_server_state.h"

namespace codemode::server {

// One TCP connection: reads a request, answers it, reads the next (keep-alive). At most one
// request is in flight per connection (HTTP/1.1 without pipelining); while it runs, the socket is
// watched so that a client that hangs up cancels the call.
// A request is read in two steps: the header block, which is checked (repeated headers, Host,
// Origin, the bearer token) before a byte of the body is read, so an unauthenticated client never
// makes the server hold a body; then the body. A connection not admitted within a short grace
// starts waiting (State::Waiting); until admitted it has a short deadline for each header block,
// and is admitted (one of max_connections) by its first authenticated /mcp request.
// Owned by its handlers (shared_from_this); runs on its stream's strand of the server's
// io_context, and every member is touched there only.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  using State = HttpServer::State;

  HttpConnection(boost::asio::ip::tcp::socket socket, std::shared_ptr<State> state)
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
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void run();

 private:
  using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;
  using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
  using RequestHeader = boost::beast::http::request_header<>;

  // What one request/response exchange learns and decides, from its header block to its answer.
  // do_read replaces it whole before each request, so nothing one request set (its token's
  // principal and scopes, a refusal's challenge, its Accept, its trace) is seen by the next on a
  // keep-alive connection.
  struct Exchange {
    bool mcp = false;     // for /mcp (or an API's path): refusals are JSON-RPC errors
    std::size_t api = 0;  // which API's path (HttpOptions::apis) it names; 0 outside them
    bool keep_alive = false;
    bool http_10 = false;           // HTTP/1.0: no interim responses
    bool linger = false;            // drain the unread body before closing
    bool body_unread = false;       // it waits for its token's check and announced a body
    std::size_t header_fields = 0;  // fields of its header block (a trailer would add some)
    std::string principal;          // who its token names (HttpPolicy::authenticate)
    // An access token check_head leaves to the verifier (OAuth), taken by on_header.
    std::optional<std::string> token_to_verify;
    // The WWW-Authenticate challenge of the 401 check_head returns (OAuth); taken by on_header.
    std::string challenge;
    std::string presented_token;  // the token being verified, until on_token_verified
    // Its access token's scopes; unset for a static token (unscoped).
    std::optional<std::vector<std::string>> granted_scopes;
    // The `principals` entry of the form "claim:NAME=VALUE" its access token matches
    // (auth::claim_profile_of); empty: none.
    std::string claim_profile;
    // Its access token itself, kept only with options.pass_access_token (an upstream's token is
    // exchanged for it); null otherwise, and for a static token.
    std::shared_ptr<const gateway::CallerAccessToken> access_token;
    bool event_stream_ok = false;  // its Accept allows text/event-stream
    IncomingTrace trace;           // its trace headers, for its session
  };

  // The call in flight: set by dispatch, taken by on_answer (or by close, which cancels it).
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

  // A refusal with the WWW-Authenticate challenge of an OAuth 401 or 403
  // (auth/resource_metadata.h).
  struct ChallengedRefusal {
    HttpRefusal refusal;
    std::string challenge;
  };

  static std::optional<std::string_view> header(const boost::beast::http::fields& fields,
                                                std::string_view name) {
    auto it = fields.find(name);
    if (it == fields.end()) return std::nullopt;
    return std::string_view(it->value().data(), it->value().size());
  }
  static std::size_t field_count(const RequestHeader& request);

  // The API of the current request's path (exchange_.api is 0 outside an API's path).
  const HttpApi& endpoint() const { return state_->options.apis[exchange_.api]; }

  // --- the read/write loop (http_connection.cpp)
  void do_read();
  bool on_read_error(boost::system::error_code ec);
  void on_header(boost::system::error_code ec, std::size_t);
  void read_body();
  void on_read(boost::system::error_code ec, std::size_t);
  void watch_for_hangup();
  bool still_watched(std::uint64_t generation);
  void on_watch_read(std::uint64_t generation, boost::system::error_code ec);
  void on_watch_error(std::uint64_t generation, boost::system::error_code ec);
  void start_stream(Era era);
  void send_event(const std::string& message);
  void end_stream();
  void enqueue(std::string bytes);
  void write_next();
  static HttpResponse empty_response(boost::beast::http::status status);
  static HttpResponse json_response(boost::beast::http::status status, std::string body);
  void respond_text(boost::beast::http::status status, std::string body);
  HttpResponse make_refusal(const HttpRefusal& refusal, std::string_view challenge = {},
                            spdlog::level::level_enum level = spdlog::level::info);
  void refuse(const HttpRefusal& refusal, std::string_view challenge = {});
  void write(HttpResponse response);
  void on_write(bool need_eof, boost::system::error_code ec);
  void linger();
  void discard_more();
  void shut_down();
  void close();

  // --- the header block's rules (http_connection_auth.cpp)
  std::optional<HttpRefusal> check_head(const RequestHeader& request, std::string_view path);
  std::optional<HttpRefusal> authenticate_oauth(const HttpPolicy& policy,
                                                std::optional<std::string_view> authorization);
  static std::optional<std::string_view> bearer_token(std::optional<std::string_view> header);
  void verify_token(std::string token);
  void on_token_verified(auth::VerifierResult result);
  std::optional<HttpRefusal> admit();
  std::optional<ChallengedRefusal> check_tool_scopes(const Request& request) const;

  // --- /mcp (http_connection_mcp.cpp)
  void route(HttpRequest request);
  void on_post(HttpRequest request);
  void dispatch(const std::shared_ptr<McpSession>& session, Message message, ResponseFormat format,
                std::optional<std::string> new_id, Era era);
  void on_delete(const HttpRequest& request);
  void on_answer(std::uint64_t generation, const std::string& answer);
  void on_progress(std::uint64_t generation, const std::string& note);
  std::string sessionless_principal() const;

  // --- outside /mcp (http_connection_routes.cpp)
  void route_outside_mcp(std::string_view path, boost::beast::http::verb method);
  const HttpApi* metadata_of(std::string_view path) const;

  // The connection's own state, kept across its requests.
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<State> state_;
  std::string client_;  // the peer's IP address: the unit of the per-client request limit
  boost::asio::steady_timer waiting_timer_;  // until it expires, a new connection is not waiting
  std::optional<State::WaitingList::iterator> waiting_;  // set while not admitted
  bool admitted_ = false;                                // counted in State::admitted
  bool closed_ = false;
  bool peer_eof_ = false;  // the client has shut down its side of the connection
  // The hang-up watch (watch_for_hangup) of the call in flight.
  bool watching_ = false;          // it has an operation outstanding
  bool read_after_watch_ = false;  // the next request is read once it ends
  // The SSE stream's writer: a progress event and the answer never write at the same time.
  std::deque<std::string> out_queue_;  // bytes not yet written
  bool writing_ = false;
  bool end_after_queue_ = false;  // the stream ends once the queue is written
  bool stream_eof_ = false;       // the connection closes after the stream
  std::uint64_t generation_ = 0;  // numbers the calls, so a late answer finds no Pending
  std::vector<char> discard_;     // linger's buffer
  std::size_t discarded_ = 0;

  Exchange exchange_;               // the current request's; replaced by do_read
  std::optional<Pending> pending_;  // the current request's call, while it runs
};

}  // namespace codemode::server
