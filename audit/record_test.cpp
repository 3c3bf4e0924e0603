#include "audit/record.h"

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

}  // namespace
}  // namespace codemode::audit
