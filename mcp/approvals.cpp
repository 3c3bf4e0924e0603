#include "mcp/approvals.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include "mcp/base64.h"
#include "net/ascii.h"
#include "observe/trace_context.h"
#include "sandbox/sandbox.h"

namespace codemode::server {

gateway::Headers code_set_headers(const gateway::Headers& headers) {
  gateway::Headers out;
  for (const auto& header : headers) {
    if (!is_trace_header(header.first)) out.push_back(header);
  }
  return out;
}

std::string question_digest(const gateway::ApprovalRequest& request) {
  return gateway::approval_digest(request.method, request.url, code_set_headers(request.headers),
                                  request.body);
}

namespace {

// One UTF-8 sequence at the front of `text`: its code point and length; length 0 when the bytes
// there are not one (overlong forms, surrogates and values past U+10FFFF included).
struct Decoded {
  char32_t code_point = 0;
  std::size_t size = 0;
};
Decoded decode_utf8(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  std::size_t size = 0;
  char32_t value = 0;
  unsigned min_second = 0x80;
  unsigned max_second = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    size = 2;
    value = lead & 0x1fU;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    size = 3;
    value = lead & 0x0fU;
    if (lead == 0xe0) min_second = 0xa0;  // overlong
    if (lead == 0xed) max_second = 0x9f;  // surrogates
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    size = 4;
    value = lead & 0x07U;
    if (lead == 0xf0) min_second = 0x90;  // overlong
    if (lead == 0xf4) max_second = 0x8f;  // past U+10FFFF
  } else {
    return {};
  }
  if (text.size() < size || byte(1) < min_second || byte(1) > max_second) return {};
  for (std::size_t i = 1; i < size; ++i) {
    if (i > 1 && (byte(i) < 0x80 || byte(i) > 0xbf)) return {};
    value = (value << 6U) | (byte(i) & 0x3fU);
  }
  return {value, size};
}

// Characters a person does not see as themselves, or that change how the text around them
// reads: C0 and C1 controls and DEL (a terminal obeys ESC and CSI; CR rewrites a line), bidi
// controls (U+202E shows what follows backwards), zero-width and other invisible format
// characters, line and paragraph separators, variation selectors, and the tag characters that
// can spell text nobody sees.
bool hidden_character(char32_t c) {
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return true;
  switch (c) {
    case 0x00ad:  // soft hyphen
    case 0x034f:  // combining grapheme joiner
    case 0x061c:  // Arabic letter mark
    case 0x115f:  // Hangul fillers
    case 0x1160:
    case 0x17b4:  // Khmer inherent vowels
    case 0x17b5:
    case 0x3164:
    case 0xfeff:  // zero-width no-break space
    case 0xffa0:
      return true;
    default:
      break;
  }
  return (c >= 0x180b && c <= 0x180f) || (c >= 0x200b && c <= 0x200f) ||
         (c >= 0x2028 && c <= 0x202e) || (c >= 0x2060 && c <= 0x206f) ||
         (c >= 0xfe00 && c <= 0xfe0f) || (c >= 0xfff9 && c <= 0xfffb) ||
         (c >= 0x1d173 && c <= 0x1d17a) || (c >= 0xe0000 && c <= 0xe0fff);
}

void append_hex(std::string& out, std::uint32_t value, int digits) {
  constexpr char kHex[] = "0123456789abcdef";
  for (int shift = (digits - 1) * 4; shift >= 0; shift -= 4) {
    out += kHex[(value >> static_cast<unsigned>(shift)) & 0xfU];
  }
}

// How a piece of text is written for a person.
enum class Notation {
  text,     // \\, \n \r \t, \xNN for a byte (invalid UTF-8 too), \u{XXXX} for a hidden character
  body,     // the same, but a line feed stays a line break
  in_json,  // inside a JSON string: a hidden character as its JSON escape (\u202e, surrogate
            // pairs past U+FFFF), which means the same to a JSON reader
};

// Writes the character at the front of `text` in `notation`; returns how many bytes it took.
std::size_t write_one(std::string& out, std::string_view text, Notation notation) {
  const Decoded decoded = decode_utf8(text);
  if (decoded.size == 0) {  // not UTF-8 (never inside a JSON string: Json::accept refuses it)
    out += "\\x";
    append_hex(out, static_cast<unsigned char>(text[0]), 2);
    return 1;
  }
  const char32_t c = decoded.code_point;
  if (notation == Notation::in_json) {
    if (!hidden_character(c)) {
      out.append(text.substr(0, decoded.size));
    } else if (c > 0xffff) {
      const char32_t v = c - 0x10000;
      out += "\\u";
      append_hex(out, 0xd800 + (v >> 10U), 4);
      out += "\\u";
      append_hex(out, 0xdc00 + (v & 0x3ffU), 4);
    } else {
      out += "\\u";
      append_hex(out, c, 4);
    }
    return decoded.size;
  }
  if (c == '\\') {
    out += "\\\\";
  } else if (c == '\n') {
    out += notation == Notation::body ? "\n" : "\\n";
  } else if (c == '\r') {
    out += "\\r";
  } else if (c == '\t') {
    out += "\\t";
  } else if (c < 0x20 || c == 0x7f) {
    out += "\\x";
    append_hex(out, c, 2);
  } else if (hidden_character(c)) {
    out += "\\u{";
    append_hex(out, c, c > 0xffff ? 5 : 4);
    out += "}";
  } else {
    out.append(text.substr(0, decoded.size));
  }
  return decoded.size;
}

// `text` as a person reads it, at most `limit` characters of it written: the text written, and
// how many bytes of `text` it covers. An escape is never cut in two.
struct Shown {
  std::string text;
  std::size_t covered = 0;
};
Shown show(std::string_view text, std::size_t limit, Notation notation) {
  Shown shown;
  std::size_t chars = 0;
  while (shown.covered < text.size()) {
    std::string piece;
    const std::size_t size = write_one(piece, text.substr(shown.covered), notation);
    const std::size_t piece_chars = sandbox::count_code_points(piece);
    if (chars + piece_chars > limit) break;
    chars += piece_chars;
    shown.text += piece;
    shown.covered += size;
  }
  return shown;
}

std::string shown_in_full(std::string_view text) {
  return show(text, std::numeric_limits<std::size_t>::max(), Notation::text).text;
}

// JSON as a person reads it: without the whitespace between its tokens (a parsed and
// re-serialised tree would show one of two repeated keys, or a rounded big number, where the
// upstream may read the other; and serialising recurses once per level, so a body nested a
// million deep would overflow the stack), hidden characters in strings as their JSON escapes, at
// most `limit` characters. `body` is valid JSON (Json::accept), so valid UTF-8.
Shown show_json(std::string_view body, std::size_t limit) {
  Shown shown;
  std::size_t chars = 0;
  bool in_string = false;
  bool escaped = false;
  while (shown.covered < body.size()) {
    const char c = body[shown.covered];
    if (!in_string && (c == ' ' || c == '\t' || c == '\n' || c == '\r')) {
      ++shown.covered;
      continue;
    }
    std::string piece;
    std::size_t size = 1;
    if (!in_string && static_cast<unsigned char>(c) >= 0x80) {
      size = write_one(piece, body.substr(shown.covered), Notation::text);  // a byte order mark
    } else if (!in_string) {
      in_string = c == '"';
      piece = c;
    } else if (escaped) {
      escaped = false;
      piece = c;
    } else if (c == '\\') {
      escaped = true;
      piece = c;
    } else if (c == '"') {
      in_string = false;
      piece = c;
    } else {
      size = write_one(piece, body.substr(shown.covered), Notation::in_json);
    }
    const std::size_t piece_chars = sandbox::count_code_points(piece);
    if (chars + piece_chars > limit) break;
    chars += piece_chars;
    shown.text += piece;
    shown.covered += size;
  }
  // Whitespace after the last token is not a part anyone misses.
  while (shown.covered < body.size() &&
         (body[shown.covered] == ' ' || body[shown.covered] == '\t' ||
          body[shown.covered] == '\n' || body[shown.covered] == '\r')) {
    ++shown.covered;
  }
  return shown;
}

// The keys that occur more than once in one object anywhere in a JSON text, in the order their
// objects close, each once. Servers differ on which of the values they take (the first, the
// last, or a refusal), so a person must see that there are several, wherever they are. SAX,
// without recursion; the open objects' keys are kept in one flat list.
class RepeatedKeys final : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override {
    starts_.push_back(keys_.size());
    return true;
  }
  bool key(string_t& value) override {
    keys_.push_back(std::move(value));
    return true;
  }
  bool end_object() override {
    const auto first = keys_.begin() + static_cast<std::ptrdiff_t>(starts_.back());
    starts_.pop_back();
    std::sort(first, keys_.end());
    for (auto it = first; it != keys_.end();) {
      const auto next = std::find_if(it, keys_.end(), [&](const auto& key) { return key != *it; });
      if (next - it > 1 && std::find(found_.begin(), found_.end(), *it) == found_.end()) {
        found_.push_back(*it);
      }
      it = next;
    }
    keys_.erase(first, keys_.end());
    return true;
  }
  bool start_array(std::size_t /*elements*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& /*error*/) override {
    return false;
  }

