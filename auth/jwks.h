// The issuer's signing keys, read from its JWKS document (RFC 7517), as OpenSSL 3 keys.
//
// Each key decides the one algorithm a token signed with it may claim: the JWK's `alg` when it
// names one we accept, else the algorithm its type implies (RSA → RS256; EC P-256 → ES256,
// P-384 → ES384, P-521 → ES512; OKP Ed25519 → EdDSA). A token's header never chooses the algorithm:
// a header that names another algorithm than its key's is refused before any verification.
// Symmetric (`oct`) keys, keys for encryption (`use: enc`), RSA keys under 2048 bits and algorithms
// we do not accept are skipped, so `alg: none` and HS256 (a public key used as an HMAC secret) can
// never match a key.
//
// A KeySet is immutable once read; shared between threads as shared_ptr<const KeySet>.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <openssl/evp.h>

namespace codemode::auth {

// The JWS algorithms a key may carry (RFC 7518 §3.3, §3.4; EdDSA with Ed25519, RFC 8037). Others
// (HS*, none, PS*) are never accepted.
enum class Algorithm { rs256, rs384, rs512, es256, es384, es512, eddsa };
std::string_view to_string(Algorithm algorithm);  // "RS256", ...
std::optional<Algorithm> algorithm_from_string(std::string_view name);

struct VerificationKey {
  std::string kid;  // may be empty: the JWK had none
  Algorithm algorithm = Algorithm::rs256;
  // Read-only once made: OpenSSL 3 allows verifications with one key on several threads.
  std::shared_ptr<EVP_PKEY> key;
};

class KeySet {
 public:
  // Reads a JWKS document. Keys that cannot be used are skipped and named in `skipped`
  // ("key 2 (kid k2): kty oct is not accepted"); the document itself must be a JSON object with
  // a `keys` array, else the error is returned.
  struct Read;
  static std::variant<Read, std::string> from_jwks(std::string_view document);

  // The key with this kid, or, for a token without kid, the one key of this algorithm (none if
  // there are several: the token must then say which).
  const VerificationKey* find(std::string_view kid, Algorithm algorithm) const;
  const VerificationKey* find_by_kid(std::string_view kid) const;
  std::size_t size() const { return keys_.size(); }

 private:
  std::vector<VerificationKey> keys_;
};

struct KeySet::Read {
  KeySet keys;
  std::vector<std::string> skipped;
};

// base64url without padding (RFC 7515 §2) to bytes; nullopt on any other character.
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace codemode::auth
