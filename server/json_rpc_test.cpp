#include "server/json_rpc.h"

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
  CHECK(std::holds_alternative<Response>(
      parse_message(R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}})")));
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
