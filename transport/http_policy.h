// The rules of the HTTP boundary (docs/http.md, "Security, in the order checked"; layer 1 of
// docs/architecture.md, "Security layers"), as pure functions and one immutable policy
// object, so they are tested without sockets:
//   - where to listen (`--http HOST:PORT`) and whether that address is loopback;
//   - `Host` on a loopback bind (DNS-rebinding defence), `Origin` against the allowlist,
//     bearer tokens compared in constant time;
//   - content negotiation (`Accept`, `Content-Type`) and the `MCP-Protocol-Version` header;
//   - session ids and the table of live sessions.
//
// HttpPolicy is built once at start-up from the config and the bound address and is read-only
// afterwards (any thread). Every check returns a value: a refusal carries the HTTP status and a
// message that starts with a stable kind ("forbidden: ...") and never echoes a token.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace codemode::server {

class McpSession;

// `--http` argument: "HOST:PORT", "[V6]:PORT", ":PORT" or "PORT". HOST is an IP literal or
// "localhost" (= 127.0.0.1); absent, it is 127.0.0.1. PORT is 0..65535, 0 = ephemeral.
struct HttpEndpoint {
  std::string host;  // an IP literal, without brackets
  std::uint16_t port = 0;
};
std::optional<HttpEndpoint> parse_endpoint(std::string_view text);
bool is_loopback(std::string_view ip_literal);

// A refusal at the HTTP boundary: the status to answer with and why.
struct HttpRefusal {
  unsigned status = 400;
  std::string message;  // "forbidden: origin http://evil.test is not allowed"
};

struct HttpPolicyOptions {
  std::vector<std::string> allowed_origins;  // normalised, as config::Http holds them
  // As config::Http holds them: names non-empty and unique. Empty: no authentication.
  std::vector<config::BearerToken> bearer_tokens;
  std::string bound_host;        // the IP literal the listener is bound to
  std::uint16_t bound_port = 0;  // the actual port (after an ephemeral bind)
};

class HttpPolicy {
 public:
  explicit HttpPolicy(HttpPolicyOptions options);

  // `Host` on a loopback bind must name a loopback host (localhost, 127.0.0.1, [::1]) with the
  // bound port: a browser page whose name was rebound to 127.0.0.1 still sends its own name.
  // Any Host passes on other binds (they need a bearer token anyway).
  std::optional<HttpRefusal> check_host(std::optional<std::string_view> host) const;
  // A missing Origin passes (non-browser clients send none); a present one must be listed, or
  // be this endpoint's own origin on a loopback bind (http://localhost:PORT, 127.0.0.1, [::1]).
  std::optional<HttpRefusal> check_origin(std::optional<std::string_view> origin) const;
  // `Authorization: Bearer TOKEN` when tokens are configured. Only the header counts.
  std::optional<HttpRefusal> check_bearer(std::optional<std::string_view> authorization) const;
  // The same check, and on success who the caller is: the principal a stateful session belongs
  // to. Every token is compared, whichever matches, each in constant time.
  struct Authentication {
    std::optional<HttpRefusal> refusal;  // set: refuse with it, there is no principal
    // The matching token's name (config::BearerToken::name, e.g. "alice" or "token-1"); "" when
    // no tokens are configured, a name no token has.
    std::string principal;
  };
  Authentication authenticate(std::optional<std::string_view> authorization) const;

  bool requires_token() const { return !tokens_.empty(); }

 private:
  struct TokenDigest {
    std::string name;
    std::string digest;  // SHA-256 of the token: compares are of equal length
  };

  HttpPolicyOptions options_;
  bool loopback_;
  std::vector<TokenDigest> tokens_;       // what a presented token is compared with
  std::vector<std::string> own_origins_;  // same-origin pages on a loopback bind
};

// `scheme://host[:port]` lower-cased with the default port dropped; nullopt when the text is
// not such an origin (e.g. "null", a path, userinfo). The grammar is net::parse_origin's, the
// one the config normalises allowed_origins with, so a listed origin and the header a browser
// sends for it compare equal as strings.
std::optional<std::string> normalize_origin(std::string_view origin);

// Equal in constant time for equal-length inputs (OpenSSL CRYPTO_memcmp over SHA-256 digests,
// so the time does not depend on where the inputs differ or on their lengths).
bool tokens_equal(std::string_view presented, std::string_view expected);

