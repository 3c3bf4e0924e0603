#include "mcp/stateless_revision.h"

#include <catch2/catch.hpp>

using namespace codemode::server;

namespace {

Json meta(std::string_view version = "2026-07-28") {
  return Json{{"io.modelcontextprotocol/protocolVersion", version},
              {"io.modelcontextprotocol/clientCapabilities", Json::object()}};
}

Request call(std::string name, Json meta_value = meta()) {
  return Request{7, "tools/call",
                 Json{{"name", std::move(name)},
                      {"arguments", {{"code", "async () => 1"}}},
                      {"_meta", std::move(meta_value)}}};
}

RevisionHeaders headers(std::string_view method, std::optional<std::string_view> name = {},
                        std::string_view version = "2026-07-28") {
  return RevisionHeaders{version, method, name};
}

ErrorCode code_of(const std::optional<JsonRpcError>& error) {
  REQUIRE(error);
  return error->code;
}

}  // namespace

TEST_CASE("the era rule: a protocolVersion in params._meta claims the stateless revision",
          "[server][revision]") {
  CHECK(claims_stateless_revision(Json{{"_meta", meta()}}));
  CHECK(claims_stateless_revision(Json{{"_meta", meta("1900-01-01")}}));
  CHECK_FALSE(claims_stateless_revision(Json{{"protocolVersion", "2025-11-25"}}));
  CHECK_FALSE(claims_stateless_revision(Json{{"_meta", {{"progressToken", 1}}}}));
  CHECK_FALSE(claims_stateless_revision(nullptr));
  CHECK_FALSE(claims_stateless_revision(Json::array()));
}

TEST_CASE("header values: OWS trimmed, =?base64?...?= decoded, controls refused",
          "[server][revision]") {
  CHECK(decode_header_value(" search\t", HeaderEncoding::plain_or_base64) == "search");
  CHECK(decode_header_value("=?base64?c2VhcmNo?=", HeaderEncoding::plain_or_base64) == "search");
  CHECK(decode_header_value("=?base64?w6l0w6k=?=", HeaderEncoding::plain_or_base64) ==
        "\xc3\xa9t\xc3\xa9");  // "été"
  CHECK(decode_header_value("=?base64?w6l0w6k?=", HeaderEncoding::plain_or_base64) ==
        "\xc3\xa9t\xc3\xa9");  // padding optional
  CHECK_FALSE(decode_header_value("=?base64?c2Vh*2No?=", HeaderEncoding::plain_or_base64));
  CHECK_FALSE(decode_header_value("=?base64?c?=", HeaderEncoding::plain_or_base64));
  CHECK_FALSE(decode_header_value("sea\x01rch", HeaderEncoding::plain_or_base64));
  CHECK_FALSE(decode_header_value(
      "\xc3\xa9t\xc3\xa9", HeaderEncoding::plain_or_base64));  // raw non-ASCII must be encoded
}

TEST_CASE("=?base64?...?= only where the revision defines it: Mcp-Name, not Mcp-Method",
          "[server][revision]") {
  CHECK(decode_header_value("=?base64?dG9vbHMvY2FsbA==?=", HeaderEncoding::plain_only) ==
        "=?base64?dG9vbHMvY2FsbA==?=");  // compared as the plain text it is
  CHECK(decode_header_value(" tools/call ", HeaderEncoding::plain_only) == "tools/call");
  // A proxy routing on the plain Mcp-Method would see an unknown method while the server ran
  // tools/call: both headers that must be plain are a mismatch in the encoded form.
  const auto method = check_stateless_request(
      call("search"),
      RevisionHeaders{"2026-07-28", "=?base64?dG9vbHMvY2FsbA==?=", "=?base64?c2VhcmNo?="});
  CHECK(code_of(method) == ErrorCode::header_mismatch);
  CHECK(method->message ==
        "header mismatch: Mcp-Method header value '=?base64?dG9vbHMvY2FsbA==?=' does not match "
        "body value 'tools/call'");
  const auto version = check_stateless_request(
      call("search"), RevisionHeaders{"=?base64?MjAyNi0wNy0yOA==?=", "tools/call", "search"});
  CHECK(code_of(version) == ErrorCode::header_mismatch);
  CHECK_FALSE(check_stateless_request(
      call("search"), RevisionHeaders{"2026-07-28", "tools/call", "=?base64?c2VhcmNo?="}));
}

