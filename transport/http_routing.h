// Which rules serve a POST /mcp: the era rule of docs/mcp-2026-07-28.md §7 (a request that
// claims the stateless revision is served by it, per request) and the 2025 session rules
// (initialize makes a session; later requests name it), in stateful or stateless mode.
//
// Pure: the facts come from the request's header block and its parsed body, and the answer is
// where the transport hands the message, or why it refuses it. The transport then does what
// needs its state (the session table, the sandbox); tested without sockets.
#pragma once

#include <optional>
#include <string_view>

#include "transport/http_policy.h"

namespace codemode::server {

// --http-stateless: no sessions, every POST served on its own.
enum class HttpMode { stateful, stateless };

// What decides a POST's route.
struct PostFacts {
  HttpMode mode = HttpMode::stateful;
  bool is_request = false;       // a JSON-RPC request (not a notification or response)
  bool initialize = false;       // the request's method is "initialize"
  bool claims_revision = false;  // the request's params._meta names the stateless revision
  bool has_session_id = false;   // Mcp-Session-Id is present
  std::optional<std::string_view> version;  // MCP-Protocol-Version, when present
};

enum class PostRoute {
  stateless_revision,  // 2026-07-28: check_stateless_request, then a fresh session of its own
  accepted,            // a notification or response naming 2026-07-28: 202, nothing to do
  new_session,         // stateful initialize: a new session and a new Mcp-Session-Id
  named_session,       // stateful: the session Mcp-Session-Id names (404 when unknown), then
                       // its MCP-Protocol-Version is checked
  fresh_session,       // stateless mode: a session for this one message, initialized at
                       // `version` unless the message is initialize
  refused,             // `refusal` says why
};

struct PostPlan {
  PostRoute route = PostRoute::refused;
  std::optional<HttpRefusal> refusal;
};

PostPlan plan_post(const PostFacts& facts);

// Whether an MCP-Protocol-Version value names the stateless revision (2026-07-28).
bool is_stateless_version(std::string_view header_value);

}  // namespace codemode::server
