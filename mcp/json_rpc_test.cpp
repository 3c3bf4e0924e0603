#include "mcp/json_rpc.h"

#include <catch2/catch.hpp>

using namespace codemode::server;

TEST_CASE("a request keeps its id, method and params", "[server][json_rpc]") {
  auto message = parse_message(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}})");
  auto* request = std::get_if<Request>(&message);
  REQUIRE(request != nullptr);
  CHECK(request->id == 7);
  CHECK(request->method == "tools/list");
  CHECK(request->params.is_object());

  message = parse_message(R"({"jsonrpc":"2.0","id":"abc","method":"ping"})");
  request = std::get_if<Request>(&message);
  REQUIRE(request != nullptr);
  CHECK(request->id == "abc");
  CHECK(request->params.is_null());
}

TEST_CASE("a message without id is a notification", "[server][json_rpc]") {
  auto message = parse_message(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  auto* notification = std::get_if<Notification>(&message);
  REQUIRE(notification != nullptr);
  CHECK(notification->method == "notifications/initialized");
}

TEST_CASE("a result or error from the peer is a response", "[server][json_rpc]") {
  CHECK(std::holds_alternative<Response>(parse_message(R"({"jsonrpc":"2.0","id":1,"result":{}})")));
  const auto error = parse_message(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}})");
  REQUIRE(std::holds_alternative<Response>(error));
  CHECK(std::get<Response>(error).error);
  const auto result = parse_message(R"({"jsonrpc":"2.0","id":"a-1","result":{"action":"accept"}})");
  REQUIRE(std::holds_alternative<Response>(result));
  CHECK(std::get<Response>(result).id == "a-1");
  CHECK_FALSE(std::get<Response>(result).error);
  CHECK(std::get<Response>(result).result == Json{{"action", "accept"}});
}

namespace {
JsonRpcError error_of(std::string_view text) {
  auto message = parse_message(text);
  auto* error = std::get_if<JsonRpcError>(&message);
  REQUIRE(error != nullptr);
  return *error;
}
}  // namespace

