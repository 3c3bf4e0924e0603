#include "server/tools.h"

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
  CHECK(tools.find("search") == sandbox::Tool::search);
  CHECK(tools.find("execute") == sandbox::Tool::execute);
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
  const Json result = tools.result(sandbox::Outcome::success(R"({"a":[1,2]})", {"hello"}));
  CHECK_FALSE(result.contains("isError"));
  CHECK(result["content"][0]["text"] == R"({"a":[1,2]})");
  CHECK(result["content"][1]["text"] == "console:\nhello");
  CHECK(result["structuredContent"]["result"] == Json{{"a", {1, 2}}});
  CHECK(result["structuredContent"]["logs"] == Json::array({"hello"}));
}

TEST_CASE("a result nested past the bound keeps its text but no structured copy",
          "[server][tools][adversarial]") {
  const auto tools = catalog();
  // 5,000 levels fit in the default 12,000 characters; a sandbox process could send them.
  const std::string deep = std::string(5000, '[') + std::string(5000, ']');
  const Json result = tools.result(sandbox::Outcome::success(deep));
  CHECK(result["content"][0]["text"] == deep);
  CHECK(result["structuredContent"]["result"].is_null());
  CHECK_NOTHROW(dump(result));

  const std::string shallow = std::string(900, '[') + std::string(900, ']');
  CHECK(tools.result(sandbox::Outcome::success(shallow))["structuredContent"]["result"].is_array());
}

TEST_CASE("a result over result_chars is cut and left out of structuredContent",
          "[server][tools]") {
  config::Limits limits;
  limits.result_chars = 100;
  const auto tools = catalog(limits);
  const std::string big = "\"" + std::string(300, 'x') + "\"";
  const Json result = tools.result(sandbox::Outcome::success(big));
  const std::string text = result["content"][0]["text"];
  CHECK(text.rfind(big.substr(0, 100) + "\n…[cut: 202 more characters", 0) == 0);
  CHECK_FALSE(result["structuredContent"].contains("result"));
  CHECK(result["structuredContent"]["cut"]["total_chars"] == 302);
}

TEST_CASE("a failure is isError with the kind first", "[server][tools]") {
  const auto tools = catalog();
  const Json result = tools.result(
      sandbox::Outcome::failure(sandbox::ErrorKind::timeout, "cpu limit 50 ms exceeded"));
  CHECK(result["isError"] == true);
  CHECK(result["content"][0]["text"] == "timeout: cpu limit 50 ms exceeded");
  CHECK(result["structuredContent"]["error"] ==
        Json{{"type", "timeout"}, {"message", "cpu limit 50 ms exceeded"}});
}