  const std::vector<std::string>& found() const { return found_; }

 private:
  std::vector<std::string> keys_;
  std::vector<std::size_t> starts_;  // where each open object's keys begin in keys_
  std::vector<std::string> found_;
};

// The repeated keys, as the question names them.
constexpr std::size_t kRepeatedKeysNamed = 5;
std::string repeated_keys_warning(std::string_view body, bool cut) {
  RepeatedKeys keys;
  if (!Json::sax_parse(body.begin(), body.end(), &keys) || keys.found().empty()) return {};
  std::string names;
  for (std::size_t i = 0; i < keys.found().size() && i < kRepeatedKeysNamed; ++i) {
    if (i > 0) names += ", ";
    names += "\"" + show(keys.found()[i], kApprovalHeaderChars, Notation::in_json).text + "\"";
  }
  if (keys.found().size() > kRepeatedKeysNamed) {
    names += " and " + std::to_string(keys.found().size() - kRepeatedKeysNamed) + " more";
  }
  return "\n\nWarning: this body gives a key more than once in one object: " + names +
         ". Servers differ on which of the values they take" +
         (cut ? "; some may be in the part not shown." : ".");
}

}  // namespace

std::optional<std::string> unreadable_body(const gateway::ApprovalRequest& request) {
  if (request.body.empty()) return std::nullopt;
  for (const auto& [name, value] : request.headers) {
    if (!net::iequals(name, "content-encoding")) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view coding = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) {
        coding.remove_prefix(1);
      }
      while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) {
        coding.remove_suffix(1);
      }
      if (coding.empty() || net::iequals(coding, "identity")) continue;
      return "its body is sent with Content-Encoding: " + shown_in_full(value).substr(0, 100) +
             ", which a person cannot read, so nobody is asked about it; send it unencoded";
    }
  }
  return std::nullopt;
}

