#include "mcp/stateless_revision.h"

#include <algorithm>

#include "net/base64.h"
#include "net/http_token.h"

namespace codemode::server {

namespace {

using net::trim_ows;

// Standard alphabet; padding optional, but nothing after it.
std::optional<std::string> base64_decode(std::string_view text) {
  return net::base64_decode(text, net::Base64Alphabet::standard, net::Base64Padding::optional);
}

bool visible_ascii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// A header value for messages: printable and short, whatever the client sent.
std::string shown(std::string_view value) {
  std::string out(value.substr(0, 100));
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return "'" + out + "'";
}

JsonRpcError refusal(const Request& request, ErrorCode code, std::string message) {
  return JsonRpcError{code, std::move(message), request.id, nullptr};
}

// One header that must equal `expected` from the body.
std::optional<JsonRpcError> check_header(const Request& request, std::string_view name,
                                         const std::optional<std::string_view>& raw,
                                         std::string_view expected, HeaderEncoding encoding) {
  if (!raw) {
    return refusal(request, ErrorCode::header_mismatch,
                   "header mismatch: the " + std::string(name) + " header is required");
  }
  const auto value = decode_header_value(*raw, encoding);
  if (!value) {
    return refusal(request, ErrorCode::header_mismatch,
                   "header mismatch: the " + std::string(name) + " header value " +
                       shown(trim_ows(*raw)) + " contains invalid characters");
  }
  if (*value != expected) {
    return refusal(request, ErrorCode::header_mismatch,
                   "header mismatch: " + std::string(name) + " header value " + shown(*value) +
                       " does not match body value " + shown(expected));
  }
  return std::nullopt;
}

// The body value Mcp-Name mirrors, when the method has one and the body carries it.
std::optional<std::string> name_in_body(const Request& request) {
  std::string_view field;
  if (request.method == "tools/call" || request.method == "prompts/get") {
    field = "name";
  } else if (request.method == "resources/read") {
    field = "uri";
  } else {
    return std::nullopt;
  }
  if (!request.params.is_object()) return std::nullopt;
  const auto it = request.params.find(field);
  if (it == request.params.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

bool claims_stateless_revision(const Json& params) {
  if (!params.is_object()) return false;
  const auto meta = params.find("_meta");
  return meta != params.end() && meta->is_object() && meta->contains(kMetaProtocolVersion);
}

std::optional<std::string> decode_header_value(std::string_view raw, HeaderEncoding encoding) {
  const std::string_view value = trim_ows(raw);
  constexpr std::string_view kPrefix = "=?base64?";
  constexpr std::string_view kSuffix = "?=";
  if (encoding == HeaderEncoding::plain_or_base64 &&
      value.size() >= kPrefix.size() + kSuffix.size() &&
      value.substr(0, kPrefix.size()) == kPrefix &&
      value.substr(value.size() - kSuffix.size()) == kSuffix) {
    return base64_decode(
        value.substr(kPrefix.size(), value.size() - kPrefix.size() - kSuffix.size()));
  }
  if (!visible_ascii(value)) return std::nullopt;
  return std::string(value);
}

std::optional<JsonRpcError> check_stateless_request(const Request& request,
                                                    const std::optional<RevisionHeaders>& headers) {
  const Json* meta = nullptr;
  if (request.params.is_object()) {
    const auto it = request.params.find("_meta");
    if (it != request.params.end() && it->is_object()) meta = &*it;
  }
  if (meta == nullptr) {
    return refusal(request, ErrorCode::invalid_params,
                   "invalid params: params._meta is required (with " +
                       std::string(kMetaProtocolVersion) + " and " +
                       std::string(kMetaClientCapabilities) + ")");
  }
  const auto version = meta->find(kMetaProtocolVersion);
  if (version == meta->end() || !version->is_string()) {
    return refusal(
        request, ErrorCode::invalid_params,
        "invalid params: params._meta needs " + std::string(kMetaProtocolVersion) + " (a string)");
  }
  const auto capabilities = meta->find(kMetaClientCapabilities);
  if (capabilities == meta->end() || !capabilities->is_object()) {
    return refusal(request, ErrorCode::invalid_params,
                   "invalid params: params._meta needs " + std::string(kMetaClientCapabilities) +
                       " (an object)");
  }
  const auto requested = version->get<std::string>();

  if (headers) {
    if (auto mismatch = check_header(request, "MCP-Protocol-Version", headers->protocol_version,
                                     requested, HeaderEncoding::plain_only)) {
      return mismatch;
    }
    if (auto mismatch = check_header(request, "Mcp-Method", headers->method, request.method,
                                     HeaderEncoding::plain_only)) {
      return mismatch;
    }
    if (const auto name = name_in_body(request)) {
      if (auto mismatch = check_header(request, "Mcp-Name", headers->name, *name,
                                       HeaderEncoding::plain_or_base64)) {
        return mismatch;
      }
    }
  }

  if (requested != kStatelessProtocolVersion) {
    Json supported = Json::array();
    std::string listed;
    for (const auto v : kAllProtocolVersions) {
      supported.push_back(v);
      listed += (listed.empty() ? "" : ", ") + std::string(v);
    }
    JsonRpcError error =
        refusal(request, ErrorCode::unsupported_protocol_version,
                "unsupported protocol version: " + shown(requested) + " in params._meta (" +
                    listed + "; 2025 revisions start with initialize)");
    error.data = Json{{"supported", supported}, {"requested", requested}};
    return error;
  }

  if (request.method != "server/discover" && request.method != "tools/list" &&
      request.method != "tools/call") {
    return refusal(request, ErrorCode::method_not_found, "method not found: " + request.method);
  }
  return std::nullopt;
}

unsigned http_status_of(const JsonRpcError& refusal) {
  return refusal.code == ErrorCode::method_not_found ? 404 : 400;
}

}  // namespace codemode::server
