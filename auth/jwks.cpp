#include "auth/jwks.h"

#include <array>
#include <memory>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <nlohmann/json.hpp>

#include "net/base64.h"

namespace codemode::auth {
namespace {

using Json = nlohmann::json;

constexpr std::array<std::pair<Algorithm, std::string_view>, 7> kAlgorithmNames = {{
    {Algorithm::rs256, "RS256"},
    {Algorithm::rs384, "RS384"},
    {Algorithm::rs512, "RS512"},
    {Algorithm::es256, "ES256"},
    {Algorithm::es384, "ES384"},
    {Algorithm::es512, "ES512"},
    {Algorithm::eddsa, "EdDSA"},
}};

constexpr int kMinRsaBits = 2048;

struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct PkeyCtxFree {
  void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};
struct ParamBldFree {
  void operator()(OSSL_PARAM_BLD* bld) const { OSSL_PARAM_BLD_free(bld); }
};
struct ParamFree {
  void operator()(OSSL_PARAM* params) const { OSSL_PARAM_free(params); }
};
struct BnFree {
  void operator()(BIGNUM* bn) const { BN_free(bn); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Bignum = std::unique_ptr<BIGNUM, BnFree>;

std::optional<std::string> string_member(const Json& jwk, const char* name) {
  const auto it = jwk.find(name);
  if (it == jwk.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// OpenSSL 3 builds the key from its parameters (EVP_PKEY_fromdata), which also checks them.
Pkey key_from_params(const char* type, OSSL_PARAM_BLD* builder) {
  std::unique_ptr<OSSL_PARAM, ParamFree> params(OSSL_PARAM_BLD_to_param(builder));
  std::unique_ptr<EVP_PKEY_CTX, PkeyCtxFree> ctx(
      EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) <= 0) return nullptr;
  EVP_PKEY* key = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) <= 0) return nullptr;
  return Pkey(key);
}

Bignum bignum(const std::string& bytes) {
  return Bignum(BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()), nullptr));
}

std::variant<Pkey, std::string> rsa_key(const Json& jwk) {
  const auto n = string_member(jwk, "n");
  const auto e = string_member(jwk, "e");
  if (!n || !e) return std::string("an RSA key needs n and e");
  const auto n_bytes = base64url_decode(*n);
  const auto e_bytes = base64url_decode(*e);
  if (!n_bytes || !e_bytes || n_bytes->empty() || e_bytes->empty()) {
    return std::string("n or e is not base64url");
  }
  const Bignum modulus = bignum(*n_bytes);
  const Bignum exponent = bignum(*e_bytes);
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> builder(OSSL_PARAM_BLD_new());
  if (!modulus || !exponent || !builder ||
      OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_N, modulus.get()) != 1 ||
      OSSL_PARAM_BLD_push_BN(builder.get(), OSSL_PKEY_PARAM_RSA_E, exponent.get()) != 1) {
    return std::string("OpenSSL could not hold the RSA parameters");
  }
  Pkey key = key_from_params("RSA", builder.get());
  if (!key) return std::string("OpenSSL refused the RSA parameters");
  if (EVP_PKEY_get_bits(key.get()) < kMinRsaBits) {
    return "the RSA key has " + std::to_string(EVP_PKEY_get_bits(key.get())) +
           " bits (at least 2048 are required)";
  }
  return key;
}

struct Curve {
  std::string_view jwk_name;
  const char* openssl_name;
  std::size_t coordinate_bytes;
  Algorithm algorithm;
};
constexpr std::array<Curve, 3> kCurves = {{
    {"P-256", "prime256v1", 32, Algorithm::es256},
    {"P-384", "secp384r1", 48, Algorithm::es384},
    {"P-521", "secp521r1", 66, Algorithm::es512},
}};

std::variant<Pkey, std::string> ec_key(const Json& jwk, const Curve& curve) {
  const auto x = string_member(jwk, "x");
  const auto y = string_member(jwk, "y");
  if (!x || !y) return std::string("an EC key needs x and y");
  const auto x_bytes = base64url_decode(*x);
  const auto y_bytes = base64url_decode(*y);
  if (!x_bytes || !y_bytes || x_bytes->size() != curve.coordinate_bytes ||
      y_bytes->size() != curve.coordinate_bytes) {
    return std::string("x or y is not a base64url coordinate of the curve's size");
  }
  // The uncompressed point (SEC 1 §2.3.3): 0x04, x, y. OpenSSL checks that it is on the curve.
  const std::string point = std::string(1, '\x04') + *x_bytes + *y_bytes;
  std::unique_ptr<OSSL_PARAM_BLD, ParamBldFree> builder(OSSL_PARAM_BLD_new());
  if (!builder ||
      OSSL_PARAM_BLD_push_utf8_string(builder.get(), OSSL_PKEY_PARAM_GROUP_NAME, curve.openssl_name,
                                      0) != 1 ||
      OSSL_PARAM_BLD_push_octet_string(builder.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1) {
    return std::string("OpenSSL could not hold the EC parameters");
  }
  Pkey key = key_from_params("EC", builder.get());
  if (!key) return std::string("OpenSSL refused the EC point");
  return key;
}

std::variant<Pkey, std::string> ed25519_key(const Json& jwk) {
  const auto x = string_member(jwk, "x");
  const auto x_bytes = x ? base64url_decode(*x) : std::nullopt;
  if (!x_bytes || x_bytes->size() != 32) return std::string("x is not a base64url Ed25519 key");
  Pkey key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                       reinterpret_cast<const unsigned char*>(x_bytes->data()),
                                       x_bytes->size()));
  if (!key) return std::string("OpenSSL refused the Ed25519 key");
  return key;
}