std::string approval_message(const gateway::ApprovalRequest& request) {
  std::string text = "Approve this request to the API?\n\n" + shown_in_full(request.method) + " " +
                     shown_in_full(request.url);
  if (!request.summary.empty() || !request.operation_id.empty()) {
    text += "\n" + shown_in_full(request.summary.empty() ? request.operation : request.summary);
    if (!request.operation_id.empty()) text += " (" + shown_in_full(request.operation_id) + ")";
  }
  // Every header the code set but the one the body line names: a header can change what a
  // write means or where it lands (X-HTTP-Method-Override is dropped; others, such as an
  // account or tenant header, go as they are).
  std::string headers;
  for (const auto& [name, value] : code_set_headers(request.headers)) {
    if (net::iequals(name, "content-type")) continue;
    std::string line = name;
    line += ": ";
    line += value;
    const Shown shown = show(line, kApprovalHeaderChars, Notation::text);
    headers += "\n" + shown.text;
    if (shown.covered < line.size()) {
      headers += " …[" + std::to_string(line.size() - shown.covered) + " more bytes not shown]";
    }
  }
  if (!headers.empty()) text += "\n\nHeaders:" + headers;
  if (request.body.empty()) return text + "\n\nNo body.";
  if (auto unreadable = unreadable_body(request)) {
    text += "\n\nWarning: " + *unreadable + ".";
  }
  const bool json = Json::accept(request.body);
  const Shown body = json ? show_json(request.body, kApprovalBodyChars)
                          : show(request.body, kApprovalBodyChars, Notation::body);
  if (json) text += repeated_keys_warning(request.body, body.covered < request.body.size());
  // What is said about the body comes before it, so nothing the body holds can pose as it.
  text += "\n\nBody";
  if (!request.content_type.empty()) text += " (" + shown_in_full(request.content_type) + ")";
  text += ", " + std::to_string(request.body.size()) + " bytes";
  if (body.covered < request.body.size()) {
    text += "; its last " + std::to_string(request.body.size() - body.covered) +
            " bytes are not shown, and an accept approves them too";
  }
  if (!json) text += " (\\ is shown as \\\\, and what is not visible text as \\x.. or \\u{..})";
  return text + ":\n" + body.text;
}

