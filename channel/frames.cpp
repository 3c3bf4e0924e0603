#include "channel/frames.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <limits>

namespace codemode::channel {
namespace {

using nlohmann::json;

// MessagePack is decoded recursively, so nesting is bounded before decoding: a hostile process
// must not be able to overflow the parent's stack. Documents nested deeper are refused at load.
constexpr std::size_t kMaxNesting = 1100;

// A SAX consumer that only counts nesting; returning false stops the parse at once.
class NestingCheck {
 public:
  using number_integer_t = json::number_integer_t;
  using number_unsigned_t = json::number_unsigned_t;
  using number_float_t = json::number_float_t;
  using string_t = json::string_t;
  using binary_t = json::binary_t;

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(number_integer_t) { return true; }
  bool number_unsigned(number_unsigned_t) { return true; }
  bool number_float(number_float_t, const string_t&) { return true; }
  bool string(string_t&) { return true; }
  bool binary(binary_t&) { return true; }
  bool start_object(std::size_t) { return ++depth_ <= kMaxNesting; }
  bool key(string_t&) { return true; }
  bool end_object() {
    --depth_;
    return true;
  }
  bool start_array(std::size_t) { return ++depth_ <= kMaxNesting; }
  bool end_array() {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    return false;
  }

 private:
  std::size_t depth_ = 0;
};

template <typename Json>
std::optional<Json> parse_msgpack(std::string_view bytes) {
  NestingCheck check;
  const bool shallow = json::sax_parse(bytes.begin(), bytes.end(), &check,
                                       nlohmann::detail::input_format_t::msgpack, true);
  if (!shallow) return std::nullopt;
  Json value = Json::from_msgpack(bytes.begin(), bytes.end(), true, false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

// Field access that reports instead of throwing.
class Fields {
 public:
  explicit Fields(const json& object) : object_(object) {}

  const json* get(const char* name, json::value_t type) {
    const auto it = object_.find(name);
    if (it == object_.end() || !same_type(it->type(), type)) {
      if (missing_.empty()) missing_ = name;
      return nullptr;
    }
    return &*it;
  }
  std::uint64_t u64(const char* name) {
    const json* value = get(name, json::value_t::number_unsigned);
    return value ? value->get<std::uint64_t>() : 0;
  }
  std::uint32_t u32(const char* name) {
    const std::uint64_t value = u64(name);
    if (value > std::numeric_limits<std::uint32_t>::max() && missing_.empty()) missing_ = name;
    return static_cast<std::uint32_t>(value);
  }
  bool boolean(const char* name) {
    const json* value = get(name, json::value_t::boolean);
    return value && value->get<bool>();
  }
  std::string text(const char* name) {
    const json* value = get(name, json::value_t::string);
    return value ? value->get<std::string>() : std::string();
  }
  std::string bytes(const char* name) {
    const json* value = get(name, json::value_t::binary);
    if (!value) return {};
    const auto& binary = value->get_binary();
    return std::string(binary.begin(), binary.end());
  }
  gateway::Headers headers(const char* name) {
    gateway::Headers out;
    const json* list = get(name, json::value_t::array);
    if (!list) return out;
    for (const auto& pair : *list) {
      if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_string()) {
        if (missing_.empty()) missing_ = name;
        return {};
      }
      out.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
    }
    return out;
  }
  std::vector<std::string> strings(const char* name) {
    std::vector<std::string> out;
    const json* list = get(name, json::value_t::array);
    if (!list) return out;
    for (const auto& item : *list) {
      if (!item.is_string()) {
        if (missing_.empty()) missing_ = name;
        return {};
      }
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  // Empty when every field asked for was present with its type.
  const std::string& problem() const { return missing_; }

 private:
  static bool same_type(json::value_t have, json::value_t want) {
    // MessagePack writes non-negative integers as unsigned; signed ones are never expected.
    return have == want;
  }
  const json& object_;
  std::string missing_;
};

json headers_json(const gateway::Headers& headers) {
  json out = json::array();
  for (const auto& [name, value] : headers) out.push_back(json::array({name, value}));
  return out;
}

json binary(std::string_view bytes) {
  return json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
}

json limits_json(const config::Limits& l) {
  return json::array({l.code_chars, l.result_chars, l.cpu_ms, l.wall_ms, l.heap_mb, l.subrequests,
                      l.response_bytes});
}

std::optional<config::Limits> limits_from(const json& list) {
  if (!list.is_array() || list.size() != 7) return std::nullopt;
  std::uint32_t v[7];
  for (std::size_t i = 0; i < 7; ++i) {
    if (!list[i].is_number_unsigned()) return std::nullopt;
    const auto n = list[i].get<std::uint64_t>();
    if (n > std::numeric_limits<std::uint32_t>::max()) return std::nullopt;
    v[i] = static_cast<std::uint32_t>(n);
  }
  return config::Limits{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

struct Encoder {
  json operator()(const Init& m) const {
    return {{"t", "init"},
            {"spec", m.spec},
            {"fetch", m.fetch},
            {"limits", limits_json(m.limits)},
            {"cpu_seconds", m.cpu_seconds},
            {"jitless", m.jitless},
            {"concurrency", m.concurrency},
            {"fetch_base", m.fetch_base}};
  }
  json operator()(const Ready& m) const { return {{"t", "ready"}, {"layers", m.layers}}; }
  json operator()(const Run& m) const {
    return {{"t", "run"},
            {"id", m.id},
            {"tool", std::string(to_string(m.tool))},
            {"code", m.code},
            {"limits", limits_json(m.limits)}};
  }
  json operator()(const Cancel& m) const { return {{"t", "cancel"}, {"id", m.id}}; }
  json operator()(const FetchRequest& m) const {
    return {{"t", "fetch"},
            {"call", m.call_id},
            {"fetch", m.fetch_id},
            {"method", m.request.method},
            {"url", m.request.url},
            {"headers", headers_json(m.request.headers)},
            {"body", binary(m.request.body)}};
  }
  json operator()(const FetchReply& m) const {
    json out = {{"t", "reply"}, {"call", m.call_id}, {"fetch", m.fetch_id}};
    if (const auto* response = std::get_if<gateway::InboundResponse>(&m.result)) {
      out["status"] = response->status;
      out["status_text"] = response->status_text;
      out["headers"] = headers_json(response->headers);
      out["body"] = binary(response->body);
      out["final_url"] = response->final_url;
      out["redirects"] = response->redirects;
    } else {
      const auto& error = std::get<gateway::GatewayError>(m.result);
      out["error"] = std::string(gateway::to_string(error.kind));
      out["message"] = error.message;
    }
    return out;
  }
  json operator()(const AbortFetch& m) const {
    return {{"t", "abort"}, {"call", m.call_id}, {"fetch", m.fetch_id}};
  }
  json operator()(const FetchWait& m) const {
    return {{"t", "wait"}, {"call", m.call_id}, {"fetch", m.fetch_id}, {"waiting", m.waiting}};
  }
  json operator()(const Result& m) const {
    json out = {{"t", "result"},
                {"id", m.id},
                {"ok", m.outcome.ok},
                {"logs", m.outcome.logs},
                {"us", m.outcome.sandbox_us},
                {"cpu", m.outcome.cpu_us},
                {"last", m.last}};
    if (m.outcome.ok) {
      out["value"] = m.outcome.result_json;
      out["cut"] = m.outcome.result_cut;
    } else {
      out["kind"] = std::string(to_string(m.outcome.error_kind));
      out["message"] = m.outcome.error_message;
      out["detail"] = m.outcome.error_detail;
    }
    return out;
  }
};

std::optional<ErrorKind> error_kind_from(std::string_view name) {
  for (ErrorKind kind : {ErrorKind::input, ErrorKind::compile, ErrorKind::runtime,
                         ErrorKind::timeout, ErrorKind::memory, ErrorKind::policy}) {
    if (to_string(kind) == name) return kind;
  }
  return std::nullopt;
}

// The decoders of the messages with more than a line of fields. A DecodeError returned here
// is about a field's value (limits, tool, kind); a field missing or of the wrong type is left in
// `f.problem()`, which decode_object reports for every message alike.
using Decoded = std::variant<Message, DecodeError>;

Decoded decode_init(Fields& f) {
  Init m;
  m.fetch = f.boolean("fetch");
  m.cpu_seconds = f.u32("cpu_seconds");
  m.jitless = f.boolean("jitless");
  m.concurrency = f.u32("concurrency");
  m.fetch_base = f.text("fetch_base");
  if (const json* limits = f.get("limits", json::value_t::array)) {
    auto parsed = limits_from(*limits);
    if (!parsed) return DecodeError{"message \"init\": field \"limits\" is malformed"};
    m.limits = *parsed;
  }
  m.spec = f.boolean("spec");
  return m;
}

Decoded decode_run(Fields& f) {
  Run m;
  m.id = f.u64("id");
  const std::string tool = f.text("tool");
  m.code = f.text("code");
  if (const json* limits = f.get("limits", json::value_t::array)) {
    auto parsed = limits_from(*limits);
    if (!parsed) return DecodeError{"message \"run\": field \"limits\" is malformed"};
    m.limits = *parsed;
  }
  if (tool == "execute") {
    m.tool = Tool::execute;
  } else if (tool != "search" && f.problem().empty()) {
    return DecodeError{"message \"run\": unknown tool"};
  }
  return m;
}

FetchRequest decode_fetch(Fields& f) {
  FetchRequest m;
  m.call_id = f.u64("call");
  m.fetch_id = f.u64("fetch");
  m.request.method = f.text("method");
  m.request.url = f.text("url");
  m.request.headers = f.headers("headers");
  m.request.body = f.bytes("body");
  return m;
}

// A fetch's reply: the gateway's error when the body has one, else the upstream's response.
FetchReply decode_reply(Fields& f, const json& body) {
  FetchReply m;
  m.call_id = f.u64("call");
  m.fetch_id = f.u64("fetch");
  if (body.contains("error")) {
    gateway::GatewayError error;
    const std::string kind = f.text("error");
    error.kind = kind == "policy" ? gateway::ErrorKind::policy : gateway::ErrorKind::runtime;
    error.message = f.text("message");
    m.result = std::move(error);
  } else {
    gateway::InboundResponse response;
    response.status = f.u32("status");
    response.status_text = f.text("status_text");
    response.headers = f.headers("headers");
    response.body = f.bytes("body");
    response.final_url = f.text("final_url");
    response.redirects = f.u32("redirects");
    m.result = std::move(response);
  }
  return m;
}

Decoded decode_result(Fields& f) {
  Result m;
  m.id = f.u64("id");
  m.outcome.ok = f.boolean("ok");
  m.outcome.logs = f.strings("logs");
  m.outcome.sandbox_us = f.u64("us");
  m.outcome.cpu_us = f.u64("cpu");
  m.last = f.boolean("last");
  if (m.outcome.ok) {
    m.outcome.result_json = f.text("value");
    m.outcome.result_cut = f.boolean("cut");
  } else {
    const auto kind = error_kind_from(f.text("kind"));
    if (!kind && f.problem().empty()) return DecodeError{"message \"result\": unknown kind"};
    if (kind) m.outcome.error_kind = *kind;
    m.outcome.error_message = f.text("message");
    m.outcome.error_detail = f.text("detail");
  }
  return m;
}

Decoded decode_object(const json& body) {
  Fields f(body);
  const std::string type = f.text("t");
  // A decoder's own error stands; otherwise a field it found missing or malformed fails it.
  auto checked = [&](Decoded decoded) -> Decoded {
    if (std::holds_alternative<DecodeError>(decoded) || f.problem().empty()) return decoded;
    return DecodeError{"message \"" + type + "\": field \"" + f.problem() + "\" is malformed"};
  };
  if (type == "init") return checked(decode_init(f));
  if (type == "ready") return checked(Ready{f.strings("layers")});
  if (type == "run") return checked(decode_run(f));
  if (type == "cancel") return checked(Cancel{f.u64("id")});
  if (type == "fetch") return checked(decode_fetch(f));
  if (type == "reply") return checked(decode_reply(f, body));
  if (type == "abort") return checked(AbortFetch{f.u64("call"), f.u64("fetch")});
  if (type == "wait") {
    return checked(FetchWait{f.u64("call"), f.u64("fetch"), f.boolean("waiting")});
  }
  if (type == "result") return checked(decode_result(f));
  if (!f.problem().empty()) return DecodeError{"message without a type"};
  return DecodeError{"unknown message type"};
}

}  // namespace

std::string encode_body(const Message& message) {
  const json body = std::visit(Encoder{}, message);
  std::string out;
  json::to_msgpack(body, nlohmann::detail::output_adapter<char>(out));
  return out;
}

std::string encode_frame(const Message& message) {
  const std::string body = encode_body(message);
  std::string frame(kFramePrefixBytes, '\0');
  const auto size = static_cast<std::uint32_t>(body.size());
  for (std::size_t i = 0; i < kFramePrefixBytes; ++i) {
    frame[i] = static_cast<char>((size >> (8 * i)) & 0xFF);
  }
  return frame + body;
}

std::variant<Message, DecodeError> decode(std::string_view body) {
  const auto parsed = parse_msgpack<json>(body);
  if (!parsed) return DecodeError{"a message that is not valid MessagePack"};
  if (!parsed->is_object()) return DecodeError{"a message that is not a map"};
  return decode_object(*parsed);
}

std::variant<std::optional<std::string>, DecodeError> FrameReader::next() {
  if (buffered() < kFramePrefixBytes) return std::optional<std::string>();
  std::uint32_t size = 0;
  for (std::size_t i = 0; i < kFramePrefixBytes; ++i) {
    size |= static_cast<std::uint32_t>(static_cast<unsigned char>(buffer_[consumed_ + i]))
            << (8 * i);
  }
  if (size > max_body_bytes_) {
    return DecodeError{"a frame of " + std::to_string(size) + " bytes (the limit is " +
                       std::to_string(max_body_bytes_) + ")"};
  }
  if (buffered() < kFramePrefixBytes + size) return std::optional<std::string>();
  std::string body = buffer_.substr(consumed_ + kFramePrefixBytes, size);
  consumed_ += kFramePrefixBytes + size;
  // Compact once the consumed prefix dominates, so a long stream does not grow the buffer; a
  // large frame's memory is given back once it has been taken.
  if (consumed_ == buffer_.size() && buffer_.capacity() > (std::size_t{1} << 20)) {
    std::string().swap(buffer_);
    consumed_ = 0;
  } else if (consumed_ > 65536 && consumed_ * 2 > buffer_.size()) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  return std::optional<std::string>(std::move(body));
}

bool send_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (sent < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(sent));
  }
  return true;
}

long read_some(int fd, char* buffer, std::size_t size) {
  for (;;) {
    const ssize_t got = ::read(fd, buffer, size);
    if (got < 0 && errno == EINTR) continue;
    return static_cast<long>(got);
  }
}

}  // namespace codemode::channel
