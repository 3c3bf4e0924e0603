// JSON-RPC 2.0 framing: one text message in, a classified value out; values out, text out.
//
// Everything here handles bytes from a peer we do not trust, so nothing throws: a message that
// is not valid JSON-RPC becomes a JsonRpcError value with the id we could recover (null when
// none), which the caller sends back before reading on. Stateless and thread-agnostic.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace codemode::server {

using Json = nlohmann::json;

// The codes JSON-RPC 2.0 reserves, as MCP uses them.
enum class ErrorCode : int {
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  internal_error = -32603,
  // The implementation-defined range: the HTTP transport refused the request before any
  // session saw it (bad origin, token, session id, header); the HTTP status says which.
  transport_refused = -32000,
  // A tools/call over the bound on one principal's calls in flight and queued (the config's
  // sandbox.principal_calls + principal_queue); retry once one has finished.
  too_many_calls = -32001,
  // A tools/call refused because the audit trail cannot record it: audit.on_failure is
  // fail_closed and its store is down (or its queue full); retry later.
  audit_unavailable = -32002,
  // MCP 2026-07-28's own block (stateless_revision.h): an HTTP header disagrees with the body
  // or is missing/invalid; a client capability the request needs was not declared; the
  // requested protocol version is not served here.
  header_mismatch = -32020,
  missing_required_client_capability = -32021,
  unsupported_protocol_version = -32022,
};

struct JsonRpcError {
  ErrorCode code = ErrorCode::internal_error;
  std::string message;
  Json id = nullptr;    // the request's id when it could be read, else null
  Json data = nullptr;  // the error's `data` member; null: none is sent
};

struct Request {
  Json id;  // string or integer, never null
  std::string method;
  Json params;  // object, array, or null when absent
};

struct Notification {
  std::string method;
  Json params;
};

// A response from the peer to a request of ours (an approval's elicitation/create).
struct Response {
  Json id;
  Json result;         // null when it is an error
  bool error = false;  // the peer answered with a JSON-RPC error
};

using Message = std::variant<Request, Notification, Response, JsonRpcError>;

// How deep a message may nest: objects and arrays, counted from the message itself (depth 1).
// MCP messages need a handful of levels; the bound exists because copying, comparing and
// serialising a tree recurse once per level, so a message nested ~100,000 deep (a 200 KB line)
// would overflow the stack of whichever thread touched it. 128 levels leave room for any tool
// arguments a client sends and cost well under a kilobyte of stack per level.
inline constexpr std::size_t kMaxMessageNesting = 128;

// Parses JSON text into a tree unless it nests deeper than `max_nesting` or repeats a key in
// one object; the refusal happens during the parse, before the tree grows past the bound.
// Iterative (nlohmann's SAX parser with its own DOM builder), so the input's depth never
// reaches the stack. Returns the reason on refusal; never throws.
struct BoundedParse {
  Json value;  // discarded unless `problem` is empty
  enum class Problem { none, syntax, too_deep, duplicate_key } problem = Problem::none;
  std::string duplicate;  // the repeated key, for duplicate_key
  Json top_level_id;      // the object's "id" member when it was read before the refusal
};
BoundedParse parse_bounded(std::string_view text, std::size_t max_nesting);

// Classifies one message. Batches (JSON arrays) are refused: no MCP revision we speak has them.
// So are messages nested deeper than kMaxMessageNesting and objects with a repeated key
// (`{"method":"tools/list",…,"method":"tools/call"}` means one thing to a proxy that keeps the
// first key and another to a parser that keeps the last): both are -32600 with the id when it
// came before the fault.
Message parse_message(std::string_view text);

// One-line serialisations (no trailing newline), invalid UTF-8 replaced rather than thrown.
std::string serialize_result(const Json& id, const Json& result);
std::string serialize_error(const Json& id, ErrorCode code, std::string_view message);
std::string serialize_error(const JsonRpcError& error);
std::string serialize_notification(std::string_view method, const Json& params);

// Safe dump for any Json this process built: never throws on invalid UTF-8 in strings.
std::string dump(const Json& value);

}  // namespace codemode::server
