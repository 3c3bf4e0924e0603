#include "auth/access_token.h"

#include <algorithm>
#include <memory>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include "net/ascii.h"

namespace codemode::auth {
namespace {

using Json = nlohmann::json;

struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};
struct EcdsaSigFree {
  void operator()(ECDSA_SIG* sig) const { ECDSA_SIG_free(sig); }
};

TokenRefusal invalid(std::string_view why) {
  return TokenRefusal{"invalid_token: " + std::string(why)};
}

bool is_base64url_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

// Three non-empty base64url parts separated by two dots (the signature may not be empty: an
// unsigned token is refused here already).
bool is_compact_jws(std::string_view token) {
  std::size_t dots = 0;
  std::size_t part_length = 0;
  for (const char c : token) {
    if (c == '.') {
      if (part_length == 0) return false;
      ++dots;
      part_length = 0;
    } else if (is_base64url_char(c)) {
      ++part_length;
    } else {
      return false;
    }
  }
  return dots == 2 && part_length > 0;
}

const EVP_MD* digest_of(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::rs256:
    case Algorithm::es256:
      return EVP_sha256();
    case Algorithm::rs384:
    case Algorithm::es384:
      return EVP_sha384();
    case Algorithm::rs512:
    case Algorithm::es512:
      return EVP_sha512();
    case Algorithm::eddsa:
      return nullptr;  // Ed25519 hashes the message itself (OpenSSL takes no digest for it)
  }
  return nullptr;
}

// The size of R and of S in a JOSE ECDSA signature; 0 for RSA.
std::size_t ecdsa_half(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::es256:
      return 32;
    case Algorithm::es384:
      return 48;
    case Algorithm::es512:
      return 66;
    default:
      return 0;
  }
}

// JWS writes an ECDSA signature as R then S, each the curve's size (RFC 7518 §3.4); OpenSSL
// verifies the DER form (SEC 1). Only the format changes here; OpenSSL does the verifying.
std::optional<std::string> ecdsa_der(std::string_view raw, std::size_t half) {
  if (raw.size() != 2 * half) return std::nullopt;
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  BIGNUM* r = BN_bin2bn(bytes, static_cast<int>(half), nullptr);
  BIGNUM* s = BN_bin2bn(bytes + half, static_cast<int>(half), nullptr);
  std::unique_ptr<ECDSA_SIG, EcdsaSigFree> sig(ECDSA_SIG_new());
  if (!r || !s || !sig || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return std::nullopt;
  }
  const int size = i2d_ECDSA_SIG(sig.get(), nullptr);
  if (size <= 0) return std::nullopt;
  std::string der(static_cast<std::size_t>(size), '\0');
  auto* out = reinterpret_cast<unsigned char*>(der.data());
  i2d_ECDSA_SIG(sig.get(), &out);
  return der;
}

// RFC 7515 §5.2 step 8: the signature over `signing_input` (the token up to its second dot),
// verified by OpenSSL with the key's algorithm: RSASSA-PKCS1-v1_5 or ECDSA over its digest, or
// Ed25519.
bool signature_verifies(const VerificationKey& key, std::string_view signing_input,
                        std::string signature) {
  if (const std::size_t half = ecdsa_half(key.algorithm); half != 0) {
    auto der = ecdsa_der(signature, half);
    if (!der) return false;
    signature = std::move(*der);
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx(EVP_MD_CTX_new());
  const bool verified =
      ctx &&
      EVP_DigestVerifyInit(ctx.get(), nullptr, digest_of(key.algorithm), nullptr, key.key.get()) ==
          1 &&
      EVP_DigestVerify(
          ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
          reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) == 1;
  ERR_clear_error();  // a failed verification leaves errors on this thread's queue
  return verified;
}

std::optional<std::int64_t> time_claim(const Json& claims, const char* name) {
  const auto it = claims.find(name);
  if (it == claims.end() || !it->is_number()) return std::nullopt;
  if (it->is_number_float()) return static_cast<std::int64_t>(it->get<double>());
  if (it->is_number_unsigned()) {
    return static_cast<std::int64_t>(std::min<std::uint64_t>(it->get<std::uint64_t>(), INT64_MAX));
  }
  return it->get<std::int64_t>();
}

std::string string_claim(const Json& claims, const char* name) {
  const auto it = claims.find(name);
  return it != claims.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<std::string> split_scopes(std::string_view text) {
  std::vector<std::string> scopes;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) scopes.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return scopes;
}

std::vector<std::string> scopes_of(const Json& claims) {
  if (const auto it = claims.find("scope"); it != claims.end() && it->is_string()) {
    return split_scopes(it->get_ref<const std::string&>());
  }
  if (const auto it = claims.find("scp"); it != claims.end()) {
    if (it->is_string()) return split_scopes(it->get_ref<const std::string&>());
    std::vector<std::string> scopes;
    if (it->is_array()) {
      for (const Json& scope : *it) {
        if (scope.is_string()) scopes.push_back(scope.get<std::string>());
      }
    }
    return scopes;
  }
  return {};
}

bool audience_holds(const Json& claims, std::string_view resource) {
  const auto it = claims.find("aud");
  if (it == claims.end()) return false;
  if (it->is_string()) return it->get_ref<const std::string&>() == resource;
  if (!it->is_array()) return false;
  return std::any_of(it->begin(), it->end(), [resource](const Json& audience) {
    return audience.is_string() && audience.get_ref<const std::string&>() == resource;
  });
}

bool safe_principal_part(std::string_view text) {
  if (text.empty() || text.size() > 128) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           std::string_view("._@:+=|-").find(c) != std::string_view::npos;
  });
}