TEST_CASE("malformed messages become errors with the id when it can be read",
          "[server][json_rpc]") {
  auto e = error_of("{not json");
  CHECK(e.code == ErrorCode::parse_error);
  CHECK(e.id.is_null());

  e = error_of("\xff\xfe");
  CHECK(e.code == ErrorCode::parse_error);

  e = error_of(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  CHECK(e.code == ErrorCode::invalid_request);
  CHECK(e.message == "invalid request: JSON-RPC batches are not supported");

  e = error_of("42");
  CHECK(e.code == ErrorCode::invalid_request);

  e = error_of(R"({"id":3,"method":"ping"})");
  CHECK(e.code == ErrorCode::invalid_request);
  CHECK(e.id == 3);
  CHECK(e.message == "invalid request: \"jsonrpc\" must be \"2.0\"");

  e = error_of(R"({"jsonrpc":"2.0","id":4,"method":5})");
  CHECK(e.id == 4);
  CHECK(e.message == "invalid request: \"method\" must be a string");

  e = error_of(R"({"jsonrpc":"2.0","id":5,"method":"ping","params":"x"})");
  CHECK(e.message == "invalid request: \"params\" must be an object or an array");

  e = error_of(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
  CHECK(e.message == "invalid request: \"id\" must be a string or an integer");
  CHECK(e.id.is_null());

  e = error_of(R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})");
  CHECK(e.code == ErrorCode::invalid_request);

  e = error_of(R"({"jsonrpc":"2.0","id":9})");
  CHECK(e.message == "invalid request: \"method\" is missing");
  CHECK(e.id == 9);
}

TEST_CASE("serialisations are single JSON lines", "[server][json_rpc]") {
  CHECK(serialize_result(1, Json::object()) == R"({"id":1,"jsonrpc":"2.0","result":{}})");
  CHECK(serialize_error(nullptr, ErrorCode::parse_error, "parse error") ==
        R"({"error":{"code":-32700,"message":"parse error"},"id":null,"jsonrpc":"2.0"})");
  CHECK(serialize_result("a", Json("line\nbreak")).find('\n') == std::string::npos);
  // Invalid UTF-8 that reached a Json value is replaced, never thrown.
  CHECK_NOTHROW(serialize_result(1, Json(std::string("\xff"))));
}

namespace {
// `{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":` then `depth` nested `{"a":`
// levels (the params object itself counts as one) around `0`.
std::string deep_call(std::size_t depth, std::string_view id = "7") {
  std::string text =
      R"({"jsonrpc":"2.0","id":)" + std::string(id) + R"(,"method":"tools/call","params":)";
  for (std::size_t i = 0; i < depth; ++i) text += R"({"a":)";
  text += "0";
  text.append(depth, '}');
  return text + "}";
}
}  // namespace

TEST_CASE("a message nested past the bound is refused before its tree is built, with its id",
          "[server][json_rpc][adversarial]") {
  // The review's crash: ~100,000 levels in a ~600 KB line copied recursively on the main thread.
  auto e = error_of(deep_call(100'000));
  CHECK(e.code == ErrorCode::invalid_request);
  CHECK(e.id == 7);
  CHECK(e.message == "invalid request: the message nests deeper than 128 levels");

  // Arrays count as objects do; no id read before the fault gives a null id.
  std::string arrays = R"({"jsonrpc":"2.0","method":"x","params":)" + std::string(200'000, '[');
  e = error_of(arrays);
  CHECK(e.code == ErrorCode::invalid_request);
  CHECK(e.id.is_null());

  // The bound itself: the message is level 1, params level 2, so 127 levels of params pass.
  CHECK(std::holds_alternative<Request>(parse_message(deep_call(kMaxMessageNesting - 1))));
  CHECK(error_of(deep_call(kMaxMessageNesting)).code == ErrorCode::invalid_request);
}

TEST_CASE("a message that names a member twice is refused at any depth",
          "[server][json_rpc][adversarial]") {
  // A proxy keeping the first "method" sees tools/list; a last-wins parser would run tools/call.
  auto e = error_of(
      R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{},"method":"tools/call"})");
  CHECK(e.code == ErrorCode::invalid_request);
  CHECK(e.id == 3);
  CHECK(e.message ==
        "invalid request: duplicate key \"method\" (a message must name each member once)");

  e = error_of(R"({"jsonrpc":"2.0","id":"q","method":"tools/call",)"
               R"("params":{"name":"execute","arguments":{"code":"1","code":"2"}}})");
  CHECK(e.id == "q");
  CHECK(e.message.find("\"code\"") != std::string::npos);

  // Two ids: the refusal answers neither guess. The first was read, so it is the one echoed.
  e = error_of(R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})");
  CHECK(e.code == ErrorCode::invalid_request);
  CHECK(e.id == 1);

  // A key with control characters comes back JSON-escaped and cut, never raw.
  e = error_of(std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping","x)") + "\\n" +
               std::string(300, 'k') + R"(":1,"x\n)" + std::string(300, 'k') + R"(":2})");
  CHECK(e.message.find('\n') == std::string::npos);
  CHECK(e.message.size() < 200);

  // The same key in sibling objects is no duplicate.
  CHECK(std::holds_alternative<Request>(parse_message(
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"k":1},"b":{"k":2},"c":[{"k":1},{"k":2}]}})")));
}

TEST_CASE("parse_bounded reports why it refused", "[server][json_rpc]") {
  CHECK(parse_bounded("[[1]]", 2).problem == BoundedParse::Problem::none);
  CHECK(parse_bounded("[[1]]", 2).value == Json::parse("[[1]]"));
  CHECK(parse_bounded("[[[1]]]", 2).problem == BoundedParse::Problem::too_deep);
  CHECK(parse_bounded("[[[1]]]", 2).value.is_discarded());
  CHECK(parse_bounded(R"({"a":1,"a":1})", 8).problem == BoundedParse::Problem::duplicate_key);
  CHECK(parse_bounded(R"({"a":1,"a":1})", 8).duplicate == "a");
  CHECK(parse_bounded("{", 8).problem == BoundedParse::Problem::syntax);
  CHECK(parse_bounded("1 2", 8).problem == BoundedParse::Problem::syntax);
}
