#include "audit/record.h"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "base/check.h"
#include "net/ascii.h"
#include "net/escape.h"

namespace codemode::audit {

namespace {

std::string hex(const unsigned char* bytes, std::size_t size) {
  return net::to_hex(std::string_view(reinterpret_cast<const char*>(bytes), size));
}

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// The text fields of a record, in one place for make_valid_utf8 and escaped.
template <typename F>
void for_each_text(Record& record, F f) {
  if (auto* c = std::get_if<CallRecord>(&record)) {
    for (std::string* s :
         {&c->id, &c->principal, &c->client_name, &c->client_version, &c->session, &c->transport,
          &c->tool, &c->code, &c->code_sha256, &c->outcome, &c->message, &c->trace_id}) {
      f(*s);
    }
    return;
  }
  auto& r = std::get<RequestRecord>(record);
  for (std::string* s : {&r.id, &r.call_id, &r.principal, &r.method, &r.origin, &r.path,
                         &r.operation, &r.refusal, &r.approved_by}) {
    f(*s);
  }
}

// The length of a UTF-8 character whose first byte is `lead` (2..4), with the range its second
// byte must be in (which rules out overlong forms, surrogates and values past U+10FFFF); size 0
// when `lead` starts none.
struct Lead {
  std::size_t size = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xbf;
};
Lead lead_of(unsigned char lead) {
  if (lead >= 0xc2 && lead <= 0xdf) return {2};
  if (lead == 0xe0) return {3, 0xa0, 0xbf};
  if (lead == 0xed) return {3, 0x80, 0x9f};
  if (lead >= 0xe1 && lead <= 0xef) return {3};
  if (lead == 0xf0) return {4, 0x90, 0xbf};
  if (lead == 0xf4) return {4, 0x80, 0x8f};
  if (lead >= 0xf1 && lead <= 0xf3) return {4};
  return {};
}

// How many bytes at the front of `text` form one valid character (1..4), or, as a negative
// number, how many form the maximal invalid subpart there (-1..-3).
int next_character(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  if (byte(0) < 0x80) return 1;
  const Lead lead = lead_of(byte(0));
  if (lead.size == 0) return -1;
  std::size_t n = 1;
  while (n < lead.size && n < text.size()) {
    const unsigned char min = n == 1 ? lead.second_min : 0x80;
    const unsigned char max = n == 1 ? lead.second_max : 0xbf;
    if (byte(n) < min || byte(n) > max) break;
    ++n;
  }
  return n == lead.size ? static_cast<int>(n) : -static_cast<int>(n);
}

template <typename T>
bool read(const Json& json, const char* key, T& out) {
  const auto it = json.find(key);
  if (it == json.end()) return false;
  if constexpr (std::is_same_v<T, std::string>) {
    if (!it->is_string()) return false;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) return false;
  } else {
    if (!it->is_number_integer()) return false;
  }
  out = it->get<T>();
  return true;
}

}  // namespace

Json to_json(const Record& record) {
  if (const auto* call = std::get_if<CallRecord>(&record)) {
    Json json{{"kind", "call"},
              {"id", call->id},
              {"time_us", call->time_us},
              {"principal", call->principal},
              {"client_name", call->client_name},
              {"client_version", call->client_version},
              {"session", call->session},
              {"transport", call->transport},
              {"tool", call->tool},
              {"code", call->code},
              {"code_sha256", call->code_sha256},
              {"outcome", call->outcome},
              {"message", call->message},
              {"result_chars", call->result_chars},
              {"result_cut", call->result_cut},
              {"queue_us", call->queue_us},
              {"run_us", call->run_us},
              {"cpu_us", call->cpu_us},
              {"trace_id", call->trace_id}};
    if (call->escaped) json["escaped"] = true;
    return json;
  }
  const auto& request = std::get<RequestRecord>(record);
  Json json{{"kind", "request"},
            {"id", request.id},
            {"call_id", request.call_id},
            {"time_us", request.time_us},
            {"principal", request.principal},
            {"method", request.method},
            {"origin", request.origin},
            {"path", request.path},
            {"operation", request.operation},
            {"status", request.status},
            {"bytes_sent", request.bytes_sent},
            {"bytes_received", request.bytes_received},
            {"duration_us", request.duration_us},
            {"refusal", request.refusal}};
  if (!request.approved_by.empty()) json["approved_by"] = request.approved_by;
  if (request.escaped) json["escaped"] = true;
  return json;
}

