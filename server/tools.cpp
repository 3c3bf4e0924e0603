#include "server/tools.h"

#include <algorithm>

namespace codemode::server {

namespace {

constexpr std::string_view kCodeDescription =
    "An async arrow function expression, e.g. `async () => { ... }`. Its resolved value is "
    "returned as JSON.";

Json code_schema(std::size_t code_chars) {
  return Json{
      {"type", "object"},
      {"properties",
       {{"code",
         {{"type", "string"}, {"description", kCodeDescription}, {"maxLength", code_chars}}}}},
      {"required", Json::array({"code"})},
      {"additionalProperties", false}};
}

std::string limits_sentence(const config::Limits& limits) {
  return "Each call runs in a fresh sandbox with " + std::to_string(limits.cpu_ms) +
         " ms of CPU, " + std::to_string(limits.wall_ms) + " ms of wall time and " +
         std::to_string(limits.heap_mb) + " MB of heap; code is at most " +
         std::to_string(limits.code_chars) + " characters and results over " +
         std::to_string(limits.result_chars) +
         " characters are cut, so return only what you need. console.log output is returned "
         "with the result.";
}

std::string search_description(const ApiSummary& api, const config::Limits& limits) {
  return "Search the OpenAPI description of " + api.title + " (version " + api.version + ", " +
         std::to_string(api.path_count) +
         " paths) by writing JavaScript. The global `spec` is the OpenAPI document with $refs "
         "resolved; nothing else is reachable (no network, no files). Use it to find the "
         "endpoints, parameters and schemas you need before calling `execute`.\n\n"
         "Example: async () => Object.entries(spec.paths).filter(([p]) => "
         "p.includes('orders')).map(([p, ops]) => [p, Object.keys(ops)])\n\n" +
         limits_sentence(limits);
}

std::string execute_description(const ApiSummary& api, const config::Limits& limits) {
  std::string origins;
  for (const auto& origin : api.origins) origins += (origins.empty() ? "" : ", ") + origin;
  if (origins.empty()) origins = "none (no upstream is configured, so every request is refused)";
  return "Call the " + api.title +
         " API by writing JavaScript that uses fetch(). Requests may go only to: " + origins +
         "; relative URLs resolve against the first. Authentication is added for you: do not "
         "set credentials. At most " +
         std::to_string(limits.subrequests) +
         " requests per call.\n\n"
         "Example: async () => { const r = await fetch('/products?limit=3'); return r.json(); }"
         "\n\n" +
         limits_sentence(limits);
}

Json text_item(std::string text) { return Json{{"type", "text"}, {"text", std::move(text)}}; }

}  // namespace

std::string cut_text(std::string_view text, std::size_t limit) {
  std::size_t chars = 0;
  std::size_t cut_at = text.size();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (chars == limit) {
      cut_at = i;
      break;
    }
    ++chars;
  }
  if (cut_at == text.size()) return std::string(text);
  const std::size_t dropped = sandbox::count_code_points(text.substr(cut_at));
  return std::string(text.substr(0, cut_at)) + "\n…[cut: " + std::to_string(dropped) +
         " more characters; return less, e.g. select fields or slice arrays]";
}

ToolCatalog::ToolCatalog(ApiSummary api, config::Limits limits) : limits_(limits) {
  list_ = Json::array();
  list_.push_back(Json{{"name", "search"},
                       {"title", "Search the API description"},
                       {"description", search_description(api, limits)},
                       {"inputSchema", code_schema(limits.code_chars)},
                       {"annotations",
                        {{"title", "Search the API description"},
                         {"readOnlyHint", true},
                         {"destructiveHint", false},
                         {"idempotentHint", true},
                         {"openWorldHint", false}}}});
  list_.push_back(Json{{"name", "execute"},
                       {"title", "Call the API"},
                       {"description", execute_description(api, limits)},
                       {"inputSchema", code_schema(limits.code_chars)},
                       {"annotations",
                        {{"title", "Call the API"},
                         {"readOnlyHint", false},
                         {"destructiveHint", true},
                         {"idempotentHint", false},
                         {"openWorldHint", true}}}});
}

std::optional<sandbox::Tool> ToolCatalog::find(std::string_view name) const {
  if (name == "search") return sandbox::Tool::search;
  if (name == "execute") return sandbox::Tool::execute;
  return std::nullopt;
}

Json ToolCatalog::result(const sandbox::Outcome& outcome) const {
  Json content = Json::array();
  Json structured = Json::object();
  if (outcome.ok) {
    const std::size_t chars = sandbox::count_code_points(outcome.result_json);
    content.push_back(text_item(cut_text(outcome.result_json, limits_.result_chars)));
    if (chars <= limits_.result_chars) {
      structured["result"] = Json::parse(outcome.result_json, nullptr, false);
      if (structured["result"].is_discarded()) structured["result"] = nullptr;
    } else {
      structured["cut"] = {{"total_chars", chars}, {"shown_chars", limits_.result_chars}};
    }
  } else {
    const std::string kind(sandbox::to_string(outcome.error_kind));
    content.push_back(text_item(kind + ": " + outcome.error_message));
    structured["error"] = {{"type", kind}, {"message", outcome.error_message}};
  }
  structured["logs"] = outcome.logs;
  if (!outcome.logs.empty()) {
    std::string logs = "console:";
    for (const auto& line : outcome.logs) logs += "\n" + line;
    content.push_back(text_item(cut_text(logs, limits_.result_chars)));
  }
  Json result{{"content", std::move(content)}, {"structuredContent", std::move(structured)}};
  if (!outcome.ok) result["isError"] = true;
  return result;
}

}  // namespace codemode::server