// `prefix` ("sub-sha256:", "client-sha256:") and 16 hex digits of the SHA-256 of `text`.
std::string hashed(std::string_view prefix, std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
  std::string name(prefix);
  name += net::to_hex(
      std::string_view(reinterpret_cast<const char*>(digest), std::min<unsigned int>(8, length)));
  return name;
}

// Whether a header `typ` may be an access token's under `rule` (media types ignore case; the
// "application/" prefix may be left out, RFC 7515 §4.1.9).
bool access_token_typ(const std::optional<std::string>& typ, TokenTyp rule) {
  const bool jwt_too = rule == TokenTyp::at_jwt_or_jwt;
  if (!typ) return jwt_too;
  std::string_view type = *typ;
  constexpr std::string_view kApplication = "application/";
  if (net::istarts_with(type, kApplication)) type.remove_prefix(kApplication.size());
  return net::iequals(type, "at+jwt") || (jwt_too && net::iequals(type, "jwt"));
}

// The rules a token's claims share, however they were read (a JWT's payload, an introspection
// answer): audience, times, who.
Verification verify_claims(const Json& claims, const Expectations& expect,
                           std::chrono::system_clock::time_point now) {
  if (!audience_holds(claims, expect.resource)) {
    return invalid("the token is not for this resource (aud)");
  }
  const std::int64_t now_s =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  const std::int64_t leeway = expect.leeway.count();
  const std::optional<std::int64_t> exp = time_claim(claims, "exp");
  if (!exp) return invalid("the token has no exp");
  if (now_s >= *exp + leeway) return invalid("the token has expired");
  if (const auto nbf = time_claim(claims, "nbf"); nbf && now_s + leeway < *nbf) {
    return invalid("the token is not valid yet (nbf)");
  }
  VerifiedToken verified;
  verified.subject = string_claim(claims, "sub");
  verified.client_id = string_claim(claims, "client_id");
  if (verified.client_id.empty()) verified.client_id = string_claim(claims, "azp");
  if (verified.subject.empty() && verified.client_id.empty()) {
    return invalid("the token names no subject or client");
  }
  verified.principal = principal_of(verified.subject, verified.client_id);
  verified.scopes = scopes_of(claims);
  verified.expires_at = *exp;
  verified.claims = claims;
  return verified;
}

}  // namespace

std::optional<TokenHeader> peek_header(std::string_view token) {
  if (token.size() > kMaxTokenBytes || !is_compact_jws(token)) return std::nullopt;
  const auto header_bytes = base64url_decode(token.substr(0, token.find('.')));
  if (!header_bytes) return std::nullopt;
  const Json header = Json::parse(*header_bytes, nullptr, false);
  if (header.is_discarded() || !header.is_object()) return std::nullopt;
  const auto alg = header.find("alg");
  if (alg == header.end() || !alg->is_string()) return std::nullopt;
  TokenHeader result{alg->get<std::string>(), "", std::nullopt};
  if (const auto kid = header.find("kid"); kid != header.end()) {
    if (!kid->is_string()) return std::nullopt;
    result.kid = kid->get<std::string>();
  }
  if (const auto typ = header.find("typ"); typ != header.end()) {
    if (!typ->is_string()) return std::nullopt;
    result.typ = typ->get<std::string>();
  }
  // A critical extension we do not know must make the token fail (RFC 7515 §4.1.11); we know
  // none.
  if (header.contains("crit")) return std::nullopt;
  return result;
}