Json approval_elicitation(const gateway::ApprovalRequest& request, bool with_mode) {
  Json params{{"message", approval_message(request)},
              {"requestedSchema", {{"type", "object"}, {"properties", Json::object()}}}};
  if (with_mode) params["mode"] = "form";
  return params;
}

gateway::Verdict verdict_of(const Json& result) {
  if (!result.is_object()) return gateway::Verdict::impossible;
  const auto action = result.find("action");
  if (action == result.end() || !action->is_string()) return gateway::Verdict::impossible;
  if (*action == "accept") return gateway::Verdict::accepted;
  if (*action == "decline") return gateway::Verdict::declined;
  if (*action == "cancel") return gateway::Verdict::cancelled;
  return gateway::Verdict::impossible;
}

Json ServerRequests::add(Answer answer) {
  // A string the client cannot confuse with its own ids, which are ours to echo.
  Json id = "codemode-approval-" + std::to_string(++last_);
  waiting_.emplace(id.get<std::string>(), std::move(answer));
  return id;
}

bool ServerRequests::settle(const Json& id, const Json* result) {
  if (!id.is_string()) return false;
  const auto it = waiting_.find(id.get<std::string>());
  if (it == waiting_.end()) return false;
  Answer answer = std::move(it->second);
  waiting_.erase(it);
  answer(result);
  return true;
}

ElicitingApprover::ElicitingApprover(boost::asio::any_io_executor executor,
                                     std::weak_ptr<ServerRequests> requests, Send send,
                                     std::string by, bool with_mode)
    : executor_(std::move(executor)),
      requests_(std::move(requests)),
      send_(std::move(send)),
      by_(std::move(by)),
      with_mode_(with_mode) {}

void ElicitingApprover::ask(std::uint64_t ticket, const gateway::ApprovalRequest& request,
                            std::function<void(gateway::ApprovalAnswer)> answer) {
  if (auto unreadable = unreadable_body(request)) {
    return answer(
        {gateway::Verdict::impossible, by_ + "; not asked: " + *unreadable, std::nullopt});
  }
  boost::asio::post(executor_, [self = shared_from_this(), ticket,
                                params = approval_elicitation(request, with_mode_),
                                answer = std::move(answer)]() mutable {
    auto requests = self->requests_.lock();
    if (self->closed_ || !requests) return answer({gateway::Verdict::impossible, self->by_, {}});
    Json id = requests->add([self, ticket, answer](const Json* result) {
      self->open_.erase(ticket);
      answer({result ? verdict_of(*result) : gateway::Verdict::impossible, self->by_, {}});
    });
    self->open_.emplace(ticket, id);
    Json message{{"jsonrpc", "2.0"},
                 {"id", id},
                 {"method", "elicitation/create"},
                 {"params", std::move(params)}};
    self->send_(dump(message));
  });
}

void ElicitingApprover::withdraw(std::uint64_t ticket) {
  boost::asio::post(executor_, [self = shared_from_this(), ticket] {
    self->take_back(ticket, "the approval timed out");
  });
}