std::string canonical_json(const Record& record) {
  return to_json(record).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::optional<Record> from_json(const Json& json) {
  if (!json.is_object()) return std::nullopt;
  std::string kind;
  if (!read(json, "kind", kind)) return std::nullopt;
  bool ok = true;
  if (kind == "call") {
    CallRecord c;
    ok = read(json, "id", c.id) && read(json, "time_us", c.time_us) &&
         read(json, "principal", c.principal) && read(json, "client_name", c.client_name) &&
         read(json, "client_version", c.client_version) && read(json, "session", c.session) &&
         read(json, "transport", c.transport) && read(json, "tool", c.tool) &&
         read(json, "code", c.code) && read(json, "code_sha256", c.code_sha256) &&
         read(json, "outcome", c.outcome) && read(json, "message", c.message) &&
         read(json, "result_chars", c.result_chars) && read(json, "result_cut", c.result_cut) &&
         read(json, "queue_us", c.queue_us) && read(json, "run_us", c.run_us) &&
         read(json, "cpu_us", c.cpu_us) && read(json, "trace_id", c.trace_id);
    const bool escaped = json.contains("escaped");
    ok = ok && (!escaped || (read(json, "escaped", c.escaped) && c.escaped));
    if (ok && json.size() == (escaped ? 20U : 19U)) return c;
  } else if (kind == "request") {
    RequestRecord r;
    ok = read(json, "id", r.id) && read(json, "call_id", r.call_id) &&
         read(json, "time_us", r.time_us) && read(json, "principal", r.principal) &&
         read(json, "method", r.method) && read(json, "origin", r.origin) &&
         read(json, "path", r.path) && read(json, "operation", r.operation) &&
         read(json, "status", r.status) && read(json, "bytes_sent", r.bytes_sent) &&
         read(json, "bytes_received", r.bytes_received) &&
         read(json, "duration_us", r.duration_us) && read(json, "refusal", r.refusal);
    const bool approved = json.contains("approved_by");
    ok = ok && (!approved || (read(json, "approved_by", r.approved_by) && !r.approved_by.empty()));
    const bool escaped = json.contains("escaped");
    ok = ok && (!escaped || (read(json, "escaped", r.escaped) && r.escaped));
    if (ok && json.size() == 14U + (approved ? 1U : 0U) + (escaped ? 1U : 0U)) return r;
  }
  return std::nullopt;
}

Summary summarize(const Record& record) {
  if (const auto* call = std::get_if<CallRecord>(&record)) {
    return Summary{column_text(call->id),
                   call->time_us,
                   "call",
                   column_text(call->principal),
                   column_text(call->tool),
                   column_text(call->outcome),
                   ""};
  }
  const auto& request = std::get<RequestRecord>(record);
  return Summary{column_text(request.id),
                 request.time_us,
                 "request",
                 column_text(request.principal),
                 "execute",
                 request.refusal.empty() ? std::to_string(request.status) : "refused",
                 column_text(request.path)};
}

const std::string& principal_of(const Record& record) {
  if (const auto* call = std::get_if<CallRecord>(&record)) return call->principal;
  return std::get<RequestRecord>(record).principal;
}

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const int n = next_character(text);
    if (n > 0) {
      out.append(text.substr(0, static_cast<std::size_t>(n)));
    } else {
      out.append(kReplacement);
    }
    text.remove_prefix(static_cast<std::size_t>(n > 0 ? n : -n));
  }
  return out;
}

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  // Back to the first byte of the character the cut falls in, if it falls in one.
  std::size_t cut = max_bytes;
  while (cut > 0 && max_bytes - cut < 3 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80) {
    --cut;
  }
  const Lead lead = lead_of(static_cast<unsigned char>(text[cut]));
  return text.substr(0, lead.size > 0 && cut + lead.size > max_bytes ? cut : max_bytes);
}

