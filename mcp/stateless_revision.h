// The request rules of MCP revision 2026-07-28 (the stateless revision; docs/mcp-2026-07-28.md),
// as pure functions so they are tested without sockets or sessions:
//   - which requests belong to it (the era rule of a dual-era server, §7 of the digest);
//   - the validation ladder every such request passes before any method runs: the per-request
//     `_meta` fields, the HTTP headers that must mirror the body (`MCP-Protocol-Version`,
//     `Mcp-Method`, `Mcp-Name`, with the `=?base64?…?=` form), the supported versions, and the
//     methods this revision serves for a tools-only server;
//   - the HTTP status each refusal travels with.
//
// A refusal is a JsonRpcError value carrying the request's id (and `data` where the revision
// defines it). Stateless and thread-agnostic.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "mcp/json_rpc.h"

namespace codemode::server {

inline constexpr std::string_view kStatelessProtocolVersion = "2026-07-28";
// What server/discover advertises and UnsupportedProtocolVersionError lists: the stateless
// revision, then the 2025 ones reached through initialize (kProtocolVersions). One list, so
// `data.supported` is always a subset of `supportedVersions`.
inline constexpr std::string_view kAllProtocolVersions[] = {"2026-07-28", "2025-11-25",
                                                            "2025-06-18", "2025-03-26"};

// The `params._meta` keys of the revision.
inline constexpr std::string_view kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view kMetaClientCapabilities =
    "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

// The request claims the stateless revision: `params._meta` holds a protocolVersion entry (any
// value, even an unsupported one). Such a request is served statelessly on every transport.
bool claims_stateless_revision(const Json& params);

// The headers an HTTP POST carried (raw values, as received). Absent on stdio.
struct RevisionHeaders {
  std::optional<std::string_view> protocol_version;  // MCP-Protocol-Version
  std::optional<std::string_view> method;            // Mcp-Method
  std::optional<std::string_view> name;              // Mcp-Name
};

// Whether a header may carry the `=?base64?…?=` form. The revision defines it for Mcp-Name and
// Mcp-Param-* only, whose values come from the model or the user; MCP-Protocol-Version and
// Mcp-Method are plain, so that a proxy routing on them sees what the server serves.
enum class HeaderEncoding { plain_only, plain_or_base64 };

// A header value as compared with the body: surrounding spaces/tabs dropped, a
// `=?base64?…?=` value decoded where `encoding` allows it. nullopt: invalid (bad base64, or
// bytes outside visible ASCII and space in a plain value; a base64 form where only plain is
// allowed is compared as the plain text it is).
std::optional<std::string> decode_header_value(std::string_view raw, HeaderEncoding encoding);

// The whole ladder, in the order the revision and its conformance suite fix:
//   `_meta` missing or without a string protocolVersion / an object clientCapabilities
//       → -32602 (invalid params);
//   with headers: MCP-Protocol-Version missing or ≠ the `_meta` version, Mcp-Method missing or
//       ≠ method (both plain text only), Mcp-Name missing or ≠ params.name (tools/call,
//       prompts/get) or params.uri (resources/read), any of them invalid → -32020 (HeaderMismatch);
//   a version other than 2026-07-28 → -32022 with data {supported, requested};
//   a method this revision does not serve here → -32601.
// nullopt: serve it (server/discover, tools/list or tools/call).
std::optional<JsonRpcError> check_stateless_request(const Request& request,
                                                    const std::optional<RevisionHeaders>& headers);

// The HTTP status of a refusal above: 404 for -32601, else 400.
unsigned http_status_of(const JsonRpcError& refusal);

}  // namespace codemode::server
