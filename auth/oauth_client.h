// What this server needs as a client of the authorization server: where its metadata lives and
// how to read it (RFC 8414, OpenID Connect Discovery), and the form-encoded POST with client
// authentication that its introspection (RFC 7662) and token (RFC 8693) endpoints take.
//
// Pure functions, any thread, except post_form, which sends through the gateway's HTTP client
// and calls back on that client's strand. Nothing here logs; error texts name URLs and
// statuses, never a header, a body or a token.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "gateway/http_client.h"

namespace codemode::auth {

// The places RFC 8414 §3.1 and OpenID Connect Discovery §4 put an issuer's metadata, in the
// order they are tried: for https://as.example/tenant,
// https://as.example/.well-known/oauth-authorization-server/tenant and
// https://as.example/tenant/.well-known/openid-configuration.
std::vector<std::string> metadata_urls(const std::string& issuer);

// The metadata document fetched from `url`: a JSON object whose `issuer` equals `issuer`
// exactly (RFC 8414 §3.3: a document naming another issuer must not be used); else why not.
std::variant<nlohmann::json, std::string> read_issuer_metadata(std::string_view body,
                                                               const std::string& url,
                                                               const std::string& issuer);

// The endpoint URL the metadata names under `name`, normalised, when it is one OAuth settings
// may name (config::is_acceptable_oauth_url: https, http only on loopback); else nullopt.
std::optional<std::string> metadata_endpoint(const nlohmann::json& metadata, std::string_view name);

// application/x-www-form-urlencoded: each name=value with every byte but unreserved ones
// percent-encoded, joined by '&'.
std::string form_encode(const std::vector<std::pair<std::string_view, std::string_view>>& fields);

// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
std::string basic_authorization(std::string_view client_id, std::string_view client_secret);

// SHA-256 of `token` as 64 hex digits: what caches key tokens by, so no cache key (should one
// ever be shown) holds a token.
std::string token_digest(std::string_view token);

// RFC 6750's b64token: [A-Za-z0-9-._~+/]+ then '='*, at most `max` bytes. What a bearer token
// that is sent on to the authorization server must be.
bool is_b64token(std::string_view token, std::size_t max);

// The HTTP client this server talks to the authorization server with: certificates checked
// against `ca_file` (else the system's), at most `idle` connections kept per origin; else why not.
std::variant<std::unique_ptr<gateway::HttpClient>, std::vector<std::string>>
authorization_server_client(boost::asio::io_context& io,
                            const std::optional<std::filesystem::path>& ca_file, std::size_t idle);

// One POST of `form` to `url` with HTTP Basic client authentication, expecting JSON: the status
// and the body, or why no answer came (a line naming the URL). `done` runs on the client's
// strand.
struct FormAnswer {
  unsigned status = 0;
  std::string body;
};
using FormResult = std::variant<FormAnswer, std::string>;
void post_form(gateway::HttpClient& client, const std::string& url, std::string authorization,
               std::string form, gateway::Deadline deadline, std::function<void(FormResult)> done);

}  // namespace codemode::auth