std::string principal_of(std::string_view subject, std::string_view client_id) {
  if (!client_id.empty() && (subject.empty() || subject == client_id)) {
    return safe_principal_part(client_id) ? "client:" + std::string(client_id)
                                          : hashed("client-sha256:", client_id);
  }
  return safe_principal_part(subject) ? "sub:" + std::string(subject)
                                      : hashed("sub-sha256:", subject);
}

Verification verify_access_token(std::string_view token, const KeySet& keys,
                                 const Expectations& expect,
                                 std::chrono::system_clock::time_point now) {
  if (token.size() > kMaxTokenBytes) {
    return invalid("the token is longer than " + std::to_string(kMaxTokenBytes) + " bytes");
  }
  const std::optional<TokenHeader> header = peek_header(token);
  if (!header) return invalid("the token is not a signed JWT");
  const std::optional<Algorithm> claimed = algorithm_from_string(header->alg);
  if (!claimed) return invalid("the token's algorithm is not accepted");
  const VerificationKey* key = keys.find(header->kid, *claimed);
  if (!key) return invalid("no key of the issuer has the token's kid");
  // The key decides: a header naming another algorithm than its key's is refused before any
  // verification, so no header can make a public key act as an HMAC secret.
  if (key->algorithm != *claimed) return invalid("the token's algorithm is not its key's");

  const std::size_t second_dot = token.rfind('.');
  auto signature = base64url_decode(token.substr(second_dot + 1));
  if (!signature || !signature_verifies(*key, token.substr(0, second_dot), std::move(*signature))) {
    return invalid("the signature does not verify");
  }
  // Signed by the issuer, but is it an access token? Its other JWTs are signed with the same keys.
  if (!access_token_typ(header->typ, expect.typ)) {
    return invalid(expect.typ == TokenTyp::at_jwt
                       ? "the token is not typed as an access token (typ at+jwt, RFC 9068)"
                       : "the token is typed as another kind of JWT (typ not at+jwt or JWT)");
  }
  const std::size_t first_dot = token.find('.');
  const auto payload = base64url_decode(token.substr(first_dot + 1, second_dot - first_dot - 1));
  const Json claims = payload ? Json::parse(*payload, nullptr, false) : Json();
  if (!claims.is_object()) return invalid("the claims are not a JSON object");

  if (string_claim(claims, "iss") != expect.issuer) {
    return invalid("the token is from another issuer");
  }
  return verify_claims(claims, expect, now);
}

Verification verify_introspection(const Json& answer, const Expectations& expect,
                                  std::chrono::system_clock::time_point now) {
  if (!answer.is_object()) return invalid("the introspection answer is not a JSON object");
  const auto active = answer.find("active");
  if (active == answer.end() || !active->is_boolean() || !active->get<bool>()) {
    return invalid("the token is not active (introspection)");
  }
  if (answer.contains("iss") && string_claim(answer, "iss") != expect.issuer) {
    return invalid("the token is from another issuer");
  }
  return verify_claims(answer, expect, now);
}

std::string claim_profile_of(const Json& claims, const std::vector<std::string>& keys) {
  constexpr std::string_view kPrefix = "claim:";
  for (const std::string& key : keys) {
    if (!key.starts_with(kPrefix)) continue;
    const std::string_view rest = std::string_view(key).substr(kPrefix.size());
    const auto equals = rest.find('=');
    if (equals == std::string_view::npos || equals == 0) continue;
    const auto claim = claims.find(std::string(rest.substr(0, equals)));
    if (claim == claims.end()) continue;
    const std::string_view value = rest.substr(equals + 1);
    const auto is_value = [value](const Json& v) {
      return v.is_string() && v.get_ref<const std::string&>() == value;
    };
    if (is_value(*claim) ||
        (claim->is_array() && std::any_of(claim->begin(), claim->end(), is_value))) {
      return key;
    }
  }
  return {};
}

std::vector<std::string> missing_scopes(const std::vector<std::string>& needed,
                                        const std::vector<std::string>& granted) {
  std::vector<std::string> missing;
  for (const std::string& scope : needed) {
    if (std::find(granted.begin(), granted.end(), scope) == granted.end()) {
      missing.push_back(scope);
    }
  }
  return missing;
}

}  // namespace codemode::auth
