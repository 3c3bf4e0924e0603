// Fuzzes what a JSON-RPC peer controls: the framing (parse_message) and the MCP session behind
// it. An input is a conversation, one message per line, fed to a fresh McpSession wired to a
// real Sandbox and its processes, as the stdio transport would feed it. tools/call reaches the
// sandbox with a 5 ms CPU budget, so arguments checks, check_input and result shaping are all
// covered.
//
// Invariants: parse_message never throws and classifies consistently; the session never
// throws; everything it sends is one JSON-RPC 2.0 object on one line; no request is answered
// more often than it was asked; when the conversation is over nothing is left in flight.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "fuzz/check.h"
#include "mcp/json_rpc.h"
#include "mcp/mcp_session.h"
#include "mcp/tools.h"
#include "sandbox/sandbox.h"
#include "sandbox/test_child.h"

namespace {

using namespace codemode;
using server::Json;

config::Limits fuzz_limits() {
  config::Limits limits;
  limits.cpu_ms = 5;
  limits.wall_ms = 200;
  limits.heap_mb = 16;
  return limits;
}

// Process-lifetime: one Sandbox, with its sandbox processes, serves every input. Never destroyed
// (libFuzzer leaves through exit(), and draining the pool from a static destructor buys nothing).
// Calls run in real sandbox processes (the binary's sandbox role), as in mcp_session_test.
sandbox::SandboxOptions sandbox_options() { return sandbox::test_sandbox_options(fuzz_limits()); }

struct World {
  boost::asio::io_context io;
  server::ToolCatalog tools{server::ApiSummary{"Search the API.", "Call the API.", {}},
                            fuzz_limits()};
  sandbox::Sandbox sandbox{sandbox_options()};
};

World& world() {
  static World* const kInstance = new World;
  return *kInstance;
}

// Requests seen and answers sent per id (dumped, so 1 and "1" differ). A peer may reuse an id,
// so the promise is per message: never more answers to an id than messages that carried it.
struct Tally {
  std::map<std::string, int> asked;
  std::map<std::string, int> answered;
};

// Nesting depth of a value (a scalar is 0), without recursion.
std::size_t depth_of(const Json& root) {
  std::size_t deepest = 0;
  std::vector<std::pair<const Json*, std::size_t>> stack{{&root, 0}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (!node->is_structured()) continue;
    deepest = std::max(deepest, depth + 1);
    for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
  }
  return deepest;
}

void check_classified(std::string_view line, Tally& tally) {
  const server::Message message = server::parse_message(line);
  if (const auto* request = std::get_if<server::Request>(&message)) {
    FUZZ_CHECK(request->id.is_string() || request->id.is_number_integer(),
               "a Request's id is a string or an integer");
    FUZZ_CHECK(
        request->params.is_null() || request->params.is_object() || request->params.is_array(),
        "params are an object, an array or absent");
    // The message is level 1, params level 2: what was accepted fits the bound.
    FUZZ_CHECK(depth_of(request->params) + 1 <= server::kMaxMessageNesting,
               "an accepted message nests no deeper than kMaxMessageNesting");
    ++tally.asked[request->id.dump()];
  } else if (const auto* error = std::get_if<server::JsonRpcError>(&message)) {
    FUZZ_CHECK(!error->message.empty(), "an error says what is wrong");
    const Json reply = Json::parse(server::serialize_error(*error));
    FUZZ_CHECK(reply["error"]["code"] == static_cast<int>(error->code), "the code survives");
    ++tally.asked[error->id.dump()];
  }
}

void check_sent(const std::string& text, Tally& tally) {
  FUZZ_CHECK(text.find('\n') == std::string::npos, "one message is one line");
  const Json message = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(message.is_object(), "every message sent is a JSON object");
  FUZZ_CHECK(message.value("jsonrpc", "") == "2.0", "every message sent is JSON-RPC 2.0");
  const bool is_answer = message.contains("result") || message.contains("error");
  FUZZ_CHECK(is_answer != message.contains("method"), "a message is an answer or a notification");
  if (is_answer) {
    const std::string id = message["id"].dump();
    FUZZ_CHECK(++tally.answered[id] <= tally.asked[id],
               "no id is answered more often than messages carried it");
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  world();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = world();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  Tally tally;
  auto session = std::make_shared<server::McpSession>(
      w.io.get_executor(), w.tools, w.sandbox, server::ServerInfo{"codemode-mcp", "0.0.0", ""},
      [&tally](const std::string& message) { check_sent(message, tally); });

  std::size_t start = 0;
  while (start <= input.size()) {
    std::size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(start, end - start);
    check_classified(line, tally);
    session->handle(line);
    start = end + 1;
  }

  // Runs until every call is answered; completions arrive from the Sandbox's own I/O thread.
  auto work = boost::asio::make_work_guard(w.io);
  bool idle = false;
  session->when_idle([&idle] { idle = true; });
  w.io.restart();
  while (!idle) w.io.run_one();
  work.reset();
  w.io.poll();
  FUZZ_CHECK(session->in_flight() == 0, "nothing is in flight once the session is idle");
  return 0;
}
