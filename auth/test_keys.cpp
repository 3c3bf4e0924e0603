#include "auth/test_keys.h"

#include <stdexcept>

#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

namespace codemode::auth::testing {
namespace {

using Json = nlohmann::json;

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

std::string bn_bytes(const EVP_PKEY* key, const char* name, std::size_t width = 0) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(key, name, &bn) != 1) throw std::runtime_error("no parameter");
  std::size_t size = static_cast<std::size_t>(BN_num_bytes(bn));
  if (width > size) size = width;
  std::string bytes(size, '\0');
  BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(size));
  BN_free(bn);
  return bytes;
}

TestKey finish(EVP_PKEY* key, TestKey out) {
  BIO* priv = BIO_new(BIO_s_mem());
  BIO* pub = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(priv, key, nullptr, nullptr, 0, nullptr, nullptr);
  PEM_write_bio_PUBKEY(pub, key);
  out.private_key_pem = bio_text(priv);
  out.public_key_pem = bio_text(pub);
  BIO_free(priv);
  BIO_free(pub);
  EVP_PKEY_free(key);
  return out;
}

std::string sign_with(jwt_alg_t alg, const std::string& key, const Json& header,
                      const Json& claims) {
  jwt_t* jwt = nullptr;
  jwt_new(&jwt);
  jwt_add_grants_json(jwt, claims.dump().c_str());
  jwt_add_headers_json(jwt, header.dump().c_str());
  jwt_set_alg(jwt, alg, reinterpret_cast<const unsigned char*>(key.data()),
              static_cast<int>(key.size()));
  char* text = jwt_encode_str(jwt);
  std::string token = text ? text : "";
  free(text);  // NOLINT(cppcoreguidelines-no-malloc)
  jwt_free(jwt);
  if (token.empty()) throw std::runtime_error("libjwt could not sign");
  return token;
}

}  // namespace

std::string base64url(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return out;
}

TestKey make_rsa_key(const std::string& kid, int bits) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(bits));
  TestKey out{kid, "RS256", "", "", Json::object()};
  out.jwk = {{"kty", "RSA"},
             {"kid", kid},
             {"alg", "RS256"},
             {"use", "sig"},
             {"n", base64url(bn_bytes(key, OSSL_PKEY_PARAM_RSA_N))},
             {"e", base64url(bn_bytes(key, OSSL_PKEY_PARAM_RSA_E))}};
  return finish(key, std::move(out));
}

TestKey make_ec_key(const std::string& kid) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  TestKey out{kid, "ES256", "", "", Json::object()};
  out.jwk = {{"kty", "EC"},
             {"kid", kid},
             {"crv", "P-256"},
             {"use", "sig"},
             {"x", base64url(bn_bytes(key, OSSL_PKEY_PARAM_EC_PUB_X, 32))},
             {"y", base64url(bn_bytes(key, OSSL_PKEY_PARAM_EC_PUB_Y, 32))}};
  return finish(key, std::move(out));
}

std::string sign(const TestKey& key, const Json& claims, const Json& extra_header) {
  Json header = {{"kid", key.kid}, {"typ", "at+jwt"}};
  header.update(extra_header);
  return sign_with(key.alg == "ES256" ? JWT_ALG_ES256 : JWT_ALG_RS256, key.private_key_pem, header,
                   claims);
}

std::string unsigned_token(const Json& header, const Json& claims, const std::string& signature) {
  return base64url(header.dump()) + "." + base64url(claims.dump()) + "." + signature;
}

std::string sign_hs256(const std::string& secret, const std::string& kid, const Json& claims) {
  return sign_with(JWT_ALG_HS256, secret, {{"kid", kid}}, claims);
}

}  // namespace codemode::auth::testing