// One JWK to a key, or why it is skipped.
std::variant<VerificationKey, std::string> read_key(const Json& jwk) {
  if (!jwk.is_object()) return std::string("not an object");
  VerificationKey key;
  if (const auto it = jwk.find("kid"); it != jwk.end()) {
    if (!it->is_string()) return std::string("kid is not a string");
    key.kid = it->get<std::string>();
  }
  if (const auto use = string_member(jwk, "use"); use && *use != "sig") {
    return std::string("use is not sig");
  }
  const auto kty = string_member(jwk, "kty").value_or("");
  const auto alg = string_member(jwk, "alg");
  std::optional<Algorithm> declared;
  if (alg) {
    declared = algorithm_from_string(*alg);
    if (!declared) return "alg " + *alg + " is not accepted";
  }
  std::variant<Pkey, std::string> made;
  if (kty == "RSA") {
    key.algorithm = declared.value_or(Algorithm::rs256);
    if (key.algorithm != Algorithm::rs256 && key.algorithm != Algorithm::rs384 &&
        key.algorithm != Algorithm::rs512) {
      return std::string("alg does not fit kty RSA");
    }
    made = rsa_key(jwk);
  } else if (kty == "EC") {
    const auto crv = string_member(jwk, "crv").value_or("");
    const Curve* curve = nullptr;
    for (const Curve& candidate : kCurves) {
      if (candidate.jwk_name == crv) curve = &candidate;
    }
    if (!curve) return std::string("crv is not P-256, P-384 or P-521");
    key.algorithm = curve->algorithm;
    if (declared && *declared != curve->algorithm) return std::string("alg does not fit crv");
    made = ec_key(jwk, *curve);
  } else if (kty == "OKP") {
    if (string_member(jwk, "crv").value_or("") != "Ed25519")
      return std::string("crv is not Ed25519");
    if (declared && *declared != Algorithm::eddsa) return std::string("alg does not fit crv");
    key.algorithm = Algorithm::eddsa;
    made = ed25519_key(jwk);
  } else {
    return "kty " + kty + " is not accepted";
  }
  if (auto* why = std::get_if<std::string>(&made)) return std::move(*why);
  key.key = std::shared_ptr<EVP_PKEY>(std::get<Pkey>(made).release(), PkeyFree{});
  return key;
}

}  // namespace

std::string_view to_string(Algorithm algorithm) {
  for (const auto& [value, name] : kAlgorithmNames) {
    if (value == algorithm) return name;
  }
  return "?";
}

std::optional<Algorithm> algorithm_from_string(std::string_view name) {
  for (const auto& [value, known] : kAlgorithmNames) {
    if (known == name) return value;
  }
  return std::nullopt;
}

std::optional<std::string> base64url_decode(std::string_view text) {
  return net::base64_decode(text, net::Base64Alphabet::url, net::Base64Padding::none);
}

std::variant<KeySet::Read, std::string> KeySet::from_jwks(std::string_view document) {
  const Json json = Json::parse(document, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return std::string("the JWKS is not a JSON object");
  const auto keys = json.find("keys");
  if (keys == json.end() || !keys->is_array()) return std::string("the JWKS has no keys array");
  Read read;
  for (std::size_t i = 0; i < keys->size(); ++i) {
    auto key = read_key((*keys)[i]);
    if (auto* why = std::get_if<std::string>(&key)) {
      std::string kid;
      if ((*keys)[i].is_object()) kid = string_member((*keys)[i], "kid").value_or("");
      read.skipped.push_back("key " + std::to_string(i) +
                             (kid.empty() ? "" : " (kid " + kid + ")") + ": " + *why);
      continue;
    }
    read.keys.keys_.push_back(std::move(std::get<VerificationKey>(key)));
  }
  return read;
}

const VerificationKey* KeySet::find(std::string_view kid, Algorithm algorithm) const {
  if (!kid.empty()) return find_by_kid(kid);
  const VerificationKey* found = nullptr;
  for (const VerificationKey& key : keys_) {
    if (key.algorithm != algorithm) continue;
    if (found) return nullptr;
    found = &key;
  }
  return found;
}

const VerificationKey* KeySet::find_by_kid(std::string_view kid) const {
  for (const VerificationKey& key : keys_) {
    if (key.kid == kid) return &key;
  }
  return nullptr;
}

}  // namespace codemode::auth
