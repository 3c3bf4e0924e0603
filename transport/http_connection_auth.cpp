// HttpConnection's rules for a request's header block (http_connection.h), checked before a
// byte of its body is read: repeated headers, Host, Origin, then for /mcp the bearer token
// (static, or an OAuth access token the verifier checks) and a place among the admitted
// connections; and, once the body is parsed, the scopes a tools/call needs.
#include "transport/http_connection.h"

#include <boost/asio/post.hpp>

#include "net/ascii.h"
#include "net/http_token.h"

namespace codemode::server {

namespace asio = boost::asio;
namespace http = boost::beast::http;

// The rules that need only the header block, in order: repeated headers, Host, Origin, then
// for /mcp the bearer token and a place among the admitted connections.
std::optional<HttpRefusal> HttpConnection::check_head(const http::request_header<>& request,
                                                      std::string_view path) {
  std::vector<std::string_view> names;
  for (const auto& field : request) {
    names.emplace_back(field.name_string().data(), field.name_string().size());
  }
  if (auto refusal = check_repeated_headers(names)) return refusal;
  const HttpPolicy& policy = *state_->policy;
  if (auto refusal = policy.check_host(header(request, "Host"))) return refusal;
  if (auto refusal = policy.check_origin(header(request, "Origin"))) return refusal;
  if (path == "/metrics" && state_->options.metrics) {
    // What the server has done is for its operators: the same token as /mcp. With OAuth that
    // is a static token (an access token names a user, not an operator): without static
    // tokens, an OAuth server (which may bind any address) keeps /metrics shut.
    if (endpoint().verifier && !policy.requires_token()) {
      return HttpRefusal{401, "unauthorized: /metrics needs a static token (http.tokens)"};
    }
    return policy.authenticate(header(request, "Authorization")).refusal;
  }
  if (!exchange_.mcp) return std::nullopt;
  if (endpoint().verifier) return authenticate_oauth(policy, header(request, "Authorization"));
  auto authentication = policy.authenticate(header(request, "Authorization"));
  if (authentication.refusal) return authentication.refusal;
  exchange_.principal = std::move(authentication.principal);
  return admit();
}

// With OAuth: a static token names its principal at once; any other bearer token is checked as
// a JWT access token (verify_token); no token at all is a 401 that points to the metadata.
std::optional<HttpRefusal> HttpConnection::authenticate_oauth(
    const HttpPolicy& policy, std::optional<std::string_view> authorization) {
  if (policy.requires_token()) {
    auto authentication = policy.authenticate(authorization);
    if (!authentication.refusal) {
      exchange_.principal = std::move(authentication.principal);
      return admit();
    }
  }
  const auto token = bearer_token(authorization);
  if (!token) {
    exchange_.challenge =
        auth::challenge_unauthorized(*endpoint().oauth, auth::Presented::no_token);
    return HttpRefusal{401, "unauthorized: a valid bearer token is required"};
  }
  exchange_.token_to_verify = std::string(*token);
  return std::nullopt;
}

// `Authorization: Bearer TOKEN`: the token, or nullopt.
std::optional<std::string_view> HttpConnection::bearer_token(
    std::optional<std::string_view> header) {
  if (!header) return std::nullopt;
  const std::string_view value = net::trim_ows(*header);
  if (!net::istarts_with(value, "bearer ")) return std::nullopt;
  const std::string_view token = net::trim_ows(value.substr(7));
  if (token.empty()) return std::nullopt;
  return token;
}

// An OAuth access token is checked by the verifier (auth/token_verifier.h), which may wait for
// the issuer's keys; the connection reads nothing meanwhile and resumes on its own strand.
void HttpConnection::verify_token(std::string token) {
  if (state_->options.pass_access_token) exchange_.presented_token = token;
  endpoint().verifier->verify(
      std::move(token), [self = shared_from_this()](auth::VerifierResult result) {
        asio::post(self->stream_.get_executor(), [self, result = std::move(result)]() mutable {
          self->on_token_verified(std::move(result));
        });
      });
}

void HttpConnection::on_token_verified(auth::VerifierResult result) {
  std::string presented = std::exchange(exchange_.presented_token, {});
  if (closed_) return;
  if (auto* refused = std::get_if<auth::VerifierRefusal>(&result)) {
    exchange_.linger = exchange_.body_unread;
    std::string challenge;
    if (refused->status == 401) {
      challenge = auth::challenge_unauthorized(*endpoint().oauth, auth::Presented::refused_token);
    }
    return refuse({refused->status, std::move(refused->message)}, challenge);
  }
  auto& token = std::get<auth::VerifiedToken>(result);
  spdlog::info("http: access token of {} from {}", token.principal, client_);
  exchange_.principal = std::move(token.principal);
  exchange_.granted_scopes = std::move(token.scopes);
  exchange_.claim_profile = auth::claim_profile_of(token.claims, endpoint().claim_profiles);
  if (!presented.empty()) {
    exchange_.access_token = std::make_shared<const gateway::CallerAccessToken>(
        gateway::CallerAccessToken{std::move(presented), token.expires_at});
  }
  if (auto refusal = admit()) {
    exchange_.linger = exchange_.body_unread;
    return refuse(*refusal);
  }
  read_body();
}

// A place among the admitted connections, for a request that passed authentication.
std::optional<HttpRefusal> HttpConnection::admit() {
  if (!admitted_) {
    if (state_->admitted >= state_->options.max_connections) {
      exchange_.keep_alive = false;
      return HttpRefusal{503, "unavailable: too many connections"};
    }
    admitted_ = true;
    ++state_->admitted;
    waiting_timer_.cancel();
    if (waiting_) state_->stop_waiting(*std::exchange(waiting_, std::nullopt));
  }
  return std::nullopt;
}

// A tools/call whose tool needs scopes the caller's access token lacks: 403 naming them all.
// Static tokens carry no scopes and are not limited (exchange_.granted_scopes unset).
std::optional<HttpConnection::ChallengedRefusal> HttpConnection::check_tool_scopes(
    const Request& request) const {
  if (!exchange_.granted_scopes || request.method != "tools/call" || !request.params.is_object()) {
    return std::nullopt;
  }
  const auto name = request.params.find("name");
  if (name == request.params.end() || !name->is_string()) return std::nullopt;
  const auto& scopes = endpoint().oauth->tool_scopes;
  const auto needed = scopes.find(name->get_ref<const std::string&>());
  if (needed == scopes.end()) return std::nullopt;
  const auto missing = auth::missing_scopes(needed->second, *exchange_.granted_scopes);
  if (missing.empty()) return std::nullopt;
  std::string list;
  for (const std::string& scope : missing) list += (list.empty() ? "" : " ") + scope;
  return ChallengedRefusal{
      {403, "insufficient_scope: the tool " + needed->first + " needs scope " + list},
      auth::challenge_insufficient_scope(*endpoint().oauth, missing)};
}
}  // namespace codemode::server
