// Tests only: a real PostgreSQL server from Debian, started in a temporary directory and
// reached over a Unix socket in it (no TCP port). initdb sets a random password for user
// `postgres` (scram-sha-256), which tests give to libpq through PGPASSWORD. PostgreSQL refuses
// to run as root: when the test runs as root, initdb and pg_ctl run as the `postgres` user
// (Debian's package creates it) through runuser.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace codemode::audit::testing {

class TestPostgres {
 public:
  // The server, running; or why not. `absent` is set when PostgreSQL's binaries are not
  // installed (`scripts/setup --tests` installs them), so only then may a test skip.
  struct Failure {
    bool absent = false;
    std::string why;
  };
  static std::variant<std::unique_ptr<TestPostgres>, Failure> start();
  ~TestPostgres();

  // "host=<dir> port=5432 user=postgres dbname=postgres": no password.
  std::string conninfo() const;
  const std::string& password() const { return password_; }

  // The server crashes (pg_ctl stop -m immediate) / starts again on the same data. Both wait
  // until done (bounded: pg_ctl -t 30). False on failure.
  bool crash();
  bool restart();
  // Runs SQL as the superuser through psql; its output (unaligned, tuples only), or nullopt.
  std::optional<std::string> psql(const std::string& sql) const;

 private:
  TestPostgres() = default;
  bool pg_ctl(const std::string& action) const;

  std::filesystem::path bin_;
  std::filesystem::path dir_;
  std::string password_;
  bool as_postgres_user_ = false;
};

// Runs argv (no shell) with stdout to `out` when given, stderr to /dev/null; the exit status.
int run_command(const std::vector<std::string>& argv, std::string* out = nullptr);

}  // namespace codemode::audit::testing
