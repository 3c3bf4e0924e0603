#include "transport/http_routing.h"

#include "mcp/stateless_revision.h"

namespace codemode::server {

bool is_stateless_version(std::string_view header_value) {
  return decode_header_value(header_value, HeaderEncoding::plain_only) == kStatelessProtocolVersion;
}

PostPlan plan_post(const PostFacts& facts) {
  const bool stateless_header = facts.version && is_stateless_version(*facts.version);
  if (facts.is_request && (stateless_header || facts.claims_revision)) {
    return {PostRoute::stateless_revision, std::nullopt};  // any Mcp-Session-Id is ignored
  }
  // The revision has no client notification over HTTP and no sessions to tell.
  if (!facts.is_request && stateless_header) return {PostRoute::accepted, std::nullopt};
  const bool initialize = facts.is_request && facts.initialize;
  if (facts.mode == HttpMode::stateless) {
    if (!initialize) {
      if (auto refusal = check_protocol_version(facts.version)) {
        return {PostRoute::refused, std::move(refusal)};
      }
    }
    return {PostRoute::fresh_session, std::nullopt};
  }
  if (initialize) {
    if (facts.has_session_id) {
      return {PostRoute::refused,
              HttpRefusal{400,
                          "bad request: initialize starts a new session; send it without "
                          "Mcp-Session-Id"}};
    }
    return {PostRoute::new_session, std::nullopt};
  }
  if (!facts.has_session_id) {
    return {PostRoute::refused,
            HttpRefusal{400, "bad request: Mcp-Session-Id header is required (initialize first)"}};
  }
  return {PostRoute::named_session, std::nullopt};
}

}  // namespace codemode::server
