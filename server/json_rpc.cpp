#include "server/json_rpc.h"

namespace codemode::server {

namespace {

bool valid_id(const Json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

JsonRpcError invalid(std::string message, Json id = nullptr) {
  return JsonRpcError{ErrorCode::invalid_request, std::move(message), std::move(id)};
}

}  // namespace

Message parse_message(std::string_view text) {
  Json message = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) {
    return JsonRpcError{ErrorCode::parse_error, "parse error: the message is not valid JSON",
                        nullptr};
  }
  if (message.is_array()) return invalid("invalid request: JSON-RPC batches are not supported");
  if (!message.is_object()) return invalid("invalid request: a message must be a JSON object");

  Json id = nullptr;
  const bool has_id = message.contains("id");
  if (has_id && valid_id(message["id"])) id = message["id"];

  const auto version = message.find("jsonrpc");
  if (version == message.end() || *version != "2.0") {
    return invalid("invalid request: \"jsonrpc\" must be \"2.0\"", id);
  }

  const auto method = message.find("method");
  if (method == message.end()) {
    if (has_id && (message.contains("result") || message.contains("error"))) {
      return Response{message["id"]};
    }
    return invalid("invalid request: \"method\" is missing", id);
  }
  if (!method->is_string()) return invalid("invalid request: \"method\" must be a string", id);

  Json params = nullptr;
  if (auto p = message.find("params"); p != message.end()) {
    if (!p->is_object() && !p->is_array()) {
      return invalid("invalid request: \"params\" must be an object or an array", id);
    }
    params = *p;
  }

  if (!has_id) return Notification{method->get<std::string>(), std::move(params)};
  if (!valid_id(message["id"])) {
    return invalid("invalid request: \"id\" must be a string or an integer");
  }
  return Request{std::move(id), method->get<std::string>(), std::move(params)};
}

std::string dump(const Json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

std::string serialize_result(const Json& id, const Json& result) {
  return dump(Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
}

std::string serialize_error(const Json& id, ErrorCode code, std::string_view message) {
  return dump(Json{{"jsonrpc", "2.0"},
                   {"id", id},
                   {"error", {{"code", static_cast<int>(code)}, {"message", message}}}});
}

std::string serialize_error(const JsonRpcError& error) {
  if (error.data.is_null()) return serialize_error(error.id, error.code, error.message);
  return dump(Json{{"jsonrpc", "2.0"},
                   {"id", error.id},
                   {"error",
                    {{"code", static_cast<int>(error.code)},
                     {"message", error.message},
                     {"data", error.data}}}});
}

std::string serialize_notification(std::string_view method, const Json& params) {
  return dump(Json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
}

}  // namespace codemode::server
