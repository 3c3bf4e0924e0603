#include "gateway/test_tls.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <unistd.h>
#include <atomic>
#include <fstream>
#include <memory>
#include <stdexcept>

namespace codemode::gateway::testing {
namespace {

template <class T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test certificate: ") + what + " failed");
}

void add_extension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  check(ext != nullptr, "X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

std::string bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

TlsIdentity make_self_signed(const std::vector<std::string>& alt_names) {
  KeyPtr key(EVP_EC_gen("P-256"));
  check(key != nullptr, "EVP_EC_gen");
  CertPtr cert(X509_new());
  X509_set_version(cert.get(), 2);
  static std::atomic<long> serial{1};
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), long{24} * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("codemode gateway test"), -1,
                             -1, 0);
  X509_set_issuer_name(cert.get(), name);
  add_extension(cert.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign");
  add_extension(cert.get(), NID_subject_key_identifier, "hash");
  std::string sans;
  for (const auto& alt : alt_names) sans += (sans.empty() ? "" : ",") + alt;
  add_extension(cert.get(), NID_subject_alt_name, sans);
  check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign");

  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_X509(cert_bio.get(), cert.get()) == 1, "PEM_write_bio_X509");
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  check(PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) ==
            1,
        "PEM_write_bio_PrivateKey");
  return TlsIdentity{bio_text(cert_bio.get()), bio_text(key_bio.get())};
}

TempFile::TempFile(const std::string& text) {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("codemode-gateway-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) +
           ".pem");
  std::ofstream(path_, std::ios::binary) << text;
}

TempFile::~TempFile() {
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace codemode::gateway::testing
