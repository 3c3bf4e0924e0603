// Tests only: records and temporary files for the store and writer tests.
#pragma once

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "audit/record.h"
#include "audit/store.h"

namespace codemode::audit::testing {

inline CallRecord make_call(int i, std::string principal = "alice") {
  CallRecord c;
  c.id = new_record_id();
  c.time_us = now_us();
  c.principal = std::move(principal);
  c.client_name = "test-client";
  c.client_version = "1.0";
  c.transport = i % 2 ? "http" : "stdio";
  c.tool = i % 3 ? "execute" : "search";
  c.code = "async () => " + std::to_string(i);
  c.code_sha256 = sha256_hex(c.code);
  c.outcome = i % 7 ? "ok" : "runtime";
  c.message = i % 7 ? "" : "boom";
  c.result_chars = static_cast<std::uint64_t>(i);
  c.run_us = 100;
  return c;
}

inline RequestRecord make_request(int i, const std::string& call_id,
                                  std::string principal = "alice") {
  RequestRecord r;
  r.id = new_record_id();
  r.call_id = call_id;
  r.time_us = now_us();
  r.principal = std::move(principal);
  r.method = "GET";
  r.origin = "http://127.0.0.1:8788";
  r.path = (i % 2 ? "/products/" : "/orders/") + std::to_string(i);
  r.status = i % 5 ? 200 : 404;
  r.bytes_received = 100;
  r.duration_us = 1000;
  if (i % 11 == 0) {
    r.status = 0;
    r.refusal = "policy: origin http://evil.test is not allowed";
  }
  return r;
}

inline Entry entry_of(const Record& record) {
  return Entry{summarize(record), canonical_json(record)};
}

// A fresh directory under the system temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::random_device random;
    path_ = std::filesystem::temp_directory_path() /
            ("codemode-audit-test-" + std::to_string(random()) + std::to_string(random()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

template <typename T>
T take(std::variant<T, std::string> result) {
  if (auto* error = std::get_if<std::string>(&result)) FAIL(*error);
  return std::move(std::get<T>(result));
}

}  // namespace codemode::audit::testing
