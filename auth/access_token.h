// One JWT access token (RFC 9068) checked against the issuer's keys and what this server
// expects of it, as a pure function of its inputs (the time is a parameter), so every rule is
// tested without a network.
//
// Order: size and syntax; the header, read without trusting it, names a kid and an algorithm; the
// key with that kid decides the algorithm, and a header that names another is refused (no `none`,
// no HS256 made with the public key); OpenSSL verifies the signature with that key; the header's
// `typ` does not say it is some other kind of JWT (`at+jwt`, RFC 9068 §4, or `JWT` or none, as
// most issuers write; `at+jwt` only when the config requires it); then the claims: `iss` equals the
// issuer, `aud` holds this server's resource URL (RFC 8707), `exp` is in the future and `nbf` in
// the past (both with a small leeway), and a principal can be named. Scopes are read, not required
// here: which scopes a request needs is the caller's rule (ToolScopes).
//
// Refusal messages start with the OAuth error code they map to ("invalid_token: ...") and never
// hold the token or a claim's value.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "auth/jwks.h"

namespace codemode::auth {

// Longer tokens are refused before any parsing (real access tokens are 1 to 2 KiB).
inline constexpr std::size_t kMaxTokenBytes = 8192;

// Which header `typ` a JWT access token may have (RFC 7515 §4.1.9: a media type, compared
// ignoring case, "application/" optional). Either way a JWT typed as anything else (`logout+jwt`,
// `secevent+jwt`, `dpop+jwt`, ...) is not an access token, whatever its claims.
enum class TokenTyp {
  // `at+jwt` (RFC 9068 §4), `JWT`, or none: what the issuers in use write on their access tokens
  // (Keycloak, Entra ID and Auth0's default token profile write `JWT`; Okta and Cognito none).
  // An ID token, typed so too, still fails on `aud`: it holds the client's id, never `resource`.
  at_jwt_or_jwt,
  // `at+jwt` only (config http.oauth.require_typ_at_jwt): no other JWT the issuer signs can pass
  // for an access token, even one whose `aud` holds the resource.
  at_jwt,
};

struct Expectations {
  std::string issuer;                      // `iss` must equal it exactly
  std::string resource;                    // `aud` (a string or an array) must hold it exactly
  std::chrono::seconds leeway{60};         // clock skew allowed on exp and nbf
  TokenTyp typ = TokenTyp::at_jwt_or_jwt;  // config http.oauth.require_typ_at_jwt
};

// A token that passed. `principal` is who the caller is for sessions, fairness and logs:
// "client:<client_id>" for a token a client holds for itself (client credentials: no `sub`, or
// `sub` equal to the client id), else "sub:<sub>"; a value with characters outside
// [A-Za-z0-9._@:+=|-] or longer than 128 is replaced by "sub-sha256:<16 hex>" of it (a subject)
// or "client-sha256:<16 hex>" (a client id), so a principal is always safe in a log line, a
// metric label and an audit record, and a subject never hashes into a client's name (nor the
// other way round).
struct VerifiedToken {
  std::string principal;
  std::string subject;              // `sub`, may be empty for a client's own token
  std::string client_id;            // `client_id`, else `azp`; may be empty
  std::vector<std::string> scopes;  // `scope` (space-separated) or `scp` (array or string)
  std::int64_t expires_at = 0;      // `exp`, seconds since the epoch
  nlohmann::json claims;            // the whole payload, for claim_profile_of
};

struct TokenRefusal {
  std::string message;  // "invalid_token: the token has expired"
};

// What the header names, read without verification: only to choose the key.
struct TokenHeader {
  std::string alg;
  std::string kid;
  std::optional<std::string> typ;  // absent: the header has none
};
// nullopt: not three base64url parts with a JSON object header holding a string `alg` (and, when
// present, a string `kid` and `typ`).
std::optional<TokenHeader> peek_header(std::string_view token);

using Verification = std::variant<VerifiedToken, TokenRefusal>;
// Of `keys` (config `principals` keys; only those of the form "claim:NAME=VALUE" count), the
// first whose claim the token holds: its claim NAME is the string VALUE, or an array holding
// it. Empty when none does.
std::string claim_profile_of(const nlohmann::json& claims, const std::vector<std::string>& keys);

Verification verify_access_token(std::string_view token, const KeySet& keys,
                                 const Expectations& expect,
                                 std::chrono::system_clock::time_point now);

// An introspection answer (RFC 7662) for an opaque token, held to the rules a JWT's claims are:
// `active` is true; `iss`, when the answer has one, is the issuer (the endpoint is the issuer's
// own, so an answer without `iss` speaks for it); `aud` holds the resource; `exp` is required and
// in the future, `nbf` in the past (with the leeway); a subject or a client is named. The
// result's `claims` is the answer, for claim_profile_of.
Verification verify_introspection(const nlohmann::json& answer, const Expectations& expect,
                                  std::chrono::system_clock::time_point now);

// The principal a verified token's claims name (see VerifiedToken).
std::string principal_of(std::string_view subject, std::string_view client_id);

// The scopes each tool needs (all of them), by tool name; a tool not named needs none.
using ToolScopes = std::map<std::string, std::vector<std::string>, std::less<>>;
// The scopes of `needed` that `granted` lacks, in the order of `needed`.
std::vector<std::string> missing_scopes(const std::vector<std::string>& needed,
                                        const std::vector<std::string>& granted);

}  // namespace codemode::auth
