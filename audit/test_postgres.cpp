#include "audit/test_postgres.h"

#include <fcntl.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <vector>

extern char** environ;

namespace codemode::audit::testing {

namespace fs = std::filesystem;

int run_command(const std::vector<std::string>& argv, std::string* out) {
  int pipe_fds[2] = {-1, -1};
  if (out && ::pipe(pipe_fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (out) {
    posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
    posix_spawn_file_actions_addclose(&actions, pipe_fds[1]);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  }
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (out) {
    ::close(pipe_fds[1]);
    if (spawned == 0) {
      char buffer[4096];
      ssize_t n;
      while ((n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0) out->append(buffer, n);
    }
    ::close(pipe_fds[0]);
  }
  if (spawned != 0) return -1;
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

namespace {

std::optional<fs::path> find_bin() {
  std::error_code error;
  std::optional<fs::path> best;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", error)) {
    const fs::path bin = entry.path() / "bin";
    if (fs::exists(bin / "initdb") && fs::exists(bin / "pg_ctl") &&
        (!best || entry.path().filename() == "15")) {
      best = bin;
    }
  }
  return best;
}

std::string random_hex(std::size_t chars) {
  std::random_device random;
  std::string text;
  while (text.size() < chars) text += "0123456789abcdef"[random() % 16];
  return text;
}

}  // namespace

std::variant<std::unique_ptr<TestPostgres>, TestPostgres::Failure> TestPostgres::start() {
  const std::optional<fs::path> bin = find_bin();
  if (!bin) {
    return Failure{true,
                   "PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb); "
                   "`scripts/setup --tests` installs it"};
  }
  std::unique_ptr<TestPostgres> pg(new TestPostgres);
  pg->bin_ = *bin;
  pg->as_postgres_user_ = ::geteuid() == 0;
  std::string pattern = (fs::temp_directory_path() / "codemode-audit-pg-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) return Failure{false, "mkdtemp failed"};
  pg->dir_ = pattern;
  pg->password_ = "pw-" + random_hex(24);
  { std::ofstream(pg->dir_ / "pwfile") << pg->password_ << "\n"; }
  if (pg->as_postgres_user_) {
    // NOLINTNEXTLINE(concurrency-mt-unsafe): a test helper, before its server starts threads
    const passwd* user = ::getpwnam("postgres");
    if (!user) return Failure{false, "running as root, and there is no `postgres` user to run as"};
    if (::chown(pg->dir_.c_str(), user->pw_uid, user->pw_gid) != 0 ||
        ::chown((pg->dir_ / "pwfile").c_str(), user->pw_uid, user->pw_gid) != 0) {
      return Failure{false, "cannot hand the temporary directory to the postgres user"};
    }
  }
  std::vector<std::string> initdb = {(pg->bin_ / "initdb").string(),
                                     "-D",
                                     (pg->dir_ / "data").string(),
                                     "-U",
                                     "postgres",
                                     "--auth=scram-sha-256",
                                     "--pwfile=" + (pg->dir_ / "pwfile").string(),
                                     "-E",
                                     "UTF8",
                                     "--locale=C",
                                     "--no-sync"};
  if (pg->as_postgres_user_) initdb.insert(initdb.begin(), {"runuser", "-u", "postgres", "--"});
  if (run_command(initdb) != 0) return Failure{false, "initdb failed"};
  if (!pg->pg_ctl("start"))
    return Failure{false, "pg_ctl start failed: see " + (pg->dir_ / "log").string()};
  return pg;
}

bool TestPostgres::pg_ctl(const std::string& action) const {
  std::vector<std::string> argv = {
      (bin_ / "pg_ctl").string(), "-D", (dir_ / "data").string(), "-w", "-t", "30"};
  if (action == "start") {
    argv.insert(argv.end(),
                {"-l", (dir_ / "log").string(), "-o",
                 "-k " + dir_.string() + " -c listen_addresses='' -p 5432 -c fsync=off", "start"});
  } else {
    argv.insert(argv.end(), {"-m", action, "stop"});
  }
  if (as_postgres_user_) argv.insert(argv.begin(), {"runuser", "-u", "postgres", "--"});
  return run_command(argv) == 0;
}

TestPostgres::~TestPostgres() {
  pg_ctl("immediate");
  std::error_code ignored;
  fs::remove_all(dir_, ignored);
}

std::string TestPostgres::conninfo() const {
  return "host=" + dir_.string() + " port=5432 user=postgres dbname=postgres";
}

bool TestPostgres::crash() { return pg_ctl("immediate"); }
bool TestPostgres::restart() { return pg_ctl("start"); }

std::optional<std::string> TestPostgres::psql(const std::string& sql) const {
  std::string out;
  std::vector<std::string> argv = {(bin_ / "psql").string(), "-X", "-q",       "-A", "-t", "-v",
                                   "ON_ERROR_STOP=1",        "-d", conninfo(), "-c", sql};
  // psql reads the password from the environment, as the store does.
  // NOLINTNEXTLINE(concurrency-mt-unsafe): the test process sets it before running psql
  ::setenv("PGPASSWORD", password_.c_str(), 1);
  if (run_command(argv, &out) != 0) return std::nullopt;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace codemode::audit::testing
