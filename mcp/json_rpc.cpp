#include "mcp/json_rpc.h"

#include <set>
#include <vector>

namespace codemode::server {

namespace {

// nlohmann's own DOM builder behind a gate: each event passes the nesting and duplicate-key
// checks before the builder sees it, and a refused event stops the parse at once. Each open
// object keeps the keys it has seen (a set, so a hostile object of many keys costs n log n).
class BoundedBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  BoundedBuilder(Json& root, std::size_t max_nesting, BoundedParse& result)
      : dom_(root, /*allow_exceptions_=*/false), max_nesting_(max_nesting), result_(result) {}

  bool null() { return scalar(nullptr) && dom_.null(); }
  bool boolean(bool v) { return scalar(v) && dom_.boolean(v); }
  bool number_integer(number_integer_t v) { return scalar(v) && dom_.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) { return scalar(v) && dom_.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& text) {
    return scalar(v) && dom_.number_float(v, text);
  }
  bool string(string_t& v) { return scalar(v) && dom_.string(v); }
  bool binary(binary_t& v) { return dom_.binary(v); }

  bool start_object(std::size_t elements) {
    if (!open()) return false;
    frames_.emplace_back();
    return dom_.start_object(elements);
  }
  bool key(string_t& name) {
    if (!frames_.back().insert(name).second) {
      result_.problem = BoundedParse::Problem::duplicate_key;
      result_.duplicate = name;
      return false;
    }
    next_is_top_level_id_ = frames_.size() == 1 && name == "id";
    return dom_.key(name);
  }
  bool end_object() {
    frames_.pop_back();
    return dom_.end_object();
  }
  bool start_array(std::size_t elements) {
    if (!open()) return false;
    frames_.emplace_back();
    return dom_.start_array(elements);
  }
  bool end_array() {
    frames_.pop_back();
    return dom_.end_array();
  }
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& error) {
    result_.problem = BoundedParse::Problem::syntax;
    return dom_.parse_error(position, token, error);
  }

 private:
  // The keys an open object has seen; empty for an open array.
  using Frame = std::set<std::string>;

  bool open() {
    next_is_top_level_id_ = false;
    if (frames_.size() + 1 > max_nesting_) {
      result_.problem = BoundedParse::Problem::too_deep;
      return false;
    }
    return true;
  }
  // A scalar value: remembered when it is the top-level "id", so that a refusal further on
  // can still be answered to the request it belongs to.
  template <typename T>
  bool scalar(const T& v) {
    if (next_is_top_level_id_) result_.top_level_id = Json(v);
    next_is_top_level_id_ = false;
    return true;
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::size_t max_nesting_;
  BoundedParse& result_;
  std::vector<Frame> frames_;
  bool next_is_top_level_id_ = false;
};

bool valid_id(const Json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

JsonRpcError invalid(std::string message, Json id = nullptr) {
  return JsonRpcError{ErrorCode::invalid_request, std::move(message), std::move(id)};
}

}  // namespace

BoundedParse parse_bounded(std::string_view text, std::size_t max_nesting) {
  BoundedParse result;
  BoundedBuilder builder(result.value, max_nesting, result);
  const bool complete = Json::sax_parse(text.begin(), text.end(), &builder,
                                        nlohmann::detail::input_format_t::json, /*strict=*/true);
  if (!complete && result.problem == BoundedParse::Problem::none) {
    result.problem = BoundedParse::Problem::syntax;
  }
  if (result.problem != BoundedParse::Problem::none) result.value = Json(Json::value_t::discarded);
  return result;
}

Message parse_message(std::string_view text) {
  BoundedParse parsed = parse_bounded(text, kMaxMessageNesting);
  Json recovered_id = valid_id(parsed.top_level_id) ? parsed.top_level_id : Json(nullptr);
  switch (parsed.problem) {
    case BoundedParse::Problem::none:
      break;
    case BoundedParse::Problem::syntax:
      return JsonRpcError{ErrorCode::parse_error, "parse error: the message is not valid JSON",
                          nullptr};
    case BoundedParse::Problem::too_deep:
      return invalid("invalid request: the message nests deeper than " +
                         std::to_string(kMaxMessageNesting) + " levels",
                     std::move(recovered_id));
    case BoundedParse::Problem::duplicate_key: {
      // The key is the peer's text: quoted through JSON and cut, never echoed raw.
      std::string shown = parsed.duplicate.substr(0, 64);
      return invalid("invalid request: duplicate key " + dump(Json(shown)) +
                         " (a message must name each member once)",
                     std::move(recovered_id));
    }
  }
  Json message = std::move(parsed.value);
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
      const bool error = message.contains("error");
      return Response{message["id"], error ? Json() : message["result"], error};
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
