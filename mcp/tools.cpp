#include "mcp/tools.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

namespace codemode::server {

namespace {

// JSON.stringify in the sandbox nests as deep as V8's stack lets it; a result of at most
// `result_chars` could still nest thousands deep. Deeper than this, the structured copy is
// left out (the text item still carries the result).
constexpr std::size_t kMaxResultNesting = 1000;

constexpr std::string_view kCutNote = "…[cut: the result is longer than result_chars";
constexpr std::string_view kCutAdvice =
    "; it is still JSON, each shortened array, object or string marked where it was cut: return "
    "less, e.g. select fields, slice arrays or take one item]";

constexpr std::string_view kCodeDescription =
    "JavaScript or TypeScript: async () => { … }, or statements ending in return. Its value "
    "comes back as JSON.";

Json code_schema(std::size_t code_chars) {
  return Json{
      {"type", "object"},
      {"properties",
       {{"code",
         {{"type", "string"}, {"description", kCodeDescription}, {"maxLength", code_chars}}}}},
      {"required", Json::array({"code"})},
      {"additionalProperties", false}};
}

Json text_item(std::string text) { return Json{{"type", "text"}, {"text", std::move(text)}}; }

// Milliseconds to two decimals: the ledger is for reading, not for profiling.
double rounded(double ms) { return std::round(ms * 100) / 100; }
double ms_of(std::uint64_t us) { return rounded(static_cast<double>(us) / 1000); }

// What a call used of its limits. A call refused before it ran used nothing and has no times.
Json usage(const channel::Outcome& outcome, channel::Tool tool, const config::Limits& limits) {
  Json out = Json::object();
  if (outcome.sandbox_us > 0) {
    out["cpu_ms"] = ms_of(outcome.cpu_us);
    out["wall_ms"] = ms_of(outcome.sandbox_us);
  }
  if (outcome.sandbox_us > 0 || outcome.queued_us > 0) out["queued_ms"] = ms_of(outcome.queued_us);
  if (tool == channel::Tool::execute) {
    out["subrequests"] = {{"used", outcome.subrequests}, {"limit", limits.subrequests}};
  }
  return out;
}

// The failure text names the call's last requests: what the code asked for explains most
// failures (a 404 HTML page read with .json()), and many clients never show structuredContent.
constexpr std::size_t kRequestsInText = 3;

std::string text_of(const channel::Outcome& outcome) {
  return std::string(channel::to_string(outcome.error_kind)) + ": " + outcome.error_message;
}

std::string last_requests(const channel::Outcome& outcome) {
  std::span<const channel::RequestRecord> requests = outcome.requests;
  const std::size_t unrecorded =
      outcome.fetches > requests.size() ? outcome.fetches - requests.size() : 0;
  // A refusal that is the failure itself is said once, on the first line.
  if (unrecorded == 0 && !requests.empty() && requests.back().error == text_of(outcome)) {
    requests = requests.first(requests.size() - 1);
  }
  if (requests.empty()) return {};
  const std::size_t first =
      requests.size() > kRequestsInText ? requests.size() - kRequestsInText : 0;
  std::string out = "after ";
  if (first > 0) out += std::to_string(first) + " earlier requests, ";
  for (std::size_t i = first; i < requests.size(); ++i) {
    const auto& request = requests[i];
    if (i > first) out += ", ";
    out += request.method + " " + request.path + " → ";
    if (!request.error.empty()) {
      out += request.error;
    } else if (request.status == 0) {
      out += "no answer before the call ended";
    } else {
      out += std::to_string(request.status);
      if (!request.content_type.empty()) out += " " + request.content_type;
    }
  }
  if (unrecorded > 0) out += ", and " + std::to_string(unrecorded) + " more not recorded";
  return out;
}

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

ToolCatalog::ToolCatalog(ApiSummary api, config::Limits limits)
    : limits_(limits), origins_(std::move(api.origins)) {
  const bool reads_only = api.execute_effect == ApiSummary::ExecuteEffect::reads_only;
  list_ = Json::array();
  list_.push_back(Json{{"name", "search"},
                       {"title", "Search the API description"},
                       {"description", std::move(api.search_description)},
                       {"inputSchema", code_schema(limits.code_chars)},
                       {"annotations",
                        {{"title", "Search the API description"},
                         {"readOnlyHint", true},
                         {"destructiveHint", false},
                         {"idempotentHint", true},
                         {"openWorldHint", false}}}});
  list_.push_back(Json{{"name", "execute"},
                       {"title", "Call the API"},
                       {"description", std::move(api.execute_description)},
                       {"inputSchema", code_schema(limits.code_chars)},
                       {"annotations",
                        {{"title", "Call the API"},
                         {"readOnlyHint", reads_only},
                         {"destructiveHint", !reads_only},
                         {"idempotentHint", reads_only},
                         {"openWorldHint", true}}}});
}

// What is allowed, for a refusal the code met (the failure itself, or one it caught).
std::string ToolCatalog::refusal_hint(const channel::Outcome& outcome) const {
  // The refusal's text, as the failure (without its kind) or as a request's error.
  auto refused = [&](std::string_view start, std::string_view part) {
    const auto matches = [&](std::string_view text) {
      return text.starts_with(start) && text.find(part) != std::string_view::npos;
    };
    if (outcome.error_kind == channel::ErrorKind::policy &&
        matches(std::string("policy: ") + outcome.error_message)) {
      return true;
    }
    return std::any_of(outcome.requests.begin(), outcome.requests.end(),
                       [&](const auto& r) { return matches(r.error); });
  };
  if (refused("policy: origin ", " is not allowed")) {
    if (origins_.empty()) return "no upstream is configured: execute can call nothing";
    std::string allowed;
    for (const auto& origin : origins_) allowed += (allowed.empty() ? "" : ", ") + origin;
    return "requests may go only to " + allowed +
           "; write a relative URL such as '/path', which resolves against " + origins_.front();
  }
  if (refused("policy: ", "matches no operation in the API description")) {
    return "only the operations of the API description may be called: find them with the "
           "search tool (spec.describe('GET /path') shows one)";
  }
  return {};
}

std::optional<channel::Tool> ToolCatalog::find(std::string_view name) const {
  if (name == "search") return channel::Tool::search;
  if (name == "execute") return channel::Tool::execute;
  return std::nullopt;
}

Json ToolCatalog::result(const channel::Outcome& outcome, channel::Tool tool) const {
  Json content = Json::array();
  Json structured = Json::object();
  if (outcome.ok && outcome.result_cut) {
    // Cut in the sandbox as it was serialised: still JSON, each shortened part marked inside.
    const std::size_t chars = sandbox::count_code_points(outcome.result_json);
    content.push_back(text_item(outcome.result_json + "\n" + std::string(kCutNote) + " (" +
                                std::to_string(limits_.result_chars) + " characters)" +
                                std::string(kCutAdvice)));
    BoundedParse parsed = parse_bounded(outcome.result_json, kMaxResultNesting);
    structured["result"] =
        parsed.problem == BoundedParse::Problem::none ? std::move(parsed.value) : Json(nullptr);
    structured["cut"] = {{"shown_chars", chars}, {"result_chars", limits_.result_chars}};
  } else if (outcome.ok) {
    const std::size_t chars = sandbox::count_code_points(outcome.result_json);
    if (chars <= limits_.result_chars) {
      // The sandbox process is not trusted either: its JSON is read under the same kind of
      // bound as a client's message, so no result can nest deep enough to reach the stack
      // when the answer is serialised. A refused result stays in the text item.
      BoundedParse parsed = parse_bounded(outcome.result_json, kMaxResultNesting);
      const bool parsed_ok = parsed.problem == BoundedParse::Problem::none;
      // A string of several lines (spec.describe's declaration, a page of text) is shown as its
      // text, which a model reads, not as a JSON string of `\n` escapes; structuredContent keeps
      // the typed value (README.md, the tools' contract).
      const bool as_text =
          parsed_ok && parsed.value.is_string() &&
          parsed.value.get_ref<const std::string&>().find('\n') != std::string::npos;
      content.push_back(text_item(as_text ? parsed.value.get<std::string>() : outcome.result_json));
      structured["result"] = parsed_ok ? std::move(parsed.value) : Json(nullptr);
    } else {
      content.push_back(text_item(cut_text(outcome.result_json, limits_.result_chars)));
      structured["cut"] = {{"total_chars", chars}, {"shown_chars", limits_.result_chars}};
    }
  } else {
    const std::string kind(channel::to_string(outcome.error_kind));
    std::string text = kind + ": " + outcome.error_message;
    if (!outcome.error_detail.empty()) text += "\n" + outcome.error_detail;
    if (tool == channel::Tool::execute) {
      const std::string hint = refusal_hint(outcome);
      if (!hint.empty()) text += "\nhint: " + hint;
    }
    if (tool == channel::Tool::execute && !outcome.requests.empty()) {
      std::string requests = last_requests(outcome);
      if (!requests.empty()) text += "\n" + requests;
    }
    content.push_back(text_item(std::move(text)));
    structured["error"] = {{"type", kind}, {"message", outcome.error_message}};
    if (!outcome.error_detail.empty()) structured["error"]["detail"] = outcome.error_detail;
  }
  structured["logs"] = outcome.logs;
  structured["usage"] = usage(outcome, tool, limits_);
  if (tool == channel::Tool::execute) {
    Json requests = Json::array();
    for (const auto& request : outcome.requests) {
      Json item{{"method", request.method}, {"path", request.path}};
      if (request.error.empty()) {
        item["status"] = request.status;
        if (!request.content_type.empty()) item["content_type"] = request.content_type;
      } else {
        item["error"] = request.error;
      }
      item["ms"] = rounded(request.ms);
      requests.push_back(std::move(item));
    }
    structured["requests"] = std::move(requests);
    if (outcome.fetches > outcome.requests.size()) {
      structured["requests_not_shown"] = outcome.fetches - outcome.requests.size();
    }
  }
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
