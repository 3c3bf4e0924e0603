// Test-only: a self-signed certificate made in memory with OpenSSL's C API, so HTTPS tests need
// no files checked in and no `openssl` command. The certificate is its own CA (CA:TRUE), so a
// file holding it is a CA file that trusts exactly it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace codemode::gateway::testing {

struct TlsIdentity {
  std::string cert_pem;
  std::string key_pem;
};

// A P-256 key and a certificate valid from now for a day, for the given subjectAltNames
// ("DNS:localhost", "IP:127.0.0.1").
TlsIdentity make_self_signed(const std::vector<std::string>& alt_names);

// Writes `text` to a fresh file in the temp directory and deletes it on destruction.
class TempFile {
 public:
  explicit TempFile(const std::string& text);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace codemode::gateway::testing
