#include "mcp/tools.h"

#include <catch2/catch.hpp>

using namespace codemode;
using namespace codemode::server;

namespace {
ToolCatalog catalog(config::Limits limits = {}) {
  return ToolCatalog(
      ApiSummary{"Search MarketHub API.", "Call MarketHub API at http://127.0.0.1:9."}, limits);
}
}  // namespace

TEST_CASE("the catalog declares search and execute with a code argument", "[server][tools]") {
  const auto tools = catalog();
  const Json& list = tools.list();
  REQUIRE(list.size() == 2);
  CHECK(list[0]["name"] == "search");
  CHECK(list[0]["annotations"]["readOnlyHint"] == true);
  CHECK(list[1]["name"] == "execute");
  CHECK(list[1]["annotations"]["readOnlyHint"] == false);
  for (const auto& tool : list) {
    CHECK(tool["inputSchema"]["required"] == Json::array({"code"}));
    CHECK(tool["inputSchema"]["properties"]["code"]["type"] == "string");
    CHECK(tool["description"].get<std::string>().find("MarketHub API") != std::string::npos);
  }
  CHECK(list[1]["description"].get<std::string>().find("http://127.0.0.1:9") != std::string::npos);
  CHECK(tools.find("search") == channel::Tool::search);
  CHECK(tools.find("execute") == channel::Tool::execute);
  CHECK_FALSE(tools.find("eval"));
}

TEST_CASE("cut_text keeps short text and marks what it drops", "[server][tools]") {
  CHECK(cut_text("abc", 3) == "abc");
  const std::string cut = cut_text("abcdef", 4);
  CHECK(cut.rfind("abcd\n…[cut: 2 more characters", 0) == 0);
  // Multi-byte characters count once and are never split.
  CHECK(cut_text("äöüß", 2).rfind("äö\n…[cut: 2 more characters", 0) == 0);
}

TEST_CASE("a success result carries the JSON text and structuredContent", "[server][tools]") {
  const auto tools = catalog();
  const Json result =
      tools.result(channel::Outcome::success(R"({"a":[1,2]})", {"hello"}), channel::Tool::search);
  CHECK_FALSE(result.contains("isError"));
  CHECK(result["content"][0]["text"] == R"({"a":[1,2]})");
  CHECK(result["content"][1]["text"] == "console:\nhello");
  CHECK(result["structuredContent"]["result"] == Json{{"a", {1, 2}}});
  CHECK(result["structuredContent"]["logs"] == Json::array({"hello"}));
}

TEST_CASE("a string of several lines is shown as its text, other strings as JSON",
          "[server][tools]") {
  const auto tools = catalog();
  const Json lines = tools.result(
      channel::Outcome::success(R"("type Request = {\n  id: string;\n};")"), channel::Tool::search);
  CHECK(lines["content"][0]["text"] == "type Request = {\n  id: string;\n};");
  CHECK(lines["structuredContent"]["result"] == "type Request = {\n  id: string;\n};");
  const Json one =
      tools.result(channel::Outcome::success(R"("MarketHub API")"), channel::Tool::search);
  CHECK(one["content"][0]["text"] == R"("MarketHub API")");
  const Json list = tools.result(channel::Outcome::success(R"(["a\nb"])"), channel::Tool::search);
  CHECK(list["content"][0]["text"] == R"(["a\nb"])");
}

TEST_CASE("a result nested past the bound keeps its text but no structured copy",
          "[server][tools][adversarial]") {
  const auto tools = catalog();
  // 5,000 levels fit in the default 12,000 characters; a sandbox process could send them.
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  const Json result = tools.result(channel::Outcome::success(deep), channel::Tool::search);
  CHECK(result["content"][0]["text"] == deep);
  CHECK(result["structuredContent"]["result"].is_null());
  CHECK_NOTHROW(dump(result));

  const std::string shallow = std::string(900, '[') + std::string(900, ']');
  CHECK(tools
            .result(channel::Outcome::success(shallow),
                    channel::Tool::search)["structuredContent"]["result"]
            .is_array());
}

TEST_CASE("a result over result_chars is cut and left out of structuredContent",
          "[server][tools]") {
  config::Limits limits;
  limits.result_chars = 100;
  const auto tools = catalog(limits);
  const std::string big = "\"" + std::string(300, 'x') + "\"";
  const Json result = tools.result(channel::Outcome::success(big), channel::Tool::search);
  const std::string text = result["content"][0]["text"];
  CHECK(text.rfind(big.substr(0, 100) + "\n…[cut: 202 more characters", 0) == 0);
  CHECK_FALSE(result["structuredContent"].contains("result"));
  CHECK(result["structuredContent"]["cut"]["total_chars"] == 302);
}

TEST_CASE("a failure is isError with the kind first", "[server][tools]") {
  const auto tools = catalog();
  const Json result = tools.result(
      channel::Outcome::failure(channel::ErrorKind::timeout, "cpu limit 50 ms exceeded"),
      channel::Tool::search);
  CHECK(result["isError"] == true);
  CHECK(result["content"][0]["text"] == "timeout: cpu limit 50 ms exceeded");
  CHECK(result["structuredContent"]["error"] ==
        Json{{"type", "timeout"}, {"message", "cpu limit 50 ms exceeded"}});
}

