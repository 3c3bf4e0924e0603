#include "transport/http_policy.h"

#include <algorithm>
#include <charconv>
#include <variant>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <boost/asio/ip/address.hpp>

#include "base/check.h"
#include "mcp/mcp_session.h"
#include "net/ascii.h"
#include "net/http_token.h"
#include "net/origin.h"

namespace codemode::server {

namespace {

using net::lower;
using net::trim_ows;

std::optional<std::uint16_t> parse_port(std::string_view text) {
  if (text.empty() || text.size() > 5) return std::nullopt;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

// "host[:port]" or "[v6][:port]" → host (brackets kept off) and the port when given.
struct Authority {
  std::string host;
  std::optional<std::uint16_t> port;
};
std::optional<Authority> split_authority(std::string_view text) {
  Authority out;
  std::string_view port_text;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    out.host = lower(text.substr(1, close - 1));
    const auto after = text.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const auto colon = text.find(':');
    out.host = lower(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = text.substr(colon + 1);
    }
  }
  if (out.host.empty()) return std::nullopt;
  for (const char c : out.host) {
    if (!(net::is_alpha(c) || net::is_digit(c) || c == '.' || c == '-' || c == '_' || c == ':')) {
      return std::nullopt;
    }
  }
  if (has_port) {
    out.port = parse_port(port_text);
    if (!out.port) return std::nullopt;
  }
  return out;
}

std::string sha256(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

// One media range of an Accept header, e.g. "application/json;q=0.9" → "application/json",
// and whether its q is zero ("not acceptable").
bool accepts_type(std::string_view header, std::string_view type) {
  const auto slash = type.find('/');
  const std::string major_wildcard = std::string(type.substr(0, slash)) + "/*";
  while (!header.empty()) {
    const auto comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    const auto semicolon = item.find(';');
    const std::string range = lower(trim_ows(item.substr(0, semicolon)));
    bool zero_q = false;
    if (semicolon != std::string_view::npos) {
      std::string params = lower(item.substr(semicolon + 1));
      params.erase(std::remove_if(params.begin(), params.end(),
                                  [](char c) { return c == ' ' || c == '\t'; }),
                   params.end());
      const auto q = params.find("q=");
      if (q != std::string::npos) {
        const std::string value = params.substr(q + 2, params.find(';', q) - q - 2);
        zero_q = value.find_first_not_of("0.") == std::string::npos;
      }
    }
    if (!zero_q && (range == type || range == major_wildcard || range == "*/*")) return true;
  }
  return false;
}

}  // namespace

std::optional<HttpEndpoint> parse_endpoint(std::string_view text) {
  std::string_view host_text;
  std::string_view port_text = text;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find("]:");
    if (close == std::string_view::npos) return std::nullopt;
    host_text = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon != std::string_view::npos) {
    host_text = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host_text.find(':') != std::string_view::npos) return std::nullopt;  // v6 needs [ ]
  }
  const auto port = parse_port(port_text);
  if (!port) return std::nullopt;
  std::string host =
      host_text.empty() || lower(host_text) == "localhost" ? "127.0.0.1" : std::string(host_text);
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return HttpEndpoint{address.to_string(), *port};
}

bool is_loopback(std::string_view ip_literal) {
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(std::string(ip_literal), ec);
  return !ec && address.is_loopback();
}

std::optional<std::string> normalize_origin(std::string_view origin) {
  const auto result = net::parse_origin(origin, net::OriginForm::header);
  const auto* parsed = std::get_if<net::Origin>(&result);
  if (parsed == nullptr) return std::nullopt;
  return parsed->serialised();
}

