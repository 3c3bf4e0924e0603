// Test-only: signing keys made by OpenSSL in the test, their JWKs, and tokens signed with them
// by OpenSSL (also tokens no honest issuer makes: alg none, HS256 keyed with the public key).
#pragma once

#include <memory>
#include <string>

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

namespace codemode::auth::testing {

struct TestKey {
  std::string kid;
  std::string alg;  // "RS256", "ES256"
  std::shared_ptr<EVP_PKEY> private_key;
  std::string public_key_pem;  // SubjectPublicKeyInfo
  nlohmann::json jwk;          // public JWK with kid, alg, use
};

TestKey make_rsa_key(const std::string& kid, int bits = 2048);
TestKey make_ec_key(const std::string& kid);       // P-256, ES256
TestKey make_ed25519_key(const std::string& kid);  // EdDSA

std::string base64url(const std::string& bytes);

// header: {"alg": key.alg, "kid": key.kid, "typ": "at+jwt"} merged with `extra_header` (a
// member set to null there is left out).
std::string sign(const TestKey& key, const nlohmann::json& claims,
                 const nlohmann::json& extra_header = nlohmann::json::object());
// A JWT with header {"alg":"none"...} and the given claims; `signature` after the last dot.
std::string unsigned_token(const nlohmann::json& header, const nlohmann::json& claims,
                           const std::string& signature = "");
// HS256 with `secret` as the HMAC key (the algorithm-confusion attack: secret = a public PEM).
std::string sign_hs256(const std::string& secret, const std::string& kid,
                       const nlohmann::json& claims);

}  // namespace codemode::auth::testing
