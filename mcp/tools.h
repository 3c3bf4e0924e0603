// The two tools as MCP declares them, and the translation of a sandbox Outcome into an MCP
// tool result (text cut at result_chars, structuredContent, isError with the kind prefix).
//
// Built once at start-up from the config and the API description; immutable afterwards and
// read from any thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "channel/outcome.h"
#include "config/config.h"
#include "mcp/json_rpc.h"
#include "sandbox/sandbox.h"

namespace codemode::server {

// The tool descriptions, generated from the API description by the openapi module.
struct ApiSummary {
  std::string search_description;   // openapi::describe_search
  std::string execute_description;  // openapi::describe_execute
  // Where execute may send requests (config upstreams, first = base of a relative URL), for
  // the hint of an origin refusal.
  std::vector<std::string> origins;
  // What execute's requests may do, for its annotations: a client decides by them whether to
  // ask its user before a call. `reads_only` when every policy (the top-level one and each
  // principal's) allows GET and HEAD at most.
  enum class ExecuteEffect { may_write, reads_only };
  ExecuteEffect execute_effect = ExecuteEffect::may_write;
};

class ToolCatalog {
 public:
  ToolCatalog(ApiSummary api, config::Limits limits);

  // The `tools` array of a tools/list result.
  const Json& list() const { return list_; }

  // nullopt: no tool of that name.
  std::optional<channel::Tool> find(std::string_view name) const;

  // An MCP CallToolResult for an outcome of `tool`. Its structuredContent carries the result (or
  // error) and logs, `usage` (cpu_ms, wall_ms and queued_ms of a call that ran; for execute the
  // subrequests the gateway let through, of the limit) and, for execute, `requests`: method,
  // path, status or error, ms of each fetch (the first 50). A failure's text is the kind and
  // message, then the sandbox's detail (where, a hint), what a refusal allows, and for execute
  // the last requests.
  Json result(const channel::Outcome& outcome, channel::Tool tool) const;

  const config::Limits& limits() const { return limits_; }

 private:
  std::string refusal_hint(const channel::Outcome& outcome) const;
  config::Limits limits_;
  std::vector<std::string> origins_;
  Json list_;
};

// Cuts `text` to at most `limit` characters (code points), never splitting a UTF-8 sequence,
// and appends a marker saying how many characters were dropped. Unchanged when it fits.
std::string cut_text(std::string_view text, std::size_t limit);

}  // namespace codemode::server