TEST_CASE("_meta: missing, or without version or capabilities, is -32602", "[server][revision]") {
  const Request no_params{1, "tools/list", nullptr};
  CHECK(code_of(check_stateless_request(no_params, std::nullopt)) == ErrorCode::invalid_params);
  CHECK(check_stateless_request(no_params, std::nullopt)->message ==
        "invalid params: params._meta is required (with io.modelcontextprotocol/protocolVersion "
        "and io.modelcontextprotocol/clientCapabilities)");
  CHECK(check_stateless_request(no_params, std::nullopt)->id == 1);
  const Request no_capabilities{
      1, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}}};
  CHECK(code_of(check_stateless_request(no_capabilities, std::nullopt)) ==
        ErrorCode::invalid_params);
  const Request numeric_version{
      1,
      "tools/list",
      {{"_meta",
        {{"io.modelcontextprotocol/protocolVersion", 2026},
         {"io.modelcontextprotocol/clientCapabilities", Json::object()}}}}};
  CHECK(code_of(check_stateless_request(numeric_version, std::nullopt)) ==
        ErrorCode::invalid_params);
  // clientInfo is optional.
  CHECK_FALSE(check_stateless_request(Request{1, "tools/list", {{"_meta", meta()}}}, std::nullopt));
}

TEST_CASE("headers must mirror the body: -32020", "[server][revision]") {
  const Request list{1, "tools/list", {{"_meta", meta()}}};
  CHECK_FALSE(check_stateless_request(list, headers("tools/list")));
  CHECK_FALSE(check_stateless_request(call("search"), headers("tools/call", " search ")));
  CHECK_FALSE(
      check_stateless_request(call("search"), headers("tools/call", "=?base64?c2VhcmNo?=")));

  CHECK(code_of(check_stateless_request(list, RevisionHeaders{std::nullopt, "tools/list", {}})) ==
        ErrorCode::header_mismatch);
  CHECK(code_of(check_stateless_request(list, headers("tools/list", {}, "2025-11-25"))) ==
        ErrorCode::header_mismatch);
  CHECK(code_of(check_stateless_request(list, headers("TOOLS/LIST"))) ==
        ErrorCode::header_mismatch);
  CHECK(code_of(check_stateless_request(list, RevisionHeaders{"2026-07-28", {}, {}})) ==
        ErrorCode::header_mismatch);
  CHECK(code_of(check_stateless_request(call("search"), headers("tools/call"))) ==
        ErrorCode::header_mismatch);
  const auto wrong_name = check_stateless_request(call("search"), headers("tools/call", "execute"));
  CHECK(code_of(wrong_name) == ErrorCode::header_mismatch);
  CHECK(wrong_name->message ==
        "header mismatch: Mcp-Name header value 'execute' does not match body value 'search'");
  CHECK(wrong_name->id == 7);
  // The header disagreeing with the body wins over the body's version being unknown.
  CHECK(code_of(check_stateless_request(call("search", meta("v999.0.0")),
                                        headers("tools/call", "search"))) ==
        ErrorCode::header_mismatch);
}

TEST_CASE("an unsupported version is -32022 naming the supported list", "[server][revision]") {
  const auto error = check_stateless_request(call("search", meta("1900-01-01")),
                                             headers("tools/call", "search", "1900-01-01"));
  CHECK(code_of(error) == ErrorCode::unsupported_protocol_version);
  CHECK(error->data == Json{{"supported", {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"}},
                            {"requested", "1900-01-01"}});
  CHECK(http_status_of(*error) == 400);
  // Without the header layer (stdio) too.
  CHECK(code_of(check_stateless_request(call("search", meta("2025-11-25")), std::nullopt)) ==
        ErrorCode::unsupported_protocol_version);
}

TEST_CASE("methods: discover, tools/list, tools/call - the rest -32601 (HTTP 404)",
          "[server][revision]") {
  for (const char* method : {"server/discover", "tools/list"}) {
    CHECK_FALSE(check_stateless_request(Request{1, method, {{"_meta", meta()}}}, headers(method)));
  }
  for (const char* method : {"initialize", "ping", "logging/setLevel", "resources/subscribe",
                             "prompts/list", "subscriptions/listen", "unknown/method"}) {
    const auto error =
        check_stateless_request(Request{1, method, {{"_meta", meta()}}}, headers(method));
    CHECK(code_of(error) == ErrorCode::method_not_found);
    CHECK(http_status_of(*error) == 404);
  }
}