std::string column_text(std::string_view text) {
  std::string out = valid_utf8(text);
  for (std::size_t at = out.find('\0'); at != std::string::npos; at = out.find('\0', at)) {
    out.replace(at, 1, kReplacement);
  }
  return out;
}

bool make_valid_utf8(Record& record) {
  bool changed = false;
  for_each_text(record, [&](std::string& text) {
    std::string_view rest = text;
    while (!rest.empty()) {
      const int n = next_character(rest);
      if (n < 0) {
        text = valid_utf8(text);
        changed = true;
        return;
      }
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  });
  return changed;
}

Record escaped(const Record& record) {
  Record out = record;
  for_each_text(out, [](std::string& text) { text = net::escape_text(text, kEscapedFieldBytes); });
  std::visit([](auto& r) { r.escaped = true; }, out);
  return out;
}

std::optional<Summary> summarize_json(std::string_view text) {
  Json json = Json::parse(text, nullptr, false);
  if (json.is_discarded()) return std::nullopt;
  std::optional<Record> record = from_json(json);
  if (!record) return std::nullopt;
  return summarize(*record);
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return hex(digest, sizeof digest);
}

std::string new_record_id() {
  std::array<unsigned char, 16> bytes{};
  CODEMODE_CHECK(RAND_bytes(bytes.data(), bytes.size()) == 1,
                 "OpenSSL's generator is seeded from the kernel at start-up");
  return hex(bytes.data(), bytes.size());
}

std::int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string format_time(std::int64_t time_us) {
  std::int64_t seconds = time_us / 1000000;
  std::int64_t micros = time_us % 1000000;
  if (micros < 0) {
    micros += 1000000;
    --seconds;
  }
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char text[48];
  (void)std::snprintf(text, sizeof text,  // fits: 27 of 48 bytes
                      "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                      tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(micros));
  return text;
}

std::optional<std::int64_t> parse_time(std::string_view text, std::int64_t now_us) {
  if (text.empty()) return std::nullopt;
  // An age: digits and one unit.
  const char unit = text.back();
  const std::string_view digits = text.substr(0, text.size() - 1);
  if (!digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos) {
    std::int64_t count = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (error != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
    std::int64_t unit_us = 0;
    if (unit == 's') unit_us = 1000000;
    if (unit == 'm') unit_us = 60LL * 1000000;
    if (unit == 'h') unit_us = 3600LL * 1000000;
    if (unit == 'd') unit_us = 86400LL * 1000000;
    if (unit_us == 0 || count > 100LL * 366 * 86400 * 1000000 / unit_us) return std::nullopt;
    return now_us - count * unit_us;
  }
  // A date, or a date and a UTC time.
  const std::string s(text);
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, used = 0;
  std::int64_t micros = 0;
  if (s.size() == 10) {
    if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &year, &month, &day, &used) != 3 || used != 10) {
      return std::nullopt;
    }
  } else {
    if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &month, &day, &hour, &minute,
                    &second, &used) != 6 ||
        used != 19) {
      return std::nullopt;
    }
    std::string_view rest = std::string_view(s).substr(19);
    if (rest.starts_with(".")) {
      rest.remove_prefix(1);
      std::size_t n = 0;
      std::int64_t scale = 100000;
      while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') {
        if (n < 6) micros += (rest[n] - '0') * scale;
        scale /= 10;
        ++n;
      }
      if (n == 0) return std::nullopt;
      rest.remove_prefix(n);
    }
    if (rest != "Z") return std::nullopt;
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const std::time_t t = ::timegm(&tm);
  return static_cast<std::int64_t>(t) * 1000000 + micros;
}

}  // namespace codemode::audit