TEST_CASE("structuredContent carries the call's usage and, for execute, its requests",
          "[server][tools]") {
  config::Limits limits;
  limits.subrequests = 7;
  const auto tools = catalog(limits);
  channel::Outcome outcome = channel::Outcome::success("1");
  outcome.sandbox_us = 12345;
  outcome.cpu_us = 2500;
  outcome.queued_us = 1000;
  outcome.fetches = 53;
  outcome.subrequests = 52;
  outcome.requests.push_back({"GET", "/products", 200, "", 3.14159});
  outcome.requests.push_back(
      {"POST", "http://evil.example/x", 0, "policy: origin not allowed", 0.2});
  const Json result = tools.result(outcome, channel::Tool::execute);
  const Json& structured = result["structuredContent"];
  CHECK(structured["usage"] == Json{{"cpu_ms", 2.5},
                                    {"wall_ms", 12.35},
                                    {"queued_ms", 1.0},
                                    {"subrequests", {{"used", 52}, {"limit", 7}}}});
  CHECK(structured["requests"] ==
        Json::array({Json{{"method", "GET"}, {"path", "/products"}, {"status", 200}, {"ms", 3.14}},
                     Json{{"method", "POST"},
                          {"path", "http://evil.example/x"},
                          {"error", "policy: origin not allowed"},
                          {"ms", 0.2}}}));
  CHECK(structured["requests_not_shown"] == 51);
  // The text form is the result alone.
  CHECK(result["content"].size() == 1);
  CHECK(result["content"][0]["text"] == "1");

  // search has no requests and no subrequests; a call refused before it ran has no times.
  const Json search = tools.result(channel::Outcome::success("1"), channel::Tool::search);
  CHECK(search["structuredContent"]["usage"] == Json::object());
  CHECK_FALSE(search["structuredContent"].contains("requests"));
  const Json refused = tools.result(
      channel::Outcome::failure(channel::ErrorKind::input, "too long"), channel::Tool::execute);
  CHECK(refused["structuredContent"]["usage"] ==
        Json{{"subrequests", {{"used", 0}, {"limit", 7}}}});
  CHECK(refused["structuredContent"]["requests"] == Json::array());
}

TEST_CASE("a failure's text says where, what to do and after which requests", "[server][tools]") {
  const auto tools = catalog(config::Limits{});
  channel::Outcome outcome =
      channel::Outcome::failure(channel::ErrorKind::runtime, "SyntaxError: Unexpected token '<'");
  outcome.error_detail = "line 2, column 9:\n  await r.json()\n        ^";
  outcome.fetches = 6;
  for (int i = 0; i < 4; ++i) {
    outcome.requests.push_back({"GET", "/a" + std::to_string(i), 200, "", 1, "application/json"});
  }
  outcome.requests.push_back({"GET", "/conversations.list", 404, "", 1, "text/html"});
  const Json result = tools.result(outcome, channel::Tool::execute);
  CHECK(result["content"][0]["text"] ==
        "runtime: SyntaxError: Unexpected token '<'\nline 2, column 9:\n  await r.json()\n"
        "        ^\nafter 2 earlier requests, GET /a2 → 200 application/json, GET /a3 → 200 "
        "application/json, GET /conversations.list → 404 text/html, and 1 more not recorded");
  CHECK(result["structuredContent"]["error"]["detail"] == outcome.error_detail);
  CHECK(result["structuredContent"]["requests"][4]["content_type"] == "text/html");
  // search has no requests to name.
  const Json search = tools.result(outcome, channel::Tool::search);
  CHECK(search["content"][0]["text"].get<std::string>().find("after") == std::string::npos);
}

TEST_CASE("a result the sandbox cut keeps its typed value", "[server][tools]") {
  config::Limits limits;
  limits.result_chars = 100;
  const auto tools = catalog(limits);
  channel::Outcome outcome = channel::Outcome::success(R"([1,2,"…[cut: 98 more items]"])");
  outcome.result_cut = true;
  const Json result = tools.result(outcome, channel::Tool::search);
  const std::string text = result["content"][0]["text"];
  CHECK(text.starts_with(R"([1,2,"…[cut: 98 more items]"])"
                         "\n…[cut: the result is longer than "
                         "result_chars (100 characters); it is still JSON"));
  CHECK(result["structuredContent"]["result"] == Json::array({1, 2, "…[cut: 98 more items]"}));
  CHECK(result["structuredContent"]["cut"] == Json{{"shown_chars", 29}, {"result_chars", 100}});
}

TEST_CASE("a refusal says what is allowed", "[server][tools]") {
  const ToolCatalog tools(ApiSummary{"s", "e", {"http://127.0.0.1:8788"}}, config::Limits{});
  const auto outcome = channel::Outcome::failure(channel::ErrorKind::policy,
                                                 "origin https://api.stripe.com is not allowed");
  CHECK(tools.result(outcome, channel::Tool::execute)["content"][0]["text"] ==
        "policy: origin https://api.stripe.com is not allowed\nhint: requests may go only to "
        "http://127.0.0.1:8788; write a relative URL such as '/path', which resolves against "
        "http://127.0.0.1:8788");
  const auto undeclared = channel::Outcome::failure(
      channel::ErrorKind::policy, "GET /x matches no operation in the API description");
  CHECK(tools.result(undeclared, channel::Tool::execute)["content"][0]["text"]
            .get<std::string>()
            .ends_with("(spec.describe('GET /path') shows one)"));
}