// What a POST's Accept header lets us answer with. Absent or `*/*`: JSON.
enum class ResponseFormat { json, event_stream, none };
ResponseFormat choose_format(std::optional<std::string_view> accept);
// Accept allows text/event-stream (then a long call with a progress token is answered as a stream).
bool accepts_event_stream(std::optional<std::string_view> accept);
// Content-Type is application/json (parameters such as charset allowed).
bool is_json_content_type(std::optional<std::string_view> content_type);

// Headers that decide who the caller is, where the request goes or how its body is framed may
// appear once: two Host headers could pass our check with one and reach a proxy's routing with
// the other (RFC 9112 §3.2 requires 400 for a repeated Host). nullopt: every one of them appears
// at most once; else a 400 naming the first repeated one. `names` is every field name of the
// header block, in any case.
std::optional<HttpRefusal> check_repeated_headers(const std::vector<std::string_view>& names);

// The MCP revisions this transport speaks over HTTP, and the one assumed when a client sends no
// MCP-Protocol-Version header (the transport spec's backwards-compatibility rule).
inline constexpr std::string_view kDefaultHttpProtocolVersion = "2025-03-26";
// nullopt: supported (or absent); else a 400 refusal naming the supported list.
std::optional<HttpRefusal> check_protocol_version(std::optional<std::string_view> header);

// 32 lower-case hex characters from 16 bytes of OpenSSL RAND_bytes (128 bits).
std::string new_session_id();

// Who a stateful session belongs to. `principal` binds it: a request naming the session with
// another principal is treated as naming an unknown session (404), so a session id learnt by
// another client is worth nothing without the token that made it (the MCP spec asks servers to
// bind session ids to the user). Without tokens every caller is the same principal (""), and
// sessions are not bound. `quota` is the unit sessions are counted per: the principal and the
// peer address, so clients sharing a token (or none) evict only sessions from their address.
struct SessionOwner {
  std::string principal;  // from HttpPolicy::authenticate
  std::string quota;      // the principal and the peer address together
  std::size_t api = 0;    // the API whose path made it (HttpOptions::apis); served there only
};

// The live MCP sessions of the stateful HTTP mode, by session id. At most `max_sessions`, and at
// most `max_per_owner` per owner's quota key: a new session beyond its owner's share evicts that
// owner's least recently used one; a new session in a full table evicts the least recently used
// session of the owner holding the most (possibly the newcomer's own). So one client can push
// out only its own sessions, or those of a client holding more than it, never everyone's. The
// evicted client gets 404 and, as the transport spec requires of it, initializes again; an
// abandoned session (clients often never DELETE) costs memory only until it is evicted.
// An ended id is simply unknown (404); ids are never reused. Touched only from the io_context's
// one thread (see http_transport.h).
class HttpSessionTable {
 public:
  HttpSessionTable(std::size_t max_sessions, std::size_t max_per_owner)
      : max_sessions_(max_sessions), max_per_owner_(max_per_owner) {}

  // Returns the id evicted to make room, if any.
  std::optional<std::string> add(const std::string& id, std::shared_ptr<McpSession> session,
                                 SessionOwner owner);
  // Null when unknown, ended, owned by another principal or made on another API's path;
  // otherwise marks the session as just used.
  std::shared_ptr<McpSession> find(std::string_view id, std::string_view principal,
                                   std::size_t api = 0);
  // false: as find() gives null.
  bool remove(std::string_view id, std::string_view principal, std::size_t api = 0);
  std::size_t size() const { return sessions_.size(); }
  std::size_t owned_by(std::string_view quota) const;

 private:
  struct Entry {
    std::shared_ptr<McpSession> session;
    SessionOwner owner;
    std::uint64_t last_used;
  };
  // The least recently used session of `quota`'s owner.
  std::map<std::string, Entry, std::less<>>::iterator oldest_of(std::string_view quota);

  std::size_t max_sessions_;
  std::size_t max_per_owner_;
  std::uint64_t clock_ = 0;  // a use counter: orders uses without reading a clock
  std::map<std::string, Entry, std::less<>> sessions_;
  std::map<std::string, std::size_t, std::less<>> per_owner_;  // sessions by quota key
};

}  // namespace codemode::server
