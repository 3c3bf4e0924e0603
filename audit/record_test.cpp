#include "audit/record.h"

#include <random>

#include <catch2/catch.hpp>

#include "audit/store.h"

namespace codemode::audit {
namespace {

CallRecord sample_call() {
  CallRecord c;
  c.id = "0123456789abcdef0123456789abcdef";
  c.time_us = 1764756902123456;
  c.principal = "alice";
  c.client_name = "claude-code";
  c.client_version = "2.1";
  c.session = "s-1";
  c.transport = "http";
  c.tool = "execute";
  c.code = "async () => \"é\"";
  c.code_sha256 = sha256_hex(c.code);
  c.outcome = "timeout";
  c.message = "cpu_ms 50 ran out";
  c.result_chars = 0;
  c.queue_us = 10;
  c.run_us = 50000;
  c.cpu_us = 49000;
  c.trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  return c;
}

RequestRecord sample_request() {
  RequestRecord r;
  r.id = "fedcba9876543210fedcba9876543210";
  r.call_id = "0123456789abcdef0123456789abcdef";
  r.time_us = 1764756902200000;
  r.principal = "alice";
  r.method = "GET";
  r.origin = "https://api.example.com";
  r.path = "/v1/items?limit=5";
  r.operation = "GET /v1/items";
  r.status = 200;
  r.bytes_sent = 0;
  r.bytes_received = 512;
  r.duration_us = 3000;
  return r;
}

TEST_CASE("SHA-256 is the standard one, in lower-case hex", "[audit][record]") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST_CASE("a record's canonical JSON has sorted keys and reads back the same", "[audit][record]") {
  for (const Record& record : {Record{sample_call()}, Record{sample_request()}}) {
    const std::string text = canonical_json(record);
    const Json json = Json::parse(text);
    CHECK(text == json.dump());  // compact: no whitespace between tokens
    std::string previous;
    for (const auto& item : json.items()) {
      CHECK(previous < item.key());
      previous = item.key();
    }
    const std::optional<Record> back = from_json(json);
    REQUIRE(back.has_value());
    CHECK(canonical_json(*back) == text);
    CHECK(summarize_json(text).has_value());
  }
  CHECK(canonical_json(sample_call()).starts_with(R"({"client_name":"claude-code",)"));
}

TEST_CASE("a record with a key missing, added or of the wrong type does not read back",
          "[audit][record]") {
  Json call = to_json(sample_call());
  call.erase("trace_id");
  CHECK_FALSE(from_json(call).has_value());
  Json extra = to_json(sample_request());
  extra["authorization"] = "x";
  CHECK_FALSE(from_json(extra).has_value());
  Json wrong = to_json(sample_request());
  wrong["status"] = "200";
  CHECK_FALSE(from_json(wrong).has_value());
  CHECK_FALSE(summarize_json("{not json").has_value());
}

TEST_CASE("who approved a request is kept, and only when someone did", "[audit][record]") {
  RequestRecord approved = sample_request();
  approved.approved_by = "sub:alice via Claude Desktop 1.2";
  const Json json = to_json(approved);
  CHECK(json["approved_by"] == "sub:alice via Claude Desktop 1.2");
  const auto back = from_json(json);
  REQUIRE(back.has_value());
  CHECK(std::get<RequestRecord>(*back).approved_by == approved.approved_by);
  CHECK_FALSE(to_json(sample_request()).contains("approved_by"));  // older records verify
  Json empty = json;
  empty["approved_by"] = "";
  CHECK_FALSE(from_json(empty).has_value());
}

TEST_CASE("summaries carry the columns queries filter on", "[audit][record]") {
  const Summary call = summarize(sample_call());
  CHECK(call.kind == "call");
  CHECK(call.tool == "execute");
  CHECK(call.outcome == "timeout");
  CHECK(call.path.empty());
  const Summary request = summarize(sample_request());
  CHECK(request.kind == "request");
  CHECK(request.outcome == "200");
  CHECK(request.path == "/v1/items?limit=5");
  RequestRecord refused = sample_request();
  refused.status = 0;
  refused.refusal = "policy: origin http://evil.test is not allowed";
  CHECK(summarize(refused).outcome == "refused");
}

TEST_CASE("record ids are 32 hex digits and differ", "[audit][record]") {
  const std::string a = new_record_id();
  CHECK(a.size() == 32);
  CHECK(a.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(a != new_record_id());
}

TEST_CASE("times print in UTC and parse as dates, date-times or ages", "[audit][record]") {
  CHECK(format_time(1764756902123456) == "2025-12-03T10:15:02.123456Z");
  const std::int64_t now = 1764756902123456;
  CHECK(parse_time("2025-12-03T10:15:02.123456Z", now) == 1764756902123456);
  CHECK(parse_time("2025-12-03T10:15:02Z", now) == 1764756902000000);
  CHECK(parse_time("2025-12-03T10:15:02.5Z", now) == 1764756902500000);
  CHECK(parse_time("2025-12-03", now) == 1764720000000000);
  CHECK(parse_time("30s", now) == now - 30000000);
  CHECK(parse_time("15m", now) == now - 15LL * 60000000);
  CHECK(parse_time("2h", now) == now - 2LL * 3600000000);
  CHECK(parse_time("7d", now) == now - 7LL * 86400000000);
  for (const char* bad : {"", "yesterday", "5w", "d", "2025-12-03T10:15:02", "2025-13-01",
                          "2025-12-03T10:15:02+01:00", "99999999999999999999d"}) {
    INFO(bad);
    CHECK_FALSE(parse_time(bad, now).has_value());
  }
}

TEST_CASE("the chain hash covers the previous hash, the server, the seq and the text",
          "[audit][record][chain]") {
  const std::string base = chain_hash(kChainStart, "web-1", 1, "{}");
  CHECK(base.size() == 64);
  CHECK(base == chain_hash(kChainStart, "web-1", 1, "{}"));
  CHECK(base != chain_hash(std::string(64, '1'), "web-1", 1, "{}"));
  CHECK(base != chain_hash(kChainStart, "web-2", 1, "{}"));
  CHECK(base != chain_hash(kChainStart, "web-1", 2, "{}"));
  CHECK(base != chain_hash(kChainStart, "web-1", 1, "{ }"));
}

// The columns hold valid_utf8 of a field and the JSON holds what nlohmann's `replace` made of it:
// the two must agree byte for byte, or verify would find a record edited that nobody touched.
TEST_CASE("valid_utf8 replaces what is not UTF-8 exactly as the JSON text does",
          "[audit][record]") {
  const auto json_of = [](const std::string& text) {
    return Json(text).dump(-1, ' ', false, Json::error_handler_t::replace);
  };
  for (const std::string& text :
       {std::string("plain"), std::string("caf\xc3\xa9"), std::string("cut \xc3"),
        std::string("\xe2\x82"), std::string("\xf0\x9f\x98"), std::string("\xff\xfe"),
        std::string("\xc0\xaf"), std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
        std::string("\xe0\x80\xaf x \xf0\x9f\x98\x80"), std::string("a\0b", 3)}) {
    INFO(Json(text).dump(-1, ' ', true, Json::error_handler_t::replace));
    CHECK(json_of(valid_utf8(text)) == json_of(text));
    CHECK(valid_utf8(valid_utf8(text)) == valid_utf8(text));
  }
  // Random bytes, weighted towards the ones UTF-8 is made of.
  std::mt19937 random(34);
  const std::string alphabet = "a\x80\x8f\x9f\xa0\xbf\xc2\xdf\xe0\xe1\xed\xef\xf0\xf4\xf5\xff";
  for (int round = 0; round < 20000; ++round) {
    std::string text;
    for (std::size_t n = random() % 8; n > 0; --n) text += alphabet[random() % alphabet.size()];
    INFO(Json(text).dump(-1, ' ', true, Json::error_handler_t::replace));
    REQUIRE(json_of(valid_utf8(text)) == json_of(text));
  }
}

TEST_CASE("a field is cut on a character boundary, never inside one", "[audit][record]") {
  const std::string text =
      "a\xc3\xa9"
      "b\xe2\x82\xac"
      "c\xf0\x9f\x98\x80";  // aébc€c😀
  CHECK(utf8_prefix(text, 100) == text);
  CHECK(utf8_prefix(text, 1) == "a");
  CHECK(utf8_prefix(text, 2) == "a");
  CHECK(utf8_prefix(text, 3) == "a\xc3\xa9");
  CHECK(utf8_prefix(text, 5) ==
        "a\xc3\xa9"
        "b");
  CHECK(utf8_prefix(text, 6) ==
        "a\xc3\xa9"
        "b");
  CHECK(utf8_prefix(text, 11) ==
        "a\xc3\xa9"
        "b\xe2\x82\xac"
        "c");
  CHECK(utf8_prefix(text, 9) ==
        "a\xc3\xa9"
        "b\xe2\x82\xac"
        "c");
  CHECK(utf8_prefix(text, 12) == text);
  for (std::size_t n = 0; n <= text.size(); ++n) {
    CHECK(valid_utf8(utf8_prefix(text, n)) == utf8_prefix(text, n));
  }
  CHECK(utf8_prefix("\x80\x80\x80\x80\x80", 3) == "\x80\x80\x80");  // not UTF-8: bytes
}

TEST_CASE("a column holds valid UTF-8 with a NUL as U+FFFD, and the JSON keeps the NUL",
          "[audit][record]") {
  CHECK(column_text(std::string("a\0b\xc3", 4)) ==
        "a\xef\xbf\xbd"
        "b\xef\xbf\xbd");
  RequestRecord request = sample_request();
  request.path = std::string("/a\0b", 4);
  CHECK(summarize(request).path ==
        "/a\xef\xbf\xbd"
        "b");
  CHECK(canonical_json(request).find(R"("path":"/a\u0000b")") != std::string::npos);
  CHECK(summarize_json(canonical_json(request))->path == summarize(request).path);
  request.principal = "\xff";
  Record invalid = request;
  CHECK(make_valid_utf8(invalid));
  CHECK(std::get<RequestRecord>(invalid).principal == "\xef\xbf\xbd");
  Record valid = sample_request();
  CHECK_FALSE(make_valid_utf8(valid));
}

TEST_CASE("an escaped record keeps its ids, escapes and cuts its text, and reads back marked",
          "[audit][record]") {
  CallRecord call = sample_call();
  call.principal = "alice\x1b[2J";
  call.code = std::string(10000, 'x');
  const Record replacement = escaped(call);
  const auto& c = std::get<CallRecord>(replacement);
  CHECK(c.escaped);
  CHECK(c.id == call.id);
  CHECK(c.code_sha256 == call.code_sha256);  // of the code that came
  CHECK(c.principal == "alice\\x1b[2J");
  CHECK(c.code == std::string(kEscapedFieldBytes, 'x') + "...(9488 more bytes)");
  const Json json = to_json(replacement);
  CHECK(json["escaped"] == true);
  const auto back = from_json(json);
  REQUIRE(back.has_value());
  CHECK(canonical_json(*back) == canonical_json(replacement));
  CHECK_FALSE(to_json(call).contains("escaped"));  // older records verify
  Json unmarked = json;
  unmarked["escaped"] = false;
  CHECK_FALSE(from_json(unmarked).has_value());
  const Record request = escaped(sample_request());
  CHECK(from_json(to_json(request)).has_value());
  CHECK(std::get<RequestRecord>(request).escaped);
}

}  // namespace
}  // namespace codemode::audit