bool tokens_equal(std::string_view presented, std::string_view expected) {
  const std::string a = sha256(presented);
  const std::string b = sha256(expected);
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

HttpPolicy::HttpPolicy(HttpPolicyOptions options)
    : options_(std::move(options)), loopback_(is_loopback(options_.bound_host)) {
  for (const auto& token : options_.bearer_tokens) {
    // The principal names whose token a session belongs to: "" is the principal without tokens,
    // and two tokens with one name would share sessions. config::parse refuses both.
    CODEMODE_CHECK(!token.name.empty(), "every configured token has a name");
    CODEMODE_CHECK(
        std::none_of(tokens_.begin(), tokens_.end(),
                     [&token](const TokenDigest& seen) { return seen.name == token.name; }),
        "configured token names are unique");
    tokens_.push_back(TokenDigest{token.name, sha256(token.token)});
  }
  if (loopback_) {
    // A page served by this very endpoint is same-origin, never a rebinding: the Host check
    // already pins the name to loopback and the port to ours.
    const std::string port =
        options_.bound_port == 80 ? "" : ":" + std::to_string(options_.bound_port);
    for (const char* host : {"localhost", "127.0.0.1", "[::1]"}) {
      own_origins_.push_back("http://" + std::string(host) + port);
    }
  }
}

std::optional<HttpRefusal> HttpPolicy::check_host(std::optional<std::string_view> host) const {
  if (!loopback_) return std::nullopt;
  if (!host) return HttpRefusal{403, "forbidden: a Host header is required"};
  const auto authority = split_authority(trim_ows(*host));
  const bool loopback_name =
      authority && (authority->host == "localhost" || is_loopback(authority->host));
  const bool right_port = authority && authority->port.value_or(80) == options_.bound_port;
  if (!loopback_name || !right_port) {
    return HttpRefusal{403, "forbidden: host " + std::string(trim_ows(*host)) +
                                " is not this server (DNS rebinding?)"};
  }
  return std::nullopt;
}

std::optional<HttpRefusal> HttpPolicy::check_origin(std::optional<std::string_view> origin) const {
  if (!origin) return std::nullopt;
  const auto normal = normalize_origin(trim_ows(*origin));
  const auto listed = [&](const std::vector<std::string>& origins) {
    return std::find(origins.begin(), origins.end(), *normal) != origins.end();
  };
  if (normal && (listed(options_.allowed_origins) || listed(own_origins_))) return std::nullopt;
  // The Origin is printable by construction of the parser; cap it so a log line stays short.
  return HttpRefusal{403, "forbidden: origin " + std::string(trim_ows(*origin).substr(0, 200)) +
                              " is not allowed (the config's http.allowed_origins lists those "
                              "that are)"};
}

std::optional<HttpRefusal> HttpPolicy::check_bearer(
    std::optional<std::string_view> authorization) const {
  return authenticate(authorization).refusal;
}

HttpPolicy::Authentication HttpPolicy::authenticate(
    std::optional<std::string_view> authorization) const {
  if (tokens_.empty()) return {};
  Authentication refused{HttpRefusal{401, "unauthorized: a valid bearer token is required"}, ""};
  if (!authorization) return refused;
  const std::string_view value = trim_ows(*authorization);
  if (!net::istarts_with(value, "bearer ")) return refused;
  const std::string presented = sha256(trim_ows(value.substr(7)));
  const TokenDigest* matched = nullptr;
  for (const TokenDigest& token : tokens_) {  // no early exit: all are compared
    const bool equal =
        CRYPTO_memcmp(presented.data(), token.digest.data(), token.digest.size()) == 0;
    if (equal) matched = &token;
  }
  if (matched == nullptr) return refused;
  return {std::nullopt, matched->name};
}

std::optional<HttpRefusal> check_repeated_headers(const std::vector<std::string_view>& names) {
  static constexpr std::string_view kOnce[] = {
      "host",       "content-length", "authorization",
      "origin",     "mcp-session-id", "mcp-protocol-version",
      "mcp-method", "mcp-name",       "content-type"};
  std::vector<std::string> seen;
  for (const auto name : names) {
    std::string key = lower(name);
    if (std::find(std::begin(kOnce), std::end(kOnce), key) == std::end(kOnce)) continue;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return HttpRefusal{
          400, "bad request: the " + std::string(name) + " header appears more than once"};
    }
    seen.push_back(std::move(key));
  }
  return std::nullopt;
}

