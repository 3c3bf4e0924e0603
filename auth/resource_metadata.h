// What this server tells OAuth clients about itself (RFC 9728, protected resource metadata) and
// the WWW-Authenticate challenges of its 401 and 403 answers (RFC 6750 §3, RFC 9728 §5.1), as
// pure functions of the config.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"

namespace codemode::auth {

// Where the metadata of `resource` lives (RFC 9728 §3.1): the well-known path inserted between
// the origin and the resource's path. https://mcp.example.com/mcp →
// https://mcp.example.com/.well-known/oauth-protected-resource/mcp.
std::string resource_metadata_url(std::string_view resource);

// The metadata document: resource, authorization_servers (the issuer), scopes_supported (every
// tool scope, then extra_scopes, each once), bearer_methods_supported ["header"].
std::string resource_metadata_document(const config::OAuth& oauth);

// Every scope any tool needs, then extra_scopes, each once, in that order.
std::vector<std::string> all_scopes(const config::OAuth& oauth);

// `Bearer resource_metadata="…"[, scope="…"]` for a request without a token, plus
// `error="invalid_token"` when one was presented and refused. `scope` names every scope a tool
// needs, so a client asks for enough at once.
enum class Presented { no_token, refused_token };
std::string challenge_unauthorized(const config::OAuth& oauth, Presented presented);
// `Bearer error="insufficient_scope", scope="<every scope still needed>", resource_metadata=…`.
std::string challenge_insufficient_scope(const config::OAuth& oauth,
                                         const std::vector<std::string>& missing);

}  // namespace codemode::auth
