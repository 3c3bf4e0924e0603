// MCP's Streamable HTTP transport (revision 2025-11-25, spoken to 2025-06-18 and 2025-03-26
// clients too, and the stateless revision 2026-07-28 beside it) on Boost.Beast HTTP/1.1, plus
// the health endpoints of a replica:
//
// With several APIs (HttpOptions::apis) each is served the same way at its own path, /mcp/NAME,
// with its own sessions and its own RFC 9728 metadata; /mcp then answers 404 naming them.
//
//   POST   /mcp      one JSON-RPC message. A request is answered on the same HTTP exchange
//                    (application/json, or one SSE event when the client accepts only
//                    text/event-stream); a notification or response gets 202 with no body.
//                    A tools/call with `_meta.progressToken` from a client that accepts
//                    text/event-stream gets a chunked SSE stream at once: its progress
//                    notifications as events, the response as the last event, then the end.
//   GET    /mcp      405: we offer no server-initiated stream.
//   DELETE /mcp      ends the session named by Mcp-Session-Id (204; then 404 for that id).
//   GET    /healthz  200 "ok" while the process serves; GET /readyz 200, or 503 while draining.
//
// Every request passes, in order, on its header block before any of its body is read: no
// repeated Host, Content-Length, Content-Type, Authorization, Origin or MCP header; Host
// (loopback binds); Origin; then for /mcp the bearer token and a place among the admitted
// connections. Then, with its body: the session id and MCP-Protocol-Version. Refusals are
// values with a status (HttpPolicy).
//
// Connections: a new connection waits until its first authenticated /mcp request admits it.
// Waiting connections get a short deadline for each header block and are few (per address and
// in all); one more closes the oldest waiting one, so idle sockets cannot fill max_connections,
// which only admitted connections count against.
//
// Stateful mode: initialize creates an McpSession and a random Mcp-Session-Id; later requests
// must name it with the token that created it (any other caller gets 404), and each token (or
// address, without tokens) holds at most its share of the session table. Stateless mode: no
// ids; each POST gets a fresh McpSession treated as initialized, so any replica can serve any
// request. Either way a session outlives the connections that carry its requests, and a
// request's answer goes back on the exchange that carried it (McpSession's per-message Send).
// A client that disconnects while its request runs cancels it; one that only shuts down its
// write side is answered (watch_for_hangup).
//
// 2026-07-28, in both modes: a POST whose body claims a version in `params._meta` (or whose
// MCP-Protocol-Version is 2026-07-28) passes check_stateless_request (stateless_revision.h:
// headers against body, version, method; refusals 400/404 with the JSON-RPC error) and is then
// served by a fresh session; no session id is read or sent. GET/DELETE naming it: 405.
//
// Threading: each connection runs on its own strand, each McpSession on a strand of its own;
// they talk by posting. The server state the connections share (session table, counters,
// draining) is touched only from handlers of the daemon's io_context, which runs on one thread
// (daemon.h); running it on several threads would need a strand around that state.
// Lifetime: connections and sessions are held by shared_ptr from their pending operations and
// keep the shared state alive; HttpServer itself may go before them.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "auth/token_verifier.h"
#include "mcp/mcp_session.h"
#include "transport/http_policy.h"
#include "transport/http_routing.h"

