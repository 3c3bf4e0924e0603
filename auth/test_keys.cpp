#include "auth/test_keys.h"

#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

namespace codemode::auth::testing {
namespace {

using Json = nlohmann::json;

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
  BIO* pub = BIO_new(BIO_s_mem());
  PEM_write_bio_PUBKEY(pub, key);
  char* data = nullptr;
  const long size = BIO_get_mem_data(pub, &data);
  out.public_key_pem.assign(data, static_cast<std::size_t>(size));
  BIO_free(pub);
  out.private_key = std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free);
  return out;
}

std::string digest_sign(EVP_PKEY* key, const std::string& input, const EVP_MD* md) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  std::size_t size = 0;
  std::string signature;
  if (EVP_DigestSignInit(ctx, nullptr, md, nullptr, key) == 1 &&
      EVP_DigestSign(ctx, nullptr, &size, reinterpret_cast<const unsigned char*>(input.data()),
                     input.size()) == 1) {
    signature.resize(size);
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(signature.data()), &size,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    signature.resize(size);
  }
  EVP_MD_CTX_free(ctx);
  if (signature.empty()) throw std::runtime_error("OpenSSL could not sign");
  return signature;
}

// DER (OpenSSL) to R || S, 32 bytes each (JWS ES256).
std::string jose_ecdsa(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  const BIGNUM* r = nullptr;
  const BIGNUM* s = nullptr;
  ECDSA_SIG_get0(sig, &r, &s);
  std::string raw(64, '\0');
  BN_bn2binpad(r, reinterpret_cast<unsigned char*>(raw.data()), 32);
  BN_bn2binpad(s, reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
  ECDSA_SIG_free(sig);
  return raw;
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
  TestKey out{kid, "RS256", nullptr, "", Json::object()};
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
  TestKey out{kid, "ES256", nullptr, "", Json::object()};
  out.jwk = {{"kty", "EC"},
             {"kid", kid},
             {"crv", "P-256"},
             {"use", "sig"},
             {"x", base64url(bn_bytes(key, OSSL_PKEY_PARAM_EC_PUB_X, 32))},
             {"y", base64url(bn_bytes(key, OSSL_PKEY_PARAM_EC_PUB_Y, 32))}};
  return finish(key, std::move(out));
}

TestKey make_ed25519_key(const std::string& kid) {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519");
  unsigned char raw[32];
  std::size_t size = sizeof raw;
  EVP_PKEY_get_raw_public_key(key, raw, &size);
  TestKey out{kid, "EdDSA", nullptr, "", Json::object()};
  out.jwk = {{"kty", "OKP"},
             {"kid", kid},
             {"crv", "Ed25519"},
             {"use", "sig"},
             {"x", base64url(std::string(reinterpret_cast<char*>(raw), size))}};
  return finish(key, std::move(out));
}

std::string sign(const TestKey& key, const Json& claims, const Json& extra_header) {
  Json header = {{"alg", key.alg}, {"kid", key.kid}, {"typ", "at+jwt"}};
  for (const auto& [name, value] : extra_header.items()) {
    if (value.is_null()) {
      header.erase(name);
    } else {
      header[name] = value;
    }
  }
  const std::string input = base64url(header.dump()) + "." + base64url(claims.dump());
  std::string signature =
      digest_sign(key.private_key.get(), input, key.alg == "EdDSA" ? nullptr : EVP_sha256());
  if (key.alg == "ES256") signature = jose_ecdsa(signature);
  return input + "." + base64url(signature);
}

std::string unsigned_token(const Json& header, const Json& claims, const std::string& signature) {
  return base64url(header.dump()) + "." + base64url(claims.dump()) + "." + signature;
}

std::string sign_hs256(const std::string& secret, const std::string& kid, const Json& claims) {
  const std::string input =
      base64url(Json{{"alg", "HS256"}, {"kid", kid}}.dump()) + "." + base64url(claims.dump());
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac, &size);
  return input + "." + base64url(std::string(reinterpret_cast<char*>(mac), size));
}

}  // namespace codemode::auth::testing
