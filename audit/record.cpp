#include "audit/record.h"

#include <openssl/rand.h>
#include <openssl/sha.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "base/check.h"
#include "net/ascii.h"

namespace codemode::audit {

namespace {

std::string hex(const unsigned char* bytes, std::size_t size) {
  return net::to_hex(std::string_view(reinterpret_cast<const char*>(bytes), size));
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
    return Json{{"kind", "call"},
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
    if (ok && json.size() == 19) return c;
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
    if (ok && json.size() == (approved ? 15U : 14U)) return r;
  }
  return std::nullopt;
}

Summary summarize(const Record& record) {
  if (const auto* call = std::get_if<CallRecord>(&record)) {
    return Summary{call->id, call->time_us, "call", call->principal, call->tool, call->outcome, ""};
  }
  const auto& request = std::get<RequestRecord>(record);
  return Summary{request.id,  request.time_us,
                 "request",   request.principal,
                 "execute",   request.refusal.empty() ? std::to_string(request.status) : "refused",
                 request.path};
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