ResponseFormat choose_format(std::optional<std::string_view> accept) {
  if (!accept || trim_ows(*accept).empty()) return ResponseFormat::json;
  if (accepts_type(*accept, "application/json")) return ResponseFormat::json;
  if (accepts_type(*accept, "text/event-stream")) return ResponseFormat::event_stream;
  return ResponseFormat::none;
}

bool accepts_event_stream(std::optional<std::string_view> accept) {
  return accept && accepts_type(*accept, "text/event-stream");
}

bool is_json_content_type(std::optional<std::string_view> content_type) {
  if (!content_type) return false;
  const auto semicolon = content_type->find(';');
  return lower(trim_ows(content_type->substr(0, semicolon))) == "application/json";
}

std::optional<HttpRefusal> check_protocol_version(std::optional<std::string_view> header) {
  if (!header) return std::nullopt;
  const std::string_view version = trim_ows(*header);
  if (std::find(std::begin(kProtocolVersions), std::end(kProtocolVersions), version) !=
      std::end(kProtocolVersions)) {
    return std::nullopt;
  }
  std::string supported;
  for (const auto v : kProtocolVersions) {
    supported += (supported.empty() ? "" : ", ") + std::string(v);
  }
  return HttpRefusal{400, "bad request: unsupported MCP-Protocol-Version " +
                              std::string(version.substr(0, 64)) + " (supported: " + supported +
                              ")"};
}

std::string new_session_id() {
  unsigned char bytes[16];
  // Without a working CSPRNG no session id is safe to hand out; this is not recoverable.
  CODEMODE_CHECK(RAND_bytes(bytes, sizeof bytes) == 1, "OpenSSL's CSPRNG gives random bytes");
  return net::to_hex(std::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
}

std::optional<std::string> HttpSessionTable::add(const std::string& id,
                                                 std::shared_ptr<McpSession> session,
                                                 SessionOwner owner) {
  auto evict = [&](auto it) {
    if (it == sessions_.end()) return std::optional<std::string>();
    std::string evicted = it->first;
    if (auto count = per_owner_.find(it->second.owner.quota); --count->second == 0) {
      per_owner_.erase(count);
    }
    sessions_.erase(it);
    return std::optional<std::string>(std::move(evicted));
  };
  std::optional<std::string> evicted;
  if (owned_by(owner.quota) >= max_per_owner_) {
    evicted = evict(oldest_of(owner.quota));
  } else if (sessions_.size() >= max_sessions_ && !per_owner_.empty()) {
    auto largest = std::max_element(per_owner_.begin(), per_owner_.end(),
                                    [](auto& a, auto& b) { return a.second < b.second; });
    evicted = evict(oldest_of(largest->first));
  }
  ++per_owner_[owner.quota];
  sessions_.insert_or_assign(id, Entry{std::move(session), std::move(owner), ++clock_});
  return evicted;
}

std::map<std::string, HttpSessionTable::Entry, std::less<>>::iterator HttpSessionTable::oldest_of(
    std::string_view quota) {
  auto oldest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (it->second.owner.quota != quota) continue;
    if (oldest == sessions_.end() || it->second.last_used < oldest->second.last_used) oldest = it;
  }
  return oldest;
}

std::size_t HttpSessionTable::owned_by(std::string_view quota) const {
  auto it = per_owner_.find(quota);
  return it == per_owner_.end() ? 0 : it->second;
}

std::shared_ptr<McpSession> HttpSessionTable::find(std::string_view id, std::string_view principal,
                                                   std::size_t api) {
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.owner.principal != principal ||
      it->second.owner.api != api) {
    return nullptr;
  }
  it->second.last_used = ++clock_;
  return it->second.session;
}

bool HttpSessionTable::remove(std::string_view id, std::string_view principal, std::size_t api) {
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.owner.principal != principal ||
      it->second.owner.api != api) {
    return false;
  }
  if (auto count = per_owner_.find(it->second.owner.quota); --count->second == 0) {
    per_owner_.erase(count);
  }
  sessions_.erase(it);
  return true;
}

}  // namespace codemode::server