namespace codemode::server {

// One of several APIs served over HTTP (README.md, "Several APIs"): its path, and its OAuth
// settings with its own resource URL, checked by its own verifier (a token issued for one API's
// resource is refused at another's path).
struct HttpApi {
  std::string path;  // "/mcp/NAME"
  std::optional<config::OAuth> oauth;
  std::shared_ptr<auth::TokenVerifier> verifier;
  std::vector<std::string> claim_profiles;  // this API's, as HttpOptions::claim_profiles
};

struct HttpOptions {
  HttpEndpoint endpoint;
  HttpMode mode = HttpMode::stateful;
  std::vector<std::string> allowed_origins;        // from config::Http
  std::vector<config::BearerToken> bearer_tokens;  // from config::Http; empty: no authentication
  // OAuth (config::Http::oauth): /mcp also takes access tokens (JWTs, and opaque ones by
  // introspection), checked by `verifier`, and the protected resource metadata is served. Both
  // set or neither; with them, /mcp always needs a token (static or an access token), whatever
  // `bearer_tokens` holds.
  std::optional<config::OAuth> oauth;
  std::shared_ptr<auth::TokenVerifier> verifier;
  // The config's `principals` keys of the form "claim:NAME=VALUE": an access token whose claim
  // matches one gets that entry's headers and policy, unless its principal has an entry.
  std::vector<std::string> claim_profiles;
  // Keep each verified access token for the call it authenticates (gateway::Caller::access_token):
  // set when an upstream's token is exchanged for the caller's (config token_exchange).
  bool pass_access_token = false;
  std::size_t max_body_bytes =
      std::size_t{4} * 1024 * 1024;                       // larger bodies: 413 (the stdio line cap)
  std::size_t max_header_bytes = std::size_t{16} * 1024;  // larger header blocks: 431
  // Bound on reading one request's body, and on an admitted connection's header block: its
  // keep-alive idle time.
  std::chrono::milliseconds read_timeout{30000};
  // Bound on each header block of a connection not yet admitted (the first request included):
  // a client that means to talk sends its request at once.
  std::chrono::milliseconds header_timeout{10000};
  std::size_t max_connections = 512;  // admitted connections; beyond: 503 and close
  // Connections not yet admitted, in all and per peer address; one more closes the oldest
  // waiting one (of that address, or of all).
  std::size_t max_waiting_connections = 128;
  std::size_t max_waiting_per_address = 32;
  // Requests in flight per principal (a token's name; without tokens a session, or the peer
  // address for requests outside a session): the config's sandbox.principal_calls +
  // principal_queue. One more: 429 with Retry-After.
  std::size_t max_requests_per_principal = 512;
  // Stateful sessions kept, and per owner (bearer token, or peer address without tokens); one
  // more evicts the owner's least recently used, or in a full table that of the owner holding
  // the most (its client gets 404 and initializes again, as the transport spec has clients do).
  std::size_t max_sessions = 1024;
  std::size_t max_sessions_per_owner = 256;
  // Several APIs, each served at its own path with its own OAuth resource and verifier (in place
  // of `oauth` and `verifier` above); /mcp then answers 404 naming their paths. Empty: one API,
  // at /mcp.
  std::vector<HttpApi> apis;
  // GET /metrics: the Prometheus exposition (observe/metrics.h), behind the bearer token like
  // /mcp when tokens are configured. Empty: /metrics is 404.
  std::function<std::string()> metrics;
};

// Makes a fresh McpSession for `principal` running on `executor`, whose every message comes with
// its own Send, on the API of the request's path: an index into HttpOptions::apis (0 for the one
// API at /mcp).
using SessionFactory = std::function<std::shared_ptr<McpSession>(
    boost::asio::any_io_executor executor, std::string principal, std::size_t api)>;

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpOptions options, SessionFactory make_session);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts accepting. A problem (address in use, not local) comes back as
  // text; nothing is listening then.
  std::optional<std::string> start();

  // The bound address; after start(), with the real port of an ephemeral bind.
  boost::asio::ip::tcp::endpoint local_endpoint() const;

  // Stops accepting; /readyz answers 503 and new /mcp requests 503 from now on. Calls
  // `on_drained` once no HTTP request is in flight (at once when none is).
  void drain(std::function<void()> on_drained);

  struct State;  // shared with the connections (http_transport.cpp)

 private:
  std::shared_ptr<State> state_;
};

// "http://127.0.0.1:8080/mcp" (brackets around IPv6).
std::string endpoint_url(const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace codemode::server
