#include "channel/frames.h"

#include <catch2/catch.hpp>

using namespace codemode;
using namespace codemode::channel;
using namespace codemode::channel;

namespace {

Message round_trip(const Message& message) {
  const std::string frame = encode_frame(message);
  FrameReader reader(1 << 20);
  // Byte by byte: frames are cut correctly however the stream arrives.
  for (char c : frame) reader.append(std::string_view(&c, 1));
  auto next = reader.next();
  REQUIRE(std::holds_alternative<std::optional<std::string>>(next));
  auto& body = std::get<std::optional<std::string>>(next);
  REQUIRE(body);
  CHECK(reader.buffered() == 0);
  auto decoded = decode(*body);
  REQUIRE(std::holds_alternative<Message>(decoded));
  return std::get<Message>(decoded);
}

std::string error_of(std::string_view body) {
  auto decoded = decode(body);
  REQUIRE(std::holds_alternative<DecodeError>(decoded));
  return std::get<DecodeError>(decoded).message;
}

std::string msgpack(const nlohmann::json& value) {
  const auto bytes = nlohmann::json::to_msgpack(value);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

TEST_CASE("every message survives encoding and decoding", "[sandbox][channel]") {
  config::Limits limits;
  limits.cpu_ms = 7;
  limits.subrequests = 0;

  Init init;
  init.spec = true;
  init.fetch = true;
  init.limits = limits;
  init.cpu_seconds = 90;
  init.jitless = true;
  init.fetch_base = "http://127.0.0.1:8788/";
  const auto init_back = std::get<Init>(round_trip(init));
  CHECK(init_back.jitless);
  CHECK(init_back.fetch_base == "http://127.0.0.1:8788/");
  CHECK(std::get<Init>(round_trip(Init{})).fetch_base.empty());
  CHECK_FALSE(std::get<Init>(round_trip(Init{})).jitless);
  CHECK(init_back.spec);
  CHECK(init_back.fetch);
  CHECK(init_back.limits.cpu_ms == 7);
  CHECK(init_back.limits.subrequests == 0);
  CHECK(init_back.cpu_seconds == 90);

  const auto run_back = std::get<Run>(round_trip(Run{42, Tool::execute, "async () => 1", limits}));
  CHECK(run_back.id == 42);
  CHECK(run_back.tool == Tool::execute);
  CHECK(run_back.code == "async () => 1");
  CHECK(run_back.limits.cpu_ms == 7);

  CHECK(std::get<Cancel>(round_trip(Cancel{9})).id == 9);
  CHECK(std::get<Ready>(round_trip(Ready{{"seccomp: on"}})).layers ==
        std::vector<std::string>{"seccomp: on"});

  gateway::OutboundRequest request{"PUT", "/a?b", {{"x", "1"}, {"x", "2"}}, std::string("\0\1", 2)};
  const auto fetch_back = std::get<FetchRequest>(round_trip(FetchRequest{3, 4, request}));
  CHECK(fetch_back.call_id == 3);
  CHECK(fetch_back.fetch_id == 4);
  CHECK(fetch_back.request.method == "PUT");
  CHECK(fetch_back.request.headers == request.headers);
  CHECK(fetch_back.request.body == request.body);

  gateway::InboundResponse response{204, "No Content", {{"a", "b"}}, "", "http://h/x", 2};
  const auto reply_back = std::get<FetchReply>(round_trip(FetchReply{3, 4, response}));
  const auto& got = std::get<gateway::InboundResponse>(reply_back.result);
  CHECK(got.status == 204);
  CHECK(got.status_text == "No Content");
  CHECK(got.final_url == "http://h/x");
  CHECK(got.redirects == 2);
  const auto error_back = std::get<FetchReply>(
      round_trip(FetchReply{3, 5, gateway::GatewayError{gateway::ErrorKind::policy, "no"}}));
  CHECK(std::get<gateway::GatewayError>(error_back.result).text() == "policy: no");

  const auto wait_back = std::get<FetchWait>(round_trip(FetchWait{3, 6, true}));
  CHECK(wait_back.call_id == 3);
  CHECK(wait_back.fetch_id == 6);
  CHECK(wait_back.waiting);
  CHECK_FALSE(std::get<FetchWait>(round_trip(FetchWait{3, 6, false})).waiting);

  const auto abort_back = std::get<AbortFetch>(round_trip(AbortFetch{3, 7}));
  CHECK(abort_back.call_id == 3);
  CHECK(abort_back.fetch_id == 7);

  Outcome timed = Outcome::success("[1]", {"log"});
  timed.sandbox_us = 321;
  timed.cpu_us = 123;
  const auto ok_back = std::get<Result>(round_trip(Result{1, timed}));
  CHECK(ok_back.outcome.ok);
  CHECK(ok_back.outcome.sandbox_us == 321);
  CHECK(ok_back.outcome.cpu_us == 123);
  CHECK(ok_back.outcome.result_json == "[1]");
  CHECK(ok_back.outcome.logs == std::vector<std::string>{"log"});
  CHECK_FALSE(ok_back.last);
  const auto failed_back =
      std::get<Result>(round_trip(Result{2, Outcome::failure(ErrorKind::timeout, "slow"), true}));
  CHECK(failed_back.last);
  CHECK_FALSE(failed_back.outcome.ok);
  CHECK(failed_back.outcome.error_kind == ErrorKind::timeout);
  CHECK(failed_back.outcome.error_message == "slow");
}

TEST_CASE("the frame reader refuses a length over its limit and waits for partial frames",
          "[sandbox][channel]") {
  FrameReader reader(16);
  reader.append(std::string("\x05\x00\x00", 3));
  CHECK_FALSE(std::get<std::optional<std::string>>(reader.next()));
  reader.append(std::string("\x00hel", 4));
  CHECK_FALSE(std::get<std::optional<std::string>>(reader.next()));
  reader.append("lo");
  CHECK(*std::get<std::optional<std::string>>(reader.next()) == "hello");

  reader.append(std::string("\x11\x00\x00\x00", 4));
  auto refused = reader.next();
  REQUIRE(std::holds_alternative<DecodeError>(refused));
  CHECK(std::get<DecodeError>(refused).message == "a frame of 17 bytes (the limit is 16)");
}

TEST_CASE("malformed messages are errors, never exceptions", "[sandbox][channel][adversarial]") {
  CHECK(error_of("") == "a message that is not valid MessagePack");
  CHECK(error_of("\xc1") == "a message that is not valid MessagePack");
  CHECK(error_of(msgpack(nlohmann::json::array({1}))) == "a message that is not a map");
  CHECK(error_of(msgpack({{"t", "nope"}})) == "unknown message type");
  CHECK(error_of(msgpack({{"x", 1}})) == "message without a type");
  CHECK(error_of(msgpack({{"t", "cancel"}, {"id", "7"}})) ==
        "message \"cancel\": field \"id\" is malformed");
  CHECK(error_of(msgpack({{"t", "cancel"}, {"id", -1}})) ==
        "message \"cancel\": field \"id\" is malformed");
  CHECK(error_of(msgpack({{"t", "run"},
                          {"id", 1},
                          {"tool", "rm"},
                          {"code", ""},
                          {"limits", {1, 2, 3, 4, 5, 6, 7}}})) == "message \"run\": unknown tool");
  CHECK(error_of(msgpack(
            {{"t", "run"}, {"id", 1}, {"tool", "search"}, {"code", ""}, {"limits", {1, 2, 3}}})) ==
        "message \"run\": field \"limits\" is malformed");
  CHECK(error_of(msgpack({{"t", "fetch"},
                          {"call", 1},
                          {"fetch", 1},
                          {"method", "GET"},
                          {"url", "/"},
                          {"headers", {{"a"}}},
                          {"body", ""}})) == "message \"fetch\": field \"headers\" is malformed");
  CHECK(error_of(msgpack({{"t", "result"},
                          {"id", 1},
                          {"ok", false},
                          {"logs", nlohmann::json::array()},
                          {"us", 5},
                          {"cpu", 1},
                          {"last", false},
                          {"kind", "fatal"},
                          {"message", ""}})) == "message \"result\": unknown kind");
  CHECK(error_of(msgpack({{"t", "result"},
                          {"id", 1},
                          {"ok", true},
                          {"logs", nlohmann::json::array()},
                          {"us", -5},
                          {"value", "1"}})) == "message \"result\": field \"us\" is malformed");
  // 100,000 nested arrays would overflow a recursive decoder's stack.
  CHECK(error_of(std::string(100000, '\x91') + '\xc0') ==
        "a message that is not valid MessagePack");
}