void ElicitingApprover::close() {
  closed_ = true;
  while (!open_.empty()) take_back(open_.begin()->first, "the call ended");
}

void ElicitingApprover::take_back(std::uint64_t ticket, const char* reason) {
  const auto it = open_.find(ticket);
  if (it == open_.end()) return;
  const Json id = it->second;
  open_.erase(it);
  // Settled as unanswerable, not dropped: the gateway then lets go of the request it holds (and
  // its body) now, not when its own timer fires, which may be an hour away.
  if (auto requests = requests_.lock()) requests->settle(id, nullptr);
  // Either side may cancel a request it sent (MCP basic/utilities/cancellation).
  send_(serialize_notification("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
}

namespace {

std::string text_of(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A recorded response back into what the gateway answers with.
gateway::FetchResult replayed(const Json& entry) {
  if (entry.contains("too_large")) {
    return gateway::GatewayError{
        gateway::ErrorKind::policy,
        "this request was already made, approved, in an earlier round of this call, and its "
        "response (" +
            dump(entry["too_large"]) +
            " bytes) is too large to carry into this one; it is not sent again"};
  }
  if (entry.contains("error")) {
    return gateway::GatewayError{text_of(entry, "error") == "policy" ? gateway::ErrorKind::policy
                                                                     : gateway::ErrorKind::runtime,
                                 text_of(entry, "message")};
  }
  gateway::InboundResponse response;
  response.status = entry.value("status", 0U);
  response.status_text = text_of(entry, "status_text");
  if (const auto headers = entry.find("headers"); headers != entry.end() && headers->is_array()) {
    for (const auto& pair : *headers) {
      if (pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_string()) {
        response.headers.emplace_back(pair[0].get<std::string>(), pair[1].get<std::string>());
      }
    }
  }
  response.body = base64_decode(text_of(entry, "body")).value_or(std::string());
  response.final_url = text_of(entry, "final_url");
  response.redirects = entry.value("redirects", 0U);
  return response;
}

// The response bytes (body, header names and values) a done entry carries.
std::size_t carried_bytes(const Json& entry) {
  std::size_t bytes = text_of(entry, "body").size() / 4 * 3;
  if (const auto headers = entry.find("headers"); headers != entry.end() && headers->is_array()) {
    for (const auto& pair : *headers) {
      if (!pair.is_array()) continue;
      for (const auto& part : pair)
        bytes += part.is_string() ? part.get_ref<const std::string&>().size() : 0;
    }
  }
  return bytes;
}

}  // namespace

std::string call_digest(std::string_view tool, std::string_view code) {
  return gateway::approval_digest("tools/call", tool, {}, code);
}

RetryApprover::RetryApprover(std::string call, const Json* state, const Json& responses,
                             std::string by, std::function<void()> stop)
    : call_(std::move(call)), by_(std::move(by)), stop_(std::move(stop)) {
  if (state == nullptr) return;
  if (const auto done = state->find("done"); done != state->end() && done->is_array()) {
    done_ = *done;
  }
  replayed_.assign(done_.size(), false);
  // The bound is on what the state carries, over all rounds: count what it carries in already.
  for (const auto& entry : done_) recorded_bytes_ += carried_bytes(entry);
  if (const auto declined = state->find("declined"); declined != state->end()) {
    for (const auto& digest : *declined) {
      if (digest.is_string()) declined_.push_back(digest.get<std::string>());
    }
  }
  const auto asked = state->find("asked");
  if (asked == state->end() || !asked->is_object() || !responses.is_object()) return;
  for (const auto& [key, digest] : asked->items()) {
    const auto response = responses.find(key);
    if (response == responses.end() || !digest.is_string()) continue;  // asked again
    switch (verdict_of(*response)) {
      case gateway::Verdict::accepted:
        accepted_.push_back(digest.get<std::string>());
        break;
      case gateway::Verdict::declined:
      case gateway::Verdict::cancelled:
        declined_.push_back(digest.get<std::string>());
        break;
      default:
        break;  // not an answer: asked again
    }
  }
}

void RetryApprover::ask(std::uint64_t ticket, const gateway::ApprovalRequest& request,
                        std::function<void(gateway::ApprovalAnswer)> answer) {
  if (auto unreadable = unreadable_body(request)) {
    return answer(
        {gateway::Verdict::impossible, by_ + "; not asked: " + *unreadable, std::nullopt});
  }
  const std::string digest = question_digest(request);
  std::unique_lock lock(mutex_);
  for (std::size_t i = 0; i < replayed_.size(); ++i) {
    if (!replayed_[i] && text_of(done_[i], "d") == digest) {
      replayed_[i] = true;
      gateway::ApprovalAnswer again{gateway::Verdict::accepted, text_of(done_[i], "by"),
                                    replayed(done_[i])};
      lock.unlock();
      return answer(std::move(again));
    }
  }
  if (const auto it = std::find(accepted_.begin(), accepted_.end(), digest);
      it != accepted_.end()) {
    accepted_.erase(it);
    sending_.emplace(ticket, digest);
    lock.unlock();
    return answer({gateway::Verdict::accepted, by_, std::nullopt});
  }
  if (std::find(declined_.begin(), declined_.end(), digest) != declined_.end()) {
    lock.unlock();
    return answer({gateway::Verdict::declined, by_, std::nullopt});
  }
  questions_.push_back(request);
  lock.unlock();
  stop_();  // the call ends here; the retry runs it again with the answer
  answer({gateway::Verdict::deferred, by_, std::nullopt});
}

void RetryApprover::sent(std::uint64_t ticket, const gateway::FetchResult& result) {
  std::lock_guard lock(mutex_);
  const auto it = sending_.find(ticket);
  if (it == sending_.end()) return;
  Json entry{{"d", it->second}, {"by", by_}};
  sending_.erase(it);
  if (const auto* error = std::get_if<gateway::GatewayError>(&result)) {
    entry["error"] = std::string(gateway::to_string(error->kind));
    entry["message"] = error->message;
  } else {
    const auto& response = std::get<gateway::InboundResponse>(result);
    std::size_t bytes = response.body.size();
    Json headers = Json::array();
    for (const auto& [name, value] : response.headers) {
      headers.push_back({name, value});
      bytes += name.size() + value.size();
    }
    if (recorded_bytes_ + bytes > kMaxCarriedResponseBytes) {
      entry["too_large"] = bytes;
    } else {
      recorded_bytes_ += bytes;
      entry["status"] = response.status;
      entry["status_text"] = response.status_text;
      entry["headers"] = std::move(headers);
      entry["body"] = base64_encode(response.body);
      entry["final_url"] = response.final_url;
      entry["redirects"] = response.redirects;
    }
  }
  done_.push_back(std::move(entry));
}

bool RetryApprover::stopped_for_input() const {
  std::lock_guard lock(mutex_);
  return !questions_.empty();
}

Json RetryApprover::input_requests() const {
  std::lock_guard lock(mutex_);
  Json requests = Json::object();
  for (std::size_t i = 0; i < questions_.size(); ++i) {
    requests["approval-" + std::to_string(i + 1)] = {
        {"method", "elicitation/create"}, {"params", approval_elicitation(questions_[i], true)}};
  }
  return requests;
}

Json RetryApprover::next_state() const {
  std::lock_guard lock(mutex_);
  Json asked = Json::object();
  for (std::size_t i = 0; i < questions_.size(); ++i) {
    asked["approval-" + std::to_string(i + 1)] = question_digest(questions_[i]);
  }
  // A request approved and sent whose answer had not come when the call stopped (the code went
  // on and reached another question meanwhile) may have reached the upstream: it counts as made,
  // with no response to give back, so no later round sends it again.
  Json done = done_;
  for (const auto& [ticket, digest] : sending_) {
    done.push_back({{"d", digest},
                    {"by", by_},
                    {"error", "runtime"},
                    {"message",
                     "this request was sent, approved, in an earlier round of this call, which "
                     "stopped before its response came; it is not sent again"}});
  }
  return Json{{"call", call_},
              {"asked", std::move(asked)},
              {"done", std::move(done)},
              {"declined", declined_}};
}

}  // namespace codemode::server
